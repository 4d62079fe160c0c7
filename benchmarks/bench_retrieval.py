"""Retrieval ranking metrics: evalframe vs pytrec_eval vs ranx on 100,000 queries, one run.

Run: ``.venv/bin/python benchmarks/bench_retrieval.py [--queries N] [--k K] [--repeat R]``
(needs ``pip install pytrec-eval-terrier ranx``).

The queries live in a Polars frame, as a user keeps a run: ``retrieved`` (List(String), 10-100
distinct ranked ids) and ``gains`` (List(Struct{key, value}), 1-5 relevant ids with graded
gains 1-3, most of them retrieved somewhere in the ranking). Every library computes the same
four measures per query (nDCG@k, recall@k, MRR, hit@k) and each timing includes the conversion
that library needs from that frame:

* evalframe: the evaluation frame (the typed ``actual_output__retrieved`` and
  ``expected_output__gains`` columns beside the canonical ones) and ``ef.score`` with the four
  metrics, which returns the long scores frame with per-row details;
* pytrec_eval: qrels and run dicts of dicts, then ``RelevanceEvaluator.evaluate``;
* ranx: ``Qrels.from_dict`` / ``Run.from_dict``, then per-query ``evaluate``.

The libraries run in interleaved rounds (``--repeat``, default 5) after a warm-up on a small
slice (Numba compilation and cache loading are one-off costs, excluded for evalframe and ranx
alike); the best and the median round are reported, with the ratio to evalframe's. Also
shown: evalframe from retrieval JSON strings (the JSON is parsed in the timing). Scores are
cross-checked between the three libraries before anything is reported.

The eval-harness format case starts from files as eval-harness keeps them: a saved outputs
file (``{"outputs": {id: "<ranked ids as a JSON array>"}}``) and a ``Dataset`` whose
``expected_output`` is each query's gain map. evalframe's timing is ``ef.read_outputs`` plus
``ef.evaluate`` with the four metrics (the ``Run`` with its scores); pytrec_eval's is reading
the same file with ``json.load``, decoding each ranked list and gain map with ``json.loads``
into its qrels and run dicts, and ``RelevanceEvaluator.evaluate``. Both ratios are shown: to
evalframe's typed-column timing, and the eval-harness format pair to each other.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
import polars as pl
from _common import best_time, machine

import evalframe as ef

HARNESS = "evalframe (eval-harness format)"
PYTREC_HARNESS = "pytrec_eval (eval-harness format)"
ALIASES = ["retrieval-ndcg-at-k", "retrieval-recall-at-k", "retrieval-mrr", "retrieval-hit-at-k"]


def make_queries(n: int, seed: int = 0) -> pl.DataFrame:
    """``n`` queries: 10-100 distinct ranked ids, 1-5 relevant ids with gains 1-3."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(10, 101, n)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    # distinct ids within a query: a random start and stride through a 1,000,003-id space
    start = rng.integers(0, 1_000_003, n)
    stride = rng.integers(1, 1000, n)
    row = np.repeat(np.arange(n), lengths)
    pos = np.arange(offsets[-1]) - offsets[row]
    doc = (start[row] + pos * stride[row]) % 1_000_003
    flat = pl.Series(doc).cast(pl.String)
    flat = pl.select(pl.lit("doc-") + flat).to_series()
    retrieved = (
        pl.DataFrame({"row": row, "id": flat}).group_by("row", maintain_order=True).agg("id")["id"]
    )
    n_rel = rng.integers(1, 6, n)
    rel_row = np.repeat(np.arange(n), n_rel)
    hit = rng.random(rel_row.size) < 0.7
    rel_pos = (rng.random(rel_row.size) * lengths[rel_row]).astype(np.int64)
    rel_doc = np.where(
        hit, doc[offsets[rel_row] + rel_pos], rng.integers(0, 1_000_003, rel_row.size)
    )
    gains = (
        pl.DataFrame(
            {
                "row": rel_row,
                "key": pl.select(pl.lit("doc-") + pl.Series(rel_doc).cast(pl.String)).to_series(),
                "value": rng.integers(1, 4, rel_row.size).astype(np.float64),
            }
        )
        .unique(["row", "key"], maintain_order=True)
        .group_by("row", maintain_order=True)
        .agg(pl.struct("key", "value").alias("gains"))["gains"]
    )
    return pl.DataFrame(
        {"sample_id": [f"q{i}" for i in range(n)], "retrieved": retrieved, "gains": gains}
    )


def evaluation_frame(queries: pl.DataFrame) -> pl.DataFrame:
    """The frame ``ef.score`` reads: canonical columns plus the typed retrieval columns."""
    return queries.select(
        "sample_id",
        input=pl.lit("{}"),
        expected_output=pl.lit(""),
        expected_type=pl.lit("map"),
        metadata=pl.lit("{}"),
        tags=pl.lit([], pl.List(pl.String)),
        actual_output=pl.lit(""),
        actual_output__retrieved="retrieved",
        expected_output__gains="gains",
    )


