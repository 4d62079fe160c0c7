"""Similarity metrics: evalframe's levenshtein and bleu vs per-pair loops, on 100,000 pairs.

Run: ``.venv/bin/python benchmarks/bench_similarity.py [--pairs N] [--repeat R]``
(needs ``pip install rapidfuzz sacrebleu``).

The pairs are ``_common.text_pairs``: English-like references of 10-60 words and noisy
paraphrases as outputs. Timed, each on the same pairs:

* evalframe: ``ef.score(frame, [metric])`` on the evaluation frame, the whole metric (the
  long scores frame with per-row details), best of ``--repeat`` after a warm-up on a small
  slice (Numba compilation and cache loading are one-off costs);
* levenshtein per-pair loop: ``rapidfuzz.distance.Levenshtein.normalized_similarity`` per
  pair, and rapidfuzz's own batch call ``process.cpdist`` for reference;
* bleu per-pair loops: ``sacrebleu.sentence_bleu`` per pair, and one reused
  ``BLEU(effective_order=True)`` object's ``sentence_score`` per pair (the faster loop).

Scores are cross-checked against the loops before anything is reported.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from _common import best_time, machine, scoring_frame, text_pairs

import evalframe as ef


def timed_once(fn: object) -> tuple[float, object]:
    t0 = time.perf_counter()
    result = fn()  # type: ignore[operator]
    return time.perf_counter() - t0, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pairs", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3, help="best of R for evalframe")
    args = parser.parse_args()

    import sacrebleu
    from rapidfuzz.distance import Levenshtein
    from rapidfuzz.process import cpdist
    from sacrebleu.metrics import BLEU

    refs, outs = text_pairs(args.pairs)
    frame = scoring_frame(refs, outs)
    lev, bleu = ef.metrics.levenshtein(), ef.metrics.bleu()
    ef.score(frame.head(100), [lev, bleu])  # warm-up: Numba cache, imports

    rows: list[tuple[str, float, str]] = []

    t_lev, lev_scores = best_time(lambda: ef.score(frame, [lev]), repeat=args.repeat)
    rf = Levenshtein.normalized_similarity
    t_lev_loop, lev_loop = timed_once(lambda: [rf(o, r) for o, r in zip(outs, refs, strict=True)])
    t_cpdist, _ = best_time(lambda: cpdist(outs, refs, scorer=rf, workers=-1), repeat=args.repeat)
    got = lev_scores.get_column("score").to_numpy()
    assert np.allclose(got, np.asarray(lev_loop), atol=1e-12), "levenshtein disagrees"

    t_bleu, bleu_scores = best_time(lambda: ef.score(frame, [bleu]), repeat=args.repeat)
    oracle = BLEU(effective_order=True)
    t_obj, obj = timed_once(
        lambda: [oracle.sentence_score(o, [r]).score for o, r in zip(outs, refs, strict=True)]
    )
    t_fn, _ = timed_once(
        lambda: [sacrebleu.sentence_bleu(o, [r]).score for o, r in zip(outs, refs, strict=True)]
    )
    got = bleu_scores.get_column("score").to_numpy()
    assert np.allclose(got, np.asarray(obj) / 100, atol=1e-12), "bleu disagrees"

    n = args.pairs
    rows += [
        ("evalframe levenshtein (ef.score)", t_lev, ""),
        ("rapidfuzz normalized_similarity, per-pair loop", t_lev_loop,
         f"{t_lev_loop / t_lev:.2f}x"),
        ("rapidfuzz process.cpdist, one batch call", t_cpdist, f"{t_cpdist / t_lev:.2f}x"),
        ("evalframe bleu (ef.score)", t_bleu, ""),
        ("sacrebleu BLEU(effective_order=True).sentence_score, per-pair loop", t_obj,
         f"{t_obj / t_bleu:.1f}x"),
        ("sacrebleu.sentence_bleu, per-pair loop", t_fn, f"{t_fn / t_bleu:.1f}x"),
    ]  # fmt: skip
    print(f"{n:,} pairs; {machine()}")
    print()
    print("| what | seconds | pairs/s | loop time / evalframe time |")
    print("| --- | --- | --- | --- |")
    for what, seconds, ratio in rows:
        print(f"| {what} | {seconds:.2f} | {n / seconds:,.0f} | {ratio} |")


if __name__ == "__main__":
    main()
