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

from typing import Annotated, Literal

import polars as pl

from evalframe.core import schema as C
from evalframe.core._errors import MetricError
from evalframe.core._trajectory import TRAJECTORY, TRAJECTORY_COLUMN
from evalframe.metrics._batched import sample_error
from evalframe.metrics._registry import get, metric
from evalframe.metrics._spec import Derived, Metric, Need, Range, Scored

__all__ = [
    "brier_score",
    "calibration_error",
    "discrimination",
    "environment_robustness",
    "fault_robustness",
    "outcome_consistency",
    "output_consistency",
    "prompt_robustness",
    "resource_consistency",
    "score_consistency",
    "trajectory_consistency",
]

_RELIABILITY = (
    "outcome-consistency",
    "score-consistency",
    "output-consistency",
    "brier-score",
    "calibration-error",
    "discrimination",
    "prompt-robustness",
    "environment-robustness",
    "fault-robustness",
    "resource-consistency",
    "trajectory-consistency",
)


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

    Examples:
        >>> import itertools
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([{"id": "q", "input": {"q": "2+2"}, "expected_output": "4"}],
        ...                              name="demo")
        >>> answers = itertools.cycle(["4", "4", "5"])
        >>> run = ef.evaluate(ds, system=lambda sample: next(answers), metrics=["outcome-consistency"],
        ...                   repetitions=3, concurrency=1)
        >>> for row in run.scores.select("repetition", "score", "details").iter_rows():
        ...     print(*row)
        0 0.6666666666666666 {"runs":3,"passed":2,"majority":"pass","metric":"exact-match"}
        1 0.6666666666666666 {"runs":3,"passed":2,"majority":"pass","metric":"exact-match"}
        2 0.6666666666666666 {"runs":3,"passed":2,"majority":"pass","metric":"exact-match"}
    """  # noqa: E501
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

    Examples:
        >>> import itertools
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([{"id": "q", "input": {"q": "2+2"}, "expected_output": "four"}],
        ...                              name="demo")
        >>> answers = itertools.cycle(["four", "four", "for"])
        >>> run = ef.evaluate(ds, system=lambda sample: next(answers),
        ...                   metrics=["score-consistency(metric=levenshtein, spread=range)"],
        ...                   repetitions=3, concurrency=1)
        >>> for row in run.scores.select("repetition", "score", "details").iter_rows():
        ...     print(*row)
        0 0.75 {"runs":3,"scored":3,"mean":0.9166666666666666,"stddev":0.1178511301977579,"min":0.75,"max":1.0,"metric":"levenshtein"}
        1 0.75 {"runs":3,"scored":3,"mean":0.9166666666666666,"stddev":0.1178511301977579,"min":0.75,"max":1.0,"metric":"levenshtein"}
        2 0.75 {"runs":3,"scored":3,"mean":0.9166666666666666,"stddev":0.1178511301977579,"min":0.75,"max":1.0,"metric":"levenshtein"}
    """  # noqa: E501
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


# --- outputs across repetitions ------------------------------------------------------------


@metric("output-consistency", family="reliability", threshold=0.8)
def output_consistency(*, strip: bool = False) -> Scored:
    """Share of a row's repetitions whose output is identical to its most common output.

    This is harness-evals' ``outcome_consistency``: with k repetitions of a row, of which m
    gave the most frequent output (compared exactly; ``strip=true`` ignores leading and
    trailing whitespace), the score is ``m / k``. A repetition that produced no output agrees
    with none. evalframe's ``outcome-consistency`` is a different measure: agreement of the
    pass/fail verdicts of another metric.

    Returns:
        Float64 in (0, 1]; null (an error) when the row ran fewer than 2 times.

    Examples:
        >>> import itertools
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([{"id": "q", "input": {"q": "2+2"}, "expected_output": "4"}],
        ...                              name="demo")
        >>> answers = itertools.cycle(["4", "4 ", "5"])
        >>> run = ef.evaluate(ds, system=lambda sample: next(answers),
        ...                   metrics=["output-consistency(strip=true)"], repetitions=3, concurrency=1)
        >>> for row in run.scores.select("repetition", "score", "details").iter_rows():
        ...     print(*row)
        0 0.6666666666666666 {"runs":3,"identical":2,"distinct":2}
        1 0.6666666666666666 {"runs":3,"identical":2,"distinct":2}
        2 0.6666666666666666 {"runs":3,"identical":2,"distinct":2}
    """  # noqa: E501
    window = pl.col(C.SAMPLE_ID)
    out = pl.col(C.ACTUAL_OUTPUT).cast(pl.String)
    if strip:
        out = out.str.strip_chars()
    # A failed repetition gets a value no other repetition shares.
    key = pl.coalesce(out, pl.format("\x00no output {}", pl.col(C.REPETITION)))
    runs = pl.len().over(window).cast(pl.Int64)
    modal = pl.col("output-consistency__n").max().over(window).cast(pl.Int64)
    few = runs < 2
    return Scored(
        score=pl.when(few).then(None).otherwise(modal / runs),
        error=pl.when(few).then(_runs_error("output-consistency", runs, "run(s)")),
        details=pl.struct(
            runs=runs,
            identical=modal,
            distinct=pl.col("output-consistency__key").n_unique().over(window).cast(pl.Int64),
        ),
        prepare={
            "output-consistency__key": key,
            "output-consistency__n": pl.len().over(C.SAMPLE_ID, key),
        },
    )


