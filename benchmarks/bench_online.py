"""Production capture under load: what ``ef.online.capture`` costs the serving path.

Run: ``.venv/bin/python benchmarks/bench_online.py [--rate 1000] [--seconds 5] [--threads 8]``

Threads call ``capture`` at a combined ``--rate`` per second (sampling rate 1.0, so every
call is queued and written) while the background writer batches them into a DuckDB store.
Each call is timed with ``perf_counter_ns``; the figures are the caller's latency
percentiles, and the check that every capture reached the store.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import machine

import evalframe as ef


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rate", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--threads", type=int, default=8)
    args = parser.parse_args()
    db = Path(tempfile.mkdtemp()) / "online.duckdb"
    ef.online.configure(store=db, sampling_rate=1.0, flush_seconds=0.2)
    per_thread = args.rate / args.threads
    timings: list[list[int]] = [[] for _ in range(args.threads)]

    def serve(k: int) -> None:
        interval = 1.0 / per_thread
        start = time.perf_counter()
        i = 0
        while (now := time.perf_counter()) - start < args.seconds:
            t0 = time.perf_counter_ns()
            ef.online.capture("faq", f"{k}-{i}", {"question": f"q{i}"}, "an answer " * 10)
            timings[k].append(time.perf_counter_ns() - t0)
            i += 1
            time.sleep(max(0.0, start + i * interval - now))

    threads = [threading.Thread(target=serve, args=(k,)) for k in range(args.threads)]
    wall = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    calls = [ns for t in timings for ns in t]
    elapsed = time.perf_counter() - wall
    ef.online.flush(60)
    stats = ef.online.stats()
    ordered = sorted(calls)

    def pct(p: float) -> float:
        return ordered[min(len(ordered) - 1, int(p * len(ordered)))] / 1000

    print(f"{machine()}; {len(calls):,} captures from {args.threads} threads in {elapsed:.1f} s "
          f"({len(calls) / elapsed:,.0f}/s)")  # fmt: skip
    print("| caller latency | microseconds |")
    print("| --- | ---: |")
    print(f"| median | {statistics.median(calls) / 1000:.1f} |")
    for p in (0.99, 0.999):
        print(f"| p{p * 100:g} | {pct(p):.1f} |")
    print(f"| max | {ordered[-1] / 1000:.1f} |")
    print(f"written {stats['written']:,} of {stats['captured']:,} captured; "
          f"dropped {stats['dropped']}, write failures {stats['write_failed']}")  # fmt: skip
    ef.online.close()


if __name__ == "__main__":
    main()
