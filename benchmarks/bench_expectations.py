"""Speed of decoding ``metadata.trajectory`` expectations, beside the decoder of another commit.

``decode_expectations`` (``core/_expectations_compiled.py``) reads the expectations the agent
metrics score against from each distinct metadata text. This times it on ``bench_agent.py``'s
metadata (100,000 texts, one per episode, 37 MB) against the same function as it was at
``--against`` (by default the commit before the decoder was rewritten), loaded from git
beside today's; the two frames are checked equal first. Interleaved rounds, wall and CPU time
(every thread: the decoders run in two halves on two threads), then each decoder's one-thread
pass over the first half (its throughput per thread). The other commit's kernels compile
afresh on each run (code loaded from git has no file for numba's cache): allow a minute. Run
from the repository root:

    .venv/bin/python benchmarks/bench_expectations.py
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine

_BEFORE = "ac20af4"  # the decoder with its 43-row int64 table, before views were written
_PATH = "evalframe/core/_expectations_compiled.py"


def _decoder_at(rev: str) -> Any:
    """``core/_expectations_compiled`` as it was at ``rev``, loaded from git."""
    source = subprocess.run(
        ["git", "show", f"{rev}:{_PATH}"],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parent,
    ).stdout
    module = types.ModuleType(f"expectations_at_{rev}")
    exec(compile(source, f"{rev}:{_PATH}", "exec"), module.__dict__)
    return module


def _clock_pass(module: Any) -> list[float]:
    """Wrap ``module``'s compiled pass (``walk`` today, ``_decode`` before) to add up the
    seconds spent in it into the returned list's one item."""
    spent = [0.0]
    name = "walk" if hasattr(module, "walk") else "_decode"
    kernel = getattr(module, name)

    def clocked(*args: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return kernel(*args)
        finally:
            spent[0] += time.perf_counter() - t0

    setattr(module, name, clocked)
    return spent


def _timed(fn: Callable[..., Any], *args: Any) -> tuple[float, float]:
    t0, c0 = time.perf_counter(), time.process_time()
    fn(*args)
    return time.perf_counter() - t0, time.process_time() - c0


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--against", default=_BEFORE, help="the commit to compare with")
    args = parser.parse_args()
    sys.argv[1:] = ["--episodes", "1"]  # bench_agent reads its own options on import
    import bench_agent
    import polars as pl

    from evalframe.core import _expectations_compiled as today

    texts = pl.Series(
        "metadata",
        [json.dumps({"trajectory": e}) for e, _ in bench_agent.episodes(args.episodes, args.seed)],
    )
    size = int(texts.str.len_bytes().sum() or 0)
    before = _decoder_at(args.against)
    print(machine())
    print(f"{texts.len():,} metadata texts, {size / 1e6:.1f} MB")

    def decode(module: Any, part: pl.Series) -> pl.DataFrame:
        module._LAST.clear()  # each round decodes afresh
        return module.decode_expectations(part)  # type: ignore[no-any-return]

    got = decode(today, texts)
    assert got.equals(decode(before, texts)), "the decoders disagree"
    assert got.get_column("exact").all()
    print("frames equal")
    half = texts.slice(0, texts.len() // 2)
    contenders = {"today": today, args.against: before}
    in_pass = {name: _clock_pass(module) for name, module in contenders.items()}
    load = [os.getloadavg()[0]]
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in contenders}
    one: dict[str, list[float]] = {name: [] for name in contenders}
    passes: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(args.repeat):
        for name, module in contenders.items():
            times[name].append(_timed(decode, module, texts))
            in_pass[name][0] = 0.0
            t0 = time.perf_counter()
            module._decode_texts(half)
            one[name].append(time.perf_counter() - t0)
            passes[name].append(in_pass[name][0])
        load.append(os.getloadavg()[0])
    print(f"1-minute load average {min(load):.1f}-{max(load):.1f}; best / median of {args.repeat}")
    for name in contenders:
        wall = sorted(w for w, _ in times[name])
        cpu = sorted(c for _, c in times[name])
        whole, kernel = min(one[name]), min(passes[name])
        print(
            f"{name:>8}: decode_expectations wall {wall[0] * 1e3:.0f} / "
            f"{statistics.median(wall) * 1e3:.0f} ms, CPU {cpu[0] * 1e3:.0f} / "
            f"{statistics.median(cpu) * 1e3:.0f} ms; one thread over half the texts "
            f"{whole * 1e3:.1f} ms, of which the compiled pass {kernel * 1e3:.1f} ms "
            f"({size / 2 / kernel / 1e6:.0f} MB/s)"
        )
    new_cpu, old_cpu = (min(c for _, c in times[name]) for name in contenders)
    print(f"CPU today / {args.against}: {new_cpu / old_cpu:.2f} (best)")


if __name__ == "__main__":
    main()
