"""The tables behind a comparison: row verdicts, paired counts, McNemar tests, metric and
cohort deltas.

:func:`evalframe.core._compare.compare` joins two runs' per-row statistics and calls these;
each is a pure function of frames and arrays.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final, Literal

import numpy as np
import polars as pl

from evalframe.core import schema as C
from evalframe.core._stats import PairedCounts, mcnemar_exact

if TYPE_CHECKING:
    from evalframe.core._run import Run

__all__ = [
    "cohort_mcnemar",
    "cohort_table",
    "finite_or_none",
    "join_key",
    "mcnemar_tests",
    "metric_table",
    "metric_verdicts",
    "paired_counts",
    "paired_matrices",
    "per_key_counts",
    "row_verdicts",
]


def join_key(rows_a: pl.DataFrame, rows_b: pl.DataFrame) -> Literal["row_hash", "sample_id"]:
    """``row_hash`` when both runs hash every row uniquely, else ``sample_id``."""
    for rows in (rows_a, rows_b):
        hashes = rows.get_column(C.ROW_HASH)
        if hashes.null_count() or hashes.n_unique() != hashes.len():
            return "sample_id"
    return "row_hash"


def row_verdicts(joined: pl.DataFrame, res: float) -> pl.DataFrame:
    """Deltas, status, confidence and newly_failing of each joined row at resolution ``res``.

    A change is confident only past ``res``: one execution per row measures no dispersion
    (``res`` is then 1.0), so nothing is confident, as eval-harness marks it.
    """
    dp, ds = pl.col("pass_rate_delta"), pl.col("score_delta")
    before_missing = pl.col("before_repetitions").is_null()
    after_missing = pl.col("after_repetitions").is_null()
    status = (
        pl.when(before_missing)
        .then(pl.lit("added"))
        .when(after_missing)
        .then(pl.lit("removed"))
        .when(dp < 0)
        .then(pl.lit("regressed"))
        .when(ds < -res)
        .then(pl.lit("regressed"))
        .when(dp > 0)
        .then(pl.lit("improved"))
        .when(ds > res)
        .then(pl.lit("improved"))
        .otherwise(pl.lit("stable"))
    )
    confident = (
        pl.when(before_missing | after_missing)
        .then(False)
        .when(dp < 0)
        .then(dp.abs() > res)
        .when(ds < -res)
        .then(True)
        .when(dp > 0)
        .then(dp.abs() > res)
        .when(ds > res)
        .then(True)
        .otherwise(False)
    )
    rounded = {
        f"{side}_{stat}": pl.col(f"{side}_{stat}").round(6, mode="half_away_from_zero")
        for side in ("before", "after")
        for stat in ("pass_rate", "score_mean")
    }
    return (
        joined.with_columns(**rounded)
        .with_columns(
            (pl.col("after_pass_rate") - pl.col("before_pass_rate")).alias("pass_rate_delta"),
            (pl.col("after_score_mean") - pl.col("before_score_mean")).alias("score_delta"),
        )
        .with_columns(status.alias("status"), confident.alias("confident"))
        .with_columns(
            (
                (pl.col("status") == "regressed")
                & (pl.col("before_pass_rate") >= 1.0)
                & (pl.col("after_pass_rate").fill_null(1.0) < 1.0)
            ).alias("newly_failing")
        )
    )


def metric_verdicts(
    rows: pl.DataFrame, counts: PairedCounts, metrics: list[str], res: float
) -> pl.DataFrame:
    """The row verdict rules applied per (paired row, metric), over rows both runs executed.

    ``rows`` holds the paired rows' ``key`` and ``sample_id`` in the order of ``counts``.
    A (row, metric) pair is judged on that metric's pass rate over the row's executions (an
    errored execution does not pass, as in the row verdict) and its mean score over the
    scored ones, exactly as a row is judged on all its metrics: a metric that now errors on
    a row it passed regressed.
    """
    k, m = counts.shape
    runs_a, runs_b = counts.runs_a, counts.runs_b
    with np.errstate(divide="ignore", invalid="ignore"):
        stats = {
            "before_pass_rate": counts.pass_a / runs_a,
            "after_pass_rate": counts.pass_b / runs_b,
            "before_score_mean": counts.sum_a / counts.n_a,
            "after_score_mean": counts.sum_b / counts.n_b,
        }
    grid = pl.DataFrame(
        {
            "key": np.repeat(rows.get_column("key").to_numpy(), m),
            C.SAMPLE_ID: np.repeat(rows.get_column(C.SAMPLE_ID).to_numpy(), m),
            C.METRIC: np.tile(np.asarray(metrics, dtype=object), k),
            **{name: values.reshape(-1) for name, values in stats.items()},
            "before_n": runs_a.reshape(-1),
            "after_n": runs_b.reshape(-1),
        },
        schema_overrides={"key": rows.schema["key"], C.SAMPLE_ID: pl.String, C.METRIC: pl.String},
    ).filter((pl.col("before_n") > 0) & (pl.col("after_n") > 0))
    grid = grid.with_columns(pl.col(name).fill_nan(None) for name in stats)  # no scored run
    joined = grid.drop("before_n", "after_n").with_columns(
        pl.lit(1, pl.Int64).alias("before_repetitions"),
        pl.lit(1, pl.Int64).alias("after_repetitions"),
    )
    return row_verdicts(joined, res).select(
        "key",
        C.SAMPLE_ID,
        C.METRIC,
        "status",
        "confident",
        "newly_failing",
        "pass_rate_delta",
        "score_delta",
        "before_pass_rate",
        "after_pass_rate",
        "before_score_mean",
        "after_score_mean",
    )


def per_key_counts(run: Run, keys: pl.DataFrame) -> pl.DataFrame:
    """Sum of scores, scored, passing and attempted executions per (key, metric); an errored
    execution did not pass."""
    ok = pl.col("passed").fill_null(False) & pl.col(C.ERROR).is_null()
    return (
        run.scores.join(keys, on=C.SAMPLE_ID, how="inner")
        .group_by("key", C.METRIC)
        .agg(
            pl.col(C.SCORE).sum().alias("sum"),
            pl.col(C.SCORE).count().cast(pl.Float64).alias("n"),
            ok.sum().cast(pl.Float64).alias("pass"),
            pl.len().cast(pl.Float64).alias("runs"),
        )
    )


def paired_counts(
    a: pl.DataFrame, b: pl.DataFrame, paired: pl.Series, metrics: list[str]
) -> PairedCounts:
    """Per-(paired row, metric) sums, scored, passing and attempted counts of both runs, as
    matrices."""
    arrays = paired_matrices(a, b, paired, metrics, ("sum", "n", "pass", "runs"))
    return PairedCounts(
        sum_a=arrays["sum_a"],
        n_a=arrays["n_a"],
        pass_a=arrays["pass_a"],
        sum_b=arrays["sum_b"],
        n_b=arrays["n_b"],
        pass_b=arrays["pass_b"],
        runs_a=arrays["runs_a"],
        runs_b=arrays["runs_b"],
    )


def paired_matrices(
    a: pl.DataFrame, b: pl.DataFrame, paired: pl.Series, metrics: list[str], stats: Sequence[str]
) -> dict[str, np.ndarray]:
    """``per_key_counts`` statistics of both runs as (paired row, metric) matrices, named
    ``<stat>_a`` and ``<stat>_b`` (0 where a side has no execution)."""
    grid = pl.DataFrame({"key": paired}).join(pl.DataFrame({C.METRIC: metrics}), how="cross")
    arrays: dict[str, np.ndarray] = {}
    for side, frame in (("a", a), ("b", b)):
        full = grid.join(frame, on=["key", C.METRIC], how="left", maintain_order="left")
        for stat in stats:
            values = full.get_column(stat).fill_null(0.0).to_numpy()
            arrays[f"{stat}_{side}"] = values.reshape(len(paired), len(metrics))
    return arrays


def mcnemar_tests(counts: PairedCounts, rows: np.ndarray | None = None) -> list[dict[str, Any]]:
    """McNemar counts and p-value per metric, over paired rows executed on both sides; a row
    passes when at least half of its executions passed (errored ones did not)."""
    out = []
    for j in range(counts.shape[1]):
        na, nb = counts.runs_a[:, j], counts.runs_b[:, j]
        mask = (na > 0) & (nb > 0)
        if rows is not None:
            mask &= rows
        with np.errstate(divide="ignore", invalid="ignore"):
            ok_a = counts.pass_a[:, j][mask] / na[mask] >= 0.5
            ok_b = counts.pass_b[:, j][mask] / nb[mask] >= 0.5
        b = int((ok_a & ~ok_b).sum())
        c = int((~ok_a & ok_b).sum())
        out.append(
            {
                "paired_rows": int(mask.sum()),
                "pass_to_fail": b,
                "fail_to_pass": c,
                "p_value": mcnemar_exact(b, c) if mask.any() else None,
            }
        )
    return out


def cohort_mcnemar(
    before: Run,
    after: Run,
    key: str,
    paired_keys: pl.Series,
    counts: PairedCounts,
    common: list[str],
) -> list[dict[str, Any]]:
    """McNemar tests per (cohort, metric) over the paired rows; ``None`` is the untagged cohort.

    A row's cohorts are the after run's tags (the before run's for rows only it has).
    """
    tags = pl.concat(
        [
            after.dataset.select(pl.col(key).alias("key"), C.TAGS),
            before.dataset.select(pl.col(key).alias("key"), C.TAGS),
        ]
    ).unique("key", keep="first", maintain_order=True)
    paired_tags = pl.DataFrame({"key": paired_keys}).join(
        tags, on="key", how="left", maintain_order="left"
    )
    cohort_tests: list[dict[str, Any]] = []
    labels = sorted({t for ts in paired_tags.get_column(C.TAGS).to_list() for t in ts or []})
    untagged = paired_tags.get_column(C.TAGS).list.len().fill_null(0).to_numpy() == 0
    for cohort in [*labels, None]:
        member = (
            untagged
            if cohort is None
            else paired_tags.get_column(C.TAGS).list.contains(cohort).fill_null(False).to_numpy()
        )
        for metric, t in zip(common, mcnemar_tests(counts, member), strict=True):
            cohort_tests.append({"cohort": cohort, C.METRIC: metric, **t})
    return cohort_tests


def finite_or_none(x: float) -> float | None:
    """``x`` as a float, or None when it is NaN or infinite."""
    return float(x) if math.isfinite(x) else None


def metric_table(
    before: Run,
    after: Run,
    common: list[str],
    boot: dict[str, np.ndarray],
    tests: list[dict[str, Any]],
) -> pl.DataFrame:
    """One row per metric: means, pass rates, deltas, bootstrap intervals, McNemar tests."""
    a = before.summary.select(C.METRIC, "mean", "pass_rate")
    b = after.summary.select(C.METRIC, "mean", "pass_rate")
    by_metric = {m: i for i, m in enumerate(common)}
    dims = {m.id: m.dimension for m in [*before.metrics, *after.metrics]}
    order = [*after.metric_ids, *[m for m in before.metric_ids if m not in after.metric_ids]]
    m = len(common)
    records = []
    for metric in order:
        ra = a.filter(pl.col(C.METRIC) == metric)
        rb = b.filter(pl.col(C.METRIC) == metric)
        mean_a = ra.item(0, "mean") if ra.height else None
        mean_b = rb.item(0, "mean") if rb.height else None
        rate_a = ra.item(0, "pass_rate") if ra.height else None
        rate_b = rb.item(0, "pass_rate") if rb.height else None
        j = by_metric.get(metric)
        test = tests[j] if j is not None else {}
        records.append(
            {
                C.METRIC: metric,
                "dimension": dims.get(metric),
                "before_mean": mean_a,
                "after_mean": mean_b,
                "mean_delta": None if mean_a is None or mean_b is None else mean_b - mean_a,
                "mean_ci_low": None if j is None else finite_or_none(boot["low"][j]),
                "mean_ci_high": None if j is None else finite_or_none(boot["high"][j]),
                "before_pass_rate": rate_a,
                "after_pass_rate": rate_b,
                "pass_rate_delta": None if rate_a is None or rate_b is None else rate_b - rate_a,
                "pass_rate_ci_low": None if j is None else finite_or_none(boot["low"][m + j]),
                "pass_rate_ci_high": None if j is None else finite_or_none(boot["high"][m + j]),
                "paired_rows": test.get("paired_rows"),
                "pass_to_fail": test.get("pass_to_fail"),
                "fail_to_pass": test.get("fail_to_pass"),
                "p_value": test.get("p_value"),
                "p_holm": test.get("p_holm"),
            }
        )
    return pl.DataFrame(records, schema=_METRIC_SCHEMA)


_METRIC_SCHEMA: Final = pl.Schema(
    {
        C.METRIC: pl.String(),
        "dimension": pl.String(),
        "before_mean": pl.Float64(),
        "after_mean": pl.Float64(),
        "mean_delta": pl.Float64(),
        "mean_ci_low": pl.Float64(),
        "mean_ci_high": pl.Float64(),
        "before_pass_rate": pl.Float64(),
        "after_pass_rate": pl.Float64(),
        "pass_rate_delta": pl.Float64(),
        "pass_rate_ci_low": pl.Float64(),
        "pass_rate_ci_high": pl.Float64(),
        "paired_rows": pl.Int64(),
        "pass_to_fail": pl.Int64(),
        "fail_to_pass": pl.Int64(),
        "p_value": pl.Float64(),
        "p_holm": pl.Float64(),
    }
)


def cohort_table(before: Run, after: Run, tests: list[dict[str, Any]]) -> pl.DataFrame:
    """One row per (cohort, metric): sample counts, means, pass rates, deltas, McNemar tests."""
    cols = ["cohort", "label", C.METRIC, "sample_count", "mean", "pass_rate"]
    a = before.cohorts.select(cols).rename(
        {"sample_count": "before_n", "mean": "before_mean", "pass_rate": "before_pass_rate"}
    )
    b = after.cohorts.select(cols).rename(
        {"sample_count": "after_n", "mean": "after_mean", "pass_rate": "after_pass_rate"}
    )
    joined = b.join(
        a.drop("label"), on=["cohort", C.METRIC], how="full", coalesce=True, nulls_equal=True
    )
    test_frame = pl.DataFrame(
        tests,
        schema={
            "cohort": pl.String,
            C.METRIC: pl.String,
            "paired_rows": pl.Int64,
            "pass_to_fail": pl.Int64,
            "fail_to_pass": pl.Int64,
            "p_value": pl.Float64,
            "p_holm": pl.Float64,
        },
    )
    return (
        joined.join(test_frame, on=["cohort", C.METRIC], how="left", nulls_equal=True)
        .with_columns(
            pl.col("label").fill_null(pl.col("cohort")).fill_null("(untagged)"),
            (pl.col("after_mean") - pl.col("before_mean")).alias("mean_delta"),
            (pl.col("after_pass_rate") - pl.col("before_pass_rate")).alias("pass_rate_delta"),
        )
        .sort(pl.col("cohort").is_null(), "cohort", maintain_order=True)
        .select(
            "cohort",
            "label",
            C.METRIC,
            "before_n",
            "after_n",
            "before_mean",
            "after_mean",
            "mean_delta",
            "before_pass_rate",
            "after_pass_rate",
            "pass_rate_delta",
            "paired_rows",
            "pass_to_fail",
            "fail_to_pass",
            "p_value",
            "p_holm",
        )
    )
