"""Every built-in metric shows itself: its factory's docstring holds an example that runs.

The example builds its inputs, runs the metric and prints what a user gets (the score and
the details), as polars documents every expression. Judged metrics answer from
``ef.testing.ScriptedJudge``, embedding ones from the hashing embedder: offline and fast.
tests/test_docs.py runs every other docstring example of the package.
"""

from __future__ import annotations

import doctest
import types

import pytest

import evalframe as ef
from evalframe.metrics import MetricDef

FINDER = doctest.DocTestFinder(exclude_empty=True)
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def builtins() -> list[MetricDef]:
    return [d for d in ef.metrics.available() if d.build.__module__.startswith("evalframe.")]


def example(d: MetricDef) -> doctest.DocTest | None:
    """The metric's docstring example, with no globals: it imports what it uses."""
    found = FINDER.find(d.build, f"{d.build.__module__}.{d.build.__name__}", globs={})
    return next((t for t in found if t.examples), None)


def test_every_metric_factory_has_an_example() -> None:
    defs = builtins()
    assert len(defs) >= 100  # the registry loaded: an empty list must not pass
    assert [d.name for d in defs if example(d) is None] == []


def test_a_factory_without_a_runnable_example_is_found() -> None:
    def summary_only() -> None:
        """A metric whose docstring only describes it."""

    def prose_example() -> None:
        """A metric.

        Examples:
            Call it with a dataset.
        """

    for build in (summary_only, prose_example):
        assert example(types.SimpleNamespace(build=build)) is None  # type: ignore[arg-type]


@pytest.mark.parametrize("name", [d.name for d in builtins()])
def test_metric_example_runs(name: str) -> None:
    test = example(ef.metrics.definition(name))
    assert test is not None, f"{name} has no example"
    source = "".join(e.source for e in test.examples)
    assert name in source, f"{name}'s example does not use it"
    assert any(e.want.strip() for e in test.examples), f"{name}'s example shows no result"
    runner = doctest.DocTestRunner(optionflags=FLAGS, verbose=False)
    failures: list[str] = []
    runner.run(test, out=failures.append)
    assert not failures, "".join(failures)
    assert runner.summarize(verbose=False).failed == 0
