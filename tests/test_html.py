"""HTML and text views, charts and the ``evalframe report`` command: snapshots and structure."""

from __future__ import annotations

import dataclasses
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from click.testing import CliRunner
from snapshot import check_snapshot

import evalframe as ef
from evalframe import plot
from evalframe.cli import cli
from evalframe.views import _html as efhtml

EXAMPLES = Path(ef.__file__).parent / "examples"
VOID = {"meta", "br", "hr", "img", "input", "link", "rect", "line"}


def fixed_run() -> ef.Run:
    ds = ef.Dataset.from_records(
        [
            {"id": "q1", "input": {"question": "Refund window?"}, "expected_output": "30 days",
             "metadata": {"tags": ["policy", "refunds"]}},
            {"id": "q2", "input": {"question": "Shipping?"}, "expected_output": "3-5 days",
             "metadata": {"tags": ["shipping"]}},
            {"id": "q3", "input": {"question": "ids"}, "expected_output": ["a"]},
            {"id": "q<4>", "input": {"question": "escape & <b>"}, "expected_output": "x & y",
             "metadata": {"tags": ["<script>"]}},
        ],
        name="snap <html>",
    )  # fmt: skip
    run = ef.evaluate(
        ds,
        outputs={"q1": "Returns within 30 days.", "q2": "3-5 days", "q3": "a", "q<4>": "x & y"},
        metrics=["exact-match", "contains", "rouge-l(threshold=0.7)"],
        repetitions=2,
        run_id="run-html",
    )
    return dataclasses.replace(run, started_at=1_700_000_000.0, finished_at=1_700_000_001.5)


@pytest.fixture(scope="module")
def run() -> ef.Run:
    return fixed_run()


class _Balance(HTMLParser):
    """Checks that every opened element is closed, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        assert self.stack, f"</{tag}> closes nothing"
        assert self.stack[-1] == tag, f"</{tag}> closes <{self.stack[-1]}>"
        self.stack.pop()


def parse(text: str) -> _Balance:
    parser = _Balance()
    parser.feed(text)
    parser.close()
    assert parser.stack == [], f"unclosed: {parser.stack}"
    return parser


# --- fragments ---------------------------------------------------------------------------


def test_run_html_fragment_snapshot(run: ef.Run) -> None:
    check_snapshot("run.html", run._repr_html_())


def test_report_html_fragment_snapshot(run: ef.Run) -> None:
    check_snapshot("report.html", run.report()._repr_html_())


def test_run_text_snapshot(run: ef.Run) -> None:
    check_snapshot("run.txt", efhtml.run_text(run) + "\n")


def test_run_and_report_views_agree(run: ef.Run) -> None:
    assert run._repr_html_() == efhtml.report_html(run.report())
    assert efhtml.run_text(run) == efhtml.report_text(run.report())


def test_report_view_is_the_same_after_a_json_round_trip(run: ef.Run) -> None:
    report = run.report()
    again = ef.Report(json.loads(report.to_json()))
    assert again._repr_html_() == report._repr_html_()


def test_fragment_is_balanced_and_escapes_user_text(run: ef.Run) -> None:
    text = run._repr_html_()
    tags = parse(text).tags
    assert "script" not in tags  # the <script> tag name is escaped, never markup
    assert "&lt;script&gt;" in text
    assert "snap &lt;html&gt;" in text
    assert "q&lt;4&gt;" not in text or "<code>q&lt;4&gt;</code>" in text


def test_fragment_has_every_section(run: ef.Run) -> None:
    text = run._repr_html_()
    headings = (
        "Per-metric aggregates", "Cohorts by tag", "Failing samples", "Execution errors",
    )  # fmt: skip
    for heading in headings:
        assert heading in text
    assert text.count('<svg class="ef-hist"') == 3  # one inline histogram per metric
    assert "macro-F1" in text
    assert f"{run.macro_f1:.4f}" in text


def test_failures_are_listed_and_the_rest_counted() -> None:
    ds = ef.Dataset.from_records(
        [{"id": f"s{i}", "input": {}, "expected_output": ["x"]} for i in range(30)], name="f"
    )
    run = ef.evaluate(ds, outputs={f"s{i}": "x" for i in range(30)}, metrics=["rouge-l"])
    assert run.failures.height == 30
    text = run._repr_html_()
    # every errored sample is a failing sample (up to its 20 rows), then the errors list
    failing, errors = text.split("<h3>Execution errors</h3>")
    assert "20 of 30 failing samples shown: 30 with an errored execution first" in failing
    assert errors.count("<code>s") == efhtml.MAX_FAILURES
    assert "… and 10 more." in errors


def test_pretty_printing_uses_the_text_view(run: ef.Run) -> None:
    from IPython.lib.pretty import pretty

    assert pretty(run) == efhtml.run_text(run)
    assert pretty(run.report()) == efhtml.report_text(run.report())


def test_empty_cohorts_and_no_failures_render() -> None:
    ds = ef.Dataset.from_records([{"id": "a", "input": {}, "expected_output": "x"}], name="e")
    run = ef.evaluate(ds, outputs={"a": "x"}, metrics=["exact-match"])
    text = run._repr_html_()
    parse(text)
    assert "None." in text


# --- the self-contained page -------------------------------------------------------------


def test_page_without_charts_snapshot(run: ef.Run) -> None:
    check_snapshot("page.html", run.report().to_html(charts="none"))


def test_page_with_vega_charts_is_self_contained(run: ef.Run) -> None:
    page = run.report().to_html(charts="vega")
    assert page.startswith("<!DOCTYPE html>")
    assert "default-src 'none'" in page  # the CSP forbids every fetch
    assert page.count("vegaEmbed('#ef-chart-") == 2  # histograms and the cohort heatmap
    assert not re.search(r"""<(script|link|img|iframe)[^>]+(src|href)=["']?https?:""", page)
    assert "window.vegaEmbed" in page


