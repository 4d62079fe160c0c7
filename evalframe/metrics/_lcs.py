"""The bit-parallel LCS kernel and ROUGE-L over whole columns.

The LCS length of every (expected, actual) pair is computed with the bit-vector algorithm of
Allison and Dix, in Hyyrö's formulation: one bit per token of the shorter sequence, and for
each token ``t`` of the longer one ``U = V & M[t]; V = (V + U) | (V - U)``, starting from
``V = ~0``; the LCS length is the number of zero bits of ``V``. Sequences longer than 64
tokens use several words, with the carry of the addition handed from word to word.

``lcs_lengths`` takes token ids (from ``_text.intern``). ``rouge_l`` does not build ids for
the whole column: it tokenises each pair straight from the Arrow buffers and numbers that
pair's tokens through a small hash table, so that a pair's work stays in the L1 cache (about
1.6 µs of CPU per pair of 35-word texts, see benchmarks/README.md).

The kernels release the GIL. ``rouge_l`` splits a batch into contiguous slices of rows, one per
thread, up to Polars' thread pool size (``POLARS_MAX_THREADS``) and at least
``_ROWS_PER_THREAD`` rows each, so small batches stay on the calling thread. Plain Python
threads, not Numba's ``parallel=True``: without TBB or OpenMP installed, Numba's own thread pool
aborts the process when two threads launch parallel kernels at once, which Polars may do.
"""

from __future__ import annotations

import itertools
import math
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from evalframe.core._errors import MetricError
from evalframe.core._njit import compiling, njit, threads, worth_compiling
from evalframe.metrics._text import (
    _ASCII_LOWER,
    _PRIME,
    _ROW_SCAN,
    _U56,
    _all_ascii,
    _bounds,
    _chunk,
    _row_kinds,
    _TextColumn,
    tokens,
)

__all__ = ["lcs_lengths", "rouge_l"]

# Rows per extra thread: below this, starting a thread costs more than it saves.
_ROWS_PER_THREAD = 4096
# Rows up to which ROUGE-L runs in Python (about 10 us a pair) instead of compiling.
_PYTHON_UP_TO = 10_000
_ONE = np.uint64(1)
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)
_S1, _S2, _S4, _S56 = np.uint64(1), np.uint64(2), np.uint64(4), np.uint64(56)


@njit
def _popcount(x: Any) -> int:
    x = x - ((x >> _S1) & _M1)
    x = (x & _M2) + ((x >> _S2) & _M2)
    x = (x + (x >> _S4)) & _M4
    return int((x * _H01) >> _S56)


@njit
def _low_bits(n: int) -> Any:
    """A word whose ``n`` (1..64) lowest bits are set."""
    return _ALL if n >= 64 else (_ONE << np.uint64(n)) - _ONE


@njit
def _lcs_word(short: Any, s0: int, s1: int, long: Any, l0: int, l1: int, peq: Any) -> int:
    """``_lcs_pair`` for a short side of at most 64 tokens: one word."""
    for k in range(s1 - s0):
        peq[short[s0 + k]] |= _ONE << np.uint64(k)
    v = _ALL
    for j in range(l0, l1):
        u = v & peq[long[j]]
        v = (v + u) | (v - u)
    for k in range(s0, s1):
        peq[short[k]] = 0
    return _popcount(~v & _low_bits(s1 - s0))


@njit
def _lcs_words(
    short: Any, s0: int, s1: int, long: Any, l0: int, l1: int, peq: Any, carry: Any
) -> int:
    """``_lcs_pair`` for a short side of any length: words of 64 tokens, low to high, with
    ``carry[j]`` the carry out of the previous word at step j."""
    for j in range(l1 - l0):
        carry[j] = 0
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
        for k in range(w0, w1):
            peq[short[k]] = 0
    return total


@njit
def _lcs_pair(
    short: Any, s0: int, s1: int, long: Any, l0: int, l1: int, peq: Any, carry: Any
) -> int:
    """LCS length of ``short[s0:s1]`` and ``long[l0:l1]`` (``1 <= s1 - s0``).

    ``peq[id]`` is the match mask of token ``id`` within the current word of the short side:
    set for its tokens, used, then cleared token by token, so that no pair pays for the size
    of the id space. ``peq`` must be zero on entry and is zero again on exit.
    """
    if s1 - s0 <= 64:
        return _lcs_word(short, s0, s1, long, l0, l1, peq)
    return _lcs_words(short, s0, s1, long, l0, l1, peq, carry)


