"""Per-metric thresholds through every aggregate, dimension roll-ups, safety failures, and the
contract of the structural, similarity, deterministic, operational and reliability metrics."""

from __future__ import annotations

import json

import polars as pl
import pytest
from click.testing import CliRunner

import evalframe as ef
from evalframe.metrics import MetricDef, Scored

OUTPUTS = {"q1": "Returns within 30 days.", "q2": "3-5 days", "q3": "We ship worldwide."}
RECORDS = [
    {"id": "q1", "input": {}, "expected_output": "Refunds within 30 days.",
     "metadata": {"tags": ["policy"]}},
    {"id": "q2", "input": {}, "expected_output": "3-5 days", "metadata": {"tags": ["shipping"]}},
    {"id": "q3", "input": {}, "expected_output": "We ship to 40 countries.",
     "metadata": {"tags": ["shipping"]}},
]  # fmt: skip


def dataset() -> ef.Dataset:
    return ef.Dataset.from_records(RECORDS, name="thresholds")


def run(metrics: list[object], outputs: dict[str, str] | None = None) -> ef.Run:
    return ef.evaluate(
        dataset(),
        outputs=outputs or OUTPUTS,
        metrics=metrics,  # type: ignore[arg-type]
        run_id="run-thresholds",
    )


def _no_email() -> Scored:
    """1.0 when the output has no e-mail address."""
    has = pl.col("actual_output").str.contains(r"\S+@\S+")
    return Scored(score=(~has).cast(pl.Float64))


NO_EMAIL = MetricDef(
    name="no-email", family="custom", dimension="safety", summary="", build=_no_email, params=()
).bind()


# --- thresholds -----------------------------------------------------------------------------


def test_canonical_ids_carry_non_default_thresholds() -> None:
    assert ef.metrics.get("levenshtein(threshold=0.9)").id == "levenshtein(threshold=0.9)"
    assert ef.metrics.levenshtein(threshold=0.5).id == "levenshtein"
    assert ef.metrics.outcome_consistency().threshold == 0.8
    assert ef.metrics.get("outcome-consistency(threshold=0.8)").id == "outcome-consistency"
    with pytest.raises(ef.MetricError, match=r"threshold must be in \[0, 1\]"):
        ef.metrics.get("bleu(threshold=1.5)")


def test_passed_is_score_at_least_the_metrics_own_threshold() -> None:
    r = run(["levenshtein", "levenshtein(threshold=0.9)", "levenshtein(threshold=0.0)"])
    wide = r.scores.pivot(on="metric", index="sample_id", values="passed").sort("sample_id")
    scores = r.scores.filter(pl.col("metric") == "levenshtein").sort("sample_id")["score"]
    assert scores.to_list() == pytest.approx([0.8695652173913043, 1.0, 0.45833333333333337])
    assert wide.get_column("levenshtein").to_list() == [True, True, False]
    assert wide.get_column("levenshtein(threshold=0.9)").to_list() == [False, True, False]
    assert wide.get_column("levenshtein(threshold=0.0)").to_list() == [True, True, True]


def test_thresholds_flow_through_summary_macro_f1_and_cohorts() -> None:
    ids = ["levenshtein", "levenshtein(threshold=0.9)"]
    r = run(ids)
    summary = dict(r.summary.select("metric", "pass_rate").iter_rows())
    assert summary == {
        "levenshtein": pytest.approx(2 / 3),
        "levenshtein(threshold=0.9)": pytest.approx(1 / 3),
    }
    # The means do not depend on the threshold; only pass/fail does.
    means = r.summary.get_column("mean").to_list()
    assert means[0] == means[1]
    assert r.macro_f1 == pytest.approx(0.5)
    assert ef.aggregate.macro_f1(r.scores, metrics=ids) == pytest.approx(r.macro_f1)
    cohorts = {(c["label"], c["metric"]): c["pass_rate"] for c in r.cohorts.iter_rows(named=True)}
    assert cohorts[("shipping", "levenshtein(threshold=0.9)")] == 0.5
    assert cohorts[("policy", "levenshtein(threshold=0.9)")] == 0.0
    assert cohorts[("shipping", "levenshtein")] == 0.5
    assert cohorts[("policy", "levenshtein")] == 1.0


