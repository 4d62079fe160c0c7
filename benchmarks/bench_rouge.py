"""ROUGE-L throughput: evalframe against rouge-score, rouge-score-rs and a rapidfuzz LCS loop.

Generates seeded English-like (reference, noisy paraphrase) pairs, scores them end to end with
each implementation, checks that all agree with evalframe to 1e-9, and prints pairs/s and the
ratios. Run from the repository root:

    .venv/bin/python benchmarks/bench_rouge.py            # 100,000 pairs, threads = nproc
    .venv/bin/python benchmarks/bench_rouge.py --pairs 20000 --threads 1
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, pin_threads, text_pairs

_ARGS = argparse.ArgumentParser(description=__doc__.splitlines()[0])
_ARGS.add_argument("--pairs", type=int, default=100_000, help="number of pairs (default 100000)")
_ARGS.add_argument("--rouge-score-pairs", type=int, default=5_000, help="rouge-score subsample")
_ARGS.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="threads per library")
_ARGS.add_argument("--repeat", type=int, default=5, help="timed runs per library; best is kept")
_ARGS.add_argument("--seed", type=int, default=0)
_ARGS.add_argument(
    "--warm-jit-cache",
    action="store_true",
    help="use Numba's on-disk cache instead of a fresh one (reports cache load, not compile)",
)
ARGS = _ARGS.parse_args()

# Before NumPy, Numba, Polars or a Rust extension starts its thread pool.
pin_threads(ARGS.threads)
if not ARGS.warm_jit_cache:
    os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="evalframe-bench-numba-")

import re  # noqa: E402

import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

TOKEN = re.compile(r"[^\W_]+")  # Unicode letters and digits, as str.isalnum


def f_measure(lcs: np.ndarray, n_ref: np.ndarray, n_cand: np.ndarray) -> np.ndarray:
    """ROUGE-L's F1 from LCS lengths and token counts (for the rapidfuzz loop)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(n_cand > 0, lcs / np.maximum(n_cand, 1), 0.0)
        r = np.where(n_ref > 0, lcs / np.maximum(n_ref, 1), 0.0)
        f = np.where(p + r > 0, 2 * p * r / (p + r), 0.0)
    return np.where((n_ref == 0) & (n_cand == 0), 1.0, f)


