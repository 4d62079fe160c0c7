"""composite: the weighted mean of other metrics' scores, against a plain reference, with its
three rules for a part that cannot score a row."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalframe as ef

PARTS = ["exact-match", "contains", "rouge-1", "levenshtein"]


def run(spec: str, rows: list[tuple[Any, str]]) -> dict[str, dict[str, Any]]:
    ds = ef.Dataset.from_records(
        [
            {"id": f"s{i}", "input": {"q": "?"}, "expected_output": e}
            for i, (e, _) in enumerate(rows)
        ],
        name="composite",
    )
    out = ef.evaluate(ds, outputs={f"s{i}": a for i, (_, a) in enumerate(rows)}, metrics=[spec])
    return {
        r["sample_id"]: r | {"details": json.loads(r["details"] or "null")}
        for r in out.scores.iter_rows(named=True)
    }


TEXT = st.sampled_from(["Paris", "paris", "It is Paris.", "Rome", "", "the cat sat"])


@settings(max_examples=20, deadline=None)
@given(
    st.lists(st.tuples(TEXT, TEXT), min_size=1, max_size=5),
    st.lists(st.integers(0, 3), min_size=len(PARTS), max_size=len(PARTS)).filter(any),
)
def test_the_score_is_the_weighted_mean_of_the_parts(
    rows: list[tuple[str, str]], weights: list[int]
) -> None:
    spec = f"composite(metrics=[{', '.join(PARTS)}], weights=[{', '.join(map(str, weights))}])"
    got = run(spec, rows)
    alone = {p: run(p, rows) for p in PARTS}
    for sid, row in got.items():
        parts = [alone[p][sid]["score"] for p in PARTS]
        if any(s is None for s in parts):  # contains refuses an empty expected output
            assert row["score"] is None
            assert row["error"].startswith(f"Sample '{sid}' composite metric: contains: ")
            continue
        want = sum(w * s for w, s in zip(weights, parts, strict=True)) / sum(weights)
        assert row["score"] == pytest.approx(want, abs=1e-12)
        assert [p["score"] for p in row["details"]["parts"]] == parts


def test_a_part_that_cannot_score_the_row() -> None:
    rows = [("", "x"), ("Paris", "Paris")]  # contains refuses the empty expected output
    strict = run("composite(metrics=[exact-match, contains])", rows)
    assert strict["s0"]["error"] == (
        "Sample 's0' composite metric: contains: Sample 's0' expected_output must not be "
        "empty for contains metric."
    )
    zero = run("composite(metrics=[exact-match, contains], on_error=zero)", rows)
    assert zero["s0"]["score"] == 0.0  # exact-match 0.0, contains counted 0.0
    skip = run("composite(metrics=[exact-match, contains], weights=[1, 3], on_error=skip)", rows)
    assert skip["s0"]["score"] == 0.0  # exact-match alone
    assert skip["s1"]["score"] == 1.0
    only = run("composite(metrics=[contains], on_error=skip)", rows)
    assert only["s0"]["error"].startswith("Sample 's0' composite metric: no part scored the row")


def test_bad_compositions_are_refused() -> None:
    for spec, message in (
        ("composite(metrics=[])", "at least one metric"),
        ("composite(metrics=[exact-match, exact-match])", "twice"),
        ("composite(metrics=[exact-match], weights=[1, 2])", "one weight per metric"),
        ("composite(metrics=[exact-match], weights=[0])", "must not all be 0"),
        ("composite(metrics=[exact-match], weights=[-1])", "parameter 'weights'"),
        ('composite(metrics=["composite(metrics=[contains])"])', "another composite"),
        ('composite(metrics=[rouge-l, "rouge-l(beta=2.0)"])', "intermediate column"),
    ):
        with pytest.raises(ef.MetricError, match=message):
            ef.metrics.get(spec)


def test_parts_with_needs_are_filled() -> None:
    rows = [("Paris", "Paris"), ("Paris", "Rome")]
    ds = ef.Dataset.from_records(
        [
            {"id": f"s{i}", "input": {"q": "?"}, "expected_output": e}
            for i, (e, _) in enumerate(rows)
        ],
        name="composite",
    )
    outputs = {f"s{i}": a for i, (_, a) in enumerate(rows)}
    providers = ef.Providers(embeddings="hashing", cache=False)
    both = ef.evaluate(
        ds, outputs=outputs, metrics=["composite(metrics=[exact-match, cosine-embedding])"],
        providers=providers,
    )  # fmt: skip
    cosine = ef.evaluate(ds, outputs=outputs, metrics=["cosine-embedding"], providers=providers)
    for (sid, score), (_, c) in zip(
        both.scores.select("sample_id", "score").iter_rows(),
        cosine.scores.select("sample_id", "score").iter_rows(),
        strict=True,
    ):
        exact = 1.0 if sid == "s0" else 0.0
        assert score == pytest.approx((exact + c) / 2, abs=1e-12)