@njit
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
    peq = np.zeros(vocab, dtype=np.uint64)
    carry = np.zeros(longest, dtype=np.uint64)
    for i in range(n):
        a0, a1, b0, b1 = a_off[i], a_off[i + 1], b_off[i], b_off[i + 1]
        if (not active[i]) | (a1 == a0) | (b1 == b0):
            continue
        # The shorter side is the bit vector: fewer words.
        if a1 - a0 <= b1 - b0:
            out[i] = _lcs_pair(a_ids, a0, a1, b_ids, b0, b1, peq, carry)
        else:
            out[i] = _lcs_pair(b_ids, b0, b1, a_ids, a0, a1, peq, carry)
    return out


# ---------------------------------------------------------------------------------------------
# ROUGE-L fused per pair: find the token bounds of both texts of a pair (``_text``'s scanners),
# give the expected side's tokens local ids through a small hash table, look the actual side's
# tokens up in it, and run ``_lcs_pair`` on the local ids, the shorter side as the bit vector.
# Everything a pair touches stays in the L1 cache; a column-wide table would not.
#
# A token's tag is its first 8 (lowercased) bytes, with its length in the top byte when it is
# shorter: equal tags and lengths decide tokens of up to 8 bytes; longer ones then compare the
# rest of their bytes in place, in the two rows. The table hashes the tag alone, so tokens
# sharing their first 8 bytes share a probe sequence (rare, and still exact). Helpers take
# arrays, not tuples of arrays: taking an array out of a tuple costs Numba a reference count.


@njit
def _tag(words: Any, p: int, n: int, lower: bool) -> Any:
    first = _chunk(words, p, n, lower)
    return first | (np.uint64(n) << _U56) if n < 8 else first


@njit
def _probe(
    e_buf: Any,
    e_starts: Any,
    e_ends: Any,
    buf: Any,
    p: int,
    n: int,
    tag: Any,
    slot_tag: Any,
    slot_ref: Any,
    mask: int,
    shift: Any,
) -> int:
    """Slot of the expected token equal to the token of ``n`` bytes at ``p``, or an empty one."""
    # No ``return`` or ``break`` inside the loop, no call in a branch: either makes Numba
    # reference-count the arrays on every probe, several times slower (no test can see it;
    # the benchmark does).
    pos = np.int64((tag * _PRIME) >> shift)  # a multiplicative hash: its high bits are mixed
    r = slot_ref[pos]
    searching = r >= 0
    while searching:
        rs = e_starts[r]
        same = (slot_tag[pos] == tag) & (e_ends[r] - rs == n)
        # Byte by byte through a table: calls in this loop would cost reference counts.
        k = 8
        while same & (k < n):
            same = _ASCII_LOWER[e_buf[rs + k]] == _ASCII_LOWER[buf[p + k]]
            k += 1
        pos = (pos + (not same)) & mask
        r = slot_ref[pos]
        searching = (not same) & (r >= 0)
    return int(pos)


@njit
def _same_bytes(e_buf: Any, es: int, a_buf: Any, as_: int, n: int) -> bool:
    """Whether the ``n`` bytes at ``e_buf[es]`` and ``a_buf[as_]`` are equal."""
    same = True
    k = 0
    while same & (k < n):
        same = e_buf[es + k] == a_buf[as_ + k]
        k += 1
    return same


