"""Repeated sampling: per-row pass rates, Wilson intervals, and what a run can resolve.

Formulas follow eval-harness 1.6: a row's execution passes when
no metric failed on it and every scored metric passed; the run's resolution is
``z * sqrt(2 v / n)`` with ``v`` the mean within-row variance ``p (1 - p)``.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import polars as pl

from evalframe.core import schema as C

__all__ = [
    "Z95",
    "precision_block",
    "required_repetitions",
    "resolution",
    "round6",
    "row_aggregates",
    "wilson",
]

Z95 = 1.959964
TARGET_DELTA = 0.05


def round6(x: float) -> float:
    """Round half away from zero to 6 places, applied to the binary value (PHP ``round``)."""
    return float(Decimal(x).quantize(Decimal("0.000001"), rounding=ROUND_HALF_UP))


def wilson(successes: pl.Expr, trials: pl.Expr, z: float = Z95) -> tuple[pl.Expr, pl.Expr]:
    """The Wilson score interval (low, high) of a binomial proportion, over whole columns.

    Examples:
        >>> low, high = wilson(pl.col("s"), pl.col("n"))
        >>> frame = pl.DataFrame({"s": [2], "n": [3]})
        >>> frame.select(low.round(6).alias("low"), high.round(6).alias("high")).row(0)
        (0.20766, 0.938508)
    """
    p = successes.clip(0, trials) / trials
    d = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / d
    spread = (z / d) * (p * (1 - p) / trials + z * z / (4 * trials * trials)).sqrt()
    return (centre - spread).clip(lower_bound=0.0), (centre + spread).clip(upper_bound=1.0)


def resolution(variance: float, n: int, z: float = Z95) -> float:
    """The smallest difference ``n`` repetitions distinguish from noise, as a fraction."""
    if n < 2:
        return 1.0
    if variance <= 0:
        return min(1.0, round6(3 / n))
    return min(1.0, round6(z * math.sqrt(2 * variance / n)))


def required_repetitions(variance: float, delta: float = TARGET_DELTA, z: float = Z95) -> int:
    """Repetitions needed to resolve a difference of ``delta``."""
    if delta <= 0 or delta > 1:
        return 0
    if variance <= 0:
        return math.ceil(3 / delta)
    return math.ceil(round(2 * z * z * variance / (delta * delta), 9))


def _confidence(z: float) -> float:
    """erf(z / sqrt 2) by Abramowitz & Stegun 7.1.26, as eval-harness reports it."""
    x = z / math.sqrt(2)
    t = 1 / (1 + 0.3275911 * x)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    return round(1 - poly * math.exp(-x * x), 4)


def _points(x: float) -> str:
    text = f"{x * 100:.1f}".rstrip("0").rstrip(".")
    return f"{text} points"


def row_aggregates(scores: pl.DataFrame, frame: pl.DataFrame) -> pl.DataFrame:
    """Per-row aggregates over repetitions, in dataset order.

    Columns: sample_id, row_hash, repetitions, passed, errored, pass_rate, pass_rate_low,
    pass_rate_high, unstable, score_mean, score_stddev (population).
    """
    executions = scores.group_by(C.SAMPLE_ID, C.REPETITION).agg(
        (pl.col(C.ERROR).count() == 0).alias("clean"),
        pl.col("passed").fill_null(True).all().alias("all_passed"),
        (pl.col(C.ERROR).count() > 0).alias("errored"),
        pl.col(C.SCORE).mean().alias("exec_mean"),
    )
    if scores.get_column(C.REPETITION).max() == 0:  # one execution per row: no second pass
        mean = pl.col("exec_mean")
        rows = executions.select(
            C.SAMPLE_ID,
            pl.lit(1, pl.Int64).alias("repetitions"),
            (pl.col("clean") & pl.col("all_passed")).cast(pl.Int64).alias("passed"),
            pl.col("errored").cast(pl.Int64),
            mean.alias("score_mean"),
            pl.when(mean.is_not_null()).then(0.0).alias("score_stddev"),
        )
    else:
        rows = executions.group_by(C.SAMPLE_ID).agg(
            pl.len().cast(pl.Int64).alias("repetitions"),
            (pl.col("clean") & pl.col("all_passed")).sum().cast(pl.Int64).alias("passed"),
            pl.col("errored").sum().cast(pl.Int64).alias("errored"),
            pl.col("exec_mean").mean().alias("score_mean"),
            pl.col("exec_mean").std(ddof=0).alias("score_stddev"),
        )
    order = frame.select(C.SAMPLE_ID, C.ROW_HASH).unique(C.SAMPLE_ID, maintain_order=True)
    out = order.join(rows, on=C.SAMPLE_ID, how="inner", maintain_order="left")
    n = pl.col("repetitions")
    low, high = wilson(pl.col("passed"), n)
    return out.with_columns(
        (pl.col("passed") / n).alias("pass_rate"),
        low.alias("pass_rate_low"),
        high.alias("pass_rate_high"),
        ((n > 1) & (pl.col("passed") > 0) & (pl.col("passed") < n)).alias("unstable"),
    )


def precision_block(rows: pl.DataFrame, total_executions: int) -> dict[str, Any]:
    """The report's ``precision`` block (scope ``per_row``) from ``row_aggregates``."""
    n, passed, executions, variance = rows.select(
        pl.col("repetitions").max().fill_null(0).alias("n"),
        pl.col("passed").sum().alias("passed"),
        pl.col("repetitions").sum().alias("executions"),
        (pl.col("pass_rate") * (1 - pl.col("pass_rate"))).mean().fill_null(0.0).alias("v"),
    ).row(0)
    return precision_from_counts(
        int(n), int(passed), int(executions), float(variance), total_executions
    )


