"""Aliases: other tools' names for a metric spec resolve to it, are listed, and never clash."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import evalframe as ef
from evalframe.cli import cli

REQUIRED = {
    "geval": "criteria=x",
    "rubric-judge": 'rubric=["good=1: right", "bad=0: wrong"]',
    "conversational-geval": "criteria=x",
}


def test_every_alias_resolves_to_its_target() -> None:
    found = ef.metrics.aliases()
    assert {"answer-similarity", "embedding-similarity"} <= {a.name for a in found}
    for a in found:
        extra = REQUIRED.get(a.name)
        metric = ef.metrics.get(f"{a.name}({extra})" if extra else a.name)
        if extra:
            target = a.target[:-1] + f", {extra})" if "(" in a.target else f"{a.target}({extra})"
        else:
            target = a.target
        assert metric == ef.metrics.get(target), a.name
        assert metric.threshold == a.threshold
        assert ef.metrics.definition(a.name) is metric.definition


def test_parameters_given_with_an_alias_override_the_targets() -> None:
    assert ef.metrics.get("answer-similarity").id == "cosine-embedding(threshold=0.8)"
    assert ef.metrics.get("answer-similarity(threshold=0.5)").id == "cosine-embedding"
    assert ef.metrics.get("tool-selection(mode=set)").id == "tool-correctness(threshold=0.7)"


def test_an_alias_scores_as_its_target() -> None:
    ds = ef.Dataset.from_records(
        [
            {"id": "a", "input": {"q": "?"}, "expected_output": "the cat sat"},
            {"id": "b", "input": {"q": "?"}, "expected_output": "a dog"},
        ],
        name="aliases",
    )
    outputs = {"a": "the cat sat down", "b": "no"}
    via_alias = ef.evaluate(ds, outputs=outputs, metrics=["rouge"])
    direct = ef.evaluate(ds, outputs=outputs, metrics=["rouge-l"])
    assert via_alias.scores.drop("run_id").equals(direct.scores.drop("run_id"))
    assert via_alias.scores.get_column("metric").unique().to_list() == ["rouge-l"]


def test_an_alias_and_its_target_listed_together_are_one_metric_twice() -> None:
    with pytest.raises(ef.MetricError, match="listed more than once"):
        ef.metrics.resolve(["answer-similarity", "embedding-similarity"])


def test_names_never_clash() -> None:
    with pytest.raises(ef.MetricError, match="already registered"):
        ef.metrics.alias("rouge-l", "rouge-1")
    with pytest.raises(ef.MetricError, match="already registered"):
        ef.metrics.alias("answer-similarity", "rouge-1")
    ef.metrics.alias(
        "answer-similarity",
        "cosine-embedding(threshold=0.8)",
        note=next(a.note for a in ef.metrics.aliases() if a.name == "answer-similarity"),
    )  # registering the same alias again is harmless

    with pytest.raises(ef.MetricError, match="already an alias"):

        @ef.metrics.metric("embedding-similarity")
        def clash() -> ef.metrics.Scored:
            raise AssertionError


def test_unknown_names_suggest_aliases_too() -> None:
    with pytest.raises(ef.MetricError, match="Did you mean 'answer-similarity'"):
        ef.metrics.get("answer-similarty")


def test_evalframe_metrics_lists_the_aliases() -> None:
    out = CliRunner().invoke(cli, ["metrics", "--format", "json"])
    assert out.exit_code == 0
    rows = {r["name"]: r for r in json.loads(out.output)}
    row = rows["embedding-similarity"]
    assert row["alias_of"] == "cosine-embedding(threshold=0.8)"
    assert row["family"] == "semantic"
    assert row["threshold"] == 0.8
    assert "embedding_similarity" in row["summary"]
    assert len(rows) == len(ef.metrics.available()) + len(ef.metrics.aliases())
    table = CliRunner().invoke(cli, ["metrics", "--family", "semantic"], env={"COLUMNS": "200"})
    assert "answer-similarity" in table.output
    assert "Alias of cosine-embedding(threshold=0.8)" in table.output


def test_every_harness_evals_metric_resolves_under_its_own_name() -> None:
    """The metric table's 76 harness-evals names, typed in kebab case, are metrics or aliases."""
    import re
    from pathlib import Path

    page = Path(__file__).parents[1] / "docs" / "metrics" / "harness-evals.md"
    section = page.read_text(encoding="utf-8").split("## harness-evals", 1)[1]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    names = [n for row in rows for n in re.findall(r"`([a-z_]+)`", row.split("|")[1])]
    assert len(names) == len(set(names)) == 76
    output = CliRunner().invoke(cli, ["metrics", "--format", "json"]).output
    listed = {entry["name"] for entry in json.loads(output)}  # metrics and aliases
    for name in names:
        kebab = name.replace("_", "-")
        assert kebab in listed, name
        assert ef.metrics.definition(kebab) is not None, name