@njit
def _local_ids(
    e_buf: Any,
    e_words: Any,
    e_lower: bool,
    e_starts: Any,
    e_ends: Any,
    n_e: int,
    a_buf: Any,
    a_words: Any,
    a_lower: bool,
    a_starts: Any,
    a_ends: Any,
    n_a: int,
    slot_tag: Any,
    slot_ref: Any,
    ids: Any,
) -> None:
    """Local ids of a pair's tokens: ``ids[:n_e]`` for the expected side, the index of the
    token's first occurrence; ``ids[n_e:n_e + n_a]`` for the actual side, the id of the equal
    expected token, or ``n_e``, which no expected token has."""
    bits = 1
    while (1 << bits) < 2 * n_e:
        bits += 1
    mask = (1 << bits) - 1
    shift = np.uint64(64 - bits)
    for q in range(mask + 1):
        slot_ref[q] = -1
    for t in range(n_e):
        p = e_starts[t]
        n = e_ends[t] - p
        tag = _tag(e_words, p, n, e_lower)
        pos = _probe(
            e_buf, e_starts, e_ends, e_buf, p, n, tag, slot_tag, slot_ref, mask, shift,
        )  # fmt: skip
        r = slot_ref[pos]
        r = r if r >= 0 else t
        slot_ref[pos] = r
        slot_tag[pos] = tag
        ids[t] = r
    for t in range(n_a):
        p = a_starts[t]
        n = a_ends[t] - p
        tag = _tag(a_words, p, n, a_lower)
        pos = _probe(
            e_buf, e_starts, e_ends, a_buf, p, n, tag, slot_tag, slot_ref, mask, shift,
        )  # fmt: skip
        r = slot_ref[pos]
        ids[n_e + t] = r if r >= 0 else n_e


@njit
def _rouge_kernel(
    e_col: Any, a_col: Any, max_tokens: int, scratch: Any, out: Any, r0: int, r1: int
) -> None:
    """Token counts of both sides and LCS of the scored pairs of rows ``r0:r1`` (``out``).

    A column is a ``_TextColumn``'s arrays. Every call below gets the same arrays on every
    row (no choosing between arrays in a branch), which keeps Numba's reference counting out
    of the loop.
    """
    e_buf, e_words, e_start, e_end, e_kinds, e_classes = e_col
    a_buf, a_words, a_start, a_end, a_kinds, a_classes = a_col
    e_starts, e_ends, a_starts, a_ends, slot_tag, slot_ref, ids, peq, carry = scratch
    e_count, a_count, lcs = out
    for i in range(r0, r1):
        ek, ak = e_kinds[i], a_kinds[i]
        es, ee, as_, ae = e_start[i], e_end[i], a_start[i], a_end[i]
        n_e = _bounds(e_buf, e_words, es, ee, ek, e_classes, e_starts, e_ends)
        n_a = _bounds(a_buf, a_words, as_, ae, ak, a_classes, a_starts, a_ends)
        e_count[i], a_count[i] = n_e, n_a
        if not ((0 < n_e <= max_tokens) & (0 < n_a <= max_tokens)):
            continue
        # Equal bytes (hence equal kinds) are equal token sequences: all of them is the LCS.
        # (``&`` evaluates both sides: the compare gets 0 bytes unless the lengths match.)
        size = ee - es if (ee - es == ae - as_) & (ek == ak) else -1
        if (size >= 0) & _same_bytes(e_buf, es, a_buf, as_, size):
            lcs[i] = n_e
            continue
        # Equal bytes (and so equal kinds) are equal token sequences: the LCS is all of them.
        _local_ids(
            e_buf, e_words, ek == _ROW_SCAN, e_starts, e_ends, n_e,
            a_buf, a_words, ak == _ROW_SCAN, a_starts, a_ends, n_a, slot_tag, slot_ref, ids,
        )  # fmt: skip
        # The shorter side is the bit vector: fewer words. Both sides live in ``ids``, so
        # that no branch picks between arrays (which costs Numba reference counts).
        short, long = (0, n_e) if n_e <= n_a else (n_e, 0)
        lcs[i] = _lcs_pair(
            ids, short, short + min(n_e, n_a), ids, long, long + max(n_e, n_a), peq, carry
        )


def _column(text: _TextColumn) -> tuple[Any, ...]:
    return (text.buf, text.words, text.row_start, text.row_end, text.kinds, text.char_class)


