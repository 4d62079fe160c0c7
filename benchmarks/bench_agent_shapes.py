"""Saved outputs and datasets in shapes other than ``bench_agent_outputs.py``'s: the files a
system's own code writes, with computed floats and Parquet written from dicts.

Each file is read by evalframe against the plain way (``json.loads`` per line or of the
whole file; ``pyarrow``'s rows as Python objects for Parquet), in the same process, after a
first read that also checks evalframe's frame equals the exact reader's. Shapes (``--rows``
each, seeded):

- ``costs``: outputs with three ``{id, text}`` contexts and the operational columns, a
  ``cost_usd`` and ``latency_ms`` as Python writes computed floats (16-17 digits);
- ``scored calls``: trajectories of 1-12 calls whose arguments hold a computed float and
  whose results are maps with one;
- ``names only``: trajectories whose calls are a list of names (eval-harness's short form);
- ``dicts as Parquet``: trajectories, turns and ``{id, text}`` contexts written to Parquet
  by ``pyarrow.Table.from_pylist`` (structs and lists of structs);
- ``dataset``: a JSONL dataset whose input and metadata hold computed floats
  (``read_dataset`` against ``json.loads`` per line).

Run from the repository root:

    .venv/bin/python benchmarks/bench_agent_shapes.py [--rows 50000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine
from bench_agent_outputs import TOOLS, WORDS, _exact, _python_read

import evalframe as ef
from evalframe.core import _dataset, _outputs


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def _costs(rng: random.Random, i: int) -> dict[str, Any]:
    return {
        "id": f"q{i}",
        "actual_output": _text(rng, 20),
        "contexts": [{"id": f"doc-{rng.randint(0, 999)}", "text": _text(rng, 40)}] * 3,
        "latency_ms": rng.uniform(50, 2000),
        "cost_usd": rng.random() / 100,
        "prompt_tokens": rng.randint(10, 900),
    }


def _scored_calls(rng: random.Random, i: int) -> dict[str, Any]:
    calls = [
        {
            "name": rng.choice(TOOLS),
            "arguments": {"query": _text(rng, 4), "threshold": rng.random()},
            "result": {"hits": rng.randint(0, 9), "score": rng.random()},
            "latency_ms": rng.uniform(1, 900),
        }
        for _ in range(rng.randint(1, 12))
    ]
    return {"id": f"q{i}", "actual_output": "done", "trajectory": {"tool_calls": calls}}


def _names_only(rng: random.Random, i: int) -> dict[str, Any]:
    calls = [rng.choice(TOOLS) for _ in range(rng.randint(1, 20))]
    return {"id": f"q{i}", "actual_output": "done", "trajectory": {"tool_calls": calls}}


def _dicts(rng: random.Random, i: int) -> dict[str, Any]:
    entry = _scored_calls(rng, i)
    entry["turns"] = [
        {"role": "user", "content": _text(rng, 10)},
        {"role": "assistant", "content": _text(rng, 10), "latency_ms": rng.uniform(5, 900)},
    ]
    entry["contexts"] = [{"id": f"doc-{rng.randint(0, 999)}", "text": _text(rng, 30)}] * 2
    return entry


def outputs_files(rows: int, seed: int, folder: Path) -> dict[str, tuple[Path, str]]:
    """Each shape's file and its form (as ``bench_agent_outputs._python_read`` names it)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = {}
    for shape, make in (("costs", _costs), ("scored calls", _scored_calls),
                        ("names only", _names_only)):  # fmt: skip
        rng = random.Random(seed)
        entries = [make(rng, i) for i in range(rows)]
        jsonl, listed = folder / f"{shape}.jsonl", folder / f"{shape}.json"
        jsonl.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
        listed.write_text(json.dumps({"outputs": entries}), encoding="utf-8")
        files[f"{shape}, JSONL"] = (jsonl, "JSONL")
        files[f"{shape}, list form"] = (listed, "list form")
    rng = random.Random(seed)
    parquet = folder / "dicts.parquet"
    pq.write_table(pa.Table.from_pylist([_dicts(rng, i) for i in range(rows)]), parquet)
    files["dicts as Parquet"] = (parquet, "Parquet structs")
    return files


def dataset_file(rows: int, seed: int, folder: Path) -> Path:
    rng = random.Random(seed)
    path = folder / "dataset.jsonl"
    with path.open("w", encoding="utf-8") as lines:
        for i in range(rows):
            sample = {"id": f"s{i}", "input": {"question": _text(rng, 8)},
                      "expected_output": "done",
                      "metadata": {"difficulty": rng.random(), "tags": ["agents"],
                                   "trajectory": {"tools": [rng.choice(TOOLS)]}}}  # fmt: skip
            lines.write(json.dumps(sample) + "\n")
    return path


def _exact_outputs(path: Path) -> object:
    saved = _outputs._COMPILED_FROM, _outputs._WARM_FROM, _outputs._QUICK_UP_TO
    _outputs._COMPILED_FROM = _outputs._WARM_FROM = 1 << 62
    _outputs._QUICK_UP_TO = -1
    os.environ["EVALFRAME_KERNELS"] = "interpreted"
    try:
        return _exact(path)
    finally:
        _outputs._COMPILED_FROM, _outputs._WARM_FROM, _outputs._QUICK_UP_TO = saved
        os.environ.pop("EVALFRAME_KERNELS")


def _exact_dataset(path: Path) -> ef.Dataset:
    saved = _dataset._COMPILED_FROM
    _dataset._COMPILED_FROM = 1 << 62
    try:
        return ef.read_dataset(path)
    finally:
        _dataset._COMPILED_FROM = saved


def _reader(path: Path) -> Callable[[], object]:
    return lambda: ef.read_outputs(path)


def _cpu(fn: Callable[[], object]) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(machine())
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{args.rows:,} rows per file, load average {load}; CPU seconds, best of {args.repeat}")
    print(f"{'shape, form':28} {'MB':>6} {'evalframe s':>12} {'python s':>9} {'ratio':>7}")
    with tempfile.TemporaryDirectory(prefix="bench_agent_shapes_") as tmp:
        folder = Path(tmp)
        contenders: dict[str, tuple[Path, Callable[[], object], Callable[[], object]]] = {}
        for name, (path, form) in outputs_files(args.rows, args.seed, folder).items():
            fast = ef.read_outputs(path)
            exact = _exact_outputs(path)
            assert isinstance(exact, type(fast)), f"{name}: the exact reader failed"
            assert fast.equals(exact), f"{name}: the readers differ"
            contenders[name] = (path, _reader(path), _python_read(form, "trajectory", path))
        dataset = dataset_file(args.rows, args.seed, folder)
        assert ef.read_dataset(dataset).equals(_exact_dataset(dataset)), "the readers differ"
        contenders["dataset (read_dataset), JSONL"] = (
            dataset,
            lambda: ef.read_dataset(dataset),
            _python_read("JSONL", "", dataset),
        )
        for name, (path, ours, theirs) in contenders.items():
            a = min(_cpu(ours) for _ in range(args.repeat))
            b = min(_cpu(theirs) for _ in range(args.repeat))
            size = path.stat().st_size / 1e6
            print(f"{name:28} {size:>6.1f} {a:>12.3f} {b:>9.3f} {a / b:>6.2f}x", flush=True)


if __name__ == "__main__":
    main()
