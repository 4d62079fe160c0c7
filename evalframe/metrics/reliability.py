"""Reliability metrics: outcome-consistency and score-consistency, over repetitions of a row.

A reliability metric measures how stable *another* metric is when the same row is run
several times (``evaluate(..., repetitions=k)``). Its ``metric`` parameter names that
metric as a spec string (``outcome-consistency(metric=rouge-l)``); the inner metric's
expressions are evaluated over the same evaluation frame, and window expressions
(``.over("sample_id")``) compare its results across the repetitions of each row. Every
repetition of a row gets the same reliability score, so the per-metric mean weighs each row
by its number of repetitions (equally, when every row ran equally often).

An inner result counts as scored when it is a number in [0, 1] with no error (the
runner's rule); it passes when it also reaches the inner metric's own threshold.
"""

from __future__ import annotations

from typing import Literal

import polars as pl

from evalframe.core import schema as C
from evalframe.core._errors import MetricError
from evalframe.metrics._batched import sample_error
from evalframe.metrics._registry import get, metric
from evalframe.metrics._spec import Derived, Metric, Need, Scored

__all__ = ["outcome_consistency", "score_consistency"]

_RELIABILITY = ("outcome-consistency", "score-consistency")


def _inner(name: str, spec: str) -> Metric:
    inner = get(spec)
    if inner.name in _RELIABILITY:
        raise MetricError(
            f"Metric '{name}' parameter 'metric' must name a per-sample metric; got {spec!r}."
        )
    return inner


def _derived(*, metric: str, **_: object) -> list[Derived]:
    return _inner("reliability", metric).derived()


def _needs(*, metric: str, **_: object) -> list[Need]:
    return _inner("reliability", metric).needs()


def _inner_results(inner: Metric) -> tuple[pl.Expr, pl.Expr, Scored]:
    """The inner metric's usable score (null when unusable) and pass/fail per repetition."""
    scored = inner.expressions()
    s = scored.score.cast(pl.Float64)
    usable = s.is_not_null() & s.is_between(0.0, 1.0)
    if scored.error is not None:
        usable = usable & scored.error.is_null()
    # A system failure on a repetition is that repetition's failure, as in the runner.
    if_ran = pl.col(C.ACTUAL_OUTPUT).is_not_null()
    usable = usable & if_ran
    score = pl.when(usable).then(s)
    passed = (usable & (s >= inner.threshold)).fill_null(False)
    return score, passed, scored


def _runs_error(name: str, runs: pl.Expr, what: str) -> pl.Expr:
    return sample_error(
        f"has {{}} {what}; {name} metric needs at least 2 (evaluate with repetitions=2 or more).",
        runs,
    )


@metric(
    "outcome-consistency",
    family="reliability",
    threshold=0.8,
    derived=_derived,
    needs=_needs,
)
def outcome_consistency(*, metric: str = "exact-match") -> Scored:
    """Share of a row's repetitions that agree with its majority pass/fail outcome.

    With k repetitions of a row, p of which pass the inner ``metric`` (score at least its
    threshold; an errored repetition counts as not passing), the score is
    ``max(p, k - p) / k``: 1.0 when every run agrees, 0.5 at an even split. The dimension
    is the inner metric's concern; this one reports as correctness.

    Returns:
        Float64 in [0.5, 1]; null (an error) when the row ran fewer than 2 times.
    """
    inner = _inner("outcome-consistency", metric)
    _, passed, scored = _inner_results(inner)
    window = pl.col(C.SAMPLE_ID)
    runs = pl.len().over(window).cast(pl.Int64)
    passes = passed.cast(pl.Int64).sum().over(window)
    agree = pl.max_horizontal(passes, runs - passes)
    few = runs < 2
    return Scored(
        score=pl.when(few).then(None).otherwise(agree / runs),
        error=pl.when(few).then(_runs_error("outcome-consistency", runs, "run(s)")),
        details=pl.struct(
            runs=runs,
            passed=passes,
            majority=pl.when(passes * 2 >= runs).then(pl.lit("pass")).otherwise(pl.lit("fail")),
            metric=pl.lit(inner.id),
        ),
        prepare=scored.prepare,
    )


@metric(
    "score-consistency",
    family="reliability",
    threshold=0.8,
    derived=_derived,
    needs=_needs,
)
def score_consistency(
    *, metric: str = "exact-match", spread: Literal["stddev", "range"] = "stddev"
) -> Scored:
    """One minus the normalised spread of the inner metric's scores across repetitions.

    Over the scored repetitions of a row (errored ones are left out), the spread is
    ``2 * stddev`` (population standard deviation; 0.5 is the largest a set of values in
    [0, 1] can have, so the ratio is in [0, 1]) or, with ``spread="range"``, ``max - min``.
    The score is ``1 - spread``: 1.0 when every run scored the same.

    Returns:
        Float64 in [0, 1]; null (an error) when fewer than 2 repetitions of the row scored.
    """
    inner = _inner("score-consistency", metric)
    score, _, scored = _inner_results(inner)
    window = pl.col(C.SAMPLE_ID)
    runs = pl.len().over(window).cast(pl.Int64)
    n = score.count().over(window).cast(pl.Int64)
    if spread == "range":
        width = (score.max() - score.min()).over(window)
    else:
        width = 2.0 * score.std(ddof=0).over(window)
    few = n < 2
    return Scored(
        score=pl.when(few).then(None).otherwise((1.0 - width).clip(0.0, 1.0)),
        error=pl.when(runs < 2)
        .then(_runs_error("score-consistency", runs, "run(s)"))
        .when(few)
        .then(
            sample_error(
                "has {} run(s) of which {} scored; score-consistency metric needs at least 2 "
                "scored runs.",
                runs,
                n,
            )
        ),
        details=pl.struct(
            runs=runs,
            scored=n,
            mean=score.mean().over(window),
            stddev=score.std(ddof=0).over(window),
            min=score.min().over(window),
            max=score.max().over(window),
            metric=pl.lit(inner.id),
        ),
        prepare=scored.prepare,
    )
