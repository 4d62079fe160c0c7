"""Scoring saved outputs larger than memory straight into the store (``Store.score_outputs``).

The outputs (Parquet: a file, directory, glob or URL) are read piece by piece, about
``batch_size`` rows at a time, checked as ``read_outputs`` checks a file, and appended to the
store's ``outputs`` table a row group's worth at a time (``store._streamed``), coverage of the
dataset checked in SQL over what was stored. The run is then scored as a rescore scores a
stored run (``_rescore.score_into_run``): streamed back from DuckDB in whole-sample chunks
(or on a Dask cluster), its scores and statistics appended chunk by chunk, and its ``runs``
row written, in one transaction. The peak memory is about the dataset, a few pieces of
``batch_size`` rows and DuckDB's memory limit. A failure removes what the run stored.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from evalframe import cluster
from evalframe.core._dataset import Dataset
from evalframe.core._limits import checked
from evalframe.core._run_options import Limits
from evalframe.engine._rescore import score_into_run
from evalframe.enrich import providers_for
from evalframe.metrics._registry import MetricFactory, resolve
from evalframe.metrics._spec import Metric
from evalframe.store import _scored, _streamed
from evalframe.store._write import transaction

if TYPE_CHECKING:
    from evalframe.providers import EmbeddingClient, JudgeClient, Providers
    from evalframe.store import Store

__all__ = ["score_outputs"]


def score_outputs(
    store: Store,
    dataset: Dataset,
    outputs: str,
    metrics: Sequence[str | Metric | MetricFactory],
    *,
    repetitions: int,
    name: str | None,
    labels: Mapping[str, str] | None,
    batch_size: int,
    memory_limit: str | None,
    providers: Providers | EmbeddingClient | JudgeClient | None,
    dask: Any,
    limits: Limits | None = None,
) -> str:
    """Score Parquet ``outputs`` of ``dataset`` into a new run of ``store``; returns its id.

    The engine of ``Store.score_outputs``, which documents the arguments.
    """
    checked(batch_size, "batch_size")
    checked(repetitions, "repetitions")
    requested = resolve(metrics)
    context = providers_for(requested, providers, limits=limits)
    pieces = cluster.parquet_pieces(outputs, rows_per_piece=batch_size)
    run_id = uuid.uuid4().hex[:16]
    started = time.time()
    if context is not None:
        context.begin_run()
    with ExitStack() as stack:
        client = stack.enter_context(cluster.dask_client(dask)) if dask is not None else None
        with _scored.scoring_connection(
            store, run_id, on_cluster=client is not None, memory_limit=memory_limit
        ) as (con, parts):
            digest = _streamed.begin(con, dataset, run_id)
            try:
                for group in _streamed.commit_groups(pieces, repetitions):
                    loaded = (cluster.load_outputs(piece) for piece in group)
                    _streamed.append_outputs(con, loaded, run_id, repetitions)
                source = _streamed.stored_source(
                    con,
                    dataset,
                    digest,
                    run_id,
                    outputs=outputs,
                    repetitions=repetitions,
                    name=name,
                    labels=labels,
                )
                with transaction(con):
                    score_into_run(
                        con,
                        run_id,
                        source,
                        requested,
                        started=started,
                        keep=False,
                        force=True,
                        name=source["name"],
                        batch_size=batch_size,
                        providers=context,
                        client=client,
                        parts=parts,
                        record=_record(source, batch_size, context),
                    )
                    _streamed.finish(con, run_id)
            except BaseException:
                _streamed.abandon(con)
                raise
    return run_id


def _record(
    source: Mapping[str, Any], batch_size: int, providers: Providers | None
) -> dict[str, Any]:
    """The fields of a streamed run's record that differ from a rescore's."""
    extra: dict[str, Any] = {"outputs": "saved", "streamed": {"batch_size": batch_size}}
    if providers is not None:
        extra["cost"] = providers.cost_summary()
    return {
        "source_run_id": None,
        "extra": json.dumps(extra, ensure_ascii=False, default=str),
        "labels": source["labels"],
    }