def json_frame(queries: pl.DataFrame) -> pl.DataFrame:
    """The same queries as retrieval JSON and gain maps, as a saved outputs file holds them."""
    actual = [json.dumps(r) for r in queries.get_column("retrieved").to_list()]
    expected = [
        json.dumps({g["key"]: g["value"] for g in gs}, separators=(",", ":"))
        for gs in queries.get_column("gains").to_list()
    ]
    return (
        evaluation_frame(queries)
        .drop("actual_output__retrieved", "expected_output__gains")
        .with_columns(actual_output=pl.Series(actual), expected_output=pl.Series(expected))
    )


def write_outputs(queries: pl.DataFrame, path: Path) -> None:
    """The ranked ids as an eval-harness saved outputs file (each output a JSON array)."""
    ranked = queries.get_column("retrieved").to_list()
    outputs = {q: json.dumps(r) for q, r in zip(queries["sample_id"], ranked, strict=True)}
    path.write_text(json.dumps({"outputs": outputs}), encoding="utf-8")


def harness_dataset(queries: pl.DataFrame) -> ef.Dataset:
    """The queries as an eval-harness dataset: ``expected_output`` is the gain map."""
    records = [
        {"id": q, "input": {}, "expected_output": {g["key"]: g["value"] for g in gs}}
        for q, gs in zip(queries["sample_id"], queries["gains"].to_list(), strict=True)
    ]
    return ef.Dataset.from_records(records, name="bench.retrieval")


def run_evalframe_harness(dataset: ef.Dataset, outputs: Path, k: int) -> pl.DataFrame:
    metrics = [ef.metrics.get(a if a == "retrieval-mrr" else f"{a}(k={k})") for a in ALIASES]
    run = ef.evaluate(dataset, outputs=ef.read_outputs(outputs), metrics=metrics)
    return run.scores


def run_pytrec_harness(dataset: ef.Dataset, outputs: Path, k: int) -> dict[str, dict[str, float]]:
    import pytrec_eval

    saved = json.loads(outputs.read_text(encoding="utf-8"))["outputs"]
    run = {}
    for q, text in saved.items():
        ranked = json.loads(text)
        run[q] = {doc: float(len(ranked) - i) for i, doc in enumerate(ranked)}
    qrels = {
        q: {doc: int(g) for doc, g in json.loads(gains).items()}
        for q, gains in zip(dataset["sample_id"], dataset["expected_output"], strict=True)
    }
    measures = {f"ndcg_cut.{k}", f"recall.{k}", "recip_rank", f"success.{k}"}
    return pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)  # type: ignore[no-any-return]


def run_evalframe(queries: pl.DataFrame, k: int) -> pl.DataFrame:
    metrics = [ef.metrics.get(a if a == "retrieval-mrr" else f"{a}(k={k})") for a in ALIASES]
    return ef.score(evaluation_frame(queries), metrics)


def run_evalframe_json(frame: pl.DataFrame, k: int) -> pl.DataFrame:
    metrics = [ef.metrics.get(a if a == "retrieval-mrr" else f"{a}(k={k})") for a in ALIASES]
    return ef.score(frame, metrics)


def run_pytrec(queries: pl.DataFrame, k: int) -> dict[str, dict[str, float]]:
    import pytrec_eval

    ids = queries.get_column("sample_id").to_list()
    qrels = {
        q: {g["key"]: int(g["value"]) for g in gs}
        for q, gs in zip(ids, queries.get_column("gains").to_list(), strict=True)
    }
    run = {
        q: {doc: float(len(r) - i) for i, doc in enumerate(r)}
        for q, r in zip(ids, queries.get_column("retrieved").to_list(), strict=True)
    }
    measures = {f"ndcg_cut.{k}", f"recall.{k}", "recip_rank", f"success.{k}"}
    return pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)  # type: ignore[no-any-return]


def run_ranx(queries: pl.DataFrame, k: int) -> dict[str, Any]:
    from ranx import Qrels, Run, evaluate

    ids = queries.get_column("sample_id").to_list()
    qrels = Qrels.from_dict(
        {
            q: {g["key"]: int(g["value"]) for g in gs}
            for q, gs in zip(ids, queries.get_column("gains").to_list(), strict=True)
        }
    )
    run = Run.from_dict(
        {
            q: {doc: float(len(r) - i) for i, doc in enumerate(r)}
            for q, r in zip(ids, queries.get_column("retrieved").to_list(), strict=True)
        }
    )
    per_query = evaluate(
        qrels, run, [f"ndcg@{k}", f"recall@{k}", "mrr", f"hit_rate@{k}"], return_mean=False
    )
    return {"query_ids": list(qrels.keys()), **per_query}


