"""rouge-1, rouge-2 and rouge-lsum: Google's rouge-score as the oracle on ASCII text, a plain
Counter/DP reference on any text, both kernel paths, the metrics' errors and any-of answers."""

from __future__ import annotations

import json
import string
from collections import Counter

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_kernels_interpreted import kernels

import evalframe as ef
from evalframe.core._errors import MetricError
from evalframe.metrics._rouge import rouge_lsum, rouge_n

SETTINGS = settings(max_examples=60, deadline=None)


def tokens(text: str) -> list[str]:
    """The shared tokeniser, the obvious way: lowercased runs of ``isalnum`` characters."""
    out, word = [], ""
    for c in text.lower():
        if c.isalnum():
            word += c
        elif word:
            out.append(word)
            word = ""
    return [*out, word] if word else out


def f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


def reference_n(e: str, a: str, n: int) -> float:
    te, ta = tokens(e), tokens(a)
    if not te and not ta:
        return 1.0
    if not te or not ta:
        return 0.0
    ge = Counter(tuple(te[i : i + n]) for i in range(len(te) - n + 1))
    ga = Counter(tuple(ta[i : i + n]) for i in range(len(ta) - n + 1))
    overlap = sum((ge & ga).values())
    return f1(overlap / max(sum(ga.values()), 1), overlap / max(sum(ge.values()), 1))


def lcs_positions(ref: list[str], can: list[str]) -> set[int]:
    """Positions of ``ref`` on one LCS with ``can``: a full table, stepping back in ``ref``
    on ties (the way rouge-score backtracks)."""
    t = [[0] * (len(can) + 1) for _ in range(len(ref) + 1)]
    for i in range(1, len(ref) + 1):
        for j in range(1, len(can) + 1):
            t[i][j] = (
                t[i - 1][j - 1] + 1 if ref[i - 1] == can[j - 1] else max(t[i - 1][j], t[i][j - 1])
            )
    i, j, found = len(ref), len(can), set()
    while i > 0 and j > 0:
        if ref[i - 1] == can[j - 1]:
            found.add(i - 1)
            i, j = i - 1, j - 1
        elif t[i][j - 1] > t[i - 1][j]:
            j -= 1
        else:
            i -= 1
    return found


def reference_lsum(e: str, a: str) -> float:
    se = [tokens(s) for s in e.split("\n") if s]
    sa = [tokens(s) for s in a.split("\n") if s]
    m, n = sum(map(len, se)), sum(map(len, sa))
    if not m and not n:
        return 1.0
    if not m or not n:
        return 0.0
    left_e, left_a = Counter(t for s in se for t in s), Counter(t for s in sa for t in s)
    hits = 0
    for ref in se:
        covered = set().union(*(lcs_positions(ref, c) for c in sa))
        for i in sorted(covered):
            if left_e[ref[i]] > 0 and left_a[ref[i]] > 0:
                hits += 1
                left_e[ref[i]] -= 1
                left_a[ref[i]] -= 1
    return f1(hits / n, hits / m)


ASCII_WORDS = st.sampled_from(
    ["the", "a", "cat", "dog", "sat", "on", "mat", "refund", "within", "30", "days", "2024",
     "Policy", "ORDER", "x", "evaluation", "Evaluations"]
)  # fmt: skip
ASCII_TEXT = st.lists(
    st.tuples(ASCII_WORDS, st.sampled_from([" ", ", ", ". ", "-", "'", "_", " (", ") ", "\n"])),
    max_size=30,
).map(lambda parts: "".join(w + s for w, s in parts))
PAIRS = st.lists(
    st.one_of(
        st.tuples(ASCII_TEXT, ASCII_TEXT),
        st.tuples(st.text(string.printable, max_size=60), st.text(string.printable, max_size=60)),
    ),
    min_size=1,
    max_size=8,
)
ANY_WORDS = st.sampled_from(
    ["the", "The", "CAT", "école", "ÉCOLE", "straße", "日本語", "3.14", "it's", "—", "e\u0301",
     "\n", "\n\n", " "]
)  # fmt: skip
ANY_TEXT = st.lists(ANY_WORDS, max_size=25).map(" ".join) | st.text(max_size=40)


@SETTINGS
@given(PAIRS)
def test_rouge_1_2_and_lsum_agree_with_google_rouge_score(pairs: list[tuple[str, str]]) -> None:
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeLsum"], use_stemmer=False)
    expected, actual = (pl.Series(side) for side in zip(*pairs, strict=True))
    got = {
        "rouge1": rouge_n(expected, actual, n=1)["score"].to_list(),
        "rouge2": rouge_n(expected, actual, n=2)["score"].to_list(),
        "rougeLsum": rouge_lsum(expected, actual)["score"].to_list(),
    }
    for i, (e, a) in enumerate(pairs):
        oracle = scorer.score(e, a)
        for kind, scores in got.items():
            if not tokens(e) and not tokens(a):
                assert scores[i] == 1.0  # rouge-score gives 0 here; eval-harness's rule is 1
                continue
            assert scores[i] == pytest.approx(oracle[kind].fmeasure, abs=1e-12), (kind, e, a)


