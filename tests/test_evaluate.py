"""evaluate(): outputs or a system under test, errors as data, repetitions."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import polars as pl
import pytest

import evalframe as ef

EXAMPLE = Path(ef.__file__).parent / "examples"


@pytest.fixture
def dataset() -> ef.Dataset:
    return ef.Dataset.from_records(
        [
            {"id": "q1", "input": {"question": "Capital of France?"}, "expected_output": "Paris",
             "metadata": {"tags": ["geo"]}},
            {"id": "q2", "input": {"question": "2+2?"}, "expected_output": "4",
             "metadata": {"tags": ["math"]}},
            {"id": "q3", "input": {"question": "ids"}, "expected_output": ["a", "b"]},
        ],
        name="mixed",
    )  # fmt: skip


def test_bundled_example_scores_cleanly() -> None:
    run = ef.evaluate(EXAMPLE / "support.yaml", outputs=EXAMPLE / "support.outputs.json")
    assert run.metric_ids == ef.read_dataset(EXAMPLE / "support.yaml").metrics
    assert run.failures.height == 0
    assert run.scores.height == 12 * len(run.metric_ids)
    assert 0.5 < run.macro_f1 <= 1.0


def test_outputs_as_mapping_frame_and_file_agree(dataset: ef.Dataset, tmp_path: Path) -> None:
    outputs = {"q1": "Paris", "q2": "5", "q3": "a"}
    path = tmp_path / "out.json"
    path.write_text(json.dumps({"outputs": outputs}))
    frame = pl.DataFrame({"sample_id": list(outputs), "actual_output": list(outputs.values())})
    runs = [
        ef.evaluate(dataset, outputs=o, metrics=["exact-match"]) for o in (outputs, frame, path)
    ]
    for run in runs:
        assert run.scores.get_column("score").to_list() == [1.0, 0.0, None]
        assert run.scores.get_column("error")[2] == (
            "Sample 'q3' expected_output must be a string for exact-match metric; got list."
        )


def test_one_bad_sample_does_not_stop_other_metrics_or_samples(dataset: ef.Dataset) -> None:
    run = ef.evaluate(
        dataset, outputs={"q1": "Paris", "q2": "4", "q3": "x"}, metrics=["exact-match", "rouge-l"]
    )
    summary = run.summary.rows_by_key("metric", named=True)
    assert summary["exact-match"][0]["n_scored"] == 2
    assert summary["exact-match"][0]["n_errors"] == 1
    assert run.failures.height == 2  # q3 has a list expected output: both metrics refuse it
    # q3 did not pass: 2 of 3 on each metric, 1.0 over the scored executions only
    assert run.macro_f1 == pytest.approx(2 / 3)
    assert run.headline["macro_f1_scored"] == 1.0
    assert run.status == "INCOMPLETE: 1 of 3 executions errored"


def test_missing_and_unknown_output_ids_are_listed(dataset: ef.Dataset) -> None:
    with pytest.raises(ef.DatasetError, match="missing sample ids: q2, q3"):
        ef.evaluate(dataset, outputs={"q1": "Paris"}, metrics=["exact-match"])
    with pytest.raises(ef.DatasetError, match="unknown sample ids: zz"):
        ef.evaluate(
            dataset,
            outputs={"q1": "a", "q2": "b", "q3": "c", "zz": "d"},
            metrics=["exact-match"],
        )


def test_metrics_default_to_the_dataset_list_and_are_required(dataset: ef.Dataset) -> None:
    with pytest.raises(ef.MetricError, match="No metrics for dataset 'mixed'"):
        ef.evaluate(dataset, outputs={"q1": "a", "q2": "b", "q3": "c"})


def test_outputs_and_system_are_exclusive(dataset: ef.Dataset) -> None:
    with pytest.raises(ValueError, match="exactly one"):
        ef.evaluate(dataset, metrics=["exact-match"])
    with pytest.raises(ValueError, match="exactly one"):
        ef.evaluate(dataset, outputs={}, system=str, metrics=["exact-match"])


def test_system_failures_are_recorded_per_sample(dataset: ef.Dataset) -> None:
    def system(inp: dict[str, str]) -> object:
        q = inp["question"]
        if q == "2+2?":
            raise TimeoutError("model timed out")
        if q == "ids":
            return 42
        return "Paris"

    run = ef.evaluate(dataset, system=system, metrics=["exact-match", "contains"], progress=False)
    by_sample = run.scores.partition_by("sample_id", as_dict=True)
    assert by_sample[("q1",)].get_column("score").to_list() == [1.0, 1.0]
    q2 = by_sample[("q2",)].get_column("error").to_list()
    assert q2 == ["System under test raised TimeoutError for sample 'q2': model timed out"] * 2
    q3 = by_sample[("q3",)].get_column("error")[0]
    assert q3 == "System-under-test for sample 'q3' must return a string; got int."
    assert run.report()["total_failures"] == 4
    assert run.frame.get_column("latency_ms").min() >= 0  # type: ignore[operator]


def test_a_lone_surrogate_from_the_system_is_that_samples_error(dataset: ef.Dataset) -> None:
    # Python strings may hold half a UTF-16 pair; no UTF-8 column can. The sample with one
    # (in its output, contexts or trajectory) fails alone, the others are scored.
    replies: dict[str, object] = {
        "2+2?": "4\ud800",
        "ids": {"output": "ok", "contexts": ["fine", "c\udc00"]},
    }

    def system(inp: dict[str, str]) -> object:
        return replies.get(inp["question"], "Paris")

    run = ef.evaluate(dataset, system=system, metrics=["exact-match"], progress=False)
    errors = dict(run.scores.select("sample_id", "error").iter_rows())
    assert errors == {
        "q1": None,
        "q2": "System-under-test for sample 'q2' returned a lone surrogate \\ud800 in field "
        "'actual_output'; text must be valid Unicode.",
        "q3": "System-under-test for sample 'q3' returned a lone surrogate \\udc00 in field "
        "'contexts'; text must be valid Unicode.",
    }
    trajectory = {"output": "ok", "trajectory": {"tool_calls": ["search\udbff"]}}
    run = ef.evaluate(dataset, system=lambda _: trajectory, metrics=["exact-match"], progress=False)
    assert run.scores.get_column("error").str.contains("in field 'trajectory'").all()


def test_system_calls_run_concurrently_and_bounded(dataset: ef.Dataset) -> None:
    active, peak, lock = 0, 0, threading.Lock()

    def system(inp: dict[str, str]) -> str:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        time.sleep(0.05)
        with lock:
            active -= 1
        return "x"

    start = time.perf_counter()
    run = ef.evaluate(
        dataset, system=system, metrics=["contains"], repetitions=4, concurrency=3, progress=False
    )
    # 12 calls of 50 ms, at most 3 at a time: at least 4 rounds (the speed-up is benchmarked).
    assert time.perf_counter() - start >= 4 * 0.05
    assert peak == 3
    assert run.frame.height == 12
    assert run.frame.get_column("repetition").to_list() == [r for r in range(4) for _ in range(3)]


def test_async_systems_are_awaited(dataset: ef.Dataset) -> None:
    async def system(inp: dict[str, str]) -> str:
        return "Paris"

    run = ef.evaluate(dataset, system=system, metrics=["contains"], progress=False)
    assert run.scores.get_column("score")[0] == 1.0


def test_repetitions_multiply_executions_with_saved_outputs(dataset: ef.Dataset) -> None:
    run = ef.evaluate(
        dataset, outputs={"q1": "Paris", "q2": "4", "q3": "x"}, metrics=["exact-match"],
        repetitions=3,
    )  # fmt: skip
    report = run.report()
    assert report["total_samples"] == 3
    assert report["total_executions"] == 9
    assert report["repetitions"] == 3
    assert report["precision"]["repetitions"] == 3


def test_wide_view_has_one_column_per_metric(dataset: ef.Dataset) -> None:
    run = ef.evaluate(
        dataset, outputs={"q1": "Paris", "q2": "4", "q3": "x"}, metrics=["exact-match", "rouge-l"]
    )
    wide = run.wide()
    assert wide.columns == ["sample_id", "repetition", "exact-match", "rouge-l"]
    assert wide.height == 3


def test_100k_samples_score_without_failures() -> None:
    # How long this takes is measured in benchmarks/bench_scale.py, not asserted here.
    n = 100_000
    ds = ef.Dataset.from_frame(
        pl.DataFrame(
            {
                "sample_id": [f"s{i}" for i in range(n)],
                "input": ['{"question":"q"}'] * n,
                "expected_output": [f"answer number {i % 97}" for i in range(n)],
            }
        ),
        name="big",
    )
    outputs = pl.DataFrame(
        {"sample_id": [f"s{i}" for i in range(n)],
         "actual_output": [f"the answer number {i % 89}" for i in range(n)]}
    )  # fmt: skip
    run = ef.evaluate(ds, outputs=outputs, metrics=["exact-match", "contains", "rouge-l"])
    assert run.scores.height == 3 * n
    assert run.failures.height == 0
