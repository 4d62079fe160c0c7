"""The LCS kernel, ROUGE-L over columns, the shared tokeniser and token interning."""

from __future__ import annotations

import itertools
import math
import random
import re
import string

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from evalframe.core._errors import MetricError
from evalframe.metrics import _text
from evalframe.metrics._lcs import lcs_lengths, rouge_l
from evalframe.metrics._text import intern, intern_texts, tokens

SETTINGS = settings(
    deadline=None,  # the first example may include Numba's compile time
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# --- oracles -----------------------------------------------------------------------------------


def lcs_dp(a: list[int], b: list[int]) -> int:
    """The textbook O(mn) dynamic programme."""
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0] * (len(b) + 1)
        for j, y in enumerate(b, 1):
            cur[j] = prev[j - 1] + 1 if x == y else max(prev[j], cur[j - 1])
        prev = cur
    return prev[-1]


def lcs_bigint(a: list[int], b: list[int]) -> int:
    """Allison-Dix on Python integers: one unbounded word, so no carries between words."""
    if not a or not b:
        return 0
    masks: dict[int, int] = {}
    for i, x in enumerate(a):
        masks[x] = masks.get(x, 0) | (1 << i)
    full = (1 << len(a)) - 1
    v = full
    for y in b:
        u = v & masks.get(y, 0)
        v = ((v + u) | (v - u)) & full
    return len(a) - bin(v).count("1")


def tokens_py(text: str) -> list[str]:
    """Reference §2.0's Python equivalent: runs of ``str.isalnum`` after ``str.lower``."""
    out: list[str] = []
    run: list[str] = []
    for ch in text.lower():
        if ch.isalnum():
            run.append(ch)
        elif run:
            out.append("".join(run))
            run = []
    if run:
        out.append("".join(run))
    return out


def flat(
    pairs: list[tuple[list[int], list[int]]],
) -> tuple[list[int], list[int], list[int], list[int]]:
    a_ids: list[int] = []
    b_ids: list[int] = []
    a_off = [0]
    b_off = [0]
    for a, b in pairs:
        a_ids += a
        b_ids += b
        a_off.append(len(a_ids))
        b_off.append(len(b_ids))
    return a_ids, a_off, b_ids, b_off


def assert_bijective(
    results: tuple[tuple[np.ndarray, np.ndarray], ...], lists: list[pl.Series]
) -> None:
    """Ids equal exactly where tokens are equal, are dense, and offsets match list lengths."""
    frames = []
    for (ids, offsets), toks in zip(results, lists, strict=True):
        lengths = toks.list.len().fill_null(0).to_numpy()
        assert offsets[0] == 0
        np.testing.assert_array_equal(np.diff(offsets), lengths)
        flat_tokens = toks.explode(empty_as_null=False, keep_nulls=False)
        frames.append(pl.DataFrame({"token": flat_tokens, "id": ids}))
    pairs = pl.concat(frames).unique()
    assert pairs["token"].n_unique() == len(pairs) == pairs["id"].n_unique()
    if len(pairs):
        assert pairs["id"].min() == 0
        assert pairs["id"].max() == len(pairs) - 1


# --- lcs_lengths -------------------------------------------------------------------------------

EDGE_LENGTHS = [0, 1, 2, 63, 64, 65, 128, 200]


@st.composite
def id_pairs(draw: st.DrawFn) -> list[tuple[list[int], list[int]]]:
    alphabet = draw(st.sampled_from([1, 2, 3, 5, 40, 1000]))
    length = st.one_of(st.sampled_from(EDGE_LENGTHS), st.integers(0, 200))
    seq = st.builds(
        lambda n, seed: random.Random(seed).choices(range(alphabet), k=n),
        length,
        st.integers(0, 2**32),
    )
    return draw(st.lists(st.tuples(seq, seq), min_size=1, max_size=4))


@SETTINGS
@given(id_pairs())
def test_lcs_lengths_matches_dynamic_programming(pairs: list[tuple[list[int], list[int]]]) -> None:
    result = lcs_lengths(*flat(pairs))
    assert result.dtype == np.int64
    assert result.tolist() == [lcs_dp(a, b) for a, b in pairs]