@SETTINGS
@given(st.lists(st.tuples(ANY_TEXT, ANY_TEXT), min_size=1, max_size=8))
def test_both_kernel_paths_agree_with_a_plain_reference_on_any_text(
    pairs: list[tuple[str, str]],
) -> None:
    expected, actual = (pl.Series(side) for side in zip(*pairs, strict=True))
    for mode in ("interpreted", "compiled"):
        with kernels(mode):
            one = rouge_n(expected, actual, n=1)["score"].to_list()
            two = rouge_n(expected, actual, n=2)["score"].to_list()
            lsum = rouge_lsum(expected, actual)["score"].to_list()
        for i, (e, a) in enumerate(pairs):
            assert one[i] == pytest.approx(reference_n(e, a, 1), abs=1e-12), (mode, e, a)
            assert two[i] == pytest.approx(reference_n(e, a, 2), abs=1e-12), (mode, e, a)
            assert lsum[i] == pytest.approx(reference_lsum(e, a), abs=1e-12), (mode, e, a)


def test_the_two_paths_give_identical_frames() -> None:
    expected = pl.Series(["the cat sat\non the mat", "a b a b", "", None, "x y"])
    actual = pl.Series(["the cat\nsat on a mat", "b a b a", "", "x", None])
    for compute in (
        lambda: rouge_n(expected, actual, n=1),
        lambda: rouge_n(expected, actual, n=2),
        lambda: rouge_lsum(expected, actual),
    ):
        with kernels("interpreted"):
            small = compute()
        with kernels("compiled"):
            large = compute()
        assert small.equals(large, null_equal=True)


# --- harness-evals' documented cases (its tokens are whitespace-split, so only cases where
# --- both tokenisers agree are carried over) ---------------------------------------------


def _scores(metric: str, rows: list[tuple[str, str]]) -> list[float | None]:
    ds = ef.Dataset.from_records(
        [
            {"id": f"s{i}", "input": {"q": "?"}, "expected_output": e}
            for i, (e, _) in enumerate(rows)
        ],
        name="rouge",
    )
    outputs = {f"s{i}": a for i, (_, a) in enumerate(rows)}
    run = ef.evaluate(ds, outputs=outputs, metrics=[metric])
    return run.scores.get_column("score").to_list()


def test_harness_evals_cases() -> None:
    same = ("the cat sat on the mat", "the cat sat on the mat")
    assert _scores("rouge-1", [same, ("cat", "cat")]) == [1.0, 1.0]
    partial = _scores("rouge-1", [("the cat sat on the mat", "the cat sat")])[0]
    assert partial is not None
    assert 0.0 < partial < 1.0
    assert _scores("rouge-1", [("the cat sat on the mat", "dogs run fast")]) == [0.0]
    assert _scores("rouge-1", [("the cat sat on the mat", "")]) == [0.0]
    # one word has no bigram: rouge-2 is 0 (as in harness-evals and rouge-score)
    assert _scores("rouge-2", [("hello", "hello")]) == [0.0]
    two = _scores("rouge-2", [("the cat sat on the mat", "the cat sat on a mat")])[0]
    assert two == pytest.approx(0.6)  # 3 of 5 bigrams shared on both sides
    recall_heavy = ef.evaluate(
        ef.Dataset.from_records(
            [{"id": "s", "input": {"q": "?"}, "expected_output": "the cat sat on the mat"}],
            name="rouge",
        ),
        outputs={"s": "the cat sat on the mat is soft"},
        metrics=["rouge-1"],
    )
    details = json.loads(recall_heavy.scores.get_column("details")[0])
    assert details["recall"] == 1.0
    assert details["precision"] < 1.0


def test_errors_and_details_of_the_metrics() -> None:
    ds = ef.Dataset.from_records(
        [
            {"id": "text", "input": {"q": "?"}, "expected_output": "a b c"},
            {"id": "number", "input": {"q": "?"}, "expected_output": 7},
            {"id": "long", "input": {"q": "?"}, "expected_output": "a b c d"},
        ],
        name="rouge",
    )
    outputs = {"text": "a b c", "number": "7", "long": "a"}
    for name in ("rouge-1", "rouge-2", "rouge-lsum"):
        run = ef.evaluate(ds, outputs=outputs, metrics=[f"{name}(max_tokens=3)"])
        rows = {r["sample_id"]: r for r in run.scores.to_dicts()}
        assert rows["text"]["score"] == 1.0
        assert rows["number"]["error"] == (
            f"Sample 'number' expected_output must be a string for {name} metric; got int."
        )
        assert rows["long"]["error"] == (
            f"Sample 'long' expected_output has 4 tokens; {name} metric supports at most 3 "
            "tokens per field."
        )


def test_any_of_answers_score_the_best_answer() -> None:
    ds = ef.Dataset.from_records(
        [
            {
                "id": "q",
                "input": {"q": "?"},
                "expected_output": "completely different words",
                "expected_any": ["the refund arrives in 30 days"],
            }
        ],
        name="rouge",
    )
    run = ef.evaluate(ds, outputs={"q": "the refund arrives in 30 days"}, metrics=["rouge-2"])
    row = run.scores.to_dicts()[0]
    assert row["score"] == 1.0
    assert json.loads(row["details"])["best_answer"] == "the refund arrives in 30 days"


@pytest.mark.parametrize("bad", [0, -1, True])
def test_a_bad_cap_or_beta_is_refused(bad: object) -> None:
    with pytest.raises(MetricError, match="max_tokens"):
        rouge_n(pl.Series(["a"]), pl.Series(["a"]), n=1, max_tokens=bad)  # type: ignore[arg-type]
    with pytest.raises(MetricError, match="beta"):
        rouge_lsum(pl.Series(["a"]), pl.Series(["a"]), beta=float(bad) - 1)  # type: ignore[arg-type]
    with pytest.raises(MetricError, match="n = 1 or 2"):
        rouge_n(pl.Series(["a"]), pl.Series(["a"]), n=3)
