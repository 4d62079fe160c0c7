"""pii-leak: the built-in detector's rows/s over 1,000,000 outputs, Presidio's over 10,000, and
both engines' precision and recall on the detector corpus.

Run: ``.venv/bin/python benchmarks/bench_safety.py [--rows N] [--presidio-rows N]``

Outputs are seeded synthetic answers of 20 to 60 words (about 150 to 400 characters); one
in 20 carries one entity taken from the positives of ``tests/data/pii/corpus.json``, one in
20 a look-alike negative (a card failing Luhn, a clock time, a version number ...). The
built-in engine scores every row through ``ef.score`` (the whole metric, details included);
Presidio (``pii-leak(engine=presidio)``, which analyses one distinct text at a time) scores
the first ``--presidio-rows`` rows. Both must agree with the corpus labels on the rows they
share before anything is printed.

Precision and recall: every corpus text, scored per entity type by each engine (a positive
counts as found when an entity of its type covers its value's span; any entity reported on
a negative text is a false positive). Presidio is asked only for the types it shares with
the built-in detector.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import polars as pl
from _common import machine

import evalframe as ef
from evalframe.metrics._pii import ENTITY_TYPES, detect
from evalframe.metrics.safety import PRESIDIO_TYPES, presidio_detect

CORPUS = json.loads(
    (Path(__file__).parents[1] / "tests" / "data" / "pii" / "corpus.json").read_text("utf-8")
)
WORDS = [
    "the",
    "refund",
    "policy",
    "allows",
    "returns",
    "within",
    "thirty",
    "days",
    "of",
    "delivery",
    "please",
    "keep",
    "your",
    "receipt",
    "and",
    "contact",
    "support",
    "if",
    "the",
    "parcel",
    "arrived",
    "damaged",
    "our",
    "team",
    "answers",
    "every",
    "request",
    "within",
    "two",
    "business",
    "days",
    "the",
    "order",
    "total",
    "includes",
    "shipping",
    "and",
    "taxes",
]


def outputs(n: int, seed: int = 14) -> tuple[list[str], list[bool]]:
    rng = random.Random(seed)
    pos = [e for e in CORPUS if e["label"] == "positive"]
    neg = [e for e in CORPUS if e["label"] == "negative"]
    texts, leaks = [], []
    for i in range(n):
        words = [rng.choice(WORDS) for _ in range(rng.randint(20, 60))]
        leak = False
        if i % 20 == 0:
            words.insert(rng.randint(0, len(words)), rng.choice(pos)["value"])
            leak = True
        elif i % 20 == 10:
            words.insert(rng.randint(0, len(words)), rng.choice(neg)["value"])
        texts.append(" ".join(words))
        leaks.append(leak)
    return texts, leaks


def frame(texts: list[str]) -> pl.DataFrame:
    n = len(texts)
    return pl.DataFrame(
        {
            "sample_id": pl.int_range(n, eager=True).cast(pl.String),
            "input": ["{}"] * n,
            "expected_output": [""] * n,
            "expected_type": ["string"] * n,
            "metadata": ["{}"] * n,
            "tags": pl.Series([[]] * n, dtype=pl.List(pl.String)),
            "row_hash": ["h"] * n,
            "actual_output": texts,
        }
    )


def timed(spec: str, texts: list[str], leaks: list[bool]) -> tuple[float, int]:
    df = frame(texts)
    start = time.perf_counter()
    out = ef.score(df, [ef.metrics.get(spec)])
    seconds = time.perf_counter() - start
    flagged = (out.get_column("score") == 0.0).to_list()
    wrong = sum(f != leak for f, leak in zip(flagged, leaks, strict=True))
    return len(texts) / seconds, wrong


def precision_recall(engine: str) -> list[tuple[str, int, int, int]]:
    """Per type: true positives, false positives, false negatives over the corpus."""
    texts = [e["text"] for e in CORPUS]
    series = pl.Series(texts)
    if engine == "builtin":
        found = detect(series)
    else:
        shared = tuple(sorted({v for v in PRESIDIO_TYPES.values() if v != "IP"} | {"IPV4", "IPV6"}))
        found = presidio_detect(series, shared)
    hits: dict[int, list[tuple[str, int, int]]] = {}
    for r in found.iter_rows(named=True):
        hits.setdefault(r["row"], []).append((r["type"], r["start"], r["end"]))
    out = []
    for kind in ENTITY_TYPES:
        tp = fp = fn = 0
        for i, e in enumerate(CORPUS):
            if e["type"] != kind:
                continue
            got = hits.get(i, [])
            if e["label"] == "negative":
                fp += len(got)
                continue
            start = e["text"].index(e["value"])
            end = start + len(e["value"])
            ok = any(t == kind and s <= start and end <= f for t, s, f in got)
            tp += ok
            fn += not ok
            fp += sum(not (t == kind and s <= start and end <= f) for t, s, f in got)
        out.append((kind, tp, fp, fn))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--presidio-rows", type=int, default=10_000)
    args = parser.parse_args()
    texts, leaks = outputs(args.rows)
    timed("pii-leak", texts[:1000], leaks[:1000])  # warm up
    builtin, wrong = timed("pii-leak", texts, leaks)
    assert wrong == 0, f"built-in: {wrong} rows disagree with the corpus labels"
    n = args.presidio_rows
    presidio, differ = timed("pii-leak(engine=presidio)", texts[:n], leaks[:n])
    print(machine())
    print(f"pii-leak, built-in engine: {args.rows:,} outputs, {builtin:,.0f} rows/s")
    print(
        f"pii-leak, Presidio engine: {n:,} outputs, {presidio:,.0f} rows/s "
        f"({differ} rows disagree with the labels)"
    )
    print(f"ratio: {builtin / presidio:,.0f}x")
    print()
    print("| type | built-in P | built-in R | Presidio P | Presidio R |")
    print("|---|---|---|---|---|")
    ours = precision_recall("builtin")
    theirs = {k: (tp, fp, fn) for k, tp, fp, fn in precision_recall("presidio")}
    shared = set(PRESIDIO_TYPES.values()) | {"IPV4", "IPV6"}

    def pr(tp: int, fp: int, fn: int) -> tuple[str, str]:
        p = f"{tp / (tp + fp):.2f}" if tp + fp else "-"
        r = f"{tp / (tp + fn):.2f}" if tp + fn else "-"
        return p, r

    for kind, tp, fp, fn in ours:
        p, r = pr(tp, fp, fn)
        if kind in shared:
            pp, rr = pr(*theirs[kind])
        else:
            pp, rr = "n/a", "n/a"
        print(f"| {kind} | {p} | {r} | {pp} | {rr} |")


if __name__ == "__main__":
    main()
