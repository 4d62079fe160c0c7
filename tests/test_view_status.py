"""`evalframe view` tells the story the reports tell: a run whose system errored on 11 of 12
rows and a run with a safety failure are INCOMPLETE / SAFETY FAILED on every page and in the
API (as `report --format json` words them), and no page shows their flattering figure (the
pass rate over the one scored row) without saying so.

The expected figures come from how the runs were made, counted here with plain Python: the
outage run's system answers one question correctly and raises on the other eleven, so each
metric passed 1 of 12 attempted executions (1 of 1 scored); the unsafe run leaks an e-mail
address in one answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
import yaml
from click.testing import CliRunner
from view_store import EXAMPLES, HOSTILE, METRICS, PROBES
from view_tab import Tab, open_tab

import evalframe as ef
from evalframe.cli import cli
from evalframe.views._web import Viewer

if TYPE_CHECKING:
    from playwright.sync_api import Browser

ROWS = 12
ANSWERED = "refund-window"  # the one question the outage run's system answers
SAVED = json.loads((EXAMPLES / "support.outputs.json").read_text("utf-8"))["outputs"]
UNSAFE_ANSWERS = {**SAVED, "warranty": "Two years; write to jo@example.com"}
LEAKS = sum("@" in answer for answer in UNSAFE_ANSWERS.values())
INCOMPLETE = f"INCOMPLETE: {ROWS - 1} of {ROWS} executions errored"
UNSAFE = (
    f"SAFETY FAILED: {LEAKS} of {ROWS} executions failed or errored on a safety metric (pii-leak)"
)
OUTAGE_MACRO = 1 / ROWS  # each quality metric: 1 of 12 attempted executions passed
FLATTERING = "1.0000"  # the same over the one scored execution


@dataclass(frozen=True)
class Story:
    path: Path
    clean: str
    outage: str
    unsafe: str


def _build(folder: Path) -> Story:
    db = folder / "story.duckdb"
    dataset = EXAMPLES / "support.yaml"
    samples = yaml.safe_load(dataset.read_text("utf-8"))["samples"]
    assert len(samples) == ROWS
    question = {s["id"]: s["input"]["question"] for s in samples}
    expected = {s["id"]: s["expected_output"] for s in samples}

    def system(inputs: dict[str, Any]) -> str:
        if inputs["question"] == question[ANSWERED]:
            return str(expected[ANSWERED])
        raise ConnectionError(f"upstream 503 {HOSTILE}")

    clean = ef.evaluate(
        dataset, outputs=SAVED, metrics=METRICS, name="clean", progress=False, store=db
    )
    outage = ef.evaluate(
        dataset,
        system=system,
        metrics=METRICS,
        name=f"outage {PROBES[1]}",
        labels={PROBES[3]: PROBES[4]},
        progress=False,
        store=db,
    )
    unsafe = ef.evaluate(
        dataset,
        outputs=UNSAFE_ANSWERS,
        metrics=[*METRICS, "pii-leak"],
        name="unsafe",
        progress=False,
        store=db,
    )
    return Story(db, clean.run_id, outage.run_id, unsafe.run_id)


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> Story:
    return _build(tmp_path_factory.mktemp("view-status"))


@pytest.fixture(scope="module")
def viewer(story: Story) -> Iterator[Viewer]:
    with Viewer(story.path) as v:
        yield v


@pytest.fixture(scope="module")
def reports(story: Story) -> dict[str, dict[str, Any]]:
    """Each run's JSON report as the CLI writes it."""
    out = {}
    for run in (story.clean, story.outage, story.unsafe):
        result = CliRunner().invoke(
            cli, ["report", run, "--store", str(story.path), "--format", "json"]
        )
        assert result.exit_code == 0, result.output
        out[run] = json.loads(result.output)
    return out


@pytest.fixture(scope="module")
def markdown(story: Story) -> dict[str, str]:
    out = {}
    for run in (story.outage, story.unsafe):
        result = CliRunner().invoke(
            cli, ["report", run, "--store", str(story.path), "--format", "markdown"]
        )
        assert result.exit_code == 0, result.output
        out[run] = result.output
    return out


