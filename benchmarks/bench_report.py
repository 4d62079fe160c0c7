"""Report JSON at scale: scoring a run against building and writing its report JSON.

Run: ``.venv/bin/python benchmarks/bench_report.py [--samples N] [--rounds R]``

A dataset of N samples (default 100,000) of English-like text is scored with exact-match,
contains and rouge-l; then its report JSON is built and written to a file four ways (and
``run.report().to_json()``'s text built alone):

* ``run --format json --out``: ``evalframe.views._report_json.report_json_parts`` (what the
  CLI writes): the samples and per-row aggregates laid out from the frames by compiled passes,
  a slice of rows at a time, orjson for the rest;
* ``run.report().to_json()``: what a notebook writes (its samples still pending, so written
  from the frames as the CLI writes them), then written as text;
* ``Report.to_json_bytes`` of a report whose samples were all read (built as Python objects),
  written by orjson;
* ``json.dumps``: the same dict written by the standard library, as before orjson.

Before timing, the four outputs are checked to be the same bytes. Each writes a new file
(the previous round's is deleted before the clock starts: overwriting would add the freeing of
260 MB of page cache to whichever writer came next). Rounds are interleaved and the best of
each is printed, next to the evaluation's best, in wall time and in CPU time (every thread's,
which the machine's load disturbs less).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import machine, text_pairs

import evalframe as ef
from evalframe.views._report_json import report_json, report_json_parts


def dataset(n: int) -> tuple[ef.Dataset, dict[str, str]]:
    refs, cands = text_pairs(n, seed=7)
    records = [
        {"id": f"s{i}", "input": {"question": f"q{i}"}, "expected_output": refs[i],
         "metadata": {"tags": [f"topic-{i % 7}"] if i % 5 else []}}
        for i in range(n)
    ]  # fmt: skip
    outputs = {f"s{i}": cands[i] if i % 10 else refs[i] for i in range(n)}
    return ef.Dataset.from_records(records, name="bench"), outputs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    ds, outputs = dataset(args.samples)
    metrics = ["exact-match", "contains", "rouge-l"]
    ef.evaluate(ds, outputs=outputs, metrics=metrics)  # compile the kernels once
    target = Path(tempfile.mkdtemp()) / "report.json"

    def fast(run: ef.Run) -> int:
        with target.open("wb") as f:  # as `evalframe run --format json --out FILE` writes it
            f.writelines(report_json_parts(run))
        return target.stat().st_size

    def python(run: ef.Run) -> int:  # as from a notebook: the text, then a file
        return target.write_text(run.report().to_json(), encoding="utf-8")

    def text(run: ef.Run) -> int:  # the text alone, as a notebook holds it
        return len(run.report().to_json())

    def objects(run: ef.Run) -> int:  # every sample a Python object, written by orjson
        report = run.report()
        report.settle()
        return target.write_bytes(report.to_json_bytes())

    def stdlib(run: ef.Run) -> int:
        text = json.dumps(run.report(), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
        return target.write_bytes(text.encode("utf-8"))

    run = ef.evaluate(ds, outputs=outputs, metrics=metrics)
    reference = (json.dumps(run.report(), indent=2, ensure_ascii=False) + "\n").encode()
    assert report_json(run) == reference, "report_json differs from json.dumps"
    assert run.report().to_json_bytes() == reference, "Report.to_json differs from json.dumps"
    assert run.report().to_json().encode() == reference, "Report.to_json differs from json.dumps"
    settled = run.report()
    settled.settle()
    assert settled.to_json_bytes() == reference, "the report's objects differ from json.dumps"
    print(f"cross-check: the four writers give the same {len(reference):,} bytes")

    best: dict[str, float] = {}
    cpu: dict[str, float] = {}  # CPU time of every thread, which the load disturbs less

    def keep(name: str, start: float, start_cpu: float) -> None:
        best[name] = min(best.get(name, 1e9), time.perf_counter() - start)
        cpu[name] = min(cpu.get(name, 1e9), time.process_time() - start_cpu)

    for _ in range(args.rounds):
        start, start_cpu = time.perf_counter(), time.process_time()
        run = ef.evaluate(ds, outputs=outputs, metrics=metrics)
        keep("evaluate", start, start_cpu)
        writers = (
            ("fast", fast), ("text", text), ("python", python), ("objects", objects),
            ("stdlib", stdlib),
        )  # fmt: skip
        for name, write in writers:
            fresh = ef.evaluate(ds, outputs=outputs, metrics=metrics)  # no cached aggregates
            target.unlink(missing_ok=True)  # a new file each time, as a fresh checkout writes
            start, start_cpu = time.perf_counter(), time.process_time()
            write(fresh)
            keep(name, start, start_cpu)
    load = os.getloadavg()[0]
    print(f"{machine()}; load average {load:.1f}; {args.samples:,} samples x 3 metrics")
    evaluate = best["evaluate"]
    print(f"| step | seconds (best of {args.rounds}) | / evaluate | CPU seconds | CPU / evaluate |")
    print("| --- | ---: | ---: | ---: | ---: |")
    print(f"| evaluate (score the run) | {evaluate:.2f} | 1.0x | {cpu['evaluate']:.2f} | 1.0x |")
    for name, label in (
        ("fast", "report JSON, `run --format json --out` (`report_json_parts`), built and written"),
        ("text", "report JSON, `run.report().to_json()`, the `str` built (not written)"),
        ("python", "report JSON, `run.report().to_json()`, built and written"),
        ("objects", "report JSON, `run.report()` with every sample an object, orjson, written"),
        ("stdlib", "report JSON, `run.report()` + `json.dumps`, built and written"),
    ):
        ratio, cpu_ratio = best[name] / evaluate, cpu[name] / cpu["evaluate"]
        print(f"| {label} | {best[name]:.2f} | {ratio:.1f}x | {cpu[name]:.2f} | {cpu_ratio:.1f}x |")


if __name__ == "__main__":
    main()
