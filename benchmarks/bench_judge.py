"""Judge throughput: 2,000 distinct llm-as-judge prompts against a loopback endpoint with a
fixed latency per call, at several concurrencies.

Run: ``.venv/bin/python benchmarks/bench_judge.py [--quick] [--latency SECONDS]``

The endpoint is the tests' OpenAI-compatible stub (``tests/openai_stub.py``) on 127.0.0.1,
serving each request on its own thread after sleeping ``latency`` (default 0.2 s), so the
ideal wall time of a run is calls x latency / concurrency. For each concurrency the run goes
through ``ef.evaluate`` end to end (prompts, calls, parsing, scoring) with a fresh provider
cache; a second run over the same data and cache must make zero calls. Before a line is
printed its checks pass: every row scored, one call per distinct prompt, the second run's
scores equal to the first's.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))
from _common import machine
from openai_stub import StubOpenAI

import evalframe as ef
from evalframe.providers import Providers

QUICK = "--quick" in sys.argv
LATENCY = float(sys.argv[sys.argv.index("--latency") + 1]) if "--latency" in sys.argv else 0.2
N = 400 if QUICK else 2000
CONCURRENCIES = (8, 16, 32)


def verdict(prompt: str) -> str:
    """A score that depends on the prompt, so a wrong pairing of reply and row shows."""
    return '{"score": %.2f, "reason": "ok"}' % (len(prompt) % 100 / 100)


def main() -> None:
    records = [
        {"id": f"q{i}", "input": {"question": f"What is {i} + {i}?"}, "expected_output": str(2 * i)}
        for i in range(N)
    ]
    outputs = {f"q{i}": f"It is {2 * i + (i % 3 == 0)}." for i in range(N)}
    dataset = ef.Dataset.from_records(records, name="judge-bench")
    print(f"# {machine()}; load average {os.getloadavg()[0]:.1f}")
    print(f"{N} distinct judge prompts, latency {LATENCY} s per call")
    print(
        "| concurrency | wall s | calls | ideal s | ratio | in flight | 2nd run s | 2nd run calls |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    with StubOpenAI(verdict=verdict, latency=LATENCY) as stub, tempfile.TemporaryDirectory() as tmp:
        for concurrency in CONCURRENCIES:
            cache = Path(tmp) / f"cache-{concurrency}.duckdb"

            def providers(cache: Path = cache, concurrency: int = concurrency) -> Providers:
                return Providers.from_env(
                    judge_base_url=stub.url,
                    judge_model="stub-judge",
                    judge_concurrency=concurrency,
                    cache=cache,
                    retries=0,
                    environ={},
                )

            before = len(stub.requests)
            stub.max_in_flight = 0
            started = time.perf_counter()
            run = ef.evaluate(
                dataset, outputs=outputs, metrics=["llm-as-judge"], providers=providers()
            )
            wall = time.perf_counter() - started
            calls = len(stub.requests) - before
            scores = run.scores.sort("sample_id")
            assert scores.get_column("error").null_count() == N, scores.drop_nulls("error")
            prompts = {r.body["messages"][0]["content"] for r in stub.requests[before:]}
            assert len(prompts) == calls == N, (len(prompts), calls)
            in_flight = stub.max_in_flight

            before = len(stub.requests)
            started = time.perf_counter()
            again = ef.evaluate(
                dataset, outputs=outputs, metrics=["llm-as-judge"], providers=providers()
            )
            wall2 = time.perf_counter() - started
            calls2 = len(stub.requests) - before
            assert (
                again.scores.sort("sample_id")
                .get_column("score")
                .equals(scores.get_column("score"))
            )
            ideal = calls * LATENCY / concurrency
            print(
                f"| {concurrency} | {wall:.2f} | {calls} | {ideal:.2f} | {wall / ideal:.2f} "
                f"| {in_flight} | {wall2:.2f} | {calls2} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
