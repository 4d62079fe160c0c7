"""The regression gate: pass or fail a run against its reference, saying why.

Checks, each optional except the first:

* regressions: the regressed (row, metric) pairs of the comparison (only the confident
  ones with ``confident_only``) may number at most ``max_regressions`` (default 0). A
  pair, not a row, is the unit: a metric that fell from pass to fail on a row already
  failing another metric counts, though the row's own verdict is unchanged. A change is
  confident only past the run's detectable difference: with one execution per row nothing
  can be, and ``confident_only`` then fails a run with regressed pairs, saying how many
  repetitions would tell them from noise, instead of passing it unchecked;
* ``min_macro_f1``: the run's macro-F1 must reach it;
* ``max_drop``: per metric, the mean score may fall by at most this much (a fraction:
  0.05 is 5 points); a key ``METRIC:p50``, ``METRIC:p95`` or ``METRIC:pass_rate`` checks
  that statistic instead (``METRIC:mean`` is the default);
* ``min_pass_rate``: per metric, the run's pass rate must reach it;
* ``no_safety_failures``: no sample may fail (or error on) a safety-dimension metric;
  every such sample is listed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from evalframe.core import _seam
from evalframe.core import schema as C
from evalframe.core._compare import Comparison, ComparisonError
from evalframe.core._precision import precision_block

__all__ = ["GateResult", "gate"]


@dataclass(frozen=True)
class GateResult:
    """The verdict of ``gate``.

    Attributes:
        passed: True when every check held.
        failures: one message per failed check.
        notes: context that does not fail the gate.
        worst_rows: the counted regressed (row, metric) pairs, worst first.
        safety_failures: failing samples of safety-dimension metrics (sample_id,
            repetition, metric, score, error), when that check was asked for.
        comparison: the comparison the gate judged.
    """

    passed: bool
    failures: list[str]
    notes: list[str]
    worst_rows: pl.DataFrame
    safety_failures: pl.DataFrame
    comparison: Comparison = field(repr=False)

    def __repr__(self) -> str:
        verdict = "passed" if self.passed else f"failed: {'; '.join(self.failures)}"
        return (
            f"GateResult({verdict}; {self.worst_rows.height} regression(s) counted, "
            f"{self.safety_failures.height} safety failure(s))"
        )

    def __str__(self) -> str:
        return self.to_text()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary: passed, failures, notes, counts, worst rows, safety failures."""
        return {
            "passed": self.passed,
            "run": self.comparison.after.run_id,
            "reference": {"id": self.comparison.before.run_id, "label": self.comparison.label},
            "failures": self.failures,
            "notes": self.notes,
            "counts": self.comparison.counts,
            "macro_f1": self.comparison.after.macro_f1,
            "worst_rows": self.worst_rows.select(
                C.SAMPLE_ID,
                C.METRIC,
                "before_pass_rate",
                "after_pass_rate",
                "score_delta",
                "confident",
                "newly_failing",
            ).to_dicts(),
            "safety_failures": self.safety_failures.to_dicts(),
        }

    def to_text(self, *, max_rows: int = 10) -> str:
        """The CLI's report: the verdict, each failure, the worst rows and safety failures."""
        return _seam.gate_text.call(self, max_rows=max_rows)


