"""ROUGE-N and ROUGE-Lsum over whole columns, as Google's ``rouge-score`` computes them.

Both read the shared tokeniser's tokens (``_text``: lowercased runs of Unicode letters and
numbers, which on ASCII text are ``rouge-score``'s tokens).

* ROUGE-N counts the n-grams (n = 1 or 2) the two texts share, with multiplicity:
  ``overlap = sum over n-grams g of min(count_expected(g), count_actual(g))``, precision
  ``overlap / max(actual n-grams, 1)``, recall ``overlap / max(expected n-grams, 1)``.
* ROUGE-Lsum splits each text into sentences at line feeds (empty lines dropped) and, for
  each expected sentence, takes the union of the positions its longest common subsequence
  with every actual sentence covers; each covered token is a hit while both texts still have
  an unused occurrence of it. Precision is ``hits / actual tokens``, recall ``hits /
  expected tokens``. Which LCS a sentence pair contributes matters when there are several,
  so the backtrack follows ``rouge-score``'s: on a tie it steps back in the expected sentence.

The score is the F-measure ``(1 + b^2) P R / (R + b^2 P)`` (0 when P + R = 0). As for
ROUGE-L, two texts without tokens score 1.0 and one text without tokens 0.0
(``rouge-score`` gives 0.0 to both), and a field with more than ``max_tokens`` tokens is not
scored. Each is one pass of a small compiled kernel over the rows; a small input runs the
kernel's own Python source instead of compiling it, with the same results.
"""

from __future__ import annotations

import math
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import polars as pl

from evalframe.core._errors import MetricError
from evalframe.core._njit import compiling, njit, worth_compiling
from evalframe.metrics._text import intern, intern_texts, tokens

__all__ = ["ROUGE_FIELDS", "rouge_lsum", "rouge_n"]

ROUGE_FIELDS: Final = {
    "expected_tokens": pl.Int64,
    "actual_tokens": pl.Int64,
    "matches": pl.Int64,
    "expected_units": pl.Int64,
    "actual_units": pl.Int64,
    "precision": pl.Float64,
    "recall": pl.Float64,
    "score": pl.Float64,
    "over_cap": pl.String,
}
"""The columns both functions return: token counts, the matches (shared n-grams or LCS
hits), what precision and recall divide by (n-grams or tokens), P, R, F and ``over_cap``."""

# Rows up to which the kernels run as Python (about 10 us and 300 us a pair) instead of
# compiling (a second or two, once per environment).
_NGRAMS_PYTHON_UP_TO: Final = 10_000
_LSUM_PYTHON_UP_TO: Final = 1_000


@njit
def _ngram_kernel(
    e_ids: Any, e_off: Any, a_ids: Any, a_off: Any, n: int, vocab: int, active: Any, out: Any
) -> None:
    """``out[r]``: the n-grams (n <= 2) rows ``r`` of both sides share, with multiplicity.

    A unigram is its token id, a bigram the number ``id_1 * vocab + id_2`` (``vocab`` > every
    id, so distinct bigrams get distinct numbers). The expected side's n-grams are counted in
    a table (indexed by id for unigrams, an open-addressing hash of the numbers for bigrams),
    then each actual n-gram takes one unused count; the slots a row used are cleared.
    """
    longest = 1
    for r in range(len(active)):
        longest = max(longest, e_off[r + 1] - e_off[r])
    size = 1
    while size < 2 * longest:
        size *= 2
    mask = size - 1
    counts = np.zeros(vocab if n == 1 else size, dtype=np.int64)
    keys = np.full(size, -1, dtype=np.int64)
    used = np.zeros(longest, dtype=np.int64)
    for r in range(len(active)):
        if not active[r]:
            continue
        e0, a0 = e_off[r], a_off[r]
        ne = e_off[r + 1] - e0 - n + 1
        na = a_off[r + 1] - a0 - n + 1
        if ne <= 0 or na <= 0:
            continue
        hits = 0
        if n == 1:
            for i in range(ne):
                counts[e_ids[e0 + i]] += 1
            for j in range(na):
                t = a_ids[a0 + j]
                if counts[t] > 0:
                    counts[t] -= 1
                    hits += 1
            for i in range(ne):
                counts[e_ids[e0 + i]] = 0
        else:
            for i in range(ne):
                key = np.int64(e_ids[e0 + i]) * vocab + e_ids[e0 + i + 1]
                slot = ((key ^ (key >> 29)) * 0x9E3779B1) & mask
                while keys[slot] != -1 and keys[slot] != key:
                    slot = (slot + 1) & mask
                keys[slot] = key
                counts[slot] += 1
                used[i] = slot
            for j in range(na):
                key = np.int64(a_ids[a0 + j]) * vocab + a_ids[a0 + j + 1]
                slot = ((key ^ (key >> 29)) * 0x9E3779B1) & mask
                while keys[slot] != -1 and keys[slot] != key:
                    slot = (slot + 1) & mask
                if keys[slot] == key and counts[slot] > 0:
                    counts[slot] -= 1
                    hits += 1
            for i in range(ne):
                keys[used[i]] = -1
                counts[used[i]] = 0
        out[r] = hits


