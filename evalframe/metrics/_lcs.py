"""The bit-parallel LCS kernel and ROUGE-L over whole columns (reference §2.4).

The LCS length of every (expected, actual) pair is computed with the bit-vector algorithm of
Allison and Dix, in Hyyrö's formulation: one bit per token of the shorter sequence, and for
each token ``t`` of the longer one ``U = V & M[t]; V = (V + U) | (V - U)``, starting from
``V = ~0``; the LCS length is the number of zero bits of ``V``. Sequences longer than 64
tokens use several words, with the carry of the addition handed from word to word.

The kernels run on one thread (``nogil``, so a caller may run batches in threads). Numba's
``parallel=True`` is not used: a batch of ROUGE-L pairs takes milliseconds, and a second
thread pool next to Polars' own would oversubscribe the cores for little gain.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from evalframe.exceptions import MetricError
from evalframe.metrics._text import intern_texts, njit_cached

__all__ = ["lcs_lengths", "rouge_l"]

_ONE = np.uint64(1)
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)
_S1, _S2, _S4, _S56 = np.uint64(1), np.uint64(2), np.uint64(4), np.uint64(56)


@njit_cached
def _popcount(x: Any) -> int:
    x = x - ((x >> _S1) & _M1)
    x = (x & _M2) + ((x >> _S2) & _M2)
    x = (x + (x >> _S4)) & _M4
    return int((x * _H01) >> _S56)


@njit_cached
def _low_bits(n: int) -> Any:
    """A word whose ``n`` (1..64) lowest bits are set."""
    return _ALL if n >= 64 else (_ONE << np.uint64(n)) - _ONE


@njit_cached
def _lcs_pair(
    short: Any, s0: int, s1: int, long: Any, l0: int, l1: int, peq: Any, carry: Any
) -> int:
    """LCS length of ``short[s0:s1]`` and ``long[l0:l1]`` (``s1 - s0 >= 1``)."""
    m = s1 - s0
    if m <= 64:
        for k in range(m):
            peq[short[s0 + k]] |= _ONE << np.uint64(k)
        v = _ALL
        for j in range(l0, l1):
            u = v & peq[long[j]]
            v = (v + u) | (v - u)
        for k in range(m):
            peq[short[s0 + k]] = 0
        return _popcount(~v & _low_bits(m))
    # Word by word, low to high: carry[j] is the carry out of the previous word at step j.
    carry[: l1 - l0] = 0
    total = 0
    for w0 in range(s0, s1, 64):
        w1 = min(w0 + 64, s1)
        for k in range(w1 - w0):
            peq[short[w0 + k]] |= _ONE << np.uint64(k)
        v = _ALL
        for j in range(l0, l1):
            u = v & peq[long[j]]
            x = v + u
            y = x + carry[j - l0]
            carry[j - l0] = np.uint64((x < v) | (y < x))
            # V - U never borrows (U is a subset of V's bits), so it stays word-local.
            v = y | (v - u)
        total += _popcount(~v & _low_bits(w1 - w0))
        for k in range(w1 - w0):
            peq[short[w0 + k]] = 0
    return total


@njit_cached
def _lcs_kernel(a_ids: Any, a_off: Any, b_ids: Any, b_off: Any, active: Any) -> Any:
    n = len(a_off) - 1
    out = np.zeros(n, dtype=np.int64)
    vocab = 0
    longest = 0
    for i in range(n):
        if active[i]:
            for k in range(a_off[i], a_off[i + 1]):
                vocab = max(vocab, a_ids[k] + 1)
            for k in range(b_off[i], b_off[i + 1]):
                vocab = max(vocab, b_ids[k] + 1)
            longest = max(longest, a_off[i + 1] - a_off[i], b_off[i + 1] - b_off[i])
    # Match masks indexed by token id; only the bits of the current pair are ever set, and
    # they are cleared token by token afterwards, so no pair pays for the vocabulary size.
    peq = np.zeros(vocab, dtype=np.uint64)
    carry = np.zeros(longest, dtype=np.uint64)
    for i in range(n):
        a0, a1, b0, b1 = a_off[i], a_off[i + 1], b_off[i], b_off[i + 1]
        if not active[i] or a1 == a0 or b1 == b0:
            continue
        # The shorter side is the bit vector: fewer words.
        if a1 - a0 <= b1 - b0:
            out[i] = _lcs_pair(a_ids, a0, a1, b_ids, b0, b1, peq, carry)
        else:
            out[i] = _lcs_pair(b_ids, b0, b1, a_ids, a0, a1, peq, carry)
    return out


def _check_pairs(
    a_ids: npt.ArrayLike, a_offsets: npt.ArrayLike, b_ids: npt.ArrayLike, b_offsets: npt.ArrayLike
) -> tuple[Any, Any, Any, Any]:
    a_off = np.ascontiguousarray(a_offsets, dtype=np.int64)
    b_off = np.ascontiguousarray(b_offsets, dtype=np.int64)
    if a_off.ndim != 1 or len(a_off) == 0 or a_off.shape != b_off.shape:
        msg = (
            "lcs_lengths() expects two offset arrays of the same length n + 1 >= 1; got "
            f"shapes {a_off.shape} and {b_off.shape}."
        )
        raise ValueError(msg)
    a = np.asarray(a_ids)
    b = np.asarray(b_ids)
    for name, ids, off in (("a", a, a_off), ("b", b, b_off)):
        if ids.ndim != 1 or off[-1] > len(ids) or np.any(np.diff(off) < 0) or off[0] < 0:
            msg = f"lcs_lengths(): {name}_offsets must be non-decreasing within {name}_ids."
            raise ValueError(msg)
        if len(ids) and (ids.dtype.kind not in "iu" or ids.min() < 0):
            msg = f"lcs_lengths(): {name}_ids must be non-negative integers; got {ids.dtype}."
            raise ValueError(msg)
    top = max(int(a.max(initial=0)), int(b.max(initial=0)))
    if top >= 2 * (len(a) + len(b)) + (1 << 16):
        # The kernel keeps one mask per id up to the largest: renumber sparse ids densely.
        _, dense = np.unique(np.concatenate([a, b]), return_inverse=True)
        a, b = dense[: len(a)], dense[len(a) :]
    return (
        np.ascontiguousarray(a, dtype=np.int32),
        a_off,
        np.ascontiguousarray(b, dtype=np.int32),
        b_off,
    )


def lcs_lengths(
    a_ids: npt.ArrayLike, a_offsets: npt.ArrayLike, b_ids: npt.ArrayLike, b_offsets: npt.ArrayLike
) -> npt.NDArray[np.int64]:
    """Length of the longest common subsequence of every pair of id sequences.

    Pair ``i`` is ``a_ids[a_offsets[i]:a_offsets[i + 1]]`` against
    ``b_ids[b_offsets[i]:b_offsets[i + 1]]`` (Arrow-style offsets, as :func:`intern` returns).
    Runs in O(n·⌈m/64⌉) per pair for lengths m <= n, for any length.

    Args:
        a_ids: Non-negative integer token ids, flat.
        a_offsets: ``n + 1`` non-decreasing offsets into ``a_ids``.
        b_ids: Non-negative integer token ids, flat.
        b_offsets: ``n + 1`` non-decreasing offsets into ``b_ids``.

    Returns:
        ``int64`` array of the ``n`` LCS lengths; 0 where a side is empty.

    Raises:
        ValueError: The offsets do not describe ``n`` pairs within the id arrays.

    Examples:
        >>> lcs_lengths([1, 2, 3, 4, 9], [0, 4, 5], [1, 3, 4, 2, 5], [0, 4, 5]).tolist()
        [3, 0]
    """
    a, a_off, b, b_off = _check_pairs(a_ids, a_offsets, b_ids, b_offsets)
    active = np.ones(len(a_off) - 1, dtype=np.bool_)
    result: npt.NDArray[np.int64] = _lcs_kernel(a, a_off, b, b_off, active)
    return result


def rouge_l(
    expected: pl.Series, actual: pl.Series, *, beta: float = 1.0, max_tokens: int = 1024
) -> pl.DataFrame:
    """ROUGE-L of every (expected, actual) pair of texts, with its parts.

    Both texts are tokenised with the shared tokeniser (§2.0). With LCS the length of their
    longest common token subsequence, P = LCS/|actual| and R = LCS/|expected|, the score is
    the F-measure (1+β²)PR / (R + β²P), 0 when P + R = 0 (β = 1 gives F1), clamped to [0, 1].
    Both sides empty score 1.0 with P = R = 1.0; exactly one side empty scores 0.0 with
    P = R = 0.0.

    A field with more than ``max_tokens`` tokens is not scored: ``over_cap`` names it
    (``expected_output`` is checked first) and ``lcs_tokens``, ``precision``, ``recall`` and
    ``score`` are null. A null text gives a null token count for that side and nulls for
    everything that needs both; a null field is never over the cap.

    Args:
        expected: String Series of reference texts.
        actual: String Series of candidate texts, row-aligned with ``expected``.
        beta: Weight of recall relative to precision, > 0.
        max_tokens: Largest token count allowed per field, >= 1.

    Returns:
        A frame row-aligned with the inputs with columns ``expected_tokens``,
        ``actual_tokens``, ``lcs_tokens`` (Int64), ``precision``, ``recall``, ``score``
        (Float64) and ``over_cap`` (String).

    Raises:
        MetricError: ``beta`` or ``max_tokens`` is out of range.
        ValueError: The inputs differ in length.

    Examples:
        >>> import polars as pl
        >>> out = rouge_l(
        ...     pl.Series(["The cat sat on the mat", "", "a b", None]),
        ...     pl.Series(["the cat on a mat", "", "", "x"]),
        ... )
        >>> out.select("lcs_tokens", "precision", "recall", "score").rows()
        [(4, 0.8, 0.6666666666666666, 0.7272727272727272), (0, 1.0, 1.0, 1.0), (0, 0.0, 0.0, 0.0), (None, None, None, None)]
    """  # noqa: E501
    if not (isinstance(beta, int | float) and math.isfinite(beta) and beta > 0):
        msg = f"Metric 'rouge-l' parameter 'beta' must be a finite number > 0; got {beta!r}."
        raise MetricError(msg)
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise MetricError("ROUGE-L max token count must be at least 1.")
    if len(expected) != len(actual):
        msg = f"rouge_l() expects row-aligned Series; got {len(expected)} and {len(actual)} rows."
        raise ValueError(msg)

    (e_ids, e_off), (a_ids, a_off) = intern_texts(expected, actual)
    e_len = np.diff(e_off)
    a_len = np.diff(a_off)
    e_ok = expected.is_not_null().to_numpy()
    a_ok = actual.is_not_null().to_numpy()
    e_over = e_ok & (e_len > max_tokens)
    a_over = a_ok & (a_len > max_tokens)
    scored = e_ok & a_ok & ~e_over & ~a_over
    lcs = _lcs_kernel(e_ids, e_off, a_ids, a_off, scored)

    b2 = float(beta) ** 2
    ne, na, lcs_col = pl.col("_ne"), pl.col("_na"), pl.col("_lcs")
    both_empty = (ne == 0) & (na == 0)
    one_empty = (ne == 0) | (na == 0)
    precision = pl.when(both_empty).then(1.0).when(one_empty).then(0.0).otherwise(lcs_col / na)
    recall = pl.when(both_empty).then(1.0).when(one_empty).then(0.0).otherwise(lcs_col / ne)
    p, r = pl.col("precision"), pl.col("recall")
    f = pl.when(p + r > 0).then((1.0 + b2) * p * r / (r + b2 * p)).otherwise(0.0)
    scored_col = pl.col("_scored")
    parts = pl.DataFrame(
        {
            "_ne": e_len,
            "_na": a_len,
            "_lcs": lcs,
            "_e_ok": e_ok,
            "_a_ok": a_ok,
            "_e_over": e_over,
            "_a_over": a_over,
            "_scored": scored,
        }
    )
    return parts.select(
        pl.when(pl.col("_e_ok")).then(ne).alias("expected_tokens"),
        pl.when(pl.col("_a_ok")).then(na).alias("actual_tokens"),
        pl.when(scored_col).then(lcs_col).alias("lcs_tokens"),
        pl.when(scored_col).then(precision).alias("precision"),
        pl.when(scored_col).then(recall).alias("recall"),
        scored_col,
        pl.when(pl.col("_e_over"))
        .then(pl.lit("expected_output"))
        .when(pl.col("_a_over"))
        .then(pl.lit("actual_output"))
        .alias("over_cap"),
    ).select(
        "expected_tokens",
        "actual_tokens",
        "lcs_tokens",
        "precision",
        "recall",
        pl.when(scored_col).then(f.clip(0.0, 1.0)).alias("score"),
        "over_cap",
    )