def test_histograms_do_not_depend_on_thresholds() -> None:
    r = run(["levenshtein", "levenshtein(threshold=0.9)"])
    h = r.histograms()
    a = h.filter(pl.col("metric") == "levenshtein").get_column("count").to_list()
    b = h.filter(pl.col("metric") == "levenshtein(threshold=0.9)").get_column("count").to_list()
    assert a == b
    assert sum(a) == 3


def test_thresholds_reach_the_report_json_and_markdown() -> None:
    r = run(["levenshtein", "levenshtein(threshold=0.9)", "outcome-consistency"])
    report = r.report()
    block = report["metrics"]["levenshtein(threshold=0.9)"]
    assert (block["threshold"], block["pass_rate"]) == (0.9, pytest.approx(1 / 3))
    assert report["metrics"]["outcome-consistency"]["threshold"] == 0.8
    # outcome-consistency cannot score one repetition: every execution errors on it. The
    # eval-harness field leaves it out; evalframe's macro-F1 counts it as not passed.
    assert report["metrics"]["outcome-consistency"]["n_scored"] == 0
    assert report["headline"]["macro_f1"] == pytest.approx(r.macro_f1)
    summary = r.summary.filter(pl.col("metric") != "outcome-consistency")
    assert report["macro_f1"] == pytest.approx(summary.get_column("pass_rate_scored").mean())
    assert r.macro_f1 == pytest.approx(r.summary.get_column("pass_rate").mean())
    md = report.to_markdown()
    assert "| levenshtein(threshold=0.9) | " in md
    row = next(line for line in md.splitlines() if line.startswith("| levenshtein(threshold"))
    assert "| 0.3333 | 0.9 |" in row


# --- dimensions and safety --------------------------------------------------------------------


def test_dimension_roll_up_pools_scores_and_averages_metrics() -> None:
    outputs = {"q1": "mail me at a@b.io", "q2": "3-5 days", "q3": "We ship worldwide."}
    r = ef.evaluate(
        dataset(),
        outputs=outputs,
        metrics=["exact-match", "levenshtein(threshold=0.9)", NO_EMAIL, "latency"],
    )
    dims = ef.aggregate.dimensions(
        r.scores, {m.id: m.dimension for m in r.metrics}, metrics=r.metric_ids
    )
    assert dims.get_column("dimension").to_list() == ["correctness", "safety", "performance"]
    correctness = dims.row(0, named=True)
    assert correctness["metrics"] == ["exact-match", "levenshtein(threshold=0.9)"]
    assert correctness["n"] == 6
    assert correctness["pass_rate"] == pytest.approx(2 / 6)
    assert correctness["macro_pass_rate"] == pytest.approx((1 / 3 + 1 / 3) / 2)
    performance = dims.row(2, named=True)
    # latency_ms was not recorded: every sample is an error, and nothing is averaged in.
    assert (performance["n_errors"], performance["n_scored"]) == (3, 0)
    assert (performance["mean"], performance["pass_rate"]) == (None, 0.0)

    report = r.report()
    assert list(report["dimensions"]) == ["correctness", "safety", "performance"]
    assert report["dimensions"]["safety"]["pass_rate"] == pytest.approx(2 / 3)
    assert report["dimensions"]["performance"]["mean"] is None  # nothing scored: no mean
    assert report["safety_failures"] == [
        {"sample_id": "q1", "repetition": 0, "metric": "no-email", "score": 0.0, "error": None}
    ]
    md = report.to_markdown()
    assert "## Per-dimension aggregates" in md
    assert "| safety | no-email | 0.6667 |" in md
    assert "## Safety: FAILED" in md
    assert "| q1 | 0 | no-email | 0.0000 |  |" in md
    assert json.loads(report.to_json())["dimensions"] == report["dimensions"]