@njit
def _lsum_kernel(
    e_ids: Any,
    e_sent: Any,
    e_rows: Any,
    a_ids: Any,
    a_sent: Any,
    a_rows: Any,
    vocab: int,
    active: Any,
    out: Any,
) -> None:
    """``out[r]``: the summary-level LCS hits of row ``r``.

    Sentence ``s`` of a side is ``ids[sent[s]:sent[s + 1]]``; row ``r`` holds the sentences
    ``rows[r]:rows[r + 1]``.
    """
    longest_e = 1
    longest_a = 1
    for s in range(len(e_sent) - 1):
        longest_e = max(longest_e, e_sent[s + 1] - e_sent[s])
    for s in range(len(a_sent) - 1):
        longest_a = max(longest_a, a_sent[s + 1] - a_sent[s])
    width = longest_a + 1
    table = np.zeros((longest_e + 1) * width, dtype=np.int32)
    covered = np.zeros(longest_e, dtype=np.bool_)
    left_e = np.zeros(vocab, dtype=np.int64)
    left_a = np.zeros(vocab, dtype=np.int64)
    for r in range(len(active)):
        if not active[r]:
            continue
        t0, t1 = e_sent[e_rows[r]], e_sent[e_rows[r + 1]]
        u0, u1 = a_sent[a_rows[r]], a_sent[a_rows[r + 1]]
        for k in range(t0, t1):
            left_e[e_ids[k]] += 1
        for k in range(u0, u1):
            left_a[a_ids[k]] += 1
        hits = 0
        for s in range(e_rows[r], e_rows[r + 1]):
            r0, r1 = e_sent[s], e_sent[s + 1]
            m = r1 - r0
            for i in range(m):
                covered[i] = False
            for c in range(a_rows[r], a_rows[r + 1]):
                c0, c1 = a_sent[c], a_sent[c + 1]
                w = c1 - c0
                for i in range(1, m + 1):
                    for j in range(1, w + 1):
                        if e_ids[r0 + i - 1] == a_ids[c0 + j - 1]:
                            table[i * width + j] = table[(i - 1) * width + j - 1] + 1
                        else:
                            table[i * width + j] = max(
                                table[(i - 1) * width + j], table[i * width + j - 1]
                            )
                i = m
                j = w
                while i > 0 and j > 0:
                    if e_ids[r0 + i - 1] == a_ids[c0 + j - 1]:
                        covered[i - 1] = True
                        i -= 1
                        j -= 1
                    elif table[i * width + j - 1] > table[(i - 1) * width + j]:
                        j -= 1
                    else:
                        i -= 1
            for i in range(m):
                t = e_ids[r0 + i]
                if covered[i] and left_e[t] > 0 and left_a[t] > 0:
                    hits += 1
                    left_e[t] -= 1
                    left_a[t] -= 1
        for k in range(t0, t1):
            left_e[e_ids[k]] = 0
        for k in range(u0, u1):
            left_a[a_ids[k]] = 0
        out[r] = hits


def _check(name: str, beta: float, max_tokens: int, expected: pl.Series, actual: pl.Series) -> None:
    if not (isinstance(beta, int | float) and math.isfinite(beta) and beta > 0):
        msg = f"Metric '{name}' parameter 'beta' must be a finite number > 0; got {beta!r}."
        raise MetricError(msg)
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise MetricError(f"Metric '{name}' parameter 'max_tokens' must be at least 1.")
    if len(expected) != len(actual):
        msg = f"{name}: expects row-aligned Series; got {len(expected)} and {len(actual)} rows."
        raise ValueError(msg)


