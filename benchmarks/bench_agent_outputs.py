"""Agents and RAG outputs from files: trajectory metrics end to end, and reading saved outputs
that carry contexts, trajectories or turns.

Run from the repository root (files are generated with ``--seed`` into a temporary folder):

    .venv/bin/python benchmarks/bench_agent_outputs.py                 # both parts
    .venv/bin/python benchmarks/bench_agent_outputs.py --part metrics  # end to end only
    .venv/bin/python benchmarks/bench_agent_outputs.py --part read     # reading only

``metrics``: ``--episodes`` agent episodes (default 50,000; 1-30 tool calls each, 20 tools,
arguments ``{id, mode}``, 5 % of calls failed), their expectations under
``metadata.trajectory`` in a JSONL dataset and their trajectories in eval-harness's list form
of saved outputs. evalframe: ``read_outputs`` + ``read_dataset`` + ``evaluate`` with
eval-harness's seven trajectory metrics. Beside it, the plain per-episode loop a user would
write: ``json`` reads both files, and a Python function computes the seven scores. The two
are checked equal on every (episode, metric) before any time is printed.

``read``: ``--outputs`` saved outputs (default 50,000) carrying ``contexts`` (5 passages of
about 300 characters), a ``trajectory`` (as above) or ``turns`` (2-6 turns), each in JSONL,
the list form and Parquet twice (contexts as Parquet lists, trajectories and turns as JSON
text columns; and "Parquet structs", the entries as Arrow writes Python's dicts: structs and
lists of structs), read by ``read_outputs`` against ``json.loads`` of the same file (Parquet:
``pyarrow``'s table as Python objects, its JSON text cells through ``json.loads``). Every
frame is checked equal to the exact reader's first. (The map form holds only texts.) Then
the same for ``--small`` outputs per file (default 2,000; under 4 MiB) in the same process,
with a new process's first read of each file beside them (wall and CPU time).

Interleaved rounds, best and median of ``--repeat``; the load average is printed with each
part (the machine is shared). ``metrics`` gives wall time and CPU time (``time.process_time``:
every thread of the process, so evalframe's second thread counts in full).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import polars as pl
from _common import machine

import evalframe as ef
from evalframe.core import _outputs
from evalframe.metrics._arguments import loose_subset

TOOLS = [f"tool_{i:02d}" for i in range(20)]
SEVEN = [
    "tool-called",
    "tool-not-called",
    "tool-called-with",
    "tool-call-order",
    "steps-below",
    "no-pending-approvals",
    "approval-gated",
]
_WORDS_TEXT = (
    "the of and to in is that for it as was with be by on not this are or from at which "
    "refund order days policy account payment shipping support"
)
WORDS = _WORDS_TEXT.split(" ")


def _calls(rng: random.Random) -> list[dict[str, Any]]:
    calls = []
    for _ in range(rng.randint(1, 30)):
        call: dict[str, Any] = {
            "name": rng.choice(TOOLS),
            "arguments": {"id": rng.randint(0, 50), "mode": rng.choice(["a", "b"])},
        }
        if rng.random() < 0.05:
            call["error"] = "timeout"
        calls.append(call)
    return calls


def episode_files(n: int, seed: int, folder: Path) -> tuple[Path, Path]:
    """A JSONL dataset (expectations under metadata.trajectory) and list-form saved outputs
    (trajectory blocks) of ``n`` episodes."""
    rng = random.Random(seed)
    dataset, outputs = folder / "agents.jsonl", folder / "agents_outputs.json"
    entries = []
    with dataset.open("w", encoding="utf-8") as lines:
        for i in range(n):
            calls = _calls(rng)
            names = [c["name"] for c in calls]
            expected = rng.sample(names, min(len(names), rng.randint(1, 4)))
            spec = rng.choice(calls)
            expect = {
                "tools": expected,
                "forbidden_tools": rng.sample(TOOLS, 2),
                "tool_arguments": [
                    {"tool": spec["name"], "arguments": {"id": str(spec["arguments"]["id"])}}
                ],
                "order": expected,
                "max_steps": rng.randint(5, 30),
                "requires_approval": ["pay"],
            }
            sample = {"id": f"s{i}", "input": {"question": f"task {i}"},
                      "expected_output": "done", "metadata": {"trajectory": expect}}  # fmt: skip
            lines.write(json.dumps(sample) + "\n")
            trajectory = {
                "tool_calls": calls,
                "finish_reason": "stop",
                "approvals": ["pay"] if rng.random() < 0.8 else [],
                "pending_approvals": int(rng.random() < 0.1),
            }
            entries.append({"id": f"s{i}", "actual_output": "done", "trajectory": trajectory})
    outputs.write_text(json.dumps({"outputs": entries}), encoding="utf-8")
    return dataset, outputs


def _fraction(met: int, total: int) -> float:
    return 1.0 if total == 0 else round(met / total, 6)


def _subsequence(expected: list[str], names: list[str]) -> bool:
    it = iter(names)
    return all(any(n == e for n in it) for e in expected)


def loop(dataset: Path, outputs: Path) -> dict[tuple[str, str], float]:
    """The seven scores of every episode, the plain way: json, dicts and a Python loop."""
    samples = {}
    with dataset.open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                sample = json.loads(line)
                samples[sample["id"]] = sample
    scores = {}
    for entry in json.loads(outputs.read_text(encoding="utf-8"))["outputs"]:
        expect = samples[entry["id"]]["metadata"]["trajectory"]
        trajectory = entry["trajectory"]
        calls = trajectory["tool_calls"]
        names = [c["name"] for c in calls]
        called = set(names)
        specs = expect["tool_arguments"]
        matched = [
            any(
                c["name"] == s["tool"] and loose_subset(s["arguments"], c["arguments"])
                for c in calls
            )
            for s in specs
        ]
        steps = trajectory.get("steps", len(calls))
        limit = expect["max_steps"]
        forbidden, approvals = expect["forbidden_tools"], trajectory["approvals"]
        row = {
            "tool-called": _fraction(
                sum(t in called for t in expect["tools"]), len(expect["tools"])
            ),
            "tool-not-called": _fraction(sum(t not in called for t in forbidden), len(forbidden)),
            "tool-called-with": _fraction(sum(matched), len(matched)),
            "tool-call-order": float(_subsequence(expect["order"], names)),
            "steps-below": 1.0 if limit < 1 else float(steps <= limit),
            "no-pending-approvals": float(trajectory.get("pending_approvals", 0) == 0),
            "approval-gated": _fraction(
                sum(a in approvals for a in expect["requires_approval"]),
                len(expect["requires_approval"]),
            ),
        }
        for metric, score in row.items():
            scores[(entry["id"], metric)] = score
    return scores


def evalframe_run(dataset: Path, outputs: Path) -> tuple[dict[str, tuple[float, float]], ef.Run]:
    """The run, and each step's (wall, CPU) seconds (CPU: every thread of the process)."""
    times = {}
    clock = _Clock()
    saved = ef.read_outputs(outputs)
    times["read_outputs"] = clock.lap()
    ds = ef.read_dataset(dataset)
    times["read_dataset"] = clock.lap()
    run = ef.evaluate(ds, outputs=saved, metrics=SEVEN, progress=False)
    times["evaluate"] = clock.lap()
    times["total"] = (sum(w for w, _ in times.values()), sum(c for _, c in times.values()))
    return times, run


