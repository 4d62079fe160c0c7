"""Parquet export and import of runs: one file per table and a manifest.

An export directory holds ``manifest.json`` (format ``evalframe.export.v1``, the store
schema version, the run ids, and for every file its row count, size and SHA-256) and one
Parquet file per table (``runs``, ``run_metrics``, ``samples``, ``outputs``,
``trajectories``, ``scores``, ``sample_stats``, ``run_metric_stats``, ``run_cohort_stats``,
``usage``) with the store's columns. Rows stream through Arrow record batches both ways,
so exporting or importing a run of any size needs bounded memory.

Import trusts nothing it reads: every file must match the manifest (size, SHA-256, rows) and
the store table (columns and types); scores must lie in [0, 1] with ``passed`` agreeing with
the metric's threshold and each row holding a score or an error; every run must bring all
its rows (outputs, scores, statistics, samples) and its samples must hash to the run's
``dataset_hash``. A failed check refuses the whole import with one paragraph naming the file
and the first offending row; the import is one transaction, so nothing is kept. Runs already
in the store are skipped, so importing twice is harmless. An export of schema version 2 (no
``trajectories`` file: its trajectories are in the outputs' ``extra``) is imported as the
2 -> 3 migration would have left it.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any, Final

import duckdb

from evalframe._version import __version__
from evalframe.core._errors import StoreError
from evalframe.store import _read
from evalframe.store._agent import trajectories_from_extra
from evalframe.store._connect import Connector, execute, fetch, store_error
from evalframe.store._files import IN_PLACE, check_run
from evalframe.store._schema import SCHEMA_VERSION, fill_stats
from evalframe.store._verify import (
    ImportRefusedError,
    file_digest,
    verify_files,
    verify_imported,
    verify_schema,
)
from evalframe.store._write import transaction

__all__ = ["EXPORT_FORMAT", "export_runs", "import_runs"]

EXPORT_FORMAT: Final = "evalframe.export.v1"
MANIFEST: Final = "manifest.json"
_RUN_TABLES: Final = (
    "runs",
    "run_metrics",
    "outputs",
    "trajectories",
    "scores",
    "sample_stats",
    "run_metric_stats",
    "run_cohort_stats",
    "usage",
)
_BATCH: Final = 200_000
_NEW_IN_3: Final = "trajectories"
_STATS: Final = ("run_metric_stats", "run_cohort_stats")
_CURRENT_STATS: Final = 5
"""The first export version whose stats tables are imported as they are."""
_IMPORTABLE: Final = (2, *range(4, SCHEMA_VERSION + 1))
"""Export schema versions ``import_runs`` reads (version 2 lacks the ``trajectories`` file;
before version 5 the stats tables and ``runs.macro_f1`` counted pass rates over scored rows
only, so they are computed again on import; later versions added tables that are not part
of a run, such as ``labels``, so their exports hold the same files)."""


def export_runs(connector: Connector, refs: list[str], to: str | os.PathLike[str]) -> Path:
    """Write the referenced runs to ``to`` (created; must not hold an export already)."""
    import pyarrow.parquet as pq

    target = Path(to)
    if (target / MANIFEST).exists():
        raise StoreError(f"{target} already holds an export ({MANIFEST}); choose a new directory.")
    if not refs:
        raise StoreError("Name at least one run to export.")
    target.mkdir(parents=True, exist_ok=True)
    files: dict[str, dict[str, Any]] = {}
    sandbox = any(_read.looks_like_sql(r) for r in refs)  # a query from the user
    with connector.connect(write=False, sandbox=sandbox) as con:
        ids = list(dict.fromkeys(_read.resolve(con, r) for r in refs))
        for run_id in ids:
            check_run(con, run_id)
        statements = {
            t: f"SELECT * FROM {t} WHERE list_contains($ids, run_id)" for t in _RUN_TABLES
        }
        # A rescored run shares its source's outputs; unless the source is exported too, the
        # export gives it its own copy, so that every export is self-contained.
        statements["runs"] = (
            "SELECT * REPLACE (CASE WHEN list_contains($ids, outputs_run_id) THEN "
            "outputs_run_id ELSE run_id END AS outputs_run_id) "
            "FROM runs WHERE list_contains($ids, run_id)"
        )
        for table in ("outputs", "trajectories"):
            statements[table] = (
                f"SELECT o.* REPLACE (r.run_id AS run_id) FROM runs AS r "
                f"JOIN {table} AS o ON o.run_id = r.outputs_run_id "
                "WHERE list_contains($ids, r.run_id) "
                "AND (r.outputs_run_id = r.run_id OR NOT list_contains($ids, r.outputs_run_id))"
            )
        statements["samples"] = (
            "SELECT * FROM samples WHERE dataset_hash IN "
            "(SELECT dataset_hash FROM runs WHERE list_contains($ids, run_id))"
        )
        for table, statement in statements.items():
            try:
                reader = con.sql(statement, params={"ids": ids}).to_arrow_reader(_BATCH)
                rows = 0
                with pq.ParquetWriter(target / f"{table}.parquet", reader.schema) as writer:
                    for batch in reader:
                        writer.write_batch(batch)
                        rows += batch.num_rows
            except duckdb.Error as exc:
                raise store_error(f"Could not export the {table} table.", statement, exc) from exc
            path = target / f"{table}.parquet"
            files[table] = {
                "file": path.name,
                "rows": rows,
                "bytes": path.stat().st_size,
                "sha256": file_digest(path),
            }
    manifest = {
        "format": EXPORT_FORMAT,
        "schema_version": SCHEMA_VERSION,
        "evalframe_version": __version__,
        "exported_at": dt.datetime.now(dt.UTC).isoformat(),
        "runs": ids,
        "rows": {t: f["rows"] for t, f in files.items()},
        "files": files,
    }
    (target / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return target


def import_runs(connector: Connector, source: str | os.PathLike[str]) -> list[str]:
    """Add the runs of an export directory to the store; returns the ids it added."""
    folder = Path(source)
    manifest_path = folder / MANIFEST
    if not manifest_path.is_file():
        raise StoreError(f"{folder} is not an evalframe export: it has no {MANIFEST}.")
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise StoreError(f"{manifest_path} is not readable JSON: {exc}") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != EXPORT_FORMAT:
        raise StoreError(f"{manifest_path} is not an {EXPORT_FORMAT} manifest.")
    version = manifest.get("schema_version")
    if version not in _IMPORTABLE:
        raise StoreError(
            f"{folder} was exported with store schema version {version}; this evalframe "
            f"imports versions {', '.join(map(str, _IMPORTABLE))}. Import it with the "
            "evalframe that wrote it, or open that store here (it migrates on open) and "
            "export again."
        )
    version = int(str(version))
    tables = [
        t
        for t in (*_RUN_TABLES, "samples")
        if (version != 2 or t != _NEW_IN_3) and (version >= _CURRENT_STATS or t not in _STATS)
    ]
    files = {t: folder / f"{t}.parquet" for t in tables}
    missing = [str(p.name) for p in files.values() if not p.is_file()]
    if missing:
        raise StoreError(f"{folder} is missing {', '.join(missing)}; the export is incomplete.")
    try:
        verify_files(manifest, files)
        with connector.connect(write=True) as con, transaction(con):
            verify_schema(con, files)
            fresh = _insert(con, files)
            if _NEW_IN_3 not in files:
                trajectories_from_extra(con, fresh)
            if version < _CURRENT_STATS:
                _restate(con, fresh)
            verify_imported(con, fresh)  # a refusal rolls the whole import back
            return fresh
    except ImportRefusedError as exc:
        raise StoreError(f"Refusing to import {folder}: {exc} Nothing was imported.") from None


def _restate(con: duckdb.DuckDBPyConnection, runs: list[str]) -> None:
    """Compute an older export's statistics as this version states them: the stats tables
    from the views, and each run's macro-F1 from ``run_macro_f1``."""
    for run_id in runs:
        fill_stats(con, run_id)
    execute(
        con,
        "UPDATE runs SET macro_f1 = m.macro_f1 FROM run_macro_f1 AS m "
        "WHERE m.run_id = runs.run_id AND list_contains(?::VARCHAR[], runs.run_id)",
        [runs],
    )


