"""Glob characters (``[``, ``]``, ``*``, ``?``) in folder and file names are plain characters
to every command: the dataset, the outputs, the store, reports, exports, eval sets."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
import yaml
from click.testing import CliRunner

from evalframe.cli import cli
from evalframe.store import Store

N = 12


def _ok(*argv: str) -> str:
    done = CliRunner().invoke(cli, list(argv))
    assert done.exit_code in (0, 1), (argv, done.output, done.exception)
    return done.stdout


@pytest.mark.parametrize("folder", ["exp [v2]", "[x]*?"])
def test_every_command_takes_paths_with_glob_characters(tmp_path: Path, folder: str) -> None:
    base = tmp_path / folder / "in [1]?"
    base.mkdir(parents=True)
    ds = base / "golden [v2]*.yaml"
    samples = [
        {"id": f"s{i}", "input": {"q": f"q{i}"}, "expected_output": f"a{i}"} for i in range(N)
    ]
    ds.write_text(
        yaml.safe_dump({"schema_version": "eval-harness.dataset.v1", "name": "golden",
                        "metrics": ["exact-match", "contains"], "samples": samples}),
        encoding="utf-8",
    )  # fmt: skip
    outputs = base / "outputs [a]?.jsonl"
    lines = [
        json.dumps({"id": f"s{i}", "actual_output": f"a{i}" if i % 3 else "no"}) for i in range(N)
    ]
    outputs.write_text("\n".join(lines), encoding="utf-8")
    parquet = base / "parts [p]*"
    parquet.mkdir()
    pl.DataFrame(
        {"sample_id": [f"s{i}" for i in range(N)], "actual_output": [f"a{i}" for i in range(N)]}
    ).write_parquet(parquet / "part [0].parquet")
    db = base / "runs [1]*?.duckdb"
    store = ["--store", str(db)]

    report = base / "report [r]?.json"
    _ok("run", str(ds), "--outputs", str(outputs), *store, "--format", "json", "--out", str(report))
    first = json.loads(report.read_text(encoding="utf-8"))
    assert first["metrics"]["exact-match"]["n"] == N
    second = json.loads(_ok("run", str(ds), "--outputs", str(parquet), *store, "--format", "json"))
    assert second["metrics"]["exact-match"]["pass_rate"] == 1.0
    assert [r["run_id"] for r in json.loads(_ok("runs", *store, "--format", "json"))] == [
        second["run_id"],
        first["run_id"],
    ]
    assert _ok("sql", "SELECT count(*) AS n FROM scores", *store).split()[-1] == str(4 * N)
    assert (
        json.loads(_ok("report", first["run_id"], *store, "--format", "json"))["run_id"]
        == (first["run_id"])
    )
    assert json.loads(_ok("report", str(report), "--format", "json"))["run_id"] == first["run_id"]
    assert "exact-match" in _ok("compare", first["run_id"], second["run_id"], *store)
    _ok("baseline", "promote", first["run_id"], *store)
    assert first["run_id"] in _ok("baseline", "list", *store)
    _ok("gate", second["run_id"], "--baseline", "baseline", *store)
    assert _ok("brief", second["run_id"], *store)
    assert f"from {first['run_id']}" in _ok(
        "rescore", "--runs", first["run_id"], "-m", "rouge-l", *store
    )
    exported = base / "export [e]*?"
    _ok("export", first["run_id"], "--to", str(exported), *store)
    other = base / "other [o]?.duckdb"
    assert first["run_id"] in _ok("import", str(exported), "--store", str(other))
    assert Store(other).sql("SELECT count(*) FROM scores").item() == 2 * N
    assert "sound: no problem found" in _ok("store", "verify", *store)

    set_file = base / "set [s]?.yaml"
    set_file.write_text(
        yaml.safe_dump({"schema_version": "eval-harness.eval-set.v1", "name": "nightly",
                        "datasets": [{"path": ds.name, "outputs": outputs.name}]}),
        encoding="utf-8",
    )  # fmt: skip
    manifest = base / "manifest [m]*.json"
    _ok("run-set", str(set_file), *store, "--manifest", str(manifest))
    statuses = [e["status"] for e in json.loads(manifest.read_text(encoding="utf-8"))["datasets"]]
    assert statuses == ["completed"]
    assert Store(db).sql("SELECT count(*) FROM runs").item() == 4
