"""Enrichment: the provider-filled columns (embeddings, judge replies) that metrics need.

Metrics declare their needs as plain frozen values; ``fill`` asks the providers for each
distinct need once, and ``score`` is the runner with the needs filled first.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from evalframe.core._run_options import Limits, no_limits_with
from evalframe.core._score import score as _score_frame
from evalframe.enrich._enrich import check_providers, fill, part_of
from evalframe.metrics._registry import MetricFactory, resolve
from evalframe.metrics._spec import Metric
from evalframe.providers import EmbeddingClient, JudgeClient, Providers

__all__ = ["check_providers", "fill", "part_of", "providers_for", "score"]


def providers_for(
    metrics: Sequence[Metric],
    providers: Providers | EmbeddingClient | JudgeClient | None,
    *,
    limits: Limits | None = None,
) -> Providers | None:
    """The run's providers, built once: ``None`` when no metric needs one and none was given.

    Every batch of the run then shares one cache, one ledger, one budget and one loaded
    embedder. Call ``begin_run()`` on the result when scoring starts: usage, cost, budget
    and deadline count from there. ``limits`` bound the providers built from the
    environment (``providers`` not given).

    Raises:
        ProviderError: a metric needs a judge and none is configured (before any work).
        ValueError: both ``providers`` and ``limits``.
    """
    no_limits_with(providers, limits)
    if providers is None and not any(m.needs() for m in metrics):
        return None
    context = Providers.coerce(providers) if limits is None else Providers.from_env(limits=limits)
    check_providers(metrics, context)
    return context


def score(
    frame: pl.DataFrame,
    metrics: Sequence[str | Metric | MetricFactory],
    *,
    run_id: str = "",
    providers: Providers | EmbeddingClient | JudgeClient | None = None,
    context: Providers | EmbeddingClient | JudgeClient | None = None,
) -> pl.DataFrame:
    """Score every row of ``frame`` with every metric; returns the long scores frame.

    Provider-backed columns the metrics need are filled first (once per distinct text or
    prompt, through the providers' cache); then every metric runs as one query over the
    frame. ``metrics`` are spec strings (``"rouge-l(beta=2.0)"``), metric values or factories,
    as ``ef.evaluate`` takes them. ``providers`` are the providers to ask, as for
    ``ef.evaluate`` (an ``ef.Providers`` or a client; default: from the environment);
    ``context`` is their former name, still taken. Columns: run_id, sample_id, repetition,
    metric, score (null on error), passed (score >= the metric's threshold; null on error),
    error (null when scored), details (JSON).

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
    if context is not None:
        if providers is not None:
            raise ValueError("Pass providers= (context= is its former name), not both.")
        providers = context
    resolved = resolve(metrics)
    if any(m.needs() for m in resolved):
        check_providers(resolved, providers, frame.columns)  # a missing judge: one error, no work
    # Text embeddings as one vector per distinct text and an index per row: the frame is
    # scored here and dropped, so the documented per-row vector columns are never needed.
    frame, unavailable = fill(frame, resolved, providers, gather=False)
    return _score_frame(frame, resolved, run_id=run_id, unavailable=unavailable)
