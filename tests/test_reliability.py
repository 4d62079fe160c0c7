"""outcome-consistency and score-consistency over 1, 2 and 10 repetitions of a row."""

from __future__ import annotations

import json
import statistics

import polars as pl
import pytest

import evalframe as ef


def frame(outputs: dict[str, list[str | None]], expected: str = "Paris") -> pl.DataFrame:
    """Rows of the same sample repeated, one per output."""
    rows = [
        {
            "sample_id": sid,
            "input": "{}",
            "expected_output": expected,
            "expected_type": "string",
            "metadata": "{}",
            "tags": [],
            "row_hash": "h",
            "actual_output": out,
            "repetition": rep,
        }
        for sid, outs in outputs.items()
        for rep, out in enumerate(outs)
    ]
    return pl.DataFrame(rows, schema_overrides={"tags": pl.List(pl.String)})


def by_sample(metric: str, outputs: dict[str, list[str | None]]) -> dict[str, float | None]:
    out = ef.score(frame(outputs), [ef.metrics.get(metric)])
    per = out.group_by("sample_id").agg(pl.col("score").unique())
    assert per.get_column("score").list.len().max() == 1  # same score on every repetition
    return {sid: s[0] for sid, s in per.iter_rows()}


def test_outcome_consistency_with_1_2_and_10_repetitions() -> None:
    outputs: dict[str, list[str | None]] = {
        "one": ["Paris"],
        "two_split": ["Paris", "Lyon"],
        "two_agree": ["Lyon", "Rome"],
        "ten": ["Paris"] * 7 + ["Lyon"] * 3,
        "ten_all": ["Paris"] * 10,
    }
    got = by_sample("outcome-consistency", outputs)
    assert got == {"one": None, "two_split": 0.5, "two_agree": 1.0, "ten": 0.7, "ten_all": 1.0}
    out = ef.score(frame(outputs), [ef.metrics.outcome_consistency()])
    assert out.filter(pl.col("sample_id") == "one").get_column("error").to_list() == [
        "Sample 'one' has 1 run(s); outcome-consistency metric needs at least 2 "
        "(evaluate with repetitions=2 or more)."
    ]
    ten = out.filter(pl.col("sample_id") == "ten")
    assert json.loads(ten.get_column("details")[0]) == {
        "runs": 10, "passed": 7, "majority": "pass", "metric": "exact-match",
    }  # fmt: skip
    # The default threshold is 0.8: 7 of 10 agreeing is not consistent enough.
    assert ten.get_column("passed").unique().to_list() == [False]


def test_outcome_consistency_uses_the_inner_metrics_threshold() -> None:
    outputs: dict[str, list[str | None]] = {"a": ["Paris", "Pari", "Paris!"]}
    # levenshtein vs "Paris": 1.0, 0.8, 0.8333: all pass at 0.5, only one passes at 0.9.
    assert by_sample("outcome-consistency(metric=levenshtein)", outputs) == {"a": 1.0}
    spec = 'outcome-consistency(metric="levenshtein(threshold=0.9)")'
    assert by_sample(spec, outputs) == {"a": pytest.approx(2 / 3)}
    assert ef.metrics.get(spec).id == spec


def test_an_errored_repetition_counts_as_not_passing() -> None:
    outputs: dict[str, list[str | None]] = {"a": ["Paris", None, None]}
    out = ef.score(frame(outputs), [ef.metrics.get("outcome-consistency")])
    # The runner blocks the repetitions without output; the one that ran carries the score.
    ran = out.filter(pl.col("repetition") == 0)
    assert ran.get_column("score").to_list() == [pytest.approx(2 / 3)]
    assert out.filter(pl.col("repetition") > 0).get_column("error").null_count() == 0


def test_score_consistency_with_1_2_and_10_repetitions() -> None:
    ten = ["Paris", "Pari", "Paris", "Paris", "Lyon", "Paris", "Paris", "Pari", "Paris", "Paris"]
    outputs: dict[str, list[str | None]] = {
        "one": ["Paris"],
        "two": ["Paris", "Pari"],
        "ten": list(ten),
        "same": ["Lyon"] * 10,
    }
    got = by_sample("score-consistency(metric=levenshtein)", outputs)
    sims = {"Paris": 1.0, "Pari": 0.8, "Lyon": 0.0}
    assert got["one"] is None
    assert got["two"] == pytest.approx(1 - 2 * statistics.pstdev([1.0, 0.8]))
    assert got["ten"] == pytest.approx(1 - 2 * statistics.pstdev([sims[o] for o in ten]))
    assert got["same"] == 1.0
    ranged = by_sample("score-consistency(metric=levenshtein, spread=range)", outputs)
    assert ranged["two"] == pytest.approx(0.8)
    assert ranged["ten"] == 0.0


def test_score_consistency_leaves_errored_repetitions_out() -> None:
    outputs: dict[str, list[str | None]] = {"a": ["Paris", None, "Paris"], "b": ["Paris", None]}
    out = ef.score(frame(outputs), [ef.metrics.get("score-consistency(metric=levenshtein)")])
    first = out.filter(pl.col("repetition") == 0).sort("sample_id")
    assert first.get_column("score").to_list() == [1.0, None]
    assert first.get_column("error")[1] == (
        "Sample 'b' has 2 run(s) of which 1 scored; score-consistency metric needs at least "
        "2 scored runs."
    )


def test_reliability_through_evaluate_with_repetitions() -> None:
    ds = ef.Dataset.from_records(
        [{"id": "q", "input": {"question": "Capital?"}, "expected_output": "Paris"}], name="geo"
    )
    answers = iter(["Paris", "Lyon", "Paris", "Paris"])
    run = ef.evaluate(
        ds,
        system=lambda _: next(answers),
        metrics=["outcome-consistency", "score-consistency(metric=levenshtein)"],
        repetitions=4,
        concurrency=1,
        progress=False,
    )
    summary = dict(run.summary.select("metric", "mean").iter_rows())
    assert summary["outcome-consistency"] == 0.75
    assert summary["score-consistency(metric=levenshtein)"] == pytest.approx(
        1 - 2 * statistics.pstdev([1.0, 0.0, 1.0, 1.0])
    )


def test_the_inner_metric_must_be_a_per_sample_metric() -> None:
    with pytest.raises(ef.MetricError, match="must name a per-sample metric"):
        ef.metrics.get("outcome-consistency(metric=score-consistency)")
    with pytest.raises(ef.MetricError, match="Unknown metric"):
        ef.metrics.get("outcome-consistency(metric=nope)")


@pytest.mark.parametrize(
    "metric", ["outcome-consistency", "score-consistency", "output-consistency"]
)
def test_one_execution_gives_no_reliability_score_and_says_why(metric: str) -> None:
    # Consistency across repetitions is undefined for one: null with the reason, never 0.0
    # (nor 1.0), and the run's aggregates over it are null too.
    out = ef.score(frame({"one": ["Paris"], "also": ["Lyon"]}), [ef.metrics.get(metric)])
    assert out.get_column("score").to_list() == [None, None]
    assert all("needs at least 2" in e for e in out.get_column("error").to_list())
    row = ef.aggregate.summarize(out).row(0, named=True)
    assert (row["mean"], row["pass_rate_scored"], row["pass_rate"]) == (None, None, 0.0)
