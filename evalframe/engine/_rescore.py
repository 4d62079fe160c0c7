"""Rescoring stored outputs: new or changed metrics, no call to the system under test.

Memory stays bounded whatever the run's size: the source's outputs stream out of the store in
chunks of whole samples (``store._chunks``), each scored with the runner ``ef.score`` uses
(its needs filled by the one set of providers of the command) and appended before the next is
read; on a Dask cluster workers score the source in parts (``_rescore_dask``). Metrics the
source already scored are copied by the store, never recomputed. The store's one writer
writes the new run in one transaction (``store._scored``): a crash leaves no partial run.
``Store.rescore`` and ``Store.score_outputs`` reach this engine through the lazy seam.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from evalframe.core._errors import StoreError
from evalframe.core._limits import checked
from evalframe.core._progress import track
from evalframe.core._run_options import Limits
from evalframe.engine._rescore_dask import score_parts
from evalframe.enrich import providers_for, score
from evalframe.metrics._judge_engine import prompt_keys
from evalframe.metrics._registry import MetricFactory, resolve
from evalframe.metrics._spec import Metric
from evalframe.providers import EmbeddingClient, JudgeClient, Providers
from evalframe.store import _chunks, _scored
from evalframe.store._write import transaction

if TYPE_CHECKING:
    from evalframe.store import Store

__all__ = ["rescore", "score_into_run"]


def rescore(
    store: Store,
    metrics: Sequence[str | Metric | MetricFactory],
    *,
    runs: str | Sequence[str] | None = None,
    keep: bool = False,
    force: bool = False,
    name: str | None = None,
    batch_size: int = 100_000,
    memory_limit: str | None = "2GB",
    providers: Providers | EmbeddingClient | JudgeClient | None = None,
    dask: Any = None,
    limits: Limits | None = None,
) -> list[str]:
    """Rescore each source run of ``store`` into a new run; returns the new run ids.

    The engine of ``Store.rescore``, which documents the arguments. With ``dask`` (a client,
    a scheduler address or ``local:N``), workers score the source in parts; the store's one
    writer registers them.
    """
    checked(batch_size, "batch_size")
    requested = resolve(metrics)
    if not requested:
        raise StoreError("Rescoring needs at least one metric (-m SPEC).")
    context = providers_for(requested, providers, limits=limits)
    sources = _chunks.source_runs(store, runs)
    with ExitStack() as stack:
        client = None
        if dask is not None:
            from evalframe import cluster

            client = stack.enter_context(cluster.dask_client(dask))
        return [
            _rescore_one(
                store,
                source,
                requested,
                keep=keep,
                force=force,
                name=name,
                batch_size=batch_size,
                memory_limit=memory_limit,
                providers=context,
                client=client,
            )
            for source in sources
        ]


def _rescore_one(
    store: Store,
    source_id: str,
    requested: list[Metric],
    *,
    keep: bool,
    force: bool,
    name: str | None,
    batch_size: int,
    memory_limit: str | None,
    providers: Providers | None,
    client: Any,
) -> str:
    new_id = uuid.uuid4().hex[:16]
    started = time.time()
    if providers is not None:
        providers.begin_run()  # each rescored run has its own usage, cost and budget
    with (
        _scored.scoring_connection(
            store, new_id, on_cluster=client is not None, memory_limit=memory_limit
        ) as (con, parts),
        transaction(con),
    ):
        score_into_run(
            con,
            new_id,
            _scored.source_row(con, source_id),
            requested,
            started=started,
            keep=keep,
            force=force,
            name=name,
            batch_size=batch_size,
            providers=providers,
            client=client,
            parts=parts,
        )
    return new_id


def score_into_run(
    con: duckdb.DuckDBPyConnection,
    new_id: str,
    source: dict[str, Any],
    requested: list[Metric],
    *,
    started: float,
    keep: bool,
    force: bool,
    name: str | None,
    batch_size: int,
    providers: Providers | None,
    client: Any,
    parts: Path | None,
    record: Mapping[str, Any] | None = None,
) -> None:
    """Score the stored outputs of ``source`` (a ``runs`` row, or the same fields for outputs
    just stored) into run ``new_id``, with its statistics and record; call inside a
    transaction. ``record`` overrides fields of the new run's record."""
    copied, computed = _scored.carry_metrics(
        con, new_id, source["run_id"], requested, keep=keep, force=force
    )
    with _scored.StatsStage() as stage:
        # With nothing copied, each scored chunk holds every metric of its samples,
        # so the statistics come from the chunks; otherwise from a sorted read-back.
        if computed and client is not None and parts is not None:
            _score_on_cluster(
                con,
                client,
                source,
                computed,
                new_id,
                parts=parts,
                batch_size=batch_size,
                providers=providers,
                with_stats=not copied,
            )
        elif computed:
            _score_stream(
                con,
                source,
                computed,
                new_id,
                batch_size=batch_size,
                providers=providers,
                stage=None if copied else stage,
            )
        if copied:
            _scored.stage_stored_statistics(con, new_id, stage, batch_size=batch_size)
        stage.insert(con, new_id, source["dataset_hash"])
    _scored.insert_scored_run(
        con,
        source,
        new_id,
        name=name,
        started=started,
        finished=time.time(),
        copied=copied,
        computed=[m.id for m in computed],
        prompts=_prompts(source, copied, computed),
        usage=providers.usage_frame() if providers is not None else None,
        record=record or {},
    )