@pytest.mark.parametrize("alphabet", [1, 2, 4])
def test_lcs_lengths_at_word_boundaries(alphabet: int) -> None:
    rng = random.Random(alphabet)
    pairs = [
        (rng.choices(range(alphabet), k=m), rng.choices(range(alphabet), k=n))
        for m in EDGE_LENGTHS
        for n in EDGE_LENGTHS
    ]
    assert lcs_lengths(*flat(pairs)).tolist() == [lcs_dp(a, b) for a, b in pairs]


def test_lcs_lengths_of_long_sequences_matches_unbounded_words() -> None:
    rng = random.Random(7)
    pairs = [
        (rng.choices(range(k), k=m), rng.choices(range(k), k=n))
        for k, m, n in [(3, 1500, 2100), (50, 1024, 1024), (2, 4000, 300), (1000, 700, 5000)]
    ]
    pairs.append((list(range(3000)), list(range(3000))))
    pairs.append((list(range(3000)), list(range(2999, -1, -1))))
    result = lcs_lengths(*flat(pairs))
    assert result.tolist() == [lcs_bigint(a, b) for a, b in pairs]
    assert result[-2:].tolist() == [3000, 1]


def test_lcs_lengths_is_symmetric_and_takes_sparse_int64_ids() -> None:
    a = np.array([10**12, 5, 7, 10**12, 3], dtype=np.int64)
    b = np.array([7, 10**12, 3, 5], dtype=np.int64)
    fwd = lcs_lengths(a, [0, 5], b, [0, 4])
    back = lcs_lengths(b, [0, 4], a, [0, 5])
    assert fwd.tolist() == back.tolist() == [lcs_dp(a.tolist(), b.tolist())]


def test_lcs_lengths_of_empty_sides_and_no_pairs() -> None:
    assert lcs_lengths([], [0, 0, 0], [1, 2], [0, 2, 2]).tolist() == [0, 0]
    assert lcs_lengths([], [0], [], [0]).tolist() == []


def test_lcs_lengths_rejects_inconsistent_offsets() -> None:
    with pytest.raises(ValueError, match="same length"):
        lcs_lengths([1], [0, 1], [1], [0, 1, 1])
    with pytest.raises(ValueError, match="non-decreasing"):
        lcs_lengths([1, 2], [0, 2, 1], [1], [0, 1, 1])
    with pytest.raises(ValueError, match="non-decreasing"):
        lcs_lengths([1], [0, 3], [1], [0, 1])
    with pytest.raises(ValueError, match="non-negative"):
        lcs_lengths([-1], [0, 1], [1], [0, 1])


def test_kernels_compile_when_no_cache_directory_is_writable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from numba.core import caching

    # Numba raises at decoration time when it finds no writable cache location.
    monkeypatch.setattr(caching.CacheImpl, "_locator_classes", [])

    def add(x: int, y: int) -> int:
        return x + y

    from evalframe.core._njit import njit

    assert njit(add)(1, 2) == 3


# --- tokeniser ---------------------------------------------------------------------------------

TRICKY = [
    "It's 3.14",
    "École supérieure",
    "ÉCOLE Supérieure",
    "e\u0301cole",  # decomposed: the combining acute splits the word, as in the reference
    "İstanbul ΟΔΟΣ ΣΑ",  # dotted capital I lowercases to i + combining dot; final sigma
    "Straße ẞ Ǆemal ﬁne",
    "x_y under_score snake_case",
    "a\u00a0b\u2009c\u200bd",  # no-break, thin and zero-width spaces
    "naïve café — “quoted” \u2018single\u2019 … end",
    "① ½ ² ٣.١٤ ⅫⅠ \U0001d7d9\U0001d7da 一二三 日本語テキスト",
    "emoji 👍🏽 family 👨‍👩‍👧 flags 🇫🇷",
    "tabs\tand\nnewlines\r\nand  spaces",
    "",
    "   ",
    "!!!",
]


@pytest.mark.parametrize("text", TRICKY)
def test_tokens_matches_python_isalnum_runs(text: str) -> None:
    got = pl.select(tokens(pl.lit(text, dtype=pl.String))).item().to_list()
    assert got == tokens_py(text)


def test_tokens_examples_from_the_reference() -> None:
    got = pl.Series(["It's 3.14", "École supérieure", "école supérieure", None])
    out = pl.select(tokens(pl.lit(got))).to_series().to_list()
    assert out == [["it", "s", "3", "14"], ["école", "supérieure"], ["école", "supérieure"], None]


