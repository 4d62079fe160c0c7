"""The metric contract, checked over every built-in metric on the same mixed frame.

Float64 scores in [0, 1] or null; a null score always has an error and a score never does;
one row per input row, in order; row-order invariant; deterministic.
"""

from __future__ import annotations

import json
import math
import re
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import STUB_API_KEY
from test_webhook import Hook

import evalframe as ef

_TREE = Path(__file__).parent / "data" / "answer-quality.dag.yaml"
PARAMS = {
    "ordinal-distance": "ordinal-distance(scale=[low,medium,high])",
    "g-eval": 'g-eval(criteria="The answer is correct.")',
    "conversational-g-eval": 'conversational-g-eval(criteria="The assistant is helpful.")',
    "composite": "composite(metrics=[exact-match, rouge-l], weights=[1, 2])",
    "pairwise": "pairwise(baseline=actual_output)",
    "dag": f"dag(tree={_TREE.as_posix()})",
    "rubric": 'rubric(rubric=["good=1: correct", "bad=0: wrong"])',
    "prompt-alignment": "prompt-alignment(instructions=[Be brief])",
    "compliance": 'compliance(policy="Give no medical advice.")',
    "role-violation": 'role-violation(role="a billing support agent")',
}
# Parameters that only apply alongside another one.
CONTEXT = {("bleu", "smooth_value"): "smooth=floor"}


def builtins() -> list[str]:
    return sorted(
        d.name for d in ef.metrics.available() if d.build.__module__.startswith("evalframe.")
    )


def mixed_frame() -> pl.DataFrame:
    rows: list[tuple[Any, str, dict[str, Any]]] = [
        ("Paris", "Paris", {"tags": ["geo"]}),
        ("30 days", "Returns are accepted within 30 days [1].", {"citations": ["[1]"]}),
        (["d1", "d3"], json.dumps(["d1", "d2", "d3"]), {"k": 2}),
        (
            {"d1": 2, "d2": 1},
            json.dumps([{"id": "d2", "text": "x"}, {"id": "d1", "text": "y"}]),
            {},
        ),
        ("medium", "high", {"refusal_expected": True}),
        ('{"a": 1, "b": [1, 2]}', '{"a": 1, "b": [1, 3]}', {}),
        ("42", "The answer is 42.", {}),
        ("", "", {}),
        (None, "anything", {}),
        ("/o+k/i", "OOK", {"citation_evidence": [{"citation": "[2]", "quote": "q"}]}),
        ("É", "é", {"tags": ["unicode"]}),
        (3.5, "3.5", {}),
    ]
    kinds = {
        str: "string",
        int: "int",
        float: "float",
        list: "list",
        dict: "map",
        type(None): "null",
    }
    n = len(rows)
    return pl.DataFrame(
        {
            "sample_id": [f"s{i:02d}" for i in range(n)],
            "input": ['{"question":"q?"}'] * n,
            "expected_output": [
                e if isinstance(e, str) else json.dumps(e, separators=(",", ":"))
                for e, _, _ in rows
            ],
            "expected_type": [kinds[type(e)] for e, _, _ in rows],
            "metadata": [json.dumps(m) for _, _, m in rows],
            "tags": [m.get("tags", []) for _, _, m in rows],
            "row_hash": [f"h{i}" for i in range(n)],
            "actual_output": [a for _, a, _ in rows],
            "latency_ms": [float(100 * i) if i % 3 else None for i in range(n)],
            "prompt_tokens": [10 * i for i in range(n)],
            "completion_tokens": [5 * i for i in range(n)],
            "cost_usd": [0.001 * i for i in range(n)],
            "retries": [i % 4 for i in range(n)],
        },
        schema_overrides={"tags": pl.List(pl.String)},
    )


@pytest.fixture
def providers(openai_stub: Any) -> Iterator[ef.Providers]:
    judge = ef.OpenAIJudge(
        "stub-judge", base_url=openai_stub.url, api_key=STUB_API_KEY, backoff=0.001, retries=1
    )
    # A scoring service for the webhook metric: a score from the output's length.
    hook = Hook(lambda row: (200, {"score": len(row["output"]) % 7 / 6}))
    webhook = ef.Webhook(hook.url, backoff=0.001, retries=1)
    yield ef.Providers(embeddings="hashing", judge=judge, cache=False, webhooks=[webhook])
    hook.close()


@pytest.mark.parametrize("name", builtins())
def test_metric_honours_the_contract(name: str, providers: ef.Providers) -> None:
    metric = ef.metrics.get(PARAMS.get(name, name))
    base = mixed_frame()
    frame = pl.concat([base.with_columns(repetition=pl.lit(r, pl.Int64)) for r in range(2)])
    first = ef.score(frame, [metric], context=providers)

    assert first.schema == ef.schema.SCORES_SCHEMA
    assert first.height == frame.height
    assert first.select("sample_id", "repetition").equals(frame.select("sample_id", "repetition"))
    scored = first.filter(pl.col("score").is_not_null())
    assert scored.get_column("score").is_between(0.0, 1.0).all()
    assert scored.get_column("error").null_count() == scored.height
    errored = first.filter(pl.col("score").is_null())
    assert errored.get_column("error").null_count() == 0
    assert errored.get_column("passed").null_count() == errored.height
    assert errored.get_column("details").null_count() == errored.height, "details on an error"
    assert (scored.get_column("passed") == (scored.get_column("score") >= metric.threshold)).all()

    again = ef.score(frame, [metric], context=providers)
    assert again.equals(first), "not deterministic"

    shuffled = frame.sample(fraction=1.0, shuffle=True, seed=7)
    reordered = ef.score(shuffled, [metric], context=providers)
    key = ["sample_id", "repetition"]
    assert (
        reordered.sort(key)
        .select("score", "error")
        .equals(first.sort(key).select("score", "error"))
    )