# --- confidence: brier-score, calibration-error, discrimination ---------------------------

CONFIDENCE = "confidence"
"""The outputs column holding the system's confidence that its output is correct, in [0, 1]."""


def _confidence() -> pl.Expr:
    """``confidence`` as Float64, or all null when the frame has no such column."""
    return pl.coalesce(pl.col(f"^{CONFIDENCE}$").cast(pl.Float64), pl.lit(None, pl.Float64))


def _confidence_results(name: str, metric: str) -> tuple[pl.Expr, pl.Expr, pl.Expr, Scored]:
    """The usable confidence, the usable correctness (1.0 or 0.0), the row's error, the inner.

    A row is usable when its confidence is a number in [0, 1] and the inner metric scored
    it; correct means the inner metric passed.
    """
    inner = _inner(name, metric)
    score, passed, scored = _inner_results(inner)
    conf = _confidence()
    bad_conf = conf.is_null() | conf.is_nan() | ~conf.is_between(0.0, 1.0)
    no_score = score.is_null()
    usable = ~bad_conf & ~no_score
    error = (
        pl.when(conf.is_null())
        .then(
            sample_error(
                f"has no {CONFIDENCE} for {name} metric: the system must report one "
                f"(a {CONFIDENCE} column in [0, 1] beside actual_output)."
            )
        )
        .when(bad_conf)
        .then(
            sample_error(
                f"{CONFIDENCE} must be a number in [0, 1] for {name} metric; got {{}}.", conf
            )
        )
        .when(no_score)
        .then(
            sample_error(
                f"was not scored by {inner.id}, so {name} metric cannot tell whether it is correct."
            )
        )
    )
    return (
        pl.when(usable).then(conf),
        pl.when(usable).then(passed.cast(pl.Float64)),
        error,
        scored,
    )


def _confidence_derived(*, metric: str, **_: object) -> list[Derived]:
    return _inner("reliability", metric).derived()


def _confidence_needs(*, metric: str, **_: object) -> list[Need]:
    return _inner("reliability", metric).needs()


@metric(
    "brier-score",
    family="reliability",
    threshold=0.75,
    derived=_confidence_derived,
    needs=_confidence_needs,
)
def brier_score(*, metric: str = "exact-match") -> Scored:
    """One minus the squared error of the system's confidence against correctness.

    Per row, ``1 - (confidence - correct)**2`` where ``correct`` is 1 when the row passes
    the inner ``metric`` and 0 otherwise; the mean over rows is ``1 - Brier score``. A
    confident right answer scores 1.0, a confident wrong one 0.0, an unsure 0.5 either way
    0.75 (the default threshold).

    Returns:
        Float64 in [0, 1]; null (an error) when ``confidence`` is missing or outside [0, 1],
        or the inner metric could not score the row.

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([{"id": k, "input": {"q": k}, "expected_output": "4"}
        ...                               for k in ("a", "b")], name="demo")
        >>> replies = {"a": ("4", 0.9), "b": ("5", 0.8)}
        >>> def system(sample):
        ...     output, confidence = replies[sample["q"]]
        ...     return {"output": output, "confidence": confidence}
        >>> run = ef.evaluate(ds, system=system, metrics=["brier-score"])
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        a 0.99 {"confidence":0.9,"correct":1.0,"squared_error":0.009999999999999995}
        b 0.3599999999999999 {"confidence":0.8,"correct":0.0,"squared_error":0.6400000000000001}
    """
    conf, correct, error, scored = _confidence_results("brier-score", metric)
    squared = (conf - correct) ** 2
    return Scored(
        score=1.0 - squared,
        error=error,
        details=pl.struct(confidence=conf, correct=correct, squared_error=squared),
        prepare=scored.prepare,
    )


