"""Writing a run: its frames go to DuckDB through Arrow, in one transaction."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import subprocess
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any, Final

import duckdb
import polars as pl

from evalframe._version import __version__
from evalframe.core import schema as C
from evalframe.core._precision import precision_block
from evalframe.core._trajectory import TRAJECTORY_COLUMN
from evalframe.store._agent import trajectories_frame
from evalframe.store._connect import execute, fetch, store_error
from evalframe.store._files import SAMPLE_STATS_TABLE, SCORES_TABLE

if TYPE_CHECKING:
    from evalframe.core._run import Run
    from evalframe.core._score import Scorable

__all__ = [
    "RUN_TYPES",
    "dataset_hash",
    "git_info",
    "insert",
    "insert_outputs",
    "insert_samples",
    "outputs_frame",
    "transaction",
    "usage_frame",
    "write_run",
]

OUTPUT_COLUMNS: Final = (C.ACTUAL_OUTPUT, C.SYSTEM_ERROR, *C.OPERATIONAL_COLUMNS.names())
# The usage fields the usage table holds as typed columns; usage_frame puts the rest in its
# ``extra`` JSON.
USAGE_COLUMNS: Final = pl.Schema(
    {
        name: C.USAGE_SCHEMA[name]
        for name in (
            "provider",
            "model",
            "prompt_tokens",
            "completion_tokens",
            "total_tokens",
            "cost_usd",
            "latency_ms",
        )
    }
)
_HASH_CHUNK: Final = 100_000


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """BEGIN ... COMMIT, rolling back (and re-raising) on any error."""
    execute(con, "BEGIN TRANSACTION")
    try:
        yield
    except BaseException:
        with suppress(duckdb.Error):
            con.execute("ROLLBACK")
        raise
    execute(con, "COMMIT")


def insert(con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame | Any) -> None:
    """Append a Polars frame or an Arrow table/batch to ``table``, matching columns by name.

    The rows reach DuckDB by a replacement scan of the local variable named in the statement,
    not by ``register``: a registered view dropped inside a transaction stays in the catalog
    (and keeps its Arrow data alive) until the transaction ends, so a rescore appending many
    batches in one transaction would hold every batch in memory.
    """
    _evalframe_rows = frame.to_arrow() if isinstance(frame, pl.DataFrame) else frame
    statement = f"INSERT INTO {table} BY NAME SELECT * FROM _evalframe_rows"
    try:
        con.execute(statement)
    except duckdb.Error as exc:
        raise store_error(f"Could not write to the store's {table} table.", statement, exc) from exc


def dataset_hash(dataset: pl.DataFrame) -> str:
    """SHA-256 over each sample's id, row hash and metadata, in dataset order.

    Two datasets with the same hash have the same samples in the same order; the name is
    not part of it.
    """
    h = hashlib.sha256()
    lines = dataset.select(
        pl.concat_str(
            [
                pl.concat_str(
                    [pl.col(C.SAMPLE_ID), pl.col(C.ROW_HASH), pl.col(C.METADATA)],
                    separator="\x1f",
                    ignore_nulls=True,
                ),
                pl.lit("\x1e"),
            ]
        )
    ).to_series()
    # Each line followed by \x1e, joined by Polars a chunk at a time (no per-row Python).
    for start in range(0, lines.len(), _HASH_CHUNK):
        chunk: str = lines.slice(start, _HASH_CHUNK).str.join("").item()
        h.update(chunk.encode("utf-8"))
    return h.hexdigest()


def git_info() -> tuple[str | None, str | None]:
    """The current git commit and branch: CI variables first, then ``git`` itself."""
    commit = os.environ.get("GITHUB_SHA") or os.environ.get("CI_COMMIT_SHA")
    branch = os.environ.get("GITHUB_REF_NAME") or os.environ.get("CI_COMMIT_REF_NAME")
    if commit is None:
        commit = _git("rev-parse", "HEAD")
    if branch is None and commit is not None:
        branch = _git("rev-parse", "--abbrev-ref", "HEAD")
        if branch == "HEAD":  # detached
            branch = None
    return commit, branch


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    out = done.stdout.strip()
    return out if done.returncode == 0 and out else None


def insert_outputs(con: duckdb.DuckDBPyConnection, frame: pl.DataFrame, run_id: str) -> None:
    """Append an evaluation frame's ``outputs`` rows, and its ``trajectories`` rows."""
    insert(con, "outputs", outputs_frame(frame, run_id))
    recorded = trajectories_frame(frame, run_id)
    if recorded is not None:
        insert(con, "trajectories", recorded)


