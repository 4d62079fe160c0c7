"""Checks an export passes before its import is committed.

``verify_files`` needs no database: each file must match the manifest's size, SHA-256 and
row count. ``verify_schema`` compares each file's columns and types with the store's table
before anything is inserted. ``verify_imported`` runs inside the import's transaction, after
the rows are in, on the store's own tables (a Parquet file's statistics are data an editor
controls, and DuckDB trusts them when it filters the file, so values are checked once DuckDB
has written them itself): scores lie in [0, 1] (or are null with an error), ``passed``
agrees with each metric's threshold, every run has all of its rows, each trajectory belongs to
one execution of its run, and each dataset's
samples hash to the ``dataset_hash`` its runs record. The checksums catch damage and edits of
any byte; the row checks catch edits made together with a rewritten manifest, which a
checksum beside the data cannot.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import duckdb

from evalframe.core._errors import ImportRefusedError
from evalframe.store._connect import query

__all__ = ["ImportRefusedError", "file_digest", "verify_files", "verify_imported", "verify_schema"]

_HASH_BLOCK: Final = 1 << 20


def file_digest(path: Path) -> str:
    """SHA-256 (hex) of a file, read a block at a time."""
    import hashlib

    h = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(_HASH_BLOCK):
            h.update(block)
    return h.hexdigest()


def verify_files(manifest: dict[str, Any], files: dict[str, Path]) -> None:
    """Every file's size, SHA-256 and Parquet row count equal what the manifest records."""
    import pyarrow.parquet as pq

    recorded = manifest.get("files")
    if not isinstance(recorded, dict):
        raise ImportRefusedError(
            "manifest.json records no size or SHA-256 of its files (an export written before "
            "evalframe checked them); export the runs again."
        )
    for table, path in files.items():
        entry = recorded.get(table)
        if not isinstance(entry, dict) or not all(
            isinstance(entry.get(k), t) for k, t in (("rows", int), ("bytes", int), ("sha256", str))
        ):
            raise ImportRefusedError(
                f"manifest.json has no rows, bytes and sha256 for {path.name}."
            )
        size = path.stat().st_size
        if size != entry["bytes"]:
            raise ImportRefusedError(
                f"{path.name} has {size:,} bytes; the manifest records {entry['bytes']:,} "
                "(the file was cut, replaced or edited)."
            )
        if file_digest(path) != entry["sha256"]:
            raise ImportRefusedError(
                f"{path.name} does not match the SHA-256 the manifest records (the file was "
                "edited or replaced)."
            )
        try:
            rows = pq.ParquetFile(path).metadata.num_rows
        except Exception as exc:  # pyarrow raises several types for a damaged file
            raise ImportRefusedError(
                f"{path.name} is not a readable Parquet file ({exc})."
            ) from None
        if rows != entry["rows"]:
            raise ImportRefusedError(
                f"{path.name} holds {rows:,} rows; the manifest records {entry['rows']:,}."
            )


def _columns(con: duckdb.DuckDBPyConnection, relation: str, params: list[Any]) -> dict[str, str]:
    rows = con.execute(f"DESCRIBE {relation}", params).fetchall()
    # JSON is VARCHAR with a tag; Parquet keeps the text, not the tag.
    return {str(r[0]): "VARCHAR" if r[1] == "JSON" else str(r[1]) for r in rows}


def verify_schema(con: duckdb.DuckDBPyConnection, files: dict[str, Path]) -> None:
    """Each file has exactly its store table's columns, with the same types."""
    for table, path in files.items():
        _schema(con, table, path)


def verify_imported(con: duckdb.DuckDBPyConnection, fresh: list[str]) -> None:
    """The imported runs' rows, as the store now holds them (inside the transaction)."""
    if not fresh:
        return
    _scores(con, fresh)
    _complete(con, fresh)
    _trajectories(con, fresh)
    _datasets(con, fresh)