def _prompts(
    source: Mapping[str, Any], copied: list[str], computed: list[Metric]
) -> dict[str, list[str]]:
    """The judge prompt keys of the new run's metrics: the source run's for the scores it
    copies, the current ones for those it computes."""
    extra = json.loads(source.get("extra") or "{}")
    kept = extra.get("prompts", {}) if isinstance(extra, dict) else {}
    return {
        **{m: kept[m] for m in copied if m in kept},
        **prompt_keys(computed),
    }


def _score_on_cluster(
    con: duckdb.DuckDBPyConnection,
    client: Any,
    source: dict[str, Any],
    metrics: list[Metric],
    new_id: str,
    *,
    parts: Path,
    batch_size: int,
    providers: Providers | None,
    with_stats: bool,
) -> None:
    """Score the source on the cluster; the store adds the workers' scores (and per-sample
    statistics, with ``with_stats``) to the new run."""
    rows = _chunks.output_rows(con, source["outputs_run_id"])
    if not rows:
        return
    files = score_parts(
        con,
        client,
        outputs_run_id=source["outputs_run_id"],
        dataset_hash=source["dataset_hash"],
        rows=rows,
        metrics=metrics,
        run_id=new_id,
        folder=parts,
        batch_size=batch_size,
        providers=providers,
        baselines=_chunks.stored_baselines(con, metrics),
        with_stats=with_stats,
    )
    _scored.add_parts(con, new_id, files)


def _score_stream(
    con: duckdb.DuckDBPyConnection,
    source: dict[str, Any],
    metrics: list[Metric],
    new_id: str,
    *,
    batch_size: int,
    providers: Providers | None,
    stage: _scored.StatsStage | None,
) -> None:
    """Stream the source's evaluation frame in whole-sample chunks and score each chunk.

    A ``pairwise(baseline=run:REF)`` metric reads that stored run's outputs (loaded once),
    attached to each chunk as a column.
    """
    baselines = _chunks.stored_baselines(con, metrics)
    total = _chunks.output_rows(con, source["outputs_run_id"])
    with (
        _chunks.evaluation_chunks(
            con, source, batch_size=batch_size, baselines=baselines
        ) as frames,
        track("rescoring", total, unit="rows") as advance,
    ):
        for frame in frames:
            scores = score(frame, metrics, run_id=new_id, providers=providers)
            _scored.append_scores(con, scores)
            if stage is not None:
                stage.add(scores)
            advance(frame.height)
