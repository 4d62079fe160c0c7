"""Rescoring on a Dask cluster: workers score Parquet parts, the store's one writer adds them.

The source run's outputs and its dataset's rows are written by DuckDB (out of core) as
Parquet, one folder per hash bucket of ``sample_id`` (the same buckets for both, so each part
holds whole samples and their dataset rows), under ``<store>.parts/<new run id>/`` next to
the store file (a shared filesystem for a remote cluster); no row passes through the client.
Each worker reads its part's outputs and dataset rows, joins them, scores the part with the
one kernel and writes its scores, and its per-sample statistics when asked, as Parquet under
the same folder, replacing the file atomically: a task Dask reruns after losing a worker
rewrites its own file, so no row is doubled or lost. The store's single writer then moves the
parts beside a store file and registers them in the rescore's transaction, where the store's
views read them in place (``store._files``; an in-memory store inserts them); the folder is
removed afterwards, whether the rescore succeeded or not.

Provider-backed metrics: the parts are read here once and the provider columns filled over
the whole input as ``evaluate`` on a cluster fills them (``_on_dask.filled_parts``), then
written beside each part for its worker.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import duckdb
import polars as pl

from evalframe import cluster
from evalframe.core import schema as C
from evalframe.engine._on_dask import filled_parts
from evalframe.store._chunks import dataset_statement, evaluation_chunk, outputs_statement
from evalframe.store._connect import execute
from evalframe.store._files import Part, write_part
from evalframe.store._scored import sample_statistics

if TYPE_CHECKING:
    from evalframe.metrics._spec import Metric
    from evalframe.providers import Providers

__all__ = ["score_parts"]

_BUCKET: Final = "__bucket"


def _bucket_frame(
    files: Sequence[str], samples: Sequence[str], baselines: Mapping[str, pl.DataFrame]
) -> pl.DataFrame:
    """One bucket's evaluation frame: its outputs joined with its dataset rows."""
    rows = pl.read_parquet(list(samples), glob=False).drop(_BUCKET, strict=False)
    return evaluation_chunk(pl.read_parquet(list(files), glob=False), rows, baselines)


def _score_bucket(
    files: Sequence[str],
    samples: Sequence[str],
    filled: str | None,
    out: str,
    stats: str | None,
    *,
    metrics: Sequence[Metric],
    run_id: str,
    unavailable: Mapping[str, str],
    baselines: Mapping[str, pl.DataFrame],
) -> list[Part]:
    """A worker's task: score one bucket's part and write its scores (and statistics);
    returns the files it wrote."""
    frame = _bucket_frame(files, samples, baselines)
    columns = pl.read_parquet(filled, glob=False) if filled is not None else None
    scores = cluster.score_part(
        frame, columns, metrics=metrics, run_id=run_id, unavailable=unavailable
    )
    written = [write_part(scores.select(C.SCORES_SCHEMA.names()), Path(out))]
    if stats is not None:
        hashes = frame.select(C.SAMPLE_ID, C.ROW_HASH).unique(C.SAMPLE_ID, keep="first")
        statistics = sample_statistics(scores).join(
            hashes, on=C.SAMPLE_ID, how="left", maintain_order="left"
        )
        written.append(
            write_part(statistics.with_columns(pl.lit(run_id).alias(C.RUN_ID)), Path(stats))
        )
    return written


def score_parts(
    con: duckdb.DuckDBPyConnection,
    client: Any,
    *,
    outputs_run_id: str,
    dataset_hash: str,
    rows: int,
    metrics: list[Metric],
    run_id: str,
    folder: Path,
    batch_size: int,
    providers: Providers | None,
    baselines: Mapping[str, pl.DataFrame],
    with_stats: bool,
) -> dict[str, list[Part]]:
    """Score the stored outputs of run ``outputs_run_id`` (of the dataset ``dataset_hash``)
    on the cluster; returns the scores parts and the per-sample statistics parts (none
    without ``with_stats``), by the view that reads them, as complete rows of its table."""
    workers = max(len(client.scheduler_info().get("workers", {})), 1)
    buckets = max(2 * workers, math.ceil(rows / batch_size), 1)
    folder.mkdir(parents=True, exist_ok=True)
    for target, statement, params in (
        ("input", outputs_statement(con, outputs_run_id), [outputs_run_id]),
        ("samples", dataset_statement(), [dataset_hash]),
    ):
        execute(
            con,
            f"COPY (SELECT *, hash(sample_id) % {buckets} AS {_BUCKET} FROM ({statement})) "
            f"TO '{_sql_path(folder / target)}' (FORMAT parquet, PARTITION_BY ({_BUCKET}))",
            params,
        )
    parts = sorted(p for p in (folder / "input").iterdir() if p.is_dir())
    files = [tuple(sorted(str(f) for f in p.glob("*.parquet"))) for p in parts]
    # Every output's sample is in the dataset (a stored run covers it), so every bucket of
    # outputs has its bucket of dataset rows.
    samples = [
        tuple(sorted(str(f) for f in (folder / "samples" / p.name).glob("*.parquet")))
        for p in parts
    ]
    filled_files: list[str | None] = [None] * len(parts)
    unavailable: dict[str, str] = {}
    if providers is not None and any(m.needs() for m in metrics):
        frames = [_bucket_frame(f, d, baselines) for f, d in zip(files, samples, strict=True)]
        columns, unavailable = filled_parts(frames, metrics, providers)
        for i, added in enumerate(columns):
            path = folder / "filled" / f"part-{i:06d}.parquet"
            write_part(added, path)
            filled_files[i] = str(path)
    name = cluster.describe(client)
    scores_at, stats_at = folder / "scores", folder / "stats"
    items = [
        (
            list(f),
            list(samples[i]),
            filled_files[i],
            str(scores_at / f"part-{i:06d}.parquet"),
            str(stats_at / f"part-{i:06d}.parquet") if with_stats else None,
        )
        for i, f in enumerate(files)
    ]
    futures = cluster.submit_each(
        client,
        _score_bucket,
        items,
        step="rescore",
        tag=run_id,
        metrics=metrics,
        run_id=run_id,
        unavailable=unavailable,
        baselines=dict(baselines),
    )
    written: list[list[Part]] = cluster.gather(client, futures, cluster=name)
    return {
        "scores": [w[0] for w in written],
        "sample_stats": [w[1] for w in written] if with_stats else [],
    }


def _sql_path(path: Path) -> str:
    return str(path).replace("'", "''")
