"""Judge calibration end to end: case files, a judge over loopback HTTP, the statistics
against scikit-learn and SciPy, the gate's exit codes, the store, and ``--suggest``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
import yaml
from click.testing import CliRunner
from conftest import STUB_API_KEY
from judge_script import actual_of
from openai_stub import StubOpenAI
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score

import evalframe as ef
from evalframe.cli import cli
from evalframe.core._calibration import read_cases
from evalframe.providers import OpenAIJudge, Providers

# (actual answer, human verdict, graded human score, judge score, tag)
CASES = [
    ("Paris is the capital.", "pass", 1.0, 0.95, "geo"),
    ("The capital is Lyon, a long and confident but wrong answer.", "fail", 0.0, 0.8, "geo"),
    ("Berlin.", "pass", 0.75, 0.7, "geo"),
    ("I am not sure.", "fail", 0.25, 0.2, "geo"),
    ("Water boils at 100 C at sea level.", "pass", 1.0, 0.9, "science"),
    ("Water boils at 50 C.", "fail", 0.0, 0.1, "science"),
    ("Light is fast.", "pass", 0.5, 0.4, "science"),
    (
        "Photosynthesis makes sugar from light, water and carbon dioxide.",
        "pass",
        1.0,
        1.0,
        "science",
    ),
]


def case_file(tmp_path: Path, **top: Any) -> Path:
    doc = {
        "schema_version": "eval-harness.calibration.v1",
        "name": "judge-check",
        **top,
        "cases": [
            {
                "id": f"c{i}",
                "input": {"question": f"question {i}"},
                "expected": "reference answer",
                "actual": actual,
                "human_verdict": verdict,
                "human_score": graded,
                "tags": [tag],
            }
            for i, (actual, verdict, graded, _, tag) in enumerate(CASES)
        ],
    }
    path = tmp_path / "cases.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def scripted(prompt: str) -> str:
    actual = actual_of(prompt)
    score = next(s for a, _, _, s, _ in CASES if a == actual)
    return json.dumps({"score": score, "reason": "scripted"})


@pytest.fixture
def judge(openai_stub: StubOpenAI, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Providers:
    openai_stub.verdict = scripted
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("EVALFRAME_JUDGE_BASE_URL", openai_stub.url)
    monkeypatch.setenv("EVALFRAME_JUDGE_MODEL", "stub-judge")
    monkeypatch.setenv("EVALFRAME_JUDGE_API_KEY", STUB_API_KEY)
    client = OpenAIJudge("stub-judge", base_url=openai_stub.url, api_key=STUB_API_KEY)
    return Providers(embeddings="hashing", judge=client, cache=False)


def test_statistics_match_independent_references(tmp_path: Path, judge: Providers) -> None:
    cal = ef.calibrate(case_file(tmp_path), providers=judge)
    human = np.array([v == "pass" for _, v, _, _, _ in CASES])
    scores = np.array([s for _, _, _, s, _ in CASES])
    verdict = scores >= 0.5
    assert cal.case_count == cal.scored_count == 8
    assert cal.agreement_rate == pytest.approx((human == verdict).mean())
    assert cal.confusion.as_dict() == {
        "true_pass": 4,
        "true_fail": 2,
        "false_pass": 1,  # the confident wrong answer
        "false_fail": 1,  # "Light is fast." scored 0.4
    }
    assert cal.kappa.kappa == pytest.approx(cohen_kappa_score(human, verdict))
    graded = np.rint(np.array([g for _, _, g, _, _ in CASES]) * 4).astype(int)
    judged = np.rint(scores * 4).astype(int)
    assert cal.weighted_kappa == pytest.approx(
        cohen_kappa_score(graded, judged, weights="quadratic")
    )
    lengths = [len(a) for a, *_ in CASES]
    assert cal.length_bias_correlation == pytest.approx(spearmanr(lengths, scores).statistic)
    geo = next(c for c in cal.cohorts if c["cohort"] == "geo")
    assert (geo["case_count"], geo["agreement_rate"]) == (4, 0.75)
    assert not cal.passed  # 0.75 < the default floor 0.8
    assert ef.calibrate(case_file(tmp_path), providers=judge, min_agreement=0.75).passed


def test_json_report_keeps_eval_harness_keys(tmp_path: Path, judge: Providers) -> None:
    runner = CliRunner()
    out = tmp_path / "cal.json"
    result = runner.invoke(
        cli,
        ["calibrate", str(case_file(tmp_path)), "--format", "json", "--out", str(out),
         "--min-agreement", "0.7"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["schema_version"] == "eval-harness.calibration.report.v1"
    data = doc["data"]
    assert list(data)[:6] == [
        "agreement_rate",
        "case_count",
        "verdict_pass_threshold",
        "confusion",
        "length_bias_correlation",
        "self_preference_violation",
    ]
    assert data["agreement_rate"] == 0.75
    assert data["passed"] is True
    assert data["judge_model"] == "stub-judge"


def test_exit_codes_follow_the_gate(tmp_path: Path, judge: Providers) -> None:
    runner = CliRunner()
    cases = str(case_file(tmp_path))
    low = runner.invoke(cli, ["calibrate", cases])
    assert low.exit_code == 1
    assert "Agreement rate: 0.7500 (floor 0.8)" in low.output
    assert "Result: **fail**" in low.output
    assert "| c1 | fail | pass | 0.8000 |" in low.output  # the disagreement, named
    selfish = runner.invoke(
        cli, ["calibrate", cases, "--min-agreement", "0.5", "--model-under-test", "stub-judge"]
    )
    assert selfish.exit_code == 1
    assert "Self-preference violation: yes" in selfish.output
    fine = runner.invoke(cli, ["calibrate", cases, "--min-agreement", "0.5"])
    assert fine.exit_code == 0, fine.output


def test_unscorable_cases_are_listed_and_fail_the_gate(
    tmp_path: Path, judge: Providers, openai_stub: StubOpenAI
) -> None:
    openai_stub.verdict = lambda p: "high" if "Berlin" in p else scripted(p)
    cal = ef.calibrate(case_file(tmp_path), providers=judge, min_agreement=0.0)
    assert cal.scored_count == 7
    assert cal.case_count == 8
    assert cal.errors[0]["id"] == "c2"
    assert "not valid JSON" in cal.errors[0]["error"]
    assert not cal.passed


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda c: c[1].update(human_verdict="maybe"),
            "Calibration case 'c1' (index 1) field 'human_verdict' must be one of: pass, fail.",
        ),
        (
            lambda c: c[0].update(input="text"),
            "Calibration case 'c0' (index 0) field 'input' must be a map.",
        ),
        (
            lambda c: c[2].update(human_score=2),
            "Calibration case 'c2' (index 2) field 'human_score' must be a number in [0, 1].",
        ),
        (lambda c: c[3].update(id="c0"), "Calibration case 'c0' (index 3) repeats an id."),
        (lambda c: c.clear(), "'cases' must be a non-empty list."),
    ],
)
def test_case_file_errors_name_the_case_and_field(
    tmp_path: Path, mutate: Any, message: str
) -> None:
    path = case_file(tmp_path)
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    mutate(doc["cases"])
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    with pytest.raises(ef.DatasetError) as err:
        read_cases(path)
    assert str(err.value) == f"{path}: {message}"
    result = CliRunner().invoke(cli, ["calibrate", str(path)])
    assert result.exit_code == 2
    assert message in result.output


def test_a_deterministic_metric_cannot_be_calibrated(tmp_path: Path, judge: Providers) -> None:
    with pytest.raises(ef.MetricError, match="'exact-match' is not judge-backed"):
        ef.calibrate(case_file(tmp_path, metric="exact-match"), providers=judge)


def test_saved_calibrations_show_next_to_runs_of_the_same_judge(
    tmp_path: Path, judge: Providers
) -> None:
    db = tmp_path / "store.duckdb"
    runner = CliRunner()
    ds = tmp_path / "d.yaml"
    ds.write_text(
        yaml.safe_dump(
            {
                "schema_version": "eval-harness.dataset.v1",
                "name": "qa",
                "metrics": ["llm-as-judge"],
                "samples": [
                    {"id": "a", "input": {"question": "q"}, "expected_output": "x"},
                    {"id": "b", "input": {"question": "q"}, "expected_output": "y"},
                ],
            }
        ),
        encoding="utf-8",
    )
    outputs = tmp_path / "o.json"
    outputs.write_text(
        json.dumps({"outputs": {"a": CASES[0][0], "b": CASES[5][0]}}), encoding="utf-8"
    )
    lexical = runner.invoke(
        cli, ["run", str(ds), "--outputs", str(outputs), "-m", "exact-match", "--store", str(db)]
    )
    assert lexical.exit_code in (0, 1), lexical.output
    judged = runner.invoke(cli, ["run", str(ds), "--outputs", str(outputs), "--store", str(db)])
    assert judged.exit_code in (0, 1), judged.output
    saved = runner.invoke(
        cli, ["calibrate", str(case_file(tmp_path)), "--store", str(db), "--min-agreement", "0.5"]
    )
    assert saved.exit_code == 0, saved.output
    with ef.Store(db) as store:
        calibrations = store.calibrations()
        runs = store.runs()
    assert calibrations.select("metric", "judge_model", "agreement_rate").rows() == [
        ("llm-as-judge", "stub-judge", 0.75)
    ]
    # newest first: the judged run is matched, the exact-match run has nothing to match
    assert runs.get_column("judge_agreement").to_list() == [0.75, None]
    listed = runner.invoke(cli, ["runs", "--store", str(db)], env={"COLUMNS": "200"})
    assert "judge agreement" in listed.output
    assert "0.7500" in listed.output


def test_suggest_then_estimate_through_the_cli(tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    n = 200
    rng = np.random.default_rng(5)
    records = [
        {"id": f"s{i}", "input": {"question": "q"}, "expected_output": "alpha beta gamma delta"}
        for i in range(n)
    ]
    words = ["alpha", "beta", "gamma", "delta"]
    outputs = {f"s{i}": " ".join(words[: rng.integers(1, 5)]) for i in range(n)}
    ef.evaluate(
        ef.Dataset.from_records(records, name="big"),
        outputs=outputs,
        metrics=["rouge-l"],
        store=db,
    )
    runner = CliRunner()
    picks_file = tmp_path / "picks.csv"
    picked = runner.invoke(
        cli,
        ["calibrate", "--suggest", "30", "--run", "latest", "--metric", "rouge-l",
         "--store", str(db), "--out", str(picks_file)],
    )  # fmt: skip
    assert picked.exit_code == 0, picked.output
    picks = pl.read_csv(picks_file)
    assert picks.height == 30
    assert set(picks.columns) == {"sample_id", "stratum", "judge_score"}
    labels = tmp_path / "labels.csv"
    picks.select("sample_id", (pl.col("judge_score") > 0.6).alias("label")).write_csv(labels)
    est = runner.invoke(
        cli,
        ["estimate", "latest", "--labels", str(labels), "--metric", "rouge-l", "--strata", "5",
         "--store", str(db), "--format", "json"],
    )  # fmt: skip
    assert est.exit_code == 0, est.output
    doc = json.loads(est.output)
    methods = {(r["quantity"], r["method"]) for r in doc["estimates"]}
    assert ("pass_rate", "prediction-powered") in methods
    assert doc["strata"] == 5


def test_a_constant_judge_gives_undefined_statistics_with_their_reasons(
    tmp_path: Path, judge: Providers, openai_stub: StubOpenAI
) -> None:
    # The judge passes everything: its kappa is undefined (scikit-learn writes 0.0), and the
    # length bias of one score is too (SciPy gives NaN); neither is a 0.0 with [0, 0].
    openai_stub.verdict = lambda p: json.dumps({"score": 0.9, "reason": "fine"})
    cases = case_file(tmp_path)
    result = CliRunner().invoke(cli, ["calibrate", str(cases), "--format", "json"])
    assert result.exit_code == 1, result.output  # 5 of 8 agree: below the 0.8 floor
    data = json.loads(result.stdout)["data"]
    assert data["agreement_rate"] == 0.625
    assert data["cohen_kappa"] == {
        "kappa": None, "low": None, "high": None,
        "reason": "undefined: the judge gave one verdict on every case",
    }  # fmt: skip
    assert data["length_bias_correlation"] is None
    assert data["weighted_kappa"] is None
    assert data["undefined"] == {
        "cohen_kappa": "undefined: the judge gave one verdict on every case",
        "length_bias_correlation": "undefined: every judge score is the same",
        "weighted_kappa": "undefined: the judge gave one grade on every case",
    }
    assert {c["cohort"]: c["cohen_kappa_reason"] for c in data["cohorts"]} == dict.fromkeys(
        ("geo", "science"), "undefined: the judge gave one verdict on every case"
    )
    assert cohen_kappa_score([v == "pass" for _, v, _, _, _ in CASES], [True] * 8) == 0.0
    md = CliRunner().invoke(cli, ["calibrate", str(cases)]).stdout
    assert "- Cohen's kappa: n/a (undefined: the judge gave one verdict on every case)" in md
    assert "- Length bias (Spearman): n/a (undefined: every judge score is the same)" in md
