"""Any text a user can put in a tag, a name, a label or a metric detail renders in every chart
and view: the HTML report with Vega charts (in real Chromium), its static SVG charts, SVG and
PNG exports, comparison pages, briefs and the online trend chart."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from browser import OfflineBrowser
from click.testing import CliRunner, Result

import evalframe as ef
from evalframe.cli import cli
from evalframe.store import Store
from evalframe.views import plot

HOSTILE = [
    "<!--<script>",
    "</script><script>window.__pwned=1</script>",
    "<img src=x onerror=window.__pwned=2>",
    "line\u2028sep",
    "para\u2029sep",
    "quote'dq\"back\\slash",
    "${x} {{y}} datum.z",
    "tab\tnl\ncr\r",
    "ctl\x01\x1b",
    "nul\x00",
    "nonchar\ufffe",
    "\x85next",
    "]]>",
    "😀",
    "a" * 300,
]
VISIBLE = ["<!--<script>", "${x} {{y}} datum.z", "]]>"]  # short enough to be drawn whole


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two runs of a dataset whose every tag (and name, label, output) is hostile."""
    root = tmp_path_factory.mktemp("hostile")
    samples = [
        {"id": f"s{i}<!--", "input": {"q": text}, "expected_output": "y",
         "metadata": {"tags": [text]}}
        for i, text in enumerate(HOSTILE)
    ]  # fmt: skip
    name = "hostile\u2028<!--<script>\x01"
    (root / "d.json").write_text(json.dumps({"name": name, "samples": samples}), "utf-8")
    first = {s["id"]: "y" if i % 2 else "no\u2028</script>{" for i, s in enumerate(samples)}
    (root / "o1.json").write_text(json.dumps({"outputs": first}), "utf-8")
    (root / "o2.json").write_text(json.dumps({"outputs": {s["id"]: "y" for s in samples}}), "utf-8")
    db = str(root / "s.duckdb")
    for outputs, report in (("o1.json", "r1.json"), ("o2.json", "r2.json")):
        result = invoke(
            "run", str(root / "d.json"), "--outputs", str(root / outputs),
            "-m", "exact-match", "-m", "rouge-l", "-m", "json-valid",
            "--name", "run<!--<script>\u2028\x01", "--label", "k<!--=v</script>\x02",
            "--store", db, "--format", "json", "--out", str(root / report),
        )  # fmt: skip
        assert result.exit_code == 0, result.output
    return root


def chart_text(visit: object, index: int) -> str:
    page = visit.page  # type: ignore[attr-defined]
    text: str = page.locator(f"#ef-chart-{index} svg").first.text_content()
    return text


def test_vega_charts_draw_with_hostile_labels_in_chromium(
    reports: Path, offline_browser: OfflineBrowser
) -> None:
    out = reports / "vega.html"
    result = invoke("report", str(reports / "r1.json"), "--format", "html", "--out", str(out))
    assert result.exit_code == 0, result.output
    visit = offline_browser.open(out)
    visit.page.wait_for_function(
        "[0, 1].every(i => document.querySelector(`#ef-chart-${i} svg .mark-rect path`))"
    )
    heatmap = chart_text(visit, 1)
    for text in VISIBLE:
        assert text in heatmap, text
    cells = visit.page.locator("#ef-chart-1 svg g.mark-rect.role-mark path").count()
    assert cells == 3 * len(HOSTILE)  # every cohort x metric
    assert visit.page.evaluate("window.__pwned") is None
    assert visit.requests == []


def test_static_svg_charts_take_hostile_labels(
    reports: Path, offline_browser: OfflineBrowser
) -> None:
    out = reports / "svg.html"
    result = invoke(
        "report", str(reports / "r1.json"), "--format", "html", "--charts", "svg",
        "--out", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    visit = offline_browser.open(out)
    heatmap = chart_text(visit, 1)
    for text in VISIBLE:
        assert text in heatmap, text
    assert "ctl\u2401\u241b" in heatmap  # a control character is drawn as its picture
    cells = visit.page.locator("#ef-chart-1 svg g.mark-rect.role-mark path").count()
    assert cells == 3 * len(HOSTILE)
    assert visit.page.evaluate("window.__pwned") is None


def test_exported_charts_are_valid_svg_and_png_with_hostile_labels(reports: Path) -> None:
    store = Store(reports / "s.duckdb")
    before, after = (store.load(ref) for ref in ("previous", "latest"))
    charts = {
        "histograms": plot.histograms(after),
        "heatmap": plot.heatmap(after),
        "deltas": ef.compare(before, after).plot.deltas(),
        "trend": store.plot.trend(),
    }
    for name, chart in charts.items():
        svg = plot.to_svg(chart)
        ET.fromstring(svg)  # well-formed XML, whatever the labels hold
        assert plot.to_png(chart).startswith(b"\x89PNG"), name
    assert "&lt;!--&lt;script&gt;" in plot.to_svg(charts["heatmap"])


def test_comparison_pages_and_briefs_take_hostile_labels(
    reports: Path, offline_browser: OfflineBrowser
) -> None:
    page = reports / "cmp.html"
    r1, r2 = str(reports / "r1.json"), str(reports / "r2.json")
    assert (
        invoke("report", r2, "--compare", r1, "--format", "html", "--out", str(page)).exit_code == 0
    )
    visit = offline_browser.open(page)
    case = visit.page.locator(".ef-cmp-case").first
    assert case.get_attribute("data-sample") == "s0<!--"
    assert case.locator(".ef-cmp-before").inner_text().startswith("no\u2028</script>{")
    assert "hostile\u2028<!--<script>" in visit.page.locator("body").inner_text()
    assert visit.page.evaluate("window.__pwned") is None
    db = str(reports / "s.duckdb")
    for fmt in ("md", "json", "github"):
        result = invoke("brief", r1, "--store", db, "--format", fmt)
        assert result.exit_code == 0, (fmt, result.output)
    brief = json.loads(invoke("brief", r1, "--store", db, "--format", "json").stdout)
    assert "<!--<script>" in json.dumps(brief, ensure_ascii=False)


def test_the_online_trend_chart_is_valid_svg_with_a_hostile_dataset_name(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    Store(db).close()
    chart = tmp_path / "trend.svg"
    name = "faq\x01<&>\x1b\u2028"  # (an argument cannot hold NUL)
    result = invoke("online", "status", name, "--store", str(db), "--chart", str(chart))
    assert result.exit_code == 0, result.output
    root = ET.fromstring(chart.read_text(encoding="utf-8"))
    assert "faq\u2401<&>\u241b\u2028" in "".join(root.itertext())
