"""Similarity metrics: levenshtein and bleu (sentence BLEU), one batch call each.

* ``levenshtein`` hands the whole batch to rapidfuzz's ``cpdist`` (bit-parallel C++, split
  over all cores). A Numba port of Myers/Hyyrö's bit-vector algorithm was measured at half
  its speed, so rapidfuzz stays.
* ``bleu`` reads the Arrow byte buffers of both columns and loops over pairs in one Numba
  kernel, split over threads for large batches (it releases the GIL). It runs sacreBLEU's
  ``13a`` tokeniser as four byte-level passes (each of its four regular expressions matches
  a fixed pattern of one or two characters, so a left to right scan gives exactly
  ``re.sub``'s non-overlapping matches, and since every class in them other than ``[^0-9]``
  is ASCII, scanning UTF-8 bytes equals scanning code points). Tokens
  are interned per pair (bytes compared), n-grams get exact per-pair ids, and clipped matches
  are counted with a scratch counter: each reference n-gram takes one unused hypothesis
  occurrence, which sums ``min(count_hyp, count_ref)`` over distinct n-grams.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, Any, Literal

import numpy as np
import numpy.typing as npt
import polars as pl

from evalframe.core import schema as C
from evalframe.core._errors import MetricError
from evalframe.core._njit import compiling, njit, threads, worth_compiling
from evalframe.metrics._batched import batched, sample_error, type_error
from evalframe.metrics._registry import metric
from evalframe.metrics._spec import Range, Scored
from evalframe.metrics._text import utf8_buffers

__all__ = ["bleu", "bleu_scores", "bleu_statistics", "levenshtein"]

_ACTUAL = pl.col(C.ACTUAL_OUTPUT)

# Python's str.isspace() set, which str.rstrip() and str.split() use.
_PY_SPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
    "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
# The quadratic kernel's largest field: two of these take rapidfuzz seconds per pair.
MAX_LEVENSHTEIN_CHARS = 1_000_000
# n-gram orders beyond this measure nothing sentence BLEU can use, and each costs a pass.
MAX_BLEU_ORDER = 16
_PARALLEL_ROWS = 8192  # below this, one thread: the pool costs more than it saves
_INTERPRETED_UP_TO = 1 << 16  # bytes of text BLEU scores without compiling (about 0.2 s)

_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _threaded(kernel: Callable[..., tuple[Any, ...]], n_rows: int, *arrays: Any) -> tuple[Any, ...]:
    """Run ``kernel(*arrays, start, stop)`` over row chunks on threads; concatenate results."""
    workers = min(threads(), 8)
    if n_rows < _PARALLEL_ROWS or workers == 1:
        return kernel(*arrays, 0, n_rows)
    bounds = np.linspace(0, n_rows, workers + 1).astype(np.int64)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        parts = list(pool.map(lambda k: kernel(*arrays, bounds[k], bounds[k + 1]), range(workers)))
    return tuple(np.concatenate([p[j] for p in parts]) for j in range(len(parts[0])))


def _levenshtein_kernel(case_sensitive: bool, max_chars: int) -> pl.Expr:
    def kernel(frame: pl.DataFrame) -> pl.DataFrame:
        from rapidfuzz.distance import Levenshtein
        from rapidfuzz.process import cpdist

        a = frame.get_column("actual")
        e = frame.get_column("expected")
        if not case_sensitive:
            a, e = a.str.to_lowercase(), e.str.to_lowercase()
        a_chars = a.str.len_chars().fill_null(0).cast(pl.Int64)
        e_chars = e.str.len_chars().fill_null(0).cast(pl.Int64)
        over = (a_chars > max_chars) | (e_chars > max_chars)
        present = (a.is_not_null() & e.is_not_null() & ~over).to_numpy()
        # Over-cap rows are never handed to the quadratic kernel: they become errors.
        a = pl.select(pl.when(~over).then(a)).to_series()
        e = pl.select(pl.when(~over).then(e)).to_series()
        # One call for the batch: rapidfuzz's C++ loop, threaded over all cores.
        dist = cpdist(
            a.fill_null("").to_list(),
            e.fill_null("").to_list(),
            scorer=Levenshtein.distance,
            workers=-1,
            dtype=np.int64,
        )
        return pl.DataFrame(
            {
                "distance": np.where(present, dist, 0),
                "actual_chars": a_chars,
                "expected_chars": e_chars,
            }
        )

    return batched(
        kernel,
        {"actual": _ACTUAL, "expected": C.expected_text()},
        {"distance": pl.Int64, "actual_chars": pl.Int64, "expected_chars": pl.Int64},
    )


@metric("levenshtein", family="similarity")
def levenshtein(
    *,
    case_sensitive: bool = True,
    max_chars: Annotated[int, Range(ge=1, le=MAX_LEVENSHTEIN_CHARS)] = 10_000,
) -> Scored:
    """Normalised Levenshtein similarity between the output and the expected string.

    With d the edit distance (insertions, deletions and substitutions of Unicode code
    points, each costing 1) and |a|, |e| the lengths in code points, the score is
    ``1 - d / max(|a|, |e|)``, as rapidfuzz's ``Levenshtein.normalized_similarity``. Both
    strings empty score 1.0. ``case_sensitive=False`` lowercases both sides first. No
    Unicode normalisation: ``"é"`` and ``"e\\u0301"`` differ. The work grows with the
    product of the lengths, so a field longer than ``max_chars`` code points is not compared.

    Returns:
        Float64 in [0, 1]; null (an error) when ``expected_output`` is not a string or
        either field has more than ``max_chars`` code points.

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([
        ...     {"id": "q1", "input": {"q": "Spell it"}, "expected_output": "kitten"},
        ...     {"id": "q2", "input": {"q": "Spell it"}, "expected_output": "flaw"}], name="demo")
        >>> run = ef.evaluate(ds, outputs={"q1": "sitting", "q2": "flaw"}, metrics=["levenshtein"])
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        q1 0.5714285714285714 {"distance":3,"max_length":7}
        q2 1.0 {"distance":0,"max_length":4}
    """
    bad, message = type_error("levenshtein")
    k = pl.col("levenshtein__kernel")
    d = k.struct.field("distance")
    a_chars, e_chars = k.struct.field("actual_chars"), k.struct.field("expected_chars")
    longest = pl.max_horizontal(a_chars, e_chars)
    over = (
        pl.when(e_chars > max_chars)
        .then(pl.lit("expected_output"))
        .when(a_chars > max_chars)
        .then(pl.lit("actual_output"))
    )
    cap_error = sample_error(
        f"{{}} has {{}} characters; levenshtein metric supports at most {max_chars} "
        "characters per field.",
        over,
        pl.when(over == "expected_output").then(e_chars).otherwise(a_chars),
    )
    score = pl.when(longest == 0).then(1.0).otherwise(1.0 - d / longest)
    return Scored(
        score=pl.when(bad | over.is_not_null()).then(None).otherwise(score),
        error=pl.when(bad).then(message).when(over.is_not_null()).then(cap_error),
        details=pl.struct(distance=d, max_length=longest),
        prepare={"levenshtein__kernel": _levenshtein_kernel(case_sensitive, max_chars)},
    )


# --- BLEU -------------------------------------------------------------------------------------

# Bytes rule 1 of TokenizerRegexp surrounds with spaces: [{-~[-` -&(-+:-@/].
_SPLIT_OFF = np.zeros(256, dtype=np.bool_)
for _lo, _hi in (("{", "~"), ("[", "`"), (" ", "&"), ("(", "+"), (":", "@"), ("/", "/")):
    _SPLIT_OFF[ord(_lo) : ord(_hi) + 1] = True


@njit(inline="always")
def _is_digit(b: Any) -> bool:
    return bool(0x30 <= b <= 0x39)


@njit(inline="always")
def _space_len(w: Any, i: int, n: int) -> int:
    """Length of the Python whitespace character at ``w[i]`` (0 when not whitespace)."""
    b = w[i]
    if b == 0x20 or 0x09 <= b <= 0x0D or 0x1C <= b <= 0x1F:
        return 1
    if b == 0xC2 and i + 1 < n and (w[i + 1] == 0x85 or w[i + 1] == 0xA0):
        return 2
    if i + 2 < n:
        b1 = w[i + 1]
        b2 = w[i + 2]
        if b == 0xE1 and b1 == 0x9A and b2 == 0x80:
            return 3
        if b == 0xE2 and b1 == 0x80 and (b2 <= 0x8A or 0xA8 <= b2 <= 0xA9 or b2 == 0xAF):
            return 3
        if b == 0xE2 and b1 == 0x81 and b2 == 0x9F:
            return 3
        if b == 0xE3 and b1 == 0x80 and b2 == 0x80:
            return 3
    return 0


@njit
def _tokenize_13a(
    buf: Any, s: int, e: int, split_off: Any, w1: Any, w2: Any, tb: Any, tpos: int,
    t_start: Any, t_end: Any, ntok: int,
) -> tuple[int, int]:  # fmt: skip
    """Tokens of ``buf[s:e]`` (already entity-unescaped) appended to ``tb``; new counts."""
    # Rule 1, with the padding spaces of Tokenizer13a: ' \1 ' around split-off bytes.
    n = 0
    w1[n] = 0x20
    n += 1
    for i in range(s, e):
        c = buf[i]
        if split_off[c]:
            w1[n] = 0x20
            w1[n + 1] = c
            w1[n + 2] = 0x20
            n += 3
        else:
            w1[n] = c
            n += 1
    w1[n] = 0x20
    n += 1
    # Rule 2: ([^0-9])([\.,]) -> '\1 \2 '
    m = 0
    i = 0
    while i < n:
        if i + 1 < n and not _is_digit(w1[i]) and (w1[i + 1] == 0x2E or w1[i + 1] == 0x2C):
            w2[m] = w1[i]
            w2[m + 1] = 0x20
            w2[m + 2] = w1[i + 1]
            w2[m + 3] = 0x20
            m += 4
            i += 2
        else:
            w2[m] = w1[i]
            m += 1
            i += 1
    # Rule 3: ([\.,])([^0-9]) -> ' \1 \2'
    n = 0
    i = 0
    while i < m:
        if i + 1 < m and (w2[i] == 0x2E or w2[i] == 0x2C) and not _is_digit(w2[i + 1]):
            w1[n] = 0x20
            w1[n + 1] = w2[i]
            w1[n + 2] = 0x20
            w1[n + 3] = w2[i + 1]
            n += 4
            i += 2
        else:
            w1[n] = w2[i]
            n += 1
            i += 1
    # Rule 4: ([0-9])(-) -> '\1 \2 '
    m = 0
    i = 0
    while i < n:
        if i + 1 < n and _is_digit(w1[i]) and w1[i + 1] == 0x2D:
            w2[m] = w1[i]
            w2[m + 1] = 0x20
            w2[m + 2] = 0x2D
            w2[m + 3] = 0x20
            m += 4
            i += 2
        else:
            w2[m] = w1[i]
            m += 1
            i += 1
    # str.split(): maximal runs of non-whitespace characters.
    i = 0
    in_tok = False
    while i < m:
        k = _space_len(w2, i, m)
        if k:
            if in_tok:
                t_end[ntok] = tpos
                ntok += 1
                in_tok = False
            i += k
        else:
            if not in_tok:
                t_start[ntok] = tpos
                in_tok = True
            tb[tpos] = w2[i]
            tpos += 1
            i += 1
    if in_tok:
        t_end[ntok] = tpos
        ntok += 1
    return ntok, tpos


@njit(inline="always")
def _slot(key: Any, mask: Any) -> Any:
    return np.int64(((key * _GOLDEN) >> np.uint64(32)) & mask)


@njit
def _bleu_rows(
    h_buf: Any, h_off: Any, r_buf: Any, r_off: Any, valid: Any, split_off: Any,
    max_order: int, start: int, stop: int,
) -> tuple[Any, Any, Any, Any]:  # fmt: skip
    """Lengths, clipped matches and hypothesis n-gram totals per pair of ``start:stop``."""
    n_rows = stop - start
    sys_len = np.zeros(n_rows, dtype=np.int64)
    ref_len = np.zeros(n_rows, dtype=np.int64)
    correct = np.zeros((n_rows, max_order), dtype=np.int64)
    total = np.zeros((n_rows, max_order), dtype=np.int64)
    longest = 1
    for i in range(start, stop):
        longest = max(longest, h_off[i + 1] - h_off[i], r_off[i + 1] - r_off[i])
    # Rule 1 triples a byte, rules 2-4 at most double it; +2 for the padding spaces.
    w1 = np.empty(24 * longest + 16, dtype=np.uint8)
    w2 = np.empty(24 * longest + 16, dtype=np.uint8)
    tb = np.empty(6 * longest + 8, dtype=np.uint8)
    t_start = np.empty(6 * longest + 8, dtype=np.int64)
    t_end = np.empty(6 * longest + 8, dtype=np.int64)
    ids = np.empty(6 * longest + 8, dtype=np.int64)
    toks = np.empty(6 * longest + 8, dtype=np.int64)
    cap = 16
    while cap < 2 * (6 * longest + 8):
        cap *= 2
    keys = np.full(cap, -1, dtype=np.int64)
    vals = np.zeros(cap, dtype=np.int64)
    hashes = np.zeros(cap, dtype=np.uint64)
    count = np.zeros(6 * longest + 8, dtype=np.int64)
    for r in range(n_rows):
        i = start + r
        if not valid[i]:
            continue
        lh, tpos = _tokenize_13a(
            h_buf, h_off[i], h_off[i + 1], split_off, w1, w2, tb, 0, t_start, t_end, 0
        )
        nt, tpos = _tokenize_13a(
            r_buf, r_off[i], r_off[i + 1], split_off, w1, w2, tb, tpos, t_start, t_end, lh
        )
        lr = nt - lh
        sys_len[r] = lh
        ref_len[r] = lr
        if lh == 0:
            continue
        tcap = 16
        while tcap < 2 * nt:
            tcap *= 2
        mask = np.uint64(tcap - 1)
        # Intern the pair's tokens: equal bytes, equal id.
        nid = 0
        for t in range(nt):
            h = _FNV_OFFSET
            for k in range(t_start[t], t_end[t]):
                h = (h ^ np.uint64(tb[k])) * _FNV_PRIME
            slot = _slot(h, mask)
            while True:
                if keys[slot] == -1:
                    keys[slot] = t
                    hashes[slot] = h
                    vals[slot] = nid
                    toks[t] = nid
                    nid += 1
                    break
                if hashes[slot] == h:
                    o = keys[slot]
                    same = t_end[o] - t_start[o] == t_end[t] - t_start[t]
                    if same:
                        for k in range(t_end[t] - t_start[t]):
                            if tb[t_start[o] + k] != tb[t_start[t] + k]:
                                same = False
                                break
                    if same:
                        toks[t] = vals[slot]
                        break
                slot = (slot + 1) & (tcap - 1)
        for k in range(tcap):
            keys[k] = -1
        for t in range(nt):
            ids[t] = toks[t]
        for n in range(1, max_order + 1):
            vh = lh - n + 1
            vr = lr - n + 1
            if vh <= 0:
                break
            total[r, n - 1] = vh
            if vr <= 0:
                continue
            if n > 1:
                # The n-gram at j is (id of the (n-1)-gram at j, token j+n-1): give each
                # distinct pair a fresh dense id, so ids stay exact and small.
                nid = 0
                for side in range(2):
                    base = 0 if side == 0 else lh
                    valid_n = vh if side == 0 else vr
                    for j in range(valid_n):
                        key = (ids[base + j] << 32) | toks[base + j + n - 1]
                        slot = _slot(np.uint64(key), mask)
                        while keys[slot] != -1 and keys[slot] != key:
                            slot = (slot + 1) & (tcap - 1)
                        if keys[slot] == -1:
                            keys[slot] = key
                            vals[slot] = nid
                            nid += 1
                        ids[base + j] = vals[slot]
                for k in range(tcap):
                    keys[k] = -1
            for j in range(vh):
                count[ids[j]] += 1
            matched = 0
            for j in range(vr):
                g = ids[lh + j]
                if count[g] > 0:
                    count[g] -= 1
                    matched += 1
            for j in range(vh):
                count[ids[j]] = 0
            correct[r, n - 1] = matched
    return sys_len, ref_len, correct, total


def _preprocess(text: pl.Series, lowercase: bool) -> pl.Series:
    """The string steps of ``BLEU._preprocess_segment`` and ``Tokenizer13a`` before rule 1."""
    t = text.str.to_lowercase() if lowercase else text
    return (
        t.str.strip_chars_end(_PY_SPACE)
        .str.replace_all("<skipped>", "", literal=True)
        .str.replace_all("-\n", "", literal=True)
        .str.replace_all("\n", " ", literal=True)
        .str.replace_all("&quot;", '"', literal=True)
        .str.replace_all("&amp;", "&", literal=True)
        .str.replace_all("&lt;", "<", literal=True)
        .str.replace_all("&gt;", ">", literal=True)
    )


def bleu_statistics(
    hypotheses: pl.Series, references: pl.Series, *, max_order: int = 4, lowercase: bool = False
) -> pl.DataFrame:
    """Per pair: 13a token counts, clipped n-gram matches and hypothesis n-gram totals.

    Returns:
        Columns ``sys_len``, ``ref_len`` (Int64), ``correct`` and ``total``
        (``Array(Int64, max_order)``); zeros where either text is null.

    Examples:
        >>> s = bleu_statistics(pl.Series(["the cat sat"]), pl.Series(["the cat sat down"]))
        >>> s.row(0)
        (3, 4, [3, 2, 1, 0], [3, 2, 1, 0])
    """
    h = _preprocess(hypotheses.cast(pl.String), lowercase)
    r = _preprocess(references.cast(pl.String), lowercase)
    h_buf, h_off, h_valid = utf8_buffers(h)
    r_buf, r_off, r_valid = utf8_buffers(r)
    if worth_compiling(h_buf.size + r_buf.size, _INTERPRETED_UP_TO):
        compiling("BLEU", _bleu_rows)
        sys_len, ref_len, correct, total = _threaded(
            _bleu_rows, len(h), h_buf, h_off, r_buf, r_off, h_valid & r_valid, _SPLIT_OFF,
            max_order,
        )  # fmt: skip
    else:  # a few texts: the kernel's own code, interpreted, on Python ints
        sys_len, ref_len, correct, total = _bleu_rows.interpreted(
            bytes(h_buf), h_off, bytes(r_buf), r_off, h_valid & r_valid, _SPLIT_OFF, max_order,
            0, len(h),
        )  # fmt: skip
    return pl.DataFrame(
        {
            "sys_len": sys_len,
            "ref_len": ref_len,
            "correct": correct.reshape(-1, max_order),
            "total": total.reshape(-1, max_order),
        }
    )


_SMOOTH_DEFAULTS = {"none": None, "floor": 0.1, "add-k": 1.0, "exp": None}


def bleu_scores(
    stats: pl.DataFrame,
    *,
    max_order: int = 4,
    smooth: str = "exp",
    smooth_value: float | None = None,
) -> npt.NDArray[np.float64]:
    """sacreBLEU's ``compute_bleu`` with effective order, vectorized over pairs, in [0, 1]."""
    correct = stats.get_column("correct").to_numpy().astype(np.float64).reshape(-1, max_order)
    total = stats.get_column("total").to_numpy().astype(np.float64).reshape(-1, max_order)
    sys_len = stats.get_column("sys_len").to_numpy().astype(np.float64)
    ref_len = stats.get_column("ref_len").to_numpy().astype(np.float64)
    value = smooth_value if smooth_value is not None else _SMOOTH_DEFAULTS[smooth]
    no_match = correct.sum(axis=1) == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        bp = np.where(
            sys_len < ref_len, np.where(sys_len > 0, np.exp(1.0 - ref_len / sys_len), 0.0), 1.0
        )
        if smooth == "add-k" and value is not None:
            correct[:, 1:] += value
            total[:, 1:] += value
        # Orders count up to the first with no hypothesis n-gram (effective order).
        used = np.cumprod(total > 0, axis=1).astype(bool)
        zero = used & (correct == 0)
        if smooth == "exp":
            zero_p = 1.0 / (2.0 ** np.cumsum(zero, axis=1) * total)
        elif smooth == "floor" and value is not None:
            zero_p = value / total
        else:
            zero_p = np.zeros_like(total)
        precision = np.where(zero, zero_p, correct / total)
        # sacreBLEU takes log(0) as -9999999999 (its my_log), which exp() turns into 0.
        safe = np.where(precision > 0, precision, 1.0)
        logs = np.where(precision > 0, np.log(safe), -9999999999.0)
        order = used.sum(axis=1)
        mean_log = np.where(used, logs, 0.0).sum(axis=1) / np.maximum(order, 1)
        score = bp * np.exp(mean_log)
    return np.where(no_match | (order == 0), 0.0, score)