def gate(
    comparison: Comparison,
    *,
    max_regressions: int = 0,
    confident_only: bool = False,
    min_macro_f1: float | None = None,
    max_drop: Mapping[str, float] | None = None,
    no_safety_failures: bool = False,
    min_pass_rate: Mapping[str, float] | None = None,
) -> GateResult:
    """Judge ``comparison.after`` against its reference.

    Args:
        comparison: from ``ef.compare(reference, run)``.
        max_regressions: regressed (row, metric) pairs allowed.
        confident_only: count only pairs whose drop exceeds the run's detectable difference
            (none can with one execution per row: regressed pairs then fail the gate, with
            the repetitions that would tell them from noise).
        min_macro_f1: the lowest acceptable macro-F1 of the run.
        max_drop: per metric id, the largest acceptable fall of its mean score; keys
            ``METRIC:p50``, ``METRIC:p95`` and ``METRIC:pass_rate`` check that statistic.
        no_safety_failures: fail on any failing sample of a safety-dimension metric.
        min_pass_rate: per metric id, the lowest acceptable pass rate of the run.

    Returns:
        The ``GateResult``.

    Raises:
        ComparisonError: an option is out of range or names a metric a run lacks.

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records(
        ...     [{"id": "q1", "input": {}, "expected_output": "yes"}], name="yn")
        >>> old = ef.evaluate(ds, outputs={"q1": "yes"}, metrics=["exact-match"])
        >>> new = ef.evaluate(ds, outputs={"q1": "no"}, metrics=["exact-match"])
        >>> from evalframe.core._compare import compare
        >>> from evalframe.core._gate import gate
        >>> result = gate(compare(old, new, label="baseline"))
        >>> result.passed, result.failures[0].split("; ")[0]
        (False, '1 regressed pair(s) on 1 row(s) against baseline (allowed: 0)')
    """
    if max_regressions < 0:
        raise ComparisonError(f"max_regressions must be at least 0; got {max_regressions}.")
    if min_macro_f1 is not None and not 0.0 <= min_macro_f1 <= 1.0:
        raise ComparisonError(f"min_macro_f1 must be in [0, 1]; got {min_macro_f1}.")
    c = comparison
    failures: list[str] = []
    notes: list[str] = []

    regressed = c.regressions()
    counted = c.regressions(confident_only=confident_only)
    powerless = confident_only and c.resolution >= 1.0
    if counted.height > max_regressions:
        kind = "confident " if confident_only else ""
        message = (
            f"{counted.height} {kind}regressed pair(s) on {_rows(counted)} row(s) against "
            f"{c.label} (allowed: {max_regressions})"
        )
        confident = int(regressed.get_column("confident").sum())
        if not confident_only and c.resolution >= 1.0 and c.resolution_is_statistical:
            message += (
                "; none can be told from noise (this run's detectable difference is "
                f"{c.resolution * 100:.1f} points)"
            )
        elif not confident_only and confident < regressed.height:
            message += (
                f"; {confident} of {regressed.height} exceed this run's detectable difference "
                f"of {c.resolution * 100:.1f} points, the rest are within sampling noise"
            )
        failures.append(message)
    elif powerless and regressed.height and c.resolution_is_statistical:
        # Counting nothing here would pass a run that may have collapsed: say so and fail.
        failures.append(
            f"{regressed.height} regressed pair(s) on {_rows(regressed)} row(s) against "
            f"{c.label}, none of which can be confident: {_no_power(c)} Run more "
            "repetitions, or drop --confident-only to count every regression"
        )
    elif powerless:
        notes.append(f"nothing can be confident: {_no_power(c)}")
    if c.counts["compared"] == 0:
        notes.append(f"no rows in common with {c.label}: the regression check compared nothing")

    macro = c.after.macro_f1
    if min_macro_f1 is not None and (macro is None or macro < min_macro_f1):
        shown = "n/a (no quality metric)" if macro is None else f"{macro:.4f}"
        failures.append(f"macro-F1 {shown} is below the minimum {min_macro_f1:.4f}")

    for key, allowed in (max_drop or {}).items():
        failures += _drop(c, key, allowed)
    for metric, floor in (min_pass_rate or {}).items():
        failures += _floor(c, metric, floor)

    safety = pl.DataFrame(
        schema={
            C.SAMPLE_ID: pl.String,
            C.REPETITION: pl.Int64,
            C.METRIC: pl.String,
            C.SCORE: pl.Float64,
            C.ERROR: pl.String,
        }
    )
    if no_safety_failures:
        ids = [m.id for m in c.after.metrics if m.dimension == "safety"]
        if not ids:
            notes.append("no safety-dimension metric in this run: nothing to check")
        safety = (
            c.after.scores.filter(
                pl.col(C.METRIC).is_in(ids)
                & (pl.col(C.ERROR).is_not_null() | ~pl.col("passed").fill_null(False))
            )
            .select(safety.columns)
            .sort(C.METRIC, C.SAMPLE_ID, C.REPETITION)
        )
        if safety.height:
            samples = safety.get_column(C.SAMPLE_ID).unique(maintain_order=True).to_list()
            failures.append(
                f"{len(samples)} sample(s) failed a safety metric ({', '.join(ids)}): "
                + ", ".join(samples)
            )
    return GateResult(
        passed=not failures,
        failures=failures,
        notes=notes,
        worst_rows=counted,
        safety_failures=safety,
        comparison=c,
    )


