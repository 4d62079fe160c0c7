"""Saved outputs larger than memory, streamed into the store (``store.score_outputs``,
``evalframe run --batch-size``): the run ``evaluate`` would save, checked coverage, nothing
stored on a failure, and the same on a Dask cluster."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from click.testing import CliRunner
from test_dask import METRICS, N, dataset, outputs_frame, rows, same, write_parts

import evalframe as ef
from evalframe.cli import cli
from evalframe.store import Store


def counts(store: Store) -> tuple[int, ...]:
    return tuple(
        store.sql(f"SELECT count(*) FROM {table}").item()
        for table in ("runs", "outputs", "scores", "samples", "sample_stats")
    )


def test_a_streamed_run_is_the_run_evaluate_saves(tmp_path: Path) -> None:
    parts = write_parts(tmp_path / "outputs", outputs_frame(), files=3)
    store = Store(tmp_path / "runs.duckdb")
    streamed = store.score_outputs(
        dataset(), parts, METRICS, repetitions=2, batch_size=37, name="big", labels={"k": "v"}
    )
    saved = ef.evaluate(
        dataset(), outputs=outputs_frame(), metrics=METRICS, repetitions=2, store=store
    ).run_id
    a, b = rows(store, streamed), rows(store, saved)
    assert a["scores"].height == N * 2 * len(METRICS)
    same(b, a)
    record = store.sql(
        "SELECT name, dataset, labels, extra, outputs_run_id FROM runs WHERE run_id = ?",
        [streamed],
    ).row(0, named=True)
    assert record["name"] == "big"
    assert record["dataset"] == "mixed"
    assert json.loads(record["labels"]) == {"k": "v"}
    assert json.loads(record["extra"])["streamed"] == {"batch_size": 37}
    assert record["outputs_run_id"] == streamed
    cohorts = "SELECT * EXCLUDE (run_id) FROM run_cohort_stats WHERE run_id = ? ORDER BY ALL"
    assert store.sql(cohorts, [streamed]).height == store.sql(cohorts, [saved]).height > 0
    loaded = store.load(streamed)  # a stored run like any other
    assert loaded.scores.height == a["scores"].height


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda f: f.filter(pl.col("sample_id") != "s100"), "are missing sample ids: s100"),
        (
            lambda f: pl.concat([f, f.head(1).with_columns(sample_id=pl.lit("zz"))]),
            "contain unknown sample ids: zz",
        ),
        (lambda f: pl.concat([f, f.slice(3, 1)]), "Duplicate saved output for sample 's003'"),
    ],
)
def test_outputs_that_do_not_cover_the_dataset_store_nothing(
    tmp_path: Path, change: Any, message: str
) -> None:
    store = Store(tmp_path / "runs.duckdb")
    ef.evaluate(dataset(), outputs=outputs_frame(), metrics=["exact-match"], store=store)
    before = counts(store)
    parts = write_parts(tmp_path / "outputs", change(outputs_frame()))
    with pytest.raises(ef.DatasetError, match=message):
        store.score_outputs(dataset(), parts, ["exact-match"], batch_size=50)
    assert counts(store) == before


def test_a_failure_while_scoring_removes_the_stored_outputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalframe.engine import _stream

    store = Store(tmp_path / "runs.duckdb")
    parts = write_parts(tmp_path / "outputs", outputs_frame())

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(_stream, "score_into_run", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        store.score_outputs(dataset(), parts, ["exact-match"], batch_size=50)
    assert counts(store) == (0, 0, 0, 0, 0)


def test_a_streamed_run_on_a_cluster_stores_the_same_rows(client: Any, tmp_path: Path) -> None:
    parts = write_parts(tmp_path / "outputs", outputs_frame())
    store = Store(tmp_path / "runs.duckdb")
    here = store.score_outputs(dataset(), parts, METRICS, repetitions=3, batch_size=100)
    there = store.score_outputs(
        dataset(), parts, METRICS, repetitions=3, batch_size=100, dask=client
    )
    stored = rows(store, there)
    assert stored["scores"].height == N * 3 * len(METRICS)
    same(rows(store, here), stored)


def test_cli_run_with_batch_size_prints_the_summary_and_saves(tmp_path: Path) -> None:
    records = [
        {"id": r["sample_id"], "input": {"question": "q"}, "expected_output": r["e"]}
        for r in dataset()
        .select("sample_id", pl.col("expected_output").alias("e"))
        .iter_rows(named=True)
    ]
    ds = tmp_path / "mixed.jsonl"
    ds.write_text("\n".join(json.dumps(r) for r in records), encoding="utf-8")
    parts = write_parts(tmp_path / "outputs", outputs_frame())
    db = tmp_path / "runs.duckdb"
    runner = CliRunner()
    args = ["run", str(ds), "--outputs", str(parts), "-m", "rouge-l", "-m", "retrieval-mrr"]
    done = runner.invoke(cli, [*args, "--store", str(db), "--batch-size", "64"])
    assert done.exit_code == 1, done.stderr  # retrieval-mrr cannot score the text rows
    store = Store(db)
    run_id = store.sql("SELECT run_id FROM runs").item()
    errored, executions = store.sql(
        "SELECT errored_executions, executions FROM run_status WHERE run_id = ?", [run_id]
    ).row(0)
    first, second = done.stdout.splitlines()[:2]
    assert first == f"INCOMPLETE: {errored} of {executions} executions errored"
    assert second.startswith(f"run {run_id}: macro-F1 ")
    for metric in ("rouge-l", "retrieval-mrr"):
        line = next(x for x in done.stdout.splitlines() if x.startswith(metric + " "))
        n, scored, errors = line.split()[1:4]
        stored = store.sql(
            "SELECT n, n_scored, n_errors FROM metric_summary WHERE run_id = ? AND metric = ?",
            [run_id, metric],
        ).row(0)
        assert (int(n), int(scored), int(errors)) == stored
    assert f"saved run {run_id}" in done.stderr
    pairs = store.sql("SELECT count(*) FROM failures WHERE run_id = ?", [run_id]).item()
    assert done.stderr.splitlines()[-1] == (
        f"{first}; {pairs} (execution, metric) pair(s) could not be scored "
        f"(evalframe report {run_id})."
    )
    missing_store = runner.invoke(cli, [*args, "--batch-size", "64"])
    assert missing_store.exit_code == 2
    assert "--batch-size streams saved --outputs into a --store" in missing_store.stderr
    as_json = runner.invoke(
        cli, [*args, "--store", str(db), "--batch-size", "9", "--format", "json"]
    )
    assert as_json.exit_code == 2
    assert "evalframe report RUN --store DB --format json" in as_json.stderr


def test_a_streamed_run_stores_trajectories_and_removes_them_on_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalframe.engine import _stream

    ds = ef.Dataset.from_records(
        [
            {
                "id": f"a{i}",
                "input": {"q": "x"},
                "expected_output": "ok",
                "metadata": {"trajectory": {"tools": ["book"]}},
            }
            for i in range(30)
        ],
        name="agents",
    )
    calls = [json.dumps({"tool_calls": ["search", "book"][: i % 3], "steps": i}) for i in range(30)]
    file = tmp_path / "outputs" / "part.parquet"
    file.parent.mkdir()
    pl.DataFrame(
        {"sample_id": [f"a{i}" for i in range(30)], "actual_output": "ok", "trajectory": calls}
    ).write_parquet(file)
    store = Store(tmp_path / "runs.duckdb")
    streamed = store.score_outputs(ds, file, ["tool-called"], repetitions=2, batch_size=7)
    saved = ef.evaluate(ds, outputs=file, metrics=["tool-called"], repetitions=2, store=store)
    same(rows(store, saved.run_id), rows(store, streamed))
    table = "SELECT * EXCLUDE (run_id) FROM trajectories WHERE run_id = ? ORDER BY ALL"
    assert store.sql(table, [streamed]).equals(store.sql(table, [saved.run_id]))
    assert store.sql(table, [streamed]).height == 60
    passed = store.sql("SELECT count_if(passed) FROM scores WHERE run_id = ?", [streamed]).item()
    assert passed == 2 * 10  # i % 3 == 2: the calls include book

    monkeypatch.setattr(_stream, "score_into_run", lambda *a, **k: 1 / 0)
    before = store.sql("SELECT count(*) FROM trajectories").item()
    with pytest.raises(ZeroDivisionError):
        store.score_outputs(ds, file, ["tool-called"], batch_size=7)
    assert store.sql("SELECT count(*) FROM trajectories").item() == before == 120


KILLED = """
import os, signal, sys
import polars as pl
import evalframe as ef

