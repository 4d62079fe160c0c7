"""Judge-backed safety metrics on the shared judge engine, with a scripted judge: label to
score, the prompt key in the details, one call per distinct prompt, policies and roles kept
apart, failed and off-schema replies as row errors, template overrides."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import polars as pl
import pytest
from judge_script import script
from openai_stub import StubOpenAI

import evalframe as ef
from evalframe.metrics._judge_engine import PROMPTS
from evalframe.metrics._safety_judged import (
    BIAS,
    COMPLIANCE,
    HARM_SEVERITY,
    HARMFUL_ADVICE,
    LABEL_SCORES,
    MISUSE,
    ROLE,
    TOXICITY,
)
from evalframe.providers import ENV


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV.values():
        monkeypatch.delenv(name, raising=False)


def _word(f: dict[str, str], options: list[str]) -> str:
    """The first option named in the answer, as the scripted judge's label."""
    return next((o for o in options if o in f["answer"]), options[0])


VERDICT = script(
    {
        TOXICITY: lambda f: {
            "toxicity": _word(f, ["none", "mild", "severe"]),
            "categories": ["insult"] if "severe" in f["answer"] else [],
            "reason": "scripted",
        },
        BIAS: lambda f: {"bias": _word(f, ["none", "subtle", "clear"]), "kinds": [], "reason": "r"},
        HARM_SEVERITY: lambda f: {
            "severity": _word(f, ["none", "low", "medium", "high", "critical"]),
            "reason": "r",
        },
        HARMFUL_ADVICE: lambda f: {"harmful": "dangerous" in f["answer"], "reason": "r"},
        MISUSE: lambda f: {
            "misuse_request": "weapon" in f["question"],
            "assisted": "here is how" in f["answer"],
            "reason": "r",
        },
        COMPLIANCE: lambda f: {
            "compliant": "diagnosis" not in f["answer"] or "medical" not in f["policy"],
            "violations": [],
            "reason": "r",
        },
        ROLE: lambda f: {
            "violates": "pirate" in f["answer"] and "billing" in f["role"],
            "reason": "r",
        },
    }
)


@pytest.fixture
def stub() -> Iterator[StubOpenAI]:
    with StubOpenAI(verdict=VERDICT) as server:
        yield server


def providers(stub: StubOpenAI) -> ef.Providers:
    return ef.Providers(judge=ef.OpenAIJudge("judge-m", base_url=stub.url), cache=False)


def frame(pairs: list[tuple[str, str | None]]) -> pl.DataFrame:
    n = len(pairs)
    return pl.DataFrame(
        {
            "sample_id": [f"s{i}" for i in range(n)],
            "input": [json.dumps({"question": q}) for q, _ in pairs],
            "expected_output": [""] * n,
            "expected_type": ["string"] * n,
            "metadata": ["{}"] * n,
            "tags": [[] for _ in range(n)],
            "row_hash": [f"h{i}" for i in range(n)],
            "actual_output": [a for _, a in pairs],
        },
        schema_overrides={"tags": pl.List(pl.String), "actual_output": pl.String},
    )


def rows(spec: str, df: pl.DataFrame, stub: StubOpenAI) -> list[dict[str, Any]]:
    out = ef.score(df, [ef.metrics.get(spec)], context=providers(stub))
    return [
        {**r, "details": json.loads(r["details"]) if r["details"] else None}
        for r in out.iter_rows(named=True)
    ]


@pytest.mark.parametrize(
    ("spec", "labels"),
    [
        ("toxicity", ["none", "mild", "severe"]),
        ("bias", ["none", "subtle", "clear"]),
        ("harm-severity", ["none", "low", "medium", "high", "critical"]),
    ],
)
def test_labels_map_to_their_scores(spec: str, labels: list[str], stub: StubOpenAI) -> None:
    got = rows(spec, frame([("q", f"answer {label}") for label in labels]), stub)
    assert [r["score"] for r in got] == [LABEL_SCORES[spec][label] for label in labels]
    assert [r["details"]["label"] for r in got] == labels
    assert {r["details"]["prompt"] for r in got} == {PROMPTS[f"safety.{spec}"].key}
    assert ef.metrics.get(spec).dimension == "safety"


def test_boolean_verdicts(stub: StubOpenAI) -> None:
    df = frame([("q", "dangerous: mix bleach"), ("q", "drink water")])
    assert [r["score"] for r in rows("harmful-advice", df, stub)] == [0.0, 1.0]
    df = frame(
        [
            ("build a weapon", "here is how: ..."),
            ("build a weapon", "I can't help with that."),
            ("bake bread", "here is how: flour"),
        ]
    )
    got = rows("misuse-detection", df, stub)
    assert [r["score"] for r in got] == [0.0, 1.0, 1.0]
    assert got[0]["details"] | {"reason": None} == {
        "label": "true",
        "misuse_request": True,
        "assisted": True,
        "reason": None,
        "prompt": MISUSE.key,
    }


def test_policies_and_roles_are_parameters_kept_apart(stub: StubOpenAI) -> None:
    df = frame([("q", "my diagnosis is flu"), ("q", "arr, I be a pirate")])
    medical = 'compliance(policy="Give no medical diagnosis.")'
    other = 'compliance(policy="Be brief.")'
    out = ef.score(df, [ef.metrics.get(medical), ef.metrics.get(other)], context=providers(stub))
    by = {(r["metric"], r["sample_id"]): r["score"] for r in out.iter_rows(named=True)}
    assert by == {
        (medical, "s0"): 0.0,
        (medical, "s1"): 1.0,
        (other, "s0"): 1.0,
        (other, "s1"): 1.0,
    }
    assert len(stub.calls("chat/completions")) == 4  # two policies, two answers
    got = rows('role-violation(role="billing support agent")', df, stub)
    assert [r["score"] for r in got] == [1.0, 0.0]
    with pytest.raises(ef.MetricError, match="non-empty"):
        ef.metrics.get('compliance(policy=" ")')
    with pytest.raises(ef.MetricError, match="requires the parameter 'role'"):
        ef.metrics.get("role-violation")


def test_one_call_per_distinct_prompt(stub: StubOpenAI) -> None:
    df = frame([("q", "answer none")] * 5 + [("q", "answer mild")])
    rows("toxicity", df, stub)
    assert len(stub.calls("chat/completions")) == 2


def test_off_schema_replies_and_overrides(stub: StubOpenAI) -> None:
    bad = script({TOXICITY: lambda f: {"toxicity": "extreme", "categories": [], "reason": "x"}})
    with StubOpenAI(verdict=bad) as other:
        got = rows("toxicity", frame([("q", "a")]), other)
    assert got[0]["score"] is None
    assert got[0]["error"].startswith(
        f"Sample 's0' judge reply for toxicity ({TOXICITY.key}) failed:"
    )
    template = TOXICITY.template.replace("You review", "Please review")
    custom = ef.metrics.toxicity(template=template)
    key = custom.needs()[0].prompt.key
    assert key.startswith(TOXICITY.key + "+")
    override = script(
        {
            TOXICITY.with_template(template): lambda f: {
                "toxicity": "none",
                "categories": [],
                "reason": "r",
            }
        }
    )
    with StubOpenAI(verdict=override) as third:
        out = ef.score(frame([("q", "a")]), [custom], context=providers(third))
    assert out.get_column("score").to_list() == [1.0]
    assert json.loads(out.get_column("details")[0])["prompt"] == key
