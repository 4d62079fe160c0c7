"""Wall-clock checks that used to be upper bounds inside the test suite.

Run: ``.venv/bin/python benchmarks/bench_scale.py``. The tests keep what does not depend on
the machine's load (results, counts, lower bounds); the seconds live here, each with a
target and a cross-check of the result before its time is printed:

* ``read_dataset`` of 100,000 JSONL samples (target: under 30 s; about 2 s idle).
* ``evaluate`` of 100,000 saved outputs with exact-match, contains and rouge-l (under 30 s).
* regex over a 50,001-character subject with the patterns that make a backtracking engine
  take exponential time, ``(a+)+$`` and ``(a|aa)*b`` (under 2 s: the engine is linear).
* a system under test that sleeps 50 ms, 12 calls at ``concurrency=3``: the ideal is
  4 rounds, 0.2 s (target under 0.6 s, the serial time).
* a save into a store file another process holds, ``Store(timeout=0.5)``: the busy error
  comes after the timeout, not when the holder lets go 2 s later (target under 1.9 s).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import polars as pl
from _common import machine

import evalframe as ef
from evalframe.store import Store, StoreBusyError

N = 100_000


def _timed(fn: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def _row(name: str, seconds: float, target: float) -> None:
    verdict = "met" if seconds < target else "MISSED"
    print(f"| {name} | {seconds:.2f} | < {target:g} | {verdict} |")


def read_100k(tmp: Path) -> None:
    path = tmp / "many.jsonl"
    path.write_text(
        "".join(
            f'{{"id": "s{i}", "input": {{"question": "What is {i} + 1?"}}, '
            f'"expected_output": {json.dumps(str(i + 1)) if i % 2 else [i, i + 1]}}}\n'
            for i in range(N)
        ),
        encoding="utf-8",
    )
    seconds, ds = _timed(lambda: ef.read_dataset(path))
    assert isinstance(ds, pl.DataFrame)
    assert ds.height == N
    _row("read_dataset, 100,000 JSONL samples", seconds, 30)


def evaluate_100k() -> None:
    ds = ef.Dataset.from_frame(
        pl.DataFrame(
            {
                "sample_id": [f"s{i}" for i in range(N)],
                "input": ['{"question":"q"}'] * N,
                "expected_output": [f"answer number {i % 97}" for i in range(N)],
            }
        ),
        name="big",
    )
    outputs = pl.DataFrame(
        {
            "sample_id": [f"s{i}" for i in range(N)],
            "actual_output": [f"the answer number {i % 89}" for i in range(N)],
        }
    )
    seconds, run = _timed(
        lambda: ef.evaluate(ds, outputs=outputs, metrics=["exact-match", "contains", "rouge-l"])
    )
    assert isinstance(run, ef.Run)
    assert run.scores.height == 3 * N
    assert run.failures.height == 0
    _row("evaluate, 100,000 outputs x (exact-match, contains, rouge-l)", seconds, 30)


def pathological_regex() -> None:
    subject = "a" * 50_000 + "!"
    frame = pl.DataFrame(
        {
            "sample_id": ["s0", "s1"],
            "input": ['{"question":"q"}'] * 2,
            "expected_output": ["/(a+)+$/", "/(a|aa)*b/"],
        }
    )
    ds = ef.Dataset.from_frame(frame, name="regex")
    outputs = {"s0": subject, "s1": subject}
    seconds, run = _timed(lambda: ef.evaluate(ds, outputs=outputs, metrics=["regex"]))
    assert isinstance(run, ef.Run)
    assert run.scores.get_column("score").to_list() == [0.0, 0.0]
    _row("regex, (a+)+$ and (a|aa)*b over 50,001 characters", seconds, 2)


def concurrent_system() -> None:
    ds = ef.Dataset.from_records(
        [{"id": f"q{i}", "input": {"question": str(i)}, "expected_output": "x"} for i in range(3)],
        name="concurrency",
    )
    peak, active, lock = 0, 0, threading.Lock()

    def system(inp: dict[str, str]) -> str:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        time.sleep(0.05)
        with lock:
            active -= 1
        return "x"

    seconds, run = _timed(
        lambda: ef.evaluate(
            ds, system=system, metrics=["contains"], repetitions=4, concurrency=3, progress=False
        )
    )
    assert isinstance(run, ef.Run)
    assert run.frame.height == 12
    assert peak == 3
    _row("12 system calls of 50 ms at concurrency=3", seconds, 0.6)


HOLDER = textwrap.dedent(
    """
    import sys, time, duckdb
    con = duckdb.connect(sys.argv[1])
    print("holding", flush=True)
    time.sleep(2)
    con.close()
    """
)


def busy_store(tmp: Path) -> None:
    path = str(tmp / "held.duckdb")
    Store(path)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, path], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "holding"
    ds = ef.Dataset.from_records(
        [{"id": "q1", "input": {"question": "?"}, "expected_output": "x"}], name="busy"
    )
    run = ef.evaluate(ds, outputs={"q1": "x"}, metrics=["exact-match"])
    start = time.perf_counter()
    try:
        Store(path, timeout=0.5).save(run)
    except StoreBusyError:
        seconds = time.perf_counter() - start
    else:
        raise AssertionError("the save succeeded while another process held the file")
    finally:
        holder.communicate(timeout=30)
    _row("busy error from a held store, timeout=0.5 (holder lets go after 2 s)", seconds, 1.9)


def main() -> None:
    print(machine())
    print()
    print("| check | seconds | target | |")
    print("| --- | ---: | ---: | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        read_100k(Path(tmp))
        evaluate_100k()
        pathological_regex()
        concurrent_system()
        busy_store(Path(tmp))


if __name__ == "__main__":
    main()
