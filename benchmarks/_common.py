"""Shared helpers for the benchmarks: seeded text generators, scoring frames, timing and
machine facts.

Import this module before Polars, NumPy or Numba so that ``pin_threads`` takes effect.
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import polars as pl

T = TypeVar("T")

# Common English words (with realistic Zipf-like use); the tail of the vocabulary is synthetic.
_COMMON_TEXT = (
    "the of and to a in is that for it as was with be by on not he this are or his from at "
    "which but have an they you were her she there been one all we their has would when if "
    "so no will can more other its who what about out up into them some than may only time "
    "new could these two first then do any like my now over such our man me even most made "
    "after also did many before must through back years where much your way well down should "
    "because each just those people how too little state good very make world still own see "
    "men work long get here between both life being under never day same another know while "
    "last might us great old year off come since against go came right used take three model "
    "data answer question system user returns value order customer refund policy account "
    "payment shipping days within support request service product price invoice number "
    "document retrieval query context source evidence response output input score metric "
    "training evaluation language large small results table report error please thank help"
)
_COMMON = _COMMON_TEXT.split()
_ONSETS = (
    "b",
    "c",
    "d",
    "f",
    "g",
    "h",
    "l",
    "m",
    "n",
    "p",
    "r",
    "s",
    "t",
    "v",
    "st",
    "tr",
    "pl",
    "gr",
    "ch",
    "sh",
    "br",
    "cl",
)
_VOWELS = ("a", "e", "i", "o", "u", "ea", "ou", "ai")
_CODAS = ("", "n", "r", "s", "t", "l", "nd", "st", "ng", "ck")
_PUNCT_AFTER = (",", ".", ";", ":", "?", "!", "'s", ")")


def pin_threads(n: int) -> None:
    """Pin every thread pool the benchmarks touch to ``n`` threads (call before importing them)."""
    for var in (
        "NUMBA_NUM_THREADS",
        "OMP_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "MKL_NUM_THREADS",
        "POLARS_MAX_THREADS",
        "RAYON_NUM_THREADS",
    ):
        os.environ[var] = str(n)


def machine() -> str:
    """One line naming the CPU model, core count and Python version."""
    model = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{model}, nproc={os.cpu_count()}, Python {platform.python_version()}"


def _vocabulary(size: int, seed: int) -> list[str]:
    import numpy as np

    rng = np.random.default_rng(seed)
    words = list(_COMMON)
    seen = set(words)
    while len(words) < size:
        n_syll = int(rng.choice(3, p=[0.35, 0.5, 0.15])) + 1
        w = "".join(
            _ONSETS[rng.integers(len(_ONSETS))]
            + _VOWELS[rng.integers(len(_VOWELS))]
            + _CODAS[rng.integers(len(_CODAS))]
            for _ in range(n_syll)
        )
        if w not in seen:
            seen.add(w)
            words.append(w)
    return words


def text_pairs(
    n: int, *, seed: int = 0, min_words: int = 10, max_words: int = 60, vocab: int = 20_000
) -> tuple[list[str], list[str]]:
    """Generate ``n`` (reference, candidate) pairs of ASCII English-like text.

    References have ``min_words``..``max_words`` words drawn from a Zipfian vocabulary, with
    capitals, numbers and punctuation. Candidates are noisy paraphrases: words dropped,
    substituted, inserted and locally reordered, and case changed.

    Args:
        n: Number of pairs.
        seed: Seed of the generator.
        min_words: Shortest reference, in words.
        max_words: Longest reference, in words.
        vocab: Vocabulary size.

    Returns:
        The references and the candidates, as two lists of ``n`` strings.
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    words = np.array(_vocabulary(vocab, seed), dtype=object)
    ranks = np.arange(1, vocab + 1, dtype=np.float64)
    zipf = 1.0 / ranks**1.05
    zipf /= zipf.sum()

    lengths = rng.integers(min_words, max_words + 1, size=n)
    total = int(lengths.sum())
    draws = words[rng.choice(vocab, size=total, p=zipf)]
    numbers = rng.random(total) < 0.02
    draws[numbers] = rng.integers(0, 2000, size=int(numbers.sum())).astype(str)
    punct = rng.random(total)
    punct_idx = rng.integers(len(_PUNCT_AFTER), size=total)
    caps = rng.random(total) < 0.08

    subs = words[rng.choice(vocab, size=total, p=zipf)]
    inserts = words[rng.choice(vocab, size=total, p=zipf)]
    op = rng.random(total)
    noise_level = rng.uniform(0.05, 0.6, size=n)

    refs: list[str] = []
    cands: list[str] = []
    start = 0
    for i, length in enumerate(lengths.tolist()):
        stop = start + length
        ref_words = []
        for j in range(start, stop):
            w = draws[j]
            if caps[j] or j == start:
                w = w.capitalize()
            if punct[j] < 0.12:
                w += _PUNCT_AFTER[punct_idx[j]]
            ref_words.append(w)
        refs.append(" ".join(ref_words))

        level = noise_level[i]
        cand_words = []
        for j in range(start, stop):
            r = op[j]
            w = ref_words[j - start]
            if r < level * 0.3:
                continue
            if r < level * 0.6:
                w = subs[j]
            elif r < level * 0.75:
                cand_words.append(inserts[j])
            elif r < level * 0.85:
                w = w.upper()
            cand_words.append(w)
            if r > 1 - level * 0.1 and len(cand_words) > 1:
                cand_words[-1], cand_words[-2] = cand_words[-2], cand_words[-1]
        cands.append(" ".join(cand_words))
        start = stop
    return refs, cands


def scoring_frame(refs: list[str], outs: list[str]) -> pl.DataFrame:
    """A frame ``ef.score`` takes: one string-expected row per (reference, output) pair."""
    import polars as pl  # here, so that importing this module leaves Polars unloaded

    n = len(refs)
    return pl.DataFrame(
        {
            "sample_id": [f"s{i}" for i in range(n)],
            "input": ["{}"] * n,
            "expected_output": refs,
            "expected_type": ["string"] * n,
            "metadata": ["{}"] * n,
            "tags": [[] for _ in range(n)],
            "row_hash": ["h"] * n,
            "actual_output": outs,
        },
        schema_overrides={"tags": pl.List(pl.String)},
    )


def best_time(fn: Callable[[], T], *, repeat: int = 3) -> tuple[float, T]:
    """Best wall time of ``repeat`` calls of ``fn`` and the last result."""
    best = float("inf")
    result: T
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result
