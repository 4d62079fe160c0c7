"""A deterministic feature-hashing embedder: no model, no dependency, the same on every machine.

Features are the lower-cased words (runs of letters and digits), word bigrams and character
3- to 5-grams of each word padded with spaces. Each feature hashes (BLAKE2b, so the result
does not depend on ``PYTHONHASHSEED``) to a dimension and a sign; a text's vector is the signed
sum of its features, L2-normalised. It measures lexical overlap, not meaning: use it for
tests and as a fallback where no model can run.
"""

from __future__ import annotations

import hashlib
import itertools
import re
import time
from collections.abc import Sequence

import numpy as np

from evalframe.providers._base import Embedded, Vector
from evalframe.providers._ledger import Call, Ledger

__all__ = ["HashingEmbedder"]

_WORD = re.compile(r"[^\W_]+")


class HashingEmbedder:
    """Deterministic hashed bag-of-features vectors (lexical, not semantic).

    Args:
        dim: the number of dimensions (default 512).
        char_ngrams: the range of character n-gram lengths (default 3 to 5; ``(0, 0)``
            turns them off).
        bigrams: include word bigrams.

    Examples:
        >>> from evalframe.providers import HashingEmbedder, Ledger
        >>> e = HashingEmbedder(dim=64)
        >>> a, b = e.embed(["the cat sat", "the cat sat"], Ledger()).vectors
        >>> round(float(a @ b), 6), a.shape
        (1.0, (64,))
    """

    def __init__(
        self, dim: int = 512, *, char_ngrams: tuple[int, int] = (3, 5), bigrams: bool = True
    ) -> None:
        if not isinstance(dim, int) or dim < 2:
            raise ValueError(f"dim must be an integer >= 2; got {dim!r}.")
        lo, hi = char_ngrams
        if lo < 0 or hi < lo:
            raise ValueError(
                f"char_ngrams must be (low, high) with 0 <= low <= high; got {char_ngrams}."
            )
        self.dim = dim
        self.char_ngrams = (lo, hi)
        self.bigrams = bigrams

    @property
    def model(self) -> str:
        lo, hi = self.char_ngrams
        return f"hashing-v1-{self.dim}-c{lo}{hi}{'-b' if self.bigrams else ''}"

    @property
    def id(self) -> str:
        return f"hashing:{self.model}"

    @property
    def cacheable(self) -> bool:
        return False  # hashing is faster than a cache lookup

    def __repr__(self) -> str:
        return f"HashingEmbedder(dim={self.dim})"

    def _features(self, text: str) -> list[str]:
        words = _WORD.findall(text.lower())
        feats = [f"w:{w}" for w in words]
        if self.bigrams:
            feats += [f"b:{a} {b}" for a, b in itertools.pairwise(words)]
        lo, hi = self.char_ngrams
        if hi > 0:
            for w in words:  # character n-grams of each word
                padded = f" {w} "
                for n in range(max(lo, 1), hi + 1):
                    feats += [f"c:{padded[i : i + n]}" for i in range(len(padded) - n + 1)]
        return feats

    def embed(self, texts: Sequence[str], ledger: Ledger | None = None) -> Embedded:
        started = time.perf_counter()
        slots: dict[str, tuple[int, float]] = {}
        rows: list[int] = []
        cols: list[int] = []
        signs: list[float] = []
        n_features = 0
        for r, text in enumerate(texts):  # feature extraction is string work, text by text
            feats = self._features(text)
            n_features += len(feats)
            for f in feats:
                slot = slots.get(f)
                if slot is None:
                    h = int.from_bytes(
                        hashlib.blake2b(f.encode(), digest_size=8).digest(), "little"
                    )
                    slot = (h % self.dim, 1.0 if (h >> 63) & 1 else -1.0)
                    slots[f] = slot
                rows.append(r)
                cols.append(slot[0])
                signs.append(slot[1])
        matrix = np.zeros((len(texts), self.dim), dtype=np.float64)
        np.add.at(
            matrix, (np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)), signs
        )
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        matrix = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
        vectors: list[Vector | None] = list(matrix.astype(np.float32))
        if ledger is not None:
            ledger.record(
                Call(
                    kind="embeddings",
                    provider="local",
                    model=self.model,
                    prompt_tokens=n_features,
                    total_tokens=n_features,
                    latency_ms=(time.perf_counter() - started) * 1000.0,
                    items=len(texts),
                    free=True,
                )
            )
        return Embedded(vectors, [None] * len(texts))
