"""``Run``: one evaluation, its scored rows and everything needed to report on them."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import polars as pl

from evalframe.core import _seam, aggregate
from evalframe.core import schema as C
from evalframe.core._dataset import Dataset
from evalframe.core._precision import row_aggregates
from evalframe.core._score import Scorable

if TYPE_CHECKING:
    from evalframe.store import Store
    from evalframe.views._report import Report
    from evalframe.views.plot import RunPlot

__all__ = ["Run"]


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
    metrics: Sequence[Scorable]
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
        """Per-metric aggregates: n, n_scored, n_errors, n_passed, mean, p50, p95, pass_rate
        (over attempted executions: an errored one did not pass) and pass_rate_scored (over
        scored executions only)."""
        return aggregate.summarize(self.scores, metrics=self.metric_ids)

    @property
    def dimension_of(self) -> dict[str, str]:
        """Each metric's dimension (correctness, groundedness, safety, ...)."""
        return {m.id: m.dimension for m in self.metrics}

    @property
    def macro_f1(self) -> float | None:
        """Mean attempted pass-rate over the quality metrics (every metric not of the safety
        dimension); None when the run has no quality metric."""
        return aggregate.macro_f1_of(self.summary, dimension_of=self.dimension_of)

    @cached_property
    def headline(self) -> dict[str, Any]:
        """Errored executions, macro-F1 (attempted and over scored rows) and the safety
        verdict: what every view of the run shows first (``aggregate.headline``)."""
        return aggregate.headline(
            self.scores,
            self.dimension_of,
            executions=self.frame.height,
            metrics=self.metric_ids,
            summary=self.summary,
        )

    @property
    def status(self) -> str:
        """One line: ``INCOMPLETE: 11 of 12 executions errored`` (and ``SAFETY FAILED: ...``),
        or ``COMPLETE: 12 of 12 executions scored``."""
        return aggregate.status_line(self.headline)

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

    def failing(self) -> pl.DataFrame:
        """The rows that did not pass: scored past their metric's threshold (below it, or
        above it for a lower-is-better metric), or not scored.

        Returns:
            sample_id, repetition, metric, score (null when not scored), threshold, error
            (null when scored); worst first: errors, then by how far the score is past the
            threshold, then sample id, repetition and the run's metric order.
        """
        order = {m: i for i, m in enumerate(self.metric_ids)}
        thresholds = pl.DataFrame(
            {
                C.METRIC: [m.id for m in self.metrics],
                "threshold": [float(m.threshold) for m in self.metrics],
                "_order": [order[m.id] for m in self.metrics],
                "_low": [not m.higher_is_better for m in self.metrics],
            },
            schema={
                C.METRIC: pl.String,
                "threshold": pl.Float64,
                "_order": pl.Int64,
                "_low": pl.Boolean,
            },
        )
        # how far a score is on the passing side of its threshold (negative: failed)
        margin = (
            pl.when(pl.col("_low"))
            .then(pl.col("threshold") - pl.col(C.SCORE))
            .otherwise(pl.col(C.SCORE) - pl.col("threshold"))
        )
        return (
            self.scores.join(thresholds, on=C.METRIC, how="inner")
            .filter(pl.col(C.ERROR).is_not_null() | (margin < 0))
            .sort(
                pl.col(C.SCORE).is_not_null(),
                margin,
                C.SAMPLE_ID,
                C.REPETITION,
                "_order",
            )
            .select(C.SAMPLE_ID, C.REPETITION, C.METRIC, C.SCORE, "threshold", C.ERROR)
        )

    def wide(self) -> pl.DataFrame:
        """One row per (sample, repetition), one score column per metric."""
        return self.scores.pivot(
            on=C.METRIC, index=[C.SAMPLE_ID, C.REPETITION], values=C.SCORE
        ).select(C.SAMPLE_ID, C.REPETITION, *self.metric_ids)

    def report(self, *, samples: bool = True, include_evidence: bool = False) -> Report:
        """The report (``evalframe.report.v1``): a dict with Markdown and HTML renderings.

        Args:
            samples: include the per-execution ``samples`` list (the bulk of a large run's
                report); Markdown and HTML never show it.
            include_evidence: add the ``evidence`` section: each execution's retrieved
                contexts (kept out of reports otherwise).
        """
        return _seam.build_report.call(self, samples=samples, include_evidence=include_evidence)

    @property
    def plot(self) -> RunPlot:
        """Charts of this run: ``run.plot.histograms()``, ``run.plot.heatmap()`` (``viz`` extra)."""
        return _seam.run_plot.call(self)

    def _repr_html_(self) -> str:
        return _seam.run_html.call(self)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self) if cycle else _seam.run_text.call(self))

    def to_json(self) -> str:
        return self.report().to_json()

    def save(self, store: Store | str | os.PathLike[str]) -> str:
        """Write this run to a store (a ``Store`` or a DuckDB file path) in one transaction.

        Returns:
            The run id.

        Raises:
            StoreError: the write failed (nothing is kept) or the run is already stored.
        """
        return _seam.save_run.call(self, store)

    def to_mlflow(
        self,
        *,
        tracking_uri: str | None = None,
        experiment: str | None = None,
        run_name: str | None = None,
    ) -> str:
        """Log this run to MLflow (``mlflow`` extra): params, metrics, reports, scores, tags.

        Args:
            tracking_uri: the tracking server or store (default: MLflow's own).
            experiment: the experiment, created when missing (default: the dataset name).
            run_name: the MLflow run's name (default: this run's name).

        Returns:
            The MLflow run id.
        """
        return _seam.run_mlflow.call(
            self, tracking_uri=tracking_uri, experiment=experiment, run_name=run_name
        )

    def to_markdown(self) -> str:
        return self.report(samples=False).to_markdown()

    def __repr__(self) -> str:
        macro = "n/a" if self.macro_f1 is None else f"{self.macro_f1:.4f}"
        return (
            f"Run({self.status}; run_id={self.run_id!r}, name={self.name!r}, "
            f"samples={self.dataset.height}, metrics={self.metric_ids}, macro_f1={macro}, "
            f"failures={self.failures.height})"
        )
