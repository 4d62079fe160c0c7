"""``evalframe rescore`` exits as ``run`` does: 1 when a metric it computed failed on a row."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

import evalframe as ef
from evalframe.cli import cli

IDS = [f"s{i}" for i in range(8)]


@ef.metrics.metric("fails-on-odd-ids", family="custom", replace=True)
def fails_on_odd_ids() -> ef.metrics.Scored:
    """An error on samples whose id ends in an odd digit; 1.0 elsewhere."""
    odd = pl.col("sample_id").str.slice(-1).cast(pl.Int64) % 2 == 1
    return ef.metrics.Scored(
        score=pl.when(~odd).then(pl.lit(1.0)),
        error=pl.when(odd).then(pl.lit("odd id")),
    )


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = tmp_path / "runs.duckdb"
    ds = ef.Dataset.from_records(
        [{"id": sid, "input": {"q": sid}, "expected_output": "yes"} for sid in IDS], name="r"
    )
    ef.evaluate(
        ds, outputs=dict.fromkeys(IDS, "yes"), metrics=["exact-match"], repetitions=2, store=path
    )
    return str(path)


def test_rescore_exits_zero_when_every_new_metric_scored_every_row(db: str) -> None:
    code, out, err = invoke("rescore", "--store", db, "-m", "contains")
    assert code == 0, err
    assert out.rstrip().endswith(f": 0 of {len(IDS) * 2} executions errored in them")


def test_rescore_exits_one_when_a_new_metric_failed_on_a_row(db: str) -> None:
    code, out, err = invoke("rescore", "--store", db, "-m", "fails-on-odd-ids", "--keep")
    want = sum(int(sid[-1]) % 2 for sid in IDS) * 2  # odd ids x 2 repetitions
    assert code == 1, err
    assert out.rstrip().endswith(f": {want} of {len(IDS) * 2} executions errored in them")
    assert err.startswith(
        f"INCOMPLETE: {want} of {len(IDS) * 2} executions errored in the metrics this rescore "
        "computed (run "
    )
    assert f"; {want} (execution, metric) pair(s) could not be scored" in err
    # The run was still saved, as `run` saves a run with failures.
    code, out, _ = invoke(
        "sql", "SELECT count(*) AS n FROM failures", "--store", db, "--format", "csv"
    )
    assert code == 0
    assert out.splitlines()[1] == str(want)


def test_failures_copied_from_the_source_do_not_fail_the_rescore(db: str) -> None:
    code, _, err = invoke("rescore", "--store", db, "-m", "fails-on-odd-ids")
    assert code == 1, err
    # The new run already has the metric: it is copied, not computed, so nothing new failed.
    code, out, err = invoke("rescore", "--store", db, "-m", "fails-on-odd-ids")
    assert code == 0, err
    assert out.rstrip().endswith(f": 0 of {len(IDS) * 2} executions errored in them")


def test_a_rescored_run_gets_its_own_name_and_runs_shows_its_lineage(db: str) -> None:
    import json

    store = ef.Store(db)
    source = store.resolve("latest")
    assert invoke("rescore", "--store", db, "-m", "contains")[0] == 0
    first = store.resolve("latest")
    assert invoke("rescore", "--store", db, "-m", "rouge-l", "--runs", first)[0] == 0
    second = store.resolve("latest")
    assert invoke("rescore", "--store", db, "-m", "contains", "--name", "mine")[0] == 0
    named = store.resolve("latest")
    names = dict(store.sql("SELECT run_id, name FROM runs").iter_rows())
    assert names[first] == "r (rescored)"
    assert names[second] == "r (rescored) (rescored)"
    assert names[named] == "mine"
    assert store.resolve("r") == source  # the name still means the run it named
    runs = {r["run_id"]: r["lineage"] for r in store.runs().iter_rows(named=True)}
    assert runs == {
        source: [],
        first: [source],
        second: [first, source],
        named: [second, first, source],
    }
    code, out, _ = invoke("runs", "--store", db, "--format", "json")
    assert code == 0
    listed = {r["run_id"]: r["lineage"] for r in json.loads(out)}
    assert listed[second] == [first, source]
    wide = CliRunner().invoke(cli, ["runs", "--store", db], env={"COLUMNS": "400"})
    assert f"{first} (r (rescored)) ← {source} (r)" in wide.stdout
    code, out, _ = invoke("runs", "--store", db, "--format", "csv")
    assert code == 0
    assert f"{first} {source}" in out
