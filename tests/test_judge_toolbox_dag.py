"""The dag metric: trees checked when loaded (errors name the file and the node), and walked
level by level across the frame, one judge call per (row, visited node)."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from judge_script import script
from openai_stub import StubOpenAI

import evalframe as ef
from evalframe.core._errors import MetricError
from evalframe.metrics._dag import MAX_DEPTH, load_dag, parse_dag
from evalframe.metrics._toolbox_prompts import DAG_NODE
from evalframe.providers import ENV

TREE = """\
root: on_topic
nodes:
  on_topic:
    question: Does the answer address the question?
    edges: {yes: cites, no: off_topic}
  cites:
    question: Does the answer cite a source?
    edges: {yes: full, partly: partial, no: partial}
  full: {score: 1.0}
  partial: {score: 0.6}
  off_topic: {score: 0}
"""


@pytest.fixture(autouse=True)
def _no_provider_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV.values():
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    path = tmp_path / "tree.yaml"
    path.write_text(TREE, encoding="utf-8")
    return path


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "t.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def _frame(actual: list[str | None]) -> pl.DataFrame:
    n = len(actual)
    return pl.DataFrame(
        {
            "sample_id": [f"s{i}" for i in range(n)],
            "input": ['{"question":"where?"}'] * n,
            "expected_output": ["ref"] * n,
            "expected_type": ["string"] * n,
            "metadata": ["{}"] * n,
            "tags": [[] for _ in range(n)],
            "row_hash": [f"h{i}" for i in range(n)],
            "actual_output": actual,
        },
        schema_overrides={"tags": pl.List(pl.String), "actual_output": pl.String},
    )


# What the judge says: per answer, per question.
ANSWERS = {
    "Paris [1]": {"address": "yes", "cite": "yes"},
    "Paris": {"address": "YES ", "cite": "no"},
    "Paris, sort of [2]": {"address": "yes", "cite": "partly"},
    "bananas": {"address": "no"},
    "weird": {"address": "maybe"},
}


def _judge(f: dict[str, str]) -> dict[str, str]:
    key = "address" if "address" in f["node_question"] else "cite"
    return {"verdict": ANSWERS[f["answer"]][key], "reason": f["verdicts"]}


def _scores(stub: StubOpenAI, frame: pl.DataFrame, spec: str, **kw: Any) -> pl.DataFrame:
    providers = ef.Providers(judge=ef.OpenAIJudge("m", base_url=stub.url, retries=0), **kw)
    return ef.score(frame, [ef.metrics.get(spec)], context=providers)


@pytest.fixture
def stub() -> Iterator[StubOpenAI]:
    with StubOpenAI(verdict=script({DAG_NODE: _judge})) as server:
        yield server


def test_dag_walks_the_tree_one_call_per_visited_node(
    stub: StubOpenAI, tree: Path, tmp_path: Path
) -> None:
    answers = ["Paris [1]", "Paris", "Paris, sort of [2]", "bananas", "Paris [1]", "weird", None]
    cache = tmp_path / "cache.duckdb"
    out = _scores(stub, _frame(answers), f"dag(tree={tree})", cache=cache)
    asked = [c.body["messages"][0]["content"] for c in stub.calls("chat/completions")]
    # level 0: one per distinct answer (5); level 1: the three answers that addressed it
    assert sum("address" in p for p in asked) == 5
    assert sum("cite a source" in p for p in asked) == 3
    assert len(asked) == 8
    assert out.get_column("score").to_list() == [1.0, 0.6, 0.6, 0.0, 1.0, None, None]
    errors = out.get_column("error").to_list()
    assert errors[5] == (
        "Sample 's5' dag judge gave verdict 'maybe' at node 'on_topic', not an edge of the "
        "node (on_topic: yes, no; cites: yes, partly, no)."
    )
    assert errors[6] == "Sample 's6' has no actual output."
    details = [json.loads(d) if d else None for d in out.get_column("details").to_list()]
    assert [s["node"] for s in details[0]["path"]] == ["on_topic", "cites"]
    assert [s["verdict"] for s in details[1]["path"]] == ["yes", "no"]
    assert details[3]["path"] == [{"node": "on_topic", "verdict": "no", "reason": '["yes", "no"]'}]
    # recomputable: follow the path's verdicts through the tree to a leaf's score
    dag = load_dag(tree)
    for d, score in zip(details[:5], out.get_column("score")[:5], strict=True):
        node = dag.root
        for step in d["path"]:
            assert step["node"] == node
            node = dag.nodes[node].edges[step["verdict"]]  # type: ignore[union-attr]
        assert node == d["leaf"]
        assert dag.nodes[node].score == d["leaf_score"] == score  # type: ignore[union-attr]
    again = _scores(stub, _frame(answers), f"dag(tree={tree})", cache=cache)
    assert len(stub.calls("chat/completions")) == 8  # second run: zero calls
    assert again.select("score", "error").equals(out.select("score", "error"))


def test_a_failed_call_stops_the_walk_with_that_error(stub: StubOpenAI, tree: Path) -> None:
    stub.fail("chat", ("status", 400))
    out = _scores(stub, _frame(["Paris [1]"]), f"dag(tree={tree})", cache=False)
    assert out.get_column("score").to_list() == [None]
    assert out.get_column("error")[0].startswith("Sample 's0' dag judge failed: ")
    assert len(stub.calls("chat/completions")) == 1  # level 1 is never asked


def test_a_tree_whose_root_is_a_leaf_needs_no_judge(tmp_path: Path) -> None:
    path = _write(tmp_path, "root: done\nnodes:\n  done: {score: 0.25}\n")
    out = ef.score(_frame(["x"]), [ef.metrics.get(f"dag(tree={path})")])
    assert out.get_column("score").to_list() == [0.25]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "root: a\nnodes:\n  a: {question: q, edges: {yes: b, no: nowhere}}\n  b: {score: 1}\n",
            "node 'a': edge 'no' leads to unknown node 'nowhere'.",
        ),
        (
            "root: a\nnodes:\n  a: {question: q, edges: {yes: b, no: c}}\n"
            "  b: {question: q2, edges: {yes: a, no: c}}\n  c: {score: 0}\n",
            "node 'a': the edges form a cycle: a -> b -> a.",
        ),
        (
            "root: a\nnodes:\n  a: {question: q, edges: {yes: b, no: b}}\n"
            "  b: {score: 1}\n  lost: {score: 0}\n",
            "node 'lost': the root never reaches this node.",
        ),
        (
            "root: a\nnodes:\n  a: {question: q, edges: {yes: b, no: c}}\n  b: {score: 1}\n"
            "  c: {}\n",
            "node 'c': a node is either {question, edges} or a leaf {score}; got keys [] "
            "(a leaf needs a score).",
        ),
        (
            "root: a\nnodes:\n  a: {question: q, edges: {yes: b, no: c}}\n  b: {score: 1.5}\n"
            "  c: {score: 0}\n",
            "node 'b': the leaf's score must be in [0, 1]; got 1.5.",
        ),
        (
            "root: a\nnodes:\n  a: {question: q, edges: {yes: b}}\n  b: {score: 1}\n",
            "node 'a': 'edges' must map at least two verdicts to nodes.",
        ),
        ("root: z\nnodes:\n  a: {score: 1}\n", "'root' names 'z', which is not among"),
        ("[1, 2]\n", "the tree must be a mapping with 'root' and 'nodes'."),
    ],
)
def test_trees_are_checked_when_loaded(tmp_path: Path, text: str, message: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(MetricError) as info:
        load_dag(path)
    assert str(info.value).startswith(f"DAG {path}: ")
    assert message in str(info.value)
    with pytest.raises(MetricError, match="DAG"):
        ef.metrics.get(f"dag(tree={path})")


def test_depth_limit_and_unreadable_files(tmp_path: Path) -> None:
    nodes = {
        f"n{i}": {"question": f"q{i}", "edges": {"yes": f"n{i + 1}", "no": "end"}}
        for i in range(MAX_DEPTH + 1)
    }
    nodes[f"n{MAX_DEPTH + 1}"] = {"score": 1}
    nodes["end"] = {"score": 0}
    with pytest.raises(
        MetricError, match=f"asks {MAX_DEPTH + 1} questions; the limit is {MAX_DEPTH}"
    ):
        parse_dag({"root": "n0", "nodes": nodes}, "deep.yaml")
    del nodes["n0"]
    ok = parse_dag({"root": "n1", "nodes": nodes}, "deep.yaml")
    assert ok.depth == MAX_DEPTH
    assert len(ok.levels()) == MAX_DEPTH
    with pytest.raises(MetricError, match="cannot read the file"):
        load_dag(tmp_path / "absent.yaml")
    bad = _write(tmp_path, "root: [\n")
    with pytest.raises(MetricError, match=f"DAG {bad}: not valid YAML"):
        load_dag(bad)