@metric(
    "calibration-error",
    family="reliability",
    threshold=0.9,
    derived=_confidence_derived,
    needs=_confidence_needs,
)
def calibration_error(
    *, metric: str = "exact-match", bins: Annotated[int, Range(ge=1, le=1000)] = 10
) -> Scored:
    """One minus the expected calibration error (ECE) of the system's confidence.

    Confidences fall into ``bins`` equal-width bins over [0, 1] (a confidence of exactly 1
    joins the last bin). ECE is ``sum over bins of (n_b / N) * |accuracy_b - confidence_b|``,
    accuracy being the share of the bin's rows that pass the inner ``metric``. ECE is a
    property of the whole run: every usable row gets ``1 - ECE``, so the run's mean is
    ``1 - ECE``; its details give its bin's accuracy and mean confidence.

    Returns:
        Float64 in [0, 1]; null (an error) on rows without a usable confidence or inner score.

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([{"id": k, "input": {"q": k}, "expected_output": "4"}
        ...                               for k in "abcd"], name="demo")
        >>> replies = {"a": ("4", 0.9), "b": ("5", 0.9), "c": ("4", 0.3), "d": ("5", 0.3)}
        >>> def system(sample):
        ...     output, confidence = replies[sample["q"]]
        ...     return {"output": output, "confidence": confidence}
        >>> run = ef.evaluate(ds, system=system, metrics=["calibration-error(bins=5)"])
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        a 0.7 {"bin":4,"bin_accuracy":0.5,"bin_confidence":0.9,"bin_rows":2,"ece":0.3}
        b 0.7 {"bin":4,"bin_accuracy":0.5,"bin_confidence":0.9,"bin_rows":2,"ece":0.3}
        c 0.7 {"bin":1,"bin_accuracy":0.5,"bin_confidence":0.3,"bin_rows":2,"ece":0.3}
        d 0.7 {"bin":1,"bin_accuracy":0.5,"bin_confidence":0.3,"bin_rows":2,"ece":0.3}
    """
    conf, correct, error, scored = _confidence_results("calibration-error", metric)
    bin_ = pl.col("calibration-error__bin")
    accuracy = correct.mean().over(bin_)
    mean_conf = conf.mean().over(bin_)
    gap = (accuracy - mean_conf).abs()
    ece = gap.sum() / conf.count()
    return Scored(
        score=pl.when(conf.is_not_null()).then((1.0 - ece).clip(0.0, 1.0)),
        error=error,
        details=pl.struct(
            bin=bin_,
            bin_accuracy=accuracy,
            bin_confidence=mean_conf,
            bin_rows=conf.count().over(bin_).cast(pl.Int64),
            ece=ece,
        ),
        prepare={
            **scored.prepare,
            "calibration-error__bin": (conf * bins).floor().cast(pl.Int64).clip(0, bins - 1),
        },
    )


