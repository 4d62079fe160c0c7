"""`evalframe view` in a real headless Chromium: every page driven as a person would (open a
run, filter failures, open a sample, compare three runs, follow a trend, label five rows and
see `calibrate` use them), with any console error, page error or dialog failing the test,
and no request leaving the viewer. The HTML report's XSS probes go through every page.

The screenshots in docs/howto/img/ come from these tests: `pytest --update-snapshots`
writes them (review, then commit); otherwise each must exist.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

import httpx
import polars as pl
import pytest
from click.testing import CliRunner
from view_store import PROBES, ViewStore, build
from view_tab import Tab, open_tab

import evalframe as ef
from evalframe.cli import cli
from evalframe.views._web import Viewer

if TYPE_CHECKING:
    from playwright.sync_api import Browser


@pytest.fixture(scope="module")
def vs(tmp_path_factory: pytest.TempPathFactory) -> ViewStore:
    return build(tmp_path_factory.mktemp("view-browser"))


@pytest.fixture(scope="module")
def viewer(vs: ViewStore) -> Iterator[Viewer]:
    with Viewer(vs.path) as v:
        yield v


@pytest.fixture
def tab(_chromium: Browser, viewer: Viewer) -> Iterator[Tab]:
    with open_tab(_chromium, viewer.url) as tab:
        yield tab


def _ids(tab: Tab, selector: str) -> list[str]:
    found: list[str] = tab.page.eval_on_selector_all(
        selector, "es => es.map(e => e.dataset.sample)"
    )
    return found


def test_runs_filter_and_open_a_run(tab: Tab, vs: ViewStore) -> None:
    tab.go("/")
    assert tab.page.locator("#ef-runs tbody tr").count() == 4
    tab.shot("runs")
    with tab.page.expect_navigation():
        tab.page.select_option("#ef-f-dataset", "support.faq")
    tab.page.wait_for_function("document.body.dataset.efReady === 'yes'")
    assert tab.page.locator("#ef-runs tbody tr").count() == 3
    with tab.page.expect_navigation():
        tab.page.click("#ef-runs tbody tr:last-child td:nth-child(3)")  # the row, not a link
    assert vs.runs[0] in tab.page.url
    assert "Per-metric aggregates" in tab.page.inner_text("main")
    tab.check()


def test_run_filter_failures_and_open_a_sample(tab: Tab, vs: ViewStore) -> None:
    run = vs.runs[1]
    tab.go(f"/runs/{run}")
    tab.page.wait_for_function("document.body.dataset.efCharts === 'drawn'")
    assert tab.page.locator(".ef-chart svg").count() >= 2  # Vega-Lite drew the charts
    assert tab.page.locator("#ef-metrics svg.ef-hist").count() == 3  # a histogram per metric
    tab.shot("run")
    with tab.page.expect_navigation():
        tab.page.select_option("#ef-x-status", "fail")
    tab.page.wait_for_function("document.body.dataset.efReady === 'yes'")
    with ef.Store(vs.path) as store:
        loaded = store.load(run)
    thresholds = {m.id: m.threshold for m in loaded.metrics}
    failing = sorted(
        {
            r["sample_id"]
            for r in loaded.scores.iter_rows(named=True)
            if r["error"] is None and r["score"] < thresholds[r["metric"]]
        }
    )
    assert sorted(_ids(tab, ".ef-x-row")) == failing
    assert tab.page.inner_text("#ef-count").endswith(f"of {len(failing)}")
    with tab.page.expect_navigation():
        tab.page.click('.ef-x-row[data-sample="refund-window"] td:nth-child(3)')
    main = tab.page.inner_text("main")
    assert '"question"' in main
    assert tab.page.eval_on_selector_all(".ef-diff-b ins", "es => es.map(e => e.textContent)") == [
        "a",
        "month",
    ]
    assert "threshold" in main
    assert "rouge-l" in main
    tab.shot("sample")
    tab.check()


def test_compare_three_runs(tab: Tab, vs: ViewStore) -> None:
    tab.go("/?dataset=support.faq")
    for run in vs.runs:  # whatever the order ticked, the oldest is the reference
        tab.page.check(f'input[name=pick][value="{run}"]')
    assert tab.page.inner_text("#ef-compare-n") == "3 selected"
    with tab.page.expect_navigation():
        tab.page.click("#ef-compare-go")
    tab.page.wait_for_function("document.body.dataset.efReady === 'yes'")
    assert tab.page.locator(".ef-compare-metrics tbody tr").count() == 3
    assert tab.page.locator(".ef-matrix-row").count() == 12
    # The page comes without the bootstrap; its intervals follow, for every delta.
    tab.page.wait_for_function("document.body.dataset.efIntervals === 'shown'")
    assert tab.page.locator("#ef-intervals-note").count() == 0
    deltas = tab.page.eval_on_selector_all(
        ".ef-compare-metrics tbody td:nth-child(4)", "ts => ts.map(t => t.innerText)"
    )
    assert len(deltas) == 3
    assert all(re.fullmatch(r"[+-]\d\.\d{4} \[[+-]\d\.\d{4}, [+-]\d\.\d{4}\]", d) for d in deltas)
    tab.shot("compare")
    with tab.page.expect_navigation():
        tab.page.click("text=regressed only")
    shown = _ids(tab, ".ef-matrix-row")
    with ef.Store(vs.path) as store:
        regressed = set()
        for other in vs.runs[1:]:
            c = store.compare(vs.runs[0], other)
            for frame in (c.rows, c.row_metrics):  # a row, or one of its metrics, regressed
                regressed |= set(
                    frame.filter(pl.col("status") == "regressed").get_column("sample_id")
                )
    assert sorted(shown) == sorted(regressed)
    row = tab.page.locator('.ef-matrix-row[data-sample="refund-window"]')
    assert row.locator("td[data-status=regressed]").count() >= 1
    assert row.locator("ins").all_inner_texts()[:2] == ["a", "month"]  # against the reference
    tab.check()


def test_follow_a_trend_to_its_run(tab: Tab, vs: ViewStore) -> None:
    tab.go("/trends")
    with tab.page.expect_navigation():
        tab.page.select_option("#ef-t-dataset", "support.faq")
    tab.page.wait_for_function("document.body.dataset.efReady === 'yes'")
    with tab.page.expect_navigation():
        tab.page.select_option("#ef-t-metric", "rouge-l")
    tab.page.wait_for_function("document.body.dataset.efReady === 'yes'")
    assert tab.page.locator(".ef-point").count() == 3
    assert "baseline support-main" in tab.page.inner_text("#ef-trend-chart")
    assert tab.page.locator(".ef-threshold").count() == 1
    tab.shot("trend")
    with tab.page.expect_navigation():
        tab.page.click(f'.ef-point[data-run="{vs.runs[2]}"] circle')
    assert tab.page.url.endswith(f"/runs/{vs.runs[2]}")
    tab.check()


def test_label_five_rows_then_calibrate_uses_them(tab: Tab, vs: ViewStore) -> None:
    run = vs.runs[2]
    api = f"{tab.base}/api/v1/runs/{run}/queue"
    queued = httpx.get(api, params={"metric": "rouge-l", "n": 8}, timeout=60).json()["rows"]
    suggested = CliRunner().invoke(
        cli,
        ["calibrate", "--suggest", "8", "--run", run, "--metric", "rouge-l", "--store",
         str(vs.path), "--format", "json"],
    )  # fmt: skip
    assert suggested.exit_code == 0, suggested.output
    cli_rows = json.loads(suggested.stdout)["rows"]
    assert [r["sample_id"] for r in queued] == [r["sample_id"] for r in cli_rows]

    tab.go(f"/runs/{run}/label?metric=rouge-l&n=8")
    tab.page.wait_for_function("document.body.dataset.efQueue === 'ready'")
    tab.shot("label")
    keys = ["p", "f", "p", "s", "f"]
    for i, key in enumerate(keys):
        card = tab.page.locator(".ef-label-card:visible")
        assert card.get_attribute("data-sample") == queued[i]["sample_id"]
        if key == "s":
            tab.page.keyboard.press("s")
            tab.page.keyboard.type("0.4")
            tab.page.keyboard.press("Enter")
        else:
            if i == 0:
                tab.page.keyboard.press("n")
                tab.page.keyboard.type(f"note {PROBES[1]}")
                tab.page.keyboard.press("Escape")
            tab.page.keyboard.press(key)
        tab.page.wait_for_function(f"document.body.dataset.efLabelled === '{i + 1}'")
    assert tab.page.inner_text("#ef-queue-progress") == "5 of 8 labelled"
    tab.check()

    result = CliRunner().invoke(
        cli,
        ["calibrate", "--run", run, "--metric", "rouge-l", "--store", str(vs.path),
         "--format", "json", "--min-agreement", "0"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)["data"]
    assert data["case_count"] == 5
    with ef.Store(vs.path) as store:
        labels = store.labels(run, metric="rouge-l")
    got = dict(zip(labels.get_column("sample_id"), labels.get_column("label"), strict=True))
    want = dict(zip([r["sample_id"] for r in queued[:5]], [1.0, 0.0, 1.0, 0.4, 0.0], strict=True))
    assert got == want
    assert labels.filter(pl.col("note").is_not_null()).get_column("note").to_list() == [
        f"note {PROBES[1]}"
    ]


def test_online_adversarial_and_sql_pages(tab: Tab) -> None:
    tab.go("/online")
    with tab.page.expect_navigation():
        tab.page.click("text=support.live")
    text = tab.page.inner_text("main")
    assert "pass rate" in text
    assert tab.page.locator("main svg").count() == 1
    tab.shot("online")
    tab.go("/adversarial?dataset=adversarial.security.v1")
    assert tab.page.locator("main table").count() == 2
    tab.go("/sql")
    tab.page.fill("#ef-sql-text", "SELECT name, dataset FROM runs ORDER BY seq")
    with tab.page.expect_navigation():
        tab.page.keyboard.press("Control+Enter")
    assert tab.page.inner_text("#ef-sql-count").startswith("4 row(s)")
    tab.shot("sql")
    tab.check()


def test_every_page_escapes_the_probes(tab: Tab, vs: ViewStore) -> None:
    from urllib.parse import quote

    run, sample = vs.hostile, vs.hostile_sample
    pages = [
        "/",
        f"/?label={quote(PROBES[3])}",
        f"/runs/{run}",
        f"/runs/{run}?q={quote(PROBES[0])}",
        f"/runs/{run}/sample?id={quote(sample)}&rep=0",
        f"/runs/{run}/label?metric=rouge-l",
        f"/trends?label={quote(PROBES[3] + '=' + PROBES[4])}",
        f"/trends?dataset={quote('data ' + PROBES[0])}",
        "/online?dataset=support.live",
        f"/sql?q={quote('SELECT ' + repr(PROBES[1]) + ' AS x')}",
        f"/sql?q={quote(PROBES[2])}",
    ]
    refused = [
        (f"/runs/{quote(PROBES[0], safe='')}", 404),  # an unknown run, named by a probe
        (f"/compare?runs={vs.runs[0]},{run}", 400),  # two datasets: the message names both
    ]
    for path, status in [(p, 200) for p in pages] + refused:
        tab.go(path, status)
        tab.check()
    # The probes are there, as text.
    tab.go(f"/runs/{run}/sample?id={quote(sample)}&rep=0")
    text = tab.page.inner_text("main")
    assert all(probe in text for probe in PROBES)
    tab.go(f"/runs/{run}")
    assert PROBES[1] in tab.page.inner_text("main")  # the run's name and sample id
