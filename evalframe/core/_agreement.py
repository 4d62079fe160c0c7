"""Agreement between a judge and human labels: percent agreement, confusion, Cohen's kappa
with its confidence interval, weighted kappa for graded labels, and Spearman's rank
correlation.

Pure functions over NumPy arrays. Where a statistic is undefined (no case, a rater that
gave one value, an input without variation) it is ``None`` with the reason, never a number
that would mislead: a constant judge has no kappa, not a kappa of 0 with an interval [0, 0].
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "Confusion",
    "Correlation",
    "Kappa",
    "cohen_kappa",
    "confusion",
    "percent_agreement",
    "spearman",
    "weighted_kappa",
]

Z95 = 1.959963984540054  # the standard normal's 97.5th percentile


@dataclass(frozen=True, slots=True)
class Confusion:
    """Pass/fail verdicts crossed: ``false_pass`` is a human fail the judge passed."""

    true_pass: int
    true_fail: int
    false_pass: int
    false_fail: int

    def as_dict(self) -> dict[str, int]:
        return {
            "true_pass": self.true_pass,
            "true_fail": self.true_fail,
            "false_pass": self.false_pass,
            "false_fail": self.false_fail,
        }


@dataclass(frozen=True, slots=True)
class Kappa:
    """A kappa and its 95% confidence interval; ``None`` when undefined, ``reason`` saying
    why."""

    kappa: float | None
    low: float | None
    high: float | None
    reason: str | None = None

    def as_dict(self) -> dict[str, float | str | None]:
        return {"kappa": self.kappa, "low": self.low, "high": self.high, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class Correlation:
    """A rank correlation; ``None`` when undefined, ``reason`` saying why."""

    rho: float | None
    reason: str | None = None


NO_CASE = "undefined: no case was scored"


def percent_agreement(human: npt.NDArray[np.bool_], judge: npt.NDArray[np.bool_]) -> float | None:
    """Share of cases where both verdicts agree; None for no case (there is no share).

    Examples:
        >>> import numpy as np
        >>> percent_agreement(np.array([True, False]), np.array([True, True]))
        0.5
    """
    if len(human) == 0:
        return None
    return float((human == judge).mean())


def _one_value(values: npt.NDArray[np.int64]) -> bool:
    return len(values) > 0 and bool((values == values[0]).all())


def constant_reason(
    human: npt.NDArray[np.int64], judge: npt.NDArray[np.int64], labels: str = "verdict"
) -> str | None:
    """Why agreement beyond chance is undefined for these ratings, or None when it is not:
    no case, or a side that gave one value (there is no chance agreement to improve on)."""
    if len(human) == 0:
        return NO_CASE
    if _one_value(judge):
        return f"undefined: the judge gave one {labels} on every case"
    if _one_value(human):
        return f"undefined: the human labels have one {labels} on every case"
    return None


def confusion(human: npt.NDArray[np.bool_], judge: npt.NDArray[np.bool_]) -> Confusion:
    """The 2x2 table of pass (True) and fail (False) verdicts."""
    return Confusion(
        true_pass=int((human & judge).sum()),
        true_fail=int((~human & ~judge).sum()),
        false_pass=int((~human & judge).sum()),
        false_fail=int((human & ~judge).sum()),
    )


def _table(
    human: npt.NDArray[np.int64], judge: npt.NDArray[np.int64], k: int
) -> npt.NDArray[np.float64]:
    import numpy as np

    table = np.zeros((k, k), dtype=np.float64)
    np.add.at(table, (human, judge), 1.0)
    shares: npt.NDArray[np.float64] = table / table.sum()
    return shares


def cohen_kappa(human: npt.NDArray[np.int64], judge: npt.NDArray[np.int64], k: int) -> Kappa:
    """Cohen's kappa of two raters over categories ``0..k-1``, with a 95% interval.

    The interval uses the large-sample variance of Fleiss, Cohen and Everitt (1969), the
    one most statistics packages report. Undefined (``None``, with the reason) with no case,
    or when either rater used one category: kappa measures agreement beyond chance, and a
    constant rater leaves none to measure (it would read 0 with an interval [0, 0]).

    Examples:
        >>> import numpy as np
        >>> cohen_kappa(np.array([1, 0, 1]), np.array([1, 1, 1]), 2).reason
        'undefined: the judge gave one verdict on every case'
    """
    import numpy as np

    n = len(human)
    why = constant_reason(human, judge)
    if why is not None:
        return Kappa(None, None, None, why)
    p = _table(human, judge, k)
    rows, cols = p.sum(axis=1), p.sum(axis=0)
    po = float(np.trace(p))
    pe = float(rows @ cols)
    if pe >= 1.0 - 1e-12:  # unreachable once both raters vary; kept as a guard
        return Kappa(None, None, None, "undefined: chance agreement is already perfect")
    kappa = (po - pe) / (1.0 - pe)
    diag = np.diag(p)
    first = float((diag * (1.0 - (rows + cols) * (1.0 - kappa)) ** 2).sum())
    off = p.copy()
    np.fill_diagonal(off, 0.0)
    second = (1.0 - kappa) ** 2 * float((off * (cols[:, None] + rows[None, :]) ** 2).sum())
    third = (kappa - pe * (1.0 - kappa)) ** 2
    variance = max(first + second - third, 0.0) / (n * (1.0 - pe) ** 2)
    half = Z95 * math.sqrt(variance)
    return Kappa(kappa, max(-1.0, kappa - half), min(1.0, kappa + half))


def weighted_kappa(
    human: npt.NDArray[np.int64],
    judge: npt.NDArray[np.int64],
    k: int,
    weights: Literal["linear", "quadratic"] = "quadratic",
) -> float | None:
    """Weighted kappa over ordered grades ``0..k-1``: near misses cost less than far ones.

    ``1 - sum(w * observed) / sum(w * expected)`` with ``w = |i - j|`` (linear) or
    ``(i - j)^2`` (quadratic). ``None`` with no cases or no expected disagreement (a rater
    that gave one grade): ``constant_reason`` says why.
    """
    import numpy as np

    if len(human) == 0 or k < 2 or constant_reason(human, judge, "grade") is not None:
        return None
    p = _table(human, judge, k)
    expected = np.outer(p.sum(axis=1), p.sum(axis=0))
    i, j = np.indices((k, k))
    w = np.abs(i - j).astype(np.float64)
    if weights == "quadratic":
        w = w**2
    denominator = float((w * expected).sum())
    if denominator <= 1e-12:
        return None
    return 1.0 - float((w * p).sum()) / denominator


def _ranks(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Ranks from 1, ties given the average of the ranks they span."""
    import numpy as np

    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    ends = np.r_[starts[1:], len(values)]
    average = (starts + ends + 1) / 2.0  # mean of the ranks starts+1 .. ends
    ranks = np.empty(len(values), dtype=np.float64)
    ranks[order] = np.repeat(average, ends - starts)
    return ranks


