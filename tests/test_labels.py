"""Human labels kept in the store: written once, current by recency, shared by a rescored
run, read by `calibrate` and `estimate` with no file in between; and the migration that
brings the table to an older store."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

import evalframe as ef
from evalframe.cli import cli

N = 60


@pytest.fixture
def store(tmp_path: Path) -> tuple[Path, str]:
    """A run of rouge-l scores spread over [0, 1] (its "judge"), 60 rows."""
    rng = np.random.default_rng(3)
    words = ["alpha", "beta", "gamma", "delta"]
    records = [
        {"id": f"s{i:02d}", "input": {"q": i}, "expected_output": " ".join(words),
         "metadata": {"tags": ["even" if i % 2 == 0 else "odd"]}}
        for i in range(N)
    ]  # fmt: skip
    outputs = {f"s{i:02d}": " ".join(words[: rng.integers(1, 5)]) for i in range(N)}
    db = tmp_path / "runs.duckdb"
    run = ef.evaluate(
        ef.Dataset.from_records(records, name="lab"),
        outputs=outputs,
        metrics=["rouge-l"],
        store=db,
        progress=False,
    )
    return db, run.run_id


def _label(run_id: str, sid: str, value: object, **more: object) -> dict[str, object]:
    return {"run_id": run_id, "sample_id": sid, "metric": "rouge-l", "label": value, **more}


def test_labels_are_checked_and_the_newest_is_current(store: tuple[Path, str]) -> None:
    db, run_id = store
    with ef.Store(db) as s:
        ids = s.save_labels(
            [_label(run_id, "s01", "pass", note="fine"), _label(run_id, "s02", 0.3)]
        )
        assert len(ids) == 2
        s.save_labels([_label(run_id, "s01", False)])
        current = s.labels(run_id)
        assert current.select("sample_id", "label", "verdict", "note").rows() == [
            ("s01", 0.0, "fail", None),
            ("s02", 0.3, None, None),
        ]
        assert int(s.sql("SELECT count(*) FROM labels").item()) == 3  # every label is kept
        for bad, message in (
            (_label(run_id, "s01", 1.5), "number in \\[0, 1\\]"),
            (_label(run_id, "s01", "maybe"), "pass, fail"),
            (_label(run_id, "", "pass"), "sample_id"),
            (_label(run_id, "s01", "pass", repetition=-1), "repetition"),
            (_label(run_id, "s01", "pass", note="x" * 10_001), "note"),
            (_label(run_id, "zz", "pass"), "no execution"),
            (_label("nope", "s01", "pass"), "Unknown run"),
            ({**_label(run_id, "s01", "pass"), "metric": "bleu"}, "no metric 'bleu'"),
        ):
            with pytest.raises(ef.StoreError, match=message):
                s.save_labels([_label(run_id, "s03", "pass"), bad])
        assert s.labels(run_id).height == 2  # a refused batch adds nothing
        # The run's only metric is the label's when none is named; id and verdict read too.
        s.save_labels([{"run_id": run_id, "id": "s04", "verdict": "pass"}])
        assert s.labels(run_id).filter(pl.col("sample_id") == "s04").item(0, "metric") == "rouge-l"


def test_a_rescored_run_shares_its_source_labels(store: tuple[Path, str]) -> None:
    db, run_id = store
    with ef.Store(db) as s:
        s.save_labels([_label(run_id, "s05", "pass")])
        (rescored,) = s.rescore(["rouge-l", "contains"], runs=run_id)
        assert s.labels(rescored).select("sample_id", "metric", "label").rows() == [
            ("s05", "rouge-l", 1.0)
        ]


def _cli(*args: str) -> dict[str, object]:
    result = CliRunner().invoke(cli, [*args, "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    doc: dict[str, object] = json.loads(result.stdout)
    return doc


def test_calibrate_and_estimate_read_the_stored_labels(
    store: tuple[Path, str], tmp_path: Path
) -> None:
    db, run_id = store
    with ef.Store(db) as s:
        scores = dict(
            s.sql("SELECT sample_id, score FROM scores WHERE run_id = ?", [run_id]).rows()
        )
    # A person who agrees with rouge-l except on three rows, and grades two rows.
    human = {sid: ("pass" if scores[sid] >= 0.5 else "fail") for sid in sorted(scores)[:20]}
    for sid in sorted(scores)[:3]:
        human[sid] = "fail" if human[sid] == "pass" else "pass"
    with ef.Store(db) as s:
        s.save_labels([_label(run_id, sid, v) for sid, v in human.items()])
    doc = _cli("calibrate", "--run", run_id, "--metric", "rouge-l", "--store", str(db))
    data = doc["data"]
    assert isinstance(data, dict)
    assert data["case_count"] == 20
    assert data["agreement_rate"] == pytest.approx(17 / 20)
    judge = [scores[sid] >= 0.5 for sid in human]
    people = [v == "pass" for v in human.values()]
    confusion = data["confusion"]
    assert confusion["true_pass"] == sum(j and p for j, p in zip(judge, people, strict=True))
    assert confusion["false_pass"] == sum(j and not p for j, p in zip(judge, people, strict=True))
    with ef.Store(db) as s:
        kept = s.calibrations()
    assert kept.select("metric", "case_count").rows() == [("rouge-l", 20)]

    # estimate: the stored labels give what the same labels in a file give.
    file = tmp_path / "labels.csv"
    pl.DataFrame({"sample_id": list(human), "label": list(human.values())}).write_csv(file)
    stored = _cli("estimate", run_id, "--metric", "rouge-l", "--store", str(db))
    from_file = _cli("estimate", run_id, "--metric", "rouge-l", "--labels", str(file),
                     "--store", str(db))  # fmt: skip
    assert stored == from_file
    # suggest: the stored labels count as labels you have.
    picked = _cli("calibrate", "--suggest", "10", "--run", run_id, "--metric", "rouge-l",
                  "--store", str(db))  # fmt: skip
    also = _cli("calibrate", "--suggest", "10", "--run", run_id, "--metric", "rouge-l",
                "--labels", str(file), "--store", str(db))  # fmt: skip
    assert picked == also
    rows = picked["rows"]
    assert isinstance(rows, list)
    assert not {r["sample_id"] for r in rows} & set(human)


def test_without_labels_the_commands_say_how_to_get_them(store: tuple[Path, str]) -> None:
    db, run_id = store
    runner = CliRunner()
    est = runner.invoke(cli, ["estimate", run_id, "--metric", "rouge-l", "--store", str(db)])
    assert est.exit_code == 2
    assert "evalframe view" in est.output
    cal = runner.invoke(
        cli, ["calibrate", "--run", run_id, "--metric", "rouge-l", "--store", str(db)]
    )
    assert cal.exit_code == 2
    assert "no human label" in cal.output
    none = runner.invoke(cli, ["calibrate", "--store", str(db)])
    assert none.exit_code == 2
    assert "CASES" in none.output


def test_an_older_store_gains_the_labels_table(store: tuple[Path, str], tmp_path: Path) -> None:
    db, run_id = store
    with ef.Store(db) as s:
        s.export(run_id, tmp_path / "exp")
    con = duckdb.connect(str(db))
    con.execute("DROP VIEW run_labels")
    con.execute("DROP TABLE labels")
    con.execute("UPDATE meta SET value = '5' WHERE key = 'schema_version'")
    con.close()
    with ef.Store(db) as s:
        assert s.schema_version == ef.store.SCHEMA_VERSION
        s.save_labels([_label(run_id, "s00", "pass")])
        assert s.labels(run_id).height == 1
    # An export written by a version-5 store still imports.
    manifest = tmp_path / "exp" / "manifest.json"
    doc = json.loads(manifest.read_text("utf-8"))
    manifest.write_text(json.dumps({**doc, "schema_version": 5}), "utf-8")
    with ef.Store(tmp_path / "other.duckdb") as other:
        assert other.import_runs(tmp_path / "exp") == [run_id]
