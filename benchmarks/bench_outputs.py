"""Reading saved outputs files: ``ef.read_outputs`` against what a user would write otherwise.

Run: ``.venv/bin/python benchmarks/bench_outputs.py [--rows N] [--repeat R]``

Three files of ``--rows`` outputs (default 200,000; answers of 15-215 characters, a latency
and a token count per line where the format carries them):

* JSONL, one ``{"id", "actual_output", "latency_ms", "prompt_tokens"}`` object per line:
  against ``pl.read_ndjson`` (Polars' own reader, no validation) and ``json.loads`` per line
  into a ``pl.DataFrame`` (the obvious Python);
* eval-harness's map form ``{"outputs": {id: output}}``: against ``json.load`` and a
  ``pl.DataFrame`` of its items;
* eval-harness's list form ``{"outputs": [{"id", "actual_output"}]}``: against ``json.load``
  and ``pl.DataFrame`` of its entries.

Every reader's frame is checked equal to evalframe's (same rows and values) before anything
is reported. evalframe validates as it reads (ids, types, repeats, lone surrogates) and
names the file and entry on an error; the others do not. Best and median of ``--repeat``
interleaved rounds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import polars as pl
from _common import best_time, machine

import evalframe as ef


def write_files(n: int, folder: Path) -> dict[str, Path]:
    answers = [f"The answer is {'x' * (i % 200)} ({i})" for i in range(n)]
    ids = [f"q{i}" for i in range(n)]
    lines = folder / "outputs.jsonl"
    with lines.open("w", encoding="utf-8") as f:
        for i, (sample_id, answer) in enumerate(zip(ids, answers, strict=True)):
            entry = {"id": sample_id, "actual_output": answer, "latency_ms": 10.0 + i % 97 / 4,
                     "prompt_tokens": 20 + i % 50}  # fmt: skip
            f.write(json.dumps(entry) + "\n")
    mapped = folder / "outputs.json"
    mapped.write_text(json.dumps({"outputs": dict(zip(ids, answers, strict=True))}))
    listed = folder / "list.json"
    entries = [{"id": i, "actual_output": a} for i, a in zip(ids, answers, strict=True)]
    listed.write_text(json.dumps({"outputs": entries}))
    return {"JSONL": lines, "map form": mapped, "list form": listed}


def python_jsonl(path: Path) -> pl.DataFrame:
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
    return pl.DataFrame(rows).rename({"id": "sample_id"})


def polars_jsonl(path: Path) -> pl.DataFrame:
    return pl.read_ndjson(path).rename({"id": "sample_id"})


def python_map(path: Path) -> pl.DataFrame:
    outputs = json.loads(path.read_text("utf-8"))["outputs"]
    return pl.DataFrame({"sample_id": list(outputs), "actual_output": list(outputs.values())})


def python_list(path: Path) -> pl.DataFrame:
    entries = json.loads(path.read_text("utf-8"))["outputs"]
    return pl.DataFrame(entries).rename({"id": "sample_id"})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    files = write_files(args.rows, Path(tempfile.mkdtemp(prefix="bench_outputs_")))
    cases: dict[str, dict[str, Callable[[], pl.DataFrame]]] = {
        "JSONL": {
            "evalframe read_outputs": lambda: ef.read_outputs(files["JSONL"]),
            "pl.read_ndjson": lambda: polars_jsonl(files["JSONL"]),
            "json.loads per line + pl.DataFrame": lambda: python_jsonl(files["JSONL"]),
        },
        "map form": {
            "evalframe read_outputs": lambda: ef.read_outputs(files["map form"]),
            "json.load + pl.DataFrame": lambda: python_map(files["map form"]),
        },
        "list form": {
            "evalframe read_outputs": lambda: ef.read_outputs(files["list form"]),
            "json.load + pl.DataFrame": lambda: python_list(files["list form"]),
        },
    }
    print(machine())
    for case, readers in cases.items():
        size = files[case].stat().st_size / 1e6
        times: dict[str, list[float]] = {name: [] for name in readers}
        frames: dict[str, pl.DataFrame] = {}
        for _ in range(args.repeat):
            for name, read in readers.items():
                seconds, frames[name] = best_time(read, repeat=1)
                times[name].append(seconds)
        ours = frames["evalframe read_outputs"]
        for name, frame in frames.items():
            if not frame.select(ours.columns).equals(ours):
                raise SystemExit(f"{case}: {name} read different rows")
        print(f"\n{case}: {args.rows:,} outputs, {size:.1f} MB")
        print(f"{'reader':<36} {'best s':>7} {'x':>6} {'median s':>9} {'x':>6}")
        best = min(times["evalframe read_outputs"])
        median = statistics.median(times["evalframe read_outputs"])
        for name, ts in times.items():
            print(
                f"{name:<36} {min(ts):>7.3f} {min(ts) / best:>5.1f}x "
                f"{statistics.median(ts):>9.3f} {statistics.median(ts) / median:>5.1f}x"
            )


if __name__ == "__main__":
    main()