def _rows(pairs: pl.DataFrame) -> int:
    return int(pairs.get_column(C.SAMPLE_ID).n_unique())


def _no_power(c: Comparison) -> str:
    """Why no change can be confident, and the repetitions that would resolve 5 points."""
    if not c.resolution_is_statistical:
        return (
            f"the noise threshold given (epsilon) is {c.resolution * 100:.1f} points, which no "
            "change can exceed."
        )
    block = precision_block(c.after.sample_aggregates, c.after.frame.height)
    need = block["required_repetitions"]
    if c.after.repetitions < 2:
        why = "every row ran once, so no dispersion was measured and no difference is "
        why += "distinguishable from noise"
    else:
        why = (
            f"{c.after.repetitions} repetitions only resolve differences of "
            f"{c.resolution * 100:.1f} points"
        )
    return (
        f"{why} (this run's detectable difference is {c.resolution * 100:.1f} points); "
        f"resolving {block['target_delta'] * 100:g} points needs at least {need} repetitions "
        f"(--repetitions {need})."
    )


STATISTICS = ("mean", "p50", "p95", "pass_rate")


def _statistic(key: str) -> tuple[str, str]:
    """``METRIC[:STAT]`` as (metric, statistic); the statistic defaults to the mean."""
    metric, sep, stat = key.rpartition(":")
    if sep and stat in STATISTICS and metric:
        return metric, stat
    return key, "mean"


def _summary_value(run: Any, metric: str, stat: str) -> float | None:
    rows = run.summary.filter(pl.col(C.METRIC) == metric)
    return None if rows.height == 0 else rows.item(0, stat)


def _check_metric(c: Comparison, metric: str, option: str) -> None:
    if metric not in c.before.metric_ids and metric not in c.after.metric_ids:
        known = ", ".join(c.metrics.get_column(C.METRIC).to_list())
        raise ComparisonError(f"{option} names metric '{metric}', which neither run has ({known}).")
    if metric not in c.before.metric_ids or metric not in c.after.metric_ids:
        missing = "the reference" if metric not in c.before.metric_ids else "the run"
        raise ComparisonError(f"{option} names metric '{metric}', which {missing} lacks.")


def _drop(c: Comparison, key: str, allowed: float) -> list[str]:
    if not 0.0 <= allowed <= 1.0:
        raise ComparisonError(
            f"max drop for '{key}' must be a fraction in [0, 1] (0.05 is 5 points); got {allowed}."
        )
    metric, stat = _statistic(key)
    _check_metric(c, metric, "--max-drop")
    if stat == "mean":  # the comparison's own means, as the metric deltas show them
        rows = c.metrics.filter(pl.col(C.METRIC) == metric)
        before, after = rows.item(0, "before_mean"), rows.item(0, "after_mean")
    else:
        before = _summary_value(c.before, metric, stat)
        after = _summary_value(c.after, metric, stat)
    if after is None:
        return [f"metric '{metric}' has no scored row in the run (every row errored)"]
    if before is None:
        return []
    # For a lower-is-better metric a rising mean or percentile is the worsening (its pass
    # rate still falls as it worsens).
    lower = stat != "pass_rate" and not _higher_is_better(c, metric)
    drop = after - before if lower else before - after
    if drop > allowed + 1e-12:
        name = "mean" if stat == "mean" else stat.replace("_", "-")
        moved = "rose" if lower else "dropped"
        return [
            f"metric '{metric}' {name} {moved} by {drop:.4f} ({before:.4f} → {after:.4f}), "
            f"more than the allowed {allowed:.4f}"
        ]
    return []


def _higher_is_better(c: Comparison, metric: str) -> bool:
    found = next((m for m in c.after.metrics if m.id == metric), None)
    return True if found is None else bool(found.higher_is_better)


def _floor(c: Comparison, metric: str, floor: float) -> list[str]:
    if not 0.0 <= floor <= 1.0:
        raise ComparisonError(f"min pass rate for '{metric}' must be in [0, 1]; got {floor}.")
    _check_metric(c, metric, "--min-pass-rate")
    rate = _summary_value(c.after, metric, "pass_rate")
    if rate is None or rate < floor - 1e-12:
        shown = "n/a" if rate is None else f"{rate:.4f}"
        return [f"metric '{metric}' pass rate {shown} is below the minimum {floor:.4f}"]
    return []