@metric(
    "discrimination",
    family="reliability",
    threshold=0.7,
    derived=_confidence_derived,
    needs=_confidence_needs,
)
def discrimination(*, metric: str = "exact-match") -> Scored:
    """AUROC of the system's confidence as a predictor of correctness.

    The probability that a correct row (one passing the inner ``metric``) carries a higher
    confidence than an incorrect one, ties counting half: the Mann-Whitney statistic over
    average ranks. 0.5 is a confidence that tells nothing, 1.0 one that separates right from
    wrong perfectly. A property of the whole run: every usable row gets the run's AUROC.

    Returns:
        Float64 in [0, 1]; null (an error) on rows without a usable confidence or inner
        score, and on every row when the usable rows are all correct or all incorrect.

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([{"id": k, "input": {"q": k}, "expected_output": "4"}
        ...                               for k in "abc"], name="demo")
        >>> replies = {"a": ("4", 0.9), "b": ("5", 0.4), "c": ("4", 0.6)}
        >>> def system(sample):
        ...     output, confidence = replies[sample["q"]]
        ...     return {"output": output, "confidence": confidence}
        >>> run = ef.evaluate(ds, system=system, metrics=["discrimination"])
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        a 1.0 {"confidence":0.9,"correct":1.0,"correct_rows":2,"incorrect_rows":1}
        b 1.0 {"confidence":0.4,"correct":0.0,"correct_rows":2,"incorrect_rows":1}
        c 1.0 {"confidence":0.6,"correct":1.0,"correct_rows":2,"incorrect_rows":1}
    """
    conf, correct, error, scored = _confidence_results("discrimination", metric)
    rank = conf.rank("average")
    n_pos = correct.sum()
    n_neg = correct.count() - n_pos
    auc = ((rank * correct).sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)
    one_class = (n_pos == 0) | (n_neg == 0)
    return Scored(
        score=pl.when(conf.is_not_null() & ~one_class).then(auc),
        error=pl.when(error.is_not_null())
        .then(error)
        .when(one_class)
        .then(
            sample_error(
                "is in a run whose usable rows are {} correct of {}; discrimination metric "
                "needs both correct and incorrect rows.",
                n_pos.cast(pl.Int64),
                correct.count(),
            )
        ),
        details=pl.struct(
            confidence=conf,
            correct=correct,
            correct_rows=n_pos.cast(pl.Int64),
            incorrect_rows=n_neg.cast(pl.Int64),
        ),
        prepare=scored.prepare,
    )


# --- perturbed variants ---------------------------------------------------------------------

VARIANT_OF = "variant_of"
"""The metadata key linking a perturbed variant to the ``sample_id`` of its original."""


@metric(
    "prompt-robustness",
    family="reliability",
    threshold=0.8,
    derived=_derived,
    needs=_needs,
)
def prompt_robustness(
    *,
    metric: str = "exact-match",
    spread: Literal["stddev", "range"] = "stddev",
    measure: Literal["spread", "ratio"] = "spread",
) -> Scored:
    """One minus the spread of the inner metric's scores across a sample's perturbed variants.

    A variant names its original in ``metadata.variant_of`` (the original's ``sample_id``);
    an original and its variants form a group (variants of variants are not followed). The
    spread is over every scored repetition of every member: ``2 * stddev`` (population),
    or ``max - min`` with ``spread="range"``. Every member of a group gets its score.

    ``measure=ratio`` is harness-evals' prompt_robustness instead: ``min(1, accuracy of
    the variants' runs / accuracy of the original's)``, as environment-robustness computes
    it over every variant of the group (``spread`` does not apply).

    Returns:
        Float64 in [0, 1]; null (an error) when fewer than 2 members of the group scored.

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([
        ...     {"id": "q", "input": {"q": "2+2"}, "expected_output": "4"},
        ...     {"id": "q-typo", "input": {"q": "2+2?"}, "expected_output": "4",
        ...      "metadata": {"variant_of": "q"}},
        ...     {"id": "q-words", "input": {"q": "two plus two"}, "expected_output": "4",
        ...      "metadata": {"variant_of": "q"}}], name="demo")
        >>> run = ef.evaluate(ds, outputs={"q": "4", "q-typo": "4", "q-words": "5"},
        ...                   metrics=["prompt-robustness(spread=range)", "prompt-robustness(measure=ratio)"])
        >>> for row in run.scores.select("sample_id", "metric", "score").iter_rows():
        ...     print(*row)
        q prompt-robustness(spread=range) 0.0
        q-typo prompt-robustness(spread=range) 0.0
        q-words prompt-robustness(spread=range) 0.0
        q prompt-robustness(measure=ratio) 0.5
        q-typo prompt-robustness(measure=ratio) 0.5
        q-words prompt-robustness(measure=ratio) 0.5
    """  # noqa: E501
    if measure == "ratio":
        return _robustness("prompt-robustness", None, metric)
    inner = _inner("prompt-robustness", metric)
    score, _, scored = _inner_results(inner)
    window = pl.col("prompt-robustness__group")
    members = pl.col(C.SAMPLE_ID).n_unique().over(window).cast(pl.Int64)
    n = score.count().over(window).cast(pl.Int64)
    if spread == "range":
        width = (score.max() - score.min()).over(window)
    else:
        width = 2.0 * score.std(ddof=0).over(window)
    few = n < 2
    return Scored(
        score=pl.when(few).then(None).otherwise((1.0 - width).clip(0.0, 1.0)),
        error=pl.when(few).then(
            sample_error(
                "has {} scored run(s) in its variant group of {} sample(s); prompt-robustness "
                "metric needs at least 2 (link variants with metadata.variant_of).",
                n,
                members,
            )
        ),
        details=pl.struct(
            group=window,
            samples=members,
            scored=n,
            mean=score.mean().over(window),
            min=score.min().over(window),
            max=score.max().over(window),
            metric=pl.lit(inner.id),
        ),
        prepare={
            **scored.prepare,
            "prompt-robustness__group": pl.coalesce(
                C.metadata_field(VARIANT_OF), pl.col(C.SAMPLE_ID)
            ),
        },
    )


