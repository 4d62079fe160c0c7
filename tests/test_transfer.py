"""Import verifies what it imports: real exports written by ``evalframe export``, tampered
with pyarrow, imported with ``evalframe import``; every refusal leaves the store as it was."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import evalframe as ef
from evalframe.cli import cli
from evalframe.core._errors import StoreError
from evalframe.store import Store

N_SAMPLES = 100_000  # two metrics: 200,000 score rows, as in the report that found this
TABLES = (
    "runs",
    "run_metrics",
    "samples",
    "outputs",
    "scores",
    "sample_stats",
    "run_metric_stats",
    "run_cohort_stats",
    "usage",
)


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An export of one 200,000-score run, written by ``evalframe export``."""
    folder = tmp_path_factory.mktemp("export")
    ids = [f"s{i}" for i in range(N_SAMPLES)]
    ds = ef.Dataset.from_records(
        [
            {"id": sid, "input": {"q": i}, "expected_output": f"a{i % 7}", "tags": [f"t{i % 3}"]}
            for i, sid in enumerate(ids)
        ],
        name="big",
    )
    outputs = pl.DataFrame(
        {"sample_id": ids, "actual_output": [f"a{i % 5}" for i in range(N_SAMPLES)]}
    )
    source = folder / "source.duckdb"
    ef.evaluate(ds, outputs=outputs, metrics=["exact-match", "contains"], store=source)
    code, _, err = invoke(
        "export", "latest", "--to", str(folder / "export"), "--store", str(source)
    )
    assert code == 0, err
    return folder / "export"


@pytest.fixture
def export(exported: Path, tmp_path: Path) -> Path:
    target = tmp_path / "export"
    shutil.copytree(exported, target)
    return target


@pytest.fixture
def target(tmp_path: Path) -> Path:
    """A store that already holds one small run."""
    path = tmp_path / "target.duckdb"
    ds = ef.Dataset.from_records([{"id": "k", "input": {}, "expected_output": "x"}], name="kept")
    ef.evaluate(ds, outputs={"k": "x"}, metrics=["exact-match"], store=path)
    return path


