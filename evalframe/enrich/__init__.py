"""Enrichment: the provider-filled columns (embeddings, judge replies) that metrics need.

Metrics declare their needs as plain frozen values; ``fill`` asks the providers for each
distinct need once, and ``score`` is the runner with the needs filled first.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from evalframe.core._score import score as _score_frame
from evalframe.enrich._enrich import check_providers, fill
from evalframe.metrics._registry import MetricFactory, resolve
from evalframe.metrics._spec import Metric
from evalframe.providers import EmbeddingClient, JudgeClient, Providers

__all__ = ["check_providers", "fill", "providers_for", "score"]


def providers_for(
    metrics: Sequence[Metric], providers: Providers | EmbeddingClient | JudgeClient | None
) -> Providers | None:
    """The run's providers, built once: ``None`` when no metric needs one and none was given.

    Every batch of the run then shares one cache, one ledger, one budget and one loaded
    embedder. Call ``begin_run()`` on the result when scoring starts: usage, cost, budget
    and deadline count from there.

    Raises:
        ProviderError: a metric needs a judge and none is configured (before any work).
    """
    if providers is None and not any(m.needs() for m in metrics):
        return None
    context = Providers.coerce(providers)
    check_providers(metrics, context)
    return context


def score(
    frame: pl.DataFrame,
    metrics: Sequence[str | Metric | MetricFactory],
    *,
    run_id: str = "",
    context: Providers | EmbeddingClient | JudgeClient | None = None,
) -> pl.DataFrame:
    """Score every row of ``frame`` with every metric; returns the long scores frame.

    Provider-backed columns the metrics need are filled first (once per distinct text or
    prompt, through the providers' cache); then every metric runs as one query over the
    frame. ``metrics`` are spec strings (``"rouge-l(beta=2.0)"``), metric values or factories,
    as ``ef.evaluate`` takes them. ``context`` is the providers to ask (an ``ef.Providers`` or
    a client; default: from the environment). Columns: run_id, sample_id, repetition, metric,
    score (null on error), passed (score >= the metric's threshold; null on error), error
    (null when scored), details (JSON).

    Examples:
        >>> import polars as pl
        >>> import evalframe as ef
        >>> frame = pl.DataFrame({
        ...     "sample_id": ["a", "b"], "input": ["{}", "{}"],
        ...     "expected_output": ["Paris", "4"], "expected_type": ["string", "string"],
        ...     "metadata": ["{}", "{}"], "tags": [[], []], "actual_output": ["Paris", "5"],
        ... })
        >>> ef.score(frame, [ef.metrics.exact_match()]).select("sample_id", "score").rows()
        [('a', 1.0), ('b', 0.0)]
        >>> ef.score(frame, ["contains"]).get_column("score").to_list()
        [1.0, 0.0]
    """
    resolved = resolve(metrics)
    if any(m.needs() for m in resolved):
        check_providers(resolved, context, frame.columns)  # a missing judge: one error, no work
    frame, unavailable = fill(frame, resolved, context)
    return _score_frame(frame, resolved, run_id=run_id, unavailable=unavailable)
