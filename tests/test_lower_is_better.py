"""Lower-is-better metrics (``higher_is_better=False``, e.g. ``hallucination``): one pass rule
through scoring, the store, reports, failing samples and the gate."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

import evalframe as ef
from evalframe.core._gate import gate
from evalframe.views._report import failing_samples


@pytest.fixture(scope="module")
def error_rate() -> ef.metrics.MetricFactory:
    """A lower-is-better metric: the share of characters that are '!' in the output."""

    @ef.metrics.metric("bang-rate", family="custom", higher_is_better=False, replace=True)
    def bang_rate() -> ef.metrics.Scored:
        """Share of the output's characters that are exclamation marks (lower is better)."""
        a = pl.col("actual_output")
        share = a.str.count_matches("!", literal=True) / a.str.len_chars().clip(1)
        return ef.metrics.Scored(score=share.cast(pl.Float64))

    return bang_rate


def data() -> ef.Dataset:
    return ef.Dataset.from_records(
        [{"id": f"s{i}", "input": {"q": str(i)}, "expected_output": "x"} for i in range(4)],
        name="bangs",
    )


# "a!" is exactly at the 0.5 threshold: it passes; "!!" (1.0) and "a!!" (0.667) fail
OUTPUTS = {"s0": "abcd", "s1": "a!", "s2": "!!", "s3": "a!!"}


def test_rows_pass_at_or_below_the_threshold(error_rate: ef.metrics.MetricFactory) -> None:
    run = ef.evaluate(data(), outputs=OUTPUTS, metrics=["bang-rate", "exact-match"])
    rows = run.scores.filter(pl.col("metric") == "bang-rate")
    assert dict(rows.select("sample_id", "passed").iter_rows()) == {
        "s0": True, "s1": True, "s2": False, "s3": False,
    }  # fmt: skip
    assert ef.metrics.get("bang-rate").higher_is_better is False
    assert ef.metrics.get("exact-match").higher_is_better is True
    # failing rows, worst first: the highest share first
    failing = run.failing().filter(pl.col("metric") == "bang-rate")
    assert failing.get_column("sample_id").to_list() == ["s2", "s3"]
    report = run.report()
    assert report["metrics"]["bang-rate"]["higher_is_better"] is False
    assert "higher_is_better" not in report["metrics"]["exact-match"]
    found = dict(failing_samples(report))
    assert [(m, round(s, 4)) for m, s, _ in found["s2"] if m == "bang-rate"] == [("bang-rate", 1.0)]
    markdown = report.to_markdown()
    assert "bang-rate 1.0000 (threshold 0.5, lower is better)" in markdown
    # The metrics table says how each metric passes: at or below a lower-is-better threshold.
    header = next(line for line in markdown.splitlines() if line.startswith("| metric "))
    assert "pass-rate (meets threshold)" in header
    assert "(>= threshold)" not in markdown
    cells = {
        line.split("|")[1].strip(): [c.strip() for c in line.split("|")[1:-1]]
        for line in markdown.splitlines()
        if line.startswith(("| bang-rate ", "| exact-match "))
    }
    threshold = [c.strip() for c in header.split("|")[1:-1]].index("threshold")
    assert cells["bang-rate"][threshold] == "≤ 0.5"
    assert cells["exact-match"][threshold] == "0.5"


def test_the_store_and_an_export_keep_the_rule(
    error_rate: ef.metrics.MetricFactory, tmp_path: Path
) -> None:
    run = ef.evaluate(data(), outputs=OUTPUTS, metrics=["bang-rate"])
    with ef.Store(tmp_path / "a.duckdb") as a:
        a.save(run)
        loaded = a.load(run.run_id)
        a.export(run.run_id, tmp_path / "export")
    assert loaded.scores.get_column("passed").to_list() == run.scores.get_column("passed").to_list()
    with ef.Store(tmp_path / "b.duckdb") as b:
        # the import checks every row's passed against its score and threshold
        assert b.import_runs(tmp_path / "export") == [run.run_id]
    # a report file read back keeps it too
    path = tmp_path / "report.json"
    path.write_bytes(run.report().to_json_bytes())
    from evalframe.views._html._report_run import run_from_report

    again = run_from_report(json.loads(path.read_text("utf-8")))
    assert again.scores.get_column("passed").to_list() == run.scores.get_column("passed").to_list()


def test_a_rising_share_is_the_drop_the_gate_watches(error_rate: ef.metrics.MetricFactory) -> None:
    before = ef.evaluate(data(), outputs=dict.fromkeys(OUTPUTS, "abcd"), metrics=["bang-rate"])
    after = ef.evaluate(data(), outputs=OUTPUTS, metrics=["bang-rate"])
    comparison = ef.compare(before, after)
    rise = float(after.scores.get_column("score").mean())  # before: 0.0 everywhere
    result = gate(comparison, max_regressions=100, max_drop={"bang-rate": rise - 0.01})
    assert not result.passed
    assert any("bang-rate' mean rose by" in f for f in result.failures)
    assert gate(comparison, max_regressions=100, max_drop={"bang-rate": rise + 0.01}).passed
    # and the other way round is an improvement, whatever its size
    back = ef.compare(after, before)
    assert gate(back, max_regressions=100, max_drop={"bang-rate": 0.0}).passed
    # rows that went from pass to fail are the regressions
    assert comparison.regressions().height == 2


def test_hallucination_is_the_contradicted_share_and_lower_is_better() -> None:
    metric = ef.metrics.get("hallucination")
    assert metric.higher_is_better is False
    assert metric.threshold == 0.5
