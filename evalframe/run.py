"""``evaluate``: dataset + outputs (or a system under test) + metrics -> a ``Run``."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Final

import polars as pl

from evalframe import aggregate
from evalframe import schema as C
from evalframe.dataset import Dataset, read_dataset
from evalframe.exceptions import DatasetError, MetricError, StoreError
from evalframe.metrics._registry import MetricFactory, resolve
from evalframe.metrics._spec import Metric
from evalframe.outputs import align_outputs, read_outputs
from evalframe.precision import row_aggregates
from evalframe.providers import EmbeddingClient, JudgeClient, Providers
from evalframe.score import score
from evalframe.system import System, call_system

if TYPE_CHECKING:
    from evalframe.plot import RunPlot
    from evalframe.report import Report
    from evalframe.store import Store

__all__ = ["MAX_REPETITIONS", "Run", "evaluate"]

MetricLike = str | Metric | MetricFactory

# Work is rows x repetitions x metrics, so the count is bounded up front. The report may advise
# up to 769 repetitions (a 5-point resolution at a 50% pass rate); the limit stays above that.
MAX_REPETITIONS: Final = 1000


@dataclass(eq=False)
class Run:
    """One evaluation: the scored rows and everything needed to report on them.

    Attributes:
        run_id: a unique id.
        name: a free-form name (defaults to the dataset name).
        dataset: the dataset that was evaluated.
        frame: the evaluation frame (dataset columns, repetition, actual_output, ...).
        scores: the long scores frame (run_id, sample_id, repetition, metric, score,
            passed, error, details).
        metrics: the metrics, in the order requested.
        started_at, finished_at: Unix epoch seconds.
        usage: provider usage per call (empty when no provider was called).
        labels: free-form labels kept with the run.
    """

    run_id: str
    name: str
    dataset: Dataset
    frame: pl.DataFrame
    scores: pl.DataFrame
    metrics: list[Metric]
    started_at: float
    finished_at: float
    usage: pl.DataFrame = field(default_factory=pl.DataFrame)
    labels: dict[str, str] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def metric_ids(self) -> list[str]:
        return [m.id for m in self.metrics]

    @property
    def repetitions(self) -> int:
        if self.frame.height == 0:
            return 0
        return int(self.frame.select(pl.col(C.REPETITION).max()).item()) + 1

    @cached_property
    def summary(self) -> pl.DataFrame:
        """Per-metric aggregates (n, n_scored, n_errors, mean, p50, p95, pass_rate)."""
        return aggregate.summarize(self.scores, metrics=self.metric_ids)

    @property
    def macro_f1(self) -> float:
        """Mean per-metric pass-rate over every requested metric."""
        if self.summary.height == 0:
            return 0.0
        return float(self.summary.select(pl.col("pass_rate").mean()).item())

    @cached_property
    def sample_aggregates(self) -> pl.DataFrame:
        """Per-row aggregates over repetitions (see ``precision.row_aggregates``).

        Pass rate and its Wilson interval, errored repetitions, instability, score mean and
        stddev; shared by the report, the store and comparisons.
        """
        return row_aggregates(self.scores, self.frame)

    @cached_property
    def cohorts(self) -> pl.DataFrame:
        """Aggregates per (tag, metric), untagged bucket last."""
        return aggregate.cohorts(self.scores, self.dataset, metrics=self.metric_ids)

    def histograms(self, buckets: int = 10) -> pl.DataFrame:
        """Score histograms per metric (``buckets`` bins over [0, 1])."""
        return aggregate.histograms(self.scores, buckets=buckets, metrics=self.metric_ids)

    @property
    def failures(self) -> pl.DataFrame:
        """Rows a metric could not score: sample_id, repetition, metric, error."""
        return self.scores.filter(pl.col(C.ERROR).is_not_null()).select(
            C.SAMPLE_ID, C.REPETITION, C.METRIC, C.ERROR
        )

    def wide(self) -> pl.DataFrame:
        """One row per (sample, repetition), one score column per metric."""
        return self.scores.pivot(
            on=C.METRIC, index=[C.SAMPLE_ID, C.REPETITION], values=C.SCORE
        ).select(C.SAMPLE_ID, C.REPETITION, *self.metric_ids)

    def report(self, *, samples: bool = True) -> Report:
        """The report (``evalframe.report.v1``): a dict with Markdown and HTML renderings.

        Args:
            samples: include the per-execution ``samples`` list (the bulk of a large run's
                report); Markdown and HTML never show it.
        """
        from evalframe.report import build_report

        return build_report(self, samples=samples)

    @property
    def plot(self) -> RunPlot:
        """Charts of this run: ``run.plot.histograms()``, ``run.plot.heatmap()`` (``viz`` extra)."""
        from evalframe.plot import RunPlot

        return RunPlot(self)

    def _repr_html_(self) -> str:
        from evalframe.html import run_html

        return run_html(self)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        from evalframe.html import run_text

        p.text(repr(self) if cycle else run_text(self))

    def to_json(self) -> str:
        return self.report().to_json()

    def save(self, store: Store | str | os.PathLike[str]) -> str:
        """Write this run to a store (a ``Store`` or a DuckDB file path) in one transaction.

        Returns:
            The run id.

        Raises:
            StoreError: the write failed (nothing is kept) or the run is already stored.
        """
        from evalframe.store import as_store

        return as_store(store).save(self)

    def to_markdown(self) -> str:
        return self.report(samples=False).to_markdown()

    def __repr__(self) -> str:
        return (
            f"Run(run_id={self.run_id!r}, name={self.name!r}, samples={self.dataset.height}, "
            f"metrics={self.metric_ids}, macro_f1={self.macro_f1:.4f}, "
            f"failures={self.failures.height})"
        )


def _as_dataset(dataset: Dataset | str | os.PathLike[str] | pl.DataFrame) -> Dataset:
    if isinstance(dataset, Dataset):
        return dataset
    if isinstance(dataset, pl.DataFrame):
        return Dataset.from_frame(dataset, name="dataset")
    return read_dataset(dataset)


def _as_outputs(outputs: str | os.PathLike[str] | pl.DataFrame | Mapping[str, str]) -> pl.DataFrame:
    if isinstance(outputs, pl.DataFrame):
        missing = {C.SAMPLE_ID, C.ACTUAL_OUTPUT} - set(outputs.columns)
        if missing:
            raise DatasetError(f"Outputs frame is missing column(s): {', '.join(sorted(missing))}.")
        return outputs
    if isinstance(outputs, Mapping):
        bad = [k for k, v in outputs.items() if not isinstance(v, str)]
        if bad:
            raise DatasetError(
                f"Saved output for sample '{bad[0]}' must be a string; "
                f"got {type(outputs[bad[0]]).__name__}."
            )
        return pl.DataFrame(
            {C.SAMPLE_ID: list(outputs), C.ACTUAL_OUTPUT: list(outputs.values())},
            schema={C.SAMPLE_ID: pl.String, C.ACTUAL_OUTPUT: pl.String},
        )
    return read_outputs(outputs)


def evaluate(
    dataset: Dataset | str | os.PathLike[str] | pl.DataFrame,
    *,
    outputs: str | os.PathLike[str] | pl.DataFrame | Mapping[str, str] | None = None,
    system: System | None = None,
    metrics: Sequence[MetricLike] | None = None,
    repetitions: int | None = None,
    concurrency: int = 8,
    progress: bool | None = None,
    name: str | None = None,
    labels: Mapping[str, str] | None = None,
    providers: Providers | EmbeddingClient | JudgeClient | None = None,
    run_id: str | None = None,
    store: Store | str | os.PathLike[str] | None = None,
) -> Run:
    """Score a dataset's outputs, or a system under test, with metrics.

    Args:
        dataset: a ``Dataset``, a path to one, or a frame with the canonical columns.
        outputs: saved outputs: a path, a frame (sample_id, actual_output) or a mapping
            of sample id to output. Exclusive with ``system``.
        system: a callable receiving a sample's ``input`` map and returning a string.
        metrics: spec strings, metric values or factories; defaults to the dataset's
            ``metrics:`` list.
        repetitions: executions per row (default: the dataset's ``repetitions``, else 1),
            from 1 to ``MAX_REPETITIONS`` (1000).
        concurrency: system calls in flight at once.
        progress: show a progress bar (default: when stderr is a terminal).
        name: the run's name (default: the dataset name).
        labels: free-form labels stored with the run.
        providers: embeddings/judge providers for model-backed metrics.
        run_id: the run's id (default: a random 16-hex-digit id).
        store: a ``Store`` or DuckDB file path to save the run to (in one transaction).
            If saving fails, the ``StoreError`` carries the run as ``error.run``, so it
            can be saved again (``error.run.save(store)``).

    Returns:
        The ``Run``. A metric that cannot score a row records that row's error; a system
        failure on a row becomes that row's error for every metric.

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records(
        ...     [{"id": "q1", "input": {"question": "Capital of France?"},
        ...       "expected_output": "Paris"}], name="geo")
        >>> run = ef.evaluate(ds, outputs={"q1": "Paris"}, metrics=["exact-match"])
        >>> run.macro_f1
        1.0
    """
    ds = _as_dataset(dataset)
    specs = list(metrics) if metrics is not None else list(ds.metrics)
    if not specs:
        raise MetricError(
            f"No metrics for dataset '{ds.name}': pass metrics=[...] (or -m on the CLI), "
            "or list them under 'metrics:' in the dataset file."
        )
    resolved = resolve(specs)
    reps = repetitions if repetitions is not None else (ds.repetitions or 1)
    if isinstance(reps, bool) or not isinstance(reps, int) or not 1 <= reps <= MAX_REPETITIONS:
        source = "repetitions" if repetitions is not None else f"Dataset '{ds.name}' repetitions"
        raise ValueError(
            f"{source} must be an integer from 1 to {MAX_REPETITIONS} (the limit on executions "
            f"per row); got {reps!r}."
        )
    if (outputs is None) == (system is None):
        raise ValueError("Pass exactly one of outputs= (saved outputs) or system= (a callable).")
    started = time.time()
    base = ds.select(C.DATASET_SCHEMA.names())
    if system is not None:
        produced = call_system(
            base, system, repetitions=reps, concurrency=concurrency, progress=progress
        )
    elif outputs is not None:
        aligned = align_outputs(ds, _as_outputs(outputs))
        produced = pl.concat(
            [aligned.with_columns(pl.lit(r, pl.Int64).alias(C.REPETITION)) for r in range(reps)]
        )
    frame = produced.join(base, on=C.SAMPLE_ID, how="left", maintain_order="left")
    run_id = run_id or uuid.uuid4().hex[:16]
    context: Providers | None = None
    if providers is not None or any(m.enrichments() for m in resolved):
        context = Providers.coerce(providers)
        context.begin_run()  # usage, cost and budget are per run
    scores = score(frame, resolved, run_id=run_id, context=context)
    finished = time.time()
    extra: dict[str, Any] = {}
    if context is not None:
        extra["cost"] = context.cost_summary()
        extra["budget"] = context.budget_summary(scores)
    result = Run(
        run_id=run_id,
        name=name or ds.name,
        dataset=ds,
        frame=frame,
        scores=scores,
        metrics=resolved,
        started_at=started,
        finished_at=finished,
        usage=context.usage_frame() if context is not None else pl.DataFrame(),
        labels=dict(labels or {}),
        extra=extra,
    )
    if store is not None:
        try:
            result.save(store)
        except StoreError as exc:
            # Keep the (possibly expensive) evaluation: the caller can save it again.
            exc.run = result  # type: ignore[attr-defined]
            raise
    return result
