"""The run store: round trips, SQL views against the Python aggregates, references,
migrations, concurrency and crashes (real subprocesses), rescoring, Parquet transfer."""

from __future__ import annotations

import json
import math
import os
import re
import signal
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import evalframe as ef
from evalframe.core import aggregate
from evalframe.core._errors import MetricError, StoreError
from evalframe.core._precision import precision_block, row_aggregates
from evalframe.providers import Call, Ledger
from evalframe.store import SCHEMA_VERSION, Store, StoreBusyError
from evalframe.store import _schema as schema_ddl

ROOT = Path(__file__).resolve().parents[1]

# Scores chosen to sit on histogram bucket edges and quantile ties.
EDGE_VALUES = [0.0, 0.1, 0.7 - 0.4, 1 / 3, 0.5, 0.5, 0.9999999999, 1.0, 0.25, 0.75, 0.3, 0.6]


@ef.metrics.metric("fixed-value", family="custom", replace=True)
def fixed_value() -> ef.metrics.Scored:
    """The score written in the sample's metadata ``v`` (an error when it has none)."""
    value = pl.col("metadata").str.json_path_match("$.v").cast(pl.Float64)
    return ef.metrics.Scored(
        score=value,
        error=pl.when(value.is_null()).then(pl.lit("no v in metadata")),
    )


def _dataset(n: int = 12, name: str = "edges") -> ef.Dataset:
    records = []
    for i in range(n):
        meta: dict[str, Any] = {"tags": [["alpha"], ["beta", "alpha"], []][i % 3]}
        if i != 5:  # sample 5 has no value: fixed-value errors there
            meta["v"] = EDGE_VALUES[i % len(EDGE_VALUES)]
        records.append(
            {
                "id": f"s{i:02d}",
                "input": {"question": f"q{i}"},
                "expected_output": f"answer {i}" if i != 7 else 7,
                "metadata": meta,
            }
        )
    return ef.Dataset.from_records(records, name=name)


def _outputs(n: int = 12, *, wrong: frozenset[int] = frozenset({1, 4})) -> dict[str, str]:
    return {f"s{i:02d}": ("nope" if i in wrong else f"answer {i}") for i in range(n)}


METRICS = ["exact-match", "contains", "fixed-value(threshold=0.3)"]


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "runs.duckdb")


def _run(store: Store | None = None, **kw: Any) -> ef.Run:
    dataset = kw.pop("dataset", None)
    options: dict[str, Any] = {"outputs": _outputs(), "metrics": METRICS, "repetitions": 2}
    options.update(kw)
    return ef.evaluate(_dataset() if dataset is None else dataset, store=store, **options)


def _reports_equal(a: ef.Run, b: ef.Run) -> None:
    ra, rb = a.report(), b.report()
    assert list(ra) == list(rb)
    for key in ra:
        assert ra[key] == rb[key], key


# --- independent oracles: statistics recomputed from the raw stored scores -----------------

Z = 1.959964  # the 95% normal quantile the precision block documents


def _raw_scores(store: Store, run_id: str) -> list[tuple[str, int, str, float | None, str | None]]:
    """(sample_id, repetition, metric, score, error) rows, read with plain DuckDB."""
    con = duckdb.connect(store.path, read_only=True)
    try:
        return con.execute(
            "SELECT sample_id, repetition, metric, score, error FROM scores WHERE run_id = ?",
            [run_id],
        ).fetchall()
    finally:
        con.close()


def _oracle_metric_stats(
    raw: list[tuple[str, int, str, float | None, str | None]], thresholds: dict[str, float]
) -> dict[str, dict[str, Any]]:
    """Per metric: counts, mean, linear p50/p95 (NumPy), the pass rate over attempted rows (an
    errored row did not pass) and over scored rows (null when none was scored)."""
    out: dict[str, dict[str, Any]] = {}
    for metric, threshold in thresholds.items():
        rows = [r for r in raw if r[2] == metric]
        scored = [r[3] for r in rows if r[3] is not None]
        p50, p95 = np.percentile(scored, [50, 95], method="linear") if scored else (None, None)
        passed = sum(s >= threshold for s in scored)
        out[metric] = {
            "n": len(rows),
            "n_scored": len(scored),
            "n_errors": sum(r[4] is not None for r in rows),
            "n_passed": passed,
            "mean": statistics.fmean(scored) if scored else None,
            "p50": p50,
            "p95": p95,
            "pass_rate": passed / len(rows) if rows else None,
            "pass_rate_scored": passed / len(scored) if scored else None,
        }
    return out


