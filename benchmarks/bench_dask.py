"""Rescoring stored outputs in-process and on a Dask LocalCluster, side by side.

``python benchmarks/bench_dask.py [--rows N] [--workers W]`` (default 10,000,000 outputs, 2
workers): one store holds a run of N outputs (a third ranked-retrieval samples, the rest
text answers); it is rescored with rouge-l, exact-match and retrieval-ndcg-at-k(k=3) twice,
in-process and with ``dask=`` a LocalCluster of W worker processes (one thread each), each in
a fresh process so its peak memory is its own. Printed per engine: seconds, outputs/s, score
rows/s and the peak resident memory of the client and of each worker; then whether both runs
stored the same rows.

``--phases`` times the phases of the cluster rescore instead (the capacity model's rates):
writing the source as Parquet parts, scoring on the workers, registering the workers' files
(moved beside the store, read in place by its views), and the rest of the writer's work
(the run's statistics and record, read from those files).
``--stream`` measures ``store.score_outputs`` (``run --batch-size``) on N outputs written as
Parquet files, against ``ef.evaluate(..., store=)`` holding the same run in memory: seconds
and peak memory of each, in fresh processes.
``--big GB`` writes GB gigabytes of incompressible outputs as Parquet (30,000-character
answers, 10,000 per file, uncompressed), more than this machine's memory when GB is above
it, and streams them into a store with contains and json-valid (``batch_size`` 10,000):
seconds and the process's peak memory. With ``--words`` the answers are English-like text
(sentences recurring with Zipf weights, words from a Zipf-distributed vocabulary), which the
store compresses as it does real answers, so that a 50 GB input fits on a disk of 75 GB.
``--commits GB`` stores GB of such answers into the outputs table committing every 10,000
rows, every row group's worth (122,880 rows), every row group's worth with a checkpoint after
each (what streamed runs do) or once, at DuckDB memory limits of 2 and 6 GB: seconds,
gigabytes written and peak temporary files (Linux).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
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


def phases(n: int, workers: int) -> None:
    """Time the cluster rescore's phases by wrapping the calls that make them."""
    from distributed import Client, LocalCluster

    from evalframe.engine import _rescore_dask
    from evalframe.store import _connect, _scored

    spent: dict[str, float] = {"export": 0.0, "score": 0.0, "register": 0.0}

    def timed(phase: str, fn: object, when: str | None = None) -> object:
        def wrapper(*args: object, **kwargs: object) -> object:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)  # type: ignore[operator]
            finally:
                statement = str(args[1]) if len(args) > 1 else ""
                if when is None or statement.startswith(when):
                    spent[phase] += time.perf_counter() - t0

        return wrapper

    _connect.execute = timed("export", _connect.execute, "COPY")  # type: ignore[assignment]
    _rescore_dask.cluster.gather = timed("score", _rescore_dask.cluster.gather)  # type: ignore[attr-defined]
    _scored.register = timed("register", _scored.register)  # type: ignore[attr-defined]
    with tempfile.TemporaryDirectory(prefix="bench-dask-") as tmp:
        path = Path(tmp) / "store.duckdb"
        build(path, n)
        store = Store(path)
        source = store.sql("SELECT run_id FROM runs").item()
        with (
            LocalCluster(
                n_workers=workers, threads_per_worker=1, host="127.0.0.1", dashboard_address=":0"
            ) as cluster,
            Client(cluster) as client,
        ):
            t0 = time.perf_counter()
            store.rescore(METRICS, runs=source, batch_size=250_000, dask=client)
            total = time.perf_counter() - t0
    rates = {
        "export_outputs_per_s": round(n / spent["export"]),
        "score_outputs_per_s_per_worker": round(n / spent["score"] / workers),
        "register_score_rows_per_s": round(n * len(METRICS) / spent["register"]),
    }
    print(
        json.dumps(
            {
                "rows": n,
                "total_s": round(total, 1),
                **{k: round(v, 2) for k, v in spent.items()},
                "rest": round(total - sum(spent.values()), 1),
                **rates,
            }
        )
    )


