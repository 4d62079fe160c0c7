"""eval-harness's seven trajectory metrics: golden rules and messages, property tests."""

from __future__ import annotations

import json
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalframe as ef
from evalframe.core._trajectory import parse_trajectory, trajectory_series
from evalframe.metrics._arguments import loose_equal, loose_subset


def score(
    metric: str, cases: list[tuple[dict[str, Any] | None, dict[str, Any] | None]]
) -> list[dict[str, Any]]:
    """Score (metadata.trajectory, trajectory) cases; one result dict per case, in order."""
    ids = [f"s{i}" for i in range(len(cases))]
    ds = ef.Dataset.from_records(
        [
            {
                "id": sid,
                "input": {},
                "expected_output": "x",
                "metadata": {} if expect is None else {"trajectory": expect},
            }
            for sid, (expect, _) in zip(ids, cases, strict=True)
        ],
        name="golden",
    )
    trajectories = [parse_trajectory(t, "test") for _, t in cases]
    outputs = pl.DataFrame({"sample_id": ids, "actual_output": ["x"] * len(ids)}).with_columns(
        trajectory_series(trajectories)
    )
    run = ef.evaluate(ds, outputs=outputs, metrics=[metric])
    by_id = {r["sample_id"]: r for r in run.scores.iter_rows(named=True)}
    out = []
    for sid in ids:
        row = by_id[sid]
        details = json.loads(row["details"]) if row["details"] else None
        out.append({"score": row["score"], "error": row["error"], "details": details})
    return out


def calls(*names: str) -> dict[str, Any]:
    return {"tool_calls": list(names)}


# --- missing trajectory -------------------------------------------------------------------

SEVEN = [
    "tool-called",
    "tool-not-called",
    "tool-called-with",
    "tool-call-order",
    "steps-below",
    "no-pending-approvals",
    "approval-gated",
]


@pytest.mark.parametrize("metric", SEVEN)
def test_a_missing_trajectory_is_the_rows_error_never_a_score(metric: str) -> None:
    [missing, present] = score(metric, [({"tools": "a"}, None), ({"tools": "a"}, calls("a"))])
    assert missing["score"] is None
    assert missing["error"].startswith(
        f"Metric '{metric}' needs a trajectory for sample 's0' and none was recorded. "
    )
    assert present["error"] is None
    assert present["score"] is not None


# --- tool-called ----------------------------------------------------------------------------


def test_tool_called_partial_credit_rounds_to_six_places() -> None:
    [r] = score("tool-called", [({"tools": ["a", "b", "c"]}, calls("a", "x"))])
    assert r["score"] == 0.333333
    assert r["details"] == {"met": 1, "total": 3, "not_called": ["b", "c"], "note": None}


def test_tool_called_accepts_a_single_name_and_counts_each_listed_name() -> None:
    single, twice = score(
        "tool-called",
        [({"tools": "search"}, calls("search")), ({"tools": ["a", "a", "b"]}, calls("a"))],
    )
    assert single["score"] == 1.0
    assert twice["score"] == 0.666667


@pytest.mark.parametrize("expect", [None, {}, {"tools": []}])
def test_tool_called_empty_expectation_scores_one_and_says_so(expect: Any) -> None:
    [r] = score("tool-called", [(expect, calls("a"))])
    assert r["score"] == 1.0
    assert r["details"]["note"] == (
        "No expectations under metadata.trajectory.tools: nothing to check, scored 1.0."
    )


# --- tool-not-called ------------------------------------------------------------------------


def test_tool_not_called_is_the_fraction_of_forbidden_tools_avoided() -> None:
    avoided, partly, none = score(
        "tool-not-called",
        [
            ({"forbidden_tools": ["rm", "drop"]}, calls("ls")),
            ({"forbidden_tools": ["rm", "drop", "kill"]}, calls("rm", "rm", "ls")),
            ({}, calls("rm")),
        ],
    )
    assert avoided["score"] == 1.0
    assert partly["score"] == 0.666667
    assert partly["details"]["called"] == ["rm"]
    assert none["score"] == 1.0
    assert "forbidden_tools" in none["details"]["note"]


