"""levenshtein and bleu: golden values, and agreement with rapidfuzz and sacreBLEU."""

from __future__ import annotations

import json

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalframe as ef
from evalframe.metrics.similarity import bleu_scores, bleu_statistics


def frame(rows: list[tuple[object, str]]) -> pl.DataFrame:
    n = len(rows)
    return pl.DataFrame(
        {
            "sample_id": [f"s{i}" for i in range(n)],
            "input": ["{}"] * n,
            "expected_output": [e if isinstance(e, str) else json.dumps(e) for e, _ in rows],
            "expected_type": ["string" if isinstance(e, str) else "int" for e, _ in rows],
            "metadata": ["{}"] * n,
            "tags": [[] for _ in range(n)],
            "row_hash": ["h"] * n,
            "actual_output": [a for _, a in rows],
        },
        schema_overrides={"tags": pl.List(pl.String)},
    )


def scores(metric: str, rows: list[tuple[object, str]]) -> list[float | None]:
    out = ef.score(frame(rows), [ef.metrics.get(metric)])
    return out.get_column("score").to_list()


def levenshtein_reference(a: str, b: str) -> int:
    """The textbook dynamic programme, one row at a time."""
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


# --- levenshtein --------------------------------------------------------------------------


def test_levenshtein_golden_values() -> None:
    got = scores(
        "levenshtein",
        [("kitten", "sitting"), ("", ""), ("abc", ""), ("flaw", "lawn"), ("日本語", "日本"),
         ("é", "e\u0301"), ("Paris", "paris")],
    )  # fmt: skip
    assert got == pytest.approx([1 - 3 / 7, 1.0, 0.0, 0.5, 1 - 1 / 3, 0.0, 0.8])
    assert scores("levenshtein(case_sensitive=false)", [("Paris", "paris")]) == [1.0]


def test_levenshtein_refuses_a_field_beyond_max_chars_as_that_rows_error() -> None:
    rows = [("ab" * 3, "ab" * 3), ("é" * 4, "é" * 3), ("abcde", "x"), ("x", "é" * 6)]
    out = ef.score(frame(rows), [ef.metrics.get("levenshtein(max_chars=5)")])
    assert out.get_column("score").to_list() == [None, 0.75, 0.0, None]
    assert out.get_column("error").to_list() == [
        "Sample 's0' expected_output has 6 characters; levenshtein metric supports at most 5 "
        "characters per field.",
        None,
        None,
        "Sample 's3' actual_output has 6 characters; levenshtein metric supports at most 5 "
        "characters per field.",
    ]
    assert out.get_column("details").to_list()[0] is None


def test_levenshtein_caps_fields_at_ten_thousand_characters_by_default() -> None:
    assert ef.metrics.levenshtein().kwargs["max_chars"] == 10_000
    long = "a" * 10_001
    assert scores("levenshtein", [(long[:-1], long[:-1]), (long, "a")]) == [1.0, None]


def test_levenshtein_details_and_type_errors() -> None:
    out = ef.score(frame([("kitten", "sitting"), (42, "42")]), [ef.metrics.levenshtein()])
    assert json.loads(out.get_column("details")[0]) == {"distance": 3, "max_length": 7}
    assert out.get_column("error")[1] == (
        "Sample 's1' expected_output must be a string for levenshtein metric; got int."
    )


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.text(max_size=40), st.text(max_size=40)), min_size=1, max_size=30))
def test_levenshtein_agrees_with_rapidfuzz_and_the_textbook_dp(
    pairs: list[tuple[str, str]],
) -> None:
    from rapidfuzz.distance import Levenshtein

    got = scores("levenshtein", pairs)
    for (e, a), s in zip(pairs, got, strict=True):
        assert s == pytest.approx(Levenshtein.normalized_similarity(a, e), abs=1e-12)
        longest = max(len(a), len(e))
        assert s == pytest.approx(1 - levenshtein_reference(a, e) / longest if longest else 1.0)


# --- bleu ---------------------------------------------------------------------------------