def _bleu_kernel(
    max_order: int, smooth: str, smooth_value: float | None, lowercase: bool
) -> pl.Expr:
    def kernel(frame: pl.DataFrame) -> pl.DataFrame:
        stats = bleu_statistics(
            frame.get_column("actual"),
            frame.get_column("expected"),
            max_order=max_order,
            lowercase=lowercase,
        )
        score = bleu_scores(stats, max_order=max_order, smooth=smooth, smooth_value=smooth_value)
        return stats.with_columns(
            score=pl.Series(score, dtype=pl.Float64),
            correct=pl.col("correct").arr.to_list(),
            total=pl.col("total").arr.to_list(),
        )

    return batched(
        kernel,
        {"actual": _ACTUAL, "expected": C.expected_text()},
        {
            "score": pl.Float64,
            "sys_len": pl.Int64,
            "ref_len": pl.Int64,
            "correct": pl.List(pl.Int64),
            "total": pl.List(pl.Int64),
        },
    )


@metric("bleu", family="similarity")
def bleu(
    *,
    max_order: Annotated[int, Range(ge=1, le=MAX_BLEU_ORDER)] = 4,
    smooth: Literal["exp", "floor", "add-k", "none"] = "exp",
    smooth_value: Annotated[float | None, Range(gt=0)] = None,
    lowercase: bool = False,
) -> Scored:
    """Sentence BLEU of the output against the expected string, as sacreBLEU computes it.

    Both texts are tokenised with the ``13a`` tokeniser. With m_n the clipped n-gram
    matches and t_n the output's n-grams of order n, p_n = m_n / t_n; the brevity penalty
    is BP = exp(1 - r/c) when the output has fewer tokens c than the reference r, else 1.
    The score is ``BP * exp(mean(log p_n))`` over n = 1..N up to the first order with
    t_n = 0 (effective order), i.e. ``sacrebleu.sentence_bleu(...).score / 100``.
    Smoothing replaces a zero p_n: ``exp`` (NIST, the default) by 1 / (2^k t_n) for the
    k-th zero order, ``floor`` by smooth_value / t_n (0.1), ``add-k`` adds smooth_value
    (1) to m_n and t_n for n >= 2, ``none`` keeps 0. No matching unigram, or an empty
    output, scores 0.0; two empty strings too, as in sacreBLEU.

    Returns:
        Float64 in [0, 1]; null (an error) when ``expected_output`` is not a string.

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([
        ...     {"id": "q1", "input": {"q": "Translate"}, "expected_output": "the cat is on the mat"}],
        ...     name="demo")
        >>> run = ef.evaluate(ds, outputs={"q1": "the cat sat on the mat"}, metrics=["bleu"])
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        q1 0.37991784282579627 {"sys_len":6,"ref_len":6,"correct":[5,3,1,0],"total":[6,5,4,3]}
    """  # noqa: E501
    if smooth_value is not None and smooth not in ("floor", "add-k"):
        raise MetricError(
            "Metric 'bleu' parameter 'smooth_value' applies to smooth=floor and smooth=add-k only."
        )
    bad, message = type_error("bleu")
    k = pl.col("bleu__kernel")
    return Scored(
        score=pl.when(bad).then(None).otherwise(k.struct.field("score")),
        error=pl.when(bad).then(message),
        details=pl.struct(
            sys_len=k.struct.field("sys_len"),
            ref_len=k.struct.field("ref_len"),
            correct=k.struct.field("correct"),
            total=k.struct.field("total"),
        ),
        prepare={"bleu__kernel": _bleu_kernel(max_order, smooth, smooth_value, lowercase)},
    )
