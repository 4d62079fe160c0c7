"""Rescoring stored outputs in-process and on a Dask LocalCluster, side by side.

``python benchmarks/bench_dask.py [--rows N] [--workers W]`` (default 10,000,000 outputs, 2
workers): one store holds a run of N outputs (a third ranked-retrieval samples, the rest
text answers); it is rescored with rouge-l, exact-match and retrieval-ndcg-at-k(k=3) twice,
in-process and with ``dask=`` a LocalCluster of W worker processes (one thread each), each in
a fresh process so its peak memory is its own. Printed per engine: seconds, outputs/s, score
rows/s and the peak resident memory of the client and of each worker; then whether both runs
stored the same rows.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _common  # noqa: F401  (pins threads before Polars loads)
import numpy as np
import polars as pl
from _common import text_pairs
from bench_store import peak, reset_peak, synthetic_dataset, synthetic_run

import evalframe as ef
from evalframe.store import Store

METRICS = ["rouge-l", "exact-match", "retrieval-ndcg-at-k(k=3)"]


def _arg(name: str, default: int) -> int:
    return int(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


def build(path: Path, n: int) -> None:
    unique = min(n, 100_000)
    refs, cands = text_pairs(unique, seed=11)
    repeat = -(-n // unique)
    refs, cands = (refs * repeat)[:n], (cands * repeat)[:n]
    ds = synthetic_dataset(n, texts=refs)
    i = pl.Series("i", np.arange(n))
    retrieval = (i % 3) == 0
    ds_frame = ds.with_columns(
        pl.when(retrieval)
        .then(pl.format('["d{}","d{}"]', i % 17, i % 13))
        .otherwise(pl.col("expected_output"))
        .alias("expected_output"),
        pl.when(retrieval).then(pl.lit("list")).otherwise(pl.lit("string")).alias("expected_type"),
    )
    ds = ef.Dataset._wrap(ds_frame, name="bench", metrics=[], repetitions=None, path=None)
    outputs = (
        pl.DataFrame({"i": i, "c": cands})
        .select(
            pl.when(pl.col("i") % 3 == 0)
            .then(
                pl.format(
                    '["d{}","d{}","d{}"]', pl.col("i") % 13, pl.col("i") % 7, pl.col("i") % 17
                )
            )
            .otherwise(pl.col("c"))
        )
        .to_series()
        .to_list()
    )
    run = synthetic_run(ds, ["contains"], 1, seed=0, outputs=outputs)
    Store(path).save(run)


def rescore(path: str, n: int, workers: int) -> None:
    """One engine's rescore, in this (fresh) process; prints one JSON line."""
    store = Store(path)
    source = store.sql("SELECT run_id FROM runs WHERE source_run_id IS NULL").item()
    client = cluster = None
    if workers:
        from distributed import Client, LocalCluster

        cluster = LocalCluster(
            n_workers=workers, threads_per_worker=1, host="127.0.0.1", dashboard_address=":0"
        )
        client = Client(cluster)
    warm = synthetic_run(synthetic_dataset(10), ["contains"], 1, seed=0).frame
    ef.score(warm, [ef.metrics.get(m) for m in METRICS])  # compile the kernels here
    rss0 = reset_peak()
    t0 = time.perf_counter()
    (new_id,) = store.rescore(METRICS, runs=source, batch_size=250_000, dask=client)
    elapsed = time.perf_counter() - t0
    result = {
        "engine": f"local:{workers}" if workers else "in-process",
        "seconds": round(elapsed, 1),
        "outputs_per_s": round(n / elapsed),
        "score_rows_per_s": round(n * len(METRICS) / elapsed),
        "client_peak_gb": round(peak() / 1024, 2),
        "client_start_gb": round(rss0 / 1024, 2),
        "run_id": new_id,
    }
    if client is not None:
        import resource

        def worker_peak() -> float:
            return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 / 1024  # GB

        result["worker_peak_gb"] = sorted(round(v, 2) for v in client.run(worker_peak).values())
        client.close()
        cluster.close()  # type: ignore[union-attr]
    print(json.dumps(result), flush=True)


def main() -> None:
    if sys.argv[1:2] == ["rescore"]:
        rescore(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
        return
    n, workers = _arg("--rows", 10_000_000), _arg("--workers", 2)
    with tempfile.TemporaryDirectory(prefix="bench-dask-") as tmp:
        path = Path(tmp) / "store.duckdb"
        t0 = time.perf_counter()
        build(path, n)
        print(f"built a store of {n:,} outputs in {time.perf_counter() - t0:.1f} s", flush=True)
        results = []
        for w in (0, workers):
            out = subprocess.run(
                [sys.executable, __file__, "rescore", str(path), str(n), str(w)],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            results.append(json.loads(out.strip().splitlines()[-1]))
            print(results[-1], flush=True)
        store = Store(path)
        query = (
            "SELECT sample_id, metric, score, passed, error, details FROM scores "
            "WHERE run_id = ? ORDER BY sample_id, metric"
        )
        a, b = (store.sql(query, [r["run_id"]]) for r in results)
        print(f"same rows: {a.equals(b)} ({a.height:,} score rows each)")
        ratio = results[1]["outputs_per_s"] / results[0]["outputs_per_s"]
        print(f"local:{workers} / in-process throughput: {ratio:.2f}x")


if __name__ == "__main__":
    main()