def check(
    queries: pl.DataFrame, scores: pl.DataFrame, trec: dict[str, Any], rx: dict[str, Any], k: int
) -> float:
    """The largest absolute difference between evalframe and the other two, over all scores."""
    ids = queries.get_column("sample_id").to_list()
    worst = 0.0
    names = {
        "retrieval-ndcg-at-k": (f"ndcg_cut_{k}", f"ndcg@{k}"),
        "retrieval-recall-at-k": (f"recall_{k}", f"recall@{k}"),
        "retrieval-mrr": ("recip_rank", "mrr"),
        "retrieval-hit-at-k": (f"success_{k}", f"hit_rate@{k}"),
    }
    for alias, (trec_name, ranx_name) in names.items():
        metric = ef.metrics.get(alias if alias == "retrieval-mrr" else f"{alias}(k={k})").id
        ours = scores.filter(pl.col("metric") == metric).get_column("score").to_numpy()
        theirs = np.array([trec[q][trec_name] for q in ids])
        worst = max(worst, float(np.abs(ours - theirs).max()))
        position = {q: i for i, q in enumerate(rx["query_ids"])}
        ranx_scores = np.asarray(rx[ranx_name])[[position[q] for q in ids]]
        worst = max(worst, float(np.abs(ours - ranx_scores).max()))
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=5, help="rounds (default 5)")
    args = parser.parse_args()
    n, k = args.queries, args.k

    queries = make_queries(n)
    as_json = json_frame(queries)
    scratch = Path(tempfile.mkdtemp(prefix="bench_retrieval_"))
    outputs = scratch / "outputs.json"
    write_outputs(queries, outputs)
    dataset = harness_dataset(queries)
    warm = queries.head(200)
    write_outputs(warm, scratch / "warm.json")
    run_evalframe(warm, k), run_ranx(warm, k), run_pytrec(warm, k)  # compile / load caches
    run_evalframe_harness(harness_dataset(warm), scratch / "warm.json", k)

    # Rounds interleave the libraries, so a burst of load from other processes falls on all
    # of them alike; each library's best and median round are reported.
    jobs = {
        "evalframe (typed columns)": lambda: run_evalframe(queries, k),
        "evalframe (retrieval JSON)": lambda: run_evalframe_json(as_json, k),
        HARNESS: lambda: run_evalframe_harness(dataset, outputs, k),
        PYTREC_HARNESS: lambda: run_pytrec_harness(dataset, outputs, k),
        "pytrec_eval (incl. conversion)": lambda: run_pytrec(queries, k),
        "ranx (incl. conversion)": lambda: run_ranx(queries, k),
    }
    times: dict[str, list[float]] = {name: [] for name in jobs}
    results: dict[str, Any] = {}
    for _ in range(args.repeat):
        for name, job in jobs.items():
            seconds, results[name] = best_time(job, repeat=1)
            times[name].append(seconds)
    scores = results["evalframe (typed columns)"]
    json_scores = results["evalframe (retrieval JSON)"]
    trec = results["pytrec_eval (incl. conversion)"]
    rx = results["ranx (incl. conversion)"]

    worst = check(queries, scores, trec, rx, k)
    if worst > 1e-9:
        raise SystemExit(f"scores disagree by {worst:.3g}")
    if not json_scores.get_column("score").equals(scores.get_column("score")):
        raise SystemExit("the JSON path and the typed-column path disagree")
    if not results[HARNESS].get_column("score").equals(scores.get_column("score")):
        raise SystemExit("the eval-harness format path and the typed-column path disagree")
    if results[PYTREC_HARNESS] != trec:
        raise SystemExit("pytrec_eval from the eval-harness files disagrees with its typed run")

    print(machine(), "| load average", " ".join(f"{x:.1f}" for x in os.getloadavg()))
    print(
        f"{n:,} queries, 10-100 ranked ids each, 1-5 graded relevant; k = {k}; "
        f"nDCG@k, recall@k, MRR, hit@k; {args.repeat} rounds; max |diff| {worst:.1e}"
    )
    print(
        f"{'library':<34} {'best s':>7} {'queries/s':>10} {'x':>6}   "
        f"{'median s':>8} {'queries/s':>10} {'x':>6}"
    )
    ours = times["evalframe (typed columns)"]
    for name, ts in times.items():
        best, median = min(ts), statistics.median(ts)
        print(
            f"{name:<34} {best:>7.3f} {n / best:>10,.0f} {best / min(ours):>5.1f}x   "
            f"{median:>8.3f} {n / median:>10,.0f} {median / statistics.median(ours):>5.1f}x"
        )
    harness, trec_harness, trec_typed = (
        times[HARNESS],
        times[PYTREC_HARNESS],
        times["pytrec_eval (incl. conversion)"],
    )
    for label, theirs in (("from the same files", trec_harness), ("from the frame", trec_typed)):
        print(
            f"eval-harness format: pytrec_eval {label} / evalframe: "
            f"best {min(theirs) / min(harness):.1f}x, "
            f"median {statistics.median(theirs) / statistics.median(harness):.1f}x"
        )


if __name__ == "__main__":
    main()
