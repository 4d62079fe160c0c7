"""The run store: saving, a trend query, and rescoring, with rows/s and peak memory.

Run: ``.venv/bin/python benchmarks/bench_store.py [CASE ...] [--quick]`` with cases

* ``save``: one run of 1,000,000 score rows saved to a new file (250,000 samples x 4
  metrics, and 100,000 samples x 5 metrics x 2 repetitions); target under 2 s. Then the
  same into the file that already holds the dataset, and a small run after those.
* ``trend``: a per-metric, per-cohort trend query over 100 runs of 100,000 score rows
  (10,000,000 score rows in the file); target under 1 s.
* ``rescore``: rescoring 1,000,000 stored outputs with rouge-l and exact-match, end to end
  (read, score, write, per-sample statistics, materialized aggregates, commit), under the
  default 2 GB DuckDB memory limit and under 256 MB.
* ``rescore10m``: rescoring a run of 10,000,000 stored score rows (1,000,000 outputs x 10
  metrics) with one new metric, carrying the 10 others over, under a 2 GB DuckDB memory
  limit: the bounded-memory check.

Each case runs in its own process. Peak memory is the process's peak resident set size
during the timed section (Linux ``VmHWM``, reset just before it), next to the resident size
when the section started.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import numpy as np
import polars as pl
from _common import machine, text_pairs

import evalframe as ef
from evalframe.core._dataset import Dataset
from evalframe.store import Store

CASES = ("save", "trend", "rescore", "rescore10m")
QUICK = "--quick" in sys.argv


# --- memory -----------------------------------------------------------------------------------


def _status(field: str) -> float:
    with open("/proc/self/status", encoding="utf-8") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024  # kB -> MiB
    return float("nan")


def reset_peak() -> float:
    """Reset the peak RSS to the current RSS; returns the current RSS in MiB."""
    gc.collect()
    with open("/proc/self/clear_refs", "w", encoding="utf-8") as fh:
        fh.write("5")
    return _status("VmRSS")


def peak() -> float:
    return _status("VmHWM")


# --- synthetic runs ---------------------------------------------------------------------------


def synthetic_dataset(n: int, name: str = "bench", texts: list[str] | None = None) -> Dataset:
    idx = pl.Series("i", np.arange(n))
    frame = pl.DataFrame({"i": idx}).select(
        pl.format("s{}", pl.col("i")).alias("sample_id"),
        pl.format('{{"question":"q {}"}}', pl.col("i")).alias("input"),
        (
            pl.Series("expected_output", texts, dtype=pl.String)
            if texts is not None
            else pl.format("answer {}", pl.col("i")).alias("expected_output")
        ),
        pl.lit("string").alias("expected_type"),
        pl.when(pl.col("i") % 4 == 3)
        .then(pl.lit("{}"))
        .otherwise(pl.format('{{"tags":["t{}"]}}', pl.col("i") % 3))
        .alias("metadata"),
        pl.when(pl.col("i") % 4 == 3)
        .then(pl.lit([], pl.List(pl.String)))
        .otherwise(pl.concat_list(pl.format("t{}", pl.col("i") % 3)))
        .alias("tags"),
        pl.col("i").hash(seed=1).cast(pl.String).str.pad_start(64, "0").alias("row_hash"),
    )
    return Dataset._wrap(frame, name=name, metrics=[], repetitions=None, path=None)


def synthetic_run(
    ds: Dataset,
    metric_ids: list[str],
    repetitions: int,
    seed: int,
    outputs: list[str] | None = None,
) -> ef.Run:
    rng = np.random.default_rng(seed)
    n = ds.height
    run_id = uuid.uuid4().hex[:16]
    base = ds.select(ef.schema.DATASET_SCHEMA.names())
    produced = pl.DataFrame(
        {
            "sample_id": ds.get_column("sample_id"),
            "actual_output": outputs if outputs is not None else ["an answer"] * n,
        }
    )
    frame = pl.concat(
        [
            produced.with_columns(
                pl.lit(r, pl.Int64).alias("repetition"),
                pl.Series("latency_ms", rng.gamma(2.0, 150.0, n)),
            )
            for r in range(repetitions)
        ]
    ).join(base, on="sample_id", how="left", maintain_order="left")
    metrics = [ef.metrics.get(m) for m in metric_ids]
    parts = []
    for m in metrics:
        score = np.round(rng.beta(4, 2, frame.height), 4)
        failed = rng.random(frame.height) < 0.01
        parts.append(
            frame.select("sample_id", "repetition").with_columns(
                pl.lit(run_id).alias("run_id"),
                pl.lit(m.id).alias("metric"),
                pl.Series("score", np.where(failed, np.nan, score)).fill_nan(None),
                pl.when(pl.Series(failed)).then(pl.lit("synthetic failure")).alias("error"),
                pl.format('{{"tokens":{},"overlap":{}}}', pl.col("repetition"), pl.lit(3)).alias(
                    "details"
                ),
            )
        )
    scores = (
        pl.concat(parts)
        .with_columns((pl.col("score") >= 0.5).alias("passed"))
        .select(ef.schema.SCORES_SCHEMA.names())
    )
    now = time.time()
    return ef.Run(
        run_id=run_id,
        name="bench",
        dataset=ds,
        frame=frame,
        scores=scores,
        metrics=metrics,
        started_at=now - 1,
        finished_at=now,
    )


def report(
    name: str, seconds: float, rows: int, rss0: float, rss_peak: float, **extra: object
) -> None:
    print(
        json.dumps(
            {
                "case": name,
                "seconds": round(seconds, 3),
                "rows": rows,
                "rows_per_s": round(rows / seconds),
                "rss_start_mib": round(rss0),
                "rss_peak_mib": round(rss_peak),
                **extra,
            }
        ),
        flush=True,
    )


# --- cases ------------------------------------------------------------------------------------


def case_save(tmp: Path) -> None:
    shapes = [(250_000, 4, 1), (100_000, 5, 2)] if not QUICK else [(25_000, 4, 1)]
    ids = ["exact-match", "contains", "regex", "rouge-l", "rouge-l(beta=2.0)"]
    for samples, n_metrics, reps in shapes:
        best = float("inf")
        for attempt in range(3):
            ds = synthetic_dataset(samples)
            run = synthetic_run(ds, ids[:n_metrics], reps, seed=attempt)
            path = tmp / f"save-{samples}-{attempt}.duckdb"
            store = Store(path)
            rss0 = reset_peak()
            t0 = time.perf_counter()
            store.save(run)
            elapsed = time.perf_counter() - t0
            best = min(best, elapsed)
            rss_peak = peak()
        # The usual case in CI: the dataset's samples are already in the store.
        again = synthetic_run(ds, ids[:n_metrics], reps, seed=99)
        rss0_again = reset_peak()
        t0 = time.perf_counter()
        store.save(again)
        elapsed_again = time.perf_counter() - t0
        rss_peak_again = peak()
        # A small save after the bulk ones: it compacts the partial row groups they left.
        small = synthetic_dataset(1_000, name="small")
        small_run = synthetic_run(small, ids[:n_metrics], reps, seed=7)
        rss0_small = reset_peak()
        t0 = time.perf_counter()
        store.save(small_run)
        elapsed_small = time.perf_counter() - t0
        rows = run.scores.height
        report(
            f"save {small.height:,} samples x {n_metrics} metrics x {reps} rep after the "
            "bulk saves, same file",
            elapsed_small,
            small_run.scores.height,
            rss0_small,
            peak(),
        )
        report(
            f"save {samples:,} samples x {n_metrics} metrics x {reps} rep, dataset already stored",
            elapsed_again,
            rows,
            rss0_again,
            rss_peak_again,
        )
        report(
            f"save {samples:,} samples x {n_metrics} metrics x {reps} rep",
            best,
            rows,
            rss0,
            rss_peak,
            outputs=run.frame.height,
            file_mib=round(path.stat().st_size / 2**20),
        )


TREND_SQL = """
WITH keyed AS (
    SELECT r.created_at, s.metric, s.score, s.passed,
           unnest(CASE WHEN len(d.tags) > 0 THEN d.tags ELSE [NULL::VARCHAR] END) AS cohort
    FROM scores AS s
    JOIN runs AS r ON r.run_id = s.run_id
    JOIN samples AS d ON d.dataset_hash = r.dataset_hash AND d.sample_id = s.sample_id
    WHERE r.dataset = 'bench'
)
SELECT created_at, cohort, metric, avg(score) AS mean,
       count_if(passed) / count(score) AS pass_rate, count(*) AS n
