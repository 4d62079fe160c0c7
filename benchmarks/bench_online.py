"""Production capture under load: what ``ef.online.capture`` costs the serving path.

Run: ``.venv/bin/python benchmarks/bench_online.py [--rate 1000] [--seconds 5] [--threads 8]
[--busy]``

Threads call ``capture`` at a combined ``--rate`` per second (sampling rate 1.0, so every
call is queued and written) while the background writer batches them into a DuckDB store.
Each call is timed with ``perf_counter_ns``; the figures are the caller's latency
percentiles, and the check that every capture reached the store. With ``--busy`` a second
process holds the store (DuckDB's one-writer lock) from before ``configure`` until the
threads stop, so every capture waits in memory meanwhile; ``configure`` is timed too.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import machine

import evalframe as ef

_HOLDER = """
import sys, duckdb
con = duckdb.connect(sys.argv[1])
print("holding", flush=True)
sys.stdin.readline()
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rate", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--busy", action="store_true", help="another process holds the store")
    args = parser.parse_args()
    db = Path(tempfile.mkdtemp()) / "online.duckdb"
    holder = None
    if args.busy:
        ef.online.configure(store=db)  # create the store, then let another process hold it
        ef.online.close()
        holder = subprocess.Popen(
            [sys.executable, "-c", _HOLDER, str(db)], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert holder.stdout is not None
        assert holder.stdout.readline() == "holding\n"
    t0 = time.perf_counter()
    ef.online.configure(store=db, sampling_rate=1.0, flush_seconds=0.2)
    configured = time.perf_counter() - t0
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
    written_while_held = ef.online.stats()["written"]
    if holder is not None and holder.stdin is not None:
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait()
    ef.online.flush(60)
    stats = ef.online.stats()
    ordered = sorted(calls)

    def pct(p: float) -> float:
        return ordered[min(len(ordered) - 1, int(p * len(ordered)))] / 1000

    print(f"{machine()}; {len(calls):,} captures from {args.threads} threads in {elapsed:.1f} s "
          f"({len(calls) / elapsed:,.0f}/s)")  # fmt: skip
    if holder is not None:
        print(f"store held by another process throughout; configure took {configured:.3f} s; "
              f"{written_while_held} written while held")  # fmt: skip
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
