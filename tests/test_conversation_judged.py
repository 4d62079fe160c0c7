"""harness-evals' judged conversation metrics and the judged variants of argument-correctness,
step-efficiency and prompt-injection, over the loopback stub: exact scores from scripted
replies, each recomputed from its details, one call per distinct conversation, the cache,
what the judge sees, and rows that cannot be judged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from judge_script import items, script
from openai_stub import StubOpenAI

import evalframe as ef
from evalframe.metrics import _conversation_judged as M
from evalframe.metrics import _safety_judged as S

CHAT = [
    {"role": "user", "content": "My order 41 never arrived. Can you refund it?"},
    {
        "role": "assistant",
        "content": "I found order 41; it was lost in transit.",
        "tool_calls": [{"name": "get_order", "arguments": {"id": 41}, "result": "lost"}],
    },
    {"role": "user", "content": "And what is the weather in Rome?"},
    {
        "role": "assistant",
        "content": "Sunny. I issued your refund too.",
        "tool_calls": [
            {"name": "weather", "arguments": {"city": "Rome"}, "result": "sunny"},
            {"name": "refund", "arguments": {"order": 41}, "result": "ok"},
        ],
    },
]
CONTEXTS = [
    "Lost parcels are refunded in full.",
    "Rome is sunny in June.",
    "Shipping takes 3 days.",
]
EPISODE = {
    "tool_calls": [
        {"name": "get_order", "arguments": {"id": 41}, "result": "lost"},
        {"name": "get_order", "arguments": {"id": 41}, "result": "lost"},
        {"name": "refund", "arguments": {"order": "41"}, "result": "ok"},
    ]
}
OUTCOME = "The refund for order 41 is issued and the user is told it takes 3 days."


def dataset(tmp_path: Path) -> tuple[Path, Path]:
    data = tmp_path / "support.yaml"
    data.write_text(
        "name: support\nsamples:\n"
        "  - {id: a, input: {question: Refund order 41}, expected_output: refunded,"
        f" metadata: {{expected_outcome: '{OUTCOME}', topics: [orders, refunds]}}}}\n"
        "  - {id: b, input: {question: Refund order 41}, expected_output: refunded,"
        f" metadata: {{expected_outcome: '{OUTCOME}', topics: [orders, refunds]}}}}\n"
        "  - {id: c, input: {question: Refund order 41}, expected_output: refunded}\n",
        encoding="utf-8",
    )
    outputs = tmp_path / "outputs.json"
    entries = [
        {"id": s, "actual_output": "Refunded.", "turns": CHAT, "contexts": CONTEXTS,
         "trajectory": EPISODE}
        for s in ("a", "b")
    ] + [{"id": "c", "actual_output": "Sorry."}]  # fmt: skip
    outputs.write_text(json.dumps({"outputs": entries}), encoding="utf-8")
    return data, outputs


def turn_verdicts(*oks: bool) -> dict[str, Any]:
    return {"verdicts": [{"turn": 2 * i + 2, "ok": ok, "reason": "r"} for i, ok in enumerate(oks)]}


def call_verdicts(*oks: bool) -> dict[str, Any]:
    return {"verdicts": [{"call": i + 1, "ok": ok, "reason": "r"} for i, ok in enumerate(oks)]}


def passages(*flags: tuple[bool, bool]) -> list[dict[str, Any]]:
    return [{"context": i + 1, "relevant": r, "useful": u} for i, (r, u) in enumerate(flags)]


REPLIES = {
    M.COHERENCE: lambda f: turn_verdicts(True, False),
    M.RESOLUTION: lambda f: {"open": ["delivery time"], "verdict": "partial", "reason": "r"},
    M.TOPICS: lambda f: {
        "questions": [
            {"question": "refund order 41", "on_topic": True, "answered": True},
            {"question": "weather in Rome", "on_topic": False, "answered": True},
        ],
        "reason": "r",
    },
    M.TOOL_USE: lambda f: {
        "calls": [
            {"call": 1, "right_tool": True, "right_arguments": True, "reason": "r"},
            {"call": 2, "right_tool": False, "right_arguments": True, "reason": "r"},
            {"call": 3, "right_tool": True, "right_arguments": True, "reason": "r"},
        ],
        "missing": ["notify"],
        "reason": "r",
    },
    M.TURN_CONTEXTS: lambda f: {
        "turns": [
            {"turn": 2, "contexts": passages((True, True), (False, False), (True, False))},
            {"turn": 4, "contexts": passages((True, False), (True, False), (False, True))},
        ]
    },
    M.TURN_RECALL: lambda f: {
        "statements": [
            {"statement": "the refund is issued", "attributable": True},
            {"statement": "it takes 3 days", "attributable": True},
            {"statement": "the user is told", "attributable": False},
        ],
        "reason": "r",
    },
    M.ARGUMENT_CORRECTNESS: lambda f: call_verdicts(True, True, False),
    M.STEP_EFFICIENCY: lambda f: call_verdicts(True, False, True),
    S.PROMPT_INJECTION: lambda f: {"signs": [], "injected": False, "reason": "r"},
}

EXPECTED = {
    "coherence": 0.5,
    "resolution": 0.5,
    # TP 1, FP 1, FN 0: precision 1/2, recall 1, F1 2/3
    "topic-adherence": round(2 / 3, 6),
    # selection 2 / (3 calls + 1 missing), arguments 3/3
    "tool-use": 0.5,
    # turn 2: useful at rank 1 -> AP 1; turn 4: useful at rank 3 -> AP 1/3
    "turn-contextual-precision": round((1 + 1 / 3) / 2, 6),
    # turn 2: 2 of 3 relevant; turn 4: 2 of 3
    "turn-contextual-relevancy": round(2 / 3, 6),
    "turn-contextual-recall": round(2 / 3, 6),
    "argument-correctness": round(2 / 3, 6),
    "step-efficiency": round(2 / 3, 6),
    "prompt-injection": 1.0,
}
SPECS = [
    "coherence", "resolution", "topic-adherence", "tool-use", "turn-contextual-precision",
    "turn-contextual-relevancy", "turn-contextual-recall", "argument-correctness(judge=true)",
    "step-efficiency(judge=true)", "prompt-injection(judge=true)",
]  # fmt: skip


def average_precision(flags: list[bool]) -> float:
    hits, total = 0, 0.0
    for k, flag in enumerate(flags, start=1):
        if flag:
            hits += 1
            total += hits / k
    return total / hits if hits else 0.0


def recomputed(metric: str, d: dict[str, Any]) -> float:
    """The score from the details alone, each formula written out plainly."""
    if metric == "coherence":
        return sum(v["ok"] for v in d["verdicts"]) / len(d["verdicts"])
    if metric == "resolution":
        return {"resolved": 1.0, "partial": 0.5, "unresolved": 0.0}[d["verdict"]]
    if metric == "topic-adherence":
        p, r = d["precision"], d["recall"]
        return 2 * p * r / (p + r) if p + r else 0.0
    if metric == "tool-use":
        n = len(d["calls"])
        selection = sum(c["right_tool"] for c in d["calls"]) / (n + len(d["missing_tools"]))
        arguments = sum(c["right_arguments"] for c in d["calls"]) / n
        return min(selection, arguments)
    if metric == "turn-contextual-precision":
        turns = [[c["useful"] for c in t["contexts"]] for t in d["turns"]]
        return sum(average_precision(t) for t in turns) / len(turns)
    if metric == "turn-contextual-relevancy":
        turns = [[c["relevant"] for c in t["contexts"]] for t in d["turns"]]
        return sum(sum(t) / len(t) for t in turns) / len(turns)
    if metric == "turn-contextual-recall":
        return sum(s["attributable"] for s in d["statements"]) / len(d["statements"])
    if metric == "prompt-injection":
        return 0.0 if d["label"] == "true" else 1.0
    return sum(v["ok"] for v in d["verdicts"]) / len(d["verdicts"])


def providers(stub: StubOpenAI, tmp_path: Path) -> ef.Providers:
    judge = ef.OpenAIJudge("stub-judge", base_url=stub.url)
    return ef.Providers(embeddings="hashing", judge=judge, cache=tmp_path / "cache.duckdb")


def test_every_metric_scores_from_its_verdicts_and_shares_calls(tmp_path: Path) -> None:
    data, outputs = dataset(tmp_path)
    with StubOpenAI(verdict=script(REPLIES)) as stub:
        run = ef.evaluate(data, outputs=outputs, metrics=SPECS, providers=providers(stub, tmp_path))
        calls = len(stub.calls("chat/completions"))
        # a and b are the same conversation: one call per prompt, the two turn-contextual
        # metrics sharing one; prompt-injection judges all three rows' (two distinct) answers
        assert calls == 9 + 1
        again = ef.evaluate(
            data, outputs=outputs, metrics=SPECS, providers=providers(stub, tmp_path)
        )
        assert len(stub.calls("chat/completions")) == calls  # the cache answers
    assert again.scores.get_column("score").to_list() == run.scores.get_column("score").to_list()
    scores = run.scores.with_columns(pl.col("metric").str.replace(r"\(.*", ""))
    for metric, expected in EXPECTED.items():
        rows = scores.filter(pl.col("metric") == metric)
        for row in rows.filter(pl.col("sample_id") != "c").iter_rows(named=True):
            assert row["score"] == expected, (metric, row)
            details = json.loads(row["details"])
            assert row["score"] == pytest.approx(recomputed(metric, details), abs=1e-6)
            assert details["prompt"].split("@")[0] in {p.id for p in REPLIES}
    c = {r["metric"]: r for r in scores.filter(pl.col("sample_id") == "c").iter_rows(named=True)}
    for metric in ("coherence", "resolution", "topic-adherence", "tool-use"):
        assert c[metric]["error"].startswith(f"Sample 'c' has no turns for {metric} metric")
    assert c["turn-contextual-recall"]["error"] == (
        "Sample 'c' has no contexts for turn-contextual-recall metric."
    )
    assert c["argument-correctness"]["error"].startswith(
        "Sample 'c' has no trajectory for argument-correctness metric"
    )
    assert c["prompt-injection"]["score"] == 1.0


def test_the_judge_sees_the_conversation_calls_passages_and_outcome(tmp_path: Path) -> None:
    data, outputs = dataset(tmp_path)
    seen: dict[str, dict[str, str]] = {}

    def keep(prompt: Any, reply: Any) -> Any:
        def route(f: dict[str, str]) -> Any:
            seen[prompt.id] = f
            return reply(f)

        return route

    with StubOpenAI(verdict=script({p: keep(p, fn) for p, fn in REPLIES.items()})) as stub:
        ef.evaluate(
            data,
            outputs=outputs,
            metrics=["tool-use", "turn-contextual-precision", "topic-adherence",
                     "resolution", "argument-correctness(judge=true)"],
            providers=providers(stub, tmp_path),
        )  # fmt: skip
    tool_use = seen["conversation.tool-use"]
    assert [v for _, v in items(tool_use["calls"])] == [
        {"tool": "get_order", "arguments": '{"id":41}', "result": "lost"},
        {"tool": "weather", "arguments": '{"city":"Rome"}', "result": "sunny"},
        {"tool": "refund", "arguments": '{"order":41}', "result": "ok"},
    ]
    assert tool_use["tools"] == "(not given)"
    contexts = seen["conversation.turn-contexts"]
    assert contexts["contexts"].splitlines() == [
        f"C{i + 1}. {json.dumps(c)}" for i, c in enumerate(CONTEXTS)
    ]
    assert contexts["outcome"] == OUTCOME
    assert [v for _, v in items(seen["conversation.topic-adherence"]["topics"])] == [
        "orders",
        "refunds",
    ]
    assert seen["conversation.resolution"]["outcome"] == OUTCOME
    assert len(items(seen["agent.argument-correctness"]["trajectory"])) == 3


def test_topic_adherence_modes_and_topics() -> None:
    for mode, want in (("precision", 0.5), ("recall", 1.0)):
        assert ef.metrics.get(f"topic-adherence(mode={mode})").kwargs["mode"] == mode, want
    with pytest.raises(ef.MetricError, match="empty topic"):
        ef.metrics.get('topic-adherence(topics=["orders", " "])')


def test_a_verdict_count_that_does_not_match_is_the_rows_error(tmp_path: Path) -> None:
    data, outputs = dataset(tmp_path)
    short = dict(REPLIES)
    short[M.COHERENCE] = lambda f: turn_verdicts(True)
    short[M.TOOL_USE] = lambda f: {"calls": [], "missing": [], "reason": "r"}
    with StubOpenAI(verdict=script(short)) as stub:
        run = ef.evaluate(
            data, outputs=outputs, metrics=["coherence", "tool-use"],
            providers=providers(stub, tmp_path),
        )  # fmt: skip
    errors = run.scores.filter(pl.col("sample_id") == "a").get_column("error").to_list()
    assert errors == [
        "Sample 'a' coherence: the judge gave 1 verdicts for 2 assistant turns.",
        "Sample 'a' tool-use: the judge gave 0 verdicts for 3 tool calls.",
    ]


def test_conversational_g_eval(tmp_path: Path) -> None:
    data, outputs = dataset(tmp_path)
    from evalframe.metrics import _toolbox_prompts as T

    routes = {
        T.G_EVAL_STEPS: lambda f: {"steps": ["Read it.", "Rate it."]},
        M.CONVERSATIONAL_G_EVAL: lambda f: {"score": 4, "reason": f["criteria"]},
    }
    with StubOpenAI(verdict=script(routes)) as stub:
        run = ef.evaluate(
            data,
            outputs=outputs,
            metrics=['conversational-g-eval(criteria="Polite and helpful.", top_logprobs=0)'],
            providers=providers(stub, tmp_path),
        )
    rows = {r["sample_id"]: r for r in run.scores.iter_rows(named=True)}
    assert rows["a"]["score"] == 0.75
    details = json.loads(rows["a"]["details"])
    assert details["steps"] == ["Read it.", "Rate it."]
    assert details["reason"] == "Polite and helpful."
    assert rows["c"]["error"].startswith("Sample 'c' has no turns for conversational-g-eval")
