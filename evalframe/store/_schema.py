"""The store's tables and views (schema version 7), and forward migrations to it.

The schema is a public contract, documented table by table in ``docs/store-schema.md``.
Changing it means a new version number, a migration from the previous one in
``MIGRATIONS`` and a test that opens a file of the old version.

Large tables (``stored_scores``, ``outputs``, ``samples``, ``stored_sample_stats``) carry no
primary key on purpose: DuckDB keeps ART indexes in memory and maintains them on every insert,
which would make saving a million score rows several times slower. Their keys are unique by
construction (one transaction writes a whole run; a dataset's samples are written once).

Long free text (outputs, details, inputs, metadata) and the per-row ``sample_id`` columns
are compressed with zstd: two to three times faster to write than DuckDB's default string
compression (measured on 1,000,000 rows: details 1.12 s and 19 MiB by default, 0.55 s and
6.5 MiB with zstd; sample ids 0.86 s and 4.5 MiB, 0.31 s and 6.5 MiB), and as fast to scan
and join.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from evalframe.store._agent import AGENT_VIEWS, TRAJECTORIES_TABLE, trajectories_from_extra
from evalframe.store._files import (
    IN_PLACE,
    SAMPLE_STATS_TABLE,
    SCORES_TABLE,
    in_place_views,
    record_present,
)
from evalframe.store._labels import LABEL_VIEWS, LABELS_TABLE

if TYPE_CHECKING:
    import duckdb

__all__ = [
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "TABLES",
    "VIEWS",
    "create",
    "create_views",
    "fill_stats",
    "histogram_bucket",
    "histogram_edges",
    "run_status_select",
]

SCHEMA_VERSION: Final = 7
"""The schema version this evalframe writes; files of older versions are migrated on open."""

# The aggregates both stats tables materialize (from metric_summary and cohort_summary).
_AGGREGATE_COLUMNS: Final = """n BIGINT NOT NULL,
            n_scored BIGINT NOT NULL,
            n_errors BIGINT NOT NULL,
            n_passed BIGINT,
            mean DOUBLE,
            p50 DOUBLE,
            p95 DOUBLE,
            pass_rate DOUBLE,
            pass_rate_scored DOUBLE"""

TABLES: Final[dict[str, str]] = {
    "meta": """
        CREATE TABLE IF NOT EXISTS meta (
            key VARCHAR PRIMARY KEY,
            value VARCHAR NOT NULL
        )""",
    "runs": """
        CREATE TABLE IF NOT EXISTS runs (
            run_id VARCHAR PRIMARY KEY,
            seq BIGINT NOT NULL,
            name VARCHAR NOT NULL,
            dataset VARCHAR NOT NULL,
            dataset_hash VARCHAR NOT NULL,
            created_at TIMESTAMP NOT NULL,
            started_at DOUBLE,
            finished_at DOUBLE,
            evalframe_version VARCHAR,
            duckdb_version VARCHAR,
            git_commit VARCHAR,
            git_branch VARCHAR,
            models VARCHAR[],
            labels JSON,
            extra JSON,
            source_run_id VARCHAR,
            outputs_run_id VARCHAR NOT NULL,
            n_samples BIGINT,
            n_executions BIGINT,
            repetitions INTEGER,
            n_failures BIGINT,
            macro_f1 DOUBLE,
            pass_rate DOUBLE,
            within_row_variance DOUBLE,
            resolution DOUBLE,
            required_repetitions INTEGER,
            target_resolvable BOOLEAN
        )""",
    "run_metrics": """
        CREATE TABLE IF NOT EXISTS run_metrics (
            run_id VARCHAR NOT NULL,
            ordinal INTEGER NOT NULL,
            metric VARCHAR NOT NULL,
            name VARCHAR NOT NULL,
            params JSON,
            threshold DOUBLE NOT NULL,
            family VARCHAR,
            dimension VARCHAR,
            PRIMARY KEY (run_id, metric)
        )""",
    "samples": """
        CREATE TABLE IF NOT EXISTS samples (
            dataset_hash VARCHAR NOT NULL,
            ordinal BIGINT NOT NULL,
            sample_id VARCHAR NOT NULL,
            row_hash VARCHAR USING COMPRESSION zstd,
            input VARCHAR USING COMPRESSION zstd,
            expected_output VARCHAR USING COMPRESSION zstd,
            expected_type VARCHAR,
            metadata VARCHAR USING COMPRESSION zstd,
            tags VARCHAR[]
        )""",
    "outputs": """
        CREATE TABLE IF NOT EXISTS outputs (
            run_id VARCHAR NOT NULL,
            sample_id VARCHAR NOT NULL USING COMPRESSION zstd,
            repetition BIGINT NOT NULL,
            actual_output VARCHAR USING COMPRESSION zstd,
            system_error VARCHAR,
            latency_ms DOUBLE,
            prompt_tokens BIGINT,
            completion_tokens BIGINT,
            cost_usd DOUBLE,
            retries BIGINT,
            extra VARCHAR USING COMPRESSION zstd
        )""",
    "trajectories": TRAJECTORIES_TABLE,
    SCORES_TABLE: """
        CREATE TABLE IF NOT EXISTS stored_scores (
            run_id VARCHAR NOT NULL,
            sample_id VARCHAR NOT NULL USING COMPRESSION zstd,
            repetition BIGINT NOT NULL,
            metric VARCHAR NOT NULL,
            score DOUBLE,
            passed BOOLEAN,
            error VARCHAR,
            details VARCHAR USING COMPRESSION zstd
        )""",
    SAMPLE_STATS_TABLE: """
        CREATE TABLE IF NOT EXISTS stored_sample_stats (
            run_id VARCHAR NOT NULL,
            sample_id VARCHAR NOT NULL USING COMPRESSION zstd,
            row_hash VARCHAR USING COMPRESSION zstd,
            repetitions BIGINT NOT NULL,
            passed BIGINT NOT NULL,
            errored BIGINT NOT NULL,
            pass_rate DOUBLE NOT NULL,
            pass_rate_low DOUBLE NOT NULL,
            pass_rate_high DOUBLE NOT NULL,
            unstable BOOLEAN NOT NULL,
            score_mean DOUBLE,
            score_stddev DOUBLE
        )""",
    "run_files": """
        CREATE TABLE IF NOT EXISTS run_files (
            run_id VARCHAR NOT NULL,
            relation VARCHAR NOT NULL,
            files BIGINT NOT NULL,
            rows BIGINT NOT NULL,
            PRIMARY KEY (run_id, relation)
        )""",
    "run_parts": """
        CREATE TABLE IF NOT EXISTS run_parts (
            run_id VARCHAR NOT NULL,
            relation VARCHAR NOT NULL,
            file VARCHAR NOT NULL,
            rows BIGINT NOT NULL,
            bytes BIGINT NOT NULL,
            sha256 VARCHAR NOT NULL,
            PRIMARY KEY (run_id, relation, file)
        )""",
    "locks": """
        CREATE TABLE IF NOT EXISTS locks (
            name VARCHAR PRIMARY KEY,
            pid BIGINT NOT NULL,
            host VARCHAR NOT NULL,
            process VARCHAR NOT NULL,
            token VARCHAR NOT NULL,
            purpose VARCHAR NOT NULL,
            acquired_at TIMESTAMP NOT NULL
        )""",
    "usage": """
        CREATE TABLE IF NOT EXISTS usage (
            run_id VARCHAR NOT NULL,
            ordinal BIGINT NOT NULL,
            provider VARCHAR,
            model VARCHAR,
            prompt_tokens BIGINT,
            completion_tokens BIGINT,
            total_tokens BIGINT,
            cost_usd DOUBLE,
            latency_ms DOUBLE,
            extra VARCHAR
        )""",
    "run_metric_stats": f"""
        CREATE TABLE IF NOT EXISTS run_metric_stats (
            run_id VARCHAR NOT NULL,
            ordinal INTEGER NOT NULL,
            metric VARCHAR NOT NULL,
            threshold DOUBLE,
            family VARCHAR,
            dimension VARCHAR,
            {_AGGREGATE_COLUMNS}
        )""",
    "run_cohort_stats": f"""
        CREATE TABLE IF NOT EXISTS run_cohort_stats (
            run_id VARCHAR NOT NULL,
            cohort VARCHAR,
            label VARCHAR NOT NULL,
            is_untagged BOOLEAN NOT NULL,
            sample_count BIGINT NOT NULL,
            ordinal INTEGER NOT NULL,
            metric VARCHAR NOT NULL,
            {_AGGREGATE_COLUMNS}
        )""",
    "baselines": """
        CREATE TABLE IF NOT EXISTS baselines (
            name VARCHAR PRIMARY KEY,
            run_id VARCHAR NOT NULL,
            dataset VARCHAR NOT NULL,
            promoted_at TIMESTAMP NOT NULL
        )""",
    "calibrations": """
        CREATE TABLE IF NOT EXISTS calibrations (
            calibration_id VARCHAR PRIMARY KEY,
            created_at TIMESTAMP NOT NULL,
            name VARCHAR NOT NULL,
            metric VARCHAR NOT NULL,
            judge_model VARCHAR,
            model_under_test VARCHAR,
            case_count BIGINT NOT NULL,
            agreement_rate DOUBLE,
            kappa DOUBLE,
            kappa_low DOUBLE,
            kappa_high DOUBLE,
            weighted_kappa DOUBLE,
            passed BOOLEAN NOT NULL,
            report JSON NOT NULL
        )""",
    "online_captures": """
        CREATE TABLE IF NOT EXISTS online_captures (
            capture_id VARCHAR PRIMARY KEY,
            dataset VARCHAR NOT NULL,
            sample_id VARCHAR NOT NULL,
            row_hash VARCHAR NOT NULL,
            captured_at TIMESTAMP NOT NULL,
            input JSON,
            expected_output JSON,
            actual_output VARCHAR,
            retained BOOLEAN NOT NULL,
            redactor VARCHAR,
            scored BOOLEAN NOT NULL
        )""",
    "checkpoints": """
        CREATE TABLE IF NOT EXISTS checkpoints (
            run_id VARCHAR NOT NULL,
            seq INTEGER NOT NULL,
            created_at TIMESTAMP NOT NULL,
            dataset VARCHAR NOT NULL,
            dataset_hash VARCHAR NOT NULL,
            repetitions INTEGER NOT NULL,
            executions BLOB NOT NULL
        )""",
    "eval_set_manifests": """
        CREATE TABLE IF NOT EXISTS eval_set_manifests (
            eval_set VARCHAR PRIMARY KEY,
            updated_at TIMESTAMP NOT NULL,
            manifest JSON NOT NULL
        )""",
    "online_scores": """
        CREATE TABLE IF NOT EXISTS online_scores (
            capture_id VARCHAR NOT NULL,
            dataset VARCHAR NOT NULL,
            sample_id VARCHAR NOT NULL,
            metric VARCHAR NOT NULL,
            score DOUBLE,
            passed BOOLEAN,
            threshold DOUBLE NOT NULL,
            error VARCHAR,
            judge_model VARCHAR,
            details JSON,
            judged_at TIMESTAMP NOT NULL
        )""",
    "labels": LABELS_TABLE,
}

HISTOGRAM_BUCKETS: Final = 10


def histogram_edges(buckets: int = HISTOGRAM_BUCKETS) -> list[tuple[int, float, float]]:
    """(bucket, min, max) triples exactly as ``aggregate.histograms`` computes them."""
    edges = [round(i / buckets, 10) for i in range(buckets)]
    return [(i, edges[i], 1.0 if i == buckets - 1 else edges[i + 1]) for i in range(buckets)]


def histogram_bucket(column: str = "score") -> str:
    """SQL for the bucket (0 to 9) of the score in ``column``, as ``score_histogram`` and
    ``aggregate.histograms`` place it."""
    # The edges are constants of the schema (not user values), written as exact literals so
    # that DuckDB compares scores against the very doubles Python uses.
    rounded = f"round({column}, 10)"
    index = " + ".join(f"({rounded} >= {lo!r})::INTEGER" for _, lo, _ in histogram_edges())
    return f"least(greatest({index} - 1, 0), {HISTOGRAM_BUCKETS - 1})"


def _histogram_view() -> str:
    triples = histogram_edges()
    grid = ", ".join(f"({i}, {lo!r}::DOUBLE, {hi!r}::DOUBLE)" for i, lo, hi in triples)
    return f"""
        CREATE OR REPLACE VIEW score_histogram AS
        WITH placed AS (
            SELECT run_id, metric, {histogram_bucket()} AS bucket
            FROM scores WHERE score IS NOT NULL
        ),
        counted AS (
            SELECT run_id, metric, bucket, count(*) AS count FROM placed GROUP BY ALL
        )
        SELECT m.run_id, m.metric, g.bucket, g.min, g.max, coalesce(c.count, 0) AS count
        FROM run_metrics AS m
        CROSS JOIN (VALUES {grid}) AS g(bucket, min, max)
        LEFT JOIN counted AS c
            ON c.run_id = m.run_id AND c.metric = m.metric AND c.bucket = g.bucket"""


def _run_status(runs: str | None, *, macro_f1: bool) -> str:
    """The run_status counts for every run (``runs`` None) or the runs of relation ``runs``;
    with ``macro_f1``, the run_macro_f1 columns after ``incomplete``, as the view has them."""
    mine = "" if runs is None else f" AND s.run_id IN (SELECT run_id FROM {runs})"
    f1_columns = "f.macro_f1, f.macro_f1_scored," if macro_f1 else ""
    f1_join = "LEFT JOIN run_macro_f1 AS f ON f.run_id = r.run_id" if macro_f1 else ""
    page = "" if runs is None else f"WHERE r.run_id IN (SELECT run_id FROM {runs})"
    return f"""
        WITH safety AS (
            SELECT s.run_id,
                   count(DISTINCT (s.sample_id, s.repetition)) AS safety_executions,
                   count(DISTINCT (s.sample_id, s.repetition)) FILTER (
                       WHERE s.error IS NOT NULL OR NOT coalesce(s.passed, false)
                   ) AS safety_failed_executions,
                   count(DISTINCT (s.sample_id, s.repetition)) FILTER (
                       WHERE s.error IS NOT NULL
                   ) AS safety_errored_executions
            FROM scores AS s
            JOIN run_metrics AS m ON m.run_id = s.run_id AND m.metric = s.metric
            WHERE m.dimension = 'safety'{mine}
            GROUP BY s.run_id
        ),
        errored AS (
            SELECT s.run_id, count(DISTINCT (s.sample_id, s.repetition)) AS errored_executions
            FROM scores AS s WHERE s.error IS NOT NULL{mine} GROUP BY s.run_id
        )
        SELECT r.run_id, r.n_executions AS executions,
               coalesce(e.errored_executions, 0) AS errored_executions,
               coalesce(e.errored_executions, 0) > 0 AS incomplete,
               {f1_columns}
               s.safety_executions, s.safety_failed_executions, s.safety_errored_executions,
               CASE WHEN s.run_id IS NOT NULL THEN s.safety_failed_executions = 0 END
                   AS safety_passed
        FROM runs AS r
        LEFT JOIN errored AS e ON e.run_id = r.run_id
        LEFT JOIN safety AS s ON s.run_id = r.run_id
        {f1_join}
        {page}"""


def run_status_select(runs: str) -> str:
    """The ``run_status`` view's counts (without its macro-F1) for the runs of the relation
    named ``runs`` (a table, view or CTE with a ``run_id`` column): a SELECT of ``run_id``,
    ``executions``, ``errored_executions``, ``incomplete`` and the ``safety_*`` columns.

    Reading the scores of those runs only, a page of runs costs its own scores: 42 ms for
    50 runs of a 3,600,000-score store, where the view filtered afterwards took 387 ms.
    """
    return _run_status(runs, macro_f1=False)


# As core/aggregate.py: a row passes when scored and at its threshold, so an errored row did
# not pass; pass_rate is over attempted rows, pass_rate_scored over scored ones; an aggregate
# over no row (or no scored row) is null.
_PASSED: Final = "count_if(passed AND error IS NULL)"
_AGGREGATES: Final = f"""
    count(*) AS n,
    count(score) AS n_scored,
    count(error) AS n_errors,
    {_PASSED} AS n_passed,
    avg(score) AS mean,
    quantile_cont(score, 0.5) AS p50,
    quantile_cont(score, 0.95) AS p95,
    CASE WHEN count(*) > 0 THEN {_PASSED} / count(*) END AS pass_rate,
    CASE WHEN count(score) > 0 THEN {_PASSED} / count(score) END AS pass_rate_scored"""

_FILLED: Final = """
    coalesce(a.n, 0) AS n,
    coalesce(a.n_scored, 0) AS n_scored,
    coalesce(a.n_errors, 0) AS n_errors,
    coalesce(a.n_passed, 0) AS n_passed,
    a.mean, a.p50, a.p95, a.pass_rate, a.pass_rate_scored"""

VIEWS: Final[dict[str, str]] = {
    "run_outputs": """
        CREATE OR REPLACE VIEW run_outputs AS
        SELECT r.run_id, o.* EXCLUDE (run_id)
        FROM runs AS r JOIN outputs AS o ON o.run_id = r.outputs_run_id""",
    "failures": """
        CREATE OR REPLACE VIEW failures AS
        SELECT run_id, sample_id, repetition, metric, error
        FROM scores WHERE error IS NOT NULL""",
    "metric_summary": f"""
        CREATE OR REPLACE VIEW metric_summary AS
        SELECT m.run_id, m.ordinal, m.metric, m.threshold, m.family, m.dimension, {_FILLED}
        FROM run_metrics AS m
        LEFT JOIN (SELECT run_id, metric, {_AGGREGATES} FROM scores GROUP BY run_id, metric) AS a
            ON a.run_id = m.run_id AND a.metric = m.metric""",
    # macro-F1 over the quality metrics (safety metrics are judged on their own), as
    # core/aggregate.macro_f1_of; macro_f1_scored over their scored rows only.
    "run_macro_f1": """
        CREATE OR REPLACE VIEW run_macro_f1 AS
        SELECT run_id,
               avg(pass_rate) FILTER (WHERE dimension IS DISTINCT FROM 'safety') AS macro_f1,
               avg(pass_rate_scored) FILTER (WHERE dimension IS DISTINCT FROM 'safety')
                   AS macro_f1_scored,
               count(*) FILTER (WHERE dimension IS DISTINCT FROM 'safety') AS n_metrics,
               count(*) FILTER (WHERE dimension = 'safety') AS n_safety_metrics
        FROM metric_summary GROUP BY run_id""",
    # What every view of a run shows first (core/aggregate.headline): errored executions
    # and the safety verdict (null without a safety metric).
    "run_status": "CREATE OR REPLACE VIEW run_status AS" + _run_status(None, macro_f1=True),
    "dimension_summary": f"""
        CREATE OR REPLACE VIEW dimension_summary AS
        WITH pooled AS (
            SELECT m.run_id, m.dimension,
                   count(DISTINCT m.metric) AS n_metrics,
                   {_AGGREGATES.replace("count(*)", "count(s.run_id)")}
            FROM run_metrics AS m
            LEFT JOIN scores AS s ON s.run_id = m.run_id AND s.metric = m.metric
            GROUP BY m.run_id, m.dimension
        ),
        macro AS (
            SELECT run_id, dimension, avg(mean) AS macro_mean, avg(pass_rate) AS macro_pass_rate
            FROM metric_summary GROUP BY run_id, dimension
        )
        SELECT p.*, macro.macro_mean, macro.macro_pass_rate
        FROM pooled AS p JOIN macro USING (run_id, dimension)""",
    "safety_failures": """
        CREATE OR REPLACE VIEW safety_failures AS
        SELECT s.run_id, s.sample_id, s.repetition, s.metric, s.score, s.error
        FROM scores AS s
        JOIN run_metrics AS m ON m.run_id = s.run_id AND m.metric = s.metric
        WHERE m.dimension = 'safety' AND (s.error IS NOT NULL OR NOT s.passed)""",
    "cohort_scores": """
        CREATE OR REPLACE VIEW cohort_scores AS
        SELECT s.run_id, s.sample_id, s.repetition, s.metric, s.score, s.passed, s.error,
               unnest(CASE WHEN len(d.tags) > 0 THEN d.tags ELSE [NULL::VARCHAR] END)
                   AS cohort
        FROM scores AS s
        JOIN runs AS r ON r.run_id = s.run_id
        JOIN samples AS d ON d.dataset_hash = r.dataset_hash AND d.sample_id = s.sample_id""",
    "cohort_summary": f"""
        CREATE OR REPLACE VIEW cohort_summary AS
        WITH a AS (SELECT run_id, cohort, metric, {_AGGREGATES} FROM cohort_scores GROUP BY ALL),
        counts AS (
            -- Every execution has one row per metric, so the executions of a cohort are its
            -- largest per-metric row count (cheaper than counting distinct executions).
            SELECT run_id, cohort, max(n) AS sample_count FROM a GROUP BY ALL
        )
        SELECT c.run_id, c.cohort, coalesce(c.cohort, '(untagged)') AS label,
               c.cohort IS NULL AS is_untagged, c.sample_count, m.ordinal, m.metric,
               {_FILLED}
        FROM counts AS c
        JOIN run_metrics AS m ON m.run_id = c.run_id
        LEFT JOIN a
            ON a.run_id = c.run_id AND a.metric = m.metric
            AND a.cohort IS NOT DISTINCT FROM c.cohort""",
    "score_histogram": _histogram_view(),
    "run_calibration": """
        CREATE OR REPLACE VIEW run_calibration AS
        SELECT run_id, metric, calibration_id, judge_model, agreement_rate, kappa,
               calibrated_at
        FROM (
            SELECT m.run_id, m.metric, c.calibration_id, c.judge_model, c.agreement_rate,
                   c.kappa, c.created_at AS calibrated_at,
                   row_number() OVER (
                       PARTITION BY m.run_id, m.metric ORDER BY c.created_at DESC
                   ) AS newest
            FROM run_metrics AS m
            JOIN runs AS r ON r.run_id = m.run_id
            JOIN calibrations AS c
                ON c.metric = m.metric AND list_contains(r.models, c.judge_model)
        )
        WHERE newest = 1""",
    "unstable_samples": """
        CREATE OR REPLACE VIEW unstable_samples AS
        SELECT * FROM sample_stats WHERE unstable""",
}


def create(con: duckdb.DuckDBPyConnection) -> None:
    """Create every table and view of the current version (inside the caller's transaction)."""
    for ddl in TABLES.values():
        con.execute(ddl)
    create_views(con)


VIEWS.update(AGENT_VIEWS)  # run_trajectories, tool_calls: store/_agent.py
VIEWS.update(LABEL_VIEWS)  # run_labels: store/_labels.py


def create_views(con: duckdb.DuckDBPyConnection) -> None:
    """(Re)create every view: ``scores`` and ``sample_stats`` first, which the others read."""
    in_place_views(con)
    for ddl in VIEWS.values():
        con.execute(ddl)


def fill_stats(con: duckdb.DuckDBPyConnection, run_id: str | None) -> None:
    """Materialize a run's (or, with None, every run's) metric and cohort aggregates."""
    where, params = ("WHERE run_id = ?", [run_id]) if run_id is not None else ("", [])
    for table, view in (
        ("run_metric_stats", "metric_summary"),
        ("run_cohort_stats", "cohort_summary"),
    ):
        con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM {view} {where}", params)


# --- migrations ----------------------------------------------------------------------------

# Version 0 is the pre-release layout, kept here so that tests can build a v0 file: it had
# no per-metric thresholds (every score passed at >= 0.5 and no ``passed`` column was
# stored), no rescoring (no ``runs.source_run_id``) and no views.
V0_TABLES: Final[dict[str, str]] = {
    "meta": TABLES["meta"],
    "runs": """
        CREATE TABLE runs (
            run_id VARCHAR PRIMARY KEY, seq BIGINT NOT NULL, name VARCHAR NOT NULL,
            dataset VARCHAR NOT NULL, dataset_hash VARCHAR NOT NULL,
            created_at TIMESTAMP NOT NULL, started_at DOUBLE, finished_at DOUBLE,
            evalframe_version VARCHAR, duckdb_version VARCHAR, git_commit VARCHAR,
            git_branch VARCHAR, models VARCHAR[], labels JSON, extra JSON,
            n_samples BIGINT, n_executions BIGINT, repetitions INTEGER, n_failures BIGINT,
            macro_f1 DOUBLE, pass_rate DOUBLE, within_row_variance DOUBLE, resolution DOUBLE,
            required_repetitions INTEGER, target_resolvable BOOLEAN
        )""",
    "run_metrics": """
        CREATE TABLE run_metrics (
            run_id VARCHAR NOT NULL, ordinal INTEGER NOT NULL, metric VARCHAR NOT NULL,
            name VARCHAR NOT NULL, params JSON, family VARCHAR, dimension VARCHAR,
            PRIMARY KEY (run_id, metric)
        )""",
    "samples": TABLES["samples"],
    "outputs": TABLES["outputs"],
    "scores": """
        CREATE TABLE scores (
            run_id VARCHAR NOT NULL, sample_id VARCHAR NOT NULL, repetition BIGINT NOT NULL,
            metric VARCHAR NOT NULL, score DOUBLE, error VARCHAR, details VARCHAR
        )""",
    "sample_stats": TABLES[SAMPLE_STATS_TABLE].replace(SAMPLE_STATS_TABLE, "sample_stats"),
    "usage": TABLES["usage"],
    "baselines": TABLES["baselines"],
}
"""Version 0 had no ``run_metric_stats`` and ``run_cohort_stats`` either."""


def _add_tables(con: duckdb.DuckDBPyConnection) -> None:
    """Create the tables the file lacks, first dropping a view of an older version that had
    a table's name (version 2's ``trajectories`` view)."""
    views = con.execute(
        "SELECT view_name FROM duckdb_views() WHERE NOT internal AND list_contains(?, view_name)",
        [list(TABLES)],
    ).fetchall()
    for (name,) in views:
        con.execute(f"DROP VIEW {name}")
    for ddl in TABLES.values():
        con.execute(ddl)
    # Registered files get their records as soon as the table exists: a later step of the
    # same migration may read the scores view, which reads the files those records name.
    record_present(con)


def _v0_to_v1(con: duckdb.DuckDBPyConnection) -> None:
    """Thresholds and rescoring: ``run_metrics.threshold``, ``scores.passed``, ``source_run_id``
    and ``outputs_run_id``.

    v0 files predate per-metric thresholds, so every metric gets the old rule, 0.5, and
    ``passed`` is backfilled as ``score >= 0.5`` (null where the score is null). Every v0
    run holds its own outputs.
    """
    con.execute("ALTER TABLE runs ADD COLUMN IF NOT EXISTS source_run_id VARCHAR")
    con.execute("ALTER TABLE runs ADD COLUMN IF NOT EXISTS outputs_run_id VARCHAR")
    con.execute("UPDATE runs SET outputs_run_id = run_id WHERE outputs_run_id IS NULL")
    con.execute("ALTER TABLE run_metrics ADD COLUMN IF NOT EXISTS threshold DOUBLE DEFAULT 0.5")
    con.execute("UPDATE run_metrics SET threshold = 0.5 WHERE threshold IS NULL")
    con.execute("ALTER TABLE scores ADD COLUMN IF NOT EXISTS passed BOOLEAN")
    con.execute("UPDATE scores SET passed = score >= 0.5 WHERE score IS NOT NULL")
    _add_tables(con)  # the stats tables, and those of later versions the views read
    create_views(con)
    fill_stats(con, None)


def _v2_to_v3(con: duckdb.DuckDBPyConnection) -> None:
    """Trajectories get their own table: version 2 kept them in ``outputs.extra``, read by
    views named ``trajectories`` and ``tool_calls`` (the table takes the first name; the
    views are recreated after the migrations)."""
    _add_tables(con)
    trajectories_from_extra(con, None)


def _v4_to_v5(con: duckdb.DuckDBPyConnection) -> None:
    """One notion of passing: pass rates over attempted rows (an errored row did not pass)
    with ``pass_rate_scored`` beside them, null over no row, and macro-F1 over the quality
    metrics. The stats tables gain ``n_passed`` and ``pass_rate_scored`` and are filled
    again; each run's ``macro_f1`` is recomputed by ``run_macro_f1``."""
    for table in ("run_metric_stats", "run_cohort_stats"):
        con.execute(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS n_passed BIGINT")
        con.execute(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS pass_rate_scored DOUBLE")
        con.execute(f"ALTER TABLE {table} ALTER COLUMN pass_rate DROP NOT NULL")
        con.execute(f"DELETE FROM {table}")
    _add_tables(con)
    # a calibration whose judge scored no case has no agreement rate (it was 0.0)
    con.execute("ALTER TABLE calibrations ALTER COLUMN agreement_rate DROP NOT NULL")
    create_views(con)
    fill_stats(con, None)
    con.execute(
        "UPDATE runs SET macro_f1 = m.macro_f1 FROM run_macro_f1 AS m WHERE m.run_id = runs.run_id"
    )


def _v3_to_v4(con: duckdb.DuckDBPyConnection) -> None:
    """Scores may live in files: the ``scores`` and ``sample_stats`` tables become
    ``stored_scores`` and ``stored_sample_stats`` behind views of the old names (recreated,
    with every other view, after the migrations), and ``run_files`` registers the files."""
    views = con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()
    for (name,) in views:
        con.execute(f"DROP VIEW {name}")
    for view, table in IN_PLACE.items():
        con.execute(f"DROP TABLE IF EXISTS {table}")  # empty: an earlier step's _add_tables
        con.execute(f"ALTER TABLE {view} RENAME TO {table}")
    _add_tables(con)


def _labels(con: duckdb.DuckDBPyConnection) -> None:
    """Human labels arrive (``labels``, read through ``run_labels``); nothing existing changes."""
    _add_tables(con)


def _parts_and_locks(con: duckdb.DuckDBPyConnection) -> None:
    """Each registered part file gets its row count, size and SHA-256 (``run_parts``,
    recorded from the files as they are, ``record_present``), and runs and eval sets get
    locks (``locks``)."""
    _add_tables(con)


MIGRATIONS: Final[dict[int, Callable[[duckdb.DuckDBPyConnection], None]]] = {
    0: _v0_to_v1,
    1: _add_tables,  # 2: calibrations, checkpoints, eval_set_manifests, online_*
    2: _v2_to_v3,
    3: _v3_to_v4,
    4: _v4_to_v5,
    5: _labels,
    6: _parts_and_locks,
}
"""``MIGRATIONS[v]`` upgrades a file from version ``v`` to ``v + 1``."""
