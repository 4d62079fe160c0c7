"""ROUGE-1, ROUGE-2 and ROUGE-Lsum throughput: evalframe against rouge-score and rouge-score-rs.

Generates seeded English-like (reference, noisy paraphrase) pairs (a sentence per line for
ROUGE-Lsum), scores them with each implementation, checks that all agree with evalframe to
1e-9, and prints pairs/s and the ratios. Run from the repository root:

    .venv/bin/python benchmarks/bench_rouge_n.py            # 100,000 pairs, threads = nproc
    .venv/bin/python benchmarks/bench_rouge_n.py --pairs 20000 --threads 1
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
_ARGS.add_argument("--repeat", type=int, default=3, help="timed runs per library; best is kept")
_ARGS.add_argument("--seed", type=int, default=0)
ARGS = _ARGS.parse_args()

pin_threads(ARGS.threads)
os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="evalframe-bench-numba-")

import numpy as np  # noqa: E402
import polars as pl  # noqa: E402


def main() -> None:
    print(f"machine: {machine()}; threads per library: {ARGS.threads}")
    refs, cands = text_pairs(ARGS.pairs, seed=ARGS.seed)
    # A sentence per line for ROUGE-Lsum: a line break after every eighth word.
    lines = [
        [
            "\n".join(" ".join(w[i : i + 8]) for i in range(0, len(w), 8))
            for w in (t.split(" ") for t in side)
        ]
        for side in (refs, cands)
    ]
    from evalframe.metrics._rouge import rouge_lsum, rouge_n

    t0 = time.perf_counter()
    head = pl.Series(refs[:50]), pl.Series(cands[:50])
    with_env = os.environ.get("EVALFRAME_KERNELS")
    os.environ["EVALFRAME_KERNELS"] = "compiled"
    rouge_n(*head, n=2)
    rouge_lsum(*head)
    print(f"evalframe warm-up (Numba compile, fresh cache): {time.perf_counter() - t0:.2f} s\n")
    if with_env is None:
        del os.environ["EVALFRAME_KERNELS"]

    from rouge_score import rouge_scorer
    from rouge_score_rs import rouge_scorer as rs_scorer

    sub = min(ARGS.rouge_score_pairs, ARGS.pairs)
    kinds = {"rouge1": (refs, cands), "rouge2": (refs, cands), "rougeLsum": tuple(lines)}
    ours_fn = {
        "rouge1": lambda e, a: rouge_n(e, a, n=1),
        "rouge2": lambda e, a: rouge_n(e, a, n=2),
        "rougeLsum": rouge_lsum,
    }
    print(f"{'metric':<10} {'implementation':<30} {'pairs/s':>10} {'evalframe/it':>13}")
    for kind, (e_text, a_text) in kinds.items():
        e, a = pl.Series(e_text), pl.Series(a_text)
        scorer = rouge_scorer.RougeScorer([kind], use_stemmer=False)
        scorer_rs = rs_scorer.RougeScorer([kind])

        def ours(e: pl.Series = e, a: pl.Series = a, kind: str = kind) -> np.ndarray:
            return ours_fn[kind](e, a)["score"].to_numpy()

        def rs(e_text: list[str] = e_text, a_text: list[str] = a_text) -> np.ndarray:
            out = scorer_rs.score_batch(e_text, a_text)  # noqa: B023 - bound per kind
            return np.array([s[kind].fmeasure for s in out])  # noqa: B023

        def google(e_text: list[str] = e_text, a_text: list[str] = a_text) -> np.ndarray:
            pairs = zip(e_text[:sub], a_text[:sub], strict=True)
            return np.array([scorer.score(r, c)[kind].fmeasure for r, c in pairs])  # noqa: B023

        cases = {
            "evalframe": (ours, ARGS.pairs, ARGS.repeat),
            "rouge-score-rs score_batch": (rs, ARGS.pairs, ARGS.repeat),
            f"rouge-score, first {sub:,}": (google, sub, 1),
        }
        wall = dict.fromkeys(cases, float("inf"))
        scores: dict[str, np.ndarray] = {}
        for round_ in range(ARGS.repeat):
            for name, (fn, _, rounds) in cases.items():
                if round_ < rounds:
                    t0 = time.perf_counter()
                    scores[name] = fn()
                    wall[name] = min(wall[name], time.perf_counter() - t0)
        mine = scores["evalframe"]
        for name, got in scores.items():
            worst = float(np.abs(got - mine[: len(got)]).max(initial=0.0))
            if worst > 1e-9:
                raise SystemExit(f"{kind}: {name} disagrees with evalframe by {worst}")
        rate_ours = ARGS.pairs / wall["evalframe"]
        for name, (_, n, _) in cases.items():
            rate = n / wall[name]
            print(f"{kind:<10} {name:<30} {rate:>10,.0f} {rate_ours / rate:>12.1f}x")
    print("every implementation agrees with evalframe to 1e-9 on every pair")
    print(f"load average after the run: {os.getloadavg()[0]:.2f} (1 min)")


if __name__ == "__main__":
    main()
