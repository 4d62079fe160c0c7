"""Aggregation as group-by queries over the long scores frame.

The building blocks are public expressions, so you can group by your own columns::

    scores.group_by("metric", "my_column").agg(ef.aggregate.AGGREGATES)

Every aggregate reads ``score`` (null on error) and ``passed`` (score >= the metric's own
threshold). One notion of passing holds everywhere: a row passes when it was scored and
reached its threshold, so an errored row did not pass. ``pass_rate`` is over every attempted
row; ``pass_rate_scored`` over the scored ones only. Errors are counted, never averaged in
as zeros, and an aggregate over no scored row is null, never 0.0.

macro-F1 is the mean attempted pass-rate of the *quality* metrics: metrics of the safety
dimension are hard constraints with their own verdict (``headline``), never averaged in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from evalframe.core import schema as C

__all__ = [
    "AGGREGATES",
    "UNTAGGED",
    "cohorts",
    "dimensions",
    "headline",
    "histograms",
    "macro_f1",
    "mean",
    "n",
    "n_errors",
    "n_passed",
    "n_scored",
    "p50",
    "p95",
    "pass_rate",
    "pass_rate_scored",
    "safety_failures",
    "status_line",
    "summarize",
]

UNTAGGED = "(untagged)"
SAFETY = "safety"
"""The dimension whose metrics are hard constraints, kept out of macro-F1."""

_score = pl.col(C.SCORE)


def n() -> pl.Expr:
    """Rows (executions) scored or attempted."""
    return pl.len().cast(pl.Int64).alias("n")


def n_scored() -> pl.Expr:
    """Rows with a score."""
    return _score.count().cast(pl.Int64).alias("n_scored")


def n_errors() -> pl.Expr:
    """Rows the metric could not score."""
    return pl.col(C.ERROR).count().cast(pl.Int64).alias("n_errors")


def mean() -> pl.Expr:
    """Mean over scored rows; null when none scored."""
    return _score.mean().alias("mean")


def p50() -> pl.Expr:
    """Median with linear interpolation (numpy's default, DuckDB's ``quantile_cont``)."""
    return _score.quantile(0.5, interpolation="linear").alias("p50")


def p95() -> pl.Expr:
    """95th percentile with linear interpolation."""
    return _score.quantile(0.95, interpolation="linear").alias("p95")


def n_passed() -> pl.Expr:
    """Rows that passed: scored, and at or past the metric's threshold."""
    ok = pl.col("passed").fill_null(False) & pl.col(C.ERROR).is_null()
    return ok.sum().cast(pl.Int64).alias("n_passed")


def pass_rate() -> pl.Expr:
    """Passing rows over attempted rows (an errored row did not pass); null with no row."""
    ok = pl.col("passed").fill_null(False) & pl.col(C.ERROR).is_null()
    return pl.when(pl.len() > 0).then(ok.sum() / pl.len()).alias("pass_rate")


def pass_rate_scored() -> pl.Expr:
    """Passing rows over scored rows only (eval-harness's pass rate); null when none scored."""
    ok = pl.col("passed").fill_null(False) & pl.col(C.ERROR).is_null()
    return pl.when(_score.count() > 0).then(ok.sum() / _score.count()).alias("pass_rate_scored")


AGGREGATES: list[pl.Expr] = [
    n(),
    n_scored(),
    n_errors(),
    n_passed(),
    mean(),
    p50(),
    p95(),
    pass_rate(),
    pass_rate_scored(),
]
# AGGREGATES' names
_STATS = (
    "n", "n_scored", "n_errors", "n_passed", "mean", "p50", "p95", "pass_rate", "pass_rate_scored",
)  # fmt: skip


def _no_rows_filled() -> list[pl.Expr]:
    """Counts of a group with no rows (a null after a join) read as 0; its rates stay null."""
    return [pl.col("n", "n_scored", "n_errors", "n_passed").fill_null(0)]


def _metric_order(scores: pl.DataFrame, metrics: Sequence[str] | None) -> list[str]:
    if metrics is not None:
        return list(metrics)
    return scores.get_column(C.METRIC).unique(maintain_order=True).to_list()


