"""Judge-backed agent and conversation metrics over the loopback stub: exact scores from
scripted replies, evidence in the details, one call per distinct episode, errors per row."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from judge_script import items, script
from openai_stub import StubOpenAI

import evalframe as ef
from evalframe.metrics import _dialogue_judged as D

EPISODE = {
    "tool_calls": [
        {"name": "search_flights", "arguments": {"to": "Rome"}, "result": "AZ 610 at 09:10"},
        {"name": "book", "arguments": {"flight": "AZ 610"}, "error": "card declined"},
    ],
    "steps": 3,
    "finish_reason": "stop",
}
CHAT = [
    {"role": "user", "content": "I'm vegetarian. Suggest a dinner in Rome."},
    {"role": "assistant", "content": "Try Da Enzo's cacio e pepe."},
    {"role": "user", "content": "And for dessert?"},
    {"role": "assistant", "content": "Their tiramisu, then a walk to the Pantheon."},
]


def dataset(tmp_path: Path) -> tuple[Path, Path]:
    data = tmp_path / "agent.yaml"
    data.write_text(
        "name: agent\nsamples:\n"
        "  - {id: a, input: {question: Book me a flight to Rome}, expected_output: booked,"
        " metadata: {plan: [search flights, book the cheapest], role: a Roman food guide}}\n"
        "  - {id: b, input: {question: Book me a flight to Rome}, expected_output: booked}\n"
        "  - {id: c, input: {question: Book me a flight to Rome}, expected_output: booked}\n",
        encoding="utf-8",
    )
    outputs = tmp_path / "outputs.json"
    entries = [
        {"id": "a", "actual_output": "Booked AZ 610.", "trajectory": EPISODE, "turns": CHAT,
         "contexts": ["Da Enzo serves cacio e pepe and tiramisu."]},
        {"id": "b", "actual_output": "Booked AZ 610.", "trajectory": EPISODE, "turns": CHAT,
         "contexts": ["Da Enzo serves cacio e pepe and tiramisu."]},
        {"id": "c", "actual_output": "Sorry."},
    ]  # fmt: skip
    outputs.write_text(json.dumps({"outputs": entries}), encoding="utf-8")
    return data, outputs


def verdicts(*oks: bool) -> dict[str, Any]:
    return {"verdicts": [{"turn": 2 * i + 2, "ok": ok, "reason": "r"} for i, ok in enumerate(oks)]}


REPLIES = {
    D.TASK_COMPLETION: lambda f: {
        "task": "book a flight",
        "outcome": "found a flight, booking failed",
        "verdict": "partial",
        "reason": "the card was declined" if "card declined" in f["trajectory"] else "?",
    },
    D.PLAN_ADHERENCE: lambda f: {
        "plan": [{"step": "search flights", "followed": True}, {"step": "book", "followed": False}],
        "reason": f["plan"],
    },
    D.PLAN_QUALITY: lambda f: {
        "plan": ["search", "book"],
        "complete": True,
        "logical": True,
        "efficient": False,
        "reason": "r",
    },
    D.COMPLETENESS: lambda f: {
        "intentions": [
            {"intention": "dinner", "satisfied": True},
            {"intention": "dessert", "satisfied": True},
            {"intention": "vegetarian", "satisfied": False},
        ],
        "reason": "r",
    },
    D.KNOWLEDGE_RETENTION: lambda f: verdicts(True, True),
    D.ROLE_ADHERENCE: lambda f: verdicts(True, "Pantheon" not in f["role"]),
    D.RELEVANCY: lambda f: verdicts(True, f["window"] == "3"),
    D.TURN_FAITHFULNESS: lambda f: verdicts(True, False),
}

EXPECTED = {
    "task-completion": 0.5,
    "plan-adherence": 0.5,
    "plan-quality": round(2 / 3, 6),
    "conversation-completeness": round(2 / 3, 6),
    "knowledge-retention": 1.0,
    "role-adherence": 1.0,
    "conversation-relevancy": 1.0,
    "turn-faithfulness": 0.5,
}


def recomputed(metric: str, details: dict[str, Any]) -> float:
    """The score from the details alone: the independent oracle of each formula."""
    if metric == "task-completion":
        return {"complete": 1.0, "partial": 0.5, "incomplete": 0.0}[details["verdict"]]
    if metric == "plan-adherence":
        steps = details["plan"]
        return sum(s["followed"] for s in steps) / len(steps)
    if metric == "plan-quality":
        return (details["complete"] + details["logical"] + details["efficient"]) / 3
    if metric == "conversation-completeness":
        found = details["intentions"]
        return sum(i["satisfied"] for i in found) / len(found) if found else 1.0
    return sum(v["ok"] for v in details["verdicts"]) / len(details["verdicts"])


def providers(stub: StubOpenAI, tmp_path: Path) -> ef.Providers:
    judge = ef.OpenAIJudge("stub-judge", base_url=stub.url)
    return ef.Providers(embeddings="hashing", judge=judge, cache=tmp_path / "cache.duckdb")


def test_every_metric_scores_from_its_verdicts_and_shares_calls(tmp_path: Path) -> None:
    data, outputs = dataset(tmp_path)
    metrics = [
        "task-completion", "plan-adherence", "plan-quality", "conversation-completeness",
        "knowledge-retention", "role-adherence(role=a Roman food guide)",
        "conversation-relevancy", "turn-faithfulness",
    ]  # fmt: skip
    with StubOpenAI(verdict=script(REPLIES)) as stub:
        run = ef.evaluate(
            data, outputs=outputs, metrics=metrics, providers=providers(stub, tmp_path)
        )
        calls = len(stub.calls("chat/completions"))
        # a and b are the same episode and conversation: one call per metric for both, but
        # a's plan comes from its metadata and b's is inferred: two calls for each plan metric
        assert calls == len(metrics) + 2
        again = ef.evaluate(
            data, outputs=outputs, metrics=metrics, providers=providers(stub, tmp_path)
        )
        assert len(stub.calls("chat/completions")) == calls  # the cache answers
    assert again.scores.get_column("score").to_list() == run.scores.get_column("score").to_list()
    scores = run.scores.with_columns(pl.col("metric").str.replace(r"\(.*", ""))
    for metric, expected in EXPECTED.items():
        rows = scores.filter(pl.col("metric") == metric)
        for row in rows.filter(pl.col("sample_id") != "c").iter_rows(named=True):
            assert row["score"] == expected, (metric, row)
            assert row["score"] == pytest.approx(recomputed(metric, json.loads(row["details"])))
        (c,) = rows.filter(pl.col("sample_id") == "c").iter_rows(named=True)
        assert c["score"] is None
        what = (
            "trajectory"
            if metric in ("task-completion", "plan-adherence", "plan-quality")
            else "turns"
        )
        assert c["error"].startswith(f"Sample 'c' has no {what} for {metric} metric")
    details = json.loads(
        run.scores.filter((pl.col("metric") == "plan-adherence") & (pl.col("sample_id") == "a"))
        .get_column("details")
        .item()
    )
    assert details["prompt"] == D.PLAN_ADHERENCE.key


def test_the_judge_sees_the_episode_and_the_conversation(tmp_path: Path) -> None:
    data, outputs = dataset(tmp_path)
    seen: dict[str, dict[str, str]] = {}
    plans: set[str] = set()

    def keep(prompt: Any, reply: Any) -> Any:
        def route(f: dict[str, str]) -> Any:
            seen[prompt.id] = f
            plans.add(f.get("plan", ""))
            return reply(f)

        return route

    routes = {p: keep(p, fn) for p, fn in REPLIES.items()}
    with StubOpenAI(verdict=script(routes)) as stub:
        ef.evaluate(
            data, outputs=outputs, metrics=["task-completion", "plan-adherence",
            "knowledge-retention", "turn-faithfulness"], providers=providers(stub, tmp_path),
        )  # fmt: skip
    assert items(seen["agent.task-completion"]["trajectory"]) == [
        (
            "1",
            {"tool": "search_flights", "arguments": '{"to":"Rome"}', "result": "AZ 610 at 09:10"},
        ),
        ("2", {"tool": "book", "arguments": '{"flight":"AZ 610"}', "error": "card declined"}),
    ]
    # a's plan from its metadata (fenced); b has none: "(none)", the judge infers it
    assert plans == {"", '["search flights","book the cheapest"]', "(none)"}
    assert items(seen["conversation.knowledge-retention"]["conversation"]) == [
        ("1", {"role": "user", "content": "I'm vegetarian. Suggest a dinner in Rome."}),
        ("2", {"role": "assistant", "content": "Try Da Enzo's cacio e pepe."}),
        ("3", {"role": "user", "content": "And for dessert?"}),
        ("4", {"role": "assistant", "content": "Their tiramisu, then a walk to the Pantheon."}),
    ]
    assert items(seen["conversation.turn-faithfulness"]["context"]) == [
        ("1", "Da Enzo serves cacio e pepe and tiramisu.")
    ]


def test_wrong_verdict_counts_and_bad_replies_are_row_errors(tmp_path: Path) -> None:
    data, outputs = dataset(tmp_path)
    routes = {
        D.KNOWLEDGE_RETENTION: lambda f: verdicts(True),  # two assistant turns, one verdict
        D.TASK_COMPLETION: lambda f: "not json",
        D.ROLE_ADHERENCE: lambda f: verdicts(True, True),
    }
    with StubOpenAI(verdict=script(routes)) as stub:
        run = ef.evaluate(
            data,
            outputs=outputs,
            metrics=["knowledge-retention", "task-completion", "role-adherence"],
            providers=providers(stub, tmp_path),
        )
    errors = dict(
        run.scores.filter(pl.col("sample_id") == "b").select("metric", "error").iter_rows()
    )
    assert errors["knowledge-retention"] == (
        "Sample 'b' knowledge-retention: the judge gave 1 verdicts for 2 assistant turns."
    )
    assert errors["task-completion"].startswith(
        f"Sample 'b' judge reply for task-completion ({D.TASK_COMPLETION.key}) failed:"
    )
    # no role=... and no metadata.role on b: nothing is sent for it
    assert errors["role-adherence"] == (
        "Sample 'b' has no role for role-adherence: pass role=... or set metadata.role."
    )
    a = run.scores.filter((pl.col("sample_id") == "a") & (pl.col("metric") == "role-adherence"))
    assert a.get_column("score").item() == 1.0  # metadata.role


def test_an_episode_or_conversation_past_the_limit_is_refused(tmp_path: Path) -> None:
    data, _ = dataset(tmp_path)
    calls = [{"name": "ping", "arguments": {}, "result": "ok"}] * (D.MAX_ITEMS + 1)
    turns = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}] * (
        D.MAX_ITEMS // 2 + 1
    )
    outputs = tmp_path / "long.json"
    entries = [
        {"id": sid, "actual_output": "x", "trajectory": {"tool_calls": calls}, "turns": turns}
        for sid in ("a", "b", "c")
    ]
    outputs.write_text(json.dumps({"outputs": entries}), encoding="utf-8")
    with StubOpenAI(verdict=script(REPLIES)) as stub:
        run = ef.evaluate(
            data,
            outputs=outputs,
            metrics=["task-completion", "knowledge-retention"],
            providers=providers(stub, tmp_path),
        )
        assert stub.calls("chat/completions") == []  # nothing past the limit is sent
    errors = set(run.scores.get_column("error").str.replace("Sample '.' ", "").to_list())
    assert errors == {
        f"has more than {D.MAX_ITEMS} tool calls; task-completion judges at most that many.",
        f"has more than {D.MAX_ITEMS} turns; knowledge-retention judges at most that many.",
    }