def _oracle_sample_stats(
    raw: list[tuple[str, int, str, float | None, str | None]], thresholds: dict[str, float]
) -> dict[str, dict[str, Any]]:
    """Per sample: an execution passes when no metric errored and every score met its
    threshold; Wilson interval, mean and population stddev of the executions' mean scores."""
    executions: dict[tuple[str, int], list[tuple[str, float | None, str | None]]] = {}
    for sid, rep, metric, score, error in raw:
        executions.setdefault((sid, rep), []).append((metric, score, error))
    out: dict[str, dict[str, Any]] = {}
    for sid in sorted({k[0] for k in executions}):
        runs = [v for k, v in executions.items() if k[0] == sid]
        n = len(runs)
        passed = sum(
            all(e is None for _, _, e in rows)
            and all(s >= thresholds[m] for m, s, _ in rows if s is not None)
            for rows in runs
        )
        means = [
            statistics.fmean(scored)
            for rows in runs
            if (scored := [s for _, s, _ in rows if s is not None])
        ]
        p = passed / n
        centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
        spread = Z / (1 + Z * Z / n) * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
        out[sid] = {
            "repetitions": n,
            "passed": passed,
            "errored": sum(any(e is not None for _, _, e in rows) for rows in runs),
            "pass_rate": p,
            "pass_rate_low": max(0.0, centre - spread),
            "pass_rate_high": min(1.0, centre + spread),
            "unstable": n > 1 and 0 < passed < n,
            "score_mean": statistics.fmean(means) if means else None,
            "score_stddev": statistics.pstdev(means) if means else None,
        }
    return out


def _assert_rows_match(
    got: list[dict[str, Any]], want: dict[str, dict[str, Any]], key: str
) -> None:
    assert sorted(r[key] for r in got) == sorted(want)
    for row in got:
        for column, value in want[row[key]].items():
            if value is None or isinstance(value, bool):
                assert row[column] == value, (row[key], column)
            else:
                assert row[column] == pytest.approx(value, abs=1e-12), (row[key], column)