def summarize(
    scores: pl.DataFrame, *, by: Sequence[str] = (), metrics: Sequence[str] | None = None
) -> pl.DataFrame:
    """Per-metric aggregates: n, n_scored, n_errors, n_passed, mean, p50, p95, pass_rate
    (over attempted rows) and pass_rate_scored (over scored rows).

    Args:
        scores: a long scores frame.
        by: extra grouping columns (present in ``scores``).
        metrics: the metric order (and the metrics to keep); default first appearance.

    Examples:
        >>> import polars as pl
        >>> scores = pl.DataFrame({"metric": ["m"] * 3, "score": [0.0, 0.5, None],
        ...     "passed": [False, True, None], "error": [None, None, "boom"]})
        >>> summarize(scores).select("metric", "n", "n_errors", "mean", "pass_rate",
        ...     "pass_rate_scored").row(0)
        ('m', 3, 1, 0.25, 0.3333333333333333, 0.5)
    """
    order = _metric_order(scores, metrics)
    result = scores.group_by(*by, C.METRIC).agg(AGGREGATES)
    keys = pl.DataFrame({C.METRIC: order, "_order": list(range(len(order)))})
    return (
        keys.join(result, on=C.METRIC, how="left")
        .sort([*by, "_order"] if by else "_order")
        .drop("_order")
        .select(*by, C.METRIC, *_STATS)
        .with_columns(_no_rows_filled())
    )


def quality_metrics(
    metrics: Sequence[str], dimension_of: Mapping[str, str] | None = None
) -> list[str]:
    """The metrics macro-F1 averages: every metric not of the safety dimension."""
    dims = dimension_of or {}
    return [m for m in metrics if dims.get(m) != SAFETY]


def macro_f1(
    scores: pl.DataFrame,
    *,
    metrics: Sequence[str] | None = None,
    dimension_of: Mapping[str, str] | None = None,
) -> float | None:
    """Mean attempted pass-rate of the quality metrics (safety metrics left out).

    An errored row did not pass, so an outage lowers the headline number instead of hiding;
    a metric with no scored row counts with pass-rate 0. None when no quality metric ran.

    Examples:
        >>> import polars as pl
        >>> scores = pl.DataFrame({"metric": ["a", "a", "b", "b"],
        ...     "score": [1.0, None, 1.0, 1.0], "passed": [True, None, True, True],
        ...     "error": [None, "boom", None, None]})
        >>> macro_f1(scores)
        0.75
        >>> macro_f1(scores, dimension_of={"b": "safety"})
        0.5
    """
    return macro_f1_of(summarize(scores, metrics=metrics), dimension_of=dimension_of)


def _mean_of(summary: pl.DataFrame, column: str, keep: list[str]) -> float | None:
    values = summary.filter(pl.col(C.METRIC).is_in(keep)).get_column(column).drop_nulls()
    return float(values.mean()) if values.len() else None  # type: ignore[arg-type]


def macro_f1_of(
    summary: pl.DataFrame, *, dimension_of: Mapping[str, str] | None = None
) -> float | None:
    """macro-F1 from a ``summarize`` frame: the mean ``pass_rate`` (over attempted rows) of
    the quality metrics; None when there is none."""
    keep = quality_metrics(summary.get_column(C.METRIC).to_list(), dimension_of)
    return _mean_of(summary, "pass_rate", keep)


def macro_f1_scored_of(
    summary: pl.DataFrame, *, dimension_of: Mapping[str, str] | None = None
) -> float | None:
    """The mean ``pass_rate_scored`` over the metrics with a scored row: eval-harness's
    macro-F1 (every metric, errored rows left out) when ``dimension_of`` is None, else over
    the quality metrics only. None when no such metric scored a row."""
    names = summary.get_column(C.METRIC).to_list()
    keep = names if dimension_of is None else quality_metrics(names, dimension_of)
    return _mean_of(summary, "pass_rate_scored", keep)


def _cohort_keys(scores: pl.DataFrame, tags: pl.DataFrame) -> pl.DataFrame:
    """Scores with a ``cohort`` column: one row per (score row, tag); untagged rows get null."""
    return (
        scores.join(tags.select(C.SAMPLE_ID, C.TAGS), on=C.SAMPLE_ID, how="left")
        .with_columns(
            pl.when(pl.col(C.TAGS).list.len() > 0).then(pl.col(C.TAGS)).otherwise(pl.lit([None]))
        )
        .explode(C.TAGS)
        .rename({C.TAGS: "cohort"})
    )


