"""A store's part files checked cheaply, and the message that names a damaged one.

The scores a cluster wrote stay as Parquet part files beside the store file, under
``<store>.runs/`` (``_files`` registers and reads them). Here: what each run registered
(``registered``), what is wrong with one run's files (sizes, names, symbolic links and, asked
for, Parquet footers: ``run_problem``), the one-paragraph message naming the run and the file
(``damaged``), and, after a read failed without naming a file, the first damaged one
(``diagnose``, which reads the registrations with DuckDB's own calls, so that a failure while
diagnosing is never diagnosed in turn). Nothing here imports the rest of the store.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import duckdb

from evalframe.core._errors import StoreError

__all__ = [
    "DAMAGED",
    "FILES_SUFFIX",
    "IN_PLACE",
    "PART_NAME",
    "SAMPLE_STATS_TABLE",
    "SCORES_TABLE",
    "RunFiles",
    "damaged",
    "diagnose",
    "files_root",
    "part_folder",
    "part_problem",
    "registered",
    "run_problem",
]

FILES_SUFFIX: Final = ".runs"
DAMAGED: Final = "Damaged store"
"""How every message about a missing or damaged part file starts (``damaged``)."""
SCORES_TABLE: Final = "stored_scores"
"""The scores a writer inserted (a save, an in-process rescore); the ``scores`` view adds
the registered files."""
SAMPLE_STATS_TABLE: Final = "stored_sample_stats"
"""The same for the per-sample statistics, behind the ``sample_stats`` view."""
IN_PLACE: Final[dict[str, str]] = {"scores": SCORES_TABLE, "sample_stats": SAMPLE_STATS_TABLE}
"""Each view that reads files in place, and the table beneath it."""

PART_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\.parquet")

Run = Callable[[duckdb.DuckDBPyConnection, str, Sequence[Any]], list[tuple[Any, ...]]]


def _raw(
    con: duckdb.DuckDBPyConnection, statement: str, params: Sequence[Any]
) -> list[tuple[Any, ...]]:
    return con.execute(statement, params).fetchall()


def files_root(store_path: str) -> str:
    """The folder beside a store file whose Parquet files its views read (``<store>.runs``)."""
    return os.path.abspath(store_path) + FILES_SUFFIX


def damaged(store_path: str, run_id: str, where: str, problem: str) -> str:
    """The one-paragraph message for a run whose part file failed a check or a read."""
    folder = os.path.basename(files_root(store_path))
    return (
        f"{DAMAGED} {store_path}: run {run_id} cannot be read, because its part file "
        f"{folder}/{where} {problem}. Restore the store's {folder} folder from a copy (a "
        "store is its file and that folder, moved or copied together); other runs read as "
        f"before. `evalframe store verify --store {store_path}` lists every problem."
    )


@dataclass(frozen=True)
class RunFiles:
    """One run's registered files for one view: the counts ``run_files`` holds and the
    ``run_parts`` rows (file, rows, bytes, sha256)."""

    run_id: str
    relation: str
    files: int
    rows: int
    parts: tuple[tuple[str, int, int, str], ...]


def part_folder(root: Path | str, view: str, run_id: str) -> Path:
    """The folder of run ``run_id``'s part files for ``view`` under the store's folder."""
    return Path(root) / view / f"run_id={run_id}"


def registered(
    con: duckdb.DuckDBPyConnection, view: str | None = None, *, run: Run = _raw
) -> list[RunFiles]:
    """Every run's registered files (of one view, or of both), read by ``run`` (the store's
    ``execute``, which explains a failure; DuckDB's own while a failure is diagnosed)."""
    where, params = ("WHERE relation = ?", [view]) if view is not None else ("", [])
    parts: dict[tuple[str, str], list[tuple[str, int, int, str]]] = {}
    for run_id, relation, file, rows, size, sha256 in run(
        con,
        f"SELECT run_id, relation, file, rows, bytes, sha256 FROM run_parts {where} ORDER BY file",
        params,
    ):
        parts.setdefault((run_id, relation), []).append((file, rows, size, sha256))
    return [
        RunFiles(run_id, relation, files, rows, tuple(parts.get((run_id, relation), ())))
        for run_id, relation, files, rows in run(
            con,
            f"SELECT run_id, relation, files, rows FROM run_files {where} "
            "ORDER BY relation, run_id",
            params,
        )
    ]


