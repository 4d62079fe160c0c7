"""Metrics from other packages through the ``evalframe.metrics`` entry-point group."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import evalframe as ef
from evalframe.metrics import _registry


@pytest.fixture
def plugin_distribution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """An installed distribution (a real dist-info on sys.path) that exports a metric."""
    (tmp_path / "fancy_metrics.py").write_text(
        textwrap.dedent(
            '''
            import polars as pl
            import evalframe as ef

            @ef.metrics.metric("shouting", family="custom", replace=True)
            def shouting() -> ef.metrics.Scored:
                """1.0 when the output is all upper case."""
                out = pl.col("actual_output")
                return ef.metrics.Scored(score=(out == out.str.to_uppercase()).cast(pl.Float64))
            '''
        )
    )
    info = tmp_path / "fancy_metrics-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fancy-metrics\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[evalframe.metrics]\nshouting = fancy_metrics:shouting\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(_registry, "_plugins_loaded", False)
    yield
    _registry._REGISTRY.pop("shouting", None)
    sys.modules.pop("fancy_metrics", None)


@pytest.mark.usefixtures("plugin_distribution")
def test_entry_point_metrics_resolve_by_name_and_are_listed() -> None:
    metric = ef.metrics.get("shouting")
    assert metric.family == "custom"
    assert "shouting" in {d.name for d in ef.metrics.available()}
    ds = ef.Dataset.from_records([{"id": "a", "input": {}, "expected_output": "x"}], name="p")
    run = ef.evaluate(ds, outputs={"a": "LOUD"}, metrics=["shouting"])
    assert run.scores.get_column("score").to_list() == [1.0]


def test_a_broken_plugin_fails_with_its_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    info = tmp_path / "broken_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[evalframe.metrics]\nnope = no_such_module:x\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(_registry, "_plugins_loaded", False)
    with pytest.raises(ef.MetricError, match=r"Metric plugin 'nope'.*failed to load"):
        ef.metrics.get("not-registered-anywhere")
