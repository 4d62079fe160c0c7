"""Decision trees of judge questions (the ``dag`` metric), declared in YAML.

A tree has a ``root`` and ``nodes``. A node is either a question, whose ``edges`` map each
verdict the judge may give to the next node, or a leaf, which holds the ``score`` in [0, 1]
a sample reaching it gets::

    root: on_topic
    nodes:
      on_topic:
        question: Does the answer address the question that was asked?
        edges: {yes: cites, no: off_topic}
      cites:
        question: Does the answer name the source of each fact it states?
        edges: {yes: full, no: partial}
      full: {score: 1.0}
      partial: {score: 0.6}
      off_topic: {score: 0.0}

The tree is checked when it is loaded, and every problem names the file and the node: an
edge to an unknown node, a cycle, a node the root never reaches, a leaf without a score or
with a score outside [0, 1], a node that is both (or neither) a question and a leaf, and a
path of more than ``MAX_DEPTH`` questions. Verdicts are words (``yes``, ``partly``, ...);
YAML's ``yes``/``no``/``true``/``false`` keys are read as the words ``yes`` and ``no``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from evalframe.core._errors import MetricError

__all__ = ["MAX_DEPTH", "Dag", "Leaf", "Question", "load_dag", "parse_dag"]

MAX_DEPTH: Final = 16
"""The most questions on any path from the root to a leaf (one judge call per level)."""


@dataclass(frozen=True, slots=True)
class Question:
    """A node that asks the judge ``text`` and follows the edge of its verdict."""

    text: str
    edges: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Leaf:
    """A node that ends the walk with ``score``."""

    score: float


@dataclass(frozen=True, slots=True)
class Dag:
    """A checked decision tree.

    Attributes:
        source: where it was read from (the file, or ``"<text>"``): errors name it.
        root: the first question (or a leaf: every sample gets its score).
        nodes: every node by name.
        digest: a hash of the tree's content: it names the metric's judge columns.
    """

    source: str
    root: str
    nodes: Mapping[str, Question | Leaf]
    digest: str

    @property
    def depth(self) -> int:
        """The most questions on a path from the root to a leaf."""
        memo: dict[str, int] = {}

        def walk(name: str) -> int:
            if name not in memo:
                node = self.nodes[name]
                memo[name] = (
                    0
                    if isinstance(node, Leaf)
                    else 1 + max(walk(child) for child in node.edges.values())
                )
            return memo[name]

        return walk(self.root)

    def levels(self) -> list[list[str]]:
        """The questions a sample can be at after each number of answers: level 0 is the
        root; level ``d`` holds the questions some path reaches with ``d`` answers."""
        out: list[list[str]] = []
        current = [self.root] if isinstance(self.nodes[self.root], Question) else []
        while current:
            out.append(current)
            following: dict[str, None] = {}
            for name in current:  # nodes of the tree, not rows
                node = self.nodes[name]
                assert isinstance(node, Question)
                for child in node.edges.values():
                    if isinstance(self.nodes[child], Question):
                        following[child] = None
            current = list(following)
        return out


def _verdict(key: object) -> str:
    if key is True:
        return "yes"
    if key is False:
        return "no"
    return str(key).strip().lower()


def parse_dag(value: object, source: str = "<text>") -> Dag:
    """A ``Dag`` from a parsed YAML (or JSON) value, checked.

    Raises:
        MetricError: naming ``source`` and the node at fault.
    """

    def bad(message: str, node: str | None = None) -> MetricError:
        where = f"{source}: node {node!r}: " if node is not None else f"{source}: "
        return MetricError(f"DAG {where}{message}")

    if not isinstance(value, Mapping):
        raise bad("the tree must be a mapping with 'root' and 'nodes'.")
    unknown = set(value) - {"root", "nodes"}
    if unknown:
        raise bad(f"unknown key(s) {sorted(map(str, unknown))}; expected 'root' and 'nodes'.")
    root = value.get("root")
    raw_nodes = value.get("nodes")
    if not isinstance(root, str) or not root:
        raise bad("'root' must name a node.")
    if not isinstance(raw_nodes, Mapping) or not raw_nodes:
        raise bad("'nodes' must be a non-empty mapping of node names to nodes.")
    nodes: dict[str, Question | Leaf] = {}
    for name, spec in raw_nodes.items():  # nodes of the tree, not rows
        if not isinstance(name, str) or not name:
            raise bad(f"node names must be non-empty strings; got {name!r}.")
        nodes[name] = _node(spec, name, bad)
    if root not in nodes:
        raise bad(f"'root' names {root!r}, which is not among the nodes {sorted(nodes)}.")
    for name, node in nodes.items():
        if isinstance(node, Question):
            for verdict, child in node.edges.items():
                if child not in nodes:
                    raise bad(f"edge {verdict!r} leads to unknown node {child!r}.", name)
    _check_acyclic(root, nodes, bad)
    reached = _reachable(root, nodes)
    for name in nodes:
        if name not in reached:
            raise bad("the root never reaches this node.", name)
    canonical = json.dumps(
        {
            "root": root,
            "nodes": {
                n: (
                    {"score": v.score}
                    if isinstance(v, Leaf)
                    else {"question": v.text, "edges": dict(v.edges)}
                )
                for n, v in sorted(nodes.items())
            },
        },
        sort_keys=True,
    )
    dag = Dag(source, root, nodes, hashlib.sha256(canonical.encode()).hexdigest()[:12])
    if dag.depth > MAX_DEPTH:
        raise bad(f"a path from the root asks {dag.depth} questions; the limit is {MAX_DEPTH}.")
    return dag


def _node(spec: object, name: str, bad: Any) -> Question | Leaf:
    if not isinstance(spec, Mapping):
        raise bad("a node must be a mapping: {question, edges} or {score}.", name)
    keys = set(spec)
    if "score" in keys:
        if keys - {"score"}:
            raise bad("a leaf holds only 'score'; it cannot also ask a question.", name)
        score = spec["score"]
        if isinstance(score, bool) or not isinstance(score, int | float):
            raise bad(f"the leaf's score must be a number in [0, 1]; got {score!r}.", name)
        if not (math.isfinite(score) and 0.0 <= score <= 1.0):
            raise bad(f"the leaf's score must be in [0, 1]; got {score!r}.", name)
        return Leaf(float(score))
    if keys != {"question", "edges"}:
        if "question" in keys and "edges" not in keys:
            raise bad("a question needs 'edges' (verdict -> next node).", name)
        if "edges" in keys and "question" not in keys:
            raise bad("a node with edges needs a 'question'.", name)
        raise bad(
            f"a node is either {{question, edges}} or a leaf {{score}}; got keys "
            f"{sorted(map(str, keys))} (a leaf needs a score).",
            name,
        )
    text = spec["question"]
    if not isinstance(text, str) or not text.strip():
        raise bad("'question' must be non-empty text.", name)
    edges = spec["edges"]
    if not isinstance(edges, Mapping) or len(edges) < 2:
        raise bad("'edges' must map at least two verdicts to nodes.", name)
    out: dict[str, str] = {}
    for verdict, child in edges.items():
        word = _verdict(verdict)
        if not word or not word.replace("_", "").replace("-", "").isalnum():
            raise bad(f"verdict {verdict!r} must be a word (letters, digits, - or _).", name)
        if word in out:
            raise bad(f"verdict {word!r} appears twice.", name)
        if not isinstance(child, str):
            raise bad(f"edge {word!r} must name a node; got {child!r}.", name)
        out[word] = child
    return Question(text.strip(), out)


def _check_acyclic(root: str, nodes: Mapping[str, Question | Leaf], bad: Any) -> None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(name: str, path: list[str]) -> None:
        if state.get(name) == 2:
            return
        if state.get(name) == 1:
            loop = " -> ".join([*path[path.index(name) :], name])
            raise bad(f"the edges form a cycle: {loop}.", name)
        state[name] = 1
        node = nodes[name]
        if isinstance(node, Question):
            for child in node.edges.values():
                visit(child, [*path, name])
        state[name] = 2

    visit(root, [])
    for name in nodes:  # cycles among nodes the root does not reach
        visit(name, [])


def _reachable(root: str, nodes: Mapping[str, Question | Leaf]) -> set[str]:
    seen = {root}
    stack = [root]
    while stack:
        node = nodes[stack.pop()]
        if isinstance(node, Question):
            for child in node.edges.values():
                if child not in seen:
                    seen.add(child)
                    stack.append(child)
    return seen


def load_dag(path: str | os.PathLike[str]) -> Dag:
    """Read and check a tree from a YAML (or JSON) file.

    Raises:
        MetricError: the file cannot be read or parsed, or the tree is not valid (the
            message names the file and the node).
    """
    import yaml

    from evalframe.core._yaml import parse_yaml

    where = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise MetricError(f"DAG {where}: cannot read the file: {exc}.") from None
    try:
        value = parse_yaml(text)
    except (yaml.YAMLError, ValueError) as exc:
        raise MetricError(f"DAG {where}: not valid YAML: {exc}.") from None
    return parse_dag(value, where)
