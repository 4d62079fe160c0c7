"""Rescoring on a Dask cluster: workers score Parquet parts, one writer registers them.

The source run's outputs and its dataset's rows are written by DuckDB (out of core) as
Parquet, one folder per hash bucket of ``sample_id`` (the same buckets for both, so each part
holds whole samples and their dataset rows), under ``<store>.parts/<new run id>/`` next to
the store file (a shared filesystem for a remote cluster); no row passes through the client.
Each worker reads its part's outputs and dataset rows, joins them, scores the part with the
one kernel and writes its scores, and its per-sample statistics when asked, as Parquet under
the same folder, replacing the file atomically: a task Dask reruns after losing a worker
rewrites its own file, so no row is doubled or lost. The store's single writer then moves the
parts beside a store file and registers them in the rescore's transaction, where the store's
views read them in place (``_files``; an in-memory store inserts them); the folder is removed
afterwards, whether the rescore succeeded or not.

Provider-backed metrics: the parts are read here once, the provider columns filled over the
whole input (one call per distinct text or prompt, under one concurrency and rate limit, one
budget, through the provider cache), and written beside each part for its worker.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import tempfile
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import duckdb
import polars as pl

from evalframe import cluster
from evalframe.core import schema as C
from evalframe.enrich import fill
from evalframe.store._files import Part, sha256_of

if TYPE_CHECKING:
    from evalframe.metrics._spec import Metric
    from evalframe.providers import Providers

__all__ = ["PARTS_SUFFIX", "parts_folder", "remove_parts", "score_parts"]

PARTS_SUFFIX: Final = ".parts"
_BUCKET: Final = "__bucket"


def parts_folder(store_path: str, run_id: str, *, in_memory: bool) -> Path:
    """Where a rescore's parts live: beside a file store, in a temporary folder otherwise."""
    root = (
        Path(tempfile.gettempdir()) / "evalframe-parts"
        if in_memory
        else Path(store_path).with_name(Path(store_path).name + PARTS_SUFFIX)
    )
    return root / run_id


def _write_atomically(frame: pl.DataFrame, path: Path) -> Part:
    """Write ``frame`` to ``path`` in one step; what the store records of the file (its
    rows, size and SHA-256, computed here on the worker rather than by the one writer)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
    frame.write_parquet(partial)
    os.replace(partial, path)
    return Part(path, frame.height, path.stat().st_size, sha256_of(path))


def _bucket_frame(
    files: Sequence[str], samples: Sequence[str], baselines: Mapping[str, pl.DataFrame]
) -> pl.DataFrame:
    """One bucket's evaluation frame: its outputs joined with its dataset rows."""
    from evalframe.store._rescore import evaluation_chunk

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
    from evalframe.store._rescore import sample_statistics

    frame = _bucket_frame(files, samples, baselines)
    columns = pl.read_parquet(filled, glob=False) if filled is not None else None
    scores = cluster.score_part(
        frame, columns, metrics=metrics, run_id=run_id, unavailable=unavailable
    )
    written = [_write_atomically(scores.select(C.SCORES_SCHEMA.names()), Path(out))]
    if stats is not None:
        hashes = frame.select(C.SAMPLE_ID, C.ROW_HASH).unique(C.SAMPLE_ID, keep="first")
        statistics = sample_statistics(scores).join(
            hashes, on=C.SAMPLE_ID, how="left", maintain_order="left"
        )
        written.append(
            _write_atomically(statistics.with_columns(pl.lit(run_id).alias(C.RUN_ID)), Path(stats))
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
    from evalframe.store._connect import execute
    from evalframe.store._rescore import dataset_statement, outputs_statement

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
        filled_files, unavailable = _fill_here(
            files, samples, metrics, providers, folder, baselines
        )
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


def _fill_here(
    files: list[tuple[str, ...]],
    samples: list[tuple[str, ...]],
    metrics: list[Metric],
    providers: Providers,
    folder: Path,
    baselines: Mapping[str, pl.DataFrame],
) -> tuple[list[str | None], dict[str, str]]:
    """Fill the provider columns once over every part; each part's columns as a file."""
    frames = [_bucket_frame(f, d, baselines) for f, d in zip(files, samples, strict=True)]
    whole = pl.concat(frames, how="diagonal_relaxed")
    filled, unavailable = fill(whole, metrics, providers)
    added = filled.select([c for c in filled.columns if c not in whole.columns])
    out: list[str | None] = []
    start = 0
    for i, frame in enumerate(frames):
        path = folder / "filled" / f"part-{i:06d}.parquet"
        _write_atomically(added.slice(start, frame.height), path)
        out.append(str(path))
        start += frame.height
    return out, unavailable


def _sql_path(path: Path) -> str:
    return str(path).replace("'", "''")


def remove_parts(folder: Path) -> None:
    """Remove a rescore's parts folder (and the root when it is left empty)."""
    shutil.rmtree(folder, ignore_errors=True)
    with contextlib.suppress(OSError):  # other rescores' parts are still there
        folder.parent.rmdir()