def test_page_with_svg_charts_needs_no_chart_script(run: ef.Run) -> None:
    page = run.report().to_html(charts="svg")
    chart_part = page[: page.index('<section class="ef-report ef-x"')]
    assert "<script" not in chart_part  # only the sample explorer has a script
    assert "vegaEmbed" not in page
    assert page.count('<div class="ef-chart" id="ef-chart-') == 2
    assert page.count("<svg") >= 5  # three inline histograms, two rendered charts


# --- charts ------------------------------------------------------------------------------


def test_histogram_chart_has_one_panel_per_metric_and_preaggregated_data(run: ef.Run) -> None:
    spec = run.plot.histograms(buckets=5).to_dict()
    assert spec["facet"]["field"] == "metric"
    assert spec["facet"]["sort"] == run.metric_ids
    (values,) = spec["datasets"].values()
    assert len(values) == 5 * len(run.metric_ids)
    scored = run.scores.filter(pl.col("score").is_not_null()).height
    assert sum(v["count"] for v in values) == scored


def test_histograms_from_a_report_match_the_run(run: ef.Run) -> None:
    from_run = plot.histograms(run).to_dict()["datasets"]
    from_report = plot.histograms(json.loads(run.report().to_json())).to_dict()["datasets"]
    assert list(from_run.values()) == list(from_report.values())


def test_heatmap_has_a_cell_per_cohort_and_metric(run: ef.Run) -> None:
    spec = run.plot.heatmap().to_dict()
    (values,) = spec["datasets"].values()
    assert len(values) == run.cohorts.height
    assert spec["layer"][0]["mark"]["type"] == "rect"


def test_trend_draws_one_point_per_run_and_rejects_unknown_metrics() -> None:
    runs = pl.DataFrame(
        {
            "run_id": ["a", "b", "a", "b"],
            "seq": [1, 2, 1, 2],
            "metric": ["m", "m", "n", "n"],
            "mean": [0.5, 0.75, 0.1, 0.2],
        }
    )
    spec = plot.trend(runs, metric="m", x="seq").to_dict()
    (values,) = spec["datasets"].values()
    assert [v["mean"] for v in values] == [0.5, 0.75]
    with pytest.raises(ef.MetricError, match="stored metrics: m, n"):
        plot.trend(runs, metric="rouge-l")


