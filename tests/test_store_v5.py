"""Schema version 5: a version-4 file and a version-4 export are brought to one notion of
passing (pass rates over attempted cells, macro-F1 without safety metrics) when opened or
imported."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import evalframe as ef
from evalframe.core import aggregate
from evalframe.store import SCHEMA_VERSION, Store


def _run() -> ef.Run:
    ds = ef.Dataset.from_records(
        [
            {"id": f"q{i}", "input": {"q": i}, "expected_output": "yes" if i != 3 else ["x"],
             "metadata": {"tags": ["odd" if i % 2 else "even"]}}
            for i in range(6)
        ],
        name="v5",
    )  # fmt: skip
    outputs = {f"q{i}": "yes" if i < 4 else "no a@b.io" for i in range(6)}
    # q3 errors (a list expected output); q4 and q5 leak an address (pii-leak is safety)
    return ef.evaluate(ds, outputs=outputs, metrics=["exact-match", "pii-leak"])


def _as_version_4(path: Path) -> None:
    """Rewrite a fresh file as version 4 left it: stats tables without the new columns and
    with pass rates over scored cells, ``macro_f1`` over every metric and scored cells."""
    con = duckdb.connect(str(path))
    try:
        for view in ("run_status", "run_macro_f1", "metric_summary", "cohort_summary",
                     "dimension_summary"):  # fmt: skip
            con.execute(f"DROP VIEW IF EXISTS {view}")
        for table in ("run_metric_stats", "run_cohort_stats"):
            con.execute(f"UPDATE {table} SET pass_rate = coalesce(pass_rate_scored, 0.0)")
            con.execute(f"ALTER TABLE {table} DROP COLUMN n_passed")
            con.execute(f"ALTER TABLE {table} DROP COLUMN pass_rate_scored")
        con.execute("UPDATE runs SET macro_f1 = 0.999")
        con.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    finally:
        con.close()


def _check(store: Store, run: ef.Run) -> None:
    want = aggregate.summarize(run.scores, metrics=run.metric_ids)
    got = store.sql(
        "SELECT * FROM run_metric_stats WHERE run_id = ? ORDER BY ordinal", [run.run_id]
    )
    assert_frame_equal(got.select(want.columns), want, check_dtypes=False, abs_tol=1e-12)
    cohorts = store.sql(
        "SELECT * FROM run_cohort_stats WHERE run_id = ? ORDER BY is_untagged, cohort, ordinal",
        [run.run_id],
    )
    assert_frame_equal(
        cohorts.select(run.cohorts.columns), run.cohorts, check_dtypes=False, abs_tol=1e-12
    )
    # exact-match: 3 of 6 pass (q3 errored, q4 and q5 wrong); pii-leak stays out
    assert run.macro_f1 == pytest.approx(0.5)
    assert store.runs().item(0, "macro_f1") == pytest.approx(0.5)


def test_a_version_4_file_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "v4.duckdb"
    run = _run()
    with Store(path) as store:
        store.save(run)
    _as_version_4(path)
    with Store(path) as store:
        assert store.schema_version == SCHEMA_VERSION
        _check(store, run)
        status = store.sql("SELECT * FROM run_status").row(0, named=True)
    assert (status["errored_executions"], status["safety_failed_executions"]) == (1, 2)


def test_a_version_4_export_is_imported_with_its_statistics_computed_again(
    tmp_path: Path,
) -> None:
    run = _run()
    with Store(":memory:") as source:
        source.save(run)
        source.export(run.run_id, tmp_path / "export")
    manifest = tmp_path / "export" / "manifest.json"
    doc = json.loads(manifest.read_text(encoding="utf-8"))
    doc["schema_version"] = 4
    manifest.write_text(json.dumps(doc), encoding="utf-8")
    # version 4's stats files had other columns: they are not read
    pl.DataFrame({"nothing": [1]}).write_parquet(tmp_path / "export" / "run_metric_stats.parquet")
    with Store(tmp_path / "target.duckdb") as target:
        assert target.import_runs(tmp_path / "export") == [run.run_id]
        _check(target, run)
