"""Scores kept as Parquet files beside a store file, read in place by its views, checked.

A rescore on a cluster leaves its workers' Parquet parts where they are: under
``<store>.runs/scores/run_id=<id>/`` (and ``sample_stats/run_id=<id>/`` for the per-sample
statistics) next to the store file. The store's single writer moves the parts there and
registers them in the rescore's transaction: ``run_files`` holds each run's file and row
counts, ``run_parts`` each file's name, row count, size and SHA-256 (which the worker that
wrote it computed). No row passes through the writer.

Every connection evalframe opens reads the ``scores`` and ``sample_stats`` views it builds
itself (temporary views, which shadow the ones stored in the file): the stored tables, then
one branch per registered run reading its files by their explicit paths (never a glob, so
``[``, ``*`` and ``?`` in a path are plain characters), with the run id as a constant, so a
query for one run opens no other run's files. Before a run's files are read they are
checked cheaply: each exists, is a regular file inside the store's folder, and has its
registered size, and the run has all its registered files and rows. A run that fails is
not left out: its branch raises an error naming the run and the file, so every query that
reads it fails with that message while other runs read as before. Reading one whole run
(``check_run``: reports, comparisons, exports, rescoring) also checks each file's Parquet
footer row count; ``evalframe store verify`` checks every SHA-256.

The views stored in the file (for other tools, such as plain ``duckdb``, and for the
migrations) list the same files, leaving out a run that fails the checks; they are rewritten
when a run registers files and when the store file has moved. A store with no registered
file keeps its stored views, which then read the tables alone (``_guard.preparer``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final, NamedTuple

import duckdb
import polars as pl

from evalframe.core._errors import StoreError
from evalframe.store._connect import execute, fetch, store_path
from evalframe.store._part_checks import (
    DAMAGED,
    IN_PLACE,
    PART_NAME,
    SAMPLE_STATS_TABLE,
    SCORES_TABLE,
    RunFiles,
    damaged,
    files_root,
    part_folder,
    part_problem,
    run_problem,
)
from evalframe.store._part_checks import registered as _registered

__all__ = [
    "IN_PLACE",
    "SAMPLE_STATS_TABLE",
    "SCORES_TABLE",
    "Part",
    "RunFiles",
    "check_run",
    "describe",
    "discard",
    "in_a_file",
    "in_place_views",
    "part_problem",
    "plain_view",
    "record_present",
    "register",
    "registered",
    "sha256_of",
    "stale",
    "write_part",
]

_ROOT_KEY: Final = "files_root"
_CHUNK: Final = 1 << 20


class Part(NamedTuple):
    """A part file and what its writer recorded of it."""

    path: Path
    rows: int
    bytes: int
    sha256: str


def sha256_of(path: Path) -> str:
    """A file's SHA-256, read a megabyte at a time."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def write_part(frame: pl.DataFrame, path: Path) -> Part:
    """Write ``frame`` to the part file ``path`` in one step (a task that runs again replaces
    it whole); what the store records of the file, computed by its writer (a cluster's
    worker) rather than by the store's one writer."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
    frame.write_parquet(partial)
    os.replace(partial, path)
    return Part(path, frame.height, path.stat().st_size, sha256_of(path))


def describe(path: Path) -> Part:
    """A part file's row count (from its Parquet footer), size and SHA-256."""
    import pyarrow.parquet as pq

    rows = pq.read_metadata(path).num_rows
    return Part(path, int(rows), path.stat().st_size, sha256_of(path))


def registered(con: duckdb.DuckDBPyConnection, view: str | None = None) -> list[RunFiles]:
    """Every run's registered files (of one view, or of both)."""
    return _registered(con, view, run=execute)


def _store_path(con: duckdb.DuckDBPyConnection) -> str | None:
    try:
        return store_path(con)
    except duckdb.Error as exc:
        raise StoreError(f"Could not read the store's path: {exc}") from exc


