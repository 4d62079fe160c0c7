"""``import evalframe`` against ``import polars``: the median of fresh interpreters.

Each sample is a new Python process, so nothing is cached in ``sys.modules``; the OS file
cache is warm after the first round (both sides alike). Prints seconds and the ratio.

    python benchmarks/bench_import.py [--rounds 15]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

CODE = "import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"


def seconds(module: str) -> float:
    out = subprocess.run(
        [sys.executable, "-c", CODE.format(module=module)],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    seconds("evalframe")  # warm the file cache and numba's on-disk cache directory lookups
    polars, evalframe = [], []
    for _ in range(args.rounds):  # interleaved, so load changes hit both sides
        polars.append(seconds("polars"))
        evalframe.append(seconds("evalframe"))
    p, e = statistics.median(polars), statistics.median(evalframe)
    print(f"import polars     median {p:.3f} s over {args.rounds} fresh interpreters")
    print(f"import evalframe  median {e:.3f} s")
    print(f"ratio {e / p:.2f}x (target: at most 1.5x)")


if __name__ == "__main__":
    main()