def outputs_frame(frame: pl.DataFrame, run_id: str) -> pl.DataFrame:
    """The ``outputs`` rows of an evaluation frame: known columns typed, the rest (but the
    trajectory, which has its own table) as JSON."""
    known = set(C.DATASET_SCHEMA.names()) | {C.REPETITION, TRAJECTORY_COLUMN, *OUTPUT_COLUMNS}
    extra = [c for c in frame.columns if c not in known]
    cols: list[pl.Expr] = [
        pl.lit(run_id, pl.String).alias(C.RUN_ID),
        pl.col(C.SAMPLE_ID),
        pl.col(C.REPETITION).cast(pl.Int64),
    ]
    for name in OUTPUT_COLUMNS:
        dtype = C.OPERATIONAL_COLUMNS.get(name, pl.String)
        if name in frame.columns:
            cols.append(pl.col(name).cast(dtype, strict=False))
        else:
            cols.append(pl.lit(None, dtype).alias(name))
    if extra:
        cols.append(pl.struct(extra).struct.json_encode().alias("extra"))
    else:
        cols.append(pl.lit(None, pl.String).alias("extra"))
    return frame.select(cols)


_RUN_METRIC_TYPES: Final = pl.Schema(
    {
        "metric": pl.String(),
        "name": pl.String(),
        "params": pl.String(),
        "threshold": pl.Float64(),
        "family": pl.String(),
        "dimension": pl.String(),
    }
)


def metrics_frame(
    run_id: str, metrics: Sequence[Scorable], carried: pl.DataFrame | None = None
) -> pl.DataFrame:
    """A run's ``run_metrics`` rows: ``metrics`` in order, then any ``carried`` rows (metric
    definitions kept from a source run), numbered by ``ordinal``."""
    rows = [
        {
            "metric": m.id,
            "name": m.name,
            "params": json.dumps(dict(m.params), default=str),
            "threshold": float(m.threshold),
            "family": m.family,
            "dimension": m.dimension,
        }
        for m in metrics
    ]
    if carried is not None:
        rows += carried.select(_RUN_METRIC_TYPES.names()).to_dicts()
    return pl.DataFrame(rows, schema=_RUN_METRIC_TYPES).select(
        pl.lit(run_id, pl.String).alias(C.RUN_ID),
        pl.int_range(pl.len(), dtype=pl.Int32).alias("ordinal"),
        pl.all(),
    )


def usage_frame(usage: pl.DataFrame, run_id: str) -> pl.DataFrame:
    if usage.height == 0:
        return pl.DataFrame()
    extra = [c for c in usage.columns if c not in USAGE_COLUMNS]
    cols: list[pl.Expr] = [
        pl.lit(run_id, pl.String).alias(C.RUN_ID),
        pl.int_range(pl.len(), dtype=pl.Int64).alias("ordinal"),
    ]
    for name, dtype in USAGE_COLUMNS.items():
        cols.append(
            pl.col(name).cast(dtype, strict=False)
            if name in usage.columns
            else pl.lit(None, dtype).alias(name)
        )
    cols.append(
        pl.struct(extra).struct.json_encode().alias("extra")
        if extra
        else pl.lit(None, pl.String).alias("extra")
    )
    return usage.select(cols)


def _models(run: Run) -> list[str]:
    models: list[str] = []
    if "model" in run.usage.columns:
        models = run.usage.get_column("model").drop_nulls().unique(maintain_order=True).to_list()
    for m in run.extra.get("models", []) or []:
        if isinstance(m, str) and m not in models:
            models.append(m)
    return models


