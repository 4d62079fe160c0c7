"""The reliability family beyond outcome- and score-consistency, each against an independent
oracle: output-consistency, brier-score, calibration-error, discrimination (sklearn's AUROC),
prompt-robustness, resource-consistency and trajectory-consistency."""

from __future__ import annotations

import json
import random
import statistics
from typing import Any

import polars as pl
import pytest

import evalframe as ef


def slow_auroc(correct: list[int], conf: list[float]) -> float:
    """Every (correct, incorrect) pair: 1 when the correct one is more confident, 0.5 on a tie."""
    pos = [c for c, y in zip(conf, correct, strict=True) if y]
    neg = [c for c, y in zip(conf, correct, strict=True) if not y]
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


try:  # scikit-learn's AUROC where installed; the pairwise count otherwise
    from sklearn.metrics import roc_auc_score
except ImportError:  # pragma: no cover - depends on the environment
    roc_auc_score = slow_auroc


def frame(rows: list[dict[str, Any]], **extra: pl.Series) -> pl.DataFrame:
    base = [
        {
            "sample_id": r["id"],
            "input": "{}",
            "expected_output": r.get("expected", "Paris"),
            "expected_type": "string",
            "metadata": json.dumps(r.get("metadata", {})),
            "tags": [],
            "row_hash": "h",
            "actual_output": r.get("output"),
            "repetition": r.get("rep", 0),
        }
        for r in rows
    ]
    df = pl.DataFrame(
        base, schema_overrides={"tags": pl.List(pl.String), "actual_output": pl.String}
    )
    return df.with_columns(**extra) if extra else df


def run(spec: str, df: pl.DataFrame) -> pl.DataFrame:
    return ef.score(df, [ef.metrics.get(spec)])


def repeated(outputs: dict[str, list[str | None]]) -> list[dict[str, Any]]:
    return [
        {"id": sid, "output": o, "rep": k}
        for sid, outs in outputs.items()
        for k, o in enumerate(outs)
    ]


# --- output-consistency ---------------------------------------------------------------------


def test_output_consistency_is_the_share_of_repetitions_with_the_modal_output() -> None:
    outputs: dict[str, list[str | None]] = {
        "one": ["Paris"],
        "split": ["Paris", "Lyon"],
        "ten": ["a"] * 6 + ["b"] * 3 + ["c"],
        "failed": ["x", None, None],  # failed repetitions agree with nothing
        "spaces": ["x", "x ", " x"],
    }
    out = run("output-consistency", frame(repeated(outputs)))
    per = (
        out.filter(pl.col("error").is_null() | pl.col("sample_id").is_in(["one"]))
        .group_by("sample_id")
        .agg(pl.col("score").drop_nulls().unique())
    )
    got = {sid: (s[0] if s else None) for sid, s in per.iter_rows()}

    def oracle(outs: list[str | None]) -> float | None:
        if len(outs) < 2:
            return None
        keys = [o if o is not None else object() for o in outs]
        return max(keys.count(k) for k in keys) / len(outs)

    assert got == {sid: oracle(o) for sid, o in outputs.items()}
    stripped = run("output-consistency(strip=true)", frame(repeated({"spaces": outputs["spaces"]})))
    assert stripped.get_column("score").to_list() == [1.0, 1.0, 1.0]
    assert "runs" in json.loads(out.get_column("details").drop_nulls()[0])
    # A different measure from evalframe's majority-verdict outcome-consistency:
    verdicts = run("outcome-consistency", frame(repeated({"ten": outputs["ten"]})))
    assert verdicts.get_column("score")[0] == 1.0  # every run fails exact-match against Paris


# --- confidence metrics ---------------------------------------------------------------------


def confident(n: int, seed: int) -> tuple[pl.DataFrame, list[float], list[int]]:
    rng = random.Random(seed)
    conf = [round(rng.random(), 3) for _ in range(n)]
    correct = [int(rng.random() < c) for c in conf]
    rows = [{"id": f"s{i}", "output": "Paris" if c else "Rome"} for i, c in enumerate(correct)]
    return frame(rows, confidence=pl.Series(conf)), conf, correct


def test_brier_score_is_one_minus_the_squared_error_per_row() -> None:
    df, conf, correct = confident(200, 1)
    out = run("brier-score", df)
    expected = [1 - (c - y) ** 2 for c, y in zip(conf, correct, strict=True)]
    assert out.get_column("score").to_list() == pytest.approx(expected)
    assert out.get_column("score").mean() == pytest.approx(
        1 - statistics.fmean((c - y) ** 2 for c, y in zip(conf, correct, strict=True))
    )


def slow_ece(conf: list[float], correct: list[int], bins: int) -> float:
    total = 0.0
    for b in range(bins):
        members = [i for i, c in enumerate(conf) if min(int(c * bins), bins - 1) == b]
        if members:
            acc = sum(correct[i] for i in members) / len(members)
            mean_conf = sum(conf[i] for i in members) / len(members)
            total += len(members) / len(conf) * abs(acc - mean_conf)
    return total


@pytest.mark.parametrize("bins", [1, 5, 10, 15])
def test_calibration_error_matches_a_slow_ece(bins: int) -> None:
    df, conf, correct = confident(300, bins)
    out = run(f"calibration-error(bins={bins})", df)
    assert out.get_column("score").to_list() == pytest.approx(
        [1 - slow_ece(conf, correct, bins)] * 300
    )


