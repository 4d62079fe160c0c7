"""Speed of exact-match, contains and regex over 1,000,000 rows, and of the expressions inside.

The metrics are timed end to end through ``ef.score`` (type checks, error messages, details
and the scores frame included); the bare Polars expressions are timed beside them: ``==`` of
two String columns, ``str.contains(literal=True)`` with a per-row needle, and ``str.contains``
with a per-row regex drawn from a pool of distinct patterns (as in a dataset's samples), plus a
single shared pattern. Target: each metric under 1 s. Run from the repository root:

    .venv/bin/python benchmarks/bench_lexical.py
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import best_time, machine, pin_threads, text_pairs

_ARGS = argparse.ArgumentParser(description=__doc__.splitlines()[0])
_ARGS.add_argument("--rows", type=int, default=1_000_000)
_ARGS.add_argument("--patterns", type=int, default=1_000, help="distinct regex patterns")
_ARGS.add_argument("--naive-rows", type=int, default=5_000, help="rows for the naive per-row regex")
_ARGS.add_argument("--threads", type=int, default=os.cpu_count() or 1)
_ARGS.add_argument("--repeat", type=int, default=5)
_ARGS.add_argument("--seed", type=int, default=0)
ARGS = _ARGS.parse_args()
pin_threads(ARGS.threads)

import numpy as np  # noqa: E402
import polars as pl  # noqa: E402


def pattern(k: int) -> str:
    """The k-th of the distinct regex patterns: case-insensitive, with word boundaries."""
    return rf"(?i)\b(order|ref)[- #]?{k:04d}\b|\bdays?\s+\d+"


def frame() -> pl.DataFrame:
    """``ARGS.rows`` rows of (expected, actual) text, needles and patterns, from 20,000 pairs."""
    refs, cands = text_pairs(20_000, seed=ARGS.seed)
    rng = np.random.default_rng(ARGS.seed)
    pick = rng.integers(0, len(refs), ARGS.rows)
    base = pl.DataFrame({"expected_output": refs, "actual_output": cands})[pick]
    # Half the rows are exact copies, so == has work on both outcomes.
    same = pl.Series(rng.random(ARGS.rows) < 0.5)
    words = pl.col("expected_output").str.split(" ")
    patterns = [pattern(k) for k in range(ARGS.patterns)]
    return base.with_columns(
        pl.when(same).then(pl.col("expected_output")).otherwise(pl.col("actual_output"))
        .alias("actual_output"),
        # A needle of two consecutive words of the reference: found when the copy is exact.
        words.list.slice(2, 2).list.join(" ").alias("needle"),
        pl.Series("pattern", patterns)[rng.integers(0, ARGS.patterns, ARGS.rows)],
    )  # fmt: skip


def metric_frame(df: pl.DataFrame, expected: str) -> pl.DataFrame:
    """The evaluation frame a metric sees, with ``expected`` as the expected output."""
    n = df.height
    return df.select(
        pl.format("s{}", pl.int_range(n)).alias("sample_id"),
        pl.lit("{}").alias("input"),
        pl.col(expected).alias("expected_output"),
        pl.lit("string").alias("expected_type"),
        pl.lit("{}").alias("metadata"),
        pl.lit([], pl.List(pl.String)).alias("tags"),
        pl.lit("h").alias("row_hash"),
        pl.col("actual_output"),
    )


def time_metrics(df: pl.DataFrame) -> None:
    import evalframe as ef

    regex_df = df.with_columns(pl.format("/{}/", pl.col("pattern")).alias("pattern"))
    cases = {
        "exact-match": metric_frame(df, "expected_output"),
        "contains": metric_frame(df, "needle"),
        f"regex ({ARGS.patterns:,} distinct /pattern/ values)": metric_frame(regex_df, "pattern"),
    }
    print(f"{'metric, ef.score end to end':<62} {'seconds':>8} {'rows/s':>12}  target < 1 s")
    for name, data in cases.items():
        metric = ef.metrics.get(name.split(" ")[0])
        ef.score(data.head(1000), [metric])  # warm-up
        seconds, _ = best_time(lambda d=data, m=metric: ef.score(d, [m]), repeat=ARGS.repeat)
        status = "OK" if seconds * 1_000_000 / data.height < 1 else "SLOW"
        print(f"{name:<62} {seconds:>8.3f} {data.height / seconds:>12,.0f}  {status}")
    print()


def main() -> None:
    print(f"machine: {machine()}; POLARS_MAX_THREADS={ARGS.threads}; Polars {pl.__version__}")
    t0 = time.perf_counter()
    df = frame()
    print(f"data: {df.height:,} rows, generated in {time.perf_counter() - t0:.1f} s\n")
    time_metrics(df)
    actual = pl.col("actual_output")
    naive_rows = min(ARGS.naive_rows, df.height)
    cases = {
        "exact-match: ==": (df, actual == pl.col("expected_output")),
        "contains: str.contains(literal=True), per-row needle": (
            df,
            actual.str.contains(pl.col("needle"), literal=True),
        ),
        f"regex: per-row pattern, .over(pattern) ({ARGS.patterns:,} distinct)": (
            df,
            actual.str.contains(pl.col("pattern").first()).over("pattern"),
        ),
        f"regex: per-row pattern, naive, first {naive_rows:,} rows": (
            df.head(naive_rows),
            actual.str.contains(pl.col("pattern"), strict=False),
        ),
        "regex: str.contains, one of those patterns for all rows": (
            df,
            actual.str.contains(pattern(0)),
        ),
    }
    print(f"{'expression':<62} {'seconds':>8} {'rows/s':>12} {'s / 1M rows':>12}  target < 1 s")
    for name, (data, expr) in cases.items():
        repeat = 1 if data.height < df.height else ARGS.repeat
        seconds, _ = best_time(lambda d=data, e=expr: d.select(e.alias("m")), repeat=repeat)
        per_million = seconds * 1_000_000 / data.height
        status = "OK" if per_million < 1 else "SLOW"
        print(
            f"{name:<62} {seconds:>8.3f} {data.height / seconds:>12,.0f} {per_million:>12.3f}"
            f"  {status}"
        )
    print(
        "\nWith a pattern column Polars compiles the regex again for every row (a pattern with"
        "\n(?i) and \\b takes about 0.5 ms to compile); .over(pattern) compiles each distinct"
        "\npattern once, and those compilations are most of its lead over the one-pattern line."
    )


if __name__ == "__main__":
    main()
