"""Reports: eval-harness.report.v1 fields, evalframe's additions, snapshots."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import polars as pl
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


def _example_run(metrics: list[str]) -> ef.Run:
    return ef.evaluate(
        EXAMPLE / "support.yaml", outputs=EXAMPLE / "support.outputs.json", metrics=metrics
    )


def _failing_by_hand(run: ef.Run) -> list[tuple[str, int, str, float | None, float, str | None]]:
    """The oracle: every scored row below its metric's threshold, and every error, by a loop."""
    threshold = {m.id: float(m.threshold) for m in run.metrics}
    order = {m: i for i, m in enumerate(run.metric_ids)}
    rows = [
        (
            r["sample_id"],
            r["repetition"],
            r["metric"],
            r["score"],
            threshold[r["metric"]],
            r["error"],
        )
        for r in run.scores.to_dicts()
        if r["error"] is not None or r["score"] < threshold[r["metric"]]
    ]
    return sorted(
        rows,
        key=lambda r: (
            r[3] is not None,
            r[3] - r[4] if r[3] is not None else 0.0,
            r[0],
            r[1],
            order[r[2]],
        ),
    )


def test_run_failing_lists_rows_below_threshold_and_errors_worst_first() -> None:
    run = fixed_run()
    failing = run.failing()
    assert failing.columns == ["sample_id", "repetition", "metric", "score", "threshold", "error"]
    assert failing.rows() == _failing_by_hand(run)
    # Errors come first, then the largest shortfall: exact-match's 0.0 against 0.5.
    assert failing.row(0)[5] is not None
    scored = failing.filter(failing["error"].is_null())
    assert scored.row(0)[3] == 0.0


def test_markdown_of_the_bundled_example_names_every_failing_sample() -> None:
    from click.testing import CliRunner

    from evalframe.cli import cli

    run = _example_run(["exact-match", "rouge-l"])
    failing_ids = {r[0] for r in _failing_by_hand(run) if r[5] is None}
    assert len(failing_ids) > 3
    args = [
        "run",
        str(EXAMPLE / "support.yaml"),
        "--outputs",
        str(EXAMPLE / "support.outputs.json"),
    ]
    args += ["-m", "exact-match", "-m", "rouge-l"]
    full = CliRunner().invoke(cli, [*args, "--max-rows", "100"])
    assert full.exit_code == 0, full.output
    section = full.output.split("## Failing samples", 1)[1].split("\n## ", 1)[0]
    listed = {line.split("|")[1].strip() for line in section.splitlines() if line.startswith("| ")}
    assert listed - {"sample", "---"} == failing_ids
    assert f"_{len(failing_ids)} of {len(failing_ids)} failing samples shown" in section

    cut = CliRunner().invoke(cli, [*args, "--max-rows", "3"])
    assert cut.exit_code == 0, cut.output
    section = cut.output.split("## Failing samples", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "sample" not in line]
    assert len(rows) == 3
    assert f"_3 of {len(failing_ids)} failing samples shown" in section
    # Worst first: the three listed fall furthest below a threshold.
    worst = sorted(
        {
            (min(r[3] - r[4] for r in _failing_by_hand(run) if r[0] == sid), sid)
            for sid in failing_ids
        }
    )
    assert worst[2][0] <= min(
        s for s, sid in worst if sid in {row.split("|")[1].strip() for row in rows}
    )


def test_max_rows_bounds_the_list_and_zero_keeps_the_note() -> None:
    report = fixed_run().report()
    assert "_0 of 3 failing samples shown" in report.to_markdown(max_rows=0)
    one = report.to_markdown(max_rows=1)
    # q3 errored: an error is the worst outcome, listed first with its error
    assert "_1 of 3 failing samples shown: 1 with an errored execution first" in one
    assert "| q3 | 3 | exact-match errored: Sample 'q3' expected_output must be a string" in one
    assert "## Failures" not in report.to_markdown()
    assert "## Execution errors" in report.to_markdown()
    assert "<code>" not in report.to_markdown()


def test_markdown_histogram_of_a_zero_one_metric_has_two_rows() -> None:
    run = _example_run(["exact-match", "rouge-l"])
    md = run.report(samples=False).to_markdown()
    exact = md.split("### exact-match", 1)[1].split("###", 1)[0]
    wrong = run.scores.filter(pl.col("metric") == "exact-match").get_column("score")
    zeros, ones = int((wrong == 0.0).sum()), int((wrong == 1.0).sum())
    assert f"| 0 | {zeros} |" in exact
    assert f"| 1 | {ones} |" in exact
    assert "0.1-0.2" not in exact
    rouge = md.split("### rouge-l", 1)[1].split("##", 1)[0]
    assert "0.4-0.5" in rouge  # a graded metric keeps its ten ranges


def test_a_report_read_back_from_json_lists_the_same_failing_samples() -> None:
    report = fixed_run().report()
    again = ef.Report(json.loads(report.to_json()))
    assert again.to_markdown() == report.to_markdown()
    without_aggregates = ef.Report({**json.loads(report.to_json()), "sample_aggregates": []})
    section = without_aggregates.to_markdown().split("## Failing samples", 1)[1].split("\n## ")[0]
    assert section == report.to_markdown().split("## Failing samples", 1)[1].split("\n## ")[0]


def test_sampling_advice_only_for_a_system_under_test() -> None:
    ds = ef.Dataset.from_records(
        [{"id": "a", "input": {"q": "x"}, "expected_output": "x"}], name="tiny"
    )
    saved = ef.evaluate(ds, outputs={"a": "x"}, metrics=["exact-match"], repetitions=2)
    system = ef.evaluate(ds, system=lambda _: "x", metrics=["exact-match"], repetitions=2)
    assert saved.report()["outputs"] == "saved"
    assert system.report()["outputs"] == "system"
    assert "## Sampling" not in saved.report().to_markdown()
    assert "## Sampling" in system.report().to_markdown()
    # Read back from JSON, and with the field absent (an eval-harness report), as before.
    assert ef.Report(json.loads(saved.report().to_json())).to_markdown() == (
        saved.report().to_markdown()
    )
    unrecorded = ef.Report({**saved.report(), "outputs": None})
    assert "## Sampling" in unrecorded.to_markdown()
