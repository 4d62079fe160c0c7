"""Aggregation as group-bys (reference §6.2-§6.3), checked against NumPy."""

from __future__ import annotations

import numpy as np
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from evalframe.core import aggregate


def long(metric_scores: dict[str, list[float | None]], threshold: float = 0.5) -> pl.DataFrame:
    rows = []
    for metric, values in metric_scores.items():
        for i, v in enumerate(values):
            rows.append(
                {
                    "run_id": "r",
                    "sample_id": f"s{i}",
                    "repetition": 0,
                    "metric": metric,
                    "score": v,
                    "passed": None if v is None else v >= threshold,
                    "error": "boom" if v is None else None,
                }
            )
    return pl.DataFrame(
        rows,
        schema={"run_id": pl.String, "sample_id": pl.String, "repetition": pl.Int64,
                "metric": pl.String, "score": pl.Float64, "passed": pl.Boolean,
                "error": pl.String},
    )  # fmt: skip


def test_reference_percentile_example() -> None:
    out = aggregate.summarize(long({"m": [0, 0.25, 0.5, 0.75, 1]}))
    row = out.row(0, named=True)
    assert row["p50"] == 0.5
    assert abs(row["p95"] - 0.95) < 1e-12
    assert row["pass_rate"] == 0.6


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), st.floats(0, 1)), min_size=1, max_size=50))
def test_summary_agrees_with_numpy(values: list[float | None]) -> None:
    row = aggregate.summarize(long({"m": values})).row(0, named=True)
    scored = np.array([v for v in values if v is not None])
    assert row["n"] == len(values)
    assert row["n_scored"] == scored.size
    assert row["n_errors"] == len(values) - scored.size
    passed = int((scored >= 0.5).sum())
    assert row["n_passed"] == passed
    # one notion of passing: an errored row did not pass
    assert np.isclose(row["pass_rate"], passed / len(values))
    if scored.size:
        assert np.isclose(row["mean"], scored.mean())
        assert np.isclose(row["p50"], np.percentile(scored, 50))
        assert np.isclose(row["p95"], np.percentile(scored, 95))
        assert np.isclose(row["pass_rate_scored"], passed / scored.size)
    else:  # nothing scored: no mean, no percentile, no pass rate over scored rows
        assert (row["mean"], row["p50"], row["p95"]) == (None, None, None)
        assert row["pass_rate_scored"] is None


def test_macro_f1_counts_errored_rows_as_not_passed() -> None:
    scores = long({"a": [1.0, 1.0], "b": [None, None], "c": [1.0, None]})
    # a: 2 of 2, b: 0 of 2 (both errored), c: 1 of 2
    assert aggregate.macro_f1(scores) == (1.0 + 0.0 + 0.5) / 3
    summary = aggregate.summarize(scores)
    # over scored rows only: a 1.0, c 1.0 (b scored nothing and drops out)
    assert aggregate.macro_f1_scored_of(summary) == 1.0


def test_macro_f1_leaves_safety_metrics_out() -> None:
    scores = long({"a": [1.0, 0.0], "pii": [0.0, 0.0], "tox": [1.0, 1.0]})
    dims = {"a": "correctness", "pii": "safety", "tox": "safety"}
    assert aggregate.macro_f1(scores, dimension_of=dims) == 0.5
    assert aggregate.macro_f1(scores) == (0.5 + 0.0 + 1.0) / 3
    only_safety = {"pii": "safety", "tox": "safety"}
    assert aggregate.macro_f1(long({"pii": [1.0], "tox": [1.0]}), dimension_of=only_safety) is None