def spearman(
    x: npt.NDArray[np.float64],
    y: npt.NDArray[np.float64],
    names: tuple[str, str] = ("first value", "second value"),
) -> Correlation:
    """Spearman's rank correlation, clamped to [-1, 1]; undefined (``rho`` None, with the
    reason naming the side, as ``names`` call them) for fewer than two cases or a side
    without variation, where eval-harness wrote 0.

    Examples:
        >>> import numpy as np
        >>> spearman(np.array([1.0, 2.0, 3.0]), np.array([0.1, 0.5, 0.4])).rho
        0.5
        >>> spearman(np.array([4.0, 4.0]), np.array([0.1, 0.5]), ("answer length", "score"))
        Correlation(rho=None, reason='undefined: every answer length is the same')
    """
    import numpy as np

    if len(x) < 2:
        return Correlation(None, "undefined: fewer than two cases")
    rx, ry = _ranks(np.asarray(x, np.float64)), _ranks(np.asarray(y, np.float64))
    dx, dy = rx - rx.mean(), ry - ry.mean()
    for spread, name in ((dx, names[0]), (dy, names[1])):
        if not (spread * spread).sum():
            return Correlation(None, f"undefined: every {name} is the same")
    denominator = math.sqrt(float((dx * dx).sum()) * float((dy * dy).sum()))
    return Correlation(max(-1.0, min(1.0, float((dx * dy).sum()) / denominator)))