# --- tool-called-with -----------------------------------------------------------------------


def test_tool_called_with_subset_match_and_loose_numbers() -> None:
    trajectory = {
        "tool_calls": [
            {"name": "book", "arguments": {"flight": "LH1", "seats": "2", "class": "eco"}},
            {"name": "pay", "arguments": {"amount": 7.0, "meta": {"card": "visa", "x": 1}}},
        ]
    }
    expect = {
        "tool_arguments": [
            {"tool": "book", "arguments": {"flight": "LH1", "seats": 2}},  # subset, 2 == "2"
            {"name": "pay", "args": {"amount": "7", "meta": {"card": "visa"}}},  # aliases
            {"tool": "book", "arguments": {"flight": "LH2"}},  # no such call
            {"tool": "cancel"},  # not called
        ]
    }
    [r] = score("tool-called-with", [(expect, trajectory)])
    assert r["score"] == 0.5
    assert r["details"]["met"] == 2
    assert r["details"]["total"] == 4
    assert r["details"]["unmatched"] == ["book", "cancel"]


def test_tool_called_with_skips_unusable_entries() -> None:
    expect = {"tool_arguments": [{"arguments": {"a": 1}}, "book", {"tool": "x", "args": [1]},
                                 {"tool": "book", "arguments": {"a": 1}}]}  # fmt: skip
    [r] = score(
        "tool-called-with", [(expect, {"tool_calls": [{"name": "book", "arguments": {"a": 1}}]})]
    )
    assert r["score"] == 1.0
    assert r["details"]["skipped"] == 3
    assert r["details"]["total"] == 1
    [all_skipped] = score("tool-called-with", [({"tool_arguments": ["x"]}, calls("book"))])
    assert all_skipped["score"] == 1.0
    assert "tool_arguments" in all_skipped["details"]["note"]


def test_tool_called_with_strings_are_not_loose() -> None:
    [r] = score(
        "tool-called-with",
        [
            (
                {"tool_arguments": [{"tool": "t", "arguments": {"a": "Yes", "b": True}}]},
                {"tool_calls": [{"name": "t", "arguments": {"a": "yes", "b": 1}}]},
            )
        ],
    )
    assert r["score"] == 0.0


# --- tool-call-order ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("order", "names", "expected"),
    [
        (["a", "c"], ["a", "b", "c"], 1.0),  # gaps allowed
        (["c", "a"], ["a", "b", "c"], 0.0),  # wrong order
        (["a", "a"], ["a", "b"], 0.0),  # needs two a's
        (["a", "a"], ["a", "b", "a"], 1.0),
        (["a"], [], 0.0),
    ],
)
def test_tool_call_order_is_a_subsequence(
    order: list[str], names: list[str], expected: float
) -> None:
    [r] = score("tool-call-order", [({"order": order}, calls(*names))])
    assert r["score"] == expected
    assert r["details"]["expected"] == order
    assert r["details"]["called"] == names


def test_tool_call_order_empty_scores_one_with_a_note() -> None:
    [r] = score("tool-call-order", [({"order": []}, calls("a"))])
    assert r["score"] == 1.0
    assert "order" in r["details"]["note"]


# --- steps-below ----------------------------------------------------------------------------


def test_steps_below_limit_from_metadata_digits_and_details() -> None:
    within, over = score(
        "steps-below",
        [
            ({"max_steps": "3"}, {"tool_calls": [], "steps": 3}),
            ({"max_steps": 2}, calls("a", "b", "c")),
        ],
    )
    assert within["score"] == 1.0
    assert within["details"] == {"steps": 3, "max_steps": 3, "over_by": 0, "note": None}
    assert over["score"] == 0.0
    assert over["details"] == {"steps": 3, "max_steps": 2, "over_by": 1, "note": None}