def test_headline_counts_errored_executions_and_the_safety_verdict() -> None:
    # two executions: s0 scored on both metrics (a passes, pii fails), s1 errored on a only
    scores = long({"a": [1.0, None], "pii": [0.2, 1.0]})
    head = aggregate.headline(scores, {"a": "correctness", "pii": "safety"}, executions=2)
    assert (head["executions"], head["errored_executions"]) == (2, 1)
    assert head["incomplete"] is True
    assert head["quality_metrics"] == ["a"]
    assert (head["macro_f1"], head["macro_f1_scored"]) == (0.5, 1.0)
    assert head["safety"] == {
        "metrics": ["pii"], "executions": 2, "failed_executions": 1,
        "errored_executions": 0, "passed": False,
    }  # fmt: skip
    assert aggregate.status_lines(head) == [
        "INCOMPLETE: 1 of 2 executions errored",
        "SAFETY FAILED: 1 of 2 executions failed or errored on a safety metric (pii)",
    ]
    clean = aggregate.headline(long({"a": [1.0]}), {"a": "correctness"}, executions=1)
    assert aggregate.status_lines(clean) == []
    assert aggregate.status_line(clean) == "COMPLETE: 1 of 1 executions scored"
    assert clean["safety"] is None


def test_metric_order_follows_the_request() -> None:
    scores = long({"a": [1.0], "b": [0.0]})
    out = aggregate.summarize(scores, metrics=["b", "a", "c"])
    assert out.get_column("metric").to_list() == ["b", "a", "c"]
    assert out.row(2, named=True)["n"] == 0


def test_cohorts_explode_tags_with_untagged_last() -> None:
    scores = long({"m": [1.0, 0.0, 1.0, 0.2]})
    tags = pl.DataFrame(
        {"sample_id": ["s0", "s1", "s2", "s3"], "tags": [["b", "a"], ["a"], [], ["Z"]]}
    )
    out = aggregate.cohorts(scores, tags)
    assert out.get_column("label").to_list() == ["Z", "a", "b", "(untagged)"]
    assert out.get_column("sample_count").to_list() == [1, 2, 1, 1]
    a = out.filter(pl.col("label") == "a").row(0, named=True)
    assert a["mean"] == 0.5
    assert a["pass_rate"] == 0.5
    untagged = out.row(3, named=True)
    assert untagged["cohort"] is None
    assert untagged["is_untagged"] is True


def test_cohorts_list_every_metric_even_when_absent() -> None:
    scores = long({"m": [1.0], "n": [None]})
    tags = pl.DataFrame({"sample_id": ["s0"], "tags": [["x"]]})
    out = aggregate.cohorts(scores, tags)
    assert out.get_column("metric").to_list() == ["m", "n"]
    errored = out.row(1, named=True)
    assert errored["n_errors"] == 1
    # every row of the cohort errored: no mean and no pass rate over scored rows, never 0.0
    assert (errored["mean"], errored["pass_rate_scored"]) == (None, None)
    assert errored["pass_rate"] == 0.0  # the attempted row did not pass


def test_histogram_bucket_rules() -> None:
    values: list[float | None] = [0.0, 0.7 - 0.4, 0.35, 0.99, 1.0, 0.1, None]
    out = aggregate.histograms(long({"m": values}))
    assert out.height == 10
    counts = out.get_column("count").to_list()
    assert counts == [1, 1, 0, 2, 0, 0, 0, 0, 0, 2]
    assert out.row(9, named=True)["max"] == 1.0
    assert out.row(3, named=True)["min"] == 0.3


def test_histogram_with_three_buckets_puts_one_third_in_bucket_one() -> None:
    out = aggregate.histograms(long({"m": [1 / 3]}), buckets=3)
    assert out.get_column("count").to_list() == [0, 1, 0]


def test_users_can_group_by_their_own_columns() -> None:
    scores = long({"m": [1.0, 0.0, 1.0, 1.0]}).with_columns(
        pl.Series("model", ["x", "x", "y", "y"])
    )
    out = scores.group_by("model", "metric").agg(aggregate.AGGREGATES).sort("model")
    assert out.get_column("pass_rate").to_list() == [0.5, 1.0]