def test_discrimination_is_sklearns_auroc() -> None:
    for seed in range(5):
        df, _conf, correct = confident(150, seed)
        # ties in confidence count half, as in sklearn
        df = df.with_columns(confidence=(pl.col("confidence") * 10).round() / 10)
        tied = df.get_column("confidence").to_list()
        out = run("discrimination", df)
        assert out.get_column("score").to_list() == pytest.approx(
            [roc_auc_score(correct, tied)] * 150
        )
        assert slow_auroc(correct, tied) == pytest.approx(roc_auc_score(correct, tied))


def test_confidence_errors_name_the_problem() -> None:
    rows = [
        {"id": "a", "output": "Paris"},
        {"id": "b", "output": "Rome"},
        {"id": "c", "output": None},
    ]
    out = run("brier-score", frame(rows))
    assert out.get_column("error").to_list()[:2] == [
        "Sample 'a' has no confidence for brier-score metric: the system must report one "
        "(a confidence column in [0, 1] beside actual_output).",
        "Sample 'b' has no confidence for brier-score metric: the system must report one "
        "(a confidence column in [0, 1] beside actual_output).",
    ]
    out = run("brier-score", frame(rows, confidence=pl.Series([1.5, 0.5, 0.5])))
    assert out.get_column("error")[0] == (
        "Sample 'a' confidence must be a number in [0, 1] for brier-score metric; got 1.5."
    )
    assert out.get_column("score")[1] == 0.75
    one_class = run(
        "discrimination",
        frame(rows[:2], confidence=pl.Series([0.9, 0.2])).with_columns(
            actual_output=pl.lit("Paris")
        ),
    )
    assert one_class.get_column("score").to_list() == [None, None]
    assert "needs both correct and incorrect rows" in one_class.get_column("error")[0]


# --- prompt-robustness ----------------------------------------------------------------------


def test_prompt_robustness_groups_variants_with_their_original() -> None:
    rows = [
        {"id": "q1", "output": "Paris"},
        {"id": "q1.b64", "output": "Paris", "metadata": {"variant_of": "q1"}},
        {"id": "q1.leet", "output": "Lyon", "metadata": {"variant_of": "q1"}},
        {"id": "q2", "output": "Paris"},
        {"id": "q2.roleplay", "output": "Paris", "metadata": {"variant_of": "q2"}},
        {"id": "q3", "output": "Paris"},
    ]
    out = run("prompt-robustness", frame(rows))
    scores = dict(zip(out.get_column("sample_id"), out.get_column("score"), strict=True))
    spread = 2 * statistics.pstdev([1.0, 1.0, 0.0])
    assert scores["q1"] == pytest.approx(1 - spread)
    assert scores["q1.leet"] == pytest.approx(1 - spread)
    assert scores["q2"] == scores["q2.roleplay"] == 1.0
    assert scores["q3"] is None
    assert "link variants with metadata.variant_of" in out.get_column("error")[5]
    ranged = run("prompt-robustness(spread=range)", frame(rows))
    assert ranged.get_column("score")[0] == 0.0


# --- resource-consistency -------------------------------------------------------------------


def test_resource_consistency_is_one_minus_the_coefficient_of_variation() -> None:
    rows = repeated({"a": ["x"] * 4, "b": ["x"] * 3, "c": ["x"]})
    prompt = [100, 120, 80, 100, 10, 10, 10, 5]
    completion = [10, 10, 10, 10, 0, 0, 40, 5]
    latency = [100.0, 300.0, 200.0, None, 0.0, 0.0, 0.0, 3.0]
    df = frame(
        rows,
        prompt_tokens=pl.Series(prompt),
        completion_tokens=pl.Series(completion),
        latency_ms=pl.Series(latency),
    )

    def cv(values: list[float]) -> float:
        mean = statistics.fmean(values)
        return statistics.pstdev(values) / mean if mean else 0.0

    tokens = run("resource-consistency", df).get_column("score").to_list()
    totals = [p + c for p, c in zip(prompt, completion, strict=True)]
    assert tokens[:4] == pytest.approx([1 - cv(totals[:4])] * 4)
    assert tokens[4:7] == pytest.approx([max(0.0, 1 - cv(totals[4:7]))] * 3)
    assert tokens[7] is None
    lat = run("resource-consistency(resource=latency)", df).get_column("score").to_list()
    assert lat[:4] == pytest.approx([1 - cv([100.0, 300.0, 200.0])] * 3 + [None])
    assert lat[4:7] == [1.0, 1.0, 1.0]  # all zero: perfectly consistent
    assert ef.metrics.get("resource-consistency").dimension == "performance"


# --- trajectory-consistency -----------------------------------------------------------------


def test_trajectory_consistency_from_tool_sequences_and_tool_calls() -> None:
    rows = repeated({"a": ["x"] * 3, "b": ["x"] * 2})
    seqs = [["search", "fetch"], ["search", "fetch"], ["fetch", "search"], ["calc"], None]
    df = frame(rows, tool_sequence=pl.Series(seqs, dtype=pl.List(pl.String)))
    out = run("trajectory-consistency", df)
    assert out.get_column("score").to_list() == pytest.approx([2 / 3] * 3 + [0.5, 0.5])
    calls = [[{"name": n, "arguments": "{}"} for n in s] if s is not None else None for s in seqs]
    df = frame(rows, tool_calls=pl.Series(calls))
    assert run("trajectory-consistency", df).get_column("score").to_list() == pytest.approx(
        [2 / 3] * 3 + [0.5, 0.5]
    )
    none = run("trajectory-consistency", frame(rows))
    assert none.get_column("error")[0] == (
        "Sample 'a' has no tool_sequence, trajectory or tool_calls column for "
        "trajectory-consistency metric."
    )
    assert ef.metrics.get("trajectory-consistency").dimension == "trajectory"