def _schema(con: duckdb.DuckDBPyConnection, table: str, path: Path) -> None:
    want = _columns(con, table, [])
    got = _columns(con, "SELECT * FROM read_parquet(?)", [str(path)])
    problems = [f"column {c} is missing" for c in want if c not in got]
    problems += [f"column {c} is not a {table} column" for c in got if c not in want]
    problems += [
        f"column {c} is {got[c]}, expected {t}" for c, t in want.items() if c in got and got[c] != t
    ]
    if problems:
        raise ImportRefusedError(
            f"{path.name} does not have the store's {table} columns: " + "; ".join(problems) + "."
        )


def _first(
    con: duckdb.DuckDBPyConnection, statement: str, params: dict[str, Any]
) -> tuple[int, tuple[Any, ...] | None]:
    """How many rows ``statement`` (a SELECT of offending rows) finds, and the first one."""
    rows = con.execute(
        f"SELECT count(*) OVER () AS n, * FROM ({statement}) LIMIT 1", params
    ).fetchall()
    return (int(rows[0][0]), rows[0][1:]) if rows else (0, None)


def _scores(con: duckdb.DuckDBPyConnection, fresh: list[str]) -> None:
    mine = "list_contains($fresh, s.run_id)"
    checks = [
        (
            "SELECT run_id, sample_id, repetition, metric, score FROM scores AS s "
            f"WHERE {mine} AND score IS NOT NULL AND (isnan(score) OR score < 0 OR score > 1)",
            "score {4!r} is outside [0, 1]",
        ),
        (
            "SELECT run_id, sample_id, repetition, metric FROM scores AS s "
            f"WHERE {mine} AND score IS NULL AND error IS NULL",
            "has neither a score nor an error",
        ),
        (
            "SELECT s.run_id, s.sample_id, s.repetition, s.metric FROM scores AS s ANTI JOIN "
            f"run_metrics AS m ON m.run_id = s.run_id AND m.metric = s.metric WHERE {mine}",
            "names a metric its run does not list in run_metrics.parquet",
        ),
        (
            "SELECT s.run_id, s.sample_id, s.repetition, s.metric, s.score, s.passed, "
            "m.threshold FROM scores AS s JOIN run_metrics AS m "
            "ON m.run_id = s.run_id AND m.metric = s.metric "
            f"WHERE {mine} AND s.passed IS DISTINCT FROM (CASE WHEN {_lower('m.name')} "
            "THEN s.score <= m.threshold ELSE s.score >= m.threshold END)",
            "passed = {5} disagrees with score {4!r} and threshold {6!r}",
        ),
    ]
    for statement, what in checks:
        n, row = _first(con, statement, {"fresh": fresh})
        if row is not None:
            run_id, sample_id, repetition, metric = row[:4]
            raise ImportRefusedError(
                f"scores.parquet: {n:,} row(s) are invalid; the first, sample '{sample_id}' "
                f"(repetition {repetition}) of run {run_id}, metric {metric}, "
                + what.format(*row)
                + "."
            )


_COMPLETE: Final = """
    WITH r AS (SELECT * FROM runs WHERE list_contains($fresh, run_id)),
    m AS (SELECT run_id, count(*) AS n FROM run_metrics GROUP BY ALL),
    s AS (SELECT run_id, count(*) AS n FROM scores GROUP BY ALL),
    o AS (SELECT run_id AS outputs_run_id, count(*) AS n FROM outputs GROUP BY ALL),
    t AS (SELECT run_id, count(*) AS n FROM sample_stats GROUP BY ALL),
    ms AS (SELECT run_id, count(*) AS n FROM run_metric_stats GROUP BY ALL),
    d AS (SELECT dataset_hash, count(*) AS n FROM samples GROUP BY ALL)
    SELECT r.run_id, r.n_samples, r.n_executions, coalesce(m.n, 0) AS metrics,
           coalesce(s.n, 0) AS scores, coalesce(o.n, 0) AS outputs,
           coalesce(t.n, 0) AS sample_stats, coalesce(ms.n, 0) AS metric_stats,
           coalesce(d.n, 0) AS samples
    FROM r
    LEFT JOIN m USING (run_id) LEFT JOIN s USING (run_id) LEFT JOIN o USING (outputs_run_id)
    LEFT JOIN t USING (run_id) LEFT JOIN ms USING (run_id) LEFT JOIN d USING (dataset_hash)
    ORDER BY r.seq"""