# Characters Python 3.11 knows (its Unicode 14 database): newer letters are outside the claim.
KNOWN_CHARS = st.characters(exclude_categories=["Cn", "Cs"])


@SETTINGS
@given(st.lists(st.text(KNOWN_CHARS, max_size=40), max_size=8))
def test_tokens_matches_python_on_random_unicode(texts: list[str]) -> None:
    out = pl.select(tokens(pl.lit(pl.Series(texts, dtype=pl.String)))).to_series().to_list()
    assert out == [tokens_py(t) for t in texts]


# --- interning ---------------------------------------------------------------------------------


def test_intern_shares_ids_across_inputs_in_order_of_first_appearance() -> None:
    (a_ids, a_off), (b_ids, b_off) = intern(
        pl.Series([["the", "cat"], [], None, ["cat"]]), pl.Series([["a", "cat", "the"]])
    )
    assert a_ids.tolist() == [0, 1, 1]
    assert a_off.tolist() == [0, 2, 2, 2, 3]
    assert b_ids.tolist() == [2, 1, 0]
    assert b_off.tolist() == [0, 3]


def test_intern_is_exact_for_tokens_that_share_prefixes_and_lengths() -> None:
    # Tags hold the first 8 bytes and the length of shorter tokens: these differ only
    # after that, or only in bytes that could be mistaken for a length.
    words = [
        "", "\x00", "\x00\x00", "abcdefg", "abcdefg\x07", "abcdefg\x00", "abcdefgh",
        "abcdefghX", "abcdefghY", "abcdefghXY", "abcdefghYX", "abcdefgh" * 5, "abcdefgh" * 5 + "!",
        "ABCDEFG", "é", "e\u0301", "x" * 1000, "x" * 999 + "y",
    ]  # fmt: skip
    series = pl.Series([words, list(reversed(words))])
    ((ids, offsets),) = intern(series)
    assert len(set(ids[: len(words)].tolist())) == len(words)
    assert ids[len(words) :].tolist() == list(reversed(ids[: len(words)].tolist()))
    assert_bijective(((ids, offsets),), [series])


def test_intern_grows_its_table_past_many_distinct_tokens() -> None:
    rng = np.random.default_rng(3)
    vocab = [f"t{i}" + "x" * int(k) for i, k in enumerate(rng.integers(0, 12, 60_000))]
    picks = rng.integers(0, len(vocab), 80_000).tolist()
    cuts = [0, *sorted(rng.integers(0, len(picks), 8000).tolist()), len(picks)]
    rows = [[vocab[k] for k in picks[lo:hi]] for lo, hi in itertools.pairwise(cuts)]
    series = pl.Series(rows, dtype=pl.List(pl.String))
    assert_bijective(intern(series, series.reverse()), [series, series.reverse()])


def test_intern_rejects_columns_that_are_not_token_lists() -> None:
    with pytest.raises(TypeError, match=r"List\(String\)"):
        intern(pl.Series(["a b"]))
    with pytest.raises(TypeError, match="String"):
        intern_texts(pl.Series([["a"]]))


WORDS = st.sampled_from(
    ["the", "The", "THE", "cat", "Cat", "sat", "on", "mat", "a", "x", "3", "14", "2024", "évalué",
     "ÉCOLE", "naïve", "Straße", "日本", "Evaluation", "EVALUATIONS", "abcdefgh", "ABCDEFGH",
     "abcdefghi", "internationalization", "Internationalisation", "ΟΔΟΣ", "İstanbul", "①½",
     "x\U000e0100y", "\U0001f3f4\U000e0067\U000e0062\U000e007f", "\U00020000\U00020001"]
)  # fmt: skip
SEPARATORS = st.sampled_from(
    [" ", "  ", ", ", ". ", "'", "-", "_", "\n", "—", "\u2019", " … ", "\t"]
)


@st.composite
def texts(draw: st.DrawFn) -> str | None:
    if draw(st.integers(0, 9)) == 0:
        return None
    parts = draw(st.lists(st.tuples(WORDS, SEPARATORS), max_size=12))
    return draw(SEPARATORS) * draw(st.integers(0, 1)) + "".join(w + s for w, s in parts)