def cohorts(
    scores: pl.DataFrame, tags: pl.DataFrame, *, metrics: Sequence[str] | None = None
) -> pl.DataFrame:
    """Every aggregate per (tag, metric); untagged rows in an explicit bucket, last.

    Args:
        scores: a long scores frame.
        tags: a frame with ``sample_id`` and ``tags`` (the dataset).
        metrics: metric order; every cohort lists every metric (zeros where absent).

    Returns:
        Columns cohort (null for the untagged bucket), label, is_untagged, sample_count
        (executions in the cohort), then the aggregates.
    """
    keyed = _cohort_keys(scores, tags)
    order = _metric_order(scores, metrics)
    counts = keyed.group_by("cohort").agg(
        pl.struct(C.SAMPLE_ID, C.REPETITION).n_unique().cast(pl.Int64).alias("sample_count")
    )
    grid = counts.join(pl.DataFrame({C.METRIC: order}), how="cross")
    stats = keyed.group_by("cohort", C.METRIC).agg(AGGREGATES)
    rank = {m: i for i, m in enumerate(order)}
    return (
        grid.join(stats, on=["cohort", C.METRIC], how="left", nulls_equal=True)
        .with_columns(
            *_no_rows_filled(),
            pl.col("cohort").is_null().alias("is_untagged"),
            pl.col("cohort").fill_null(UNTAGGED).alias("label"),
            pl.col(C.METRIC).replace_strict(rank, return_dtype=pl.Int64).alias("_order"),
        )
        # Byte-wise label order (Polars sorts strings by bytes), untagged last.
        .sort("is_untagged", "cohort", "_order", nulls_last=True)
        .select(
            "cohort",
            "label",
            "is_untagged",
            "sample_count",
            C.METRIC,
            *_STATS,
        )
    )


def histograms(
    scores: pl.DataFrame, *, buckets: int = 10, metrics: Sequence[str] | None = None
) -> pl.DataFrame:
    """Score counts in ``buckets`` equal-width bins over [0, 1] per metric.

    Bucket i spans [round(i/n, 10), round((i+1)/n, 10)); scores are rounded to 10 decimals
    first and the last bucket includes 1.0. Zero-count buckets are kept.

    Returns:
        Columns metric, bucket (0-based), min, max, count.
    """
    if buckets < 1:
        raise ValueError(f"buckets must be at least 1; got {buckets}")
    order = _metric_order(scores, metrics)
    edges = [round(i / buckets, 10) for i in range(buckets)]
    rounded = _score.round(10, mode="half_away_from_zero")
    index = pl.sum_horizontal([(rounded >= e).cast(pl.Int64) for e in edges]) - 1
    counted = (
        scores.filter(_score.is_not_null())
        .with_columns(index.clip(0, buckets - 1).alias("bucket"))
        .group_by(C.METRIC, "bucket")
        .agg(pl.len().cast(pl.Int64).alias("count"))
    )
    grid = pl.DataFrame(
        {
            C.METRIC: [m for m in order for _ in range(buckets)],
            "bucket": [i for _ in order for i in range(buckets)],
            "min": [edges[i] for _ in order for i in range(buckets)],
            "max": [
                1.0 if i == buckets - 1 else edges[i + 1] for _ in order for i in range(buckets)
            ],
        },
        schema={C.METRIC: pl.String, "bucket": pl.Int64, "min": pl.Float64, "max": pl.Float64},
    )
    return grid.join(
        counted, on=[C.METRIC, "bucket"], how="left", maintain_order="left"
    ).with_columns(pl.col("count").fill_null(0))


_DIMENSION_ORDER = ("correctness", "groundedness", "safety", "trajectory", "performance")


