"""Semantic metrics and the embedded embedder: throughput and how much gets embedded.

Run: ``.venv/bin/python benchmarks/bench_semantic.py [--quick]``.

1. cosine-embedding's kernel over 1,000,000 pairs of 384-d float32 vectors, in pairs/s and as
   a fraction of the memory-bandwidth bound measured in the same run (the best read rate of
   the same arrays by NumPy's sum and by BLAS gemv).
2. bertscore-like over 10,000 realistic (reference, paraphrase) samples: embedding requests
   and texts sent by evalframe (one embedding per unique token across the batch) against a
   per-sample implementation (one request per sample with that sample's unique tokens), and
   the greedy-matching time.
3. The embedded default (all-MiniLM-L6-v2 int8 on onnxruntime): sentences/s on this CPU.
"""

from __future__ import annotations

import sys
import time
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import numpy as np
import polars as pl
from _common import best_time, machine, scoring_frame, text_pairs

import evalframe as ef
from evalframe.metrics.semantic import cosine_rows, greedy_match
from evalframe.providers import Ledger, OnnxEmbedder, Providers


def bench_cosine(n: int) -> None:
    d = 384
    rng = np.random.default_rng(0)
    e = rng.standard_normal((n, d), dtype=np.float32)
    a = rng.standard_normal((n, d), dtype=np.float32)
    es, as_ = pl.Series("e", e), pl.Series("a", a)
    nbytes = e.nbytes + a.nbytes
    ones = np.ones(d, dtype=np.float32)
    t_sum, _ = best_time(lambda: (e.sum(dtype=np.float32), a.sum(dtype=np.float32)))
    t_gemv, _ = best_time(lambda: (e @ ones, a @ ones))
    bound = nbytes / min(t_sum, t_gemv)
    cosine_rows(es[:10], as_[:10])  # compile
    t_kernel, out = best_time(lambda: cosine_rows(es, as_))
    ref = (
        (e[:1000] * a[:1000]).sum(1)
        / np.linalg.norm(e[:1000], axis=1)
        / np.linalg.norm(a[:1000], axis=1)
    )
    assert np.allclose(out["cosine"][:1000].to_numpy(), ref, atol=1e-5)
    rate = n / t_kernel
    print(f"cosine kernel: {n:,} pairs x {d}-d float32 ({nbytes / 1e9:.2f} GB)")
    print(
        f"  read-bandwidth bound: {bound / 1e9:.1f} GB/s (sum {nbytes / t_sum / 1e9:.1f}, "
        f"gemv {nbytes / t_gemv / 1e9:.1f}) -> {bound / nbytes * n:,.0f} pairs/s"
    )
    print(
        f"  kernel: {t_kernel:.3f} s, {rate:,.0f} pairs/s, {nbytes / t_kernel / 1e9:.1f} GB/s "
        f"= {rate / (bound / nbytes * n):.0%} of the bound"
    )
    f = pl.DataFrame({"e": es, "a": as_})
    t_metric, _ = best_time(
        lambda: f.select(
            pl.struct("e", "a").map_batches(
                lambda s: cosine_rows(s.struct.field("e"), s.struct.field("a")).to_struct(),
                return_dtype=pl.Struct(
                    {"cosine": pl.Float64, "expected_dim": pl.Int64, "actual_dim": pl.Int64}
                ),
            )
        ),
        repeat=2,
    )
    print(f"  through Polars map_batches: {n / t_metric:,.0f} pairs/s")


class CountingEmbedder:
    """Deterministic random 384-d vectors per text, counting requests and texts sent.

    Stands in for a remote endpoint: what is measured is what evalframe sends, not a model.
    """

    id = "counting"
    model = "counting"
    cacheable = False

    def __init__(self, batch: int = 2048) -> None:
        self.batch, self.requests, self.texts = batch, 0, 0

    def embed(self, texts, ledger):  # type: ignore[no-untyped-def]
        from evalframe.providers import Embedded

        self.requests += -(-len(texts) // self.batch)
        self.texts += len(texts)
        vectors = [
            np.random.default_rng(zlib.crc32(t.encode())).standard_normal(384, np.float32)
            for t in texts
        ]
        return Embedded(vectors, [None] * len(texts))


def bench_bertscore(n: int) -> None:
    refs, cands = text_pairs(n, seed=1)
    frame = scoring_frame(refs, cands)
    toks = frame.select(
        e=ef.metrics._text.tokens(pl.col("expected_output")),
        a=ef.metrics._text.tokens(pl.col("actual_output")),
    )
    per_sample = toks.select(pl.concat_list("e", "a").list.n_unique()).to_series()
    counter = CountingEmbedder()
    p = Providers(counter, cache=False)
    t0 = time.perf_counter()
    scores = ef.score(frame, [ef.metrics.bertscore_like()], context=p)
    total = time.perf_counter() - t0
    assert scores["error"].null_count() == n
    tokens = int(toks.select(pl.col("e").list.len().sum() + pl.col("a").list.len().sum()).item())
    print(f"bertscore-like (static mode): {n:,} samples, {tokens:,} token occurrences")
    print(f"  per-sample implementation: {n:,} requests, {int(per_sample.sum()):,} texts embedded")
    print(
        f"  evalframe: {counter.requests} requests (of <= {counter.batch} texts), "
        f"{counter.texts:,} texts embedded -> {per_sample.sum() / counter.texts:.1f}x fewer "
        f"texts, {n / counter.requests:,.0f}x fewer requests"
    )
    unique_texts = pl.concat([frame["expected_output"], frame["actual_output"]]).n_unique()
    print(
        f"  contextual mode (embedded model): {unique_texts:,} texts through the model "
        f"(one pass per unique text) against {2 * n:,} per sample"
    )
    print(f"  whole metric (enrichment + kernel): {total:.2f} s ({n / total:,.0f} samples/s)")
    # The greedy kernel alone, on the stored token vectors.
    from evalframe.enrich import fill
    from evalframe.metrics.semantic import _token_vectors, token_columns

    cols = token_columns()
    filled, _ = fill(frame, [ef.metrics.bertscore_like()], p)
    e, e_off, _ = _token_vectors(filled[cols.expected])
    a, a_off, _ = _token_vectors(filled[cols.actual])
    t_greedy, _ = best_time(lambda: greedy_match(e, e_off, a, a_off))
    print(f"  greedy matching kernel: {t_greedy:.3f} s ({n / t_greedy:,.0f} samples/s)")


def bench_onnx(n: int) -> None:
    refs, _ = text_pairs(n, seed=2, min_words=8, max_words=20)
    for threads in (1, 2):
        e = OnnxEmbedder(threads=threads)
        e.embed(refs[:8], Ledger())  # load and warm up
        t, _ = best_time(lambda e=e: e.embed(refs, Ledger()), repeat=2)
        print(
            f"embedded default, {threads} thread(s): {n / t:,.0f} sentences/s "
            f"(8-20 words, sentence vectors)"
        )
    e = OnnxEmbedder(threads=2)
    lowered = [r.lower() for r in refs]
    toks = pl.Series(lowered).str.extract_all(ef.metrics._text.TOKEN_PATTERN).to_list()
    t, _ = best_time(lambda: e.embed_tokens(lowered, toks, Ledger()), repeat=2)
    print(f"embedded default, 2 threads: {n / t:,.0f} texts/s (contextual token vectors)")


def main() -> None:
    quick = "--quick" in sys.argv
    print(machine())
    bench_cosine(100_000 if quick else 1_000_000)
    bench_bertscore(1_000 if quick else 10_000)
    bench_onnx(200 if quick else 1_000)


if __name__ == "__main__":
    main()