def _ids(
    expected: pl.Series, actual: pl.Series, compiled: bool
) -> tuple[tuple[npt.NDArray[np.int32], npt.NDArray[np.int64]], ...]:
    """Token ids (shared) and offsets of both columns: compiled, or by Polars."""
    if compiled:
        return intern_texts(expected.cast(pl.String), actual.cast(pl.String))
    e, a = (s.cast(pl.String).to_frame("t").select(tokens(pl.col("t"))) for s in (expected, actual))
    return intern(e.to_series(), a.to_series())


def _vocab(*id_arrays: npt.NDArray[np.int32]) -> int:
    return 1 + max((int(a.max()) for a in id_arrays if len(a)), default=0)


def _finish(
    expected: pl.Series,
    actual: pl.Series,
    e_len: npt.NDArray[np.int64],
    a_len: npt.NDArray[np.int64],
    matches: npt.NDArray[np.int64],
    e_units: npt.NDArray[np.int64],
    a_units: npt.NDArray[np.int64],
    scored: npt.NDArray[np.bool_],
    beta: float,
    max_tokens: int,
) -> pl.DataFrame:
    """P, R and F from the counts, the token-less cases and the cap (``ROUGE_FIELDS``)."""
    b2 = float(beta) ** 2
    parts = pl.DataFrame(
        {
            "ne": e_len,
            "na": a_len,
            "m": matches,
            "ue": e_units,
            "ua": a_units,
            "e_ok": expected.is_not_null().to_numpy(),
            "a_ok": actual.is_not_null().to_numpy(),
            "scored": scored,
        }
    )
    ne, na, m = pl.col("ne"), pl.col("na"), pl.col("m")
    both_empty = (ne == 0) & (na == 0)
    one_empty = (ne == 0) | (na == 0)
    p_raw = m / pl.max_horizontal(pl.col("ua"), pl.lit(1))
    r_raw = m / pl.max_horizontal(pl.col("ue"), pl.lit(1))
    precision = pl.when(both_empty).then(1.0).when(one_empty).then(0.0).otherwise(p_raw)
    recall = pl.when(both_empty).then(1.0).when(one_empty).then(0.0).otherwise(r_raw)
    p, r = pl.col("precision"), pl.col("recall")
    f = pl.when(p + r > 0).then((1.0 + b2) * p * r / (r + b2 * p)).otherwise(0.0)
    ok = pl.col("scored")
    return (
        parts.with_columns(precision=precision, recall=recall)
        .select(
            expected_tokens=pl.when(pl.col("e_ok")).then(ne),
            actual_tokens=pl.when(pl.col("a_ok")).then(na),
            matches=pl.when(ok).then(m),
            expected_units=pl.when(ok).then(pl.col("ue")),
            actual_units=pl.when(ok).then(pl.col("ua")),
            precision=pl.when(ok).then(p),
            recall=pl.when(ok).then(r),
            score=pl.when(ok).then(f.clip(0.0, 1.0)),
            over_cap=pl.when(pl.col("e_ok") & (ne > max_tokens))
            .then(pl.lit("expected_output"))
            .when(pl.col("a_ok") & (na > max_tokens))
            .then(pl.lit("actual_output")),
        )
        .cast(ROUGE_FIELDS)  # type: ignore[arg-type]
    )


def _active(
    expected: pl.Series,
    actual: pl.Series,
    e_len: npt.NDArray[np.int64],
    a_len: npt.NDArray[np.int64],
    max_tokens: int,
) -> npt.NDArray[np.bool_]:
    """Rows to score: both texts present and within the cap."""
    present = expected.is_not_null().to_numpy() & actual.is_not_null().to_numpy()
    result: npt.NDArray[np.bool_] = present & (e_len <= max_tokens) & (a_len <= max_tokens)
    return result