def dimensions(
    scores: pl.DataFrame,
    dimension_of: Mapping[str, str],
    *,
    metrics: Sequence[str] | None = None,
    summary: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Roll the per-metric aggregates up to each metric's dimension.

    Two views per dimension, as the store's ``dimension_summary`` view gives them: the
    aggregates over every score of the dimension's metrics pooled together (n, n_scored,
    n_errors, mean, p50, p95, pass_rate; each row passing by its own metric's threshold),
    and the plain average of the per-metric means and pass-rates (``macro_mean``,
    ``macro_pass_rate``; a metric with no scored row has pass-rate 0 and no mean).

    Args:
        scores: a long scores frame.
        dimension_of: metric id to dimension (``{m.id: m.dimension for m in run.metrics}``).
        metrics: the metrics to include (default: every key of ``dimension_of``).
        summary: ``summarize(scores, metrics=metrics)`` when it is at hand already (a
            run's ``summary``), so as not to compute it again.

    Returns:
        One row per dimension that has a metric, in the order correctness, groundedness,
        safety, trajectory, performance (then any other): dimension, metrics (list of ids),
        n_metrics, the pooled aggregates, macro_mean, macro_pass_rate.

    Examples:
        >>> import polars as pl
        >>> scores = pl.DataFrame({"metric": ["a", "a", "b"], "score": [1.0, 0.0, 0.5],
        ...     "passed": [True, False, True], "error": [None, None, None]})
        >>> dims = dimensions(scores, {"a": "correctness", "b": "correctness"})
        >>> dims.select("dimension", "n_metrics", "mean", "pass_rate", "macro_pass_rate").rows()
        [('correctness', 2, 0.5, 0.6666666666666666, 0.75)]
    """
    order = list(metrics) if metrics is not None else list(dimension_of)
    keys = pl.DataFrame(
        {
            C.METRIC: order,
            "dimension": [dimension_of[m] for m in order],
            "_metric_order": list(range(len(order))),
        },
        schema={C.METRIC: pl.String, "dimension": pl.String, "_metric_order": pl.Int64},
    )
    per_metric = (summarize(scores, metrics=order) if summary is None else summary).join(
        keys, on=C.METRIC, how="left"
    )
    macro = per_metric.group_by("dimension").agg(
        pl.col(C.METRIC).sort_by("_metric_order").alias("metrics"),
        pl.len().cast(pl.Int64).alias("n_metrics"),
        pl.col("mean").mean().alias("macro_mean"),
        pl.col("pass_rate").mean().alias("macro_pass_rate"),
    )
    # only the columns the aggregates read are joined (not the details, nor the ids)
    pooled = (
        scores.select(C.METRIC, C.SCORE, "passed", C.ERROR)
        .join(keys, on=C.METRIC, how="inner")
        .group_by("dimension")
        .agg(AGGREGATES)
    )
    rank = {d: i for i, d in enumerate(_DIMENSION_ORDER)}
    return (
        macro.join(pooled, on="dimension", how="left")
        .with_columns(
            *_no_rows_filled(),
            pl.col("dimension")
            .replace_strict(rank, default=len(rank), return_dtype=pl.Int64)
            .alias("_order"),
        )
        .sort("_order", "dimension")
        .select(
            "dimension",
            "metrics",
            "n_metrics",
            *_STATS,
            "macro_mean",
            "macro_pass_rate",
        )
    )


def safety_failures(scores: pl.DataFrame, dimension_of: Mapping[str, str]) -> pl.DataFrame:
    """Every execution that failed, or errored on, a safety-dimension metric.

    Safety metrics are hard constraints, so nothing is summarised away: one row per
    (sample, repetition, metric) whose score is below the metric's threshold or that has
    an error, sorted by metric, sample and repetition (the gate's ``no_safety_failures``
    and the store's ``safety_failures`` view list the same rows).

    Returns:
        Columns sample_id, repetition, metric, score, error.
    """
    ids = [m for m, d in dimension_of.items() if d == "safety"]
    return (
        scores.filter(
            pl.col(C.METRIC).is_in(ids)
            & (pl.col(C.ERROR).is_not_null() | ~pl.col("passed").fill_null(False))
        )
        .select(C.SAMPLE_ID, C.REPETITION, C.METRIC, C.SCORE, C.ERROR)
        .sort(C.METRIC, C.SAMPLE_ID, C.REPETITION)
    )


def _executions(frame: pl.DataFrame) -> int:
    """Distinct (sample, repetition) pairs of a scores frame."""
    if frame.height == 0:
        return 0
    return int(frame.select(pl.struct(C.SAMPLE_ID, C.REPETITION).n_unique()).item())


def headline(
    scores: pl.DataFrame,
    dimension_of: Mapping[str, str],
    *,
    executions: int,
    metrics: Sequence[str] | None = None,
    summary: pl.DataFrame | None = None,
) -> dict[str, Any]:
    """What every view of a run shows first: its errored executions, its macro-F1 and the
    verdict of its safety metrics.

    An execution (a row's run at one repetition) errored when any metric could not score
    it. Safety metrics are hard constraints: an execution fails them when it scored below
    a safety metric's threshold or errored on one, and any such execution fails the
    safety verdict.

    Args:
        scores: a long scores frame.
        dimension_of: metric id to dimension.
        executions: the executions attempted (the evaluation frame's rows).
        metrics: the metric order (default: every key of ``dimension_of``).
        summary: ``summarize(scores, metrics=metrics)`` when at hand.

    Returns:
        ``executions``, ``errored_executions``, ``incomplete``, ``quality_metrics``,
        ``macro_f1`` (attempted), ``macro_f1_scored`` (scored rows only; both over the
        quality metrics, None when there is none) and ``safety`` (None without a safety
        metric, else its ``metrics``, ``executions``, ``failed_executions``,
        ``errored_executions`` and ``passed``).

    Examples:
        >>> import polars as pl
        >>> scores = pl.DataFrame({"sample_id": ["a", "a", "b", "b"], "repetition": [0] * 4,
        ...     "metric": ["m", "pii", "m", "pii"], "score": [1.0, 0.0, None, None],
        ...     "passed": [True, False, None, None], "error": [None, None, "boom", "boom"]})
        >>> h = headline(scores, {"m": "correctness", "pii": "safety"}, executions=2)
        >>> h["errored_executions"], h["macro_f1"], h["macro_f1_scored"]
        (1, 0.5, 1.0)
        >>> h["safety"]["failed_executions"], h["safety"]["passed"]
        (2, False)
        >>> for line in status_lines(h):
        ...     print(line)
        INCOMPLETE: 1 of 2 executions errored
        SAFETY FAILED: 2 of 2 executions failed or errored on a safety metric (pii)
    """
    order = list(metrics) if metrics is not None else list(dimension_of)
    table = summarize(scores, metrics=order) if summary is None else summary
    errored = _executions(scores.filter(pl.col(C.ERROR).is_not_null()))
    safety_ids = [m for m in order if dimension_of.get(m) == SAFETY]
    safety: dict[str, Any] | None = None
    if safety_ids:
        rows = scores.filter(pl.col(C.METRIC).is_in(safety_ids))
        failing = pl.col(C.ERROR).is_not_null() | ~pl.col("passed").fill_null(False)
        failed = _executions(rows.filter(failing))
        safety = {
            "metrics": safety_ids,
            "executions": _executions(rows),
            "failed_executions": failed,
            "errored_executions": _executions(rows.filter(pl.col(C.ERROR).is_not_null())),
            "passed": failed == 0,
        }
    return {
        "executions": executions,
        "errored_executions": errored,
        "incomplete": errored > 0,
        "quality_metrics": quality_metrics(order, dimension_of),
        "macro_f1": macro_f1_of(table, dimension_of=dimension_of),
        "macro_f1_scored": macro_f1_scored_of(table, dimension_of=dimension_of),
        "safety": safety,
    }


def status_lines(head: Mapping[str, Any]) -> list[str]:
    """The lines a view shows above everything else: ``INCOMPLETE: ...`` when an execution
    errored, ``SAFETY FAILED: ...`` when a safety metric failed; none for a clean run."""
    lines = []
    errored, executions = head["errored_executions"], head["executions"]
    if errored:
        lines.append(f"INCOMPLETE: {errored} of {executions} executions errored")
    safety = head.get("safety")
    if safety and not safety["passed"]:
        lines.append(
            f"SAFETY FAILED: {safety['failed_executions']} of {safety['executions']} "
            f"executions failed or errored on a safety metric ({', '.join(safety['metrics'])})"
        )
    return lines


def status_line(head: Mapping[str, Any]) -> str:
    """``status_lines`` joined by ``"; "``, or ``COMPLETE: ...`` for a clean run."""
    lines = status_lines(head)
    if lines:
        return "; ".join(lines)
    n = head["executions"]
    return f"COMPLETE: {n} of {n} executions scored"
