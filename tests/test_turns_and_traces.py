"""turn-efficiency and trace-completeness: harness-evals' documented cases, the rows that
cannot be scored, and trace matching against a plain greedy reference."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_agent_metrics import score, traj


def conversation(n: int) -> list[dict[str, str]]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": f"t{i}"} for i in range(n)]


def efficiency(
    metric: str, cases: list[tuple[dict[str, Any], list[dict[str, str]] | None]]
) -> list[dict[str, Any]]:
    return score(metric, [(meta, traj()) for meta, _ in cases], turns=[t for _, t in cases])


def test_turn_efficiency_harness_evals_cases() -> None:
    long, short, exact = efficiency(
        "turn-efficiency",
        [
            ({"expected_turns": 4}, conversation(8)),
            ({"expected_turns": 10}, conversation(4)),  # faster than expected: no bonus
            ({"expected_turns": 3}, conversation(3)),
        ],
    )
    assert (long["score"], short["score"], exact["score"]) == (0.5, 1.0, 1.0)
    assert long["details"] == {"turns": 8, "expected_turns": 4.0}


def test_turn_efficiency_rows_it_cannot_score() -> None:
    none, empty, missing, text, zero = efficiency(
        "turn-efficiency",
        [
            ({"expected_turns": 2}, None),
            ({"expected_turns": 2}, []),
            ({}, conversation(2)),
            ({"expected_turns": "many"}, conversation(2)),
            ({"expected_turns": 0}, conversation(2)),
        ],
    )
    assert none["error"].startswith("Sample 's0' has no turns for turn-efficiency metric")
    assert empty["error"] == (
        "Sample 's1' has an empty conversation (no turn) for turn-efficiency metric."
    )
    assert missing["error"] == (
        "Sample 's2' has no metadata.expected_turns for turn-efficiency metric: set it, or pass "
        "turn-efficiency(expected_turns=N)."
    )
    assert text["error"] == (
        "Sample 's3' metadata.expected_turns must be a number > 0 for turn-efficiency metric; "
        "got many."
    )
    assert zero["error"].endswith("got 0.")


def test_turn_efficiency_takes_a_default_from_its_parameter() -> None:
    given_meta, default = efficiency(
        "turn-efficiency(expected_turns=2)",
        [({"expected_turns": 6}, conversation(6)), ({}, conversation(6))],
    )
    assert (given_meta["score"], default["score"]) == (1.0, 0.333333)


# --- trace-completeness ---------------------------------------------------------------------


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def trace(metric_cases: list[tuple[Any, list[dict[str, Any]]]]) -> list[dict[str, Any]]:
    return score(
        "trace-completeness",
        [({"mcp": {"expected_trace": e}}, {"tool_calls": calls}) for e, calls in metric_cases],
    )


def test_trace_completeness_harness_evals_cases() -> None:
    all_done, half, reused, empty = trace(
        [
            (
                [call("list", ns="a"), call("get", id=1)],
                [call("get", id=1.0), call("list", ns="a")],
            ),
            ([call("list", ns="a"), call("get", id=1)], [call("list", ns="a"), call("get", id=2)]),
            # one actual call satisfies at most one expected entry
            ([call("list", ns="a"), call("list", ns="a")], [call("list", ns="a")]),
            ([], [call("list")]),
        ]
    )
    assert all_done["score"] == 1.0
    assert half["score"] == 0.5
    assert half["details"]["missing"] == ["get"]
    assert reused["score"] == 0.5
    assert empty["score"] == 1.0
    assert empty["details"]["note"].startswith("Empty metadata.mcp.expected_trace")


def test_trace_entries_may_name_a_tool_with_any_arguments() -> None:
    (row,) = trace(
        [(["search", call("search", q="x")], [call("search", q="y"), call("search", q="x")])]
    )
    # the exact entry takes q=x first, so the name-only entry still finds q=y
    assert row["score"] == 1.0


def test_trace_completeness_rows_it_cannot_score() -> None:
    no_trace, bad_shape, no_calls = score(
        "trace-completeness",
        [
            ({"mcp": {"tools": [{"name": "a"}]}}, traj("a")),
            ({"mcp": {"expected_trace": [42]}}, traj("a")),
            ({"mcp": {"expected_trace": ["a"]}}, None),
        ],
    )
    assert no_trace["error"] == (
        "Sample 's0' has no metadata.mcp.expected_trace (the expected MCP operations) for "
        "trace-completeness metric."
    )
    assert bad_shape["error"].startswith(
        "Sample 's1' field 'metadata.mcp.expected_trace' must be a list of tool names"
    )
    assert no_calls["error"].startswith("Metric 'trace-completeness' needs a trajectory")


NAMES = st.sampled_from(["a", "b", "c"])
ARGS = st.dictionaries(st.sampled_from(["x", "y"]), st.integers(0, 2), max_size=2)
CALLS = st.lists(st.tuples(NAMES, ARGS), max_size=5)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(CALLS, CALLS), min_size=1, max_size=5))
def test_matching_agrees_with_harness_evals_greedy_loop(
    cases: list[tuple[list[tuple[str, dict[str, int]]], list[tuple[str, dict[str, int]]]]],
) -> None:
    rows = trace(
        [
            ([call(n, **a) for n, a in expected], [call(n, **a) for n, a in made])
            for expected, made in cases
        ]
    )
    for (expected, made), row in zip(cases, rows, strict=True):
        used = [False] * len(made)
        found = 0
        for name, args in expected:  # harness-evals' loop: first unused equal call
            for i, (n, a) in enumerate(made):
                if not used[i] and n == name and a == args:
                    used[i] = True
                    found += 1
                    break
        want = 1.0 if not expected else round(found / len(expected), 6)
        assert row["score"] == pytest.approx(want, abs=1e-12)
        missing = Counter(n for n, _ in expected) - Counter(
            n for (n, a), u in zip(made, used, strict=True) if u
        )
        assert sorted(row["details"]["missing"]) == sorted(missing.elements()), json.dumps(cases)
