"""A system's confidence and trajectory reach the reliability metrics from saved outputs,
a system under test, and the store."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

import evalframe as ef

RECORDS = [
    {"id": f"s{i}", "input": {"q": i}, "expected_output": "yes"} for i in range(4)
]  # fmt: skip
ANSWERS = ["yes", "no", "yes", "no"]
CONFIDENCE = [0.9, 0.8, 0.6, 0.1]


def brier_by_hand() -> list[float]:
    return [1 - (c - (a == "yes")) ** 2 for a, c in zip(ANSWERS, CONFIDENCE, strict=True)]


def write_outputs(tmp_path: Path, fmt: str) -> Path:
    rows = [
        {"id": f"s{i}", "actual_output": a, "confidence": c}
        for i, (a, c) in enumerate(zip(ANSWERS, CONFIDENCE, strict=True))
    ]
    path = tmp_path / f"outputs.{fmt}"
    if fmt == "json":
        path.write_text(json.dumps({"outputs": rows}), encoding="utf-8")
    elif fmt == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    else:
        pl.DataFrame(rows).write_csv(path)
    return path


@pytest.mark.parametrize("fmt", ["json", "jsonl", "csv"])
def test_saved_confidence_is_read_scored_and_stored(tmp_path: Path, fmt: str) -> None:
    ds = ef.Dataset.from_records(RECORDS, name="conf")
    db = tmp_path / "s.duckdb"
    run = ef.evaluate(ds, outputs=write_outputs(tmp_path, fmt), metrics=["brier-score"], store=db)
    scores = run.scores.sort("sample_id").get_column("score").to_list()
    assert scores == pytest.approx(brier_by_hand())
    with ef.Store(db) as store:
        loaded = store.load(run.run_id)
    assert loaded.frame.sort("sample_id").get_column("confidence").to_list() == CONFIDENCE


def test_a_confidence_that_is_not_a_number_names_the_field(tmp_path: Path) -> None:
    path = tmp_path / "o.json"
    path.write_text(
        json.dumps({"outputs": [{"id": "s0", "actual_output": "yes", "confidence": "high"}]}),
        encoding="utf-8",
    )
    with pytest.raises(ef.DatasetError, match=r"sample 's0'\) field 'confidence' must be a number"):
        ef.read_outputs(path)


def test_trajectory_consistency_reads_the_recorded_trajectory() -> None:
    calls = {"n": 0}

    def agent(inp: dict[str, int]) -> dict[str, object]:
        calls["n"] += 1
        tools = ["search", "answer"] if inp["q"] or calls["n"] % 3 else ["answer"]
        return {"output": "yes", "trajectory": {"tool_calls": tools}}

    ds = ef.Dataset.from_records(RECORDS[:2], name="agents")
    run = ef.evaluate(
        ds, system=agent, metrics=["trajectory-consistency"], repetitions=3, concurrency=1
    )
    by_sample = run.scores.group_by("sample_id").agg(pl.col("score").first()).sort("sample_id")
    assert by_sample.get_column("score").to_list() == pytest.approx([2 / 3, 1.0])


def test_a_system_under_test_reports_its_confidence() -> None:
    def system(inp: dict[str, int]) -> dict[str, object]:
        i = inp["q"]
        return {"output": ANSWERS[i], "confidence": CONFIDENCE[i]}

    run = ef.evaluate(ef.Dataset.from_records(RECORDS, name="c"), system=system,
                      metrics=["brier-score"])  # fmt: skip
    scores = run.scores.sort("sample_id").get_column("score").to_list()
    assert scores == pytest.approx(brier_by_hand())

    def bad(inp: dict[str, int]) -> dict[str, object]:
        return {"output": "yes", "confidence": "sure"}

    failed = ef.evaluate(ef.Dataset.from_records(RECORDS[:1], name="c"), system=bad,
                         metrics=["brier-score"])  # fmt: skip
    assert failed.scores.get_column("error")[0] == (
        "System-under-test for sample 's0' returned 'confidence' that is not a number; got str."
    )