def _folder_dataset(folder: str, name: str) -> ef.Dataset:
    """The dataset a case wrote as ``dataset.parquet`` in ``folder``."""
    frame = pl.read_parquet(Path(folder) / "dataset.parquet")
    return ef.Dataset._wrap(frame, name=name, metrics=[], repetitions=None, path=None)


def _measured(run: Callable[[], object]) -> tuple[object, dict[str, float]]:
    """``run()``'s result, and its seconds and this process's peak memory (and at start)."""
    rss0 = reset_peak()
    t0 = time.perf_counter()
    result = run()
    elapsed = time.perf_counter() - t0
    return result, {
        "seconds": round(elapsed, 1),
        "peak_gb": round(peak() / 1024, 2),
        "start_gb": round(rss0 / 1024, 2),
    }


def stream(mode: str, folder: str, n: int) -> None:
    """One streamed or in-memory run of the Parquet outputs in ``folder`` (a fresh process)."""
    ds = _folder_dataset(folder, "bench")
    store = Store(Path(folder) / f"{mode}.duckdb")
    warm = synthetic_run(synthetic_dataset(10), ["contains"], 1, seed=0).frame
    ef.score(warm, [ef.metrics.get(m) for m in METRICS])
    outputs = Path(folder) / "outputs"
    if mode == "streamed":
        _, figures = _measured(
            lambda: store.score_outputs(ds, outputs, METRICS, batch_size=250_000)
        )
    else:
        _, figures = _measured(
            lambda: ef.evaluate(ds, outputs=outputs, metrics=METRICS, store=store)
        )
    print(json.dumps({"mode": mode, "rows": n, **figures}))