def _complete(con: duckdb.DuckDBPyConnection, fresh: list[str]) -> None:
    """Each run has as many rows of each table as its own counts say."""
    frame = query(con, _COMPLETE, {"fresh": fresh})
    for r in frame.iter_rows(named=True):  # one row per imported run
        run, executions = r["run_id"], r["n_executions"]
        expected = [
            ("run_metrics", r["metrics"], max(r["metrics"], 1), "at least one metric"),
            ("scores", r["scores"], executions * r["metrics"], "executions x metrics"),
            ("outputs", r["outputs"], executions, "one per execution"),
            ("sample_stats", r["sample_stats"], r["n_samples"], "one per sample"),
            ("run_metric_stats", r["metric_stats"], r["metrics"], "one per metric"),
            ("samples", r["samples"], r["n_samples"], "its dataset's samples"),
        ]
        for table, got, want, rule in expected:
            if got != want:
                raise ImportRefusedError(
                    f"{table}.parquet holds {got:,} row(s) for run {run}; the run has "
                    f"{want:,} ({rule}), so rows were removed or added."
                )


def _trajectories(con: duckdb.DuckDBPyConnection, fresh: list[str]) -> None:
    """Each trajectory belongs to one of its run's executions, at most one per execution."""
    checks = [
        (
            "SELECT run_id, sample_id, repetition FROM trajectories AS t "
            "WHERE list_contains($fresh, run_id) AND NOT EXISTS (SELECT 1 FROM outputs AS o "
            "WHERE o.run_id = t.run_id AND o.sample_id = t.sample_id "
            "AND o.repetition = t.repetition)",
            "has no output in outputs.parquet",
        ),
        (
            "SELECT run_id, sample_id, repetition FROM trajectories "
            "WHERE list_contains($fresh, run_id) GROUP BY ALL HAVING count(*) > 1",
            "appears more than once",
        ),
    ]
    for statement, what in checks:
        n, row = _first(con, statement, {"fresh": fresh})
        if row is not None:
            run_id, sample_id, repetition = row
            raise ImportRefusedError(
                f"trajectories.parquet: {n:,} execution(s) are invalid; the first, sample "
                f"'{sample_id}' (repetition {repetition}) of run {run_id}, {what}."
            )


def _datasets(con: duckdb.DuckDBPyConnection, fresh: list[str]) -> None:
    """Each dataset's samples, in order, hash to the ``dataset_hash`` their runs record."""
    from evalframe.store._write import dataset_hash

    digests = con.execute(
        "SELECT DISTINCT dataset_hash FROM runs WHERE list_contains(?, run_id) ORDER BY ALL",
        [fresh],
    ).fetchall()
    for (digest,) in digests:
        rows = query(
            con,
            "SELECT sample_id, row_hash, metadata FROM samples WHERE dataset_hash = ? "
            "ORDER BY ordinal",
            [digest],
        )
        if dataset_hash(rows) != digest:
            raise ImportRefusedError(
                f"samples.parquet: the samples of dataset {digest[:12]} no longer hash to it "
                "(a sample id, row hash, metadata or their order was edited)."
            )


def _lower(column: str) -> str:
    """SQL: whether ``column`` names a registered lower-is-better metric (its pass rule is
    ``score <= threshold``)."""
    from evalframe.metrics._registry import available

    names = sorted(d.name for d in available() if not d.higher_is_better)
    if not names:
        return "FALSE"
    quoted = ", ".join("'" + n.replace("'", "''") + "'" for n in names)
    return f"{column} IN ({quoted})"