def precision_from_counts(
    n: int, passed: int, executions: int, variance: float, total_executions: int
) -> dict[str, Any]:
    """The ``precision`` block from per-row counts, however they were counted.

    Args:
        n: the most repetitions of any row.
        passed: passing executions over every (row, metric).
        executions: executions over every (row, metric).
        variance: the mean within-row variance ``p (1 - p)``.
        total_executions: the run's executions (rows x repetitions).
    """
    rate = passed / executions if executions else 0.0
    res = resolution(variance, n)
    resolvable = n >= 2 and res <= TARGET_DELTA
    needed = required_repetitions(variance)
    if n < 2:
        summary = (
            "Single execution per sample: no dispersion was measured, so no difference is "
            f"distinguishable from noise. Resolving {_points(TARGET_DELTA)} needs at least "
            f"{needed} repetitions (--repetitions={needed})."
        )
    elif resolvable:
        summary = (
            f"{n} repetitions resolve differences down to {_points(res)}, which covers the "
            f"{_points(TARGET_DELTA)} you asked about."
        )
    else:
        summary = (
            f"{n} repetitions only resolve differences above {_points(res)}, so a "
            f"{_points(TARGET_DELTA)} change is not distinguishable from noise here. Resolving "
            f"{_points(TARGET_DELTA)} needs at least {needed} repetitions (--repetitions={needed})."
        )
    if variance == 0 and n >= 2:
        summary += (
            " Every row agreed with itself across repetitions, so the limit here is what a run "
            "this short can rule out at all, not measured noise."
        )
    run_res = resolution(variance, total_executions)
    return {
        "scope": "per_row",
        "repetitions": n,
        "pass_rate": round6(rate),
        "confidence": _confidence(Z95),
        "resolution": res,
        "target_delta": TARGET_DELTA,
        "target_resolvable": resolvable,
        "required_repetitions": needed,
        "summary": summary,
        "within_row_variance": round6(variance),
        "run": {
            "observations": total_executions,
            "resolution": run_res,
            "target_resolvable": total_executions >= 2 and run_res <= TARGET_DELTA,
        },
    }