def rouge_n(
    expected: pl.Series,
    actual: pl.Series,
    *,
    n: int,
    beta: float = 1.0,
    max_tokens: int = 1024,
) -> pl.DataFrame:
    """ROUGE-N (n = 1 or 2) of every (expected, actual) pair of texts, with its parts.

    Args:
        expected: String Series of reference texts (null: not scored).
        actual: String Series of candidate texts, row-aligned with ``expected``.
        n: 1 (unigrams) or 2 (bigrams).
        beta: weight of recall relative to precision, > 0.
        max_tokens: largest token count scored per field, >= 1.

    Returns:
        A frame row-aligned with the inputs, with the ``ROUGE_FIELDS`` columns: ``matches``
        is the shared n-grams, ``expected_units``/``actual_units`` the n-grams of each side.

    Examples:
        >>> import polars as pl
        >>> out = rouge_n(pl.Series(["the cat sat on the mat", "", "a"]),
        ...               pl.Series(["the cat on the mat", "", "a"]), n=2)
        >>> out.select("matches", "expected_units", "actual_units", "score").rows()
        [(3, 5, 4, 0.6666666666666665), (0, 0, 0, 1.0), (0, 0, 0, 0.0)]
    """
    name = f"rouge-{n}"
    _check(name, beta, max_tokens, expected, actual)
    if n not in (1, 2):
        raise MetricError(f"ROUGE-N is computed for n = 1 or 2; got {n!r}.")
    compiled = worth_compiling(len(expected), _NGRAMS_PYTHON_UP_TO)
    (e_ids, e_off), (a_ids, a_off) = _ids(expected, actual, compiled)
    e_len, a_len = np.diff(e_off), np.diff(a_off)
    active = _active(expected, actual, e_len, a_len, max_tokens)
    matches = np.zeros(len(expected), dtype=np.int64)
    args = (e_ids, e_off, a_ids, a_off, n, _vocab(e_ids, a_ids), active, matches)
    if compiled:
        compiling("ROUGE-N", _ngram_kernel)
        _ngram_kernel(*args)
    else:
        _ngram_kernel.interpreted(*args)
    return _finish(
        expected,
        actual,
        e_len,
        a_len,
        matches,
        np.maximum(e_len - n + 1, 0),
        np.maximum(a_len - n + 1, 0),
        active,
        beta,
        max_tokens,
    )


def _sentences(text: pl.Series) -> tuple[pl.Series, npt.NDArray[np.int64]]:
    """The non-empty lines of every text, flat, and each text's offsets into them."""
    lines = (
        text.cast(pl.String)
        .str.split("\n")
        .list.eval(pl.element().filter(pl.element().str.len_bytes() > 0))
    )
    counts = lines.list.len().fill_null(0).to_numpy()
    rows = np.zeros(len(text) + 1, dtype=np.int64)
    np.cumsum(counts, out=rows[1:])
    flat = lines.explode(empty_as_null=False, keep_nulls=False)
    return flat, rows


def rouge_lsum(
    expected: pl.Series, actual: pl.Series, *, beta: float = 1.0, max_tokens: int = 1024
) -> pl.DataFrame:
    r"""ROUGE-Lsum of every (expected, actual) pair: summary-level LCS over line-split sentences.

    Args:
        expected: String Series of reference summaries, a sentence per line.
        actual: String Series of candidate summaries, row-aligned with ``expected``.
        beta: weight of recall relative to precision, > 0.
        max_tokens: largest token count scored per field, >= 1.

    Returns:
        A frame row-aligned with the inputs, with the ``ROUGE_FIELDS`` columns: ``matches``
        is the union-LCS hits, ``expected_units``/``actual_units`` the tokens of each side.

    Examples:
        >>> import polars as pl
        >>> out = rouge_lsum(pl.Series(["the cat sat\non the mat"]),
        ...                  pl.Series(["the cat\nsat on a mat"]))
        >>> out.select("matches", "precision", "recall").rows()
        [(5, 0.8333333333333334, 0.8333333333333334)]
    """
    _check("rouge-lsum", beta, max_tokens, expected, actual)
    compiled = worth_compiling(len(expected), _LSUM_PYTHON_UP_TO)
    e_flat, e_rows = _sentences(expected)
    a_flat, a_rows = _sentences(actual)
    (e_ids, e_sent), (a_ids, a_sent) = _ids(e_flat, a_flat, compiled)
    e_len = e_sent[e_rows[1:]] - e_sent[e_rows[:-1]]
    a_len = a_sent[a_rows[1:]] - a_sent[a_rows[:-1]]
    active = _active(expected, actual, e_len, a_len, max_tokens)
    matches = np.zeros(len(expected), dtype=np.int64)
    args = (e_ids, e_sent, e_rows, a_ids, a_sent, a_rows, _vocab(e_ids, a_ids), active, matches)
    if compiled:
        compiling("ROUGE-Lsum", _lsum_kernel)
        _lsum_kernel(*args)
    else:
        _lsum_kernel.interpreted(*args)
    return _finish(expected, actual, e_len, a_len, matches, e_len, a_len, active, beta, max_tokens)