@SETTINGS
@given(st.lists(texts(), max_size=12), st.lists(texts(), max_size=12))
def test_intern_texts_agrees_with_interning_the_token_lists(
    a: list[str | None], b: list[str | None]
) -> None:
    series = [pl.Series(a, dtype=pl.String), pl.Series(b, dtype=pl.String)]
    lists = [pl.select(tokens(pl.lit(s))).to_series() for s in series]
    assert_bijective(intern_texts(*series), lists)


def test_lowercasing_stays_inside_the_character_table() -> None:
    # The byte scanner classifies lowercased text with a table of the code points below
    # _CHAR_TABLE_SIZE: lowercasing must not leave it.
    size = _text._CHAR_TABLE_SIZE
    chars = pl.Series([chr(c) for c in range(size) if not 0xD800 <= c <= 0xDFFF])
    lowered = chars.str.to_lowercase().filter(chars.str.to_lowercase() != chars).to_list()
    assert lowered
    assert max(ord(ch) for text in lowered for ch in text) < size


@st.composite
def long_texts(draw: st.DrawFn) -> str | None:
    """Texts of up to ~200 tokens: several 64-bit words of the LCS bit vector."""
    if draw(st.integers(0, 19)) == 0:
        return None
    words = draw(st.lists(WORDS, max_size=draw(st.sampled_from([5, 70, 200]))))
    seps = draw(st.lists(SEPARATORS, min_size=len(words), max_size=len(words)))
    return "".join(w + s for w, s in zip(words, seps, strict=True))


@SETTINGS
@given(st.lists(st.tuples(long_texts(), long_texts()), min_size=1, max_size=6))
def test_rouge_l_lcs_matches_dynamic_programming_on_python_tokens(
    pairs: list[tuple[str | None, str | None]],
) -> None:
    expected, actual = (pl.Series(side, dtype=pl.String) for side in zip(*pairs, strict=True))
    out = rouge_l(expected, actual)
    for (e, a), row in zip(pairs, out.iter_rows(named=True), strict=True):
        if e is None or a is None:
            assert row["lcs_tokens"] is None
            continue
        te, ta = tokens_py(e), tokens_py(a)
        assert (row["expected_tokens"], row["actual_tokens"]) == (len(te), len(ta))
        assert row["lcs_tokens"] == lcs_dp(te, ta)


# --- rouge_l -----------------------------------------------------------------------------------


def rouge_row(expected: str | None, actual: str | None, **kwargs: float) -> dict[str, object]:
    out = rouge_l(
        pl.Series([expected], dtype=pl.String), pl.Series([actual], dtype=pl.String), **kwargs
    )  # type: ignore[arg-type]
    return out.row(0, named=True)


def test_rouge_l_output_schema_is_row_aligned() -> None:
    out = rouge_l(pl.Series(["a b", "c"]), pl.Series(["a", "c d"]))
    assert out.schema == pl.Schema(
        {
            "expected_tokens": pl.Int64,
            "actual_tokens": pl.Int64,
            "lcs_tokens": pl.Int64,
            "precision": pl.Float64,
            "recall": pl.Float64,
            "score": pl.Float64,
            "over_cap": pl.String,
        }
    )
    assert out.height == 2
    empty = rouge_l(pl.Series([], dtype=pl.String), pl.Series([], dtype=pl.String))
    assert empty.height == 0
    assert empty.schema == out.schema


def test_rouge_l_golden_values() -> None:
    row = rouge_row("The cat sat on the mat", "the cat on a mat")
    assert (row["expected_tokens"], row["actual_tokens"], row["lcs_tokens"]) == (6, 5, 4)
    assert row["precision"] == pytest.approx(0.8)
    assert row["recall"] == pytest.approx(4 / 6)
    assert row["score"] == pytest.approx(2 * 0.8 * (4 / 6) / (0.8 + 4 / 6))
    # The seed's worked example: the policy fact is there, the phrasing longer.
    row = rouge_row("30 days", "You have 30 days from delivery to return an order.")
    assert (row["lcs_tokens"], row["precision"], row["recall"]) == (2, 0.2, 1.0)
    assert row["score"] == pytest.approx(1 / 3)
    assert rouge_row("It's 3.14!", "its 3 14")["lcs_tokens"] == 2
    assert rouge_row("École supérieure", "école SUPÉRIEURE")["score"] == 1.0
    assert rouge_row("a b c", "c b a")["score"] == pytest.approx(1 / 3)
    # Tokens longer than 8 bytes that share their first 8 (the tag) and their length.
    row = rouge_row("internationalization abcdefghX", "internationalisation abcdefghY")
    assert row["lcs_tokens"] == 0
    assert (
        rouge_row("Internationalization ABCDEFGHX", "internationalization abcdefghx")["score"]
        == 1.0
    )


