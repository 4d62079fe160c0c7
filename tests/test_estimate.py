"""Prediction-powered estimates: the formula against a plain implementation, interval
coverage by simulation with a biased judge, labels, and which rows to label next."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import evalframe as ef
from evalframe.core._estimate import bins, ppi, read_labels, suggest_labels
from evalframe.views._calibration import estimate_markdown

Z = 1.959963984540054


def slow_ppi(
    judged: list[float], lab_judge: list[float], labels: list[float]
) -> tuple[float, float]:
    """Plain Python: mean of all judge values plus the mean human-minus-judge correction."""
    rect = [y - f for y, f in zip(labels, lab_judge, strict=True)]
    est = sum(judged) / len(judged) + sum(rect) / len(rect)
    se = math.sqrt(
        statistics.variance(judged) / len(judged) + statistics.variance(rect) / len(rect)
    )
    return est, se


def synthetic(rng: np.random.Generator, n: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    """True human scores in [0, 1] and a judge that is generous and noisy."""
    truth = rng.beta(2, 3, n)
    judge = np.clip(0.25 + 0.8 * truth + rng.normal(0, 0.12, n), 0, 1)
    return truth, judge


def scores_frame(judge: np.ndarray, tags: list[list[str]] | None = None) -> pl.DataFrame:
    n = len(judge)
    return pl.DataFrame(
        {
            "sample_id": [f"s{i}" for i in range(n)],
            "metric": ["judge"] * n,
            "score": judge,
            "passed": judge >= 0.5,
            "error": [None] * n,
        },
        schema_overrides={"error": pl.String},
    )


def test_ppi_matches_the_plain_formula() -> None:
    rng = np.random.default_rng(3)
    truth, judge = synthetic(rng, 300)
    idx = rng.choice(300, 40, replace=False)
    est, low, high = ppi(judge, judge[idx], truth[idx])  # type: ignore[misc]
    ref, se = slow_ppi(judge.tolist(), judge[idx].tolist(), truth[idx].tolist())
    assert est == pytest.approx(ref, abs=1e-12)
    assert (low, high) == pytest.approx((ref - Z * se, ref + Z * se), abs=1e-12)


def test_stratified_ppi_is_the_weighted_sum_of_per_bin_estimates() -> None:
    rng = np.random.default_rng(4)
    truth, judge = synthetic(rng, 500)
    idx = rng.choice(500, 120, replace=False)
    cut = bins(judge, 4)
    est, low, high = ppi(  # type: ignore[misc]
        judge, judge[idx], truth[idx], strata=cut, labelled_strata=cut[idx]
    )
    total, var = 0.0, 0.0
    for h in sorted(set(cut.tolist())):
        in_h = [i for i in range(500) if cut[i] == h]
        lab = [i for i in idx.tolist() if cut[i] == h]
        e, se = slow_ppi([judge[i] for i in in_h], [judge[i] for i in lab], [truth[i] for i in lab])
        w = len(in_h) / 500
        total += w * e
        var += w * w * se * se
    assert est == pytest.approx(total, abs=1e-12)
    assert high - low == pytest.approx(2 * Z * math.sqrt(var), abs=1e-12)


def test_interval_covers_the_truth_about_95_percent_with_a_biased_judge() -> None:
    covered_ppi = covered_judge = 0
    widths_ppi, widths_human = [], []
    runs = 400
    for seed in range(runs):
        rng = np.random.default_rng(seed)
        truth, judge = synthetic(rng)
        idx = rng.choice(len(truth), 150, replace=False)
        est = ef.estimate(
            scores_frame(judge),
            labels=pl.DataFrame({"sample_id": [f"s{i}" for i in idx], "label": truth[idx]}),
            metric="judge",
            cohorts=False,
        )
        target = float(truth.mean())
        _, low, high = est.get("mean")
        covered_ppi += low <= target <= high  # type: ignore[operator]
        _, jl, jh = est.get("mean", "judge-only")
        covered_judge += jl <= target <= jh  # type: ignore[operator]
        widths_ppi.append(high - low)  # type: ignore[operator]
        _, hl, hh = est.get("mean", "human-only")
        widths_human.append(hh - hl)  # type: ignore[operator]
    assert 0.92 <= covered_ppi / runs <= 0.975
    assert covered_judge / runs < 0.05  # the judge alone is confidently wrong
    assert statistics.mean(widths_ppi) < statistics.mean(widths_human)  # labels go further


def test_suggested_labels_keep_the_stratified_interval_valid() -> None:
    covered, runs = 0, 250
    for seed in range(runs):
        rng = np.random.default_rng(10_000 + seed)
        truth, judge = synthetic(rng, 1500)
        scores = scores_frame(judge)
        first = rng.choice(1500, 40, replace=False)
        have = pl.DataFrame({"sample_id": [f"s{i}" for i in first], "label": truth[first]})
        picks = suggest_labels(scores, metric="judge", n=100, labels=have, strata=5, seed=seed)
        ids = [int(s[1:]) for s in picks.get_column("sample_id")]
        more = pl.DataFrame({"sample_id": picks.get_column("sample_id"), "label": truth[ids]})
        est = ef.estimate(
            scores, labels=pl.concat([have, more]), metric="judge", strata=5, cohorts=False
        )
        _, low, high = est.get("pass_rate")
        covered += low <= float((truth >= 0.5).mean()) <= high  # type: ignore[operator]
    assert 0.92 <= covered / runs <= 0.98


def test_suggest_picks_new_rows_in_every_bin_deterministically() -> None:
    rng = np.random.default_rng(1)
    _, judge = synthetic(rng, 600)
    scores = scores_frame(judge)
    have = {"s0": 1.0, "s1": 0.0}
    picks = suggest_labels(scores, metric="judge", n=50, labels=have, strata=5, seed=7)
    assert picks.height == 50
    assert picks.get_column("sample_id").n_unique() == 50
    assert not set(picks.get_column("sample_id")) & set(have)
    per_bin = picks.group_by("stratum").len()
    occupied = set(bins(judge, 5).tolist())
    assert set(per_bin.get_column("stratum")) == occupied
    assert per_bin.get_column("len").min() >= 2
    again = suggest_labels(scores, metric="judge", n=50, labels=have, strata=5, seed=7)
    assert again.equals(picks)
    # more labels than unlabelled rows: every remaining row, once
    assert suggest_labels(scores, metric="judge", n=10_000, labels=have).height == 598


def test_estimate_over_a_real_run_per_cohort(tmp_path: Path) -> None:
    records = [
        {
            "id": f"q{i}",
            "input": {"question": f"q{i}"},
            "expected_output": "the cat sat on the mat",
            "metadata": {"tags": ["short" if i % 2 else "long"]},
        }
        for i in range(40)
    ]
    outputs = {f"q{i}": "the cat sat" + " on the mat" * (i % 3) for i in range(40)}
    run = ef.evaluate(
        ef.Dataset.from_records(records, name="d"), outputs=outputs, metrics=["rouge-l"]
    )
    labels = tmp_path / "labels.csv"
    labels.write_text(
        "sample_id,label\n"
        + "".join(f"q{i},{'pass' if i % 3 else 'fail'}\n" for i in range(0, 40, 2))
        + "".join(f"q{i},{0.9 if i % 3 else 0.1}\n" for i in range(1, 40, 2)),
        encoding="utf-8",
    )
    est = ef.estimate(run, labels=labels, metric="rouge-l")
    cohorts = set(est.frame.get_column("cohort").drop_nulls())
    assert cohorts == {"long", "short"}
    scores = run.scores.filter(pl.col("metric") == "rouge-l")
    judge_mean = scores.get_column("score").mean()
    assert est.get("mean", "judge-only")[0] == pytest.approx(judge_mean)
    table = read_labels(labels)
    joined = scores.join(table, on="sample_id")
    expected = judge_mean + (joined["label"] - joined["score"]).mean()
    assert est.get("mean")[0] == pytest.approx(expected)
    passed = (table["label"] >= run.metrics[0].threshold).mean()
    assert est.get("pass_rate", "human-only")[0] == pytest.approx(passed)
    doc = est.to_dict()
    assert doc["schema_version"] == "evalframe.estimate.v1"
    assert json.loads(json.dumps(doc))["metric"] == "rouge-l"


def test_labels_in_every_format_and_their_errors(tmp_path: Path) -> None:
    want = [{"sample_id": "a", "label": 1.0}, {"sample_id": "b", "label": 0.25}]
    (tmp_path / "l.json").write_text(json.dumps({"a": "pass", "b": 0.25}), encoding="utf-8")
    (tmp_path / "r.json").write_text(
        json.dumps([{"id": "a", "label": True}, {"id": "b", "label": 0.25}]), encoding="utf-8"
    )
    (tmp_path / "l.jsonl").write_text(
        '{"sample_id": "a", "label": "pass"}\n{"sample_id": "b", "label": 0.25}\n', encoding="utf-8"
    )
    pl.DataFrame(want).write_parquet(tmp_path / "l.parquet")
    for name in ("l.json", "r.json", "l.jsonl", "l.parquet"):
        assert read_labels(tmp_path / name).to_dicts() == want, name
    with pytest.raises(ef.DatasetError, match=r"sample 'b' field 'label'.*got 1\.5"):
        read_labels({"a": 1, "b": 1.5})
    with pytest.raises(ef.DatasetError, match="labelled more than once"):
        read_labels(pl.DataFrame({"sample_id": ["a", "a"], "label": [1.0, 0.0]}))
    bad = tmp_path / "bad.csv"
    bad.write_text("sample_id,score\na,1\n", encoding="utf-8")
    with pytest.raises(ef.DatasetError, match=r"bad\.csv: missing column\(s\) label"):
        read_labels(bad)
    with pytest.raises(ef.MetricError, match="no scores for 'nope'"):
        ef.estimate(scores_frame(np.array([0.5, 0.6])), labels={"s0": 1}, metric="nope")
    with pytest.raises(ef.DatasetError, match="None of the 1 labels"):
        ef.estimate(scores_frame(np.array([0.5, 0.6])), labels={"zz": 1}, metric="judge")


def test_too_few_labels_give_no_interval_rather_than_a_wrong_one() -> None:
    est = ef.estimate(
        scores_frame(np.array([0.2, 0.9, 0.4])), labels={"s0": 0.0}, metric="judge", cohorts=False
    )
    assert est.get("mean") == (None, None, None)
    assert est.get("mean", "judge-only")[0] == pytest.approx(0.5)
    reasons = dict(
        est.frame.filter(pl.col("quantity") == "mean").select("method", "reason").iter_rows()
    )
    assert reasons == {
        "prediction-powered": "undefined: fewer than two labelled rows",
        "judge-only": None,
        "human-only": "undefined: one labelled row gives no interval",
    }


def test_labels_that_all_agree_give_no_interval_of_zero_width() -> None:
    # Three labels, all 0: their mean is 0.0 but a normal interval would be [0, 0], a
    # certainty three labels cannot give. The estimate stays; the interval says why not.
    est = ef.estimate(
        scores_frame(np.array([0.2, 0.9, 0.4, 0.6])),
        labels={"s0": 0.0, "s1": 0.0, "s2": 0.0},
        metric="judge",
        cohorts=False,
    )
    row = est.frame.filter((pl.col("quantity") == "mean") & (pl.col("method") == "human-only")).row(
        0, named=True
    )
    assert (row["estimate"], row["low"], row["high"]) == (0.0, None, None)
    assert row["reason"] == "undefined: every labelled row has the same value"
    assert "n/a (undefined: every labelled row has the same value)" in estimate_markdown(est)