def _robustness(name: str, kind: str | None, metric: str) -> Scored:
    """The accuracy ratio ``min(1, accuracy of the perturbed runs / of the original's)`` over
    each variant group, the variants being those labelled ``metadata.<kind>`` (every variant
    without a ``kind``); or a row's precomputed ``metadata.nominal_passed`` /
    ``perturbed_results`` (harness-evals' form)."""
    inner = _inner(name, metric)
    _, passed, scored = _inner_results(inner)
    variant_of = C.metadata_field(VARIANT_OF)
    label = C.metadata_field(kind) if kind is not None else variant_of
    window = pl.col(f"{name}__group")
    original = variant_of.is_null()
    perturbed = variant_of.is_not_null() & label.is_not_null()
    nominal_runs = original.sum().over(window).cast(pl.Int64)
    nominal_ok = (passed & original).sum().over(window).cast(pl.Int64)
    perturbed_runs = perturbed.sum().over(window).cast(pl.Int64)
    perturbed_ok = (passed & perturbed).sum().over(window).cast(pl.Int64)
    acc_nominal = nominal_ok / nominal_runs
    acc_perturbed = perturbed_ok / perturbed_runs
    ratio = (
        pl.when(acc_nominal == 0)
        .then(1.0)
        .otherwise((acc_perturbed / acc_nominal).clip(upper_bound=1.0))
    )
    # harness-evals' precomputed form, per row: did the original pass, did each variant pass.
    given_nominal = C.metadata_field("nominal_passed")
    results_text = C.metadata_field("perturbed_results")
    # Decoded only where it is a list of true/false: anything else is the row's error.
    well_formed = results_text.str.contains(
        r"^\[\s*(?:(?:true|false)\s*(?:,\s*(?:true|false)\s*)*)?\]$"
    )
    given_results = pl.when(well_formed).then(results_text).str.json_decode(pl.List(pl.Boolean))
    precomputed = given_nominal.is_not_null() | results_text.is_not_null()
    nominal_flag = given_nominal.replace_strict(
        {"true": True, "false": False}, default=None, return_dtype=pl.Boolean
    )
    given_score = pl.when(~nominal_flag).then(1.0).otherwise(given_results.list.mean())
    bad_given = nominal_flag.is_null() | given_results.is_null() | given_results.list.contains(None)
    error = (
        pl.when(precomputed & bad_given)
        .then(
            sample_error(
                f"needs both metadata.nominal_passed (true or false) and "
                f"metadata.perturbed_results (a list of true/false) for {name} metric."
            )
        )
        .when(precomputed & (given_results.list.len() == 0))
        .then(sample_error(f"has an empty metadata.perturbed_results for {name} metric."))
        .when(~precomputed & (nominal_runs == 0))
        .then(
            sample_error(
                f"is in a variant group without its original for {name} metric: "
                "metadata.variant_of names '{}', which is not in the dataset.",
                window,
            )
        )
        .when(~precomputed & (perturbed_runs == 0))
        .then(
            sample_error(
                f"has no {kind} variants for {name} metric: link variants to their original "
                f"with metadata.variant_of and label each with metadata.{kind}."
                if kind is not None
                else f"has no variants for {name} metric: link variants to their original "
                "with metadata.variant_of."
            )
        )
    )
    score = pl.when(precomputed).then(given_score).otherwise(ratio)
    details = (
        pl.when(precomputed)
        .then(
            pl.struct(
                nominal_passed=nominal_flag,
                perturbed=given_results.list.len().cast(pl.Int64),
                perturbed_accuracy=given_results.list.mean(),
                group=pl.lit(None, pl.String),
                nominal_runs=pl.lit(None, pl.Int64),
                nominal_accuracy=pl.lit(None, pl.Float64),
                labels=pl.lit(None, pl.Int64),
                metric=pl.lit(None, pl.String),
            )
        )
        .otherwise(
            pl.struct(
                nominal_passed=pl.lit(None, pl.Boolean),
                perturbed=perturbed_runs,
                perturbed_accuracy=acc_perturbed,
                group=window,
                nominal_runs=nominal_runs,
                nominal_accuracy=acc_nominal,
                labels=pl.when(perturbed)
                .then(label)
                .drop_nulls()
                .n_unique()
                .over(window)
                .cast(pl.Int64),
                metric=pl.lit(inner.id),
            )
        )
    )
    return Scored(
        score=pl.when(error.is_null()).then(score.round(6)),
        error=error,
        details=pl.when(error.is_null()).then(details),
        prepare={
            **scored.prepare,
            f"{name}__group": pl.coalesce(variant_of, pl.col(C.SAMPLE_ID)),
        },
    )