class _Clock:
    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def lap(self) -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        lap = (wall - self.wall, cpu - self.cpu)
        self.wall, self.cpu = wall, cpu
        return lap


def _load() -> str:
    return "load average " + ", ".join(f"{x:.1f}" for x in os.getloadavg())


def metrics_part(args: argparse.Namespace, folder: Path) -> None:
    dataset, outputs = episode_files(args.episodes, args.seed, folder)
    reference = loop(dataset, outputs)
    _, run = evalframe_run(dataset, outputs)  # also compiles what it needs, once
    got = run.scores.select("sample_id", "metric", "score", "error")
    assert got.get_column("error").null_count() == got.height, "unexpected metric errors"
    ours = {(s, m): v for s, m, v, _ in got.iter_rows()}
    assert ours.keys() == reference.keys()
    assert all(abs(ours[k] - v) < 1e-9 for k, v in reference.items()), "scores differ"
    rounds: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    loads = [os.getloadavg()[0]]
    for _ in range(args.repeat):
        times, _ = evalframe_run(dataset, outputs)
        for name, (wall, seconds) in times.items():
            rounds.setdefault(f"evalframe {name}", []).append(wall)
            cpu.setdefault(f"evalframe {name}", []).append(seconds)
        clock = _Clock()
        loop(dataset, outputs)
        wall, seconds = clock.lap()
        rounds.setdefault(_LOOP, []).append(wall)
        cpu.setdefault(_LOOP, []).append(seconds)
        loads.append(os.getloadavg()[0])
    mb = [path.stat().st_size / 1e6 for path in (dataset, outputs)]
    sizes = f"dataset {mb[0]:.1f} MB, outputs {mb[1]:.1f} MB"
    print(f"\nTrajectory metrics end to end: {args.episodes:,} episodes ({sizes}), {_load()}")
    print(f"1-minute load average over the rounds: {min(loads):.1f}-{max(loads):.1f}")
    print(f"scores agree on all {len(reference):,} (episode, metric) pairs")
    print("wall time:")
    _table(rounds, "evalframe total", _LOOP)
    print("CPU time (time.process_time, every thread):")
    _table(cpu, "evalframe total", _LOOP)