def stream_case(n: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-stream-") as tmp:
        build(Path(tmp) / "source.duckdb", n)
        store = Store(Path(tmp) / "source.duckdb")
        outputs = Path(tmp) / "outputs"
        outputs.mkdir()
        store.sql("SELECT sample_id, actual_output FROM outputs ORDER BY sample_id").write_parquet(
            outputs / "part.parquet", row_group_size=250_000
        )
        store.sql(
            "SELECT sample_id, input, expected_output, expected_type, metadata, tags, row_hash "
            "FROM samples ORDER BY ordinal"
        ).write_parquet(Path(tmp) / "dataset.parquet")
        size = sum(f.stat().st_size for f in outputs.iterdir()) / 1e9
        print(f"{n:,} outputs: {size:.2f} GB of Parquet", flush=True)
        for mode in ("streamed", "in-memory"):
            out = subprocess.run(
                [sys.executable, __file__, "stream", mode, tmp, str(n)],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            print(out.strip().splitlines()[-1], flush=True)


def _word_pool(chars: int) -> str:
    """Seeded English-like text: sentences of 5-25 words from a 5,000-word vocabulary, the
    sentences drawn with Zipf weights from 100,000, so that phrases recur as in real answers."""
    rng = np.random.default_rng(7)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    vocab = np.array(["".join(rng.choice(letters, rng.integers(2, 10))) for _ in range(5000)])
    zipf = 1 / np.arange(1, 5001) ** 1.1
    sentences = np.array(
        [
            " ".join(vocab[rng.choice(5000, rng.integers(5, 26), p=zipf / zipf.sum())]) + "."
            for _ in range(100_000)
        ]
    )
    weights = 1 / np.arange(1, 100_001) ** 0.8
    return " ".join(sentences[rng.choice(100_000, chars // 80, p=weights / weights.sum())])


def big(gigabytes: int, folder: Path, *, words: bool = False) -> None:
    """Write ``gigabytes`` of outputs as Parquet, then stream them into a store (fresh process)."""
    n = write_big(gigabytes, folder, words=words)
    out = subprocess.run(
        [sys.executable, __file__, "big-run", str(folder), str(n)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    print(out.strip().splitlines()[-1], flush=True)
    print(f"store file: {(folder / 'big.duckdb').stat().st_size / 1e9:.1f} GB", flush=True)


def write_big(gigabytes: int, folder: Path, *, words: bool) -> int:
    """Write ``gigabytes`` of 30,000-character outputs (and their dataset) as Parquet."""
    import base64

    import pyarrow as pa
    import pyarrow.parquet as pq

    width, per_file = 30_000, 10_000
    files = max(1, gigabytes * 1_000_000_000 // (width * per_file))
    n = files * per_file
    outputs = folder / "outputs"
    outputs.mkdir(parents=True)
    t0 = time.perf_counter()
    pool = _word_pool(200_000_000) if words else ""
    rng = np.random.default_rng(11)
    for k in range(files):
        if words:
            starts = rng.integers(0, len(pool) - width, per_file)
            texts = [pool[int(o) : int(o) + width] for o in starts]
        else:
            blob = base64.b64encode(os.urandom(width * per_file * 3 // 4)).decode("ascii")
            texts = [blob[i * width : (i + 1) * width] for i in range(per_file)]
        ids = [f"s{k * per_file + i}" for i in range(per_file)]
        table = pa.table({"sample_id": ids, "actual_output": texts})
        pq.write_table(table, outputs / f"part-{k:05d}.parquet", compression="none")
    size = sum(f.stat().st_size for f in outputs.iterdir()) / 1e9
    print(
        f"wrote {n:,} outputs, {size:.1f} GB of Parquet, in {time.perf_counter() - t0:.0f} s",
        flush=True,
    )
    pl.DataFrame({"sample_id": [f"s{i}" for i in range(n)]}).with_columns(
        input=pl.lit("{}"),
        expected_output=pl.lit("x"),
        expected_type=pl.lit("string"),
        metadata=pl.lit("{}"),
        tags=pl.lit([], pl.List(pl.String)),
        row_hash=pl.col("sample_id").hash().cast(pl.String),
    ).write_parquet(folder / "dataset.parquet")
    return n


COMMIT_POLICIES = (
    ("piece", "2GB"),
    ("row group", "2GB"),
    ("row group + checkpoint", "2GB"),  # what streamed runs do
    ("one", "2GB"),
    ("row group", "6GB"),
)


def commits(gigabytes: int, folder: Path) -> None:
    """Store ``gigabytes`` of long outputs into DuckDB's outputs table committing each piece
    of 10,000 rows, each row group's worth (122,880 rows) or all at once, at a memory limit:
    seconds, bytes the process wrote, peak temporary files and WAL, each in a fresh process."""
    write_big(gigabytes, folder, words=True)
    for policy, memory in COMMIT_POLICIES:
        out = subprocess.run(
            [sys.executable, __file__, "commit-run", str(folder), policy, memory],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        print(out.strip().splitlines()[-1], flush=True)


def commit_run(folder: str, policy: str, memory: str) -> None:
    import threading

    import duckdb

    from evalframe.store._schema import TABLES

    db = Path(folder) / f"commits-{policy.replace(' ', '-')}-{memory}.duckdb"
    spill = [Path(f"{db}.tmp"), Path(f"{db}.wal")]
    con = duckdb.connect(str(db))
    con.execute(TABLES["outputs"])
    con.execute(f"SET memory_limit = '{memory}'")
    peak_spill, done = [0], threading.Event()

    def watch() -> None:
        while not done.wait(0.2):
            size = sum(f.stat().st_size for p in spill if p.exists() for f in p.rglob("*"))
            size += sum(p.stat().st_size for p in spill if p.is_file())
            peak_spill[0] = max(peak_spill[0], size)

    def written() -> int:
        return int(Path("/proc/self/io").read_text().split("wchar: ")[1].split()[0])

    threading.Thread(target=watch, daemon=True).start()
    w0, t0, rows = written(), time.perf_counter(), 0
    con.execute("BEGIN")
    for f in sorted((Path(folder) / "outputs").iterdir()):
        piece = pl.read_parquet(f).with_columns(run_id=pl.lit("r"), repetition=pl.lit(0))
        arrow = piece.to_arrow()  # noqa: F841  (read by DuckDB's replacement scan)
        con.execute("INSERT INTO outputs BY NAME SELECT * FROM arrow")
        rows += piece.height
        if policy == "piece" or (policy.startswith("row group") and rows >= 122_880):
            con.execute("COMMIT")
            if policy.endswith("checkpoint"):
                con.execute("CHECKPOINT")
            con.execute("BEGIN")
            rows = 0
    con.execute("COMMIT")
    con.close()
    done.set()
    print(
        json.dumps(
            {
                "commit": policy,
                "memory_limit": memory,
                "seconds": round(time.perf_counter() - t0, 1),
                "written_gb": round((written() - w0) / 1e9, 1),
                "peak_temp_and_wal_gb": round(peak_spill[0] / 1e9, 2),
                "file_gb": round(db.stat().st_size / 1e9, 2),
            }
        )
    )
    db.unlink()


# Metrics whose details do not repeat the output (exact-match's hold the actual text, which
# would store each 30,000-character answer twice).
BIG_METRICS = ["contains", "json-valid"]


def big_run(folder: str, n: int) -> None:
    ds = _folder_dataset(folder, "big")
    store = Store(Path(folder) / "big.duckdb")
    outputs = Path(folder) / "outputs"
    run_id, figures = _measured(
        lambda: store.score_outputs(ds, outputs, BIG_METRICS, batch_size=10_000)
    )
    rows = store.sql("SELECT count(*) FROM scores WHERE run_id = ?", [run_id]).item()
    print(json.dumps({"outputs": n, "score_rows": rows, **figures}))


def main() -> None:
    if sys.argv[1:2] == ["big-run"]:
        big_run(sys.argv[2], int(sys.argv[3]))
        return
    if sys.argv[1:2] == ["commit-run"]:
        commit_run(sys.argv[2], sys.argv[3], sys.argv[4])
        return
    if "--commits" in sys.argv:
        root = Path(os.environ.get("BENCH_DIR", tempfile.gettempdir()))
        with tempfile.TemporaryDirectory(prefix="bench-commits-", dir=root) as tmp:
            commits(_arg("--commits", 12), Path(tmp))
        return
    if "--big" in sys.argv:
        root = Path(os.environ.get("BENCH_DIR", tempfile.gettempdir()))
        with tempfile.TemporaryDirectory(prefix="bench-big-", dir=root) as tmp:
            big(_arg("--big", 30), Path(tmp), words="--words" in sys.argv)
        return
    if sys.argv[1:2] == ["rescore"]:
        rescore(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
        return
    if sys.argv[1:2] == ["stream"]:
        stream(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return
    n, workers = _arg("--rows", 10_000_000), _arg("--workers", 2)
    if "--phases" in sys.argv:
        phases(n, workers)
        return
    if "--stream" in sys.argv:
        stream_case(n)
        return
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
        # Compared in SQL by count and an order-free checksum of every row: 3 x N rows per
        # run would not fit in memory twice, and a row-by-row EXCEPT takes minutes.
        checksum = (
            "SELECT count(*), sum(hash(sample_id, repetition, metric, score, passed, error, "
            "details)::HUGEINT)::VARCHAR FROM scores WHERE run_id = ?"
        )
        store = Store(path)
        a, b = (store.sql(checksum, [r["run_id"]]).row(0) for r in results)
        print(f"same rows (count, checksum): {a == b} ({a[0]:,} score rows each)")
        ratio = results[1]["outputs_per_s"] / results[0]["outputs_per_s"]
        print(f"local:{workers} / in-process throughput: {ratio:.2f}x")


if __name__ == "__main__":
    main()