def test_safety_failures_list_errors_and_every_repetition() -> None:
    r = ef.evaluate(
        dataset(),
        outputs={"q1": "a@b.io", "q2": "ok", "q3": "c@d.io"},
        metrics=[NO_EMAIL],
        repetitions=2,
    )
    rows = ef.aggregate.safety_failures(r.scores, {"no-email": "safety"})
    assert rows.select("sample_id", "repetition").rows() == [
        ("q1", 0), ("q1", 1), ("q3", 0), ("q3", 1),
    ]  # fmt: skip


def test_single_dimension_runs_keep_the_markdown_unchanged() -> None:
    md = run(["levenshtein"]).report().to_markdown()
    assert "## Per-dimension aggregates" not in md
    assert "## Safety" not in md


def test_cli_metrics_lists_family_dimension_and_threshold() -> None:
    from evalframe.cli import cli

    result = CliRunner().invoke(cli, ["metrics", "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = {r["name"]: r for r in json.loads(result.output)}
    expected = {
        "json-valid": ("structural", "correctness", 0.5),
        "json-schema": ("structural", "correctness", 0.5),
        "json-diff": ("structural", "correctness", 0.5),
        "levenshtein": ("similarity", "correctness", 0.5),
        "bleu": ("similarity", "correctness", 0.5),
        "numeric-diff": ("deterministic", "correctness", 0.5),
        "list-contains": ("deterministic", "correctness", 0.5),
        "latency": ("operational", "performance", 0.5),
        "token-cost": ("operational", "performance", 0.5),
        "cost": ("operational", "performance", 0.5),
        "retry-count": ("operational", "performance", 0.5),
        "outcome-consistency": ("reliability", "correctness", 0.8),
        "score-consistency": ("reliability", "correctness", 0.8),
    }
    for name, (family, dimension, threshold) in expected.items():
        row = rows[name]
        assert (row["family"], row["dimension"], row["threshold"]) == (family, dimension, threshold)


# --- the metric contract, over this metrics ----------------------------------------------

NEW_METRICS = [
    "json-valid", "json-schema", "json-diff", "levenshtein", "bleu", "numeric-diff",
    "list-contains", "latency", "token-cost", "cost", "retry-count",
]  # fmt: skip


def mixed_frame() -> pl.DataFrame:
    expected = ['{"type": "object"}', "Paris", '["a", "b"]', "42", "", "null", "日本語"]
    types = ["map", "string", "list", "int", "string", "null", "string"]
    actual = ['{"a": 1}', "Paris, France", "a and b", "about 42", "", "NaN", "日本"]
    n = len(expected)
    return pl.DataFrame(
        {
            "sample_id": [f"s{i}" for i in range(n)],
            "input": ["{}"] * n,
            "expected_output": expected,
            "expected_type": types,
            "metadata": ["{}"] * n,
            "tags": [[] for _ in range(n)],
            "row_hash": ["h"] * n,
            "actual_output": actual,
            "latency_ms": [10.0, None, 2e4, 0.0, 5.0, 1.0, 3.0],
            "prompt_tokens": [1, 2, 3, 4, None, 6, 7],
            "completion_tokens": [1, 2, 3, 4, 5, 6, 7],
            "cost_usd": [0.0, 0.001, 0.1, None, 0.0, 0.0, 0.0],
            "retries": [0, 1, 2, 3, 4, None, 0],
        },
        schema_overrides={"tags": pl.List(pl.String)},
    )


@pytest.mark.parametrize("spec", NEW_METRICS)
def test_contract_float64_in_range_length_preserving_order_invariant(spec: str) -> None:
    m = ef.metrics.get(spec)
    f = mixed_frame()
    out = ef.score(f, [m])
    assert out.schema["score"] == pl.Float64
    assert out.height == f.height
    assert out.get_column("score").drop_nulls().is_between(0.0, 1.0).all()
    assert ((out["score"].is_null()) == (out["error"].is_not_null())).all()
    again = ef.score(f, [m])
    assert again.equals(out)
    shuffled = ef.score(f.reverse(), [m]).reverse()
    assert shuffled.select("sample_id", "score", "error").equals(
        out.select("sample_id", "score", "error")
    )
    empty = ef.score(f.head(0), [m])
    assert empty.height == 0