_LOOP = "per-episode loop (json + Python)"


def _table(rounds: dict[str, list[float]], ours: str, theirs: str) -> None:
    print(f"{'':44} {'best s':>8} {'median s':>9}")
    for name, ts in rounds.items():
        print(f"{name:44} {min(ts):>8.3f} {statistics.median(ts):>9.3f}")
    best = min(rounds[theirs]) / min(rounds[ours])
    median = statistics.median(rounds[theirs]) / statistics.median(rounds[ours])
    print(f"{ours} is {best:.1f}x (best) / {median:.1f}x (median) faster than {theirs}")


# --- reading outputs with nested fields -------------------------------------------------------


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def nested_entries(field: str, n: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    entries = []
    for i in range(n):
        entry: dict[str, Any] = {"id": f"q{i}", "actual_output": _text(rng, 30)}
        if field == "contexts":
            entry["contexts"] = [
                {"id": f"doc-{rng.randint(0, 99_999)}", "text": _text(rng, 60)} for _ in range(5)
            ]
        elif field == "trajectory":
            entry["trajectory"] = {"tool_calls": _calls(rng), "finish_reason": "stop"}
        else:
            entry["turns"] = [
                {"role": "user" if k % 2 == 0 else "assistant", "content": _text(rng, 20),
                 **({"latency_ms": round(rng.uniform(5, 900), 3)} if k % 2 else {})}
                for k in range(rng.randint(2, 6))
            ]  # fmt: skip
        entries.append(entry)
    return entries


def write_forms(field: str, entries: list[dict[str, Any]], folder: Path) -> dict[str, Path]:
    jsonl, listed, parquet = (folder / f"{field}{s}" for s in (".jsonl", ".json", ".parquet"))
    with jsonl.open("w", encoding="utf-8") as f:
        for entry in entries:
            f.write(json.dumps(entry) + "\n")
    listed.write_text(json.dumps({"outputs": entries}), encoding="utf-8")
    columns: dict[str, list[Any]] = {
        "id": [e["id"] for e in entries],
        "actual_output": [e["actual_output"] for e in entries],
    }
    if field == "contexts":  # Parquet's own lists where the shape allows: texts and ids
        columns["contexts"] = [[c["text"] for c in e["contexts"]] for e in entries]
    else:
        columns[field] = [json.dumps(e[field]) for e in entries]
    pl.DataFrame(columns).write_parquet(parquet)
    structs = folder / f"{field}.structs.parquet"  # the entries as Arrow writes dicts
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(entries), structs)
    return {"JSONL": jsonl, "list form": listed, "Parquet": parquet, "Parquet structs": structs}


def _python_read(form: str, field: str, path: Path) -> Callable[[], object]:
    if form == "JSONL":
        return lambda: [json.loads(line) for line in path.read_text("utf-8").split("\n") if line]
    if form == "list form":
        return lambda: json.loads(path.read_text("utf-8"))
    import pyarrow.parquet as pq

    def parquet() -> object:  # the rows, a JSON text column decoded as json.loads does
        rows = pq.read_table(path).to_pylist()
        if field != "contexts" and form == "Parquet":
            for row in rows:
                row[field] = json.loads(row[field])
        return rows

    return parquet


