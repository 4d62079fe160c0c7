"""The bundled agent example: both versions score every row, and a system can return turns."""

from __future__ import annotations

from pathlib import Path

import polars as pl

import evalframe as ef

EXAMPLES = Path(ef.__file__).parent / "examples"


def test_both_agent_versions_score_every_row_of_every_metric() -> None:
    dataset = ef.read_dataset(EXAMPLES / "agent.yaml")
    assert len(dataset.metrics) == 15
    for version in ("v1", "v2"):
        run = ef.evaluate(dataset, outputs=EXAMPLES / f"agent.{version}.outputs.json")
        assert run.scores.get_column("error").null_count() == run.scores.height
        assert run.frame.get_column("trajectory").null_count() == 0
    # v1's flaky refund tool is the worst tool of its cohort
    v1 = ef.evaluate(dataset, outputs=EXAMPLES / "agent.v1.outputs.json")
    calls = (
        v1.frame.select("tags", pl.col("trajectory").struct.field("tool_calls"))
        .explode("tool_calls")
        .unnest("tool_calls")
        .explode("tags")
        .group_by("tags", "name")
        .agg(rate=pl.col("error").is_not_null().mean())
        .sort("rate", descending=True)
    )
    assert calls.row(0)[:2] == ("refunds", "issue_refund")


def test_system_returning_turns_scores_turn_latency() -> None:
    dataset = ef.Dataset.from_records(
        [{"id": "c1", "input": {"question": "hi"}, "expected_output": "x"}], name="chat"
    )

    def chat(inp: dict[str, object]) -> dict[str, object]:
        turns = [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello", "latency_ms": 1000, "tokens": 10},
        ]
        return {"output": "hello", "turns": turns}

    run = ef.evaluate(dataset, system=chat, metrics=["turn-latency(max_ms=2000)"])
    assert run.scores.get_column("score").to_list() == [0.5]