def test_bleu_golden_values() -> None:
    got = scores(
        "bleu",
        [
            ("the cat sat on the mat", "the cat sat on the mat"),
            ("the cat sat on the mat", "the cat is on the mat"),
            ("the cat", "a dog"),
            ("", ""),
            ("hello", ""),
        ],
    )
    # sacrebleu.sentence_bleu(hyp, [ref]).score / 100
    assert got == pytest.approx([1.0, 0.3799178428257963, 0.0, 0.0, 0.0])


def test_bleu_details_carry_the_sufficient_statistics() -> None:
    out = ef.score(frame([("the cat sat down", "the cat sat")]), [ef.metrics.bleu()])
    assert json.loads(out.get_column("details")[0]) == {
        "sys_len": 3, "ref_len": 4, "correct": [3, 2, 1, 0], "total": [3, 2, 1, 0],
    }  # fmt: skip


WORDS = ["the", "cat", "sat", ".", ",", "1", "2.5", "3-4", "-", "&amp;", "<skipped>", "é",
         "日本", "x-y", "(a)", "'s", "A", "\n", "-\n", "\u00a0", "\x1c", "1,000", "e.g.",
         "&quot;"]  # fmt: skip
sentence = st.lists(st.sampled_from(WORDS), max_size=25).map(" ".join)
noisy = st.text(alphabet="ab1 .,-\n\t&;<>quotamplg{}[]~`@:/\\'\"\x1c\u00a0\u2028é0", max_size=30)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(sentence | noisy, sentence | noisy), min_size=1, max_size=20),
    st.sampled_from(["exp", "floor", "add-k", "none"]),
    st.integers(min_value=1, max_value=6),
    st.booleans(),
)
def test_bleu_agrees_with_sacrebleu_sentence_bleu(
    pairs: list[tuple[str, str]], smooth: str, order: int, lowercase: bool
) -> None:
    from sacrebleu.metrics import BLEU

    oracle = BLEU(
        effective_order=True, smooth_method=smooth, max_ngram_order=order, lowercase=lowercase
    )
    refs = pl.Series([r for r, _ in pairs])
    hyps = pl.Series([h for _, h in pairs])
    stats = bleu_statistics(hyps, refs, max_order=order, lowercase=lowercase)
    got = bleu_scores(stats, max_order=order, smooth=smooth)
    for i, (ref, hyp) in enumerate(pairs):
        expected = oracle.sentence_score(hyp, [ref])
        assert (stats["sys_len"][i], stats["ref_len"][i]) == (expected.sys_len, expected.ref_len)
        assert got[i] == pytest.approx(expected.score / 100, abs=1e-12)


def test_bleu_metric_matches_sacrebleu_defaults_on_text() -> None:
    import sacrebleu

    pairs = [
        ("The refund window is 30 days, per policy 4.2.", "Refunds are accepted within 30 days."),
        ("Ship in 3-5 business days.", "Shipping takes 3-5 days!"),
        ("It's (mostly) fine & safe.", "It's fine &amp; safe (mostly)."),
    ]
    got = scores("bleu", pairs)
    want = [sacrebleu.sentence_bleu(h, [r]).score / 100 for r, h in pairs]
    assert got == pytest.approx(want, abs=1e-12)


def test_bleu_large_batch_runs_on_threads_and_agrees() -> None:
    from sacrebleu.metrics import BLEU

    words = ["alpha", "beta", "gamma", "delta", ",", ".", "1", "2"]
    refs = [" ".join(words[(i + k) % 8] for k in range(i % 13)) for i in range(10_000)]
    hyps = [" ".join(words[(i * 3 + k) % 8] for k in range(i % 11)) for i in range(10_000)]
    got = bleu_scores(bleu_statistics(pl.Series(hyps), pl.Series(refs)))
    oracle = BLEU(effective_order=True)
    for i in range(0, 10_000, 97):
        assert got[i] == pytest.approx(oracle.sentence_score(hyps[i], [refs[i]]).score / 100)


def test_bleu_parameters_are_checked() -> None:
    assert ef.metrics.bleu(smooth="floor", smooth_value=0.2).id == (
        "bleu(smooth=floor, smooth_value=0.2)"
    )
    with pytest.raises(ef.MetricError, match="smooth_value"):
        ef.metrics.bleu(smooth_value=0.2)
    with pytest.raises(ef.MetricError, match="max_order"):
        ef.metrics.bleu(max_order=0)
