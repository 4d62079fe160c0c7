"""The agent, MCP and conversation families, against hand-worked values and plain references."""

from __future__ import annotations

import json
import random
from collections import Counter
from typing import Any

import polars as pl
import pytest

import evalframe as ef
from evalframe.core._trajectory import parse_trajectory, trajectory_series
from evalframe.core._turns import parse_turns, turns_series


def score(
    metric: str,
    cases: list[tuple[dict[str, Any], dict[str, Any] | None]],
    turns: list[list[dict[str, Any]] | None] | None = None,
) -> list[dict[str, Any]]:
    """Score (metadata, trajectory) cases with one metric; a result dict per case."""
    ids = [f"s{i}" for i in range(len(cases))]
    ds = ef.Dataset.from_records(
        [
            {"id": sid, "input": {}, "expected_output": "x", "metadata": meta}
            for sid, (meta, _) in zip(ids, cases, strict=True)
        ],
        name="agents",
    )
    outputs = pl.DataFrame({"sample_id": ids, "actual_output": ["x"] * len(ids)}).with_columns(
        trajectory_series([parse_trajectory(t, "test") for _, t in cases])
    )
    if turns is not None:
        outputs = outputs.with_columns(turns_series([parse_turns(t, "test") for t in turns]))
    run = ef.evaluate(ds, outputs=outputs, metrics=[metric])
    by_id = {r["sample_id"]: r for r in run.scores.iter_rows(named=True)}
    return [
        {
            "score": by_id[s]["score"],
            "error": by_id[s]["error"],
            "details": json.loads(by_id[s]["details"]) if by_id[s]["details"] else None,
        }
        for s in ids
    ]


def traj(*names: str, **fields: Any) -> dict[str, Any]:
    return {"tool_calls": list(names), **fields}


def expect(**block: Any) -> dict[str, Any]:
    return {"trajectory": block}


# --- agent family ---------------------------------------------------------------------------


def test_tool_correctness_is_intersection_over_union_of_tool_sets() -> None:
    exact, extra, none = score(
        "tool-correctness",
        [
            (expect(expected_tools=["a", "b"]), traj("b", "a", "a")),
            (expect(tools=["a", "b"]), traj("a", "c")),  # {a} / {a, b, c}
            ({}, traj("a")),
        ],
    )
    assert exact["score"] == 1.0
    assert extra["score"] == 0.333333
    assert extra["details"]["unexpected"] == ["c"]
    assert extra["details"]["not_called"] == ["b"]
    assert none["score"] == 1.0
    assert none["details"]["note"].startswith("No metadata")


def test_argument_correctness_grades_every_call_to_a_specified_tool() -> None:
    trajectory = {
        "tool_calls": [
            {"name": "book", "arguments": {"id": "7", "seat": "a"}},
            {"name": "book", "arguments": {"id": 8}},
            {"name": "search", "arguments": {"q": "x"}},  # no spec: not graded
        ]
    }
    [r] = score(
        "argument-correctness",
        [(expect(tool_arguments=[{"tool": "book", "arguments": {"id": 7}}]), trajectory)],
    )
    assert r["score"] == 0.5
    assert r["details"]["met"] == 1
    assert r["details"]["total"] == 2


def test_step_efficiency_and_its_missing_optimum() -> None:
    short, long, zero, unknown = score(
        "step-efficiency",
        [
            (expect(optimal_steps=4), traj("a", "b")),
            (expect(expected_tools=["a", "b"]), traj("a", "b", "a", "b", "c")),
            (expect(optimal_steps=2), {"tool_calls": [], "steps": 0}),
            ({}, traj("a")),
        ],
    )
    assert short["score"] == 1.0
    assert long["score"] == 0.4
    assert long["details"] == {"steps": 5, "optimal_steps": 2}
    assert zero["score"] == 1.0
    assert unknown["score"] is None
    assert unknown["error"] == (
        "Sample 's3' has no optimal step count for step-efficiency metric: set "
        "metadata.trajectory.optimal_steps or expected_tools."
    )


