"""latency, token-cost, cost and retry-count: budgets, missing columns and values, and the
operational columns reaching the evaluation frame (saved outputs and ``system=``)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import polars as pl
import pytest

import evalframe as ef


def frame(n: int, **columns: list[object]) -> pl.DataFrame:
    base = pl.DataFrame(
        {
            "sample_id": [f"s{i}" for i in range(n)],
            "input": ["{}"] * n,
            "expected_output": ["x"] * n,
            "expected_type": ["string"] * n,
            "metadata": ["{}"] * n,
            "tags": [[] for _ in range(n)],
            "row_hash": ["h"] * n,
            "actual_output": ["x"] * n,
        },
        schema_overrides={"tags": pl.List(pl.String)},
    )
    schema = ef.schema.OPERATIONAL_COLUMNS
    return base.with_columns(pl.Series(k, v, dtype=schema[k]) for k, v in columns.items())


def scores(metric: str, f: pl.DataFrame) -> pl.DataFrame:
    return ef.score(f, [ef.metrics.get(metric)])


def test_every_operational_metric_is_in_the_performance_dimension() -> None:
    for name in ("latency", "token-cost", "cost", "retry-count"):
        m = ef.metrics.get(name)
        assert (m.dimension, m.family, m.threshold) == ("performance", "operational", 0.5)


def test_latency_is_one_minus_latency_over_budget_clamped() -> None:
    f = frame(5, latency_ms=[0.0, 2500.0, 10_000.0, 25_000.0, 500.0])
    assert scores("latency", f).get_column("score").to_list() == [1.0, 0.75, 0.0, 0.0, 0.95]
    out = scores("latency(max_ms=1000.0)", f)
    assert out.get_column("score").to_list() == [1.0, 0.0, 0.0, 0.0, 0.5]
    assert out.get_column("passed").to_list() == [True, False, False, False, True]
    assert json.loads(out.get_column("details")[4]) == {"value": 500.0, "max_ms": 1000.0}


def test_token_cost_cost_and_retry_count_golden_values() -> None:
    f = frame(
        3,
        prompt_tokens=[1000, 3000, 100],
        completion_tokens=[24, 2000, 0],
        cost_usd=[0.0, 0.0025, 0.5],
        retries=[0, 1, 7],
    )
    assert scores("token-cost", f).get_column("score").to_list() == pytest.approx(
        [1 - 1024 / 4096, 0.0, 1 - 100 / 4096]
    )
    prompt = scores("token-cost(max_tokens=1000, count=prompt)", f)
    assert prompt.get_column("score").to_list() == pytest.approx([0.0, 0.0, 0.9])
    completion = scores("token-cost(max_tokens=100, count=completion)", f)
    assert completion.get_column("score").to_list() == pytest.approx([0.76, 0.0, 1.0])
    assert scores("cost", f).get_column("score").to_list() == pytest.approx([1.0, 0.75, 0.0])
    assert scores("retry-count", f).get_column("score").to_list() == pytest.approx(
        [1.0, 2 / 3, 0.0]
    )


@pytest.mark.parametrize(
    ("metric", "column"),
    [
        ("latency", "latency_ms"),
        ("token-cost", "prompt_tokens + completion_tokens"),
        ("token-cost(count=prompt)", "prompt_tokens"),
        ("cost", "cost_usd"),
        ("retry-count", "retries"),
    ],
)
def test_a_missing_column_is_every_samples_error_never_a_zero(metric: str, column: str) -> None:
    out = scores(metric, frame(2))
    assert out.get_column("score").to_list() == [None, None]
    assert out.get_column("passed").to_list() == [None, None]
    name = ef.metrics.get(metric).name
    for i, error in enumerate(out.get_column("error")):
        assert error.startswith(f"Sample 's{i}' has no {column} for {name} metric")


def test_a_missing_value_is_that_samples_error() -> None:
    f = frame(3, latency_ms=[100.0, None, 200.0], prompt_tokens=[1, 2, None],
              completion_tokens=[1, None, 3])  # fmt: skip
    lat = scores("latency", f)
    assert lat.get_column("score").to_list() == [0.99, None, 0.98]
    assert lat.get_column("error").to_list()[1] == (
        "Sample 's1' has no latency_ms for latency metric: the outputs did not record it "
        "(add it to the saved outputs, or evaluate with system= to measure it)."
    )
    tokens = scores("token-cost", f)
    assert tokens.get_column("score").to_list() == [pytest.approx(1 - 2 / 4096), None, None]


def test_negative_or_non_finite_values_are_errors() -> None:
    f = frame(3, latency_ms=[-1.0, float("nan"), float("inf")], retries=[-2, 0, 1])
    lat = scores("latency", f)
    assert lat.get_column("score").to_list() == [None, None, None]
    assert lat.get_column("error")[0] == (
        "Sample 's0' latency_ms must be a finite number >= 0 for latency metric; got -1.0."
    )
    assert scores("retry-count", f).get_column("score").to_list() == [
        None,
        1.0,
        pytest.approx(2 / 3),
    ]


def test_budgets_must_be_positive() -> None:
    with pytest.raises(ef.MetricError, match="max_ms"):
        ef.metrics.latency(max_ms=0.0)
    with pytest.raises(ef.MetricError, match="max_retries"):
        ef.metrics.retry_count(max_retries=-1)


def _dataset() -> ef.Dataset:
    return ef.Dataset.from_records(
        [{"id": i, "input": {"q": i}, "expected_output": "ok"} for i in ("a", "b")], name="ops"
    )


def test_saved_outputs_frame_carries_operational_columns_to_the_metrics() -> None:
    outputs = pl.DataFrame(
        {
            "sample_id": ["b", "a"],
            "actual_output": ["ok", "ok"],
            "latency_ms": [4000.0, 1000.0],
            "cost_usd": [0.001, None],
        }
    )
    run = ef.evaluate(_dataset(), outputs=outputs, metrics=["latency", "cost"])
    assert run.frame.get_column("latency_ms").to_list() == [1000.0, 4000.0]
    wide = run.wide().sort("sample_id")
    assert wide.get_column("latency").to_list() == [0.9, 0.6]
    assert wide.get_column("cost").to_list() == [None, 0.9]
    assert run.failures.get_column("sample_id").to_list() == ["a"]


def test_saved_outputs_file_carries_operational_columns(tmp_path: Path) -> None:
    path = tmp_path / "outputs.jsonl"
    path.write_text(
        '{"sample_id": "a", "actual_output": "ok", "latency_ms": 120, "retries": 0,'
        ' "prompt_tokens": 10, "completion_tokens": 5}\n'
        '{"sample_id": "b", "actual_output": "ok", "latency_ms": 80, "retries": 2,'
        ' "prompt_tokens": 10, "completion_tokens": 5}\n',
        encoding="utf-8",
    )
    run = ef.evaluate(
        _dataset(), outputs=path, metrics=["latency(max_ms=200.0)", "retry-count", "token-cost"]
    )
    wide = run.wide().sort("sample_id")
    assert wide.get_column("latency(max_ms=200.0)").to_list() == pytest.approx([0.4, 0.6])
    assert wide.get_column("retry-count").to_list() == pytest.approx([1.0, 1 / 3])
    assert wide.get_column("token-cost").to_list() == pytest.approx([1 - 15 / 4096] * 2)


def test_evaluate_with_a_system_records_latency_per_call() -> None:
    def slow(inp: dict[str, object]) -> str:
        time.sleep(0.2 if inp["q"] == "a" else 0.0)
        return "ok"

    run = ef.evaluate(
        _dataset(), system=slow, metrics=["latency(max_ms=1000.0)"], repetitions=2,
        concurrency=1, progress=False,
    )  # fmt: skip
    latencies = dict(run.frame.group_by("sample_id").agg(pl.col("latency_ms").min()).iter_rows())
    assert latencies["a"] >= 200.0
    assert latencies["b"] < latencies["a"]
    assert run.failures.height == 0
    assert run.scores.get_column("score").is_between(0.0, 1.0).all()
