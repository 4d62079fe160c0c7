"""What checking a store's part files costs: on every read, for a whole run, and in full.

Builds a store whose runs keep their scores in Parquet part files beside it, registered as a
cluster rescore registers them (real files, real row counts, sizes and SHA-256), then times:

- opening the store (``Store(path)``: the catalog checks, once per ``Store``);
- one read connection's checked views (``prepare``: each registered file's existence, type,
  place and size, then the two views) and a query for one run through them;
- the footer check of one whole run (``check_run``, before a report, comparison or export);
- ``evalframe store verify`` (every file's SHA-256, footer and size).

    .venv/bin/python benchmarks/bench_store_checks.py --runs 20 --parts 50 --rows 20000
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import polars as pl

import evalframe as ef
from evalframe.store import Store
from evalframe.store._files import check_run, describe, register
from evalframe.store._integrity import verify_store
from evalframe.store._write import transaction


def build(folder: Path, runs: int, parts: int, rows: int) -> tuple[Store, list[str]]:
    ds = ef.Dataset.from_records(
        [{"id": f"s{i}", "input": {"q": i}, "expected_output": "a"} for i in range(rows)],
        name="bench",
    )
    store = Store(folder / "runs.duckdb")
    source = ef.evaluate(
        ds, outputs={f"s{i}": "a" if i % 2 else "b" for i in range(rows)},
        metrics=["exact-match"], store=store,
    )  # fmt: skip
    scores = source.scores
    ids = []
    for r in range(runs):
        run_id = f"{r:016x}"
        staged = folder / "staged" / run_id
        staged.mkdir(parents=True)
        files = []
        for k, chunk in enumerate(scores.with_columns(pl.lit(run_id).alias("run_id")).iter_slices(
            -(-rows // parts)
        )):  # fmt: skip
            path = staged / f"part-{k:06d}.parquet"
            chunk.write_parquet(path)
            files.append(describe(path))
        with store._connector.connect(write=True) as con, transaction(con):
            con.execute(
                "INSERT INTO runs SELECT * REPLACE (? AS run_id, seq + ? AS seq, ? AS "
                "source_run_id) FROM runs WHERE run_id = ?",
                [run_id, r + 1, source.run_id, source.run_id],
            )
            con.execute(
                "INSERT INTO run_metrics SELECT * REPLACE (? AS run_id) FROM run_metrics "
                "WHERE run_id = ?",
                [run_id, source.run_id],
            )
            register(con, run_id, {"scores": files})
        ids.append(run_id)
    shutil.rmtree(folder / "staged", ignore_errors=True)
    return store, ids


def best(fn, repeat: int = 7) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--parts", type=int, default=50)
    parser.add_argument("--rows", type=int, default=20_000)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-store-checks-"))
    try:
        store, ids = build(folder, args.runs, args.parts, args.rows)
        path = str(folder / "runs.duckdb")
        total = sum(p.stat().st_size for p in (folder / "runs.duckdb.runs").rglob("*.parquet"))
        print(f"{args.runs} runs x {args.parts} parts = {args.runs * args.parts} files, "
              f"{args.rows:,} rows per run, {total / 2**20:.1f} MiB")  # fmt: skip
        connector = store._connector
        prepare = connector.prepare
        assert prepare is not None

        def bare() -> None:
            with connector.connect(write=False, prepare=False):
                pass

        def checked() -> None:
            with connector.connect(write=False):
                pass

        def one_run_query() -> None:
            store.sql("SELECT count(*) FROM scores WHERE run_id = ?", [run])

        def whole_run_check() -> None:
            with connector.connect(write=False) as con:
                check_run(con, run)

        run = ids[0] if ids else "none"
        figures = {
            "Store(path) (catalog checks)": best(lambda: Store(path)),
            "a read connection, no views": best(bare),
            "a read connection with its checked views": best(checked),
            "sql: one run's count(*)": best(one_run_query),
            "check_run: one run's footers (+ a connection)": best(whole_run_check),
            "store verify (every SHA-256)": best(lambda: verify_store(path), repeat=3),
        }
        width = max(map(len, figures))
        for name, ms in figures.items():
            print(f"{name:<{width}}  {ms:9.1f} ms")
        extra = figures["a read connection with its checked views"]
        extra -= figures["a read connection, no views"]
        print(f"the checked views: {extra:.1f} ms more", end="")
        if args.runs:
            print(f", {extra * 1000 / (args.runs * args.parts):.0f} us per registered file")
        print()
        sizes = [p.stat().st_size for p in (folder / "runs.duckdb.runs").rglob("*.parquet")]
        if sizes:
            print(f"median part file: {statistics.median(sizes) / 1024:.0f} KiB")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
