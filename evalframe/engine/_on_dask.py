"""``evaluate(..., dask=...)``: saved outputs read and scored by a Dask cluster's workers.

Parquet outputs (a file, directory, glob or URL) are cut into pieces that workers read
themselves; other outputs are read here and sent in parts. The dataset is read here once
and broadcast. The client collects only the sample ids to check coverage, then the
evaluation frames and scores of the finished parts, and puts them in the in-process order,
so the ``Run`` is the one ``evaluate`` builds without Dask.

Provider-backed metrics: the parts' frames are gathered, the provider columns filled here
once over the whole input (each distinct text or prompt asked once, under one concurrency
and rate limit, one budget and the provider cache), and sent back to be scored with them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from evalframe import cluster
from evalframe.core import schema as C
from evalframe.core._dataset import Dataset
from evalframe.core._outputs import align_outputs, check_coverage
from evalframe.engine._outputs import as_outputs
from evalframe.enrich import fill, part_of
from evalframe.metrics._spec import Metric
from evalframe.providers import Providers

__all__ = ["DEFAULT_PART_ROWS", "evaluate_on_dask", "filled_parts"]

# Rows per part: large enough that a task's overhead (milliseconds) is noise beside scoring.
DEFAULT_PART_ROWS = 100_000


def _outputs_parts(
    outputs: Any, ds: Dataset, part_rows: int
) -> tuple[list[cluster.Piece] | None, list[pl.DataFrame] | None]:
    """Pieces for workers to read (Parquet sources), or parts of outputs read here."""
    if isinstance(outputs, str | os.PathLike):
        text = os.fspath(outputs)
        if cluster.is_parquet_source(text) or text.lower().endswith(".parquet"):
            return cluster.parquet_pieces(text, rows_per_piece=part_rows), None
    aligned = align_outputs(ds, as_outputs(outputs))
    return None, [aligned.slice(i, part_rows) for i in range(0, max(aligned.height, 1), part_rows)]


def evaluate_on_dask(
    target: cluster.DaskTarget,
    ds: Dataset,
    outputs: Any,
    metrics: Sequence[Metric],
    *,
    repetitions: int,
    run_id: str,
    context: Providers | None,
    baselines: Mapping[str, pl.DataFrame],
    part_rows: int = DEFAULT_PART_ROWS,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The evaluation frame and the long scores, computed on the cluster ``target``.

    Raises:
        DatasetError: the outputs do not cover the dataset, or a piece is unreadable.
        ClusterError: the cluster could not be reached or failed (nothing is saved).
    """
    pieces, local_parts = _outputs_parts(outputs, ds, part_rows)
    base = ds.select(C.DATASET_SCHEMA.names()).with_row_index(cluster.POSITION)
    name = cluster.describe(target)
    with cluster.dask_client(target) as client:
        if pieces is not None:
            loaded = cluster.submit_each(
                client, cluster.load_outputs, pieces, step="outputs", tag=run_id
            )
            ids = cluster.gather(
                client,
                cluster.submit_each(client, cluster.sample_ids, loaded, step="ids", tag=run_id),
                cluster=name,
            )
            given = pl.concat(ids) if ids else pl.Series(C.SAMPLE_ID, [], pl.String)
            cluster.check_unique(given, os.fspath(outputs))
            check_coverage(ds, given)
        else:
            loaded = client.scatter(local_parts)
        [shared] = client.scatter([base], broadcast=True)
        [shared_baselines] = client.scatter([dict(baselines)], broadcast=True)
        parts = cluster.submit_each(
            client,
            cluster.evaluation_part,
            loaded,
            step="frame",
            tag=run_id,
            base=shared,
            repetitions=repetitions,
            baselines=shared_baselines,
        )
        frames = cluster.gather(client, parts, cluster=name)
        if context is not None and any(m.needs() for m in metrics):
            added, unavailable = filled_parts(frames, metrics, context)
            items = list(zip(parts, client.scatter(added), strict=True))
        else:
            unavailable, items = {}, [(p, None) for p in parts]
        scored = cluster.submit_each(
            client,
            cluster.score_part,
            items,
            step="score",
            tag=run_id,
            run_id=run_id,
            metrics=list(metrics),
            unavailable=unavailable,
        )
        scores = cluster.gather(client, scored, cluster=name)
    return _in_order(frames, scores, metrics)


def filled_parts(
    frames: Sequence[pl.DataFrame], metrics: Sequence[Metric], providers: Providers
) -> tuple[list[pl.DataFrame], dict[str, str]]:
    """The provider-filled columns of each part's evaluation frame, filled here once over
    every part (each distinct text or prompt asked once, under one concurrency and rate
    limit, one budget and the provider cache), and the metrics left unavailable.

    The one fan-out of provider work for a cluster: ``evaluate`` sends each part's columns
    to its task, a rescore writes them beside its part.
    """
    whole = pl.concat(frames, how="diagonal_relaxed").drop(cluster.POSITION, strict=False)
    filled, unavailable = fill(whole, list(metrics), providers, gather=False)
    added = filled.select([c for c in filled.columns if c not in whole.columns])
    parts, start = [], 0
    for frame in frames:
        parts.append(part_of(added, start, frame.height))
        start += frame.height
    return parts, unavailable


def _in_order(
    frames: list[pl.DataFrame], scores: list[pl.DataFrame], metrics: Sequence[Metric]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The parts put together in the in-process order: repetition-major dataset order for
    the frame, and metric by metric in that order for the scores."""
    frame = (
        pl.concat(frames, how="diagonal_relaxed")
        .sort(C.REPETITION, cluster.POSITION, maintain_order=True)
        .drop(cluster.POSITION)
    )
    ordinal = pl.DataFrame(
        {C.METRIC: [m.id for m in metrics], "__ordinal": range(len(metrics))},
        schema={C.METRIC: pl.String, "__ordinal": pl.Int64},
    )
    long = pl.concat(scores, how="vertical") if scores else pl.DataFrame(schema=C.SCORES_SCHEMA)
    if cluster.POSITION not in long.columns:
        return frame, long
    ordered = (
        long.join(ordinal, on=C.METRIC, how="left")
        .sort("__ordinal", C.REPETITION, cluster.POSITION, maintain_order=True)
        .drop("__ordinal", cluster.POSITION)
    )
    return frame, ordered
