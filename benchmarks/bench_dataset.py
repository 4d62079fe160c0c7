"""Building a dataset from records: ``Dataset.from_records`` next to ``pl.DataFrame``.

Run: ``.venv/bin/python benchmarks/bench_dataset.py [--samples N] [--rounds R]`` (default
1,000,000 records, 3 interleaved rounds, best of each). The records are what a user's loader
yields: an id, an input map with a question, a string expected output, and metadata with
tags and a retrieval cutoff on a third of them. ``pl.DataFrame(records)`` is the floor: it
reads the same records into struct columns but checks nothing, hashes nothing and writes no
JSON. The script checks that both frames hold the same samples before printing any time.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import machine  # noqa: I001  # before Polars: nothing to pin, but keeps the order

import polars as pl

from evalframe.core._dataset import Dataset

_WORDS = [
    "refund",
    "window",
    "order",
    "shipping",
    "days",
    "account",
    "invoice",
    "payment",
    "policy",
    "return",
    "item",
    "customer",
    "support",
    "price",
    "product",
    "delivery",
    "address",
    "warranty",
    "cancel",
    "subscription",
    "plan",
    "upgrade",
]


def make_records(n: int, seed: int = 7) -> list[dict[str, Any]]:
    """``n`` seeded sample records; a third carry metadata with tags and ``k``."""
    rng = random.Random(seed)
    records: list[dict[str, Any]] = []
    for i in range(n):
        words = " ".join(rng.choices(_WORDS, k=rng.randint(4, 14)))
        record: dict[str, Any] = {
            "id": f"q{i:07d}",
            "input": {"question": f"What about the {words}?"},
            "expected_output": f"{rng.randint(1, 90)} days",
        }
        if i % 3 == 0:
            record["metadata"] = {"tags": rng.sample(_WORDS[:6], 2), "k": rng.randint(1, 10)}
        records.append(record)
    return records


def timed(fn: Any) -> tuple[float, Any]:
    gc.collect()
    started = time.perf_counter()
    result = fn()
    return time.perf_counter() - started, result


def records_expected(records: list[dict[str, Any]]) -> list[str]:
    return [record["expected_output"] for record in records]


def cross_check(records: list[dict[str, Any]], frame: pl.DataFrame, ds: Dataset) -> None:
    """Both frames hold the records, in order: ids, questions, expected outputs, tags."""
    assert frame.height == ds.height == len(records)
    assert frame.get_column("id").to_list() == ds.get_column("sample_id").to_list()
    questions = [json.loads(text)["question"] for text in ds.get_column("input")]
    assert questions == frame.get_column("input").struct.field("question").to_list()
    assert ds.get_column("expected_output").to_list() == records_expected(records)
    assert frame.get_column("expected_output").to_list() == records_expected(records)
    tags = frame.get_column("metadata").struct.field("tags").fill_null([])
    assert tags.to_list() == ds.get_column("tags").to_list()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    records = make_records(args.samples)
    print(f"machine: {machine()}, load average {os.getloadavg()[0]:.1f}")
    print(f"Polars {pl.__version__}; {len(records):,} records")

    polars_times: list[float] = []
    evalframe_times: list[float] = []
    for _ in range(args.rounds):  # interleaved, so load changes hit both alike
        seconds, frame = timed(lambda: pl.DataFrame(records))
        polars_times.append(seconds)
        seconds, ds = timed(lambda: Dataset.from_records(records, name="bench"))
        evalframe_times.append(seconds)
    cross_check(records, frame, ds)

    best_polars, best_evalframe = min(polars_times), min(evalframe_times)
    print(f"pl.DataFrame(records)          best {best_polars:6.2f} s  all {polars_times}")
    print(f"Dataset.from_records(records)  best {best_evalframe:6.2f} s  all {evalframe_times}")
    print(f"ratio from_records / pl.DataFrame: {best_evalframe / best_polars:.2f}x (target <= 3x)")


if __name__ == "__main__":
    main()
