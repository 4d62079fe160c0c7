"""Scores kept as Parquet files beside a store file, read in place by its views.

A rescore on a cluster leaves its workers' Parquet parts where they are: under
``<store>.runs/scores/run_id=<id>/`` (and ``sample_stats/run_id=<id>/`` for the per-sample
statistics) next to the store file. The store's single writer moves the parts there and
registers them in ``run_files`` in the rescore's transaction; the ``scores`` and
``sample_stats`` views then read the stored tables and every registered run's files
(``read_parquet`` with the ``run_id=`` folders as a partition, so a query for one run opens
no other run's files; rows of folders no registration names are left out). No row passes
through the writer, so a run of any size registers in the time it takes to list its files.

The views name the folder by its absolute path, written again when the store file has moved,
or when its folder is gone or back (checked when a ``Store`` opens it): a file copied without
its folder reads its tables instead of failing every query. Files of a run that never
committed (a process killed between moving them and its commit) are not in any view; the
next registration removes them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

from evalframe.core._errors import StoreError
from evalframe.store._connect import execute, fetch, files_root

if TYPE_CHECKING:
    import duckdb

__all__ = [
    "IN_PLACE",
    "SAMPLE_STATS_TABLE",
    "SCORES_TABLE",
    "discard",
    "in_a_file",
    "in_place_views",
    "register",
    "stale",
]

SCORES_TABLE: Final = "stored_scores"
"""The scores a writer inserted (a save, an in-process rescore); the ``scores`` view adds
the registered files."""
SAMPLE_STATS_TABLE: Final = "stored_sample_stats"
"""The same for the per-sample statistics, behind the ``sample_stats`` view."""
IN_PLACE: Final[dict[str, str]] = {"scores": SCORES_TABLE, "sample_stats": SAMPLE_STATS_TABLE}
"""Each view that reads files in place, and the table beneath it."""

_ROOT_KEY: Final = "files_root"


def _store_path(con: duckdb.DuckDBPyConnection) -> str | None:
    path = fetch(
        con, "SELECT path FROM duckdb_databases() WHERE database_name = current_database()"
    )
    return str(path) if path else None


def in_a_file(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether ``con`` is a store file's (whose views can read files beside it)."""
    return _store_path(con) is not None


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _folder(root: Path | str, view: str, run_id: str) -> Path:
    return Path(root) / view / f"run_id={run_id}"


def _branches(con: duckdb.DuckDBPyConnection, root: str | None) -> dict[str, bool]:
    """Per view, whether it reads files: some run registered them and some are there (a
    store file copied without its folder reads its tables instead of failing every query)."""
    return {
        view: root is not None
        and bool(fetch(con, "SELECT count(*) FROM run_files WHERE relation = ?", [view]))
        and next((Path(root) / view).glob("*/*.parquet"), None) is not None
        for view in IN_PLACE
    }


def _signature(root: str | None, branches: dict[str, bool]) -> str:
    return f"{root}|{','.join(v for v, files in branches.items() if files)}"


def in_place_views(con: duckdb.DuckDBPyConnection) -> None:
    """(Re)create the ``scores`` and ``sample_stats`` views over their tables and files.

    Does nothing on a file still in a layout older than version 4 (the migrations are
    running and ``scores`` is still a table).
    """
    old = fetch(
        con,
        "SELECT count(*) FROM duckdb_tables() WHERE NOT internal AND table_name = 'scores'",
    )
    if old:
        return
    path = _store_path(con)
    root = files_root(path) if path is not None else None
    branches = _branches(con, root)
    for view, table in IN_PLACE.items():
        columns = [
            (name, kind)
            for name, kind in execute(
                con,
                "SELECT column_name, data_type FROM duckdb_columns() "
                "WHERE table_name = ? AND NOT internal ORDER BY column_index",
                [table],
            )
        ]
        names = ", ".join(name for name, _ in columns)
        statement = f"CREATE OR REPLACE VIEW {view} AS SELECT {names} FROM {table}"
        if branches[view]:
            # One glob over every run's folder, kept to the registered runs: a run whose
            # folder went missing loses its rows instead of failing every query, and a
            # constant run_id filter still opens no other run's files.
            files = _quoted(str(Path(str(root)) / view / "*" / "*.parquet"))
            cast = ", ".join(f"CAST({name} AS {kind}) AS {name}" for name, kind in columns)
            statement += (
                f" UNION ALL SELECT {cast} FROM read_parquet({files}, hive_partitioning = true,"
                " hive_types = {'run_id': VARCHAR}) WHERE run_id IN "
                f"(SELECT run_id FROM run_files WHERE relation = {_quoted(view)})"
            )
        execute(con, statement)
    if root is not None:
        signature = _signature(root, branches)
        execute(con, "INSERT OR REPLACE INTO meta VALUES (?, ?)", [_ROOT_KEY, signature])


def stale(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the views no longer match the files: the store file was moved or renamed
    since a run registered files, or its folder is gone, or came back."""
    path = _store_path(con)
    if path is None or not fetch(con, "SELECT count(*) FROM run_files"):
        return False
    root = files_root(path)
    recorded = fetch(con, "SELECT value FROM meta WHERE key = ?", [_ROOT_KEY])
    return bool(recorded != _signature(root, _branches(con, root)))


def register(
    con: duckdb.DuckDBPyConnection, run_id: str, parts: Mapping[str, Sequence[Path]]
) -> None:
    """Move run ``run_id``'s part files (per view) into the store's folder and register them;
    call inside the run's transaction (``discard`` removes them when it fails)."""
    path = _store_path(con)
    if path is None:
        raise ValueError("files are registered in a store file only")
    root = Path(files_root(path))
    _remove_orphans(con, root)
    for view, files in parts.items():
        if not files:
            continue
        folder = _folder(root, view, run_id)
        folder.mkdir(parents=True, exist_ok=True)
        for file in files:
            os.replace(file, folder / file.name)
        rows = fetch(con, "SELECT count(*) FROM read_parquet(?)", [str(folder / "*.parquet")])
        execute(
            con,
            "INSERT INTO run_files VALUES (?, ?, ?, ?)",
            [run_id, view, len(files), int(rows)],
        )
    in_place_views(con)


def discard(con: duckdb.DuckDBPyConnection, store_path: str, run_id: str) -> None:
    """Remove run ``run_id``'s files after a failure, unless its registration committed
    (or cannot be checked: the next registration removes what is left unregistered)."""
    try:
        if fetch(con, "SELECT count(*) FROM run_files WHERE run_id = ?", [run_id]):
            return
    except StoreError:
        return
    for view in IN_PLACE:
        shutil.rmtree(_folder(files_root(store_path), view, run_id), ignore_errors=True)


def _remove_orphans(con: duckdb.DuckDBPyConnection, root: Path) -> None:
    """Remove the folders of runs that moved files in but never committed (the writer holds
    the store, so no other registration is under way)."""
    known = {(v, r) for r, v in execute(con, "SELECT run_id, relation FROM run_files")}
    for view in IN_PLACE:
        base = root / view
        if not base.is_dir():
            continue
        for folder in base.iterdir():
            run_id = folder.name.removeprefix("run_id=")
            if folder.is_dir() and (view, run_id) not in known:
                shutil.rmtree(folder, ignore_errors=True)
