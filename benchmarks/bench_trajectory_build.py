"""Building the trajectory column from Python dicts, as a system returning ``{"output",
"trajectory"}`` (or ``ef.trajectory.record``) hands them over: ``agent_column`` against the
row-by-row parse it replaced.

The episodes are ``bench_agent.py``'s (1-30 tool calls with ``{id, mode}`` arguments, 5 % of
calls failed). Contenders, in interleaved rounds, their columns checked equal first:

- ``agent_column``: the batch read (orjson writes the values as one JSON array, marshal
  vouches for their types and finds NaN and infinities, the compiled pass reads the array);
- ``parse_trajectory`` row by row, then ``trajectory_series``: the exact parser today;
- the same two functions as they stood when issue 34 measured 9.2 s per 100,000 episodes
  (commit 0084278, read from git history; skipped where the repository has no history).

Run from the repository root:

    .venv/bin/python benchmarks/bench_trajectory_build.py --episodes 100000
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine

_ISSUE_TIME = "0084278"  # the last commit before the batch read


def _issue_time_parser() -> types.ModuleType | None:
    """``core/_trajectory.py`` as it stood at the issue's time, or None without git history."""
    try:
        source = subprocess.run(
            ["git", "show", f"{_ISSUE_TIME}:evalframe/core/_trajectory.py"],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).resolve().parent,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    module = types.ModuleType("trajectory_at_issue_time")
    exec(compile(source, f"{_ISSUE_TIME}:_trajectory.py", "exec"), module.__dict__)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    sys.argv[1:] = ["--episodes", "1"]  # bench_agent reads its own options on import
    import bench_agent

    from evalframe.core._trajectory import parse_trajectory, trajectory_series
    from evalframe.core._turns import _COLD_FROM, agent_column

    values = [t for _, t in bench_agent.episodes(args.episodes, args.seed)]
    calls = sum(len(t["tool_calls"]) for t in values)
    agent_column("trajectory", values[:_COLD_FROM], str)  # load the compiled pass: not timed

    def build() -> Any:
        column, errors = agent_column("trajectory", values, lambda i: f"episode {i}")
        assert not errors
        return column

    contenders: dict[str, Callable[[], Any]] = {
        "agent_column (the batch read)": build,
        "parse_trajectory row by row, today": lambda: trajectory_series(
            [parse_trajectory(t, "bench") for t in values]
        ),
    }
    old = _issue_time_parser()
    if old is not None:
        contenders[f"parse_trajectory row by row, at {_ISSUE_TIME}"] = lambda: (
            old.trajectory_series([old.parse_trajectory(t, "bench") for t in values])
        )
    rounds: dict[str, list[float]] = {name: [] for name in contenders}
    results: dict[str, Any] = {}
    for _ in range(args.repeat):
        for name, fn in contenders.items():
            t0 = time.perf_counter()
            results[name] = fn()
            rounds[name].append(time.perf_counter() - t0)
    first, *others = results.values()
    assert all(first.equals(other) for other in others), "the columns differ"
    print(machine())
    print(
        f"{args.episodes:,} episodes, {calls:,} tool calls; best of {args.repeat} interleaved "
        f"rounds, load average {', '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )
    ours = min(next(iter(rounds.values())))
    for name, seconds in rounds.items():
        best = min(seconds)
        print(
            f"  {name:44} {best:7.2f} s  {args.episodes / best:>9,.0f} episodes/s  "
            f"{best / ours:5.1f}x"
        )


if __name__ == "__main__":
    main()