def test_delta_bins_keep_signs_apart_and_count_every_row() -> None:
    paired = pl.DataFrame({"metric": ["m"] * 6, "delta": [-0.55, -0.05, 0.0, 0.0, 0.05, None]})
    bins = plot.delta_bins(paired)
    assert bins.select("direction", "lo", "hi", "rows").rows() == [
        ("regressed", -0.6, -0.5, 1),
        ("regressed", -0.1, 0.0, 1),
        ("unchanged", -0.02, 0.02, 2),
        ("improved", 0.0, 0.1, 1),
    ]
    assert plot.deltas(paired).to_dict()["facet"]["field"] == "metric"


def test_charts_export_to_svg_and_png_offline(run: ef.Run) -> None:
    chart = run.plot.histograms()
    assert plot.to_svg(chart).lstrip().startswith("<svg")
    assert plot.to_png(chart, scale=1).startswith(b"\x89PNG")


def test_missing_viz_extra_gives_an_install_hint(
    run: ef.Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    import builtins

    real = builtins.__import__

    def fake(name: str, *args: object, **kwargs: object) -> object:
        if name.split(".", maxsplit=1)[0] in {"altair", "vl_convert"}:
            raise ImportError(name)
        return real(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(
        ModuleNotFoundError, match=r"pip install '\.\[viz\]' in a clone of evalframe"
    ):
        run.plot.histograms()
    page = run.report().to_html()  # auto falls back to tables and inline histograms
    assert "vegaEmbed" not in page
    assert '<svg class="ef-hist"' in page


# --- the command -------------------------------------------------------------------------


def _report_json(tmp_path: Path) -> Path:
    path = tmp_path / "report.json"
    path.write_text(fixed_run().report().to_json(), encoding="utf-8")
    return path


def test_report_command_writes_html_from_a_report_file(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    result = CliRunner().invoke(
        cli, ["report", str(_report_json(tmp_path)), "--charts", "none", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert out.read_text(encoding="utf-8") == fixed_run().report().to_html(charts="none")


def test_report_command_renders_markdown_and_json(tmp_path: Path) -> None:
    src = _report_json(tmp_path)
    md = CliRunner().invoke(cli, ["report", str(src), "--format", "markdown"])
    assert md.exit_code == 0
    assert md.output == fixed_run().report().to_markdown()
    js = CliRunner().invoke(cli, ["report", str(src), "--format", "json"])
    assert json.loads(js.output) == json.loads(src.read_text(encoding="utf-8"))


def test_report_command_resolves_stored_runs(tmp_path: Path) -> None:
    from evalframe.store import Store

    db = tmp_path / "runs.duckdb"
    with Store(db) as store:
        first = ef.evaluate(EXAMPLES / "support.yaml", outputs=EXAMPLES / "support.outputs.json",
                            metrics=["contains"], name="first")  # fmt: skip
        store.save(first)
        second = dataclasses.replace(first, run_id="second-run", name="second")
        store.save(second)
    runner = CliRunner()
    latest = runner.invoke(
        cli, ["report", "latest", "--format", "json"], env={"EVALFRAME_STORE": str(db)}
    )
    assert latest.exit_code == 0, latest.output
    assert json.loads(latest.output)["run_id"] == "second-run"
    # written from the stored frames, it is the stored run's report byte for byte
    with Store(db) as store:
        assert latest.stdout_bytes == store.load("second-run").report().to_json_bytes()
    target = tmp_path / "second.json"
    wrote = runner.invoke(
        cli, ["report", "latest", "--format", "json", "--out", str(target), "--store", str(db)]
    )
    assert wrote.exit_code == 0, wrote.output
    assert target.read_bytes() == latest.stdout_bytes
    by_name = runner.invoke(cli, ["report", "first", "--store", str(db), "--charts", "none"])
    assert by_name.exit_code == 0, by_name.output
    assert "evalframe run — first" in by_name.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["report", "latest"], "pass --store PATH"),
        (["report", "missing.json"], "No such report file"),
        (["report", "latest", "--store", "nope.duckdb"], "No such store file"),
    ],
)
def test_report_command_usage_errors_exit_2(
    args: list[str], message: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, args, env={"EVALFRAME_STORE": ""})
    assert result.exit_code == 2
    assert message in result.output


def test_report_command_rejects_a_json_file_that_is_not_a_report(tmp_path: Path) -> None:
    bogus = tmp_path / "x.json"
    bogus.write_text('{"hello": 1}', encoding="utf-8")
    result = CliRunner().invoke(cli, ["report", str(bogus)])
    assert result.exit_code == 2
    assert "is not a report" in result.output


# --- comparisons and stores --------------------------------------------------------------


def _comparison() -> Any:
    from evalframe.core._compare import compare

    outputs = json.loads((EXAMPLES / "support.outputs.json").read_text(encoding="utf-8"))
    before_outputs = outputs["outputs"]
    after_outputs = {**before_outputs, "refund-window": "a month", "warranty": "2 years"}
    metrics = ["contains", "rouge-l"]
    before = ef.evaluate(EXAMPLES / "support.yaml", outputs=before_outputs, metrics=metrics,
                         run_id="before-run")  # fmt: skip
    after = ef.evaluate(EXAMPLES / "support.yaml", outputs=after_outputs, metrics=metrics,
                        run_id="after-run")  # fmt: skip
    return compare(before, after, label="baseline")


def test_comparison_html_snapshot() -> None:
    comparison = _comparison()
    text = comparison._repr_html_()
    parse(text)
    check_snapshot("comparison.html", text)
    assert "refund-window" in text  # the regressed row is listed


def test_comparison_text_names_runs_and_deltas() -> None:
    text = efhtml.comparison_text(_comparison())
    assert text.startswith("comparison before-run (baseline) -> after-run")
    assert "2 regressed pairs · rows: 1 regressed, 1 improved" in text


def test_paired_scores_and_the_delta_chart() -> None:
    comparison = _comparison()
    paired = plot.paired_scores(comparison)
    changed = paired.filter(pl.col("delta") != 0).select("sample_id", "metric", "delta")
    assert changed.get_column("sample_id").unique().sort().to_list() == [
        "refund-window",
        "warranty",
    ]
    spec = comparison.plot.deltas().to_dict()
    (values,) = spec["datasets"].values()
    assert sum(v["rows"] for v in values) == paired.height


def test_store_listing_and_trend(tmp_path: Path) -> None:
    from IPython.lib.pretty import pretty

    from evalframe.store import Store

    with Store(tmp_path / "runs.duckdb") as store:
        for name, answer in [("v1", "30 days"), ("v2", "about a month")]:
            run = ef.evaluate(
                EXAMPLES / "support.yaml",
                outputs={**_support_outputs(), "refund-window": answer},
                metrics=["contains", "rouge-l"],
                name=name,
            )
            store.save(run)
        text = store._repr_html_()
        parse(text)
        assert "Stored runs in" in text
        assert text.index(">v2<") < text.index(">v1<")  # newest first
        assert "v1" in pretty(store)
        spec = store.plot.trend(metric="contains").to_dict()
        (values,) = spec["datasets"].values()
        assert [v["name"] for v in values] == ["v1", "v2"]
        assert [round(v["mean"], 4) for v in values] == [1.0, round(11 / 12, 4)]
        assert spec["layer"][0]["encoding"]["x"]["field"] == "seq"
        assert store.plot.trend(value="pass_rate", last=1).to_dict()["datasets"]


def _support_outputs() -> dict[str, str]:
    doc = json.loads((EXAMPLES / "support.outputs.json").read_text(encoding="utf-8"))
    outputs: dict[str, str] = doc["outputs"]
    return outputs