def _oracle_precision(stats: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The run's pass rate, within-row variance and resolution from per-sample rows."""
    n = max(r["repetitions"] for r in stats.values())
    rates = [r["pass_rate"] for r in stats.values()]
    variance = statistics.fmean(p * (1 - p) for p in rates)
    executions = sum(r["repetitions"] for r in stats.values())
    if n < 2:
        res = 1.0
    elif variance == 0:
        res = min(1.0, 3 / n)
    else:
        res = min(1.0, Z * math.sqrt(2 * variance / n))
    return {
        "pass_rate": sum(r["passed"] for r in stats.values()) / executions,
        "within_row_variance": variance,
        "resolution": res,
    }


# --- round trips ---------------------------------------------------------------------------


def test_saved_run_loads_back_with_an_identical_report(store: Store) -> None:
    run = _run(store, labels={"branch": "main", "note": "ünïcode"})
    loaded = store.load(run.run_id)
    _reports_equal(run, loaded)
    assert loaded.labels == {"branch": "main", "note": "ünïcode"}
    assert_frame_equal(loaded.scores, run.scores)
    assert [m.id for m in loaded.metrics] == METRICS
    assert loaded.metrics[2].threshold == 0.3


def test_system_runs_keep_latency_and_extra_output_columns(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.duckdb")
    ds = _dataset(4)
    outputs = pl.DataFrame(
        {
            "sample_id": [f"s{i:02d}" for i in range(4)],
            "actual_output": ["answer 0", "x", "answer 2", "answer 3"],
            "latency_ms": [12.5, 3.0, None, 7.25],
            "trace_id": ["t0", "t1", "t2", "t3"],
        }
    )
    run = ef.evaluate(ds, outputs=outputs, metrics=["exact-match"], store=store)
    loaded = store.load("latest")
    assert loaded.frame.get_column("latency_ms").to_list() == [12.5, 3.0, None, 7.25]
    assert loaded.frame.get_column("trace_id").to_list() == ["t0", "t1", "t2", "t3"]
    _reports_equal(run, loaded)
    stored = store.sql("SELECT extra FROM outputs ORDER BY sample_id").get_column("extra")
    assert json.loads(stored[0]) == {"trace_id": "t0"}


def test_memory_store_and_run_save(tmp_path: Path) -> None:
    with Store(":memory:") as mem:
        run = _run()
        assert run.save(mem) == run.run_id
        assert mem.runs().get_column("run_id").to_list() == [run.run_id]
        assert mem.schema_version == SCHEMA_VERSION
    path = tmp_path / "by-path.duckdb"
    run.save(path)  # a path works as well as a Store
    assert Store(path).runs().height == 1


def test_saving_a_run_twice_is_refused_and_keeps_one_copy(store: Store) -> None:
    run = _run(store)
    with pytest.raises(StoreError, match="already in the store"):
        store.save(run)
    assert store.sql("SELECT count(*) AS n FROM outputs").item() == run.frame.height


def test_identical_datasets_share_their_samples(store: Store) -> None:
    _run(store)
    _run(store)
    assert store.sql("SELECT count(DISTINCT dataset_hash) AS n FROM runs").item() == 1
    assert store.sql("SELECT count(*) AS n FROM samples").item() == 12


def test_runs_lists_newest_first_with_the_contract_columns(store: Store) -> None:
    first = _run(store, name="first")
    second = _run(store, name="second", outputs=_outputs(wrong=frozenset()))
    listed = store.runs()
    assert listed.columns[:6] == [
        "run_id",
        "name",
        "dataset",
        "created_at",
        "macro_f1",
        "n_samples",
    ]
    assert listed.get_column("run_id").to_list() == [second.run_id, first.run_id]
    assert listed.get_column("macro_f1").to_list() == [second.macro_f1, first.macro_f1]
    assert listed.get_column("n_samples").to_list() == [12, 12]


def test_sql_binds_parameters_and_wraps_errors(store: Store) -> None:
    run = _run(store)
    got = store.sql("SELECT name FROM runs WHERE run_id = $id", {"id": run.run_id})
    assert got.item() == "edges"
    with pytest.raises(StoreError, match=r"statement: SELECT nope FROM runs") as info:
        store.sql("SELECT nope FROM runs")
    assert isinstance(info.value.cause, duckdb.Error)  # type: ignore[attr-defined]
    with pytest.raises(StoreError, match="read-only"):
        store.sql("DELETE FROM runs")  # readers open the file read-only


def test_the_file_opens_in_plain_duckdb(store: Store) -> None:
    run = _run(store)
    con = duckdb.connect(store.path, read_only=True)
    try:
        rows = con.execute("SELECT run_id, n_samples FROM runs").fetchall()
        views = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views()").fetchall()}
    finally:
        con.close()
    assert rows == [(run.run_id, 12)]
    assert set(schema_ddl.VIEWS) <= views


def test_the_usage_table_keeps_every_usage_field_typed_or_in_extra(store: Store) -> None:
    ledger = Ledger()
    ledger.record(
        Call(kind="judge", provider="local", model="m", prompt_tokens=3, latency_ms=1.5, items=1)
    )
    usage = ledger.frame()
    assert usage.schema == ef.schema.USAGE_SCHEMA
    run = _run()
    run.usage = usage
    store.save(run)
    con = duckdb.connect(store.path, read_only=True)
    try:
        columns = con.execute("DESCRIBE usage").fetchall()
        (extra,) = con.execute("SELECT extra FROM usage WHERE run_id = ?", [run.run_id]).fetchone()
    finally:
        con.close()
    sql_types = {pl.String: "VARCHAR", pl.Int64: "BIGINT", pl.Float64: "DOUBLE"}
    names = [c[0] for c in columns]
    assert names[:2] == ["run_id", "ordinal"]
    assert names[-1] == "extra"
    typed = {c[0]: c[1] for c in columns[2:-1]}
    assert typed == {n: sql_types[ef.schema.USAGE_SCHEMA[n]] for n in typed}
    assert sorted([*typed, *json.loads(extra)]) == sorted(ef.schema.USAGE_SCHEMA)


# --- the SQL views give the Python aggregates' numbers ---------------------------------------


def _sql_frame(store: Store, view: str, run_id: str, order: str) -> pl.DataFrame:
    return store.sql(f"SELECT * FROM {view} WHERE run_id = ? ORDER BY {order}", [run_id])


def test_metric_summary_view_matches_summarize(store: Store) -> None:
    run = _run(store)
    want = aggregate.summarize(run.scores, metrics=run.metric_ids)
    for source in ("metric_summary", "run_metric_stats"):
        got = _sql_frame(store, source, run.run_id, "ordinal")
        assert_frame_equal(got.select(want.columns), want, check_dtypes=False, abs_tol=1e-12)
    macro = store.sql("SELECT macro_f1 FROM run_macro_f1 WHERE run_id = ?", [run.run_id])
    assert macro.item() == pytest.approx(run.macro_f1, abs=1e-12)
    assert store.runs().item(0, "macro_f1") == run.macro_f1
    # And the same numbers from the raw scores, by NumPy and the statistics module.
    thresholds = {m.id: m.threshold for m in run.metrics}
    oracle = _oracle_metric_stats(_raw_scores(store, run.run_id), thresholds)
    for source in ("metric_summary", "run_metric_stats"):
        got = _sql_frame(store, source, run.run_id, "ordinal").to_dicts()
        _assert_rows_match(got, oracle, "metric")
    mean_rate = statistics.fmean(o["pass_rate"] for o in oracle.values())
    assert macro.item() == pytest.approx(mean_rate, abs=1e-12)
    assert store.runs().item(0, "macro_f1") == pytest.approx(mean_rate, abs=1e-12)


def test_cohort_summary_view_matches_cohorts(store: Store) -> None:
    run = _run(store)
    want = run.cohorts
    for source in ("cohort_summary", "run_cohort_stats"):
        got = _sql_frame(store, source, run.run_id, "is_untagged, cohort, ordinal")
        assert_frame_equal(got.select(want.columns), want, check_dtypes=False, abs_tol=1e-12)
    # And from the raw scores and each sample's tags (untagged samples form one cohort).
    con = duckdb.connect(store.path, read_only=True)
    try:
        tags = dict(con.execute("SELECT sample_id, tags FROM samples").fetchall())
    finally:
        con.close()
    raw = _raw_scores(store, run.run_id)
    thresholds = {m.id: m.threshold for m in run.metrics}
    labels = {t for ts in tags.values() for t in ts} | {"(untagged)"}
    for label in labels:
        rows = [r for r in raw if label in (tags[r[0]] or ["(untagged)"])]
        oracle = _oracle_metric_stats(rows, thresholds)
        for source in ("cohort_summary", "run_cohort_stats"):
            got = store.sql(
                f"SELECT * FROM {source} WHERE run_id = ? AND label = ?", [run.run_id, label]
            ).to_dicts()
            _assert_rows_match(got, oracle, "metric")
            assert {r["sample_count"] for r in got} == {max(o["n"] for o in oracle.values())}


def test_materialized_stats_equal_the_views_for_saved_and_rescored_runs(store: Store) -> None:
    run = _run(store)
    rescored = store.rescore(["contains", "exact-match"], runs=run.run_id)[0]
    for run_id in (run.run_id, rescored):
        for table, view, order in (
            ("run_metric_stats", "metric_summary", "ordinal"),
            ("run_cohort_stats", "cohort_summary", "is_untagged, cohort, ordinal"),
        ):
            got = _sql_frame(store, table, run_id, order)
            want = _sql_frame(store, view, run_id, order)
            assert_frame_equal(got.select(want.columns), want, check_dtypes=False, abs_tol=1e-12)


def test_score_histogram_view_matches_histograms(store: Store) -> None:
    run = _run(store)
    got = store.sql(
        "SELECT h.* FROM score_histogram AS h JOIN run_metrics AS m USING (run_id, metric) "
        "WHERE run_id = ? ORDER BY m.ordinal, bucket",
        [run.run_id],
    )
    want = run.histograms()
    assert_frame_equal(got.select(want.columns), want, check_dtypes=False)
    fixed = want.filter(pl.col("metric") == METRICS[2]).get_column("count").to_list()
    assert sum(fixed) == 22  # 11 scored samples x 2 repetitions; the edges land as in Python


def test_failures_view_lists_every_error(store: Store) -> None:
    run = _run(store)
    got = store.sql(
        "SELECT sample_id, repetition, metric, error FROM failures WHERE run_id = ? "
        "ORDER BY metric, repetition, sample_id",
        [run.run_id],
    )
    want = run.failures.sort("metric", "repetition", "sample_id")
    assert_frame_equal(got, want, check_dtypes=False)
    assert set(got.get_column("sample_id")) == {"s05", "s07"}


def test_repetition_statistics_are_stored(store: Store) -> None:
    calls: dict[str, int] = {}

    def flaky(inp: dict[str, Any]) -> str:
        q = inp["question"]
        calls[q] = calls.get(q, 0) + 1
        i = int(q[1:])
        return f"answer {i}" if (calls[q] + i) % 3 else "wrong"

    run = ef.evaluate(
        _dataset(), system=flaky, metrics=METRICS[:2], repetitions=3, concurrency=1, store=store
    )
    rows = row_aggregates(run.scores, run.frame)
    got = store.sql(
        "SELECT * EXCLUDE (run_id) FROM sample_stats WHERE run_id = ? ORDER BY sample_id",
        [run.run_id],
    )
    assert_frame_equal(got.select(rows.columns), rows.sort("sample_id"), check_dtypes=False)
    assert store.sql("SELECT count(*) FROM unstable_samples").item() > 0
    block = precision_block(rows, run.frame.height)
    stored = store.runs().row(0, named=True)
    info = store.sql("SELECT * FROM runs").row(0, named=True)
    assert stored["repetitions"] == 3
    for key in ("pass_rate", "resolution", "required_repetitions", "within_row_variance"):
        assert info[key] == block[key], key
    assert info["target_resolvable"] == block["target_resolvable"]
    # And from the raw scores, without row_aggregates or precision_block.
    thresholds = {m.id: m.threshold for m in run.metrics}
    oracle = _oracle_sample_stats(_raw_scores(store, run.run_id), thresholds)
    _assert_rows_match(got.to_dicts(), oracle, "sample_id")
    assert any(r["unstable"] for r in oracle.values())
    for key, value in _oracle_precision(oracle).items():
        assert info[key] == pytest.approx(value, abs=1e-6), key  # stored rounded to 6 places


@ef.metrics.metric("short-answer", family="custom", dimension="safety", replace=True)
def short_answer() -> ef.metrics.Scored:
    """1.0 when the output has at most 8 characters (a stand-in safety metric)."""
    return ef.metrics.Scored(score=(pl.col("actual_output").str.len_chars() <= 8).cast(pl.Float64))


def test_dimension_summary_view_matches_aggregate_dimensions(store: Store) -> None:
    run = _run(store, metrics=[*METRICS, "short-answer"])
    dims = {m.id: m.dimension for m in run.metrics}
    want = aggregate.dimensions(run.scores, dims, metrics=run.metric_ids).drop("metrics")
    got = store.sql(
        "SELECT * FROM dimension_summary WHERE run_id = ? ORDER BY dimension", [run.run_id]
    )
    assert_frame_equal(
        got.select(want.columns), want.sort("dimension"), check_dtypes=False, abs_tol=1e-12
    )
    failing = store.sql(
        "SELECT sample_id, repetition FROM safety_failures WHERE run_id = ? "
        "ORDER BY repetition, sample_id",
        [run.run_id],
    )
    want_failing = run.scores.filter(
        (pl.col("metric") == "short-answer") & ~pl.col("passed").fill_null(False)
    ).select("sample_id", "repetition")
    assert_frame_equal(failing, want_failing.sort("repetition", "sample_id"), check_dtypes=False)
    assert failing.height > 0


def test_dimension_summary_pools_each_dimension(store: Store) -> None:
    run = _run(store)
    got = store.sql("SELECT * FROM dimension_summary WHERE run_id = ?", [run.run_id])
    assert got.get_column("dimension").to_list() == ["correctness"]
    scored = run.scores.filter(pl.col("score").is_not_null())
    assert got.item(0, "n_metrics") == 3
    assert got.item(0, "mean") == pytest.approx(scored.get_column("score").mean())
    # pooled over every attempted cell: an errored one did not pass
    passed = run.scores.get_column("passed").fill_null(False).sum()
    assert got.item(0, "pass_rate") == pytest.approx(passed / run.scores.height)
    assert got.item(0, "pass_rate_scored") == pytest.approx(scored.get_column("passed").mean())
    summary = run.summary
    assert got.item(0, "macro_pass_rate") == pytest.approx(run.macro_f1)
    assert got.item(0, "macro_mean") == pytest.approx(summary.get_column("mean").mean())


# --- references ----------------------------------------------------------------------------


def test_references_resolve_by_id_name_recency_baseline_and_sql(store: Store) -> None:
    a = _run(store, name="nightly")
    b = _run(store, name="nightly")
    other = _run(store, dataset=_dataset(name="other"), name="other-run")
    assert store.resolve(a.run_id) == a.run_id
    assert store.resolve(a.run_id[:8]) == a.run_id
    assert store.resolve("nightly") == b.run_id  # a name means its newest run
    assert store.resolve("latest") == other.run_id
    assert store.resolve("previous") == b.run_id
    # Relative to a run: the same dataset, never the run itself.
    assert store.resolve("previous", relative_to=b.run_id) == a.run_id
    assert store.resolve("latest", relative_to=b.run_id) == a.run_id
    # the fixture's runs have errored executions: only forced is such a run promoted
    assert store.promote_baseline(a.run_id, force=True) == "edges"
    assert store.resolve("baseline", relative_to=b.run_id) == a.run_id
    assert store.resolve("baseline:edges") == a.run_id
    assert store.resolve("edges") == a.run_id  # a baseline name
    query = "SELECT run_id FROM runs WHERE name = 'nightly' ORDER BY created_at LIMIT 1"
    assert store.resolve(query) == a.run_id


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("nope", r"Unknown run reference 'nope'.*Newest of 1 run"),
        ("previous", r"No 'previous' run: the store holds 1 run"),
        ("baseline:main", r"No baseline named 'main'"),
        ("SELECT run_id FROM runs WHERE false", r"returned 0 row\(s\)"),
        ("SELECT 'x' AS run_id", r"returned 'x', which is not a run id"),
        ("SELECT * FROM nowhere", r"statement: SELECT \* FROM nowhere"),
        ("", "empty"),
    ],
)
def test_bad_references_say_what_exists(store: Store, ref: str, message: str) -> None:
    _run(store)
    with pytest.raises(StoreError, match=message):
        store.resolve(ref)


