"""Writing a run: its frames go to DuckDB through Arrow, in one transaction."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any, Final

import duckdb
import polars as pl

from evalframe import schema as C
from evalframe._version import __version__
from evalframe.precision import precision_block, row_aggregates
from evalframe.store._connect import execute, fetch, store_error

if TYPE_CHECKING:
    from evalframe.run import Run

__all__ = [
    "RUN_TYPES",
    "dataset_hash",
    "git_info",
    "insert",
    "outputs_frame",
    "transaction",
    "usage_frame",
    "write_run",
]

OUTPUT_COLUMNS: Final = (C.ACTUAL_OUTPUT, C.SYSTEM_ERROR, *C.OPERATIONAL_COLUMNS.names())
USAGE_COLUMNS: Final = pl.Schema(
    {
        "provider": pl.String,
        "model": pl.String,
        "prompt_tokens": pl.Int64,
        "completion_tokens": pl.Int64,
        "total_tokens": pl.Int64,
        "cost_usd": pl.Float64,
        "latency_ms": pl.Float64,
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
            [pl.col(C.SAMPLE_ID), pl.col(C.ROW_HASH), pl.col(C.METADATA)],
            separator="\x1f",
            ignore_nulls=True,
        )
    ).to_series()
    for start in range(0, lines.len(), _HASH_CHUNK):
        chunk = lines.slice(start, _HASH_CHUNK).to_list()
        h.update(("\x1e".join(chunk) + "\x1e").encode("utf-8", "surrogatepass"))
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


def outputs_frame(frame: pl.DataFrame, run_id: str) -> pl.DataFrame:
    """The ``outputs`` rows of an evaluation frame: known columns typed, the rest as JSON."""
    known = set(C.DATASET_SCHEMA.names()) | {C.REPETITION, *OUTPUT_COLUMNS}
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


def _metrics_frame(run: Run) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "run_id": [run.run_id] * len(run.metrics),
            "ordinal": list(range(len(run.metrics))),
            "metric": [m.id for m in run.metrics],
            "name": [m.name for m in run.metrics],
            "params": [json.dumps(dict(m.params), default=str) for m in run.metrics],
            "threshold": [float(m.threshold) for m in run.metrics],
            "family": [m.family for m in run.metrics],
            "dimension": [m.dimension for m in run.metrics],
        },
        schema={
            "run_id": pl.String,
            "ordinal": pl.Int32,
            "metric": pl.String,
            "name": pl.String,
            "params": pl.String,
            "threshold": pl.Float64,
            "family": pl.String,
            "dimension": pl.String,
        },
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
    """Insert every row of ``run`` (call inside a transaction)."""
    if fetch(con, "SELECT count(*) FROM runs WHERE run_id = ?", [run.run_id]):
        raise store_error(
            f"Run {run.run_id} is already in the store; runs are immutable (rescore or "
            "evaluate again to get a new run).",
            None,
            KeyError(run.run_id),
        )
    dataset = run.dataset
    digest = dataset_hash(dataset)
    scores = run.scores.with_columns(pl.lit(run.run_id, pl.String).alias(C.RUN_ID))
    rows = row_aggregates(scores, run.frame)
    precision = precision_block(rows, run.frame.height)
    commit, branch = git_info()
    extra = {k: v for k, v in run.extra.items() if k != "models"}
    seq = fetch(con, "SELECT coalesce(max(seq), 0) + 1 FROM runs")
    record = {
        "run_id": run.run_id,
        "seq": seq,
        "name": run.name,
        "dataset": dataset.name,
        "dataset_hash": digest,
        "created_at": _utc(run.finished_at),
        "started_at": float(run.started_at),
        "finished_at": float(run.finished_at),
        "evalframe_version": __version__,
        "duckdb_version": duckdb.__version__,
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
        "n_failures": int(scores.get_column(C.ERROR).count()),
        "macro_f1": float(run.macro_f1),
        "pass_rate": precision["pass_rate"],
        "within_row_variance": precision["within_row_variance"],
        "resolution": precision["resolution"],
        "required_repetitions": precision["required_repetitions"],
        "target_resolvable": precision["target_resolvable"],
    }
    insert(con, "runs", pl.DataFrame([record], schema_overrides=RUN_TYPES))
    insert(con, "run_metrics", _metrics_frame(run))
    if not fetch(con, "SELECT count(*) FROM samples WHERE dataset_hash = ?", [digest]):
        insert(
            con,
            "samples",
            dataset.select(C.DATASET_SCHEMA.names()).with_columns(
                pl.lit(digest).alias("dataset_hash"),
                pl.int_range(pl.len(), dtype=pl.Int64).alias("ordinal"),
            ),
        )
    insert(con, "outputs", outputs_frame(run.frame, run.run_id))
    insert(con, "scores", scores.select(C.SCORES_SCHEMA.names()))
    insert(con, "sample_stats", rows.with_columns(pl.lit(run.run_id).alias(C.RUN_ID)))
    metrics = _metrics_frame(run).drop("name", "params")
    insert(con, "run_metric_stats", run.summary.join(metrics, on=C.METRIC, how="left"))
    insert(
        con,
        "run_cohort_stats",
        run.cohorts.join(metrics.select(C.METRIC, C.RUN_ID, "ordinal"), on=C.METRIC, how="left"),
    )
    usage = usage_frame(run.usage, run.run_id)
    if usage.height:
        insert(con, "usage", usage)


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
