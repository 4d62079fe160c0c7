"""RAG metrics over a frame vs one sample at a time: judge calls and wall time.

Run: ``.venv/bin/python benchmarks/bench_rag.py [--quick] [--peer-samples N] [--latency S]``

1,000 RAG samples (``--quick``: 200) with 5 retrieved contexts each are scored with four
metrics together (faithfulness, answer-relevancy, context-precision, context-recall) against
the tests' OpenAI-compatible stub on 127.0.0.1, which answers every request after ``latency``
seconds (default 0.2) with the scripted judge of ``tests/rag_script.py``.

* evalframe: ``ef.evaluate`` end to end with a fresh provider cache and 8 judge requests in
  flight; then a second run over the same data and cache, which must make zero calls.
* one sample at a time, as Ragas scores (its published metric algorithms, ``ragas.metrics.
  collections``): per sample, faithfulness makes 2 calls (statements, then one NLI verdict
  call), answer relevancy 3 (``strictness=3`` question generations, one call each), context
  precision one call per context (5), context recall 1: 11 calls, each waiting for its own
  reply. The simulation sends exactly that many requests to the same stub, samples 8 at a
  time (the same requests in flight as evalframe), on the first ``--peer-samples`` samples
  (default 200), and its wall time is scaled to the whole set (it is linear in samples).

Before anything is printed the checks pass: every row scored, one claims call per distinct
text plus one grounding call per sample, the second run with zero calls and equal scores.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))
import httpx
import polars as pl
from _common import machine
from openai_stub import StubOpenAI
from rag_script import VERDICT

import evalframe as ef
from evalframe.providers import Providers

QUICK = "--quick" in sys.argv


def _arg(name: str, default: float) -> float:
    return float(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


LATENCY = _arg("--latency", 0.2)
N = 200 if QUICK else 1000
PEER_SAMPLES = int(_arg("--peer-samples", 50 if QUICK else 200))
CONTEXTS = 5
CONCURRENCY = 8
METRICS = ["faithfulness", "answer-relevancy", "context-precision", "context-recall"]
PEER_CALLS = {"faithfulness": 2, "answer-relevancy": 3, "context-precision": CONTEXTS}
PEER_CALLS["context-recall"] = 1
CITIES = ["Lyon", "Porto", "Graz", "Turin", "Ghent", "Split", "Bergen", "Cork"]


def verdict(prompt: str) -> str:
    if prompt.startswith("PEER "):
        return '{"verdict": 1}'
    return VERDICT(prompt)


def data() -> tuple[ef.Dataset, pl.DataFrame]:
    """Samples with two reference facts, answers that state one or both (every fifth with an
    unsupported extra), and 5 contexts: the facts' passages among distractors."""
    records, outputs = [], []
    for i in range(N):
        city = CITIES[i % len(CITIES)]
        facts = [f"Item {i} weighs {i % 97 + 3} kilograms", f"Item {i} was made in {city}"]
        answer = facts[: 1 + (i % 2)] + ([f"Item {i} is blue"] if i % 5 == 0 else [])
        passages = [f"{facts[0]}, as the sheet says", f"{facts[1]} in {2000 + i % 20}"]
        distractors = [f"Item {(i * 7 + k) % N} is stored in hall {k}" for k in range(3)]
        contexts = [distractors[0], passages[0], distractors[1], passages[1], distractors[2]]
        records.append(
            {
                "id": f"s{i:04d}",
                "input": {"question": f"What do we know about item {i}"},
                "expected_output": ". ".join(facts),
            }
        )
        outputs.append(
            # the answer's text always differs from the reference's (a final period), so
            # every sample costs two claims calls: no saving from identical texts
            {
                "sample_id": f"s{i:04d}",
                "actual_output": ". ".join(answer) + ".",
                "contexts": contexts,
            }
        )
    dataset = ef.Dataset.from_records(records, name="rag-bench")
    return dataset, pl.DataFrame(outputs, schema_overrides={"contexts": pl.List(pl.String)})