def _utc(epoch: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(epoch, dt.UTC).replace(tzinfo=None)


def _json_default(value: Any) -> Any:
    if isinstance(value, pl.DataFrame):
        return value.to_dicts()
    return str(value)


def write_run(con: duckdb.DuckDBPyConnection, run: Run) -> None:
    """Insert every row of ``run`` (call inside a transaction).

    The run's aggregates (per-row statistics, per-metric and per-cohort summaries) are
    computed by Polars on a worker thread while DuckDB appends the outputs and scores: both
    release the GIL, so the two overlap instead of adding up (on two cores, 0.5-0.8 s of a
    million-row save). ``_bulk_settings`` and ``_unordered`` keep the checkpoint that closes
    the connection from rewriting what was just appended.
    """
    if fetch(con, "SELECT count(*) FROM runs WHERE run_id = ?", [run.run_id]):
        raise store_error(
            f"Run {run.run_id} is already in the store; runs are immutable (rescore or "
            "evaluate again to get a new run).",
            None,
            KeyError(run.run_id),
        )
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="evalframe-save") as pool:
        per_row = pool.submit(_per_row, run)
        summaries = pool.submit(_summaries, run)
        try:
            with _bulk_settings(con, run.scores.height):
                _write_rows(con, run, per_row, summaries)
        finally:  # on an error, don't start what is still queued
            per_row.cancel()
            summaries.cancel()


def _per_row(run: Run) -> tuple[pl.DataFrame, dict[str, Any]]:
    """The per-row statistics (``sample_stats``) and the precision block from them."""
    rows = run.sample_aggregates
    return rows, precision_block(rows, run.frame.height)


def _summaries(run: Run) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The run's per-metric summary and cohorts (cached on the run for its report)."""
    return run.summary, run.cohorts


def insert_samples(con: duckdb.DuckDBPyConnection, dataset: pl.DataFrame) -> tuple[str, bool]:
    """Store the dataset's samples unless a dataset with the same hash is stored already;
    returns the hash and whether the samples were new."""
    digest = dataset_hash(dataset)
    new = not fetch(con, "SELECT count(*) FROM samples WHERE dataset_hash = ?", [digest])
    if new:
        insert(
            con,
            "samples",
            dataset.select(C.DATASET_SCHEMA.names()).with_columns(
                pl.lit(digest).alias("dataset_hash"),
                pl.int_range(pl.len(), dtype=pl.Int64).alias("ordinal"),
            ),
        )
    return digest, new


def _write_rows(
    con: duckdb.DuckDBPyConnection,
    run: Run,
    per_row: Future[tuple[pl.DataFrame, dict[str, Any]]],
    summaries: Future[tuple[pl.DataFrame, pl.DataFrame]],
) -> None:
    dataset = run.dataset
    metrics = metrics_frame(run.run_id, run.metrics)
    insert(con, "run_metrics", metrics)
    digest, _ = insert_samples(con, dataset)
    insert_outputs(con, run.frame, run.run_id)
    with _unordered(con):
        insert(
            con,
            SCORES_TABLE,
            run.scores.with_columns(pl.lit(run.run_id, pl.String).alias(C.RUN_ID)).select(
                C.SCORES_SCHEMA.names()
            ),
        )
    rows, precision = per_row.result()
    insert(con, SAMPLE_STATS_TABLE, rows.with_columns(pl.lit(run.run_id).alias(C.RUN_ID)))
    summary, cohorts = summaries.result()
    commit, branch = git_info()
    extra = {k: v for k, v in run.extra.items() if k != "models"}
    insert_run_record(
        con,
        {
            "run_id": run.run_id,
            "name": run.name,
            "dataset": dataset.name,
            "dataset_hash": digest,
            "git_commit": commit,
            "git_branch": branch,
            "models": _models(run),
            "labels": json.dumps(dict(run.labels), ensure_ascii=False, default=str),
            "extra": json.dumps(extra, ensure_ascii=False, default=_json_default),
            "source_run_id": run.extra.get("source_run_id"),
            "outputs_run_id": run.run_id,
            "n_samples": dataset.height,
            "n_executions": run.frame.height,
            "repetitions": run.repetitions,
            "n_failures": int(run.scores.get_column(C.ERROR).count()),
            "macro_f1": run.macro_f1,
        },
        started=run.started_at,
        finished=run.finished_at,
        precision=precision,
    )
    metrics = metrics.drop("name", "params")
    insert(con, "run_metric_stats", summary.join(metrics, on=C.METRIC, how="left"))
    insert(
        con,
        "run_cohort_stats",
        cohorts.join(metrics.select(C.METRIC, C.RUN_ID, "ordinal"), on=C.METRIC, how="left"),
    )
    usage = usage_frame(run.usage, run.run_id)
    if usage.height:
        insert(con, "usage", usage)


