"""tool-correctness's modes: harness-evals' documented cases, and every mode against a plain
reference over generated tool sequences, through both paths of the order kernel."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_agent_metrics import expect, score, traj
from test_kernels_interpreted import kernels

MODES = ("set", "multiset", "exact", "subset", "ordered")


def reference(mode: str, expected: list[str], called: list[str]) -> float:
    """Each mode the obvious way, from its definition."""
    if not expected:
        return 1.0 if not called else 0.0
    if mode == "set":
        e, c = set(expected), set(called)
        return round(len(e & c) / len(e | c), 6)
    common = sum((Counter(expected) & Counter(called)).values())
    if mode == "multiset":
        return round(common / (len(expected) + len(called) - common), 6)
    if mode == "subset":
        return round(common / len(expected), 6)
    if mode == "exact":
        same = sum(a == b for a, b in zip(expected, called, strict=False))
        return round(same / max(len(expected), len(called)), 6)
    matched = 0
    for tool in called:  # ordered: the expected tools taken in turn, earliest first
        if matched < len(expected) and tool == expected[matched]:
            matched += 1
    return round(matched / len(expected), 6)


def scores(mode: str, cases: list[tuple[list[str], list[str]]]) -> list[dict[str, Any]]:
    return score(
        f"tool-correctness(mode={mode})",
        [(expect(expected_tools=e), traj(*c)) for e, c in cases],
    )


def test_harness_evals_documented_cases() -> None:
    # exact: position by position over the longer sequence
    full, extra, short = scores(
        "exact", [(["a", "b"], ["a", "b"]), (["a", "b"], ["a", "b", "c"]), (["a", "b"], ["a"])]
    )
    assert (full["score"], extra["score"], short["score"]) == (1.0, 0.666667, 0.5)
    assert extra["details"]["matched"] == 2
    assert extra["details"]["out_of"] == 3
    # subset: every expected occurrence must be called, order free
    dup, swapped = scores("subset", [(["a", "a", "b"], ["a", "b"]), (["a", "b"], ["b", "x", "a"])])
    assert (dup["score"], swapped["score"]) == (0.666667, 1.0)
    assert dup["details"]["not_called"] == []  # distinct tools: every one was called once
    # subsequence / ordered: milestones in order, extra calls between them allowed
    between, out_of_order = scores(
        "ordered", [(["a", "c"], ["a", "b", "c"]), (["a", "b", "c"], ["a", "c", "b"])]
    )
    assert (between["score"], out_of_order["score"]) == (1.0, 0.666667)
    same = scores("subsequence", [(["a", "b", "c"], ["a", "c", "b"])])[0]
    assert same["score"] == out_of_order["score"]
    # no expected tools: 1.0 only when nothing was called
    for mode in ("exact", "subset", "ordered", "multiset"):
        empty, called = scores(mode, [([], []), ([], ["a"])])
        assert (empty["score"], called["score"]) == (1.0, 0.0), mode


def test_no_expectation_scores_one_with_a_note_in_every_mode() -> None:
    for mode in MODES:
        (row,) = score(f"tool-correctness(mode={mode})", [({}, traj("a"))])
        assert row["score"] == 1.0
        assert row["details"]["note"].startswith("No metadata.trajectory.expected_tools")


def test_the_default_mode_keeps_its_id_and_details() -> None:
    import evalframe as ef

    assert ef.metrics.get("tool-correctness").id == "tool-correctness"
    (row,) = score("tool-correctness", [(expect(expected_tools=["a"]), traj("a", "b"))])
    assert set(row["details"]) == {"unexpected", "not_called", "note"}


TOOLS = st.lists(st.sampled_from(["a", "b", "c", "search", "fetch"]), max_size=7)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(TOOLS, TOOLS), min_size=1, max_size=6))
def test_every_mode_matches_the_reference_in_both_paths(
    cases: list[tuple[list[str], list[str]]],
) -> None:
    for path in ("interpreted", "compiled"):
        with kernels(path):
            for mode in MODES:
                got = [r["score"] for r in scores(mode, cases)]
                want = [reference(mode, e, c) for e, c in cases]
                assert got == pytest.approx(want, abs=1e-12), (path, mode, cases)
