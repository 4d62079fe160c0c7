"""answer-relevancy's generated-questions mode: the judge writes the questions an answer
answers, the embedder compares them with the input's question (numpy is the oracle)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from judge_script import script
from openai_stub import StubOpenAI

import evalframe as ef
from evalframe.metrics._rag_prompts import QUESTIONS
from evalframe.providers import Ledger

SPEC = "answer-relevancy(mode=questions, questions=2)"
ASKED = "How long is the refund window?"


def dataset() -> ef.Dataset:
    return ef.Dataset.from_records(
        [
            {"id": "a", "input": {"question": ASKED}, "expected_output": "x"},
            {"id": "b", "input": {"question": ASKED}, "expected_output": "x"},
            {"id": "c", "input": {"question": "Do you ship abroad?"}, "expected_output": "x"},
            {"id": "d", "input": {"question": "Gift cards?"}, "expected_output": "x"},
        ],
        name="relevancy",
    )


OUTPUTS = {"a": "30 days.", "b": "30 days.", "c": "It depends.", "d": "Sorry."}


def generated(f: dict[str, str]) -> Any:
    if f["answer"] == "It depends.":
        return {"questions": ["Do you ship abroad?", "Where?"], "noncommittal": True}
    if f["answer"] == "Sorry.":
        return "not json"
    assert f["n"] == "2"
    return {"questions": [ASKED, "When can I return an item?"], "noncommittal": False}


def oracle(question: str, questions: list[str]) -> float:
    """Mean cosine of the question with each generated one, clipped to [0, 1], by numpy."""
    vectors = ef.HashingEmbedder().embed([question, *questions], Ledger()).vectors
    q, rest = np.asarray(vectors[0], dtype=np.float64), vectors[1:]
    cos = [float(np.dot(q, v) / (np.linalg.norm(q) * np.linalg.norm(v))) for v in rest]
    return min(1.0, max(0.0, float(np.mean([round(c, 6) for c in cos]))))


def test_the_score_is_the_mean_cosine_and_zero_when_noncommittal(tmp_path: Path) -> None:
    with StubOpenAI(verdict=script({QUESTIONS: generated})) as stub:
        judge = ef.OpenAIJudge("m", base_url=stub.url, retries=0)
        providers = ef.Providers(embeddings="hashing", judge=judge, cache=tmp_path / "c.duckdb")
        run = ef.evaluate(dataset(), outputs=OUTPUTS, metrics=[SPEC], providers=providers)
        assert len(stub.calls("chat/completions")) == 3  # a and b share one prompt
        ef.evaluate(dataset(), outputs=OUTPUTS, metrics=[SPEC], providers=providers)
        assert len(stub.calls("chat/completions")) == 3  # the cache answers a second run
    rows = {r["sample_id"]: r for r in run.scores.iter_rows(named=True)}
    a = json.loads(rows["a"]["details"])
    assert a["questions"] == [ASKED, "When can I return an item?"]
    assert a["cosines"][0] == 1.0  # the same question
    assert rows["a"]["score"] == round(oracle(ASKED, a["questions"]), 6)
    assert rows["b"]["score"] == rows["a"]["score"]
    # recomputable from the details alone
    assert rows["a"]["score"] == round(min(1.0, max(0.0, float(np.mean(a["cosines"])))), 6)
    c = json.loads(rows["c"]["details"])
    assert (rows["c"]["score"], c["noncommittal"]) == (0.0, True)
    assert rows["d"]["score"] is None
    assert rows["d"]["error"].startswith("Sample 'd' answer-relevancy judge failed:")


def test_the_default_stays_the_direct_verdict() -> None:
    metric = ef.metrics.get("answer-relevancy")
    assert dict(metric.params)["mode"] == "direct"
    assert not any(type(n).__name__ == "ListEmbeddings" for n in metric.needs())
    (need,) = ef.metrics.get(SPEC).needs()
    assert type(need).__name__ == "ListEmbeddings"
    assert need.column == f"embed__relevancy-questions(n=2)@{QUESTIONS.key}"
