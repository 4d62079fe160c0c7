"""The new user's walkthrough, through the real CLI: the bundled example, a second outputs file
with five answers changed, `run` into a store for both, `compare`, `gate` and `report`.

The plain-text and Markdown outputs alone must answer "which samples failed, why, and what
changed". The oracle is the store itself, read with DuckDB (each (sample, metric)'s score and
pass flag), and the registry's thresholds: never the rendered text.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

import evalframe as ef
from evalframe.cli import cli

EXAMPLE = Path(ef.__file__).parent / "examples"
DATASET = str(EXAMPLE / "support.yaml")
OUTPUTS = EXAMPLE / "support.outputs.json"

# Three answers that passed are broken; two that failed are fixed.
CHANGED = {
    "shipping-cost": "Shipping costs depend on your cart.",
    "support-email": "Email our support team.",
    "gift-cards": "Yes, gift cards can be refunded.",
    "warranty": "2 years.",
    "account-delete": "Settings > Privacy > Delete account.",
}


def cli_run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), env={"COLUMNS": "120"})
    return result.exit_code, result.stdout


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    root = tmp_path_factory.mktemp("walkthrough")
    doc = json.loads(OUTPUTS.read_text(encoding="utf-8"))
    assert set(CHANGED) <= set(doc["outputs"])
    doc["outputs"].update(CHANGED)
    changed = root / "v2.outputs.json"
    changed.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    store = str(root / "runs.duckdb")
    printed = {}
    for name, outputs in (("v1", str(OUTPUTS)), ("v2", str(changed))):
        code, out = cli_run("run", DATASET, "--outputs", outputs, "--store", store, "--name", name)
        assert code == 0, out
        printed[name] = out
    return {"store": store, "printed": printed}


def _scores(store: str, name: str) -> dict[tuple[str, str], tuple[float, bool]]:
    """(sample, metric) -> (score, passed) of run ``name``, straight from the store."""
    with duckdb.connect(store, read_only=True) as con:
        rows = con.execute(
            "SELECT s.sample_id, s.metric, s.score, s.passed FROM scores s "
            "JOIN runs r USING (run_id) WHERE r.name = ?",
            [name],
        ).fetchall()
    return {(s, m): (score, passed) for s, m, score, passed in rows}


def _thresholds() -> dict[str, float]:
    return {d.name: d.threshold for d in ef.metrics.available()}


def _failing_section(markdown: str) -> dict[str, str]:
    """sample -> its row of the report's "Failing samples" table."""
    section = markdown.split("## Failing samples", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")][1:]
    return {row.split(" | ")[0].removeprefix("| "): row for row in rows}


@pytest.mark.parametrize("name", ["v1", "v2"])
def test_the_report_names_every_failing_sample_with_metric_score_and_threshold(
    session: dict[str, object], name: str
) -> None:
    store = str(session["store"])
    scores = _scores(store, name)
    thresholds = _thresholds()
    failing = {(s, m): score for (s, m), (score, passed) in scores.items() if not passed}
    assert failing  # the example has failing samples in both runs
    code, report = cli_run("report", name, "--store", store, "--format", "markdown")
    assert code == 0
    printed = session["printed"]
    assert isinstance(printed, dict)
    for markdown in (report, printed[name]):  # `report` and what `run` printed agree
        rows = _failing_section(markdown)
        n = len({s for s, _ in failing})
        assert f"_{n} of {n} failing samples shown, worst first" in markdown
        assert set(rows) == {s for s, _ in failing}
        for (sample, metric), score in failing.items():
            assert f"{metric} {score:.4f} (threshold {thresholds[metric]:g})" in rows[sample]
        assert "Failures: None" not in markdown


def _plain_rows(text: str, title: str) -> list[tuple[str, str]]:
    """(sample, metric) of each body row of the plain table under ``title``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    rule = next(i for i in range(start, len(lines)) if lines[i].startswith("---"))
    out = []
    for line in lines[rule + 1 :]:
        if not line.strip():
            break
        sample, metric = line.split()[:2]
        out.append((sample, metric))
    return out


def _flips(store: str) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """(sample, metric) pairs that went pass -> fail, and fail -> pass, from v1 to v2."""
    before, after = _scores(store, "v1"), _scores(store, "v2")
    fell = {k for k in before if before[k][1] and not after[k][1]}
    rose = {k for k in before if not before[k][1] and after[k][1]}
    return fell, rose


def test_compare_names_the_changed_samples_as_regressions_and_improvements(
    session: dict[str, object],
) -> None:
    store = str(session["store"])
    fell, rose = _flips(store)
    code, out = cli_run("compare", "v1", "v2", "--store", store)
    assert code == 0
    regressed = _plain_rows(out, "Regressed (row, metric) pairs")
    improved = _plain_rows(out, "Improved (row, metric) pairs")
    assert set(regressed) == fell
    assert set(improved) == rose
    # Exactly the five changed answers are named, and nothing else.
    assert {s for s, _ in regressed + improved} == set(CHANGED)
    assert f"Regressed (row, metric) pairs ({len(fell)} of {len(fell)}, worst first)" in out
    # Regressions are worst first: the largest score drop leads.
    before, after = _scores(store, "v1"), _scores(store, "v2")
    drops = [after[k][0] - before[k][0] for k in regressed]
    assert drops == sorted(drops)


def test_gate_fails_saying_why(session: dict[str, object]) -> None:
    store = str(session["store"])
    fell, _ = _flips(store)
    code, out = cli_run("gate", "v2", "--baseline", "v1", "--store", store)
    assert code == 1
    verdict = out.splitlines()[0]
    assert verdict.startswith("gate FAILED: ")
    rows = len({s for s, _ in fell})
    assert f"{len(fell)} regressed pair(s) on {rows} row(s); row verdicts: " in verdict
    assert f"- {len(fell)} regressed pair(s) on {rows} row(s) against v1 (allowed: 0)" in out
    assert set(_plain_rows(out, "Worst regressed pairs")) == fell
    # With the regressions allowed, the same gate passes.
    code, out = cli_run(
        "gate", "v2", "--baseline", "v1", "--store", store, "--max-regressions", str(len(fell))
    )
    assert code == 0
    assert out.startswith("gate passed: ")