def test_tool_error_rate_counts_failed_calls() -> None:
    failing = {
        "tool_calls": [
            {"name": "a", "error": "timeout"},
            {"name": "b"},
            {"name": "a", "error": "500"},
            {"name": "c"},
        ]
    }
    r, empty = score("tool-error-rate", [({}, failing), ({}, traj())])
    assert r["score"] == 0.5
    assert r["details"]["error_rate"] == 0.5
    assert r["details"]["failing_tools"] == ["a"]
    assert empty["score"] == 1.0
    assert empty["details"]["note"] == "No tool calls: scored 1.0."


def test_goal_accuracy_needs_the_goal_call_without_error() -> None:
    goal = expect(goal={"tool": "book", "arguments": {"id": 7}})
    reached, failed, wrong, by_name, none = score(
        "goal-accuracy",
        [
            (goal, {"tool_calls": [{"name": "book", "arguments": {"id": "7", "x": 1}}]}),
            (goal, {"tool_calls": [{"name": "book", "arguments": {"id": 7}, "error": "no"}]}),
            (goal, {"tool_calls": [{"name": "book", "arguments": {"id": 8}}]}),
            (expect(goal="book"), traj("book")),
            ({}, traj("book")),
        ],
    )
    assert [reached["score"], failed["score"], wrong["score"], by_name["score"]] == [1, 0, 0, 1]
    assert none["error"] == "Sample 's4' has no metadata.trajectory.goal for goal-accuracy metric."


@pytest.mark.parametrize(
    ("mode", "scores"),
    [
        ("exact", [1.0, 0.0, 0.0, 0.0]),
        ("in-order", [1.0, 0.0, 1.0, 0.0]),
        ("any-order", [1.0, 1.0, 0.0, 0.0]),
        ("precision", [1.0, 1.0, 0.5, 1.0]),
        ("recall", [1.0, 1.0, 1.0, 0.5]),
        ("f1", [1.0, 1.0, 0.666667, 0.666667]),
    ],
)
def test_trajectory_match_modes(mode: str, scores: list[float]) -> None:
    e = expect(expected_tools=["a", "b"])
    results = score(
        f"trajectory-match(mode={mode})",
        [(e, traj("a", "b")), (e, traj("b", "a")), (e, traj("a", "c", "b", "c")), (e, traj("b"))],
    )
    assert [r["score"] for r in results] == scores


def test_trajectory_match_without_expectation_is_an_error() -> None:
    [r] = score("trajectory-match", [({}, traj("a"))])
    assert r["error"] == (
        "Sample 's0' has no metadata.trajectory.expected_tools for trajectory-match metric."
    )


def _reference_match(expected: list[str], called: list[str]) -> dict[str, float]:
    common = sum((Counter(expected) & Counter(called)).values())
    p = common / len(called) if called else float(not expected)
    r = common / len(expected) if expected else 1.0
    f = 0.0 if p + r == 0 else 2 * p * r / (p + r)
    it = iter(called)
    return {
        "exact": float(expected == called),
        "in-order": float(all(any(c == x for c in it) for x in expected)),
        "any-order": float(Counter(expected) == Counter(called)),
        "precision": round(p, 6),
        "recall": round(r, 6),
        "f1": round(f, 6),
    }


def test_trajectory_match_agrees_with_a_per_episode_reference() -> None:
    rng = random.Random(13)
    cases = [
        ([rng.choice("abcd") for _ in range(rng.randint(0, 4))],
         [rng.choice("abcd") for _ in range(rng.randint(0, 7))])
        for _ in range(120)
    ]  # fmt: skip
    for mode in ("exact", "in-order", "any-order", "precision", "recall", "f1"):
        results = score(
            f"trajectory-match(mode={mode})",
            [(expect(expected_tools=e), traj(*c)) for e, c in cases],
        )
        for (e, c), r in zip(cases, results, strict=True):
            assert r["score"] == _reference_match(e, c)[mode], (mode, e, c)


def test_agent_metrics_error_on_a_missing_trajectory() -> None:
    for metric in ("tool-correctness", "tool-error-rate", "goal-accuracy", "mcp-tool-selection"):
        [r] = score(metric, [(expect(goal="a", tools=["a"]), None)])
        assert r["error"].startswith(f"Metric '{metric}' needs a trajectory for sample 's0'")


# --- MCP ------------------------------------------------------------------------------------

MCP = {
    "mcp": {
        "tools": [
            {
                "name": "search",
                "inputSchema": {
                    "type": "object",
                    "properties": {"q": {"type": "string"}, "k": {"type": "integer"}},
                    "required": ["q"],
                },
            },
            {"name": "ping"},
        ]
    }
}


