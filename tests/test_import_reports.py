"""eval-harness history carried over: report JSON files imported into the store as runs, and
report files as the reference (or the run) of ``evalframe gate`` and ``evalframe compare``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import evalframe as ef
from evalframe.cli import cli

FIXTURE = Path(__file__).parent / "data" / "eval_harness_report.json"


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def test_an_eval_harness_report_becomes_a_stored_run(tmp_path: Path) -> None:
    store = tmp_path / "runs.duckdb"
    code, out = invoke("import", str(FIXTURE), "--store", str(store))
    assert code == 0, out
    assert out.startswith("imported 1 run(s): eh-")
    run_id = out.strip().rsplit(": ", 1)[1]
    again = f"imported 0 run(s): run {run_id} is in the store already\n"
    assert invoke("import", str(FIXTURE), "--store", str(store)) == (0, again)
    doc = json.loads(FIXTURE.read_text("utf-8"))
    with ef.Store(store) as db:
        run = db.load(run_id)
    assert run.labels == {"imported_from": FIXTURE.name, "report_schema": "eval-harness.report.v1"}
    assert run.dataset.name == doc["dataset"]
    assert run.started_at == pytest.approx(doc["started_at"])
    # every score and every failure of the file, row for row
    scores = {
        (r["sample_id"], r["metric"]): (r["score"], r["error"])
        for r in run.scores.iter_rows(named=True)
    }
    expected = {
        (s["id"], name): (v["score"], None)
        for s in doc["samples"]
        for name, v in s["scores"].items()
    }
    expected.update({(f["sample_id"], f["metric"]): (None, f["error"]) for f in doc["failures"]})
    assert scores == expected
    # and the figures the report printed come back from the stored run
    report = run.report()
    for name, stats in doc["metrics"].items():
        for key in ("mean", "p50", "p95", "pass_rate"):
            assert report["metrics"][name][key] == pytest.approx(stats[key]), (name, key)
    assert report["macro_f1"] == pytest.approx(doc["macro_f1"])
    assert [s["actual_output"] for s in report["samples"]] == [
        s["actual_output"] for s in doc["samples"]
    ]


def eval_harness_baseline(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A dataset, and an eval-harness report of it scored on its expected answers.

    evalframe's report is eval-harness's plus a few keys; without them (and with
    eval-harness's schema name) it is what eval-harness writes for the same dataset.
    """
    data = tmp_path / "faq.yaml"
    data.write_text(
        "name: support.faq\nmetrics: [exact-match, contains]\nsamples:\n"
        "  - {id: q1, input: {question: refunds?}, expected_output: Within 30 days.}\n"
        "  - {id: q2, input: {question: shipping?}, expected_output: 3-5 business days.}\n"
        "  - {id: q3, input: {question: gift cards?}, expected_output: Not refundable.}\n",
        encoding="utf-8",
    )
    good = tmp_path / "good.json"
    good.write_text(
        json.dumps({"outputs": {"q1": "Within 30 days.", "q2": "3-5 business days.",
                                "q3": "Not refundable."}}),
        encoding="utf-8",
    )  # fmt: skip
    written = tmp_path / "written.json"
    invoke("run", str(data), "--outputs", str(good), "--format", "json", "--out", str(written))
    doc = json.loads(written.read_text("utf-8"))
    for key in ("run_id", "metric_ids"):
        doc.pop(key)
    doc["schema_version"] = "eval-harness.report.v1"
    baseline = tmp_path / "eval-harness-report.json"
    baseline.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    worse = tmp_path / "worse.json"
    worse.write_text(
        json.dumps({"outputs": {"q1": "Ask us.", "q2": "3-5 business days.",
                                "q3": "Not refundable."}}),
        encoding="utf-8",
    )  # fmt: skip
    return data, baseline, worse


def test_an_eval_harness_baseline_gates_an_evalframe_run(tmp_path: Path) -> None:
    store = tmp_path / "runs.duckdb"
    data, baseline, worse = eval_harness_baseline(tmp_path)
    assert invoke("run", str(data), "--outputs", str(worse), "--store", str(store))[0] == 0
    code, out = invoke("gate", "latest", "--baseline", str(baseline), "--store", str(store))
    assert code == 1
    assert "2 regressed pair(s) on 1 row(s)" in out  # q1: exact-match and contains
    assert "q1" in out
    code, out = invoke(
        "gate", "latest", "--baseline", str(baseline), "--store", str(store),
        "--max-regressions", "2", "--format", "json",
    )  # fmt: skip
    assert code == 0, out
    assert json.loads(out)["passed"] is True
    # imported into the store, the baseline gates the same way by run id
    imported = invoke("import", str(baseline), "--store", str(store))[1].strip().rsplit(" ", 1)[1]
    code, out = invoke("gate", "latest", "--baseline", imported, "--store", str(store))
    assert code == 1
    assert "2 regressed pair(s) on 1 row(s)" in out


def test_compare_takes_report_files_on_either_side(tmp_path: Path) -> None:
    store = tmp_path / "runs.duckdb"
    data, baseline, worse = eval_harness_baseline(tmp_path)
    invoke("run", str(data), "--outputs", str(worse), "--store", str(store))
    code, out = invoke(
        "compare", str(baseline), "latest", "--store", str(store), "--format", "json"
    )
    assert code == 0, out
    regressed = {(r["sample_id"], r["metric"]) for r in json.loads(out)["regressions"]}
    assert regressed == {("q1", "exact-match"), ("q1", "contains")}
    # two report files need no store at all
    report = tmp_path / "now.json"
    invoke("run", str(data), "--outputs", str(worse), "--format", "json", "--out", str(report))
    code, out = invoke("compare", str(baseline), str(report), "--format", "json")
    assert code == 0, out
    regressed = {(r["sample_id"], r["metric"]) for r in json.loads(out)["regressions"]}
    assert regressed == {("q1", "exact-match"), ("q1", "contains")}
    assert invoke("gate", str(report), "--baseline", str(baseline))[0] == 1


def test_a_file_that_is_not_a_report_is_refused_by_name(tmp_path: Path) -> None:
    bad = tmp_path / "notes.json"
    bad.write_text('{"schema_version": "something.v9"}', encoding="utf-8")
    code, out = invoke("import", str(bad), "--store", str(tmp_path / "s.duckdb"))
    assert code == 2
    assert "notes.json is not a report" in out
