"""Eval sets: datasets in order, manifest rules, resuming, a failure stopping the set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

import evalframe as ef
from evalframe.cli import cli
from evalframe.core._eval_set import check_manifest, read_eval_set
from evalframe.engine._eval_set import run_set


def write(path: Path, doc: Any) -> Path:
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def dataset(tmp_path: Path, name: str, outputs: dict[str, str] | None = None) -> None:
    write(tmp_path / f"{name}.yaml", {
        "schema_version": "eval-harness.dataset.v1", "name": name, "metrics": ["exact-match"],
        "samples": [{"id": f"{name}-{i}", "input": {"q": i}, "expected_output": "ok"}
                    for i in range(3)],
    })  # fmt: skip
    if outputs is not None:
        (tmp_path / f"{name}.out.json").write_text(json.dumps({"outputs": outputs}), "utf-8")


def eval_set(tmp_path: Path) -> Path:
    dataset(tmp_path, "alpha", {"alpha-0": "ok", "alpha-1": "ok", "alpha-2": "ok"})
    dataset(tmp_path, "beta", {"beta-0": "ok", "beta-1": "no", "beta-2": "ok"})
    dataset(tmp_path, "gamma")  # no outputs file: needs a system under test
    return write(tmp_path / "set.yaml", {
        "schema_version": "eval-harness.eval-set.v1", "name": "nightly",
        "datasets": [{"path": "alpha.yaml", "outputs": "alpha.out.json"},
                     {"path": "beta.yaml", "outputs": "beta.out.json"}, "gamma.yaml"],
    })  # fmt: skip


def test_a_failing_dataset_stops_the_set_and_a_rerun_does_not_retry_it(tmp_path: Path) -> None:
    path = eval_set(tmp_path)
    db = tmp_path / "s.duckdb"
    manifest = tmp_path / "manifest.json"
    runner = CliRunner()
    first = runner.invoke(
        cli, ["run-set", str(path), "--store", str(db), "--manifest", str(manifest)]
    )
    assert first.exit_code == 1
    doc = json.loads(manifest.read_text(encoding="utf-8"))
    assert [e["status"] for e in doc["datasets"]] == ["completed", "completed", "failed"]
    assert doc["datasets"][1]["total_failures"] == 0  # a wrong answer is a score, not an error
    assert "no outputs file" in doc["datasets"][2]["error"]
    check_manifest(doc, "nightly", ["alpha", "beta", "gamma"], "m")
    with ef.Store(db) as store:
        runs = store.runs()
    assert sorted(runs.get_column("dataset").to_list()) == ["alpha", "beta"]
    assert all(json.loads(x) == {"eval_set": "nightly"} for x in runs.get_column("labels"))
    again = runner.invoke(cli, ["run-set", str(path), "--store", str(db)])
    assert again.exit_code == 1  # the failed entry is not retried
    with ef.Store(db) as store:
        assert store.runs().height == 2


def test_resume_skips_completed_datasets(tmp_path: Path) -> None:
    path = eval_set(tmp_path)
    (tmp_path / "sut.py").write_text("def answer(inp):\n    return 'ok'\n", encoding="utf-8")
    manifest = tmp_path / "m.json"
    doc = {
        "schema_version": "eval-harness.eval-set-manifest.v1", "eval_set": "nightly",
        "started_at": 1.0, "updated_at": 2.0,
        "datasets": [
            {"dataset": "alpha", "status": "completed", "started_at": 1.0, "finished_at": 2.5,
             "duration_seconds": 1.5, "report_schema_version": "eval-harness.report.v1",
             "total_samples": 3, "total_failures": 0},
            {"dataset": "beta", "status": "running", "started_at": 3.0},
            {"dataset": "gamma", "status": "pending"},
        ],
    }  # fmt: skip
    manifest.write_text(json.dumps(doc), encoding="utf-8")
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        import sut  # type: ignore[import-not-found]

        result, runs = run_set(path, system=sut.answer, manifest=manifest)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("sut", None)
    assert [r.dataset.name for r in runs] == ["beta", "gamma"]  # alpha was completed
    assert result["datasets"][0] == doc["datasets"][0]  # untouched
    assert [e["status"] for e in result["datasets"]] == ["completed"] * 3


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["datasets"][0].update(status="done"), "status must be one of"),
        (
            lambda d: d["datasets"][2].update(status="running", started_at=1.0),
            "after a dataset not completed, every one is pending",
        ),
        (lambda d: d["datasets"][0].update(duration_seconds=9.0), "finished_at - started_at"),
        (lambda d: d["datasets"][0].update(error="x"), "a completed entry has"),
        (lambda d: d["datasets"].reverse(), "same order"),
        (lambda d: d.update(eval_set="other"), "for eval set 'other'"),
        (lambda d: d["datasets"][2].update(started_at=1.0), "a pending entry has no other field"),
    ],
)
def test_manifest_rules(change: Any, message: str) -> None:
    doc = {
        "schema_version": "eval-harness.eval-set-manifest.v1", "eval_set": "nightly",
        "started_at": 1.0, "updated_at": 2.0,
        "datasets": [
            {"dataset": "alpha", "status": "completed", "started_at": 1.0, "finished_at": 2.5,
             "duration_seconds": 1.5, "report_schema_version": "eval-harness.report.v1",
             "total_samples": 3, "total_failures": 0},
            {"dataset": "beta", "status": "failed", "started_at": 3.0, "finished_at": 4.0,
             "duration_seconds": 1.0, "error": "boom"},
            {"dataset": "gamma", "status": "pending"},
        ],
    }  # fmt: skip
    check_manifest(doc, "nightly", ["alpha", "beta", "gamma"], "m")
    change(doc)
    with pytest.raises(ef.DatasetError, match=message):
        check_manifest(doc, "nightly", ["alpha", "beta", "gamma"], "m")


def test_set_definition_errors(tmp_path: Path) -> None:
    for doc, message in [
        ({"name": " padded ", "datasets": ["a.yaml"]}, "surrounding whitespace"),
        ({"name": "n", "datasets": []}, "at least one dataset"),
        ({"name": "n", "datasets": [{"outputs": "x"}]}, r"datasets\[0\] must be"),
        ({"schema_version": "v9", "name": "n", "datasets": ["a"]}, "schema_version must be"),
    ]:
        with pytest.raises(ef.DatasetError, match=message):
            read_eval_set(write(tmp_path / "s.yaml", doc))
