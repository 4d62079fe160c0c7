"""The self-contained report in a real headless Chromium: it renders, its charts are drawn,
and the page makes no network request.

The harness (tests/browser.py, fixture ``offline_browser``) routes every request the page
starts: local files load, anything else is recorded and aborted. A control page that does
fetch proves the router sees requests. Chromium must be installed (``.ci/run`` installs
Debian's ``chromium``); without it these tests fail rather than skip, because the check matters.
"""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import pytest
from browser import OfflineBrowser, find_chromium

import evalframe as ef
from evalframe.cli import cli

EXAMPLES = Path(ef.__file__).parent / "examples"
CHARTS = 2


@pytest.fixture(scope="module")
def report_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report file exactly as CI makes it: `evalframe report ... --out report.html`."""
    from click.testing import CliRunner

    tmp = tmp_path_factory.mktemp("browser")
    run = ef.evaluate(
        EXAMPLES / "support.yaml",
        outputs=EXAMPLES / "support.outputs.json",
        metrics=["exact-match", "contains", "rouge-l"],
        run_id="browser-run",
    )
    run = dataclasses.replace(run, started_at=1_700_000_000.0, finished_at=1_700_000_001.0)
    src = tmp / "report.json"
    src.write_text(run.report().to_json(), encoding="utf-8")
    out = tmp / "report.html"
    result = CliRunner().invoke(cli, ["report", str(src), "--format", "html", "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def test_report_renders_with_its_charts_and_makes_no_request(
    report_file: Path, offline_browser: OfflineBrowser
) -> None:
    visit = offline_browser.open(report_file)
    # vega-embed replaces each empty chart container with a drawn SVG, asynchronously.
    visit.page.wait_for_function(
        "n => [...Array(n).keys()].every(i => document.querySelector(`#ef-chart-${i} svg`))",
        arg=CHARTS,
    )
    dom = visit.dom()
    assert "evalframe run — support.faq" in dom
    assert "Per-metric aggregates" in dom
    for i in range(CHARTS):
        start = dom.index(f'id="ef-chart-{i}"')
        chart = dom[start : dom.index("<h3>", start)]
        assert '<svg xmlns="http://www.w3.org/2000/svg"' in chart, chart[:500]
        # Bars (histograms) or cells (heatmap): data marks were drawn, not just axes.
        assert chart.count('class="mark-rect role-mark') >= 1, chart[:500]
        assert chart.count("<path") >= 5
    assert visit.requests == []


def test_the_harness_notices_a_page_that_does_fetch(
    tmp_path: Path, offline_browser: OfflineBrowser
) -> None:
    """Control: every kind of request a page can start is recorded (and none gets out)."""
    page = tmp_path / "fetches.html"
    page.write_text(
        "<!DOCTYPE html><html><head>"
        '<link rel="stylesheet" href="https://fonts.example.invalid/font.css">'
        '</head><body><img src="http://cdn.example.invalid/x.png">'
        '<script src="http://cdn.example.invalid/vega.js"></script>'
        "<script>fetch('https://api.example.invalid/data').catch(() => {});"
        "new WebSocket('ws://socket.example.invalid/live');</script>"
        "</body></html>",
        encoding="utf-8",
    )
    visit = offline_browser.open(page)
    assert sorted(visit.requests) == [
        "http://cdn.example.invalid/vega.js",
        "http://cdn.example.invalid/x.png",
        "https://api.example.invalid/data",
        "https://fonts.example.invalid/font.css",
        "ws://socket.example.invalid/live",
    ]


def test_a_local_page_loads_its_local_files(
    tmp_path: Path, offline_browser: OfflineBrowser
) -> None:
    """Control: local files are served, so a blank record means 'no request', not 'blocked'."""
    (tmp_path / "data.js").write_text("document.body.dataset.loaded = 'yes';", encoding="utf-8")
    page = tmp_path / "local.html"
    page.write_text(
        '<!DOCTYPE html><html><body><script src="data.js"></script></body></html>',
        encoding="utf-8",
    )
    visit = offline_browser.open(page)
    assert visit.page.evaluate("document.body.dataset.loaded") == "yes"
    assert visit.requests == []


def test_chromium_is_real() -> None:
    version = subprocess.run(
        [find_chromium(), "--version"], capture_output=True, text=True, timeout=30, check=False
    )
    assert "Chrom" in version.stdout, version.stdout + version.stderr