def read_part(args: argparse.Namespace, folder: Path, outputs: int) -> None:
    print(f"\nReading saved outputs with nested fields: {outputs:,} outputs each, {_load()}")
    fresh = outputs < args.outputs  # small files: also a new process's first read
    head = f"{'field, form':28} {'MB':>6} {'read_outputs s':>15} {'python s':>9} {'ratio':>7}"
    fresh_head = (
        f" {'fresh: read_outputs s':>21} {'python s':>9} {'ratio':>7}"
        f" {'CPU: read_outputs s':>19} {'python s':>9} {'ratio':>7}"
    )
    print(head + (fresh_head if fresh else ""))
    for field in ("contexts", "trajectory", "turns"):
        files = write_forms(field, nested_entries(field, outputs, args.seed), folder)
        for form, path in files.items():
            fast = ef.read_outputs(path)
            saved = _outputs._COMPILED_FROM, _outputs._WARM_FROM, _outputs._QUICK_UP_TO
            _outputs._COMPILED_FROM = _outputs._WARM_FROM = 1 << 62  # the exact reader
            _outputs._QUICK_UP_TO = -1
            try:
                os.environ["EVALFRAME_KERNELS"] = "interpreted"
                exact = _exact(path)
            finally:
                _outputs._COMPILED_FROM, _outputs._WARM_FROM, _outputs._QUICK_UP_TO = saved
                os.environ.pop("EVALFRAME_KERNELS")
            assert fast.equals(exact), f"{field}, {form}: the readers differ"
            ours, theirs = [], []
            python = _python_read(form, field, path)
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                ef.read_outputs(path)
                ours.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                python()
                theirs.append(time.perf_counter() - t0)
            size = path.stat().st_size / 1e6
            extra = ""
            if fresh:  # each side's best of --repeat new processes, alternated
                firsts = [(_first_read(path), _first_read(path, form)) for _ in range(args.repeat)]
                first, python_first = (min(f[k][0] for f in firsts) for k in (0, 1))
                cpu, python_cpu = (min(f[k][1] for f in firsts) for k in (0, 1))
                extra = (
                    f" {first:>21.3f} {python_first:>9.3f} {first / python_first:>6.2f}x"
                    f" {cpu:>19.3f} {python_cpu:>9.3f} {cpu / python_cpu:>6.2f}x"
                )
            print(
                f"{field + ', ' + form:28} {size:>6.1f} {min(ours):>15.3f} {min(theirs):>9.3f} "
                f"{min(ours) / min(theirs):>6.2f}x{extra}"
            )


_PYTHON_FIRST = {  # what a script reading the file with json (or pyarrow) times
    "JSONL": "[json.loads(line) for line in open(path, encoding='utf-8').read().split('\\n') "
    "if line]",
    "list form": "json.loads(open(path, encoding='utf-8').read())",
    "Parquet": "import pyarrow.parquet as pq\n"
    "rows = pq.read_table(path).to_pylist()\n"
    "for row in rows:\n"
    "    for k in ('trajectory', 'turns'):\n"
    "        row[k] = json.loads(row[k]) if k in row else None",
    "Parquet structs": "import pyarrow.parquet as pq\nrows = pq.read_table(path).to_pylist()",
}


def _first_read(path: Path, python: str | None = None) -> tuple[float, float]:
    """Seconds of ``read_outputs(path)``, wall and CPU, as the first read of a new process
    (evalframe imported before the clock starts): what a short script pays. With ``python``
    (a form), the same for that form's ``json`` read (``json`` imported before the clock,
    pyarrow after it, as evalframe imports it on its first Parquet read)."""
    import subprocess

    if python is None:
        head, body = "import evalframe as ef", "ef.read_outputs(path)"
    else:
        head, body = "import json", _PYTHON_FIRST[python]
    code = (
        f"import sys, time\n{head}\npath = sys.argv[1]\n"
        f"t, c = time.perf_counter(), time.process_time()\n{body}\n"
        "print(time.perf_counter() - t, time.process_time() - c)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True
    )
    wall, cpu = done.stdout.split()[-2:]
    return float(wall), float(cpu)


def _exact(path: Path) -> pl.DataFrame:
    from evalframe.core import _outputs_table

    columns = _outputs_table.outputs_columns
    _outputs_table.outputs_columns = lambda *_: None  # type: ignore[assignment]
    try:
        return ef.read_outputs(path)
    finally:
        _outputs_table.outputs_columns = columns


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--part",
        choices=["metrics", "read", "small", "both"],
        default="both",
        help="small: only the --small files (same process and new processes)",
    )
    parser.add_argument("--episodes", type=int, default=50_000)
    parser.add_argument("--outputs", type=int, default=50_000)
    parser.add_argument(
        "--small",
        type=int,
        default=2_000,
        help="then as many outputs per file (under 4 MiB), read by the same process; 0: none",
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(machine())
    with tempfile.TemporaryDirectory(prefix="bench_agent_outputs_") as tmp:
        if args.part in ("metrics", "both"):
            metrics_part(args, Path(tmp))
        if args.part in ("read", "both"):
            read_part(args, Path(tmp), args.outputs)
        if args.part in ("read", "small", "both") and args.small:
            read_part(args, Path(tmp), args.small)


if __name__ == "__main__":
    main()