def test_a_missing_store_is_a_clear_error(tmp_path: Path) -> None:
    from evalframe.store._connect import Connector

    connector = Connector(tmp_path / "absent.duckdb", timeout=1, threads=None)
    with pytest.raises(StoreError, match="No store at"), connector.connect(write=False):
        pass


# --- schema versions -------------------------------------------------------------------------


def _v0_file(path: Path, run: ef.Run) -> None:
    """A version-0 file holding ``run``, written with the v0 DDL."""
    mem = Store(":memory:")
    mem.save(run)
    export = path.parent / "v0-export"
    mem.export(run.run_id, export)
    con = duckdb.connect(str(path))
    try:
        for ddl in schema_ddl.V0_TABLES.values():
            con.execute(ddl)
        con.execute("INSERT INTO meta VALUES ('schema_version', '0')")
        dropped = {
            "runs": "source_run_id, outputs_run_id",
            "run_metrics": "threshold",
            "scores": "passed",
        }
        for table in ("runs", "run_metrics", "samples", "outputs", "scores", "sample_stats"):
            source = str(export / f"{table}.parquet")
            exclude = f" EXCLUDE ({dropped[table]})" if table in dropped else ""
            con.execute(
                f"INSERT INTO {table} BY NAME SELECT *{exclude} FROM read_parquet(?)", [source]
            )
    finally:
        con.close()