@metric(
    "environment-robustness",
    family="reliability",
    threshold=0.8,
    derived=_derived,
    needs=_needs,
)
def environment_robustness(*, metric: str = "exact-match") -> Scored:
    """``min(1, perturbed accuracy / original accuracy)`` under environment perturbations.

    A variant names its original in ``metadata.variant_of`` and its environment change in
    ``metadata.environment`` (a label: ``field-reorder``, ``date-format``, ...). Accuracy
    is the share of runs (every repetition) that pass the inner ``metric``: the original's
    runs against all its environment variants' runs. An original that never passes scores
    1.0 (the drop cannot be put on the perturbation). Every member of a group gets the
    group's score. A row may instead carry harness-evals' precomputed form,
    ``metadata.nominal_passed`` and ``metadata.perturbed_results`` (1.0 when the original
    failed, else the share of variants that passed). Details: the accuracies and run counts,
    the number of distinct labels, the inner metric.

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([
        ...     {"id": "q", "input": {"q": "2+2"}, "expected_output": "4"},
        ...     {"id": "q-reordered", "input": {"q": "2 + 2"}, "expected_output": "4",
        ...      "metadata": {"variant_of": "q", "environment": "spacing"}},
        ...     {"id": "q-wrapped", "input": {"q": "(2+2)"}, "expected_output": "4",
        ...      "metadata": {"variant_of": "q", "environment": "wrapping"}}], name="demo")
        >>> outputs = {"q": "4", "q-reordered": "4", "q-wrapped": "5"}
        >>> run = ef.evaluate(ds, outputs=outputs, metrics=["environment-robustness"])
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        q 0.5 {"nominal_passed":null,"perturbed":2,"perturbed_accuracy":0.5,"group":"q","nominal_runs":1,"nominal_accuracy":1.0,"labels":2,"metric":"exact-match"}
        q-reordered 0.5 {"nominal_passed":null,"perturbed":2,"perturbed_accuracy":0.5,"group":"q","nominal_runs":1,"nominal_accuracy":1.0,"labels":2,"metric":"exact-match"}
        q-wrapped 0.5 {"nominal_passed":null,"perturbed":2,"perturbed_accuracy":0.5,"group":"q","nominal_runs":1,"nominal_accuracy":1.0,"labels":2,"metric":"exact-match"}
    """  # noqa: E501
    return _robustness("environment-robustness", "environment", metric)


@metric(
    "fault-robustness",
    family="reliability",
    threshold=0.7,
    derived=_derived,
    needs=_needs,
)
def fault_robustness(*, metric: str = "exact-match") -> Scored:
    """``min(1, accuracy with injected faults / original accuracy)``.

    As environment-robustness, with the variants labelled ``metadata.fault`` (the fault
    injected: ``tool-timeout``, ``rate-limited``, ...); a variant group can hold both kinds,
    each metric reading its own. harness-evals' precomputed form is read the same way.

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([
        ...     {"id": "q", "input": {"q": "refund?"}, "expected_output": "30 days"},
        ...     {"id": "q-timeout", "input": {"q": "refund?"}, "expected_output": "30 days",
        ...      "metadata": {"variant_of": "q", "fault": "tool-timeout"}},
        ...     {"id": "p", "input": {"q": "?"}, "expected_output": "x",
        ...      "metadata": {"nominal_passed": True, "perturbed_results": [True, False]}}],
        ...     name="demo")
        >>> outputs = {"q": "30 days", "q-timeout": "sorry, try later", "p": "x"}
        >>> run = ef.evaluate(ds, outputs=outputs, metrics=["fault-robustness"])
        >>> for row in run.scores.select("sample_id", "score").iter_rows():
        ...     print(*row)
        q 0.0
        q-timeout 0.0
        p 0.5
    """
    return _robustness("fault-robustness", "fault", metric)