def test_rouge_l_empty_sides() -> None:
    both = rouge_row("", "?!")
    assert (both["lcs_tokens"], both["precision"], both["recall"], both["score"]) == (
        0,
        1.0,
        1.0,
        1.0,
    )
    for expected, actual in [("", "words here"), ("words here", "...")]:
        one = rouge_row(expected, actual)
        assert (one["lcs_tokens"], one["precision"], one["recall"], one["score"]) == (
            0,
            0.0,
            0.0,
            0.0,
        )
    none = rouge_row("alpha beta", "gamma delta")
    assert (none["precision"], none["recall"], none["score"]) == (0.0, 0.0, 0.0)


@pytest.mark.parametrize("beta", [0.5, 1.0, 2.0, 3.0])
def test_rouge_l_beta_weights_recall(beta: float) -> None:
    p, r = 2 / 3, 2 / 6
    row = rouge_row("a b c d e f", "a b x", beta=beta)
    assert (row["precision"], row["recall"]) == (pytest.approx(p), pytest.approx(r))
    assert row["score"] == pytest.approx((1 + beta**2) * p * r / (r + beta**2 * p))
    assert (row["score"] > 2 * p * r / (p + r)) == (beta < 1)


def test_rouge_l_nulls_give_nulls() -> None:
    out = rouge_l(pl.Series(["a b", None, None, "a"]), pl.Series([None, "a b", None, "a"]))
    assert out["expected_tokens"].to_list() == [2, None, None, 1]
    assert out["actual_tokens"].to_list() == [None, 2, None, 1]
    for column in ("lcs_tokens", "precision", "recall", "score", "over_cap"):
        assert out[column].to_list()[:3] == [None, None, None]
    assert out["score"].to_list()[3] == 1.0
    all_null = rouge_l(pl.Series([None, None]), pl.Series([None, None]))
    assert all_null["score"].to_list() == [None, None]


def test_rouge_l_token_cap_names_the_first_field_over_it() -> None:
    out = rouge_l(
        pl.Series(["a b c d", "a b", "a b c d", "a b c", None]),
        pl.Series(["a b c d", "a b c d", "a", "a b c", "a b c d"]),
        max_tokens=3,
    )
    assert out["over_cap"].to_list() == [
        "expected_output", "actual_output", "expected_output", None, "actual_output"
    ]  # fmt: skip
    assert out["expected_tokens"].to_list() == [4, 2, 4, 3, None]
    assert out["actual_tokens"].to_list() == [4, 4, 1, 3, 4]
    for column in ("lcs_tokens", "precision", "recall", "score"):
        assert out[column].to_list() == [None, None, None, out[column][3], None]
    assert out["score"][3] == 1.0


def test_rouge_l_default_cap_is_1024_tokens() -> None:
    at_cap, over = " ".join(["w"] * 1024), " ".join(["w"] * 1025)
    out = rouge_l(pl.Series([at_cap, over]), pl.Series([at_cap, at_cap]))
    assert out["over_cap"].to_list() == [None, "expected_output"]
    assert out["score"].to_list() == [1.0, None]
    raised = rouge_l(pl.Series([over]), pl.Series([over]), max_tokens=5000)
    assert raised["score"].item() == 1.0


