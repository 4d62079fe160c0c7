"""``evalframe report`` on an eval-harness.report.v1 JSON file (no evalframe additions)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from test_html import parse
from test_report import EVAL_HARNESS_KEYS, check_snapshot, fixed_run

from evalframe.cli import cli
from evalframe.views._report import Report

FIXTURE = Path(__file__).parent / "data" / "eval_harness_report.json"

# What evalframe adds to eval-harness's report, at the top level and in each metric block.
EVALFRAME_TOP = {
    "status", "eval_harness_schema_version", "run_id", "run_name", "evalframe_version",
    "metric_ids", "headline", "dimensions", "safety_failures",
}  # fmt: skip
EVALFRAME_METRIC = {
    "n", "n_scored", "n_errors", "n_passed", "pass_rate_attempted", "threshold", "family",
    "dimension",
}  # fmt: skip


def harness_doc() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(FIXTURE.read_text(encoding="utf-8"))
    return doc


def test_fixture_has_exactly_eval_harness_fields() -> None:
    doc = harness_doc()
    assert list(doc) == EVAL_HARNESS_KEYS
    assert doc["schema_version"] == "eval-harness.report.v1"
    for block in doc["metrics"].values():
        assert list(block) == ["mean", "p50", "p95", "pass_rate"]


def test_markdown_of_an_eval_harness_report_snapshot() -> None:
    result = CliRunner().invoke(cli, ["report", str(FIXTURE), "--format", "markdown"])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    md = result.stdout
    check_snapshot("eval_harness_report.md", md)
    assert "| metric | mean | p50 | p95 | pass-rate (>= 0.5) |" in md
    assert "| llm-as-judge | 0.6500 | 0.6500 | 0.8750 | 0.5000 |" in md
    assert "## Macro-F1 (avg pass-rate across all metrics): 0.5833" in md
    assert "LLM judge request failed: HTTP 500." in md


@pytest.mark.parametrize("charts", ["none", "svg"])
def test_html_of_an_eval_harness_report_has_its_content(charts: str, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    result = CliRunner().invoke(
        cli, ["report", str(FIXTURE), "--charts", charts, "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    page = out.read_text(encoding="utf-8")
    parse(page)
    assert page.startswith("<!DOCTYPE html>")
    assert "support.faq" in page
    assert "0.5833" in page  # macro-F1
    for metric in ("exact-match", "llm-as-judge"):
        assert f"<code>{metric}</code>" in page
    for cohort in ("billing", "shipping", "(untagged)"):
        assert f">{cohort}</td>" in page
    assert "LLM judge request failed: HTTP 500." in page
    assert "<th>pass-rate (&gt;= 0.5)</th>" in page
    assert "<th>scored</th>" not in page  # eval-harness reports carry no counts


def test_report_command_on_an_eval_harness_file_exits_zero_as_a_process() -> None:
    for fmt in ("markdown", "html", "json"):
        proc = subprocess.run(
            [sys.executable, "-m", "evalframe", "report", str(FIXTURE), "--format", fmt],
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 0, (fmt, proc.stderr)
        assert "Traceback" not in proc.stderr
    assert json.loads(proc.stdout) == harness_doc()


def _strip(metrics: dict[str, Any]) -> dict[str, Any]:
    return {
        n: {k: v for k, v in m.items() if k not in EVALFRAME_METRIC} for n, m in metrics.items()
    }


def test_any_evalframe_report_stripped_to_eval_harness_fields_renders() -> None:
    """The general rule: renderers need only eval-harness's keys; additions are optional."""
    full = fixed_run().report()
    lean = {k: v for k, v in full.items() if k not in EVALFRAME_TOP}
    lean["schema_version"] = "eval-harness.report.v1"
    lean["metrics"] = _strip(full["metrics"])
    lean["cohorts"] = [{**c, "metrics": _strip(c["metrics"])} for c in full["cohorts"]]
    report = Report(lean)
    md = report.to_markdown()
    assert "pass-rate (>= 0.5)" in md
    parse(report.to_html(charts="none"))
    from evalframe.views._html import report_text

    assert "scored" not in report_text(report)
