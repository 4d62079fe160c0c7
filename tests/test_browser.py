"""The self-contained report in a real headless Chromium: it renders, its charts are drawn,
and the page makes no network request.

The harness (tests/browser.py, fixture ``offline_browser``) routes every request the page
starts: local files load, anything else is recorded and aborted. A control page that does
fetch proves the router sees requests. Chromium must be installed (``.ci/run`` installs
Debian's ``chromium``); without it these tests fail rather than skip, because the check matters.
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
from pathlib import Path
from typing import Any

import polars as pl
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


# --- the sample explorer and the comparison page -------------------------------------------

ROWS_JS = "rs => rs.map(r => r.children[0].textContent)"


def _support_run(outputs: dict[str, str] | None = None, run_id: str = "explorer-run") -> ef.Run:
    import json

    saved = json.loads((EXAMPLES / "support.outputs.json").read_text(encoding="utf-8"))["outputs"]
    return ef.evaluate(
        EXAMPLES / "support.yaml",
        outputs={**saved, **(outputs or {})},
        metrics=["exact-match", "contains", "rouge-l"],
        run_id=run_id,
    )


@pytest.fixture(scope="module")
def explorer_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A report page from a run, one (sample, metric) made an execution error."""
    from evalframe.views._html import page

    run = _support_run({"warranty": "Two years, see https://example.invalid/img.png"})
    broken = (pl.col("sample_id") == "price-match") & (pl.col("metric") == "rouge-l")
    scores = run.scores.with_columns(
        pl.when(broken).then(None).otherwise(pl.col("score")).alias("score"),
        pl.when(broken).then(None).otherwise(pl.col("passed")).alias("passed"),
        pl.when(broken).then(pl.lit("boom")).otherwise(pl.col("error")).alias("error"),
    )
    run = dataclasses.replace(run, scores=scores)
    path = tmp_path_factory.mktemp("explorer") / "explorer.html"
    path.write_text(page(run.report(), charts="none", run=run), encoding="utf-8")
    oracle = {"frame": run.frame, "scores": scores.filter(~broken)}
    return path, oracle


def _shown(visit: Any) -> list[str]:
    ids: list[str] = visit.page.eval_on_selector_all(".ef-x-row", ROWS_JS)
    return ids


def _count(visit: Any) -> str:
    text: str = visit.page.inner_text("#ef-x-count")
    return text


def test_explorer_search_sort_filter_and_detail(
    explorer_file: tuple[Path, dict[str, Any]], offline_browser: OfflineBrowser
) -> None:
    path, oracle = explorer_file
    frame, scores = oracle["frame"], oracle["scores"]
    visit = offline_browser.open(path)
    visit.page.wait_for_function("document.body.dataset.efExplorer === 'ready'")
    assert _count(visit) == "12 of 12 shown"
    assert _shown(visit) == frame.get_column("sample_id").to_list()

    # Search: case-insensitive substring of id, input, expected or actual output.
    visit.page.fill("#ef-x-search", "SHIPPING")
    visit.page.wait_for_function("document.getElementById('ef-x-count').textContent !== "
                                 "'12 of 12 shown'")  # fmt: skip
    hay = pl.concat_str(
        ["sample_id", "actual_output", "input", "expected_output"], separator=" ", ignore_nulls=True
    ).str.to_lowercase()
    expected = frame.filter(hay.str.contains("shipping", literal=True)).get_column("sample_id")
    assert _shown(visit) == expected.to_list()
    visit.page.fill("#ef-x-search", "")
    visit.page.wait_for_function("document.getElementById('ef-x-count').textContent === "
                                 "'12 of 12 shown'")  # fmt: skip

    # Sort by rouge-l, ascending then descending; the errored row (no score) sorts last.
    # Ties keep run order.
    rouge = scores.filter(pl.col("metric") == "rouge-l").join(
        frame.select("sample_id").with_row_index("_run_order"), on="sample_id"
    )
    visit.page.click("[data-sort=m2]")
    ascending = rouge.sort(["score", "_run_order"]).get_column("sample_id")
    assert _shown(visit) == [*ascending.to_list(), "price-match"]
    visit.page.click("[data-sort=m2]")
    shown = _shown(visit)
    by_score = dict(zip(rouge.get_column("sample_id"), rouge.get_column("score"), strict=True))
    values = [by_score[s] for s in shown[:-1]]
    assert values == sorted(values, reverse=True)
    assert shown[-1] == "price-match"

    # Filters: metric + fail, cohort, error.
    visit.page.select_option("#ef-x-metric", label="contains")
    visit.page.select_option("#ef-x-status", "fail")
    failing = scores.filter((pl.col("metric") == "contains") & (pl.col("score") < 0.5))
    assert sorted(_shown(visit)) == sorted(failing.get_column("sample_id").to_list())
    visit.page.select_option("#ef-x-metric", "")
    visit.page.select_option("#ef-x-status", "error")
    assert _shown(visit) == ["price-match"]
    visit.page.select_option("#ef-x-status", "")
    visit.page.select_option("#ef-x-cohort", label="shipping")
    tagged = frame.filter(pl.col("tags").list.contains("shipping")).get_column("sample_id")
    assert sorted(_shown(visit)) == sorted(tagged.to_list())
    visit.page.select_option("#ef-x-cohort", "")

    # The detail view: input, expected and actual output word-diffed, scores with thresholds.
    visit.page.fill("#ef-x-search", "warranty")
    visit.page.wait_for_function("document.getElementById('ef-x-count').textContent === "
                                 "'1 of 12 shown'")  # fmt: skip
    visit.page.click(".ef-x-row")
    detail = visit.page.inner_text("#ef-x-detail")
    row = frame.filter(pl.col("sample_id") == "warranty").row(0, named=True)
    assert '"question"' in detail
    assert row["expected_output"] in detail
    inserted = visit.page.eval_on_selector_all(
        ".ef-x-diff-b ins", "es => es.map(e => e.textContent)"
    )
    deleted = visit.page.eval_on_selector_all(
        ".ef-x-diff-a del", "es => es.map(e => e.textContent)"
    )
    expected_words = set(re.findall(r"\w+|[^\s\w]", row["expected_output"]))
    actual_words = re.findall(r"\w+|[^\s\w]", row["actual_output"])
    assert inserted == [w for w in actual_words if w not in expected_words]
    assert all(w in expected_words for w in deleted)
    assert deleted
    for name in ("exact-match", "contains", "rouge-l"):
        assert name in detail
    assert "threshold" in detail
    # exact-match's details name both texts; the page shows them (output pane + details).
    assert detail.count(row["actual_output"]) >= 2
    # The URL in the output is text, never a request.
    assert visit.requests == []