def test_rouge_l_metric_reports_the_cap_as_the_sample_error() -> None:
    import evalframe as ef

    records = [
        {"id": "q1", "input": {"q": 1}, "expected_output": "a b c"},
        {"id": "q2", "input": {"q": 2}, "expected_output": "a b"},
        {"id": "q3", "input": {"q": 3}, "expected_output": "a b"},
    ]
    run = ef.evaluate(
        ef.Dataset.from_records(records, name="cap"),
        outputs={"q1": "a b", "q2": "a b c d", "q3": "b"},
        metrics=["rouge-l(max_tokens=2)"],
    )
    assert run.scores.sort("sample_id").select("score", "error").rows() == [
        (None, "Sample 'q1' expected_output has 3 tokens; rouge-l metric supports at most 2 "
         "tokens per field."),
        (None, "Sample 'q2' actual_output has 4 tokens; rouge-l metric supports at most 2 "
         "tokens per field."),
        (pytest.approx(2 / 3), None),
    ]  # fmt: skip


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_rouge_l_rejects_bad_cap(bad: object) -> None:
    with pytest.raises(MetricError, match=r"^ROUGE-L max token count must be at least 1\.$"):
        rouge_l(pl.Series(["a"]), pl.Series(["a"]), max_tokens=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf, math.nan])
def test_rouge_l_rejects_bad_beta(bad: float) -> None:
    with pytest.raises(MetricError, match="beta"):
        rouge_l(pl.Series(["a"]), pl.Series(["a"]), beta=bad)


def test_rouge_l_rejects_misaligned_inputs() -> None:
    with pytest.raises(ValueError, match="row-aligned"):
        rouge_l(pl.Series(["a", "b"]), pl.Series(["a"]))


ASCII_WORDS = st.sampled_from(
    ["the", "a", "cat", "dog", "sat", "on", "mat", "refund", "within", "30", "days", "2024",
     "Policy", "ORDER", "x", "evaluation", "Evaluations"]
)  # fmt: skip
ASCII_TEXT = st.lists(
    st.tuples(ASCII_WORDS, st.sampled_from([" ", ", ", ". ", "-", "'", "_", " (", ") ", "\n"])),
    max_size=40,
).map(lambda parts: "".join(w + s for w, s in parts))


@SETTINGS
@given(
    st.lists(
        st.one_of(
            st.tuples(ASCII_TEXT, ASCII_TEXT),
            st.tuples(
                st.text(string.printable, max_size=80), st.text(string.printable, max_size=80)
            ),
        ),
        min_size=1,
        max_size=10,
    )
)
def test_rouge_l_agrees_with_google_rouge_score(pairs: list[tuple[str, str]]) -> None:
    # rouge-score 0.1.2 (with absl and nltk) raises no warning here, so none is filtered.
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    expected, actual = zip(*pairs, strict=True)
    out = rouge_l(pl.Series(expected), pl.Series(actual))
    for (e, a), got in zip(pairs, out["score"].to_list(), strict=True):
        if not tokens_py(e) and not tokens_py(a):
            assert got == 1.0  # rouge-score gives 0 here; the reference gives 1
            continue
        assert got == pytest.approx(scorer.score(e, a)["rougeL"].fmeasure, abs=1e-9, rel=0)


# --- the ROUGE-L fast paths --------------------------------------------------------------------


BYTE_PARTS = st.sampled_from(
    [b"a", b"Z", b"0", b"9", b" ", b"@", b"[", b"`", b"{", b"/", b":", b"_", b"\x7f", b"\x00",
     b"\xe2\x80\x99", b"\xf0\x9f\x98\x80", b"abcdefgh", b"x" * 70]
)  # fmt: skip


@SETTINGS
@given(st.binary(max_size=16), st.lists(BYTE_PARTS, max_size=120))
def test_ascii_scanner_finds_the_regex_token_bounds_at_any_offset(
    prefix: bytes, parts: list[bytes]
) -> None:
    # Rows start anywhere in a 64-byte block and cross several; the oracle is Python's regex.
    row = b"".join(parts)
    raw = np.frombuffer(prefix + row, dtype=np.uint8)
    _, words = _text._padded([raw])
    starts = np.zeros(len(row) + 2, np.int64)
    ends = np.zeros(len(row) + 2, np.int64)
    n = _text._scan_bounds(words, len(prefix), len(raw), starts, ends)
    at = len(prefix)
    found = [(m.start() + at, m.end() + at) for m in re.finditer(rb"[0-9A-Za-z]+", row)]
    assert list(zip(starts[:n].tolist(), ends[:n].tolist(), strict=True)) == found


