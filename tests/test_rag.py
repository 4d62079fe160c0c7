"""RAG metrics against the loopback stub with scripted replies (tests/rag_script.py): exact
values, edge cases, unparseable replies, the budget, the cache, and scores recomputed from
their details alone."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from judge_script import fields, items, script
from openai_stub import StubOpenAI
from rag_script import VERDICT, claims_of

import evalframe as ef
from evalframe.metrics._rag_prompts import CLAIMS, CORRECTNESS, ENTITIES, GROUNDING
from evalframe.metrics._registry import resolve
from evalframe.providers import ENV

METRICS = [
    "faithfulness",
    "answer-relevancy",
    "answer-correctness",
    "context-precision",
    "context-precision(reference=false)",
    "context-recall",
    "context-relevancy",
    "context-entity-recall",
    "hallucination",
]

ROWS: list[tuple[str, str, str, str, list[str] | None]] = [
    # id, question, expected, actual, contexts
    (
        "paris",
        "Where is Paris located",
        "Paris is in France. Paris is the capital",
        "Paris is in France. Paris has two million people",
        ["Paris is in France, relevant", "Cats purr", "paris is the capital"],
    ),
    (
        "sky",
        "What colour is the sky",
        "The sky is blue",
        "The sky is green",
        ["The sky is not the sky is green today", "the sky is blue"],
    ),
    ("empty", "Say nothing", "nothing", "nothing", []),
    (
        "dup",
        "Which river flows through Paris",
        "The Seine flows through Paris",
        "The Seine flows through Paris",
        ["x relevant", "the seine flows through paris", "the seine flows through paris"],
    ),
    ("none", "What colour is the sky", "The sky is blue", "The sky is blue", None),
]

# metric -> expected score per sample id (None: an error)
EXPECTED: dict[str, dict[str, float | None]] = {
    "faithfulness": {"paris": 0.5, "sky": 0.0, "empty": 1.0, "dup": 1.0, "none": 0.0},
    "answer-relevancy": {"paris": 1.0, "sky": 0.0, "empty": 0.0, "dup": 1.0, "none": 0.0},
    "answer-correctness": {"paris": 0.5, "sky": 0.0, "empty": None, "dup": 1.0, "none": 1.0},
    "context-precision": {"paris": 5 / 6, "sky": 0.5, "empty": None, "dup": 7 / 12, "none": 0.0},
    "context-precision(reference=false)": {
        "paris": 1.0,
        "sky": 0.0,
        "empty": 0.0,
        "dup": 7 / 12,
        "none": 0.0,
    },
    "context-recall": {"paris": 1.0, "sky": 1.0, "empty": None, "dup": 1.0, "none": 0.0},
    "context-relevancy": {"paris": 2 / 3, "sky": 0.5, "empty": 0.0, "dup": 1.0, "none": 0.0},
    # "dup": The, Seine, Paris are capitalised only in the expected output: none found
    "context-entity-recall": {"paris": 1.0, "sky": 1.0, "empty": None, "dup": 0.0, "none": 0.0},
    "hallucination": {"paris": 0.0, "sky": 0.5, "empty": 0.0, "dup": 0.0, "none": 0.0},
}


def frame(rows: list[tuple[str, str, str, str, list[str] | None]] = ROWS) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "sample_id": [r[0] for r in rows],
            "input": [json.dumps({"question": r[1]}) for r in rows],
            "expected_output": [r[2] for r in rows],
            "expected_type": ["string"] * len(rows),
            "metadata": ["{}"] * len(rows),
            "tags": [[] for _ in rows],
            "actual_output": [r[3] for r in rows],
            "contexts": [r[4] for r in rows],
        },
        schema_overrides={"tags": pl.List(pl.String), "contexts": pl.List(pl.String)},
    )


@pytest.fixture(autouse=True)
def _no_provider_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV.values():
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def stub() -> Iterator[StubOpenAI]:
    with StubOpenAI(verdict=VERDICT) as server:
        yield server


def providers(stub: StubOpenAI, **kwargs: Any) -> ef.Providers:
    kwargs.setdefault("cache", False)
    judge = ef.OpenAIJudge("judge-m", base_url=stub.url, concurrency=kwargs.pop("concurrency", 8))
    return ef.Providers(embeddings="hashing", judge=judge, **kwargs)


def prompts(stub: StubOpenAI) -> list[str]:
    return [c.body["messages"][0]["content"] for c in stub.calls("chat/completions")]


def scores_of(out: pl.DataFrame) -> dict[str, dict[str, float | None]]:
    table: dict[str, dict[str, float | None]] = {}
    for metric, sample, score in out.select("metric", "sample_id", "score").iter_rows():
        table.setdefault(metric, {})[sample] = score
    return table


def test_every_metric_gives_the_worked_out_value(stub: StubOpenAI) -> None:
    out = ef.score(frame(), resolve(METRICS), context=providers(stub))
    got = scores_of(out)
    for metric, expected in EXPECTED.items():
        for sample, value in expected.items():
            if value is None:
                assert got[metric][sample] is None, (metric, sample)
            else:
                assert got[metric][sample] == pytest.approx(value, abs=1e-12), (metric, sample)


def test_all_nine_metrics_share_the_stages(stub: StubOpenAI) -> None:
    ef.score(frame(), resolve(METRICS), context=providers(stub))
    sent = prompts(stub)
    by = {
        p.id: [t for t in sent if fields(t, p) is not None]
        for p in (CLAIMS, GROUNDING, CORRECTNESS, ENTITIES)
    }
    # claims: once per distinct text among answers and expected outputs (8 texts)
    texts = {r[2] for r in ROWS} | {r[3] for r in ROWS}
    assert sorted(fields(t, CLAIMS)["text"] for t in by["rag.claims"]) == sorted(texts)  # type: ignore[index]
    assert len(by["rag.grounding"]) == 4  # one per sample; "empty" has nothing to judge
    assert len(by["rag.correctness"]) == 4  # "empty" states no claims
    # entities: 4 distinct expected outputs ("nothing" included) + 3 + 2 + 2 distinct contexts
    assert len(by["rag.entities"]) == 4 + 7
    assert len(sent) == sum(len(v) for v in by.values())


def test_duplicate_contexts_are_sent_once_and_judged_at_every_rank(stub: StubOpenAI) -> None:
    out = ef.score(frame(ROWS[3:4]), resolve(["context-precision"]), context=providers(stub))
    grounding = [fields(t, GROUNDING) for t in prompts(stub) if fields(t, GROUNDING)]
    assert items(grounding[0]["passages"]) == [  # type: ignore[index]
        ("1", "x relevant"),
        ("2", "the seine flows through paris"),
    ]
    details = json.loads(out["details"][0])
    assert details["relevant"] == [False, True, True]
    assert details["relevant_ranks"] == [2, 3]


def test_contexts_beyond_the_token_cap_are_cut(stub: StubOpenAI) -> None:
    rows = [("moon", "What is the moon made of", "x", "The moon is made of rock", None)]
    long = ["a b c d e The moon is made of rock"]
    f = frame(rows).with_columns(pl.Series("contexts", [long], dtype=pl.List(pl.String)))
    capped = ef.score(f, resolve(["faithfulness(max_context_tokens=5)"]), context=providers(stub))
    passages = [fields(t, GROUNDING)["passages"] for t in prompts(stub) if fields(t, GROUNDING)]  # type: ignore[index]
    assert passages == ['1. "a b c d e"']
    assert capped["score"].to_list() == [0.0]
    whole = ef.score(f, resolve(["faithfulness"]), context=providers(stub))
    assert whole["score"].to_list() == [1.0]


def test_an_unparseable_reply_is_that_rows_error(stub: StubOpenAI) -> None:
    rows = [*ROWS[:1], ("bad", "Where is Paris located", "Paris is in France", "garbled", ["x"])]
    out = ef.score(
        frame(rows), resolve(["faithfulness", "context-recall"]), context=providers(stub)
    )
    bad = out.filter(pl.col("sample_id") == "bad")
    assert bad["score"].to_list() == [None, None]
    for message in bad["error"].to_list():
        assert message.startswith(f"claims ({CLAIMS.key}): judge reply is not valid JSON")
    good = out.filter(pl.col("sample_id") == "paris")
    assert good["score"].to_list() == [0.5, 1.0]


def test_a_verdict_missing_from_the_reply_is_an_error_not_a_guess() -> None:
    def lazy_grounding(f: dict[str, str]) -> Any:
        return {"passages": [{"passage": 1, "relevant": True}], "statements": []}

    verdict = script(
        {CLAIMS: lambda f: {"claims": claims_of(f["text"])}, GROUNDING: lazy_grounding}
    )
    with StubOpenAI(verdict=verdict) as server:
        out = ef.score(frame(ROWS[:1]), resolve(["faithfulness"]), context=providers(server))
    assert out["score"].to_list() == [None]
    assert out["error"][0] == "Sample 'paris' judge reply gives no verdict for statement A1."


def test_a_reply_citing_a_passage_that_does_not_exist_is_an_error() -> None:
    def wild(f: dict[str, str]) -> Any:
        verdict = {"contradicted_by": [], "addresses_question": True}
        return {
            "passages": [{"passage": 1, "relevant": True}],
            "statements": [
                {"statement": "A1", "supported_by": [9], **verdict},
                {"statement": "R1", "supported_by": [1], **verdict},
            ],
        }

    verdict = script({CLAIMS: lambda f: {"claims": ["one"]}, GROUNDING: wild})
    rows = [("w", "q", "one", "one", ["p"])]
    with StubOpenAI(verdict=verdict) as server:
        out = ef.score(frame(rows), resolve(["faithfulness"]), context=providers(server))
    assert out["score"].to_list() == [None]
    assert out["error"][0] == (
        "Sample 'w' judge reply cites passage 9; the sample has 1 distinct passages."
    )


def test_the_budget_stops_calls_and_keeps_the_scores_already_computed(tmp_path: Path) -> None:
    with StubOpenAI(verdict=VERDICT) as server:
        full = scores_of(ef.score(frame(), resolve(["faithfulness"]), context=providers(server)))
    with StubOpenAI(verdict=VERDICT, cost_per_call=0.01) as server:
        # the stub reports each call's cost: a budget binds on it once that is declared
        p = providers(server, budget_usd=0.065, concurrency=1, prices={"judge-m": "reported"})
        out = ef.score(frame(), resolve(["faithfulness"]), context=p)
        made = len(server.calls("chat/completions"))
    assert made < 8 + 4  # stopped before every call was made
    scored = out.filter(pl.col("score").is_not_null())
    stopped = out.filter(pl.col("error").str.contains("Budget exhausted:", literal=True))
    assert scored.height >= 1
    assert stopped.height >= 1
    assert scored.height + stopped.height == out.height
    for sample, score in scored.select("sample_id", "score").iter_rows():
        assert score == full["faithfulness"][sample]


def test_a_second_run_makes_zero_calls(stub: StubOpenAI, tmp_path: Path) -> None:
    p = providers(stub, cache=tmp_path / "cache.duckdb")
    first = ef.score(frame(), resolve(METRICS), context=p)
    n = len(prompts(stub))
    again = ef.score(
        frame(), resolve(METRICS), context=providers(stub, cache=tmp_path / "cache.duckdb")
    )
    assert len(prompts(stub)) == n
    assert again.equals(first)


def test_grounding_requests_carry_the_reply_schema(stub: StubOpenAI) -> None:
    ef.score(frame(ROWS[:1]), resolve(["faithfulness"]), context=providers(stub))
    formats = {
        c.body["response_format"]["json_schema"]["name"] for c in stub.calls("chat/completions")
    }
    assert formats == {"rag_claims", "rag_grounding"}


def test_a_frame_without_contexts_scores_as_if_none_were_retrieved(stub: StubOpenAI) -> None:
    out = ef.score(
        frame(ROWS[:1]).drop("contexts"),
        resolve(["faithfulness", "context-relevancy"]),
        context=providers(stub),
    )
    assert out["score"].to_list() == [0.0, 0.0]


def test_answer_correctness_blends_similarity_with_its_weight(stub: StubOpenAI) -> None:
    plain = ef.score(frame(ROWS[:2]), resolve(["answer-correctness"]), context=providers(stub))
    blended = ef.score(
        frame(ROWS[:2]),
        resolve(["answer-correctness(similarity_weight=0.25)"]),
        context=providers(stub),
    )
    for row, base in zip(blended.iter_rows(named=True), plain["score"].to_list(), strict=True):
        d = json.loads(row["details"])
        assert d["f1"] == base
        assert row["score"] == pytest.approx(0.75 * base + 0.25 * d["similarity"], abs=1e-12)


# --- every score recomputed from its details alone ------------------------------------------


def _mean(xs: list[bool]) -> float:
    return sum(xs) / len(xs)


def _ap(relevant: list[bool]) -> float:
    hits, total = 0, 0.0
    for k, r in enumerate(relevant, start=1):
        if r:
            hits += 1
            total += hits / k
    return total / hits if hits else 0.0


def _f1(d: dict[str, Any]) -> float:
    tp = sum(d["in_reference"])
    fp = len(d["in_reference"]) - tp
    fn = len(d["in_answer"]) - sum(d["in_answer"])
    base = tp / (tp + 0.5 * (fp + fn)) if tp + fp + fn else 0.0
    w = d.get("similarity_weight", 0.0)
    return (1 - w) * base + w * d.get("similarity", 0.0)


RECOMPUTE = {
    "faithfulness": lambda d: 1.0 if not d["claims"] else _mean(d["supported"]),
    "answer-relevancy": lambda d: 0.0 if not d["claims"] else _mean(d["addresses_question"]),
    "answer-correctness": _f1,
    "context-precision": lambda d: _ap(d["relevant"]),
    "context-recall": lambda d: _mean(d["attributed"]),
    "context-relevancy": lambda d: 0.0 if not d["relevant"] else _mean(d["relevant"]),
    "context-entity-recall": lambda d: len(d["found"]) / len(d["reference_entities"]),
    "hallucination": lambda d: _mean(d["contradicted"]) if d["contradicted"] else 0.0,
}


def test_every_score_is_recomputable_from_its_details(stub: StubOpenAI) -> None:
    specs = [*METRICS, "answer-correctness(similarity_weight=0.5)"]
    out = ef.score(frame(), resolve(specs), context=providers(stub))
    assert set(RECOMPUTE) == {m.definition.name for m in resolve(METRICS)}
    checked = 0
    for row in out.filter(pl.col("score").is_not_null()).iter_rows(named=True):
        name = row["metric"].split("(")[0]
        details = json.loads(row["details"])
        assert "contexts" not in details  # context text stays out of details
        assert math.isclose(RECOMPUTE[name](details), row["score"], abs_tol=1e-12), row
        checked += 1
    assert checked == out.filter(pl.col("score").is_not_null()).height > 30


def test_context_recall_against_reference_contexts_asks_no_judge() -> None:
    ds = ef.Dataset.from_records(
        [
            {"id": "a", "input": {}, "expected_output": "x", "reference_contexts": ["p1", " p2 "]},
            {"id": "b", "input": {}, "expected_output": "y"},
        ],
        name="d",
    )
    outputs = pl.DataFrame(
        {
            "sample_id": ["a", "b"],
            "actual_output": ["x", "y"],
            "contexts": [["p2", "other", "p1  "], ["p9"]],
        }
    )
    run = ef.evaluate(ds, outputs=outputs, metrics=["context-recall(against=reference_contexts)"])
    assert run.scores["score"].to_list() == [1.0, None]
    assert json.loads(run.scores["details"][0]) == {
        "n_reference_contexts": 2,
        "n_found": 2,
        "n_contexts": 3,
    }
    assert run.scores["error"][1] == (
        "Sample 'b' has no metadata.reference_contexts; "
        "context-recall(against=reference_contexts) needs some."
    )


def test_a_system_returning_contexts_is_scored_on_them(stub: StubOpenAI) -> None:
    ds = ef.Dataset.from_records(
        [{"id": "paris", "input": {"question": ROWS[0][1]}, "expected_output": ROWS[0][2]}],
        name="d",
    )

    def system(inp: dict[str, Any]) -> Any:
        return {"output": ROWS[0][3], "contexts": ROWS[0][4]}

    run = ef.evaluate(ds, system=system, metrics=["faithfulness"], providers=providers(stub))
    assert run.scores["score"].to_list() == [0.5]
    assert run.frame["contexts"].to_list() == [ROWS[0][4]]