@pytest.mark.parametrize("name", builtins())
def test_metric_handles_an_empty_frame(name: str, providers: ef.Providers) -> None:
    metric = ef.metrics.get(PARAMS.get(name, name))
    empty = mixed_frame().clear().with_columns(repetition=pl.lit(0, pl.Int64))
    out = ef.score(empty, [metric], context=providers)
    assert out.height == 0
    assert out.schema == ef.schema.SCORES_SCHEMA


def test_the_fifteen_seed_metrics_are_registered() -> None:
    seed = {
        "exact-match",
        "contains",
        "regex",
        "rouge-l",
        "cosine-embedding",
        "bertscore-like",
        "llm-as-judge",
        "refusal-quality",
        "retrieval-hit-at-k",
        "retrieval-recall-at-k",
        "retrieval-mrr",
        "retrieval-ndcg-at-k",
        "answer-containment-at-k",
        "ordinal-distance",
        "citation-groundedness",
    }
    assert seed <= set(builtins())


def _numeric_type(annotation: Any) -> type | None:
    options = typing.get_args(annotation) if isinstance(annotation, types.UnionType) else ()
    for t in (annotation, *options):
        if t in (int, float):
            return typing.cast(type, t)
    return None


def _spec(name: str, *settings: str) -> str:
    base = PARAMS.get(name, name)
    inner = base[len(name) + 1 : -1] if base != name else ""
    return f"{name}({', '.join(x for x in (inner, *settings) if x)})"


def _outside(kind: type, valid: ef.metrics.Range) -> list[float]:
    """Values just outside each declared bound, and values no range admits."""
    step = (
        (lambda x: x - 1, lambda x: x + 1)
        if kind is int
        else (
            lambda x: math.nextafter(x, -math.inf),
            lambda x: math.nextafter(x, math.inf),
        )
    )
    out: list[float] = []
    if valid.ge is not None:
        out.append(step[0](valid.ge))
    if valid.gt is not None:
        out.append(valid.gt)
    if valid.le is not None:
        out.append(step[1](valid.le))
    if valid.lt is not None:
        out.append(valid.lt)
    if kind is int:
        return [*out, 2**63, -(2**63) - 1]
    return [*out, math.nan, math.inf, -math.inf]


def _inside(kind: type, valid: ef.metrics.Range) -> list[float]:
    edges = [v for v in (valid.ge, valid.le) if v is not None]
    if kind is float:
        edges += [math.nextafter(valid.gt, math.inf)] if valid.gt is not None else []
        edges += [math.nextafter(valid.lt, -math.inf)] if valid.lt is not None else []
    return edges


@pytest.mark.parametrize("name", builtins())
def test_every_numeric_parameter_declares_its_range_and_refuses_values_outside(name: str) -> None:
    definition = ef.metrics.definition(name)
    for p in definition.params:
        kind = _numeric_type(p.annotation)
        if kind is None:
            continue
        assert p.range is not None, f"{name}: parameter '{p.name}' declares no valid range"
        if p.default is not None:
            assert p.range.admits(p.default), f"{name}: default {p.name}={p.default}"
        context = CONTEXT.get((name, p.name), "")
        for value in _outside(kind, p.range):
            shown = repr(kind(value)) if math.isfinite(value) else str(value)
            spec = _spec(name, f"{p.name}={shown}", context)
            with pytest.raises(ef.MetricError) as caught:
                ef.metrics.get(spec)
            message = str(caught.value)
            assert f"parameter '{p.name}'" in message, (spec, message)
            assert not re.search(r"col\(|lit\(|\.alias|Expr|polars", message), message
        for value in _inside(kind, p.range):
            spec = _spec(name, f"{p.name}={kind(value)!r}", context)
            assert ef.metrics.get(spec).kwargs[p.name] == kind(value), spec


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e400"])
def test_a_threshold_that_is_not_a_finite_number_is_refused(value: str) -> None:
    with pytest.raises(ef.MetricError, match="threshold must be in"):
        ef.metrics.get(f"exact-match(threshold={value})")


def _edges(kind: type, valid: ef.metrics.Range) -> list[float]:
    """The largest and smallest values the range admits (64-bit or float limits if open)."""
    high = valid.le if valid.le is not None else (2**63 - 1 if kind is int else 1e308)
    low = valid.ge if valid.ge is not None else (-(2**63) if kind is int else -1e308)
    if valid.gt is not None:
        low = valid.gt + 1 if kind is int else math.nextafter(valid.gt, math.inf)
    return [low, high]


@pytest.mark.parametrize("name", builtins())
def test_every_metric_scores_at_the_edges_of_its_parameter_ranges(
    name: str, providers: ef.Providers
) -> None:
    frame = mixed_frame().with_columns(repetition=pl.lit(0, pl.Int64))
    definition = ef.metrics.definition(name)
    for p in definition.params:
        kind = _numeric_type(p.annotation)
        if kind is None or p.range is None:
            continue
        for value in _edges(kind, p.range):
            spec = _spec(name, f"{p.name}={kind(value)!r}", CONTEXT.get((name, p.name), ""))
            out = ef.score(frame, [ef.metrics.get(spec)], context=providers)
            broken = out.filter(pl.col("error").str.contains(f"Metric '{spec}' failed"))
            assert broken.height == 0, broken.get_column("error")[0]
            assert not out.get_column("error").str.contains(r"col\(|lit\(").any(), spec