# --- resources and trajectories across repetitions ----------------------------------------


def _resource(resource: str) -> tuple[pl.Expr, str]:
    def col(name: str) -> pl.Expr:
        return pl.coalesce(pl.col(f"^{name}$").cast(pl.Float64), pl.lit(None, pl.Float64))

    if resource == "latency":
        return col("latency_ms"), "latency_ms"
    return col("prompt_tokens") + col("completion_tokens"), "prompt_tokens + completion_tokens"


@metric("resource-consistency", family="reliability", dimension="performance", threshold=0.8)
def resource_consistency(*, resource: Literal["tokens", "latency"] = "tokens") -> Scored:
    """One minus the coefficient of variation of a row's tokens or latency across repetitions.

    Over the repetitions of a row that recorded the resource (``prompt_tokens +
    completion_tokens``, or ``latency_ms``), the score is ``1 - min(1, stddev / mean)``
    (population stddev): 1.0 when every run cost the same, 0.0 when the spread reaches the
    mean. All-zero values are perfectly consistent.

    Returns:
        Float64 in [0, 1]; null (an error) on a repetition that did not record it or
        recorded a negative or non-finite value, and when fewer than 2 repetitions of the
        row recorded it.

    Examples:
        >>> import polars as pl
        >>> import evalframe as ef
        >>> frame = pl.DataFrame({
        ...     "sample_id": ["q"] * 3, "repetition": [0, 1, 2], "input": ['{"q": "2+2"}'] * 3,
        ...     "expected_output": ["4"] * 3, "expected_type": ["string"] * 3, "metadata": ["{}"] * 3,
        ...     "tags": [[], [], []], "actual_output": ["4"] * 3,
        ...     "prompt_tokens": [100, 120, 80], "completion_tokens": [10, 10, 10]})
        >>> scores = ef.score(frame, ["resource-consistency"])
        >>> for row in scores.select("repetition", "score", "details").iter_rows():
        ...     print(*row)
        0 0.8515460761949589 {"runs":3,"mean":110.0,"stddev":16.32993161855452,"min":90.0,"max":130.0}
        1 0.8515460761949589 {"runs":3,"mean":110.0,"stddev":16.32993161855452,"min":90.0,"max":130.0}
        2 0.8515460761949589 {"runs":3,"mean":110.0,"stddev":16.32993161855452,"min":90.0,"max":130.0}
    """  # noqa: E501
    value, columns = _resource(resource)
    bad = value.is_nan() | value.is_infinite() | (value < 0)
    usable = pl.when(~bad.fill_null(True)).then(value)
    window = pl.col(C.SAMPLE_ID)
    n = usable.count().over(window).cast(pl.Int64)
    mean = usable.mean().over(window)
    std = usable.std(ddof=0).over(window)
    cv = pl.when(mean > 0).then(std / mean).otherwise(0.0)
    few = n < 2
    return Scored(
        score=pl.when(few | bad.fill_null(True)).then(None).otherwise(1.0 - cv.clip(0.0, 1.0)),
        error=pl.when(value.is_null())
        .then(
            sample_error(
                f"has no {columns} for resource-consistency metric on this repetition "
                "(add it to the saved outputs)."
            )
        )
        .when(bad.fill_null(False))
        .then(
            sample_error(
                f"{columns} must be a finite number >= 0 for resource-consistency metric; "
                "got {}.",
                value,
            )
        )
        .when(few)
        .then(
            sample_error(
                f"has {{}} repetition(s) with {columns}; resource-consistency metric needs at "
                "least 2.",
                n,
            )
        ),
        details=pl.struct(
            runs=n,
            mean=mean,
            stddev=std,
            min=usable.min().over(window),
            max=usable.max().over(window),
        ),
    )