def _contents(path: Path) -> dict[str, int]:
    """Row counts of every store table, read with plain DuckDB."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        return {t: con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0] for t in TABLES}
    finally:
        con.close()


def _rewrite(
    export: Path, table: str, change: Callable[[pa.Table], pa.Table], *, manifest: bool
) -> None:
    """Rewrite one Parquet file; with ``manifest``, make the manifest agree with it."""
    path = export / f"{table}.parquet"
    pq.write_table(change(pq.read_table(path)), path)
    if manifest:
        doc = json.loads((export / "manifest.json").read_text(encoding="utf-8"))
        data = path.read_bytes()
        doc["files"][table].update(
            bytes=len(data),
            sha256=hashlib.sha256(data).hexdigest(),
            rows=pq.ParquetFile(path).metadata.num_rows,
        )
        doc["rows"][table] = doc["files"][table]["rows"]
        (export / "manifest.json").write_text(json.dumps(doc), encoding="utf-8")


def _set(table: pa.Table, name: str, values: pa.Array) -> pa.Table:
    return table.set_column(table.schema.get_field_index(name), name, values)


def _refused(export: Path, target: Path, *expected: str) -> str:
    before = _contents(target)
    code, out, err = invoke("import", str(export), "--store", str(target))
    assert code == 2, out + err
    assert err.startswith(f"error: Refusing to import {export}: ")
    assert err.rstrip("\n").count("\n") == 0, err  # one paragraph
    for forbidden in ("SELECT", "read_parquet", "LINE 1", "^", "statement:", "Traceback"):
        assert forbidden not in err, err
    for text in expected:
        assert text in err, err
    assert "Nothing was imported." in err
    assert _contents(target) == before
    return err


def test_an_untouched_export_imports_every_row(export: Path, target: Path) -> None:
    before = _contents(target)
    code, _, err = invoke("import", str(export), "--store", str(target))
    assert code == 0, err
    after = _contents(target)
    manifest = json.loads((export / "manifest.json").read_text(encoding="utf-8"))
    for table in TABLES:
        if table in manifest["files"]:
            assert after[table] - before[table] == manifest["files"][table]["rows"], table
    assert after["scores"] - before["scores"] == 2 * N_SAMPLES
    for table, entry in manifest["files"].items():
        data = (export / entry["file"]).read_bytes()
        assert entry["sha256"] == hashlib.sha256(data).hexdigest(), table
        assert entry["bytes"] == len(data)


def test_a_dropped_score_column_is_refused(export: Path, target: Path) -> None:
    _rewrite(export, "scores", lambda t: t.drop_columns(["score"]), manifest=False)
    _refused(export, target, "scores.parquet has", "the file was cut, replaced or edited")
    _rewrite(export, "scores", lambda t: t, manifest=True)
    _refused(export, target, "scores.parquet", "column score is missing")


def test_a_score_column_of_another_type_is_refused(export: Path, target: Path) -> None:
    def as_text(t: pa.Table) -> pa.Table:
        return _set(t, "score", pc.cast(t.column("score"), pa.string()))

    _rewrite(export, "scores", as_text, manifest=True)
    _refused(export, target, "column score is VARCHAR, expected DOUBLE")


def test_scores_out_of_range_are_refused(export: Path, target: Path) -> None:
    def stretched(t: pa.Table) -> pa.Table:
        return _set(t, "score", pc.multiply(t.column("score"), 1.5))

    _rewrite(export, "scores", stretched, manifest=True)
    _refused(export, target, "scores.parquet", "is outside [0, 1]")


def test_a_nan_score_is_refused(export: Path, target: Path) -> None:
    def nan_first(t: pa.Table) -> pa.Table:
        values = t.column("score").to_pylist()
        values[0] = float("nan")
        return _set(t, "score", pa.array(values, pa.float64()))

    _rewrite(export, "scores", nan_first, manifest=True)
    _refused(export, target, "score nan is outside [0, 1]")


def test_scores_nulled_without_an_error_are_refused(export: Path, target: Path) -> None:
    def nulled(t: pa.Table) -> pa.Table:
        return _set(t, "score", pa.nulls(t.num_rows, pa.float64()))

    _rewrite(export, "scores", nulled, manifest=True)
    _refused(export, target, f"{2 * N_SAMPLES:,} row(s) are invalid", "neither a score nor")


def test_a_flipped_passed_flag_is_refused(export: Path, target: Path) -> None:
    def flipped(t: pa.Table) -> pa.Table:
        return _set(t, "passed", pc.invert(t.column("passed")))

    _rewrite(export, "scores", flipped, manifest=True)
    _refused(export, target, "disagrees with score")


def test_a_truncated_scores_file_is_refused(export: Path, target: Path) -> None:
    _rewrite(export, "scores", lambda t: t.slice(0, 1_000), manifest=False)
    _refused(export, target, "scores.parquet has")
    _rewrite(export, "scores", lambda t: t, manifest=True)
    _refused(export, target, "scores.parquet holds 1,000 row(s)", "the run has 200,000")


def test_edited_samples_are_refused(export: Path, target: Path) -> None:
    def edited(t: pa.Table) -> pa.Table:
        values = t.column("expected_output").to_pylist()
        values[0] = "a different answer"
        return _set(t, "expected_output", pa.array(values, pa.string()))

    _rewrite(export, "samples", edited, manifest=False)
    _refused(export, target, "samples.parquet", "edited")


def test_samples_edited_with_a_rewritten_manifest_fail_the_dataset_hash(
    export: Path, target: Path
) -> None:
    def renamed(t: pa.Table) -> pa.Table:
        values = t.column("sample_id").to_pylist()
        values[0], values[1] = values[1], values[0]
        return _set(t, "sample_id", pa.array(values, pa.string()))

    _rewrite(export, "samples", renamed, manifest=True)
    _refused(export, target, "samples.parquet", "no longer hash")


def test_a_removed_sample_is_refused(export: Path, target: Path) -> None:
    _rewrite(export, "samples", lambda t: t.slice(1), manifest=True)
    _refused(export, target, f"samples.parquet holds {N_SAMPLES - 1:,} row(s)")


def test_an_edited_manifest_row_count_is_refused(export: Path, target: Path) -> None:
    doc = json.loads((export / "manifest.json").read_text(encoding="utf-8"))
    doc["files"]["outputs"]["rows"] = 5
    (export / "manifest.json").write_text(json.dumps(doc), encoding="utf-8")
    _refused(export, target, "outputs.parquet holds 100,000 rows; the manifest records 5")


def test_an_export_without_checksums_is_refused(export: Path, target: Path) -> None:
    doc = json.loads((export / "manifest.json").read_text(encoding="utf-8"))
    del doc["files"]
    (export / "manifest.json").write_text(json.dumps(doc), encoding="utf-8")
    _refused(export, target, "records no size or SHA-256", "export the runs again")


def test_a_failure_while_writing_keeps_nothing(export: Path, target: Path) -> None:
    """Every check passes, the last table's insert fails: the rows written before it go too."""

    def null_label(t: pa.Table) -> pa.Table:
        return _set(t, "label", pa.nulls(t.num_rows, pa.string()))

    _rewrite(export, "run_cohort_stats", null_label, manifest=True)
    _refused(export, target, "run_cohort_stats.parquet could not be written")


def test_store_import_runs_raises_a_store_error(export: Path, target: Path) -> None:
    _rewrite(export, "scores", lambda t: t.slice(0, 1_000), manifest=True)
    with pytest.raises(StoreError, match=r"^Refusing to import .*holds 1,000 row\(s\)"):
        Store(target).import_runs(export)