def main() -> None:
    print(f"machine: {machine()}; threads per library: {ARGS.threads}")
    t0 = time.perf_counter()
    refs, cands = text_pairs(ARGS.pairs, seed=ARGS.seed)
    frame = pl.DataFrame({"expected_output": refs, "actual_output": cands})
    words = frame.select(pl.col("expected_output").str.count_matches(" ") + 1).to_series()
    print(
        f"data: {ARGS.pairs:,} pairs, seed {ARGS.seed}, reference {words.min()}-{words.max()} "
        f"words (mean {words.mean():.1f}), generated in {time.perf_counter() - t0:.1f} s"
    )

    from evalframe.metrics import _lcs
    from evalframe.metrics._lcs import rouge_l

    t0 = time.perf_counter()
    rouge_l(frame["expected_output"].head(50), frame["actual_output"].head(50))
    jit = time.perf_counter() - t0
    what = "Numba cache load" if ARGS.warm_jit_cache else "Numba JIT compile, fresh cache"
    print(f"evalframe warm-up ({what}): {jit:.2f} s, excluded from its timing\n")

    from rapidfuzz import process
    from rapidfuzz.distance import LCSseq
    from rouge_score import rouge_scorer
    from rouge_score_rs import rouge_scorer as rs_scorer

    scorer_rs = rs_scorer.RougeScorer(["rougeL"])
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    sub = min(ARGS.rouge_score_pairs, ARGS.pairs)

    def run_evalframe() -> np.ndarray:
        out = rouge_l(frame["expected_output"], frame["actual_output"])
        return out["score"].to_numpy()

    def run_evalframe_1() -> np.ndarray:
        threads_for = _lcs._threads_for
        _lcs._threads_for = lambda rows: 1  # the same kernel on one thread, for the ratio
        try:
            return run_evalframe()
        finally:
            _lcs._threads_for = threads_for

    def run_rs() -> np.ndarray:
        scores = scorer_rs.score_batch(refs, cands)
        return np.array([s["rougeL"].fmeasure for s in scores])

    def run_rapidfuzz() -> np.ndarray:
        a = [TOKEN.findall(t.lower()) for t in refs]
        b = [TOKEN.findall(t.lower()) for t in cands]
        lcs = process.cpdist(a, b, scorer=LCSseq.similarity, workers=ARGS.threads, dtype=np.int64)
        n_a = np.fromiter(map(len, a), dtype=np.int64, count=len(a))
        n_b = np.fromiter(map(len, b), dtype=np.int64, count=len(b))
        return f_measure(lcs, n_a, n_b)

    def run_rouge_score() -> np.ndarray:
        pairs = zip(refs[:sub], cands[:sub], strict=True)
        return np.array([scorer.score(r, c)["rougeL"].fmeasure for r, c in pairs])

    # name: (function, pairs it scores, rounds, note)
    cases = {
        "evalframe rouge_l": (
            run_evalframe, ARGS.pairs, ARGS.repeat,
            f"tokenise + ids + LCS + F, {_lcs._threads_for(ARGS.pairs)} thread(s)",
        ),
        "evalframe rouge_l, 1 thread": (
            run_evalframe_1, ARGS.pairs, ARGS.repeat, "the same, rows not split",
        ),
        "rouge-score-rs score_batch": (run_rs, ARGS.pairs, ARGS.repeat, "Rust, rayon threads"),
        "rapidfuzz LCSseq cpdist": (
            run_rapidfuzz, ARGS.pairs, min(ARGS.repeat, 3), "re tokenise in Python + cpdist"
        ),
        "rouge-score (Google)": (
            run_rouge_score, sub, min(ARGS.repeat, 2), f"pure Python, first {sub:,} pairs only"
        ),
    }  # fmt: skip
    # Rounds interleave the libraries, so that a busy spell of a shared machine does not fall
    # on one of them only; each keeps its best wall time and its best CPU time (all threads).
    wall = dict.fromkeys(cases, float("inf"))
    cpu = dict.fromkeys(cases, float("inf"))
    scores: dict[str, np.ndarray] = {}
    for round_ in range(max(c[2] for c in cases.values())):
        for name, (fn, _, rounds, _) in cases.items():
            if round_ < rounds:
                t0, c0 = time.perf_counter(), time.process_time()
                scores[name] = fn()
                wall[name] = min(wall[name], time.perf_counter() - t0)
                cpu[name] = min(cpu[name], time.process_time() - c0)
    ours, rs = scores["evalframe rouge_l"], scores["rouge-score-rs score_batch"]
    one = scores["evalframe rouge_l, 1 thread"]
    rf, gs = scores["rapidfuzz LCSseq cpdist"], scores["rouge-score (Google)"]

    # Agreement. rouge-score and rouge-score-rs give 0 when both sides have no token (the
    # reference gives 1); the generated data has none, but count them anyway.
    both_empty = (
        frame.select(
            (pl.col("expected_output").str.contains(r"[\p{L}\p{N}]").not_())
            & (pl.col("actual_output").str.contains(r"[\p{L}\p{N}]").not_())
        )
        .to_series()
        .to_numpy()
    )
    checks = {
        "evalframe 1 thread": np.abs(one - ours),
        "rouge-score-rs": np.abs(rs - ours)[~both_empty],
        "rapidfuzz": np.abs(rf - ours),
        "rouge-score": np.abs(gs - ours[:sub])[~both_empty[:sub]],
    }
    print("agreement with evalframe (max |difference| of F1):")
    for name, diff in checks.items():
        worst = float(diff.max(initial=0.0))
        status = "OK" if worst <= 1e-9 else "FAIL"
        print(f"  {name:<18} {worst:.3g} over {len(diff):,} pairs  {status}")
        if worst > 1e-9:
            raise SystemExit(f"{name} disagrees with evalframe by {worst}")
    print(f"  both sides without tokens: {int(both_empty.sum())} pairs (excluded above)\n")

    ours_rate = ARGS.pairs / wall["evalframe rouge_l"]
    ours_cpu = ARGS.pairs / cpu["evalframe rouge_l"]
    print(
        f"{'implementation':<28} {'pairs/s':>10} {'evalframe/it':>13}"
        f" {'pairs/CPU-s':>12} {'evalframe/it':>13}  notes"
    )
    for name, (_, n, _, note) in cases.items():
        rate, rate_cpu = n / wall[name], n / cpu[name]
        print(
            f"{name:<28} {rate:>10,.0f} {ours_rate / rate:>12.1f}x"
            f" {rate_cpu:>12,.0f} {ours_cpu / rate_cpu:>12.1f}x  {note}"
        )
    print(f"load average after the run: {os.getloadavg()[0]:.2f} (1 min)")


if __name__ == "__main__":
    main()