FROM keyed GROUP BY ALL ORDER BY metric, cohort, created_at
"""

TREND_VIEW_SQL = """
SELECT r.created_at, c.label, c.metric, c.mean, c.p50, c.p95, c.pass_rate
FROM cohort_summary AS c JOIN runs AS r USING (run_id)
WHERE r.dataset = 'bench'
ORDER BY c.metric, c.label, r.created_at
"""

TREND_STATS_SQL = """
SELECT r.created_at, c.label, c.metric, c.mean, c.p50, c.p95, c.pass_rate
FROM run_cohort_stats AS c JOIN runs AS r USING (run_id)
WHERE r.dataset = 'bench'
ORDER BY c.metric, c.label, r.created_at
"""


def case_trend(tmp: Path) -> None:
    runs, samples = (100, 25_000) if not QUICK else (10, 2_500)
    path = tmp / "trend.duckdb"
    store = Store(path)
    ds = synthetic_dataset(samples)
    t0 = time.perf_counter()
    for k in range(runs):
        store.save(synthetic_run(ds, ["exact-match", "contains", "regex", "rouge-l"], 1, seed=k))
    setup = time.perf_counter() - t0
    total = store.sql("SELECT count(*) FROM scores").item()
    queries = (
        ("run_cohort_stats, materialized", TREND_STATS_SQL),
        ("raw scores, mean and pass-rate", TREND_SQL),
        ("cohort_summary view, every aggregate", TREND_VIEW_SQL),
    )
    for label, sql in queries:
        times = []
        for _ in range(4):
            rss0 = reset_peak()
            t0 = time.perf_counter()
            out = store.sql(sql)
            times.append(time.perf_counter() - t0)
            rss_peak = peak()
        report(
            f"trend query ({label}) over {runs} runs x {total // runs:,} score rows",
            min(times[1:]),
            total,
            rss0,
            rss_peak,
            first_s=round(times[0], 3),
            result_rows=out.height,
            setup_s=round(setup, 1),
        )


def _instrument_rescore() -> dict[str, float]:
    """Time the phases of a rescore: scoring, appending scores, aggregates, commit/close."""
    import evalframe.store._connect as connect_module
    import evalframe.store._scored as rescore_module

    phases = {"score": 0.0, "append_scores": 0.0, "materialize_stats": 0.0, "close": 0.0}
    score_module = sys.modules["evalframe.core._score"]

    def timed(name: str, fn: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                phases[name] += time.perf_counter() - t0

        return wrapper

    score_module.score = timed("score", score_module.score)  # type: ignore[attr-defined]
    original_insert: Any = rescore_module.insert  # type: ignore[attr-defined]

    def insert(con: Any, table: str, frame: Any) -> None:
        if table != rescore_module.SCORES_TABLE:
            original_insert(con, table, frame)
            return
        timed("append_scores", original_insert)(con, table, frame)

    rescore_module.insert = insert  # type: ignore[attr-defined]
    rescore_module.fill_stats = timed(  # type: ignore[attr-defined]
        "materialize_stats",
        rescore_module.fill_stats,  # type: ignore[attr-defined]
    )
    real_open = connect_module.Connector._open

    def open_(self: Any, *, write: bool) -> Any:
        con = real_open(self, write=write)
        real_close = con.close

        class Timed:
            def __getattr__(self, name: str) -> Any:
                return getattr(con, name)

            def close(self) -> None:
                timed("close", real_close)()

        return Timed()

    connect_module.Connector._open = open_  # type: ignore[method-assign]
    return phases


def case_rescore(tmp: Path) -> None:
    n = 1_000_000 if not QUICK else 50_000
    unique = min(n, 100_000)
    refs, cands = text_pairs(unique, seed=7)
    reps = n // unique
    ds = synthetic_dataset(n, texts=refs * reps)
    run = synthetic_run(ds, ["contains"], 1, seed=0, outputs=cands * reps)
    path = tmp / "rescore.duckdb"
    Store(path).save(run)
    metrics = [ef.metrics.get("rouge-l"), ef.metrics.get("exact-match")]
    ef.score(run.frame.head(1000), metrics)  # compile the ROUGE-L kernel outside the timing
    t0 = time.perf_counter()
    ef.score(run.frame, metrics)
    t_memory = time.perf_counter() - t0
    # The rescore itself runs in a fresh process, so that its memory is its own; once with
    # the default DuckDB memory limit and once with a small one.
    for limit in ("2GB", "256MB"):
        args = [sys.executable, __file__, "rescore_run", str(path), str(n), f"{t_memory:.3f}"]
        subprocess.run([*args, limit], check=True)


def rescore_run(path: str, n: int, t_memory: float, limit: str) -> None:
    store = Store(path)
    warm = synthetic_run(synthetic_dataset(10), ["contains"], 1, seed=0).frame
    ef.score(warm, [ef.metrics.get("rouge-l")])  # compile the ROUGE-L kernel
    phases = _instrument_rescore()
    rss0 = reset_peak()
    t0 = time.perf_counter()
    source = store.sql("SELECT run_id FROM runs WHERE source_run_id IS NULL").item()
    (new_id,) = store.rescore(
        ["rouge-l", "exact-match"], runs=source, batch_size=100_000, memory_limit=limit
    )
    elapsed = time.perf_counter() - t0
    rss_peak = peak()
    written = store.sql("SELECT count(*) FROM scores WHERE run_id = ?", [new_id]).item()
    assert written == 2 * n
    report(
        f"rescore {n:,} stored outputs with rouge-l + exact-match, DuckDB memory_limit {limit}",
        elapsed,
        n,
        rss0,
        rss_peak,
        score_rows_written=written,
        in_memory_score_s=t_memory,
        phases_s={k: round(v, 2) for k, v in phases.items()},
    )


def case_rescore10m(tmp: Path) -> None:
    outputs, n_metrics = (1_000_000, 10) if not QUICK else (100_000, 10)
    path = tmp / "rescore10m.duckdb"
    store = Store(path)
    import duckdb

    src = "src10m"
    t0 = time.perf_counter()
    con = duckdb.connect(str(path))
    con.execute(
        "INSERT INTO samples SELECT 'h10m', i, 's' || i, md5(i::VARCHAR), "
        "'{\"question\":\"q ' || i || '\"}', 'answer ' || (i % 1000), 'string', "
        "CASE WHEN i % 4 = 3 THEN '{}' ELSE '{\"tags\":[\"t' || (i % 3) || '\"]}' END, "
        "CASE WHEN i % 4 = 3 THEN []::VARCHAR[] ELSE ['t' || (i % 3)] END "
        "FROM range(?) t(i)",
        [outputs],
    )
    con.execute(
        "INSERT INTO outputs (run_id, sample_id, repetition, actual_output, latency_ms) "
        "SELECT ?, 's' || i, 0, 'answer ' || (i % 1200), 100 + i % 50 FROM range(?) t(i)",
        [src, outputs],
    )
    con.execute(
        "INSERT INTO scores SELECT ?, 's' || i, 0, 'm' || j, s, s >= 0.5, NULL, "
        "'{\"k\":' || j || '}' FROM (SELECT i, j, hash(i * 31 + j) % 1000 / 1000.0 AS s "
        "FROM range(?) a(i), range(?) b(j))",
        [src, outputs, n_metrics],
    )
    con.execute(
        "INSERT INTO run_metrics SELECT ?, j, 'm' || j, 'm' || j, '{}', 0.5, 'custom', "
        "'correctness' FROM range(?) t(j)",
        [src, n_metrics],
    )
    con.execute(
        "INSERT INTO runs (run_id, seq, name, dataset, dataset_hash, created_at, n_samples, "
        "n_executions, repetitions, labels, extra, outputs_run_id) VALUES (?, 1, 'big', "
        "'bench10m', 'h10m', now()::TIMESTAMP, ?, ?, 1, '{}', '{}', ?)",
        [src, outputs, outputs, src],
    )
    con.close()
    setup = time.perf_counter() - t0
    stored = store.sql("SELECT count(*) FROM scores").item()
    rss0 = reset_peak()
    t0 = time.perf_counter()
    (new_id,) = store.rescore(
        ["exact-match"], runs=src, keep=True, batch_size=100_000, memory_limit="2GB"
    )
    elapsed = time.perf_counter() - t0
    rss_peak = peak()
    written = store.sql("SELECT count(*) FROM scores WHERE run_id = ?", [new_id]).item()
    assert written == outputs * (n_metrics + 1)
    report(
        f"rescore a run of {stored:,} score rows (+1 metric, {n_metrics} carried), "
        "DuckDB memory_limit 2GB",
        elapsed,
        stored,
        rss0,
        rss_peak,
        score_rows_written=written,
        setup_s=round(setup, 1),
    )


def main() -> None:
    chosen = [a for a in sys.argv[1:] if not a.startswith("--")]
    if chosen[:1] == ["rescore_run"]:
        rescore_run(chosen[1], int(chosen[2]), float(chosen[3]), chosen[4])
        return
    if len(chosen) == 1:
        with tempfile.TemporaryDirectory(prefix="evalframe-bench-") as tmp:
            globals()[f"case_{chosen[0]}"](Path(tmp))
        return
    print(machine(), flush=True)
    for case in chosen or CASES:
        args = [sys.executable, __file__, case] + (["--quick"] if QUICK else [])
        subprocess.run(args, check=True)


if __name__ == "__main__":
    main()