def _scratch(longest: int) -> tuple[Any, ...]:
    """Work arrays for pairs of at most ``longest`` tokens a side."""
    n = longest
    return (
        np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64),
        np.empty(n, np.int64), np.empty(4 * n, np.uint64), np.empty(4 * n, np.int64),
        np.empty(2 * n, np.int64), np.zeros(n + 1, np.uint64), np.zeros(n, np.uint64),
    )  # fmt: skip


def _threads_for(rows: int) -> int:
    """Threads for ``rows`` pairs: Polars' pool size, but at least ``_ROWS_PER_THREAD`` each."""
    return max(1, min(threads(), rows // _ROWS_PER_THREAD))


def lcs_of(a: list[str], b: list[str]) -> int:
    """The LCS length of two token lists, bit-parallel on Python integers (as the kernel).

    Examples:
        >>> lcs_of(["the", "cat", "sat"], ["a", "cat", "sat", "down"])
        2
    """
    if len(a) < len(b):
        a, b = b, a
    masks: dict[str, int] = {}
    for k, token in enumerate(b):
        masks[token] = masks.get(token, 0) | (1 << k)
    full = (1 << len(b)) - 1
    v = full
    for token in a:
        u = v & masks.get(token, 0)
        v = ((v + u) | (v - u)) & full
    return len(b) - v.bit_count()


def _rouge_counts_python(
    expected: pl.Series, actual: pl.Series, max_tokens: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """``_rouge_counts`` for a few rows: Polars' tokeniser and :func:`lcs_of`."""
    sides = pl.DataFrame({"e": expected, "a": actual}, schema={"e": pl.String, "a": pl.String})
    lists = sides.select(tokens(pl.col("e")), tokens(pl.col("a")))
    e_tokens = [t or [] for t in lists.get_column("e").to_list()]
    a_tokens = [t or [] for t in lists.get_column("a").to_list()]
    lcs = [
        lcs_of(e, a) if 0 < len(e) <= max_tokens and 0 < len(a) <= max_tokens else 0
        for e, a in zip(e_tokens, a_tokens, strict=True)
    ]  # a small input's rows (``_PYTHON_UP_TO``); larger ones take the kernel
    return (
        np.array([len(t) for t in e_tokens], dtype=np.int64),
        np.array([len(t) for t in a_tokens], dtype=np.int64),
        np.array(lcs, dtype=np.int64),
    )


def _rouge_counts(
    expected: pl.Series, actual: pl.Series, max_tokens: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Token counts of each side and LCS lengths (0 where not scored) of every row."""
    if not worth_compiling(len(expected), _PYTHON_UP_TO):
        return _rouge_counts_python(expected, actual, max_tokens)
    compiling("ROUGE-L", _rouge_kernel, _all_ascii, _row_kinds)
    e_text = _TextColumn.from_series(expected.cast(pl.String))
    a_text = _TextColumn.from_series(actual.cast(pl.String))
    n = len(e_text.kinds)
    # A row of b bytes holds at most (b + 1) // 2 tokens.
    longest = max(e_text.longest, a_text.longest) // 2 + 2
    out = (np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64))
    e_col, a_col = _column(e_text), _column(a_text)
    threads = _threads_for(n)
    if threads == 1:
        _rouge_kernel(e_col, a_col, max_tokens, _scratch(longest), out, 0, n)
        return out
    # The kernel releases the GIL: each thread scores a contiguous slice of the rows with its
    # own work arrays, writing disjoint parts of ``out``.
    cuts = np.linspace(0, n, threads + 1).astype(np.int64).tolist()
    with ThreadPoolExecutor(threads) as pool:
        done = [
            pool.submit(_rouge_kernel, e_col, a_col, max_tokens, _scratch(longest), out, r0, r1)
            for r0, r1 in itertools.pairwise(cuts)
        ]
        for future in done:
            future.result()
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

    Both texts are tokenised with the shared tokeniser (``_text.tokens``). With LCS the length of their
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

    e_len, a_len, lcs = _rouge_counts(expected, actual, max_tokens)
    e_ok = expected.is_not_null().to_numpy()
    a_ok = actual.is_not_null().to_numpy()
    e_over = e_ok & (e_len > max_tokens)
    a_over = a_ok & (a_len > max_tokens)
    scored = e_ok & a_ok & ~e_over & ~a_over

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
