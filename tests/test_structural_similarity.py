"""structural-similarity: harness-evals' documented cases, the three levels, YAML and JSON,
and the score against a plain reference (flatten, count, Dice) on generated documents."""

from __future__ import annotations

import json
from collections import Counter
from decimal import Decimal
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

import evalframe as ef


def run(
    metric: str,
    pairs: list[tuple[Any, str]],
    metadata: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    records = [
        {"id": f"s{i}", "input": {"q": "?"}, "expected_output": e, "metadata": m}
        for i, ((e, _), m) in enumerate(zip(pairs, metadata or [{}] * len(pairs), strict=True))
    ]
    ds = ef.Dataset.from_records(records, name="structure")
    out = ef.evaluate(ds, outputs={f"s{i}": a for i, (_, a) in enumerate(pairs)}, metrics=[metric])
    rows = {r["sample_id"]: r for r in out.scores.iter_rows(named=True)}
    return [
        {**rows[f"s{i}"], "details": json.loads(rows[f"s{i}"]["details"] or "null")}
        for i in range(len(pairs))
    ]


def test_harness_evals_cases() -> None:
    same, differ, broken, text = run(
        "structural-similarity",
        [
            ("a: 1\nb: [x, y]", "b: [y, x]\na: 1"),  # arrays in any order, keys in any order
            ("a: 1\nb: 2", "a: 1\nb: 3"),
            ("a: 1", "a: [unclosed"),
            ("a: 1", "just some words"),
        ],
    )
    assert same["score"] == 1.0
    assert differ["score"] == 0.5
    assert broken["score"] == 0.0
    assert broken["details"]["actual_error"].startswith("not valid YAML")
    assert text["score"] == 0.0
    assert text["details"]["actual_error"] == "a YAML string, not a structure"


def test_json_format_reads_json_only() -> None:
    ok, yaml_text = run(
        "structural-similarity(format=json)",
        [('{"a": 1.0}', '{"a": 1}'), ('{"a": 1}', "a: 1")],
    )
    assert ok["score"] == 1.0  # numbers compare by value
    assert yaml_text["score"] == 0.0
    assert yaml_text["details"]["actual_error"].startswith("not valid JSON")


def test_a_bad_expected_output_is_the_rows_error() -> None:
    (row,) = run("structural-similarity", [("a: [", "a: 1")])
    assert row["score"] is None
    assert row["error"].startswith(
        "Sample 's0' expected_output is not a document for structural-similarity metric: "
        "not valid YAML"
    )


def test_structural_level_ignores_keys_and_extra_keys() -> None:
    expected = {"name": "web", "id": "123", "spec": {"replicas": 2}}
    output = json.dumps({"name": "web", "id": "999", "spec": {"replicas": 2, "debug": True}})
    raw, structural, penalized = (
        run(metric, [(expected, output)])[0]
        for metric in (
            "structural-similarity",
            "structural-similarity(level=structural, ignore_keys=[id])",
            "structural-similarity(level=structural, ignore_keys=[id], extra_keys=penalize)",
        )
    )
    assert raw["score"] == pytest.approx(2 * 2 / (3 + 4), abs=1e-6)
    assert structural["score"] == 1.0
    assert structural["details"]["extra_leaves"] == 1
    assert penalized["score"] == 0.8


def test_schema_validated_level() -> None:
    schema = {"type": "object", "required": ["name"]}
    valid, invalid, none = run(
        "structural-similarity(level=schema_validated)",
        [({"name": "a"}, '{"name": "a"}'), ({"name": "a"}, '{"nome": "a"}'), ({"a": 1}, "{}")],
        metadata=[{"json_schema": schema}, {"json_schema": schema}, {}],
    )
    assert valid["score"] == 1.0
    assert invalid["score"] == 0.0
    assert invalid["details"]["schema_valid"] is False
    assert "'name' is a required property" in invalid["details"]["schema_reason"]
    assert none["score"] is None
    assert "has no JSON Schema" in none["error"]


def test_empty_ignore_key_is_refused() -> None:
    with pytest.raises(ef.MetricError, match="ignore_keys"):
        ef.metrics.get('structural-similarity(ignore_keys=[""])')


# --- the reference ------------------------------------------------------------------------


def leaves(value: Any, path: str = "") -> list[tuple[str, str, str]]:
    """(path with [*] for indices, kind, value) of every leaf, the obvious recursive way."""
    if isinstance(value, dict):
        if not value:
            return [(path, "empty object", "{}")]
        return [
            leaf
            for k, v in value.items()
            for leaf in leaves(v, path + "['" + k.replace("\\", "\\\\").replace("'", "\\'") + "']")
        ]
    if isinstance(value, list):
        if not value:
            return [(path, "empty array", "[]")]
        return [leaf for v in value for leaf in leaves(v, path + "[*]")]
    if value is None:
        return [(path, "null", "null")]
    if isinstance(value, bool):
        return [(path, str(value).lower(), str(value).lower())]
    if isinstance(value, Decimal | int):
        return [(path, "number", str(Decimal(value).normalize()))]
    return [(path, "string", value)]


def dice(expected: Any, actual: Any) -> float:
    e, a = Counter(leaves(expected)), Counter(leaves(actual))
    return 2 * sum((e & a).values()) / (sum(e.values()) + sum(a.values()))


KEYS = st.sampled_from(["a", "b", "c", "it's", "x]["])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from(["x", "y", "1"]))
DOCS = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=8,
).filter(lambda v: isinstance(v, dict | list))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(DOCS, DOCS), min_size=1, max_size=6))
def test_the_raw_score_is_the_dice_of_the_leaf_multisets(pairs: list[tuple[Any, Any]]) -> None:
    cases = [(json.dumps(e), json.dumps(a)) for e, a in pairs]
    for fmt in ("json", "yaml"):
        got = [r["score"] for r in run(f"structural-similarity(format={fmt})", cases)]
        want = [
            round(dice(json.loads(e, parse_float=Decimal), json.loads(a, parse_float=Decimal)), 6)
            for e, a in cases
        ]
        assert got == pytest.approx(want, abs=1e-12), (fmt, cases)
    # The same documents written as block YAML take the YAML reader and score the same.
    as_yaml = [(yaml.safe_dump(e), yaml.safe_dump(a)) for e, a in pairs]
    got = [r["score"] for r in run("structural-similarity", as_yaml)]
    assert got == pytest.approx(want, abs=1e-12), as_yaml