TOOL_SEQUENCE = "tool_sequence"
"""The column of called tool names, in order (``List(String)``), trajectory-consistency reads;
without it, the names of the recorded ``trajectory``'s tool calls, or of a ``tool_calls``
list of structs."""
_SEQUENCE_KEY = "trajectory-consistency__sequence"


def _tool_sequence(frame: pl.DataFrame) -> pl.DataFrame:
    """Each row's tool names joined by U+001F (null when the frame records no tool calls)."""
    if TOOL_SEQUENCE in frame.columns:
        names = pl.col(TOOL_SEQUENCE).list.eval(pl.element().cast(pl.String))
    elif TRAJECTORY_COLUMN in frame.columns and frame.schema[TRAJECTORY_COLUMN] == TRAJECTORY:
        calls = pl.col(TRAJECTORY_COLUMN).struct.field("tool_calls")
        names = calls.list.eval(pl.element().struct.field("name"))
    elif "tool_calls" in frame.columns and isinstance(frame.schema["tool_calls"], pl.List):
        inner = frame.schema["tool_calls"].inner
        if not isinstance(inner, pl.Struct) or "name" not in [f.name for f in inner.fields]:
            return pl.DataFrame({"key": pl.Series([None] * frame.height, dtype=pl.String)})
        names = pl.col("tool_calls").list.eval(pl.element().struct.field("name").cast(pl.String))
    else:
        return pl.DataFrame({"key": pl.Series([None] * frame.height, dtype=pl.String)})
    return frame.select(key=names.list.join("\x1f"), steps=names.list.len().cast(pl.Int64))


def _sequence_derived(**_: object) -> list[Derived]:
    return [Derived(_SEQUENCE_KEY, _tool_sequence)]


@metric(
    "trajectory-consistency",
    family="reliability",
    dimension="trajectory",
    threshold=0.8,
    derived=_sequence_derived,
)
def trajectory_consistency() -> Scored:
    """Share of a row's repetitions that called the same tools in the same order as most did.

    Reads the ``tool_sequence`` column (tool names in call order) or, without it, the
    names of the recorded ``trajectory``'s tool calls, or of a ``tool_calls`` list. With k
    repetitions, m of which share the most common sequence, the score is ``m / k``; a
    repetition with no recorded sequence agrees with none.

    Returns:
        Float64 in (0, 1]; null (an error) when the row ran fewer than 2 times or the frame
        records no tool calls at all.

    Examples:
        >>> import itertools
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([{"id": "q", "input": {"q": "q"}, "expected_output": ""}],
        ...                              name="demo")
        >>> paths = itertools.cycle([["search", "book"], ["search", "book"], ["book"]])
        >>> run = ef.evaluate(ds, system=lambda s: {"output": "", "trajectory": {"tool_calls": next(paths)}},
        ...                   metrics=["trajectory-consistency"], repetitions=3, concurrency=1)
        >>> for row in run.scores.select("repetition", "score", "details").iter_rows():
        ...     print(*row)
        0 0.6666666666666666 {"runs":3,"identical":2,"distinct":2}
        1 0.6666666666666666 {"runs":3,"identical":2,"distinct":2}
        2 0.6666666666666666 {"runs":3,"identical":2,"distinct":2}
    """  # noqa: E501
    seq = pl.col(_SEQUENCE_KEY).struct.field("key")
    window = pl.col(C.SAMPLE_ID)
    runs = pl.len().over(window).cast(pl.Int64)
    modal = pl.col("trajectory-consistency__n").max().over(window).cast(pl.Int64)
    few = runs < 2
    none = seq.is_null().all()
    return Scored(
        score=pl.when(few | none).then(None).otherwise(modal / runs),
        error=pl.when(none)
        .then(
            sample_error(
                "has no tool_sequence, trajectory or tool_calls column for trajectory-consistency "
                "metric."
            )
        )
        .when(few)
        .then(_runs_error("trajectory-consistency", runs, "run(s)")),
        details=pl.struct(
            runs=runs,
            identical=modal,
            distinct=pl.col("trajectory-consistency__key").n_unique().over(window).cast(pl.Int64),
        ),
        prepare={
            "trajectory-consistency__key": pl.coalesce(
                seq, pl.format("\x00none {}", pl.col(C.REPETITION))
            ),
            "trajectory-consistency__n": pl.len().over(
                C.SAMPLE_ID, pl.coalesce(seq, pl.format("\x00none {}", pl.col(C.REPETITION)))
            ),
        },
    )