def _insert(con: duckdb.DuckDBPyConnection, files: dict[str, Path]) -> list[str]:
    """Append the verified files' runs that the store does not hold yet."""
    present = {
        r[0]
        for r in execute(
            con,
            "SELECT run_id FROM runs WHERE run_id IN (SELECT run_id FROM read_parquet(?))",
            [str(files["runs"])],
        )
    }
    fresh = [
        r[0]
        for r in execute(
            con,
            "SELECT run_id FROM read_parquet(?) ORDER BY created_at, seq",
            [str(files["runs"])],
        )
        if r[0] not in present
    ]
    if not fresh:
        return []
    offset = int(fetch(con, "SELECT coalesce(max(seq), 0) FROM runs"))
    statements: list[tuple[str, str, list[Any]]] = [
        (
            "samples",
            "INSERT INTO samples BY NAME SELECT * FROM read_parquet(?) AS p "
            "WHERE p.dataset_hash NOT IN (SELECT DISTINCT dataset_hash FROM samples)",
            [str(files["samples"])],
        ),
        (
            "runs",
            "INSERT INTO runs BY NAME SELECT * REPLACE (seq + ? AS seq) FROM read_parquet(?) "
            "WHERE list_contains(?::VARCHAR[], run_id)",
            [offset, str(files["runs"]), fresh],
        ),
    ]
    statements += [
        (
            table,
            f"INSERT INTO {IN_PLACE.get(table, table)} BY NAME SELECT * FROM read_parquet(?) "
            "WHERE list_contains(?::VARCHAR[], run_id)",
            [str(files[table]), fresh],
        )
        for table in _RUN_TABLES[1:]
        if table in files
    ]
    for table, statement, params in statements:
        try:
            con.execute(statement, params).fetchall()
        except duckdb.Error as exc:
            cause = str(exc).strip().splitlines()[0]
            raise ImportRefusedError(f"{table}.parquet could not be written ({cause}).") from exc
    return fresh
