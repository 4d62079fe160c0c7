"""``evalframe store verify``: every problem of a store, found at once.

Reading commands check what they read cheaply (``_files``: each part file of a run exists
with its registered size; a whole run read also checks each file's footer row count) and
stop at the first problem. ``verify`` reads everything instead, without stopping: the
SHA-256 of every registered part file against the one its writer recorded, its size and
footer row count, every run's file and row totals, and the catalog (macros, types, a view
in a table's place, a view whose definition is not the schema's). It changes nothing, and
opens a store whatever it holds (``Store`` refuses a file that defines SQL; this reports it).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from evalframe.core._errors import StoreError
from evalframe.store import _guard, _schema
from evalframe.store._connect import Connector, execute
from evalframe.store._files import IN_PLACE, orphans, part_problem, registered, sha256_of
from evalframe.store._part_checks import files_root

__all__ = ["Finding", "Verification", "verify_store"]


@dataclass(frozen=True)
class Finding:
    """One problem (or note): what kind, the run and file it concerns, what is wrong."""

    kind: str
    detail: str
    run_id: str | None = None
    file: str | None = None


@dataclass
class Verification:
    """What ``verify_store`` found and how much it read."""

    store: str
    schema_version: int | None = None
    problems: list[Finding] = field(default_factory=list)
    notes: list[Finding] = field(default_factory=list)
    runs: int = 0
    runs_with_files: int = 0
    files: int = 0
    bytes: int = 0
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["ok"] = self.ok
        return out


def verify_store(path: str) -> Verification:
    """Check the store file ``path`` and its part files; changes nothing.

    Raises:
        StoreError: there is no store there, or the file cannot be opened.
    """
    started = time.perf_counter()
    result = Verification(store=path)
    connector = Connector(path, timeout=30.0, threads=None)
    with connector.connect(write=False, prepare=False) as con:
        catalog = _guard.inspect(con)
        _sql_problems(result, catalog)
        if catalog.macros or catalog.types:
            result.seconds = time.perf_counter() - started
            return result  # reading its tables would run the file's SQL
        try:
            result.schema_version = _guard.schema_version(con, catalog)
        except StoreError as exc:
            result.problems.append(Finding("not a store", str(exc)))
        version = result.schema_version
        if version is None:
            result.seconds = time.perf_counter() - started
            return result
        if version != _schema.SCHEMA_VERSION:
            result.problems.append(
                Finding(
                    "schema version",
                    f"the store has schema version {version}; this evalframe checks version "
                    f"{_schema.SCHEMA_VERSION}. Open it once with this evalframe (it migrates "
                    "and records each part file's checksum), then verify again.",
                )
            )
            result.seconds = time.perf_counter() - started
            return result
        _layout_problems(result, catalog)
        if "runs" in catalog.tables:
            result.runs = int(execute(con, "SELECT count(*) FROM runs")[0][0])
        if {"run_files", "run_parts"} <= catalog.tables:
            _file_problems(result, con, path)
        _lock_notes(result, con, catalog)
    result.seconds = time.perf_counter() - started
    return result


def _sql_problems(result: Verification, catalog: _guard.Catalog) -> None:
    for name in catalog.macros:
        result.problems.append(
            Finding("macro", f"the file defines the SQL macro {name}; evalframe writes none")
        )
    for name in catalog.types:
        result.problems.append(
            Finding("type", f"the file defines the SQL type {name}; evalframe writes none")
        )


def _layout_problems(result: Verification, catalog: _guard.Catalog) -> None:
    """Tables and views against this version's schema (the store is of this version)."""
    for name in sorted(set(_schema.TABLES) & set(catalog.views)):
        result.problems.append(
            Finding("view in a table's place", f"{name} should be a table and is a view")
        )
    expected = _guard.expected_views()
    for name in sorted(set(catalog.views) - set(_schema.VIEWS) - set(IN_PLACE)):
        result.notes.append(
            Finding("extra view", f"the view {name} is not the schema's (evalframe never reads it)")
        )
    for name in _schema.VIEWS:
        if name in catalog.views and catalog.views[name] != expected.get(name):
            result.problems.append(
                Finding(
                    "altered view",
                    f"the view {name} is not the schema's (evalframe reads its own "
                    "definition; other tools reading the file get the altered one)",
                )
            )


def _file_problems(result: Verification, con: Any, path: str) -> None:
    root = files_root(path)
    folder = Path(root).name
    entries = registered(con)
    result.runs_with_files = len({e.run_id for e in entries})
    for entry in entries:
        kept = sum(p[1] for p in entry.parts)
        if len(entry.parts) != entry.files or kept != entry.rows:
            result.problems.append(
                Finding(
                    "incomplete",
                    f"{entry.relation}: {entry.files:,} part file(s) with {entry.rows:,} rows "
                    f"were registered; {len(entry.parts):,} with {kept:,} rows are recorded",
                    entry.run_id,
                    f"{folder}/{entry.relation}/run_id={entry.run_id}/",
                )
            )
        for file, rows, size, digest in entry.parts:
            result.files += 1
            where = f"{folder}/{entry.relation}/run_id={entry.run_id}/{file}"
            problem = part_problem(root, entry, file, rows, size, footer=True)
            if problem is None:
                part = Path(root) / entry.relation / f"run_id={entry.run_id}" / file
                try:
                    found = sha256_of(part)
                    result.bytes += size
                except OSError as exc:
                    problem = f"cannot be read ({exc.strerror or exc})"
                else:
                    if found != digest:
                        problem = (
                            "does not have the SHA-256 its writer recorded (its bytes changed)"
                        )
            if problem is not None:
                kind = "missing" if problem == "is missing" else "damaged"
                result.problems.append(Finding(kind, f"{where} {problem}", entry.run_id, where))
    for orphan in orphans(con, Path(root)):
        result.notes.append(
            Finding(
                "unregistered",
                f"{folder}/{orphan.relative_to(root)} is registered by no run (left by a process "
                "killed before its commit; the next registration removes it)",
                file=f"{folder}/{orphan.relative_to(root)}",
            )
        )


def _lock_notes(result: Verification, con: Any, catalog: _guard.Catalog) -> None:
    if "locks" not in catalog.tables:
        return
    for name, pid, host, purpose, since in execute(
        con, "SELECT name, pid, host, purpose, acquired_at FROM locks ORDER BY name"
    ):
        result.notes.append(
            Finding(
                "lock",
                f"{name} is held by process {pid} on host {host} since "
                f"{since:%Y-%m-%d %H:%M:%S} UTC ({purpose})",
            )
        )