@pytest.mark.parametrize("accent", ["", " café"])
def test_rouge_l_tokens_sharing_their_first_8_bytes_stay_distinct(accent: str) -> None:
    # Tokens of more than 8 bytes share a hash slot with every token of the same first 8
    # bytes; they are told apart by their length and remaining bytes, in either case and
    # on rows scanned as ASCII or lowercased first (accent).
    vocab = ["internationalization", "INTERNATIONALISATION", "Internationalizations",
             "abcdefgh", "ABCDEFGHI", "abcdefghij", "abcdefghIJ", "abcdefgh9", "a"]  # fmt: skip
    rng = random.Random(7)
    pairs = [
        (" ".join(rng.choices(vocab, k=rng.randint(1, 30))) + accent * rng.randint(0, 1),
         " ".join(rng.choices(vocab, k=rng.randint(1, 30))) + accent * rng.randint(0, 1))
        for _ in range(300)
    ]  # fmt: skip
    out = rouge_l(*(pl.Series(side) for side in zip(*pairs, strict=True)))
    expected = [lcs_dp(tokens_py(e), tokens_py(a)) for e, a in pairs]
    assert out["lcs_tokens"].to_list() == expected


def test_rouge_l_identical_texts_have_every_token_in_common() -> None:
    texts = ["the cat and the cat", "Évalué, évalué ÉVALUÉ", "x\U000e0100y x", "a" * 100, "—"]
    out = rouge_l(pl.Series(texts), pl.Series(texts))
    assert out["lcs_tokens"].to_list() == [len(tokens_py(t)) for t in texts[:-1]] + [0]
    assert out["score"].to_list() == [1.0] * len(texts)
    # Same byte length, different bytes: scored as any other pair.
    other = rouge_row("the cat sat", "the hat sat")
    assert (other["lcs_tokens"], other["score"]) == (2, pytest.approx(2 / 3))


def test_rouge_l_split_over_threads_equals_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    from evalframe.metrics import _lcs

    rng = random.Random(3)
    vocab = ["the", "cat", "Sat", "on", "a", "mat", "refund", "évalué", "internationalization"]
    sides = [
        [None if rng.random() < 0.01 else " ".join(rng.choices(vocab, k=rng.randint(0, 40)))
         for _ in range(9_001)]
        for _ in range(2)
    ]  # fmt: skip
    expected, actual = (pl.Series(s, dtype=pl.String) for s in sides)
    monkeypatch.setattr(_lcs, "_threads_for", lambda rows: 1)
    one = rouge_l(expected, actual, max_tokens=35)
    monkeypatch.setattr(_lcs, "_threads_for", lambda rows: 3)
    three = rouge_l(expected, actual, max_tokens=35)
    assert_frame_equal(three, one)
    for i in rng.sample(range(9_001), 200):
        e, a = sides[0][i], sides[1][i]
        if e is not None and a is not None and max(len(tokens_py(e)), len(tokens_py(a))) <= 35:
            assert three["lcs_tokens"][i] == lcs_dp(tokens_py(e), tokens_py(a))


def test_rouge_l_threads_follow_polars_pool_and_batch_size() -> None:
    from evalframe.metrics._lcs import _ROWS_PER_THREAD, _threads_for

    pool = pl.thread_pool_size()
    assert _threads_for(0) == 1
    assert _threads_for(2 * _ROWS_PER_THREAD - 1) == 1
    assert _threads_for(2 * _ROWS_PER_THREAD) == min(2, pool)
    assert _threads_for(10**9) == pool


@pytest.mark.parametrize(
    "series",
    [
        pl.Series(["héllo", None, "", "wörld 🙂"]),
        pl.concat([pl.Series(["skip", "a"]), pl.Series(["ü", None])], rechunk=False).slice(1),
        pl.Series([None, None], dtype=pl.String),
        pl.Series([], dtype=pl.String),
    ],
)
def test_utf8_buffers_hold_each_rows_bytes_read_only(series: pl.Series) -> None:
    buf, off, valid = _text.utf8_buffers(series)
    assert len(off) == series.len() + 1
    assert not buf.flags.writeable
    for i, text in enumerate(series.to_list()):  # the oracle: Python's own encoding
        assert bool(valid[i]) == (text is not None)
        assert buf[off[i] : off[i + 1]].tobytes() == (text or "").encode()