@ef.metrics.metric("suicide", family="custom")
def suicide() -> ef.metrics.Scored:
    '''Kills its own process the moment it scores (a crash mid-run).'''
    def fn(s: pl.Series) -> pl.Series:
        os.kill(os.getpid(), signal.SIGKILL)
        return s
    return ef.metrics.Scored(score=pl.col("actual_output").map_batches(fn, return_dtype=pl.Float64))

sys.path.insert(0, sys.argv[1])
from test_dask import dataset

ef.Store(sys.argv[2]).score_outputs(dataset(), sys.argv[3], ["suicide"], batch_size=50)
"""


def test_what_a_killed_streamed_run_stored_is_removed_by_the_next(tmp_path: Path) -> None:
    import subprocess
    import sys

    parts = write_parts(tmp_path / "outputs", outputs_frame())
    store_path = tmp_path / "runs.duckdb"
    Store(store_path)
    done = subprocess.run(
        [sys.executable, "-c", KILLED, str(Path(__file__).parent), str(store_path), str(parts)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == -9, done.stderr
    store = Store(store_path)
    # Committed piece by piece, the outputs outlived the process; no run names them.
    assert counts(store) == (0, N, 0, N, 0)
    pending = store.sql("SELECT key FROM meta WHERE key LIKE 'streaming:%'").to_series()
    assert pending.len() == 1
    assert store.sql("SELECT count(*) FROM run_outputs").item() == 0
    run_id = store.score_outputs(dataset(), parts, ["exact-match"], batch_size=50)
    assert counts(store) == (1, N, N, N, N)  # only the new run's rows are left
    assert store.sql("SELECT DISTINCT run_id FROM outputs").item() == run_id
    assert store.sql("SELECT count(*) FROM meta WHERE key LIKE 'streaming:%'").item() == 0


def test_cli_run_reads_a_dataset_directory_of_parquet(tmp_path: Path) -> None:
    golden = dataset()
    folder = tmp_path / "mixed"
    folder.mkdir()
    half = golden.height // 2
    golden.slice(0, half).rename({"sample_id": "id"}).write_parquet(folder / "a.parquet")
    golden.slice(half).rename({"sample_id": "id"}).write_parquet(folder / "b.parquet")
    parts = write_parts(tmp_path / "outputs", outputs_frame())
    db = tmp_path / "runs.duckdb"
    args = ["run", str(folder), "--outputs", str(parts), "-m", "exact-match", "--store", str(db)]
    streamed = CliRunner().invoke(cli, [*args, "--batch-size", "64"])
    assert streamed.exit_code == 1, streamed.stderr  # some rows fail exact-match
    in_memory = CliRunner().invoke(cli, [*args, "--format", "json"])
    assert in_memory.exit_code == 1, in_memory.stderr
    assert json.loads(in_memory.stdout)["dataset"] == "mixed"
    store = Store(db)
    first, second = store.sql("SELECT run_id FROM runs ORDER BY seq").to_series().to_list()
    same(rows(store, first), rows(store, second))
    assert store.sql("SELECT DISTINCT dataset FROM runs").item() == "mixed"
    assert store.sql("SELECT count(DISTINCT dataset_hash) FROM runs").item() == 1
    assert store.sql("SELECT n_samples FROM runs").to_series().to_list() == [N, N]


def test_outputs_are_committed_a_row_group_at_a_time() -> None:
    from evalframe import cluster
    from evalframe.store._streamed import ROW_GROUP, commit_groups

    pieces = [cluster.Piece(f"f{i}", (0,), rows) for i, rows in enumerate([50_000] * 7 + [10])]
    groups = list(commit_groups(pieces, repetitions=2))
    assert [p for g in groups for p in g] == pieces  # every piece once, in order
    assert [sum(p.rows for p in g) * 2 for g in groups] == [200_000, 200_000, 200_000, 100_020]
    assert all(sum(p.rows for p in g) * 2 >= ROW_GROUP for g in groups[:-1])


def test_cli_memory_limit_is_for_streamed_runs(tmp_path: Path) -> None:
    parts = write_parts(tmp_path / "outputs", outputs_frame())
    ds = tmp_path / "mixed.parquet"
    dataset().rename({"sample_id": "id"}).write_parquet(ds)
    args = ["run", str(ds), "--outputs", str(parts), "-m", "contains"]
    refused = CliRunner().invoke(cli, [*args, "--memory-limit", "1GB"])
    assert refused.exit_code == 2
    assert "--memory-limit applies to streamed runs: add --batch-size N." in refused.stderr
    db = tmp_path / "runs.duckdb"
    store_args = ["--store", str(db), "--batch-size", "50", "--memory-limit", "1GB"]
    streamed = CliRunner().invoke(cli, [*args, *store_args])
    assert streamed.exit_code in (0, 1), streamed.stderr
    assert Store(db).sql("SELECT count(*) FROM scores").item() == N
    bad = CliRunner().invoke(cli, [*args, "--store", str(db), "--batch-size", "50",
                                   "--memory-limit", "lots"])  # fmt: skip
    assert bad.exit_code != 0
    assert "'lots' is not a size such as 2GB, 512MB or 1.5GiB." in bad.stderr
