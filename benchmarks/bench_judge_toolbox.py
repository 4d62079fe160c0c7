"""Judge toolbox metrics over a frame: judge calls, wall time, and a second run.

Run: ``.venv/bin/python benchmarks/bench_judge_toolbox.py [--quick] [--latency S]``

1,000 samples (``--quick``: 200), every actual output distinct, are scored with g-eval,
dag (the two-question tree of ``tests/data/answer-quality.dag.yaml``) and pairwise against
the tests' OpenAI-compatible stub on 127.0.0.1, which answers every request after
``latency`` seconds (default 0.2). The judge keeps 8 requests in flight.

Counted per metric: the calls evalframe made, the calls a one-sample-at-a-time loop makes
for the same work (g-eval: one steps call per metric plus one rating per sample; dag: one
call per visited question; pairwise: two per sample), and the wall time. A second run over
the same data and cache must make zero calls. Before anything is printed the checks pass:
every row scored, and the call counts equal the formulas above.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))
import polars as pl
from _common import machine
from judge_script import script
from openai_stub import StubOpenAI

import evalframe as ef
from evalframe.metrics._toolbox_prompts import DAG_NODE, G_EVAL, G_EVAL_STEPS, PAIRWISE

QUICK = "--quick" in sys.argv
LATENCY = float(sys.argv[sys.argv.index("--latency") + 1]) if "--latency" in sys.argv else 0.2
N = 200 if QUICK else 1000
TREE = Path(__file__).parents[1] / "tests" / "data" / "answer-quality.dag.yaml"
METRICS = {
    "g-eval": 'g-eval(criteria="Correct and concise.", top_logprobs=0)',
    "dag": f"dag(tree={TREE.as_posix()})",
    "pairwise": "pairwise(baseline=baseline)",
}


def _number(text: str) -> int:
    return int(text.rsplit(maxsplit=1)[-1])


VERDICT = script(
    {
        G_EVAL_STEPS: lambda f: {"steps": ["Check the facts.", "Check the length."]},
        G_EVAL: lambda f: {"score": 1 + _number(f["answer"]) % 5, "reason": "r"},
        # every third answer is off topic (one call); the rest are asked the second question
        DAG_NODE: lambda f: {
            "verdict": "no" if _number(f["answer"]) % 3 == 0 else "yes",
            "reason": "r",
        },
        PAIRWISE: lambda f: {
            "winner": "A" if len(f["first"]) >= len(f["second"]) else "B",
            "reason": "r",
        },
    }
)


def _frame() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "sample_id": [f"s{i}" for i in range(N)],
            "input": [json.dumps({"question": f"question {i}"}) for i in range(N)],
            "expected_output": [f"reference {i}" for i in range(N)],
            "expected_type": ["string"] * N,
            "metadata": ["{}"] * N,
            "tags": [[] for _ in range(N)],
            "row_hash": [f"h{i}" for i in range(N)],
            "actual_output": [f"an answer number {i}" for i in range(N)],
            "baseline": [f"baseline {i}" for i in range(N)],
        },
        schema_overrides={"tags": pl.List(pl.String)},
    )


def _one_at_a_time(name: str) -> int:
    if name == "g-eval":
        return 1 + N
    if name == "dag":
        return N + sum(1 for i in range(N) if i % 3 != 0)
    return 2 * N


def main() -> None:
    frame = _frame()
    rows = []
    with StubOpenAI(verdict=VERDICT, latency=LATENCY) as stub, tempfile.TemporaryDirectory() as d:
        for name, spec in METRICS.items():
            judge = ef.OpenAIJudge("stub", base_url=stub.url, concurrency=8, retries=0)
            providers = ef.Providers(judge=judge, cache=Path(d) / f"{name}.duckdb")
            before = len(stub.calls("chat/completions"))
            start = time.perf_counter()
            out = ef.score(frame, [ef.metrics.get(spec)], context=providers)
            wall = time.perf_counter() - start
            calls = len(stub.calls("chat/completions")) - before
            assert out.get_column("error").null_count() == N, out.get_column("error").drop_nulls()
            assert calls == _one_at_a_time(name), (name, calls)
            again_start = time.perf_counter()
            again = ef.score(frame, [ef.metrics.get(spec)], context=providers)
            again_wall = time.perf_counter() - again_start
            assert len(stub.calls("chat/completions")) - before == calls, "second run made calls"
            assert again.get_column("score").equals(out.get_column("score"))
            sequential = _one_at_a_time(name) * LATENCY
            rows.append((name, calls, _one_at_a_time(name), wall, sequential, again_wall))
    print(machine())
    print(f"{N} samples, stub latency {LATENCY * 1000:.0f} ms, 8 requests in flight")
    print("| metric | calls | one at a time | wall | sequential (calls x latency) | second run |")
    print("|---|---|---|---|---|---|")
    for name, calls, peer, wall, sequential, again in rows:
        print(
            f"| {name} | {calls} | {peer} | {wall:.1f} s | {sequential:.0f} s | "
            f"{again:.2f} s, 0 calls |"
        )


if __name__ == "__main__":
    main()
