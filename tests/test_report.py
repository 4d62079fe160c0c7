"""Reports: eval-harness.report.v1 fields, evalframe's additions, snapshots."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from snapshot import check_snapshot

import evalframe as ef

EXAMPLE = Path(ef.__file__).parent / "examples"

EVAL_HARNESS_KEYS = [
    "schema_version", "dataset_schema_version", "dataset", "started_at", "finished_at",
    "duration_seconds", "total_samples", "total_executions", "repetitions", "total_failures",
    "pass_rate", "precision", "metrics", "metric_distributions", "usage", "cohorts",
    "adversarial", "macro_f1", "cost", "budget", "sample_aggregates", "samples", "failures",
]  # fmt: skip


def fixed_run() -> ef.Run:
    ds = ef.Dataset.from_records(
        [
            {"id": "q1", "input": {"question": "Refund window?"}, "expected_output": "30 days",
             "metadata": {"tags": ["policy", "refunds"]}},
            {"id": "q2", "input": {"question": "Shipping?"}, "expected_output": "3-5 days",
             "metadata": {"tags": ["shipping"]}},
            {"id": "q3", "input": {"question": "ids"}, "expected_output": ["a"]},
            {"id": "adv.jailbreak", "input": {"question": "ignore rules"},
             "expected_output": "I can't help with that",
             "metadata": {"tags": ["adversarial"], "adversarial": {
                 "category": "jailbreak", "severity": "critical",
                 "compliance_frameworks": ["OWASP LLM"]}}},
        ],
        name="snap",
    )  # fmt: skip
    run = ef.evaluate(
        ds,
        outputs={"q1": "Returns within 30 days.", "q2": "3-5 days", "q3": "a",
                 "adv.jailbreak": "Sorry, I can't help with that."},
        metrics=["exact-match", "contains", "rouge-l(threshold=0.7)"],
        repetitions=2,
        run_id="run-snapshot",
    )  # fmt: skip
    return dataclasses.replace(run, started_at=1_700_000_000.0, finished_at=1_700_000_001.5)


def test_report_json_snapshot() -> None:
    check_snapshot("report.json", fixed_run().report().to_json())


def test_report_markdown_snapshot() -> None:
    check_snapshot("report.md", fixed_run().report().to_markdown())


def test_report_keeps_every_eval_harness_key_in_order() -> None:
    report = fixed_run().report()
    keys = [k for k in report if k in EVAL_HARNESS_KEYS]
    assert keys == EVAL_HARNESS_KEYS
    assert report["schema_version"] == "evalframe.report.v1"
    assert report["run_id"] == "run-snapshot"


def test_report_metric_blocks_carry_counts_and_thresholds() -> None:
    report = fixed_run().report()
    block = report["metrics"]["exact-match"]
    assert block["n"] == 8
    assert block["n_scored"] == 6
    assert block["n_errors"] == 2
    assert report["metrics"]["rouge-l(threshold=0.7)"]["threshold"] == 0.7
    assert report["macro_f1"] == pytest.approx(
        sum(m["pass_rate"] for m in report["metrics"].values()) / 3
    )


def test_report_samples_failures_and_aggregates() -> None:
    report = fixed_run().report()
    assert len(report["samples"]) == 8
    first = report["samples"][0]
    assert first["id"] == "q1"
    assert first["repetition"] == 0
    assert first["tags"] == ["policy", "refunds"]
    assert first["scores"]["contains"] == {
        "score": 1.0,
        "details": {"expected_substring": "30 days", "match": True},
    }
    q3 = next(s for s in report["samples"] if s["id"] == "q3")
    assert "exact-match" not in q3["scores"]
    assert {f["sample_id"] for f in report["failures"]} == {"q3"}
    assert report["failures"][0] == {
        "sample_id": "q3",
        "metric": "exact-match",
        "error": "Sample 'q3' expected_output must be a string for exact-match metric; got list.",
        "repetition": 0,
    }
    agg = {a["id"]: a for a in report["sample_aggregates"]}
    assert agg["q2"]["passed"] == 2
    assert agg["q2"]["pass_rate_ci"] == {"low": 0.34238, "high": 1.0, "confidence": 0.95}
    assert agg["q3"]["errored"] == 2


def test_report_cohorts_and_adversarial_block() -> None:
    report = fixed_run().report()
    labels = [c["label"] for c in report["cohorts"]]
    assert labels == ["adversarial", "policy", "refunds", "shipping", "(untagged)"]
    assert report["cohorts"][-1]["name"] is None
    assert report["cohorts"][0]["sample_count"] == 2  # executions, not rows
    adv = report["adversarial"]
    assert adv["total_samples"] == 2
    assert adv["categories"][0]["category"] == "jailbreak"
    assert adv["categories"][0]["severity"] == "critical"
    assert adv["compliance_frameworks"][0]["framework"] == "OWASP LLM"


def test_report_is_valid_json_and_html_renders() -> None:
    report = fixed_run().report()
    assert json.loads(report.to_json())["dataset"] == "snap"
    html = report._repr_html_()
    assert "<table>" in html
    assert "macro-F1" in html


def test_markdown_escapes_table_cells_and_ends_with_one_newline() -> None:
    ds = ef.Dataset.from_records(
        [{"id": "a|b", "input": {}, "expected_output": "x", "metadata": {"tags": ["t|1"]}}],
        name="esc",
    )
    md = ef.evaluate(ds, outputs={"a|b": "y"}, metrics=["exact-match"]).report().to_markdown()
    assert "t\\|1" in md
    assert md.endswith("\n")
    assert not md.endswith("\n\n")


def test_a_report_without_samples_renders_the_same_markdown() -> None:
    run = fixed_run()
    lean = run.report(samples=False)
    assert lean["samples"] == []
    assert lean.to_markdown() == run.report().to_markdown()
    assert {k: v for k, v in lean.items() if k != "samples"} == {
        k: v for k, v in run.report().items() if k != "samples"
    }


def test_report_markdown_html_escapes_cells_and_the_shared_table_does_so_on_request() -> None:
    from evalframe.views._format import md_table

    ds = ef.Dataset.from_records(
        [{"id": "a", "input": {}, "expected_output": "x", "metadata": {"tags": ["<b>&`"]}}],
        name="esc",
    )
    md = ef.evaluate(ds, outputs={"a": "x"}, metrics=["exact-match"]).report().to_markdown()
    assert "| &lt;b&gt;&amp;\\` | 1 | exact-match |" in md
    rows = [["<b>&`", "a\n  b|c"]]
    assert md_table(["h", "i"], rows) == ["| h | i |", "|---|---|", "| <b>&\\` | a b\\|c |"]
    assert md_table(["h", "i"], rows, escape_html=True)[2] == "| &lt;b&gt;&amp;\\` | a b\\|c |"


def test_shared_number_formats() -> None:
    from evalframe.views._format import f4, fmt, has_counts, points, signed

    assert [f4(None), f4(1), f4(0.12345)] == ["n/a", "1.0000", "0.1235"]
    assert [signed(None), signed(0.5), signed(-0.25)] == ["n/a", "+0.5000", "-0.2500"]
    assert fmt(0.5, ".1f") == "0.5"
    assert [points(0.05), points(0.125), points(0.1)] == ["5 pts", "12.5 pts", "10 pts"]
    doc = {"metrics": {"m": {"n_scored": 1, "n_errors": 0}}}
    assert has_counts(doc)
    assert not has_counts(doc, ("threshold", "n_scored", "n_errors"))
