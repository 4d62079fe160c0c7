"""Comparison: row verdicts (reference §8.2), deltas, and the statistics checked against SciPy."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import polars as pl
import pytest
from scipy import stats

import evalframe as ef
from evalframe.core._compare import COMPARISON_SCHEMA_VERSION, ComparisonError, compare
from evalframe.core._precision import precision_block, row_aggregates
from evalframe.core._stats import PairedCounts, bootstrap_deltas, holm, mcnemar_exact
from evalframe.store import Store

EXACT = ef.metrics.get("exact-match")
CONTAINS = ef.metrics.get("contains")

Scores = dict[str, list[float | None]]


def _dataset(ids: list[str], name: str = "rows", tags: dict[str, list[str]] | None = None) -> Any:
    tags = tags or {}
    return ef.Dataset.from_records(
        [
            {
                "id": i,
                "input": {"q": i.rstrip("'")},
                "expected_output": "x",
                "metadata": {"tags": tags.get(i, [])},
            }
            for i in ids
        ],
        name=name,
    )


def _run(
    ds: Any, per_metric: dict[Any, Scores], run_id: str, *, extra_ids: dict[str, str] | None = None
) -> ef.Run:
    """A run with exactly the given scores (None is an error) for each metric and repetition."""
    reps = len(next(iter(next(iter(per_metric.values())).values())))
    frame = pl.concat(
        [
            ds.with_columns(
                pl.lit(r, pl.Int64).alias("repetition"), pl.lit("x").alias("actual_output")
            )
            for r in range(reps)
        ]
    )
    records = []
    for metric, table in per_metric.items():
        for r in range(reps):
            for sid in ds.get_column("sample_id"):
                s = table[sid][r]
                records.append(
                    {
                        "run_id": run_id,
                        "sample_id": sid,
                        "repetition": r,
                        "metric": metric.id,
                        "score": s,
                        "passed": None if s is None else s >= metric.threshold,
                        "error": "boom" if s is None else None,
                        "details": None,
                    }
                )
    scores = pl.DataFrame(records, schema=ef.schema.SCORES_SCHEMA)
    return ef.Run(
        run_id=run_id,
        name=run_id,
        dataset=ds,
        frame=frame,
        scores=scores,
        metrics=list(per_metric),
        started_at=0.0,
        finished_at=1.0,
    )


# --- row verdicts ---------------------------------------------------------------------------


@pytest.fixture
def pair() -> tuple[ef.Run, ef.Run]:
    before = {
        "a": [1.0, 1.0],
        "b": [1.0, 0.0],
        "c": [0.9, 0.9],
        "d": [0.9, 0.9],
        "e": [0.0, 0.0],
        "f": [0.6, 0.6],
        "h": [1.0, 1.0],
    }
    after = {
        "a": [1.0, 0.0],
        "b": [0.0, 0.0],
        "c": [0.6, 0.6],
        "d": [0.85, 0.85],
        "e": [1.0, 0.0],
        "f": [0.9, 0.9],
        "g": [1.0, 1.0],
    }
    ds_before = _dataset(list(before), tags={"a": ["t1"], "b": ["t1", "t2"]})
    ds_after = _dataset(list(after), tags={"a": ["t1"], "b": ["t1", "t2"]})
    return (
        _run(ds_before, {CONTAINS: before}, "before"),
        _run(ds_after, {CONTAINS: after}, "after"),
    )


def test_row_verdicts_follow_the_reference_rules(pair: tuple[ef.Run, ef.Run]) -> None:
    c = compare(*pair, epsilon=0.1, n_bootstrap=0)
    got = {
        r["sample_id"]: (r["status"], r["confident"], r["newly_failing"])
        for r in c.rows.iter_rows(named=True)
    }
    assert got == {
        "a": ("regressed", True, True),  # always passed, now fails one repetition in two
        "b": ("regressed", True, False),
        "c": ("regressed", True, False),  # same pass rate, score fell beyond the noise
        "d": ("stable", False, False),  # score drift inside the noise
        "e": ("improved", True, False),
        "f": ("improved", True, False),
        "g": ("added", False, False),
        "h": ("removed", False, False),
    }
    assert c.counts == {
        "regressed": 3,
        "regressed_confident": 3,
        "newly_failing": 1,
        "improved": 2,
        "stable": 1,
        "added": 1,
        "removed": 1,
        "compared": 6,
        "regressed_pairs": 3,
        "regressed_pairs_confident": 3,
    }
    assert c.join_key == "row_hash"
    assert not c.resolution_is_statistical


def test_any_pass_rate_drop_regresses_but_is_confident_only_beyond_the_noise(
    pair: tuple[ef.Run, ef.Run],
) -> None:
    c = compare(*pair, epsilon=0.6, n_bootstrap=0)
    a = c.rows.filter(pl.col("sample_id") == "a").row(0, named=True)
    assert (a["status"], a["confident"]) == ("regressed", False)
    assert c.regressed_rows(confident_only=True).height == 0
    assert set(c.regressed_rows().get_column("sample_id")) == {"a", "b"}  # c is noise now
    c_tight = compare(*pair, epsilon=0.1, n_bootstrap=0)
    worst = c_tight.regressed_rows().get_column("sample_id").to_list()
    assert worst[-1] == "c"  # pass-rate drops first, then the score drop


def test_the_default_noise_threshold_is_the_runs_resolution(pair: tuple[ef.Run, ef.Run]) -> None:
    before, after = pair
    c = compare(before, after, n_bootstrap=0)
    rows = row_aggregates(after.scores, after.frame)
    assert c.resolution == precision_block(rows, after.frame.height)["resolution"]
    assert c.resolution_is_statistical


def test_rows_join_by_content_hash_across_renamed_ids() -> None:
    before = _run(_dataset(["a", "b"]), {EXACT: {"a": [1.0], "b": [0.0]}}, "r1")
    renamed = _dataset(["a'", "b'"])  # ids change, input and expected output do not
    after = _run(renamed, {EXACT: {"a'": [1.0], "b'": [0.0]}}, "r2")
    c = compare(before, after, n_bootstrap=0)
    assert c.join_key == "row_hash"
    assert c.rows.get_column("status").to_list() == ["stable", "stable"]
    assert c.rows.get_column("sample_id").to_list() == ["a'", "b'"]


def test_duplicate_row_hashes_fall_back_to_sample_ids() -> None:
    ds = ef.Dataset.from_records(
        [{"id": i, "input": {"q": 1}, "expected_output": "x"} for i in ("a", "b")], name="dup"
    )
    before = _run(ds, {EXACT: {"a": [1.0], "b": [1.0]}}, "r1")
    after = _run(ds, {EXACT: {"a": [1.0], "b": [0.0]}}, "r2")
    c = compare(before, after, n_bootstrap=0)
    assert c.join_key == "sample_id"
    assert c.rows.sort("sample_id").get_column("status").to_list() == ["stable", "regressed"]


def test_runs_of_different_datasets_are_refused() -> None:
    a = _run(_dataset(["a"], name="one"), {EXACT: {"a": [1.0]}}, "r1")
    b = _run(_dataset(["a"], name="two"), {EXACT: {"a": [1.0]}}, "r2")
    with pytest.raises(ComparisonError) as caught:
        compare(a, b)
    assert str(caught.value) == (
        "Cannot compare run r2 with the reference r1: they are runs of different datasets: the "
        "run is of dataset 'two' (1 row), the reference of dataset 'one' (1 row), so their rows "
        "and numbers do not correspond. Compare runs of one dataset (or pass "
        "allow_other_dataset=True when the dataset was only renamed)."
    )
    assert compare(a, b, allow_other_dataset=True, n_bootstrap=0).counts["stable"] == 1
    with pytest.raises(ComparisonError, match="epsilon"):
        compare(a, a, epsilon=2.0)


def test_runs_that_share_no_metric_are_refused_naming_both_metric_lists() -> None:
    ds = _dataset(["a", "b"])
    a = _run(ds, {EXACT: {"a": [1.0], "b": [0.0]}}, "r1")
    b = _run(ds, {CONTAINS: {"a": [1.0], "b": [0.0]}}, "r2")
    with pytest.raises(ComparisonError) as caught:
        compare(a, b)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("Cannot compare run r2 with the reference r1: they share no metric")
    assert "(the run scored contains; the reference scored exact-match)" in message
    assert isinstance(caught.value, ef.EvalframeError)
    assert ef.ComparisonError is ComparisonError


# --- statistics against SciPy -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("b", "c"),
    [(0, 0), (0, 1), (0, 5), (5, 5), (1, 9), (3, 17), (40, 61), (500, 560), (10_000, 10_300)],
)
def test_mcnemar_exact_matches_scipy_binomtest(b: int, c: int) -> None:
    want = 1.0 if b + c == 0 else stats.binomtest(b, b + c, 0.5).pvalue
    assert mcnemar_exact(b, c) == pytest.approx(want, rel=1e-9, abs=1e-300)
    assert mcnemar_exact(c, b) == mcnemar_exact(b, c)


def test_holm_matches_the_step_down_definition() -> None:
    rng = np.random.default_rng(7)
    p = rng.uniform(0, 0.2, size=15).tolist()
    m = len(p)
    order = np.argsort(p)
    want = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        want[i] = running
    assert holm(p) == pytest.approx(want.tolist())
    assert holm([0.01, 0.04, 0.03, None]) == [0.03, 0.06, 0.06, None]
    assert holm([]) == []


def _paired(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    base = rng.uniform(0, 1, size=n)
    before = np.clip(base + rng.normal(0, 0.1, size=n), 0, 1)
    after = np.clip(base + 0.03 + rng.normal(0, 0.1, size=n), 0, 1)
    return before, after


def _counts(before: np.ndarray, after: np.ndarray) -> PairedCounts:
    ones = np.ones((before.size, 1))
    return PairedCounts(
        sum_a=before[:, None],
        n_a=ones,
        pass_a=(before >= 0.5).astype(float)[:, None],
        sum_b=after[:, None],
        n_b=ones,
        pass_b=(after >= 0.5).astype(float)[:, None],
        runs_a=ones,
        runs_b=ones,
    )


def test_paired_bootstrap_interval_agrees_with_scipy() -> None:
    before, after = _paired(400, seed=3)
    ours = bootstrap_deltas(_counts(before, after), n_resamples=5000, seed=11, confidence=0.95)

    def mean_delta(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.mean(b, axis=axis) - np.mean(a, axis=axis)

    def pass_delta(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.mean(b >= 0.5, axis=axis) - np.mean(a >= 0.5, axis=axis)

    for j, statistic in enumerate((mean_delta, pass_delta)):
        ref = stats.bootstrap(
            (before, after),
            statistic,
            paired=True,
            vectorized=True,
            n_resamples=5000,
            method="percentile",
            confidence_level=0.95,
            rng=np.random.default_rng(5),
        ).confidence_interval
        assert ours["point"][j] == pytest.approx(statistic(before, after))
        assert ours["low"][j] == pytest.approx(ref.low, abs=0.01)
        assert ours["high"][j] == pytest.approx(ref.high, abs=0.01)


def test_bootstrap_is_seeded_and_equals_a_plain_resampling_loop() -> None:
    before, after = _paired(60, seed=4)
    counts = _counts(before, after)
    one = bootstrap_deltas(counts, n_resamples=300, seed=1, confidence=0.9)
    again = bootstrap_deltas(counts, n_resamples=300, seed=1, confidence=0.9)
    other = bootstrap_deltas(counts, n_resamples=300, seed=2, confidence=0.9)
    assert np.array_equal(one["low"], again["low"])
    assert not np.array_equal(one["low"], other["low"])
    # The oracle: draw the same indices, recompute each statistic the obvious way.
    picks = np.random.default_rng(1).integers(0, 60, size=(300, 60))
    mean_d = [after[i].mean() - before[i].mean() for i in picks]
    pass_d = [(after[i] >= 0.5).mean() - (before[i] >= 0.5).mean() for i in picks]
    for j, values in enumerate((mean_d, pass_d, pass_d)):  # one metric: macro = pass rate
        lo, hi = np.quantile(values, [0.05, 0.95])
        assert one["low"][j] == pytest.approx(lo)
        assert one["high"][j] == pytest.approx(hi)


def test_compare_reports_metric_statistics_consistently() -> None:
    rng = np.random.default_rng(9)
    ids = [f"s{i:03d}" for i in range(120)]
    tags = {sid: ["odd"] if i % 2 else ["even"] for i, sid in enumerate(ids)}
    ds = _dataset(ids, tags=tags)
    table_a = {sid: [float(rng.random() < 0.6)] for sid in ids}
    table_b = {sid: [float(rng.random() < 0.75)] for sid in ids}
    cont_a = {sid: [float(rng.uniform())] for sid in ids}
    cont_b = {sid: [min(1.0, float(rng.uniform()) + 0.1)] for sid in ids}
    a = _run(ds, {EXACT: table_a, CONTAINS: cont_a}, "ra")
    b = _run(ds, {EXACT: table_b, CONTAINS: cont_b}, "rb")
    c = compare(a, b, n_bootstrap=500, seed=3)
    m = c.metrics.row(0, named=True)
    assert m["metric"] == "exact-match"
    passed_a = np.array([table_a[s][0] for s in ids]) >= 0.5
    passed_b = np.array([table_b[s][0] for s in ids]) >= 0.5
    n01, n10 = int((passed_a & ~passed_b).sum()), int((~passed_a & passed_b).sum())
    assert (m["pass_to_fail"], m["fail_to_pass"]) == (n01, n10)
    assert m["p_value"] == pytest.approx(stats.binomtest(n01, n01 + n10, 0.5).pvalue)
    assert m["pass_rate_delta"] == pytest.approx(passed_b.mean() - passed_a.mean())
    assert m["pass_rate_ci_low"] <= m["pass_rate_delta"] <= m["pass_rate_ci_high"]
    all_p = c.metrics.get_column("p_value").to_list() + c.cohorts.get_column("p_value").to_list()
    all_holm = c.metrics.get_column("p_holm").to_list() + c.cohorts.get_column("p_holm").to_list()
    assert all_holm == pytest.approx(holm(all_p))
    labels = c.cohorts.get_column("label").unique(maintain_order=True).to_list()
    assert labels == ["even", "odd"]  # every row is tagged: no untagged bucket
    assert c.macro_f1["delta"] == pytest.approx(b.macro_f1 - a.macro_f1)
    assert c.macro_f1["ci_low"] <= c.macro_f1["paired_delta"] <= c.macro_f1["ci_high"]


# --- payloads ---------------------------------------------------------------------------------


def test_comparison_json_is_versioned_and_rounded(pair: tuple[ef.Run, ef.Run]) -> None:
    c = compare(*pair, epsilon=0.1, n_bootstrap=200)
    doc = json.loads(c.to_json())
    json.dumps(doc, allow_nan=False)
    assert doc["schema_version"] == COMPARISON_SCHEMA_VERSION == "evalframe.comparison.v1"
    for key in (
        "dataset",
        "reference",
        "comparable",
        "join_key",
        "incomparable_reason",
        "resolution",
        "resolution_is_statistical",
        "macro_f1_delta",
        "pass_rate_delta",
        "counts",
        "rows",
    ):
        assert key in doc
    row = next(r for r in doc["rows"] if r["sample_id"] == "c")
    assert row == {
        "row_hash": row["row_hash"],
        "sample_id": "c",
        "status": "regressed",
        "confident": True,
        "newly_failing": False,
        "resolution": 0.1,
        "pass_rate_delta": 0.0,
        "score_delta": -0.3,
        "before": {"pass_rate": 1.0, "score_mean": 0.9, "score_stddev": 0.0, "repetitions": 2},
        "after": {"pass_rate": 1.0, "score_mean": 0.6, "score_stddev": 0.0, "repetitions": 2},
    }
    added = next(r for r in doc["rows"] if r["status"] == "added")
    assert added["before"] is None


def test_markdown_lists_counts_metrics_and_regressed_rows(pair: tuple[ef.Run, ef.Run]) -> None:
    text = compare(*pair, epsilon=0.1, n_bootstrap=100).to_markdown()
    assert text.startswith("# Comparison — rows\n")
    assert "## Metrics" in text
    assert "## Regressed (row, metric) pairs (3 of 3, worst first)" in text
    assert "| a | contains | 1.0000 → 0.5000 |" in text
    assert text.endswith("\n")
    assert not text.endswith("\n\n")


def test_store_compare_resolves_previous_relative_to_the_run(tmp_path: Any) -> None:
    store = Store(tmp_path / "runs.duckdb")
    ds = _dataset(["a", "b"])
    old = ef.evaluate(ds, outputs={"a": "x", "b": "x"}, metrics=["exact-match"], store=store)
    new = ef.evaluate(ds, outputs={"a": "x", "b": "y"}, metrics=["exact-match"], store=store)
    c = store.compare("previous", new.run_id)
    assert (c.before.run_id, c.after.run_id) == (old.run_id, new.run_id)
    assert c.counts["regressed"] == 1
    assert c.label == "previous"


# --- (row, metric) regressions and exact comparisons ---------------------------------------


def _pass_table(run: ef.Run) -> dict[tuple[str, str], bool]:
    """Oracle: (sample, metric) -> passes, from the long scores of a one-repetition run."""
    return {
        (r["sample_id"], r["metric"]): bool(r["passed"])
        for r in run.scores.iter_rows(named=True)
        if r["error"] is None
    }


@pytest.fixture
def hidden() -> tuple[ef.Run, ef.Run]:
    """One repetition; row p already fails exact-match and now also loses contains."""
    ids = ["p", "q", "r"]
    ds = _dataset(ids)
    before = _run(
        ds,
        {
            EXACT: {"p": [0.0], "q": [1.0], "r": [1.0]},
            CONTAINS: {"p": [1.0], "q": [1.0], "r": [0.0]},
        },
        "before",
    )
    after = _run(
        ds,
        {
            EXACT: {"p": [0.0], "q": [0.0], "r": [1.0]},
            CONTAINS: {"p": [0.0], "q": [1.0], "r": [1.0]},
        },
        "after",
    )
    return before, after


def test_a_metric_lost_on_an_already_failing_row_is_a_regression_of_that_metric(
    hidden: tuple[ef.Run, ef.Run],
) -> None:
    before, after = hidden
    c = compare(before, after, n_bootstrap=0)
    old, new = _pass_table(before), _pass_table(after)
    expected = {pair for pair in old if old[pair] and not new[pair]}
    assert expected == {("p", "contains"), ("q", "exact-match")}
    got = {(r["sample_id"], r["metric"]) for r in c.regressions().iter_rows(named=True)}
    assert got == expected
    # The row verdict stays eval-harness's: p failed before and fails now, so it is not regressed.
    rows = dict(c.rows.select("sample_id", "status").iter_rows())
    assert rows["p"] != "regressed"
    assert rows["q"] == "regressed"
    assert c.counts["regressed"] == 1
    assert c.counts["regressed_pairs"] == 2
    improved = {pair for pair in old if not old[pair] and new[pair]}
    assert improved == {("r", "contains")}
    statuses = {(r["sample_id"], r["metric"]): r["status"] for r in c.row_metrics.to_dicts()}
    assert statuses[("r", "contains")] == "improved"
    assert statuses[("r", "exact-match")] == "stable"


def test_a_row_the_system_now_fails_on_is_a_regression_of_every_metric_it_passed() -> None:
    # An errored execution does not pass (as in the row verdict): a run whose system fails
    # on a row must not pass the gate because its metrics scored nothing there.
    ds = ef.Dataset.from_records(
        [{"id": i, "input": {"q": i}, "expected_output": "x"} for i in ("a", "b")], name="d"
    )
    metrics = ["exact-match", "contains"]
    before = ef.evaluate(ds, outputs={"a": "x", "b": "y"}, metrics=metrics, progress=False)

    def system(inp: dict[str, str]) -> str:
        if inp["q"] == "a":
            raise TimeoutError("model timed out")
        return "y"

    after = ef.evaluate(ds, system=system, metrics=metrics, progress=False)
    c = compare(before, after, n_bootstrap=0)
    got = {(r["sample_id"], r["metric"]): r for r in c.regressions().iter_rows(named=True)}
    assert set(got) == {("a", "exact-match"), ("a", "contains")}
    assert all(r["after_pass_rate"] == 0.0 and r["score_delta"] is None for r in got.values())
    statuses = {(r["sample_id"], r["metric"]): r["status"] for r in c.row_metrics.to_dicts()}
    assert statuses[("b", "exact-match")] == statuses[("b", "contains")] == "stable"
    assert c.counts["regressed"] == 1
    assert c.counts["regressed_pairs"] == 2
    verdict = ef.gate(c)
    assert not verdict.passed
    assert verdict.failures[0].startswith("2 regressed pair(s) on 1 row(s)")
    assert "NaN" not in c.to_json()


def test_regressions_is_a_frame_of_regressed_row_metric_pairs(
    hidden: tuple[ef.Run, ef.Run],
) -> None:
    c = compare(*hidden, n_bootstrap=0)
    frame = c.regressions()
    assert isinstance(frame, pl.DataFrame)
    assert {"sample_id", "metric", "status", "confident", "pass_rate_delta"} <= set(frame.columns)
    assert frame.get_column("status").to_list() == ["regressed", "regressed"]
    p = frame.filter(pl.col("sample_id") == "p").row(0, named=True)
    assert (p["metric"], p["before_pass_rate"], p["after_pass_rate"]) == ("contains", 1.0, 0.0)
    assert p["newly_failing"]
    doc = json.loads(c.to_json())
    assert {(r["sample_id"], r["metric"]) for r in doc["regressions"]} == {
        ("p", "contains"),
        ("q", "exact-match"),
    }
    assert doc["counts"]["regressed_pairs"] == 2


def test_a_single_execution_is_never_confident(hidden: tuple[ef.Run, ef.Run]) -> None:
    # One execution per row measures no dispersion: the resolution is 100 points and no
    # change can be told from noise, as eval-harness marks it (confident: false).
    c = compare(*hidden, n_bootstrap=0)
    assert c.resolution == 1.0
    assert c.regressions().height == 2
    assert c.regressions(confident_only=True).height == 0
    assert not c.rows.get_column("confident").any()
    doc = json.loads(c.to_json())
    assert {r["confident"] for r in doc["rows"]} == {False}
    assert doc["counts"]["regressed_confident"] == 0
    # A fixed epsilon is the user's own threshold: changes past it are confident.
    fixed = compare(*hidden, epsilon=0.1, n_bootstrap=0)
    assert fixed.regressions(confident_only=True).height == 2


def test_repetitions_keep_the_noise_threshold(pair: tuple[ef.Run, ef.Run]) -> None:
    c = compare(*pair, n_bootstrap=0)
    a = c.regressions().filter(pl.col("sample_id") == "a").row(0, named=True)
    # a fell from 2/2 to 1/2 passing: a regression, confident only beyond the resolution.
    assert a["pass_rate_delta"] == -0.5
    assert a["confident"] == (c.resolution < 0.5)


def test_intervals_from_one_paired_row_are_undefined_with_the_reason() -> None:
    # One row: resampling it gives the same delta every time, an interval of zero width
    # ([-1, -1] here) that claims a certainty one row cannot give.
    ds = _dataset(["a"])
    before = _run(ds, {EXACT: {"a": [1.0]}}, "r1")
    after = _run(ds, {EXACT: {"a": [0.0]}}, "r2")
    c = compare(before, after, n_bootstrap=500)
    m = c.metrics.row(0, named=True)
    assert (m["mean_ci_low"], m["pass_rate_ci_high"]) == (None, None)
    assert m["ci_reason"] == "undefined: 1 paired row(s), no spread to resample"
    assert (c.macro_f1["ci_low"], c.macro_f1["ci_reason"]) == (None, m["ci_reason"])
    doc = json.loads(c.to_json())
    assert doc["metrics"][0]["ci_reason"] == m["ci_reason"]
    assert doc["macro_f1"]["ci_reason"] == m["ci_reason"]
    assert "_n/a intervals: undefined: 1 paired row(s), no spread to resample._" in (
        c.to_markdown()
    )
    # two rows: defined again
    two = _dataset(["a", "b"])
    c2 = compare(
        _run(two, {EXACT: {"a": [1.0], "b": [1.0]}}, "r1"),
        _run(two, {EXACT: {"a": [0.0], "b": [1.0]}}, "r2"),
        n_bootstrap=500,
    )
    assert c2.metrics.item(0, "ci_reason") is None
    assert c2.metrics.item(0, "pass_rate_ci_low") is not None