def test_a_v0_store_is_migrated_forward_on_open(tmp_path: Path) -> None:
    path = tmp_path / "old.duckdb"
    run = _run(metrics=["exact-match", "contains"])
    _v0_file(path, run)
    store = Store(path)
    assert store.schema_version == SCHEMA_VERSION
    stored = store.sql("SELECT score, passed FROM scores WHERE score IS NOT NULL")
    assert stored.get_column("passed").to_list() == [s >= 0.5 for s in stored.get_column("score")]
    assert store.sql("SELECT DISTINCT threshold FROM run_metrics").item() == 0.5
    assert store.sql("SELECT source_run_id FROM runs").item() is None
    _reports_equal(run, store.load(run.run_id))
    new = _run(store)  # and the migrated file takes new runs
    assert store.resolve("latest") == new.run_id


def test_a_newer_schema_or_a_foreign_file_is_refused(tmp_path: Path) -> None:
    newer = tmp_path / "newer.duckdb"
    Store(newer)
    con = duckdb.connect(str(newer))
    con.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    con.close()
    with pytest.raises(StoreError, match="schema version 99, written by a newer evalframe"):
        Store(newer)
    foreign = tmp_path / "foreign.duckdb"
    con = duckdb.connect(str(foreign))
    con.execute("CREATE TABLE people (name VARCHAR)")
    con.close()
    with pytest.raises(StoreError, match="not an evalframe store"):
        Store(foreign)