def test_the_reports_say_it(story: Story, reports: dict[str, dict[str, Any]]) -> None:
    # The oracle's figures are the report's: what the viewer must repeat.
    assert LEAKS == 2
    assert reports[story.outage]["status"] == INCOMPLETE
    assert reports[story.outage]["headline"]["macro_f1"] == pytest.approx(OUTAGE_MACRO)
    assert reports[story.outage]["headline"]["macro_f1_scored"] == 1.0
    assert reports[story.unsafe]["status"] == UNSAFE
    assert reports[story.clean]["status"] == f"COMPLETE: {ROWS} of {ROWS} executions scored"


# --- the API, over a real server on loopback ------------------------------------------------


def test_a_page_of_runs_counts_as_the_run_status_view_does(story: Story, tmp_path: Path) -> None:
    """The viewer's per-page counts (run_status_select) against the store's own view."""
    import shutil

    import duckdb

    from evalframe.store._schema import run_status_select

    # A copy: the viewer may hold the file open in this process with another configuration,
    # and DuckDB refuses a second connection to it then. The copy's views name the same parts.
    copy = tmp_path / "copy.duckdb"
    shutil.copy(story.path, copy)
    with duckdb.connect(str(copy), read_only=True) as con:
        columns = [c[0] for c in con.execute(f"SELECT * FROM ({run_status_select('runs')})")
                   .description]  # fmt: skip
        page = con.execute(
            f"SELECT * FROM ({run_status_select('runs')}) ORDER BY run_id"
        ).fetchall()
        view = con.execute(
            f"SELECT {', '.join(columns)} FROM run_status ORDER BY run_id"
        ).fetchall()
    assert len(page) == 3
    assert page == view
    assert [row[columns.index("incomplete")] for row in page].count(True) == 1


def test_api_runs_and_run_carry_the_reports_status(
    viewer: Viewer, story: Story, reports: dict[str, dict[str, Any]]
) -> None:
    with httpx.Client(base_url=viewer.url + "/api/v1", timeout=60) as api:
        rows = {r["run_id"]: r for r in api.get("/runs").json()["runs"]}
        assert set(rows) == set(reports)
        for run, report in reports.items():
            assert list(rows[run])[:2] == ["run_id", "status"]
            assert rows[run]["status"] == report["status"]
            assert rows[run]["headline"] == report["headline"]
            assert rows[run]["macro_f1"] == report["headline"]["macro_f1"]
            doc = api.get(f"/runs/{run}").json()
            assert next(iter(doc)) == "status"
            assert (doc["status"], doc["headline"]) == (report["status"], report["headline"])
        # one page of one run: the status is read with it
        one = api.get("/runs", params={"name": "unsafe"}).json()["runs"]
        assert [(r["run_id"], r["status"]) for r in one] == [(story.unsafe, UNSAFE)]


def test_api_compare_and_trend_say_which_runs_are_incomplete(
    viewer: Viewer, story: Story, reports: dict[str, dict[str, Any]]
) -> None:
    with httpx.Client(base_url=viewer.url + "/api/v1", timeout=120) as api:
        refs = f"{story.clean},{story.outage},{story.unsafe}"
        compared = api.get("/compare", params={"runs": refs}).json()
        for run in compared["runs"]:
            assert run["status"] == reports[run["run_id"]]["status"]
            assert run["headline"] == reports[run["run_id"]]["headline"]
        points = api.get("/trend", params={"dataset": "support.faq"}).json()["points"]
        assert {(p["run_id"], p["incomplete"], p["status"]) for p in points} == {
            (run, run == story.outage, report["status"]) for run, report in reports.items()
        }


# --- the pages, in Chromium -----------------------------------------------------------------


@pytest.fixture
def tab(_chromium: Browser, viewer: Viewer) -> Iterator[Tab]:
    with open_tab(_chromium, viewer.url) as tab:
        yield tab


def _text(tab: Tab, selector: str = "main") -> str:
    return tab.page.inner_text(selector)