def _run_folder(root: str, entry: RunFiles) -> str | None:
    """A run's folder of part files, or None when its recorded names could lead out of the
    store's folder (a store edited by hand: names are evalframe's own otherwise)."""
    run_id = entry.run_id
    if entry.relation not in IN_PLACE or not run_id or run_id in (".", ".."):
        return None
    if any(c in run_id for c in ("/", "\\", "\0")):
        return None
    return os.path.join(root, entry.relation, f"run_id={run_id}")


def part_problem(
    root: str, entry: RunFiles, file: str, rows: int, size: int, *, footer: bool = False
) -> str | None:
    """What is wrong with one registered part, checked cheaply (None when nothing is): it
    must exist as a regular file inside the store's folder with its registered size, and
    with ``footer``, hold its registered row count."""
    folder = _run_folder(root, entry)
    if folder is None or not PART_NAME.fullmatch(file):
        return "has a name that is not a part file's name (the store was edited)"
    return _folder_problem(root, folder) or _file_problem(folder, file, rows, size, footer)


def _folder_problem(root: str, folder: str) -> str | None:
    """A run's folder must lie where its path says, no symbolic link on the way."""
    real = os.path.realpath(folder)
    if real != os.path.join(os.path.realpath(root), os.path.relpath(folder, root)):
        return "lies outside the store's folder (a folder on its path is a symbolic link)"
    return None


def _file_problem(folder: str, file: str, rows: int, size: int, footer: bool) -> str | None:
    path = os.path.join(folder, file)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return "is missing"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if not stat.S_ISREG(info.st_mode):
        return "is not a regular file (a symbolic link, folder or device stands in its place)"
    if info.st_size != size:
        return (
            f"has {info.st_size:,} bytes where {size:,} were registered (it was truncated, "
            "extended or replaced)"
        )
    if footer:
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            found = pq.read_metadata(path).num_rows
        except (pa.ArrowException, OSError) as exc:
            return f"is not readable Parquet ({str(exc).strip().splitlines()[0]})"
        if found != rows:
            return f"holds {found:,} rows where {rows:,} were registered"
    return None


def run_problem(root: str, entry: RunFiles, *, footer: bool = False) -> tuple[str, str] | None:
    """The first problem of one run's files: (file, what is wrong), or None."""
    kept = sum(p[1] for p in entry.parts)
    where = f"{entry.relation}/run_id={entry.run_id}/"
    if len(entry.parts) != entry.files or kept != entry.rows:
        return (
            where,
            f"should hold {entry.files:,} registered part file(s) with {entry.rows:,} rows, "
            f"and {len(entry.parts):,} file(s) with {kept:,} rows are recorded (registered "
            "before evalframe recorded each file, and changed since)",
        )
    folder = _run_folder(root, entry)
    names = [p[0] for p in entry.parts]
    bad = next((n for n in names if not PART_NAME.fullmatch(n)), None)
    if folder is None or bad is not None:
        return where + (
            bad or ""
        ), "has a name that is not a part file's name (the store was edited)"
    problem = _folder_problem(root, folder) if entry.parts else None
    if problem is not None:
        return where, problem
    for file, rows, size, _ in entry.parts:
        problem = _file_problem(folder, file, rows, size, footer)
        if problem is not None:
            return where + file, problem
    return None


def diagnose(con: duckdb.DuckDBPyConnection, path: str) -> StoreError | None:
    """After a read failed without naming a file: the first registered part file whose
    size or footer is wrong, as the error to raise instead (None when all look sound)."""
    root = files_root(path)
    for entry in registered(con):
        found = run_problem(root, entry, footer=True)
        if found is not None:
            return StoreError(damaged(path, entry.run_id, *found))
    return None
