"""Statistics for comparing runs: paired bootstrap intervals, McNemar's exact test, Holm.

NumPy only (no SciPy at run time); the tests check every function against SciPy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

__all__ = ["PairedCounts", "bootstrap_deltas", "holm", "mcnemar_exact", "percentile_interval"]

_CELLS: Final = 20_000_000  # replicate-by-row weights held at once (160 MB of float64 at most)

Floats = npt.NDArray[np.float64]


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for ``b`` and ``c`` discordant pairs.

    Under the null hypothesis the ``b + c`` discordant pairs split as Binomial(n, 1/2); the
    p-value is ``min(1, 2 P(X <= min(b, c)))``, which is SciPy's
    ``binomtest(b, b + c, 0.5).pvalue`` for this symmetric case.

    Examples:
        >>> round(mcnemar_exact(1, 9), 6)
        0.021484
        >>> mcnemar_exact(0, 0)
        1.0
    """
    if b < 0 or c < 0:
        raise ValueError(f"counts must be non-negative; got b={b}, c={c}")
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    if 2 * k >= n:
        return 1.0
    # log C(n, i) for i = 0..k by the recurrence C(n, i+1) = C(n, i) (n - i) / (i + 1).
    i = np.arange(k, dtype=np.float64)
    log_c = np.concatenate(([0.0], np.cumsum(np.log(n - i) - np.log(i + 1))))
    log_p = log_c - n * math.log(2.0)
    top = float(log_p.max())
    cdf = math.exp(top) * float(np.exp(log_p - top).sum())
    return min(1.0, 2.0 * cdf)


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm-Bonferroni adjusted p-values (step-down), in the input order; None stays None.

    Examples:
        >>> holm([0.01, 0.04, 0.03, None])
        [0.03, 0.06, 0.06, None]
    """
    present = [(p, i) for i, p in enumerate(p_values) if p is not None]
    m = len(present)
    out: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(sorted(present)):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out


def percentile_interval(replicates: Floats, confidence: float) -> tuple[Floats, Floats]:
    """Per-column percentile interval of bootstrap replicates (NaN replicates ignored)."""
    alpha = 1.0 - confidence
    low = np.full(replicates.shape[1], np.nan)
    high = np.full(replicates.shape[1], np.nan)
    for j in range(replicates.shape[1]):
        column = replicates[:, j]
        column = column[np.isfinite(column)]
        if column.size:
            low[j], high[j] = np.quantile(column, [alpha / 2, 1 - alpha / 2])
    return low, high


@dataclass(frozen=True)
class PairedCounts:
    """Per paired row and metric, the sums each side's statistics are ratios of.

    Arrays are (rows, metrics): the sum of scores, the number of scored executions, the
    number of passing executions and of attempted ones (errored included), before and after.
    """

    sum_a: Floats
    n_a: Floats
    pass_a: Floats
    sum_b: Floats
    n_b: Floats
    pass_b: Floats
    runs_a: Floats
    runs_b: Floats

    @property
    def shape(self) -> tuple[int, int]:
        rows, metrics = self.sum_a.shape
        return int(rows), int(metrics)


def _ratio(num: Floats, den: Floats) -> Floats:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def _statistics(weighted: Floats, metrics: int, quality: Floats) -> Floats:
    """Mean deltas, pass-rate deltas (per metric) and the macro-F1 delta from weighted sums.

    ``weighted`` is (replicates, 8 * metrics), the eight sums in ``PairedCounts`` order. Pass
    rates are over attempted executions (an errored one did not pass) and macro-F1 averages
    them over the ``quality`` metrics (a 0/1 mask), as ``aggregate`` does.
    """
    sa, na, pa, sb, nb, pb, ra, rb = (
        weighted[:, k * metrics : (k + 1) * metrics] for k in range(8)
    )
    mean_delta = _ratio(sb, nb) - _ratio(sa, na)
    rate_a, rate_b = _ratio(pa, ra), _ratio(pb, rb)
    pass_delta = rate_b - rate_a
    kept = max(1.0, float(quality.sum()))
    macro = ((np.nan_to_num(rate_b) - np.nan_to_num(rate_a)) * quality).sum(axis=1) / kept
    if not quality.any():
        macro = np.full(weighted.shape[0], np.nan)
    return np.column_stack([mean_delta, pass_delta, macro])


def bootstrap_deltas(
    counts: PairedCounts,
    quality: Sequence[bool] | None = None,
    *,
    n_resamples: int,
    seed: int,
    confidence: float,
) -> dict[str, Floats]:
    """Paired bootstrap of every metric's mean and pass-rate delta and the macro-F1 delta.

    Rows are resampled with replacement (the same rows on both sides, so each replicate
    keeps the pairing); each replicate recomputes the pooled statistics from the resampled
    sums. Intervals are percentile intervals; with fewer than two paired rows there is no
    spread to resample and every interval is undefined (NaN). ``quality`` marks the metrics
    macro-F1 averages (default: every metric).

    Returns:
        ``point``, ``low`` and ``high``, each of length ``2 * metrics + 1``: mean deltas,
        then pass-rate deltas, then the macro-F1 delta.
    """
    rows, metrics = counts.shape
    mask = np.asarray(quality if quality is not None else [True] * metrics, dtype=np.float64)
    stacked = np.hstack(
        [counts.sum_a, counts.n_a, counts.pass_a, counts.sum_b, counts.n_b, counts.pass_b,
         counts.runs_a, counts.runs_b]
    ).astype(np.float64)  # fmt: skip
    point = _statistics(stacked.sum(axis=0, keepdims=True), metrics, mask)[0]
    width = 2 * metrics + 1
    if rows < 2 or n_resamples < 1:
        nan = np.full(width, np.nan)
        return {"point": point, "low": nan, "high": nan.copy()}
    rng = np.random.default_rng(seed)
    chunk = max(1, min(n_resamples, _CELLS // rows))
    replicates = np.empty((n_resamples, width))
    done = 0
    while done < n_resamples:
        size = min(chunk, n_resamples - done)
        picks = rng.integers(0, rows, size=(size, rows))
        offsets = (np.arange(size)[:, None] * rows + picks).ravel()
        weights = np.bincount(offsets, minlength=size * rows).reshape(size, rows)
        replicates[done : done + size] = _statistics(weights @ stacked, metrics, mask)
        done += size
    low, high = percentile_interval(replicates, confidence)
    return {"point": point, "low": low, "high": high}