def test_the_schema_doc_names_every_table_column_and_view() -> None:
    doc = (ROOT / "docs" / "store-schema.md").read_text(encoding="utf-8")
    assert f"Schema version: **{SCHEMA_VERSION}**" in doc
    con = duckdb.connect()
    try:
        schema_ddl.create(con)
        columns = con.execute(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = 'main'"
        ).fetchall()
    finally:
        con.close()
    sections = dict(re.findall(r"^### `(\w+)`\n([\s\S]*?)(?=^##|\Z)", doc, flags=re.MULTILINE))
    missing = [f"{t}.{c}" for t, c in columns if f"| `{c}` |" not in sections.get(t, "")]
    assert not missing


# --- concurrency and crashes (real subprocesses) ----------------------------------------------


def test_threads_of_one_process_save_and_read_at_once(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    store = Store(tmp_path / "threads.duckdb")
    runs = [_run(metrics=["exact-match"], name=f"t{i}") for i in range(6)]

    def work(run: ef.Run) -> int:
        store.save(run)
        return int(store.sql("SELECT count(*) FROM runs").item())

    with ThreadPoolExecutor(max_workers=3) as pool:
        counts = list(pool.map(work, runs))
    assert max(counts) == 6
    assert sorted(store.runs().get_column("name")) == [f"t{i}" for i in range(6)]
    _assert_complete(store)


WORKER = textwrap.dedent(
    """
    import os, sys, time

    mode, path, tag = sys.argv[1], sys.argv[2], sys.argv[3]
    if mode == "hold":  # no evalframe import: hold the lock as soon as possible
        import duckdb
        con = duckdb.connect(path)
        print("holding", flush=True)
        time.sleep(float(os.environ.get("HOLD", "3")))
        con.close()
        sys.exit(0)
    import evalframe as ef
    from evalframe.store import Store

    n = int(os.environ.get("N_SAMPLES", "50"))
    ds = ef.Dataset.from_records(
        [{"id": f"s{i}", "input": {"q": i}, "expected_output": "yes"} for i in range(n)],
        name="conc")
    outputs = {f"s{i}": ("yes" if i % 3 else "no") for i in range(n)}
    store = Store(path, timeout=60)
    if mode == "save":
        for k in range(int(os.environ.get("RUNS", "4"))):
            ef.evaluate(ds, outputs=outputs, metrics=["exact-match", "contains"],
                        name=f"{tag}-{k}", store=store)
        print("done", flush=True)
    elif mode == "crash":
        import evalframe.store._write as w
        real = w.insert
        def crashing(con, table, frame):
            real(con, table, frame)
            if table == "runs":  # every row table is in; the transaction is not committed
                os._exit(3)
        w.insert = crashing
        ef.evaluate(ds, outputs=outputs, metrics=["exact-match"], name=tag, store=store)
    elif mode == "loop":
        while True:
            run = ef.evaluate(ds, outputs=outputs, metrics=["exact-match", "contains"],
                              repetitions=2, name=tag)
            print("saving", flush=True)
            store.save(run)
    """
)


def _worker(tmp_path: Path, *args: str, **env: str) -> subprocess.Popen[str]:
    script = tmp_path / "worker.py"
    script.write_text(WORKER, encoding="utf-8")
    return subprocess.Popen(
        [sys.executable, str(script), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "POLARS_MAX_THREADS": "1", **env},
    )


def _assert_complete(store: Store) -> None:
    """Every stored run has all its rows, and no rows belong to a run that is not stored."""
    check = store.sql(
        """
        SELECT r.run_id, r.n_executions, r.n_samples,
               (SELECT count(*) FROM run_outputs o WHERE o.run_id = r.run_id) AS outputs,
               (SELECT count(*) FROM scores s WHERE s.run_id = r.run_id) AS scores,
               (SELECT count(*) FROM run_metrics m WHERE m.run_id = r.run_id) AS metrics,
               (SELECT count(*) FROM sample_stats t WHERE t.run_id = r.run_id) AS stats,
               (SELECT count(*) FROM run_metric_stats t WHERE t.run_id = r.run_id) AS m_stats
        FROM runs r
        """
    )
    for r in check.iter_rows(named=True):
        assert r["outputs"] == r["n_executions"], r
        assert r["scores"] == r["n_executions"] * r["metrics"], r
        assert r["stats"] == r["n_samples"], r
        assert r["m_stats"] == r["metrics"], r
    orphans = store.sql(
        "SELECT count(*) FROM (SELECT run_id FROM outputs UNION SELECT run_id FROM scores "
        "UNION SELECT run_id FROM sample_stats UNION SELECT run_id FROM run_cohort_stats) "
        "WHERE run_id NOT IN (SELECT run_id FROM runs)"
    ).item()
    assert orphans == 0


def test_two_processes_saving_at_once_both_succeed(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.duckdb")
    Store(path)
    procs = [_worker(tmp_path, "save", path, tag, RUNS="3") for tag in ("a", "b")]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert "done" in out
    store = Store(path)
    names = store.runs().get_column("name").to_list()
    assert sorted(names) == sorted([f"{t}-{k}" for t in "ab" for k in range(3)])
    _assert_complete(store)


def test_a_held_lock_gives_a_retryable_busy_error(tmp_path: Path) -> None:
    path = str(tmp_path / "held.duckdb")
    Store(path)
    holder = _worker(tmp_path, "hold", path, "-", HOLD="2")
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "holding"
    started = time.monotonic()
    try:
        with pytest.raises(StoreBusyError, match="locked by another process") as info:
            Store(path, timeout=0.5).save(_run(metrics=["exact-match"]))
        assert info.value.retryable
        # Gave up after its timeout, not when the holder let go: the holder still holds it.
        assert time.monotonic() - started >= 0.5
        assert holder.poll() is None
    finally:
        holder.communicate(timeout=30)
    # A failed save inside evaluate() keeps the run on the error, to save again later.
    impatient = Store(path, timeout=0.3)
    holder = _worker(tmp_path, "hold", path, "-", HOLD="2")
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "holding"
    try:
        with pytest.raises(StoreBusyError) as info:
            _run(impatient, metrics=["exact-match"])
    finally:
        holder.communicate(timeout=30)
    run = info.value.run  # type: ignore[attr-defined]
    assert Store(path).save(run) == run.run_id


def test_a_crash_mid_save_leaves_no_partial_run(tmp_path: Path) -> None:
    path = str(tmp_path / "crash.duckdb")
    kept = _run(Store(path), metrics=["exact-match"])
    proc = _worker(tmp_path, "crash", path, "crashed")
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 3, err
    store = Store(path)
    assert store.runs().get_column("run_id").to_list() == [kept.run_id]
    _assert_complete(store)
    _run(store, metrics=["exact-match"])  # the file is healthy
    assert store.runs().height == 2


def test_a_killed_writer_leaves_only_whole_runs(tmp_path: Path) -> None:
    path = str(tmp_path / "killed.duckdb")
    Store(path)
    proc = _worker(tmp_path, "loop", path, "loop", N_SAMPLES="20000")
    assert proc.stdout is not None
    for _ in range(3):  # two saves done, the third under way
        assert proc.stdout.readline().strip() == "saving"
    time.sleep(0.05)  # inside the third save's transaction (80,000 score rows)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    store = Store(path)
    assert store.runs().height == 2
    _assert_complete(store)


# --- rescoring -----------------------------------------------------------------------------

CALLS: list[int] = []


@ef.metrics.metric("counted-length", family="custom", replace=True)
def counted_length() -> ef.metrics.Scored:
    """1.0 when the output is shorter than 10 characters; counts the rows it scores."""

    def kernel(s: pl.Series) -> pl.Series:
        CALLS.append(s.len())
        return (s.str.len_chars() < 10).cast(pl.Float64)

    return ef.metrics.Scored(
        score=pl.col("actual_output").map_batches(kernel, return_dtype=pl.Float64)
    )


def rescored_metrics(store: Store, run_id: str) -> list[ef.metrics.Metric]:
    return store.load(run_id).metrics


def test_rescore_copies_unchanged_metrics_and_computes_new_ones(store: Store) -> None:
    source = _run(store, metrics=["exact-match", "counted-length"])
    CALLS.clear()
    new_id = store.rescore(["counted-length", "contains"], runs=source.run_id)[0]
    assert CALLS == []  # counted-length was copied, not recomputed
    info = store.sql("SELECT * FROM runs WHERE run_id = ?", [new_id]).row(0, named=True)
    assert info["source_run_id"] == source.run_id
    assert json.loads(info["extra"])["rescore"]["computed"] == ["contains"]
    fresh = ef.evaluate(
        _dataset(), outputs=_outputs(), metrics=["counted-length", "contains"], repetitions=2
    )
    rescored = store.load(new_id)
    assert_frame_equal(
        rescored.scores.drop("run_id"), fresh.scores.drop("run_id"), check_row_order=True
    )
    block = precision_block(row_aggregates(fresh.scores, fresh.frame), fresh.frame.height)
    assert info["macro_f1"] == pytest.approx(fresh.macro_f1, abs=1e-12)
    for key in ("pass_rate", "resolution", "required_repetitions", "within_row_variance"):
        assert info[key] == pytest.approx(block[key], abs=1e-12), key
    thresholds = {m.id: m.threshold for m in rescored_metrics(store, new_id)}
    raw = _raw_scores(store, new_id)
    stats = _oracle_sample_stats(raw, thresholds)
    got = store.sql("SELECT * FROM sample_stats WHERE run_id = ?", [new_id]).to_dicts()
    _assert_rows_match(got, stats, "sample_id")
    for key, value in _oracle_precision(stats).items():
        assert info[key] == pytest.approx(value, abs=1e-6), key
    per_metric = _oracle_metric_stats(raw, thresholds)
    mean_rate = statistics.fmean(o["pass_rate"] for o in per_metric.values())
    assert info["macro_f1"] == pytest.approx(mean_rate, abs=1e-12)
    _assert_complete(store)
    CALLS.clear()
    forced = store.rescore(["counted-length"], runs=source.run_id, force=True)[0]
    assert sum(CALLS) == source.frame.height
    kept = store.rescore(["contains"], runs=forced, keep=True)[0]
    assert [m.id for m in store.load(kept).metrics] == ["contains", "counted-length"]


def test_rescore_streams_whole_samples_in_small_batches(store: Store) -> None:
    calls: dict[str, int] = {}

    def flaky(inp: dict[str, Any]) -> str:
        q = inp["question"]
        calls[q] = calls.get(q, 0) + 1
        return "answer " + q[1:] if (calls[q] + int(q[1:])) % 2 else "no"

    source = ef.evaluate(
        _dataset(),
        system=flaky,
        metrics=["exact-match"],
        repetitions=3,
        concurrency=1,
        store=store,
    )
    new_id = store.rescore(["contains", "exact-match"], runs="latest", batch_size=4)[0]
    stats = "SELECT * EXCLUDE (run_id) FROM sample_stats WHERE run_id = ? ORDER BY sample_id"
    got = store.sql(stats, [new_id])
    scores = store.load(new_id).scores
    want = row_aggregates(scores, source.frame).sort("sample_id")
    assert_frame_equal(got.select(want.columns), want, check_dtypes=False)
    assert scores.height == 2 * source.frame.height
    # A metric over a row's repetitions sees them all, however small the batches.
    consistency = store.rescore(["outcome-consistency"], runs=source.run_id, batch_size=2)[0]
    fresh = ef.score(source.frame, [ef.metrics.get("outcome-consistency")])
    rescored = store.load(consistency).scores
    key = ["sample_id", "repetition"]
    assert_frame_equal(
        rescored.sort(key).select("sample_id", "repetition", "score", "error"),
        fresh.sort(key).select("sample_id", "repetition", "score", "error"),
    )
    assert rescored.get_column("score").n_unique() > 1


def test_whole_samples_never_splits_a_sample() -> None:
    import pyarrow as pa

    from evalframe.store._chunks import whole_samples

    ids = [f"s{i // 3:03d}" for i in range(300)]
    table = pa.table({"sample_id": ids, "v": list(range(300))})
    chunks = list(whole_samples(table.to_batches(max_chunksize=7), 10))
    assert sum(c.height for c in chunks) == 300
    seen: set[str] = set()
    for c in chunks:
        here = set(c.get_column("sample_id"))
        assert not here & seen
        seen |= here
        assert c.height >= 10 - 3 or c is chunks[-1]  # cut before the last sample


def test_rescore_selects_sources_by_sql_and_rolls_back_on_failure(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = _run(store, name="a", metrics=["exact-match"])
    b = _run(store, name="b", metrics=["exact-match"])
    made = store.rescore(["contains"], runs="SELECT run_id FROM runs ORDER BY name")
    sources = store.sql(
        "SELECT source_run_id FROM runs WHERE list_contains(?::VARCHAR[], run_id) "
        "ORDER BY source_run_id",
        [made],
    ).get_column("source_run_id")
    assert sorted(sources) == sorted([a.run_id, b.run_id])
    with pytest.raises(MetricError, match="Unknown metric"):
        store.rescore(["no-such-metric"], runs=a.run_id)

    score_module = sys.modules["evalframe.engine._rescore"]  # the runner rescoring calls

    def broken(*args: Any, **kwargs: Any) -> pl.DataFrame:
        raise RuntimeError("scoring blew up")

    monkeypatch.setattr(score_module, "score", broken)
    before = store.runs().height
    with pytest.raises(RuntimeError, match="blew up"):
        store.rescore(["regex"], runs=a.run_id)
    assert store.runs().height == before
    _assert_complete(store)


# --- Parquet export and import ---------------------------------------------------------------


def test_export_and_import_round_trip(store: Store, tmp_path: Path) -> None:
    a = _run(store)
    b = _run(store, outputs=_outputs(wrong=frozenset()))
    out = store.export([a.run_id, "latest"], tmp_path / "export")
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["format"] == "evalframe.export.v1"
    assert manifest["runs"] == [a.run_id, b.run_id]
    assert manifest["rows"]["scores"] == a.scores.height + b.scores.height
    assert pl.read_parquet(out / "scores.parquet").height == manifest["rows"]["scores"]
    other = Store(tmp_path / "other.duckdb")
    assert sorted(other.import_runs(out)) == sorted([a.run_id, b.run_id])
    assert other.import_runs(out) == []  # idempotent
    _reports_equal(b, other.load("latest"))
    _assert_complete(other)
    with pytest.raises(StoreError, match="already holds an export"):
        store.export(a.run_id, out)


def test_import_rejects_what_is_not_an_export(store: Store, tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=r"has no manifest\.json"):
        store.import_runs(tmp_path)
    (tmp_path / "manifest.json").write_text('{"format": "other"}', encoding="utf-8")
    with pytest.raises(StoreError, match=r"not an evalframe\.export\.v1 manifest"):
        store.import_runs(tmp_path)
    (tmp_path / "manifest.json").write_text(
        '{"format": "evalframe.export.v1", "schema_version": 0}', encoding="utf-8"
    )
    with pytest.raises(StoreError, match="schema version 0"):
        store.import_runs(tmp_path)
