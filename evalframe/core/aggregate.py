"""Aggregation as group-by queries over the long scores frame.

The building blocks are public expressions, so you can group by your own columns::

    scores.group_by("metric", "my_column").agg(ef.aggregate.AGGREGATES)

Every aggregate reads ``score`` (null on error) and ``passed`` (score >= the metric's own
threshold). Errors are counted, never averaged in as zeros.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

from evalframe.core import schema as C

__all__ = [
    "AGGREGATES",
    "UNTAGGED",
    "cohorts",
    "dimensions",
    "histograms",
    "macro_f1",
    "mean",
    "n",
    "n_errors",
    "n_scored",
    "p50",
    "p95",
    "pass_rate",
    "safety_failures",
    "summarize",
]

UNTAGGED = "(untagged)"

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


def pass_rate() -> pl.Expr:
    """Passing rows over scored rows (each metric's own threshold); 0.0 when none scored."""
    passed = pl.col("passed").sum()
    return (
        pl.when(_score.count() > 0).then(passed / _score.count()).otherwise(0.0).alias("pass_rate")
    )


AGGREGATES: list[pl.Expr] = [n(), n_scored(), n_errors(), mean(), p50(), p95(), pass_rate()]
_STATS = ("n", "n_scored", "n_errors", "mean", "p50", "p95", "pass_rate")  # AGGREGATES' names


def _no_rows_filled() -> list[pl.Expr]:
    """Aggregates of a group with no rows (a null after a join) read as 0."""
    return [pl.col("n", "n_scored", "n_errors").fill_null(0), pl.col("pass_rate").fill_null(0.0)]


def _metric_order(scores: pl.DataFrame, metrics: Sequence[str] | None) -> list[str]:
    if metrics is not None:
        return list(metrics)
    return scores.get_column(C.METRIC).unique(maintain_order=True).to_list()


def summarize(
    scores: pl.DataFrame, *, by: Sequence[str] = (), metrics: Sequence[str] | None = None
) -> pl.DataFrame:
    """Per-metric aggregates: n, n_scored, n_errors, mean, p50, p95, pass_rate.

    Args:
        scores: a long scores frame.
        by: extra grouping columns (present in ``scores``).
        metrics: the metric order (and the metrics to keep); default first appearance.

    Examples:
        >>> import polars as pl
        >>> scores = pl.DataFrame({"metric": ["m"] * 3, "score": [0.0, 0.5, None],
        ...     "passed": [False, True, None], "error": [None, None, "boom"]})
        >>> summarize(scores).select("metric", "n", "n_errors", "mean", "pass_rate")
        shape: (1, 5)
        ┌────────┬─────┬──────────┬──────┬───────────┐
        │ metric ┆ n   ┆ n_errors ┆ mean ┆ pass_rate │
        │ ---    ┆ --- ┆ ---      ┆ ---  ┆ ---       │
        │ str    ┆ i64 ┆ i64      ┆ f64  ┆ f64       │
        ╞════════╪═════╪══════════╪══════╪═══════════╡
        │ m      ┆ 3   ┆ 1        ┆ 0.25 ┆ 0.5       │
        └────────┴─────┴──────────┴──────┴───────────┘
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


def macro_f1(scores: pl.DataFrame, *, metrics: Sequence[str] | None = None) -> float:
    """Mean of per-metric pass-rates over every requested metric.

    Unlike eval-harness, a metric with no scored row counts with pass-rate 0 instead of
    dropping out, so an outage lowers the headline number rather than hiding.
    """
    return macro_f1_of(summarize(scores, metrics=metrics))


def macro_f1_of(summary: pl.DataFrame) -> float:
    """macro-F1 from a ``summarize`` frame (0.0 when no metric was requested)."""
    if summary.height == 0:
        return 0.0
    return float(summary.select(pl.col("pass_rate").mean()).item())


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
    pooled = scores.join(keys, on=C.METRIC, how="inner").group_by("dimension").agg(AGGREGATES)
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