def test_steps_below_constructor_fallback_and_no_limit() -> None:
    [r] = score("steps-below(max_steps=1)", [({}, calls("a", "b"))])
    assert r["score"] == 0.0
    assert r["details"]["max_steps"] == 1
    [meta_wins] = score("steps-below(max_steps=1)", [({"max_steps": 5}, calls("a", "b"))])
    assert meta_wins["score"] == 1.0
    [none] = score("steps-below", [({}, calls("a", "b"))])
    assert none["score"] == 1.0
    assert none["details"]["note"].startswith("No step limit")
    [zero] = score("steps-below", [({"max_steps": 0}, calls("a"))])
    assert zero["score"] == 1.0
    assert "below 1" in zero["details"]["note"]


# --- approvals ------------------------------------------------------------------------------


def test_no_pending_approvals() -> None:
    clear, pending = score(
        "no-pending-approvals",
        [({}, {"tool_calls": []}), ({}, {"tool_calls": [], "pending_approvals": 2})],
    )
    assert clear["score"] == 1.0
    assert pending["score"] == 0.0
    assert pending["details"] == {"pending_approvals": 2}


def test_approval_gated_fraction_of_required_actions_approved() -> None:
    partly, none = score(
        "approval-gated",
        [
            ({"requires_approval": ["pay", "ship", 7]}, {"approvals": ["pay", "7", "x"]}),
            ({}, {"approvals": []}),
        ],
    )
    assert partly["score"] == 0.666667
    assert partly["details"]["not_approved"] == ["ship"]
    assert none["score"] == 1.0
    assert "requires_approval" in none["details"]["note"]


# --- property tests: the matchers against plain reference implementations -----------------

NAMES = st.sampled_from(["a", "b", "c", "d"])


def reference_subsequence(expected: list[str], names: list[str]) -> bool:
    it = iter(names)
    return all(any(n == e for n in it) for e in expected)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.lists(NAMES, max_size=4), st.lists(NAMES, max_size=8)), min_size=1, max_size=12
    )
)
def test_order_matcher_agrees_with_a_plain_subsequence_check(
    cases: list[tuple[list[str], list[str]]],
) -> None:
    results = score("tool-call-order", [({"order": o}, calls(*n)) for o, n in cases])
    for (order, names), r in zip(cases, results, strict=True):
        assert r["score"] == float(reference_subsequence(order, names)), (order, names)


SCALARS = st.one_of(
    st.integers(-3, 3),
    st.sampled_from([1.0, 2.5, -0.0]),
    st.sampled_from(["1", "2", "2.5", "x", "", " 3"]),
    st.booleans(),
    st.none(),
)
ARGS = st.dictionaries(st.sampled_from(["p", "q", "r"]), SCALARS, max_size=3)


def reference_loose(e: object, a: object) -> bool:
    def num(v: object) -> float | None:
        if isinstance(v, bool):
            return None
        if isinstance(v, int | float):
            return float(v)
        if isinstance(v, str):
            try:
                return float(v)
            except ValueError:
                return None
        return None

    if isinstance(e, str) and isinstance(a, str):
        return e == a
    if type(e) is type(a) and e == a:
        return True
    return num(e) is not None and num(e) == num(a)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(ARGS, ARGS), min_size=1, max_size=10))
def test_subset_matcher_agrees_with_a_plain_reference(cases: list[tuple[dict, dict]]) -> None:
    results = score(
        "tool-called-with",
        [
            ({"tool_arguments": [{"tool": "t", "arguments": e}]},
             {"tool_calls": [{"name": "t", "arguments": a}]})
            for e, a in cases
        ],
    )  # fmt: skip
    for (expected, actual), r in zip(cases, results, strict=True):
        want = all(k in actual and reference_loose(v, actual[k]) for k, v in expected.items())
        assert r["score"] == float(want), (expected, actual)
        assert loose_subset(expected, actual) == want


def test_loose_equal_examples() -> None:
    assert loose_equal(7, "7")
    assert loose_equal("7", 7.0)
    assert loose_equal(7, 7.0)
    assert not loose_equal(True, 1)
    assert not loose_equal("7", "7.0")
    assert loose_equal({"a": 1}, {"a": "1", "b": 2})
    assert not loose_equal([1], [1, 2])