def insert_run_record(
    con: duckdb.DuckDBPyConnection,
    fields: dict[str, Any],
    *,
    started: float,
    finished: float,
    precision: dict[str, Any],
) -> None:
    """Insert a run's ``runs`` row: the one place a run record is assembled.

    ``fields`` holds the run's identity and counts; this adds the sequence number, the
    times, the versions and the statistics of its ``precision`` block, so a saved run and a
    rescored one carry the same facts computed the same way.
    """
    record = {
        **fields,
        "seq": fetch(con, "SELECT coalesce(max(seq), 0) + 1 FROM runs"),
        "created_at": _utc(finished),
        "started_at": float(started),
        "finished_at": float(finished),
        "evalframe_version": __version__,
        "duckdb_version": duckdb.__version__,
        **{k: precision[k] for k in _PRECISION_COLUMNS},
    }
    insert(con, "runs", pl.DataFrame([record], schema_overrides=RUN_TYPES))


_PRECISION_COLUMNS: Final = (
    "pass_rate",
    "within_row_variance",
    "resolution",
    "required_repetitions",
    "target_resolvable",
)

BULK_ROWS: Final = 122_880
"""A save with at least this many score rows (one DuckDB row group) is a bulk save."""


@contextmanager
def _bulk_settings(con: duckdb.DuckDBPyConnection, score_rows: int) -> Iterator[None]:
    """For a bulk save, stop the checkpoint that closes the connection from vacuuming.

    Each table's last row group is usually partly filled. When the next run is appended, the
    checkpoint merges that row group with the new rows into fewer row groups, which rewrites
    (and compresses again) the whole appended run: 0.3-0.5 s for 250,000 ``sample_stats``
    rows. ``max_vacuum_tasks = 0`` skips the merge, leaving at most one partial row group per
    table and bulk save. It is not restored: it must hold when the connection closes, and a
    file connection closes right after the save (an in-memory database never checkpoints). A
    small save keeps the default and compacts the partial row groups left before it.
    """
    if score_rows >= BULK_ROWS:
        execute(con, "SET max_vacuum_tasks = 0")
    yield


@contextmanager
def _unordered(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """``preserve_insertion_order = false`` for one append, then the previous value.

    With the order preserved, DuckDB appends a large Arrow table in per-thread row groups
    that the checkpoint then rewrites (0.2-0.4 s per million score rows); without it, the
    rows go to one collection. The stored order of ``scores`` carries no meaning: every read
    sorts by metric ordinal, repetition and sample ordinal.
    """
    before = fetch(con, "SELECT current_setting('preserve_insertion_order')")
    execute(con, "SET preserve_insertion_order = false")
    try:
        yield
    finally:
        with suppress(duckdb.Error):
            con.execute(f"SET preserve_insertion_order = {'true' if before else 'false'}")


RUN_TYPES: Final = pl.Schema(
    {
        "seq": pl.Int64(),
        "started_at": pl.Float64(),
        "finished_at": pl.Float64(),
        "git_commit": pl.String(),
        "git_branch": pl.String(),
        "models": pl.List(pl.String),
        "source_run_id": pl.String(),
        "repetitions": pl.Int32(),
        "required_repetitions": pl.Int32(),
        "macro_f1": pl.Float64(),
        "pass_rate": pl.Float64(),
        "within_row_variance": pl.Float64(),
        "resolution": pl.Float64(),
    }
)