def in_a_file(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether ``con`` is a store file's (whose views can read files beside it)."""
    return _store_path(con) is not None


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def check_run(con: duckdb.DuckDBPyConnection, run_id: str) -> None:
    """Check the files of run ``run_id`` before reading it whole: each exists with its
    registered size and footer row count.

    Raises:
        StoreError: a file is missing or damaged (one paragraph naming the run and file).
    """
    path = _store_path(con)
    if path is None:
        return
    root = files_root(path)
    for entry in registered(con):
        if entry.run_id != run_id:
            continue
        found = run_problem(root, entry, footer=True)
        if found is not None:
            raise StoreError(damaged(path, run_id, *found))


def _columns(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple[str, str]]:
    return [
        (str(name), str(kind))
        for name, kind in execute(
            con,
            "SELECT column_name, data_type FROM system.main.duckdb_columns() "
            "WHERE database_name = current_database() AND schema_name = 'main' "
            "AND table_name = ? ORDER BY column_index",
            [table],
        )
    ]


def _files_branch(columns: list[tuple[str, str]], run_id: str, paths: Sequence[str]) -> str:
    """One run's files as rows of the view: its run id a constant (what the files say is
    not trusted), every other column cast to the table's type."""
    cast = ", ".join(
        f"{_quoted(run_id)}::VARCHAR AS run_id"
        if name == "run_id"
        else f"CAST({name} AS {kind}) AS {name}"
        for name, kind in columns
    )
    listed = ", ".join(_quoted(p) for p in paths)
    return f"SELECT {cast} FROM read_parquet([{listed}])"


def _error_branch(columns: list[tuple[str, str]], run_id: str, message: str) -> str:
    """A run that failed its check: any query that reads it raises ``message``; a query
    that filters on another run id never evaluates it."""
    nulls = ", ".join(
        f"{_quoted(run_id)}::VARCHAR AS run_id" if name == "run_id" else f"NULL::{kind} AS {name}"
        for name, kind in columns
    )
    return f"SELECT {nulls} WHERE error({_quoted(message)}) IS NULL"


def plain_view(con: duckdb.DuckDBPyConnection, view: str) -> str:
    """How DuckDB stores the definition of ``view`` over its table alone (no file), as
    ``in_place_views`` writes it for this file's columns."""
    names = ", ".join(name for name, _ in _columns(con, IN_PLACE[view]))
    probe = f"evalframe_probe_{view}"
    execute(con, f"CREATE OR REPLACE TEMP VIEW {probe} AS SELECT {names} FROM {IN_PLACE[view]}")
    try:
        sql = fetch(
            con,
            "SELECT sql FROM system.main.duckdb_views() WHERE database_name = 'temp' "
            "AND view_name = ?",
            [probe],
        )
    finally:
        execute(con, f"DROP VIEW temp.main.{probe}")
    return str(sql).replace(f"VIEW {probe} AS", f"VIEW {view} AS", 1)


def in_place_views(con: duckdb.DuckDBPyConnection, *, temp: bool = False) -> None:
    """(Re)create the ``scores`` and ``sample_stats`` views over their tables and files.

    With ``temp``, the connection's own views; otherwise the views stored in the file, for
    other tools (and for the migrations that recompute statistics from them), which leave
    out a run whose files fail the same checks (evalframe's own views name it). Does nothing
    on a file still in a layout older than version 4 (the migrations are running and
    ``scores`` is still a table).
    """
    old = fetch(
        con,
        "SELECT count(*) FROM system.main.duckdb_tables() WHERE database_name = "
        "current_database() AND schema_name = 'main' AND table_name = 'scores'",
    )
    if old:
        return
    path = _store_path(con)
    root = files_root(path) if path is not None else None
    for view, table in IN_PLACE.items():
        columns = _columns(con, table)
        names = ", ".join(name for name, _ in columns)
        head = f"CREATE OR REPLACE {'TEMP ' if temp else ''}VIEW {view} AS "
        base = f"SELECT {names} FROM {table}"
        entries = registered(con, view) if root is not None else []
        broken: dict[str, str] = {}
        if path is not None and root is not None:
            for entry in entries:
                found = run_problem(root, entry)
                if found is not None:
                    broken[entry.run_id] = damaged(path, entry.run_id, *found)
        for _ in range(len(entries) + 1):
            branches = [base]
            for entry in entries:
                if entry.run_id in broken:
                    if temp:
                        branches.append(_error_branch(columns, entry.run_id, broken[entry.run_id]))
                    continue
                folder = os.path.join(str(root), view, f"run_id={entry.run_id}")
                paths = [os.path.join(folder, p[0]) for p in entry.parts]
                if paths:
                    branches.append(_files_branch(columns, entry.run_id, paths))
            statement = head + " UNION ALL ".join(branches)
            try:
                execute(con, statement)
                break
            except StoreError as exc:
                # DuckDB reads each run's first file when it binds the view: a damaged one
                # fails the whole view, so it is named and the view built without it.
                culprit = _culprit(str(exc.__cause__ or exc), entries, broken)
                if culprit is None or path is None:
                    raise
                run_id, file, detail = culprit
                broken[run_id] = (
                    str(exc)  # named already (``read_failure``)
                    if str(exc).startswith(DAMAGED)
                    else damaged(
                        path, run_id, f"{view}/run_id={run_id}/{file}", f"is unreadable ({detail})"
                    )
                )
    if root is not None and not temp:
        execute(con, "INSERT OR REPLACE INTO meta VALUES (?, ?)", [_ROOT_KEY, root])


def _culprit(
    message: str, entries: Sequence[RunFiles], broken: Mapping[str, str]
) -> tuple[str, str, str] | None:
    """The registered (run, file) a DuckDB error names, with the error's first line."""
    for entry in entries:
        if entry.run_id in broken:
            continue
        for part in entry.parts:
            if f"run_id={entry.run_id}{os.sep}{part[0]}" in message:
                first = message.strip().splitlines()[0] if message.strip() else message
                return entry.run_id, part[0], first.replace(DAMAGED, "").strip()
    return None


def stale(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the views stored in the file name another folder than the one beside it
    (the store file was moved or renamed since a run registered files)."""
    path = _store_path(con)
    if path is None or not fetch(con, "SELECT count(*) FROM run_files"):
        return False
    recorded = fetch(con, "SELECT value FROM meta WHERE key = ?", [_ROOT_KEY])
    return bool(recorded != files_root(path))


def register(
    con: duckdb.DuckDBPyConnection, run_id: str, parts: Mapping[str, Sequence[Part]]
) -> None:
    """Move run ``run_id``'s part files (per view) into the store's folder and register them,
    with each one's row count, size and SHA-256; call inside the run's transaction
    (``discard`` removes them when it fails)."""
    path = _store_path(con)
    if path is None:
        raise ValueError("files are registered in a store file only")
    root = Path(files_root(path))
    _remove_orphans(con, root)
    for view, files in parts.items():
        if not files:
            continue
        folder = part_folder(root, view, run_id)
        folder.mkdir(parents=True, exist_ok=True)
        for part in files:
            moved = folder / part.path.name
            os.replace(part.path, moved)
            if moved.stat().st_size != part.bytes:
                raise StoreError(
                    f"The part file {moved} changed between its writer and its registration "
                    f"({moved.stat().st_size:,} bytes, {part.bytes:,} written); nothing was saved."
                )
            execute(
                con,
                "INSERT INTO run_parts VALUES (?, ?, ?, ?, ?, ?)",
                [run_id, view, moved.name, part.rows, part.bytes, part.sha256],
            )
        execute(
            con,
            "INSERT INTO run_files VALUES (?, ?, ?, ?)",
            [run_id, view, len(files), sum(p.rows for p in files)],
        )
    in_place_views(con)
    in_place_views(con, temp=True)  # this connection's own, which its reads go through


def record_present(con: duckdb.DuckDBPyConnection) -> None:
    """Record the files of runs registered before ``run_parts`` existed (the 4 -> 5
    migration), as they are now; a run whose files no longer add up to its registration is
    left incomplete, so that reading it names what is missing."""
    path = _store_path(con)
    if path is None:
        return
    root = files_root(path)
    for entry in registered(con):
        if entry.parts:  # recorded already
            continue
        folder = part_folder(root, entry.relation, entry.run_id)
        found = sorted(folder.glob("*.parquet")) if folder.is_dir() else []
        try:
            described = [describe(p) for p in found if PART_NAME.fullmatch(p.name)]
        except OSError:
            continue
        if len(described) != entry.files or sum(p.rows for p in described) != entry.rows:
            continue
        for part in described:
            execute(
                con,
                "INSERT INTO run_parts VALUES (?, ?, ?, ?, ?, ?)",
                [entry.run_id, entry.relation, part.path.name, part.rows, part.bytes, part.sha256],
            )


def discard(con: duckdb.DuckDBPyConnection, store_path: str, run_id: str) -> None:
    """Remove run ``run_id``'s files after a failure, unless its registration committed
    (or cannot be checked: the next registration removes what is left unregistered)."""
    try:
        if fetch(con, "SELECT count(*) FROM run_files WHERE run_id = ?", [run_id]):
            return
    except StoreError:
        return
    for view in IN_PLACE:
        shutil.rmtree(part_folder(files_root(store_path), view, run_id), ignore_errors=True)


def orphans(con: duckdb.DuckDBPyConnection, root: Path) -> list[Path]:
    """Run folders under the store's folder that no registration names (left by a process
    killed between moving its files in and its commit)."""
    known = {(v, r) for r, v in execute(con, "SELECT run_id, relation FROM run_files")}
    found = []
    for view in IN_PLACE:
        base = root / view
        if not base.is_dir():
            continue
        for folder in sorted(base.iterdir()):
            run_id = folder.name.removeprefix("run_id=")
            if folder.is_dir() and (view, run_id) not in known:
                found.append(folder)
    return found


def _remove_orphans(con: duckdb.DuckDBPyConnection, root: Path) -> None:
    """Remove the folders of runs that moved files in but never committed (the writer holds
    the store, so no other registration is under way)."""
    for folder in orphans(con, root):
        shutil.rmtree(folder, ignore_errors=True)