def test_mcp_tool_selection_flags_unadvertised_tools() -> None:
    r, none = score(
        "mcp-tool-selection", [(MCP, traj("search", "delete", "ping", "delete")), ({}, traj())]
    )
    assert r["score"] == 0.5
    assert r["details"]["unknown"] == ["delete"]
    assert none["error"] == (
        "Sample 's1' has no metadata.mcp.tools (the advertised MCP tools) for "
        "mcp-tool-selection metric."
    )


def test_mcp_arguments_validate_against_the_input_schema() -> None:
    trajectory = {
        "tool_calls": [
            {"name": "search", "arguments": {"q": "x", "k": 3}},
            {"name": "search", "arguments": {"q": "x", "k": "3"}},
            {"name": "search"},  # {} misses q
            {"name": "ping", "arguments": {"anything": 1}},
            {"name": "rm"},
        ]
    }
    [r] = score("mcp-arguments-valid", [(MCP, trajectory)])
    assert r["score"] == 0.4
    assert r["details"]["first_invalid"] == 1
    assert "'3' is not of type 'integer'" in r["details"]["reason"]


def test_bad_mcp_tools_are_a_dataset_error() -> None:
    with pytest.raises(ef.DatasetError, match=r"metadata\.mcp\.tools\[0\]"):
        ef.Dataset.from_records(
            [{"id": "a", "input": {}, "expected_output": "x", "metadata": {"mcp": {"tools": [1]}}}],
            name="d",
        )


# --- conversation ---------------------------------------------------------------------------


def test_turn_latency_and_token_cost_average_assistant_turns() -> None:
    conversation = [
        {"role": "user", "content": "hi", "latency_ms": 99_999},  # user turns are not graded
        {"role": "assistant", "content": "a", "latency_ms": 2_500, "tokens": 1024},
        {"role": "user", "content": "and?"},
        {"role": "assistant", "content": "b", "latency_ms": 20_000, "tokens": 0},
    ]
    cases = [({}, traj())] * 3
    turns = [conversation, [{"role": "assistant", "content": "x"}], None]
    latency = score("turn-latency", cases, turns)
    assert latency[0]["score"] == 0.375  # (0.75 + 0) / 2
    assert latency[0]["details"]["worst_assistant_turn"] == 1
    assert latency[1]["error"] == (
        "Sample 's1' has no latency_ms on turns[0] (an assistant turn) for turn-latency metric."
    )
    assert latency[2]["error"].startswith("Sample 's2' has no turns for turn-latency metric")
    tokens = score("turn-token-cost(max_tokens=2048)", cases, turns)
    assert tokens[0]["score"] == 0.75  # (0.5 + 1) / 2


@pytest.mark.parametrize("kernels", ["compiled", "interpreted"])
def test_tool_correctness_sides_are_polars_set_operations(
    kernels: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The compiled pass behind tool-correctness's details gives what Polars' list set
    operations give (their order included: a swap-remove per name taken out), nulls too."""
    from evalframe.metrics.agent import _distinct_sides

    monkeypatch.setenv("EVALFRAME_KERNELS", kernels)
    names = pl.List(pl.String)
    rng = random.Random(7)

    def tools(alphabet: int) -> list[str] | None:
        if rng.random() < 0.1:
            return None
        return [f"t{rng.randrange(alphabet)}" for _ in range(rng.randint(0, 9))]

    for alphabet in (2, 6, 30):
        expected = pl.Series([tools(alphabet) for _ in range(400)], dtype=names)
        called = pl.Series([tools(alphabet) for _ in range(400)], dtype=names)
        e = expected.list.unique(maintain_order=True)
        c = called.list.unique(maintain_order=True)
        sides, common, union = _distinct_sides(expected, called)
        empty = pl.Series([[]], dtype=names)
        assert sides["unexpected"].to_list() == c.list.set_difference(e.fill_null(empty)).to_list()
        assert sides["not_called"].to_list() == e.list.set_difference(c).to_list()
        assert common.to_list() == e.list.set_intersection(c).list.len().cast(pl.Int64).to_list()
        assert union.to_list() == e.list.set_union(c).list.len().cast(pl.Int64).to_list()