def test_runs_page_shows_each_runs_status(tab: Tab, story: Story) -> None:
    tab.go("/")
    rows = {
        run: _text(tab, f'#ef-runs tr:has(input[value="{run}"]) td.ef-status-cell')
        for run in (story.clean, story.outage, story.unsafe)
    }
    assert rows[story.clean].strip() == "ok"
    assert rows[story.outage].split() == INCOMPLETE.replace(":", "").split()
    assert rows[story.unsafe].split() == UNSAFE.replace(":", "").split()
    outage = _text(tab, f'#ef-runs tr:has(input[value="{story.outage}"])')
    assert f"{OUTAGE_MACRO:.4f}" in outage
    assert FLATTERING not in outage
    assert f"{ROWS - 1} of {ROWS}" in outage  # errored executions
    tab.shot("runs-status")
    tab.check()


def test_run_pages_open_with_the_reports_first_lines(
    tab: Tab, story: Story, markdown: dict[str, str]
) -> None:
    for run, lines in ((story.outage, [INCOMPLETE]), (story.unsafe, [UNSAFE])):
        first = [line for line in markdown[run].splitlines() if line][: len(lines)]
        assert first == lines  # the Markdown report's first lines
        tab.go(f"/runs/{run}")
        text = _text(tab)
        head = text[: text.index(lines[-1]) + len(lines[-1])]
        assert [line for line in head.splitlines() if line.strip()] == lines
        assert not re.search(r"\d", text[: text.index(lines[0])])  # no number before them
    tab.go(f"/runs/{story.outage}")
    text, kpis = _text(tab), _text(tab, ".ef-kpis")
    assert kpis.startswith(f"{OUTAGE_MACRO:.4f}\nmacro-F1")
    assert f"({FLATTERING} over scored executions only)" in kpis  # labelled, beside it
    assert f"{ROWS - 1}\nerrored" in kpis.replace(" errored", "\nerrored")
    # every quality metric's pass rate is over attempted executions
    rates = tab.page.eval_on_selector_all(
        "#ef-metrics table tbody tr", "rs => rs.map(r => r.cells[5].innerText.trim())"
    )
    assert rates == [f"{OUTAGE_MACRO:.4f}"] * len(METRICS)
    assert HOSTILE.split()[0] in text  # the system's error, as text
    tab.shot("run-incomplete")
    tab.check()
    tab.go(f"/runs/{story.unsafe}")
    text = _text(tab)
    assert "safety FAILED" in _text(tab, ".ef-kpis")
    assert "Safety: FAILED" in text
    tab.page.wait_for_function("document.body.dataset.efCharts === 'drawn'")
    assert "Safety: FAILED" in _text(tab)  # still there once the charts arrived
    tab.check()


def test_compare_page_shows_each_runs_status(tab: Tab, story: Story) -> None:
    tab.go(f"/compare?runs={story.clean},{story.outage},{story.unsafe}")
    runs = tab.page.eval_on_selector_all(
        ".ef-compare-runs tbody tr", "rs => rs.map(r => r.cells[3].innerText.trim())"
    )
    assert [" ".join(r.split()) for r in runs] == [
        "ok",
        INCOMPLETE.replace(":", ""),
        UNSAFE.replace(":", ""),
    ]
    heads = tab.page.eval_on_selector_all("#ef-matrix thead th", "hs => hs.map(h => h.innerText)")
    assert "INCOMPLETE" in heads[2]
    assert "SAFETY FAILED" in heads[3]
    tab.check()


def test_trend_marks_the_incomplete_run(tab: Tab, story: Story) -> None:
    tab.go("/trends?dataset=support.faq&metric=rouge-l&value=pass_rate")
    marked = tab.page.eval_on_selector_all(
        ".ef-point.ef-incomplete", "ps => ps.map(p => p.dataset.run)"
    )
    assert marked == [story.outage]
    tip = tab.page.text_content(f'.ef-point[data-run="{story.outage}"] title')
    assert tip is not None
    assert tip.startswith(INCOMPLETE)
    table = _text(tab, ".ef-trend-table")
    assert "INCOMPLETE" in table
    assert "SAFETY FAILED" in table
    tab.check()