def evalframe_run(stub: StubOpenAI, dataset: ef.Dataset, outputs: pl.DataFrame, cache: Path):
    providers = Providers.from_env(
        judge_base_url=stub.url,
        judge_model="stub-judge",
        judge_concurrency=CONCURRENCY,
        cache=cache,
        retries=0,
        environ={},
    )
    before = len(stub.requests)
    started = time.perf_counter()
    run = ef.evaluate(dataset, outputs=outputs, metrics=METRICS, providers=providers)
    return run, time.perf_counter() - started, len(stub.requests) - before


def peer_run(stub: StubOpenAI, samples: int) -> tuple[float, int]:
    """Each sample's calls one after another, ``CONCURRENCY`` samples at a time."""
    url = stub.url.rstrip("/") + "/chat/completions"
    per_sample = sum(PEER_CALLS.values())

    def one(i: int) -> None:
        with httpx.Client(timeout=30) as client:
            for metric, n in PEER_CALLS.items():
                for k in range(n):
                    body = {
                        "model": "stub-judge",
                        "messages": [{"role": "user", "content": f"PEER {metric} {i} {k}"}],
                    }
                    client.post(url, json=body).raise_for_status()

    before = len(stub.requests)
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=CONCURRENCY) as pool:
        list(pool.map(one, range(samples)))
    wall = time.perf_counter() - started
    calls = len(stub.requests) - before
    assert calls == samples * per_sample, (calls, samples * per_sample)
    return wall, calls


def main() -> None:
    dataset, outputs = data()
    texts = set(outputs["actual_output"].to_list()) | set(dataset["expected_output"].to_list())
    print(f"# {machine()}; load average {os.getloadavg()[0]:.1f}")
    print(f"{N} samples x {CONTEXTS} contexts, metrics {', '.join(METRICS)}")
    print(f"stub latency {LATENCY} s per call, {CONCURRENCY} requests in flight")
    with StubOpenAI(verdict=verdict, latency=LATENCY) as stub, tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache.duckdb"
        first, wall, calls = evalframe_run(stub, dataset, outputs, cache)
        errors = first.scores.drop_nulls("error")
        assert errors.height == 0, errors
        assert calls == len(texts) + N, (calls, len(texts), N)
        second, wall2, calls2 = evalframe_run(stub, dataset, outputs, cache)
        assert calls2 == 0, calls2
        key = ["sample_id", "metric"]
        assert (
            second.scores.sort(key).select("score").equals(first.scores.sort(key).select("score"))
        )
        peer_wall, _ = peer_run(stub, PEER_SAMPLES)
    per_sample = sum(PEER_CALLS.values())
    peer_total = per_sample * N
    peer_scaled = peer_wall * N / PEER_SAMPLES
    means = first.scores.group_by("metric").agg(pl.col("score").mean()).sort("metric")
    print("mean scores: " + ", ".join(f"{m} {s:.3f}" for m, s in means.iter_rows()))
    print()
    print("| | judge calls | calls per sample | wall s | ideal s (calls x latency / 8) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    ideal = calls * LATENCY / CONCURRENCY
    print(f"| evalframe, first run | {calls:,} | {calls / N:.2f} | {wall:.1f} | {ideal:.1f} |")
    print(f"| evalframe, second run (cache) | {calls2} | 0 | {wall2:.1f} | 0 |")
    print(
        f"| one sample at a time (Ragas' algorithm), {PEER_SAMPLES} samples measured, "
        f"scaled to {N} | {peer_total:,} | {per_sample} | {peer_scaled:.1f} | "
        f"{peer_total * LATENCY / CONCURRENCY:.1f} |"
    )
    print()
    print(
        f"calls: {peer_total / calls:.2f}x fewer than one sample at a time; "
        f"wall time: {peer_scaled / wall:.2f}x faster (first run)"
    )


if __name__ == "__main__":
    main()