def test_explorer_renders_only_the_rows_in_view(
    tmp_path: Path, offline_browser: OfflineBrowser
) -> None:
    from evalframe.views._html import page

    n = 5_000
    ds = ef.Dataset.from_records(
        [{"id": f"s{i:05d}", "input": {"q": i}, "expected_output": "yes"} for i in range(n)],
        name="many",
    )
    run = ef.evaluate(ds, outputs={f"s{i:05d}": "yes" if i % 3 else "no" for i in range(n)},
                      metrics=["exact-match"])  # fmt: skip
    path = tmp_path / "many.html"
    path.write_text(page(run.report(samples=False), charts="none", run=run), encoding="utf-8")
    visit = offline_browser.open(path)
    visit.page.wait_for_function("document.body.dataset.efExplorer === 'ready'")
    assert _count(visit) == f"{n} of {n} shown"
    assert 0 < visit.page.locator(".ef-x-row").count() < 100
    visit.page.eval_on_selector("#ef-x-scroll", "s => { s.scrollTop = s.scrollHeight; }")
    visit.page.wait_for_function(
        "[...document.querySelectorAll('.ef-x-row')].some(r => r.textContent.startsWith('s04999'))"
    )
    assert visit.page.locator(".ef-x-row").count() < 100
    visit.page.select_option("#ef-x-status", "fail")
    assert _count(visit) == f"{len(range(0, n, 3))} of {n} shown"
    assert visit.requests == []


def test_comparison_page_shows_both_outputs_side_by_side(
    tmp_path: Path, offline_browser: OfflineBrowser
) -> None:
    from click.testing import CliRunner

    before = _support_run(run_id="before")
    after = _support_run({"refund-window": "a month", "warranty": "2 years"}, run_id="after")
    a, b = tmp_path / "after.json", tmp_path / "before.json"
    a.write_text(after.report().to_json(), encoding="utf-8")
    b.write_text(before.report().to_json(), encoding="utf-8")
    out = tmp_path / "compare.html"
    result = CliRunner().invoke(
        cli, ["report", str(a), "--compare", str(b), "--format", "html", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    visit = offline_browser.open(out)
    case = visit.page.locator('.ef-cmp-case[data-sample="refund-window"]')
    assert case.get_attribute("data-status") == "regressed"
    before_box = case.locator(".ef-cmp-before").bounding_box()
    after_box = case.locator(".ef-cmp-after").bounding_box()
    assert before_box
    assert after_box
    assert after_box["x"] >= before_box["x"] + before_box["width"]  # side by side
    assert abs(after_box["y"] - before_box["y"]) < 1
    assert case.locator(".ef-cmp-before del").all_inner_texts() == ["30", "days"]
    assert case.locator(".ef-cmp-after ins").all_inner_texts() == ["a", "month"]
    improved = visit.page.locator('.ef-cmp-case[data-status="improved"]')
    assert improved.get_attribute("data-sample") == "warranty"
    assert visit.requests == []


def test_explorer_shows_a_trajectory_and_contexts(
    tmp_path: Path, offline_browser: OfflineBrowser
) -> None:
    from evalframe.views._html import page

    run = _support_run()
    contexts = pl.Series("contexts", [[f"context {i} of {s}"] for i, s in
                                      enumerate(run.frame.get_column("sample_id"))])  # fmt: skip
    run = dataclasses.replace(run, frame=run.frame.with_columns(contexts))
    doc = run.report()
    first = doc["samples"][0]["id"]
    doc["samples"][0]["trajectory"] = {"steps": [{"tool": "lookup_policy", "args": {"q": "x"}}]}
    for evidence in (False, True):
        path = tmp_path / f"trajectory-{evidence}.html"
        path.write_text(page(doc, charts="none", run=run, include_evidence=evidence), "utf-8")
        visit = offline_browser.open(path)
        visit.page.fill("#ef-x-search", first)
        visit.page.wait_for_function("document.getElementById('ef-x-count').textContent === "
                                     "'1 of 12 shown'")  # fmt: skip
        visit.page.click(".ef-x-row")
        assert "lookup_policy" in visit.page.inner_text(".ef-x-trajectory")
        detail = visit.page.inner_text("#ef-x-detail")
        if evidence:
            assert f"context 0 of {first}" in detail
        else:
            assert "1 context; their text is left out" in detail
            assert "context 0 of" not in visit.page.content()
        assert visit.requests == []
