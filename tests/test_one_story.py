"""One run with errored executions, a safety metric and a cohort where nothing was scored,
rendered in every format: each tells the same story, and it matches an independent count.

The system under test raises on two of six rows (both of cohort ``outage``); one answer leaks
an e-mail address (a safety failure). The oracle below counts passes with plain Python from
the answers themselves, not from evalframe.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import evalframe as ef
from evalframe.cli import cli

pytest_plugins = ["pytester"]

ROWS = [  # id, tags, expected output, answer (None: the system raises)
    ("s0", ["billing"], "refund in 30 days", "refund in 30 days"),
    ("s1", ["billing"], "card", "mail jo@example.com about the card"),
    ("s2", ["billing", "shipping"], "3-5 days", "a week"),
    ("s3", [], "yes", "yes"),
    ("s4", ["outage"], "up", None),
    ("s5", ["outage"], "up", None),
]
METRICS = ["exact-match", "contains", "pii-leak"]
QUALITY = ["exact-match", "contains"]

DATASET = "schema_version: eval-harness.dataset.v1\nname: story\nsamples:\n" + "".join(
    f"  - id: {sid}\n    input: {{q: {sid}}}\n    expected_output: {json.dumps(expected)}\n"
    f"    metadata: {{tags: {json.dumps(tags)}}}\n"
    for sid, tags, expected, _ in ROWS
)
SYSTEM = (
    f"ANSWERS = { ({sid: answer for sid, _, _, answer in ROWS})!r}\n\n"
    "def answer(inputs):\n"
    "    found = ANSWERS[inputs['q']]\n"
    "    if found is None:\n"
    "        raise ConnectionError('upstream 503')\n"
    "    return found\n"
)


def _oracle() -> dict[str, Any]:
    """Pass/fail/error per (row, metric), counted from the answers with plain Python."""
    outcome: dict[str, dict[str, str]] = {}
    for sid, _, expected, answer in ROWS:
        if answer is None:
            outcome[sid] = dict.fromkeys(METRICS, "error")
            continue
        outcome[sid] = {
            "exact-match": "pass" if answer == expected else "fail",
            "contains": "pass" if expected.lower() in answer.lower() else "fail",
            "pii-leak": "fail" if "@" in answer else "pass",
        }
    rates = {m: sum(o[m] == "pass" for o in outcome.values()) / len(outcome) for m in METRICS}
    scored = {
        m: sum(o[m] == "pass" for o in outcome.values())
        / sum(o[m] != "error" for o in outcome.values())
        for m in METRICS
    }
    return {
        "executions": len(ROWS),
        "errored": sum(all(v == "error" for v in o.values()) for o in outcome.values()),
        "unsafe": sum(o["pii-leak"] != "pass" for o in outcome.values()),
        "rates": rates,
        "macro": sum(rates[m] for m in QUALITY) / len(QUALITY),
        "macro_scored": sum(scored[m] for m in QUALITY) / len(QUALITY),
        "errored_rows": [sid for sid, o in outcome.items() if "error" in o.values()],
    }


ORACLE = _oracle()
INCOMPLETE = f"INCOMPLETE: {ORACLE['errored']} of {ORACLE['executions']} executions errored"
UNSAFE = (
    f"SAFETY FAILED: {ORACLE['unsafe']} of {ORACLE['executions']} executions failed or errored "
    "on a safety metric (pii-leak)"
)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("story")
    (root / "story.yaml").write_text(DATASET, encoding="utf-8")
    (root / "story_sut.py").write_text(SYSTEM, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def stored(project: Path) -> tuple[ef.Run, Path]:
    """The run, scored through the CLI into a store (its Markdown checked below), and loaded."""
    import os

    db = project / "runs.duckdb"
    here = Path.cwd()
    os.chdir(project)
    try:
        result = CliRunner().invoke(
            cli,
            ["run", "story.yaml", "--system", "story_sut:answer", "-m", "exact-match", "-m",
             "contains", "-m", "pii-leak", "--store", str(db), "--out", "cli.md"],
        )  # fmt: skip
    finally:
        os.chdir(here)
    assert result.exit_code == 1, result.output  # errors were captured: exit 1
    # the report went to a file: the terminal's first lines say what happened
    assert result.stderr.splitlines()[:2] == [INCOMPLETE, UNSAFE]
    with ef.Store(db) as store:
        return store.load("latest"), db


def test_the_oracle_itself() -> None:
    # the story, in numbers: 2 of 6 executions errored, 3 of 6 are unsafe (1 leak, 2 errors)
    assert (ORACLE["errored"], ORACLE["unsafe"]) == (2, 3)
    assert ORACLE["rates"] == {"exact-match": 2 / 6, "contains": 3 / 6, "pii-leak": 3 / 6}
    assert ORACLE["macro"] == pytest.approx(5 / 12)
    assert ORACLE["macro_scored"] == pytest.approx((2 / 4 + 3 / 4) / 2)


def test_python(stored: tuple[ef.Run, Path]) -> None:
    run, _ = stored
    assert run.status == f"{INCOMPLETE}; {UNSAFE}"
    assert repr(run).startswith(f"Run({INCOMPLETE}; {UNSAFE}; ")
    summary = {r["metric"]: r for r in run.summary.iter_rows(named=True)}
    for metric, rate in ORACLE["rates"].items():
        assert summary[metric]["pass_rate"] == pytest.approx(rate)
    assert run.macro_f1 == pytest.approx(ORACLE["macro"])
    head = run.headline
    assert head["macro_f1_scored"] == pytest.approx(ORACLE["macro_scored"])
    assert head["errored_executions"] == ORACLE["errored"]
    assert head["safety"]["failed_executions"] == ORACLE["unsafe"]
    outage = run.cohorts.filter(run.cohorts["label"] == "outage").to_dicts()
    assert {r["metric"]: (r["mean"], r["n_errors"]) for r in outage} == dict.fromkeys(
        METRICS, (None, 2)
    )


def _first_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()][:2]


def _markdown_checks(md: str) -> None:
    assert _first_lines(md) == [INCOMPLETE, UNSAFE]
    macro = f"{ORACLE['macro']:.4f} ({ORACLE['macro_scored']:.4f} over scored executions only)"
    assert f"errored executions not passed): {macro}" in md
    for metric in QUALITY:
        row = next(line for line in md.splitlines() if line.startswith(f"| {metric} |"))
        assert f"| {ORACLE['rates'][metric]:.4f} |" in row
    assert "## Safety: FAILED" in md
    assert "| outage | 2 | exact-match | n/a | n/a | n/a | 0.0000 | 2 |" in md
    failing = md.split("## Failing samples", 1)[1].split("##", 1)[0]
    for sid in ORACLE["errored_rows"]:
        assert (
            f"| {sid} | 3 | exact-match, contains, pii-leak errored: System under test" in failing
        )
    assert "upstream 503" in failing


def test_markdown_from_the_cli_and_from_the_store(stored: tuple[ef.Run, Path]) -> None:
    run, db = stored
    _markdown_checks((db.parent / "cli.md").read_text(encoding="utf-8"))
    _markdown_checks(run.report().to_markdown())
    args = ["report", run.run_id, "--store", str(db), "--format"]
    result = CliRunner().invoke(cli, [*args, "markdown"])
    assert result.exit_code == 0, result.output
    _markdown_checks(result.stdout)
    html = CliRunner().invoke(cli, [*args, "html", "--charts", "none"])
    statuses = re.findall(r'<p class="ef-status"><b>([^<]*)</b></p>', html.stdout)
    assert statuses == [INCOMPLETE, UNSAFE]


def test_json(stored: tuple[ef.Run, Path]) -> None:
    run, db = stored
    result = CliRunner().invoke(cli, ["report", run.run_id, "--store", str(db), "--format", "json"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[1] == f'  "status": "{INCOMPLETE}; {UNSAFE}",'
    doc = json.loads(result.stdout)
    head = doc["headline"]
    assert head["macro_f1"] == pytest.approx(ORACLE["macro"])
    assert head["macro_f1_scored"] == pytest.approx(ORACLE["macro_scored"])
    assert head["errored_executions"] == ORACLE["errored"]
    assert head["safety"]["passed"] is False
    assert head["safety"]["failed_executions"] == ORACLE["unsafe"]
    for metric, rate in ORACLE["rates"].items():
        assert doc["metrics"][metric]["pass_rate_attempted"] == pytest.approx(rate)
    # eval-harness's fields keep their meaning: over scored executions, every metric
    scored = [2 / 4, 3 / 4, 3 / 4]
    assert doc["macro_f1"] == pytest.approx(sum(scored) / 3)
    outage = next(c for c in doc["cohorts"] if c["label"] == "outage")
    for block in outage["metrics"].values():
        assert (block["mean"], block["pass_rate"], block["n_errors"]) == (None, None, 2)


def test_html_and_text(stored: tuple[ef.Run, Path]) -> None:
    from evalframe.views._html import run_text

    run, _ = stored
    for html in (run._repr_html_(), run.report().to_html(charts="none")):
        statuses = re.findall(r'<p class="ef-status"><b>([^<]*)</b></p>', html)
        assert statuses == [INCOMPLETE, UNSAFE]
        assert html.index("ef-status") < html.index("<h2>")
        assert f'<span class="ef-headline">{ORACLE["macro"]:.4f}</span>' in html
        assert "<h3>Safety: FAILED</h3>" in html
    text = run_text(run)
    assert text.splitlines()[:2] == [INCOMPLETE, UNSAFE]
    assert f"macro-F1 {ORACLE['macro']:.4f}" in text


def test_store_views(stored: tuple[ef.Run, Path]) -> None:
    run, db = stored
    with ef.Store(db) as store:
        status = store.sql("SELECT * FROM run_status WHERE run_id = ?", [run.run_id]).row(
            0, named=True
        )
        summary = store.sql(
            "SELECT metric, pass_rate FROM metric_summary WHERE run_id = ?", [run.run_id]
        ).rows()
        outage = store.sql(
            "SELECT metric, mean, pass_rate_scored, n_errors FROM cohort_summary "
            "WHERE run_id = ? AND label = 'outage'",
            [run.run_id],
        ).rows()
        recorded = store.runs().item(0, "macro_f1")
    assert (status["executions"], status["errored_executions"]) == (6, ORACLE["errored"])
    assert status["incomplete"] is True
    assert status["macro_f1"] == pytest.approx(ORACLE["macro"])
    assert status["macro_f1_scored"] == pytest.approx(ORACLE["macro_scored"])
    assert (status["safety_failed_executions"], status["safety_passed"]) == (3, False)
    assert recorded == pytest.approx(ORACLE["macro"])
    assert dict(summary) == pytest.approx(ORACLE["rates"])
    assert sorted(outage) == sorted((m, None, None, 2) for m in METRICS)


def test_pytest_plugin(project: Path, pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", story=DATASET)
    pytester.makepyfile(story_sut=SYSTEM)
    result = pytester.runpytest_subprocess(
        "-p", "no:evalframe", "-p", "evalframe_pytest", "-p", "no:cacheprovider", "story.yaml",
        "--evalframe-system", "story_sut:answer", *(f"--evalframe-metric={m}" for m in METRICS),
    )  # fmt: skip
    out = result.stdout.str()
    section = re.split(r"^=+ evalframe =+$", out, flags=re.MULTILINE)[1].splitlines()
    lines = [line for line in section if line.strip()]
    assert lines[:2] == [INCOMPLETE, UNSAFE]
    assert (
        f"exact-match  pass-rate {ORACLE['rates']['exact-match']:.4f}  (2 of 6 executions "
        "passed, 2 errored; 0.5000 over the 4 scored)" in out
    )
    assert (
        f"macro-F1 {ORACLE['macro']:.4f} over 2 quality metric(s) "
        f"({ORACLE['macro_scored']:.4f} over scored executions only)" in out
    )
    assert "safety FAILED: pii-leak (kept out of macro-F1)" in out
