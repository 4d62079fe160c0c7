"""The HTML report's sample explorer and the comparison page: their data and structure.

What the browser does with them (search, sort, filter, the detail view, diffs, no network)
is tested in tests/test_browser.py; here, the data the page ships, what it leaves out, and
the comparison read back from report files.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from click.testing import CliRunner
from snapshot import check_snapshot
from test_html import fixed_run, parse

import evalframe as ef
from evalframe.cli import cli
from evalframe.core._compare import compare
from evalframe.views._html import page
from evalframe.views._html._compare import comparison_page
from evalframe.views._html._diff import word_diff
from evalframe.views._html._explorer import explorer_data, explorer_html
from evalframe.views._html._report_run import run_from_report

EXAMPLES = Path(ef.__file__).parent / "examples"


def _data_of(html: str) -> dict[str, Any]:
    found = re.search(r'<script type="application/json" id="ef-x-data">(.*?)</script>', html)
    assert found, "no explorer data"
    parsed: dict[str, Any] = json.loads(found.group(1))
    return parsed


def _cited_run() -> ef.Run:
    """A run whose metadata holds citation evidence, with one errored execution."""
    ds = ef.Dataset.from_records(
        [
            {"id": "a", "input": {"q": "capital of France?"}, "expected_output": "Paris [1]",
             "metadata": {"citation_evidence": ["SECRET-EVIDENCE-SPAN"], "tags": ["geo"]}},
            {"id": "b", "input": {"q": "2+2?"}, "expected_output": "4"},
        ],
        name="cited",
    )  # fmt: skip
    return ef.evaluate(
        ds,
        outputs={"a": "Paris [1]", "b": "five"},
        metrics=["exact-match", "citation-groundedness", "json-valid"],
        run_id="cited-run",
    )


# --- the data ----------------------------------------------------------------------------


def test_explorer_data_from_a_run_and_from_its_report_agree(run: ef.Run) -> None:
    from_run = explorer_data(run.report(), run=run)
    from_doc = explorer_data(json.loads(run.report().to_json()))
    for key in ("id", "rep", "tags", "tag_names", "actual", "metrics", "thresholds", "score"):
        assert from_run[key] == from_doc[key], key
    # A report file holds no inputs or expected outputs; the run does.
    assert from_doc["input"] == [None] * 8
    assert json.loads(from_run["input"][0]) == {"question": "Refund window?"}
    assert from_run["expected"][:4] == ["30 days", "3-5 days", '["a"]', "x & y"]


def test_explorer_scores_match_the_scores_frame(run: ef.Run) -> None:
    """Oracle: each (execution, metric) score read straight from the long scores table."""
    data = explorer_data(run.report(), run=run)
    for i, (sid, rep) in enumerate(zip(data["id"], data["rep"], strict=True)):
        for name in data["metrics"]:
            row = run.scores.filter(
                (pl.col("sample_id") == sid) & (pl.col("repetition") == rep)
                & (pl.col("metric") == name)
            )  # fmt: skip
            expected = row.get_column("score").item() if row.height else None
            # Six places are shipped: the page shows four.
            assert data["score"][name][i] == (None if expected is None else round(expected, 6))
            detail = data["details"][name][i]
            if detail is not None:
                # The page puts back the row's texts that details name instead of repeating.
                refs = {"\x01expected": data["expected"][i], "\x01actual": data["actual"][i]}
                shipped = json.loads(data["detail_texts"][detail])
                shipped = {k: refs.get(v, v) if isinstance(v, str) else v
                           for k, v in shipped.items() if v is not None}  # fmt: skip
                original = json.loads(row.get_column("details").item())
                assert shipped == {k: v for k, v in original.items() if v is not None}


def test_details_name_the_outputs_instead_of_repeating_them(run: ef.Run) -> None:
    data = explorer_data(run.report(), run=run)
    exact = [data["detail_texts"][d] for d in data["details"]["exact-match"] if d is not None]
    assert len(set(exact)) <= 2  # match true or false: the texts themselves are not shipped
    assert all("Returns within" not in text for text in data["detail_texts"])


def test_errors_reach_the_explorer(run: ef.Run) -> None:
    cited = _cited_run()
    data = explorer_data(cited.report(), run=cited)
    failures = cited.failures
    assert failures.height >= 1
    for sid, metric, error in failures.select("sample_id", "metric", "error").iter_rows():
        i = data["id"].index(sid)
        assert data["errors"][data["error"][metric][i]] == error
        assert data["score"][metric][i] is None


def test_evidence_stays_out_unless_asked_for() -> None:
    cited = _cited_run()
    html = page(cited.report(), charts="none", run=cited)
    assert "SECRET-EVIDENCE-SPAN" not in html
    assert "metadata" not in _data_of(html)
    with_evidence = page(cited.report(), charts="none", run=cited, include_evidence=True)
    data = _data_of(with_evidence)
    assert json.loads(data["metadata"][0])["citation_evidence"] == ["SECRET-EVIDENCE-SPAN"]


def test_context_text_ships_only_with_evidence() -> None:
    base = _cited_run()
    contexts = pl.Series("contexts", [["ctx one SECRET", "ctx two"], ["ctx three"]])
    run = dataclasses.replace(base, frame=base.frame.with_columns(contexts))
    data = explorer_data(run.report(), run=run)
    assert data["context_counts"] == [2, 1]
    assert "contexts" not in data
    assert "SECRET" not in json.dumps(data)
    shown = explorer_data(run.report(), run=run, include_evidence=True)
    assert [json.loads(c) for c in shown["contexts"]] == [["ctx one SECRET", "ctx two"],
                                                          ["ctx three"]]  # fmt: skip


def test_contexts_of_a_report_written_with_evidence(run: ef.Run) -> None:
    """A report written with --include-evidence lists contexts in its evidence section."""
    doc = json.loads(run.report().to_json())
    doc["evidence"] = [{"id": "q2", "repetition": 1, "contexts": ["shipping SECRET text"]}]
    hidden = explorer_data(doc)
    at = list(zip(hidden["id"], hidden["rep"], strict=True)).index(("q2", 1))
    assert hidden["context_counts"][at] == 1
    assert "SECRET" not in json.dumps(hidden)
    shown = explorer_data(doc, include_evidence=True)
    assert json.loads(shown["contexts"][at]) == ["shipping SECRET text"]
    assert shown["contexts"][0] is None


def test_a_trajectory_in_the_report_is_carried_as_json(run: ef.Run) -> None:
    doc = json.loads(run.report().to_json())
    doc["samples"][0]["trajectory"] = {"steps": [{"tool": "search", "args": {"q": "x"}}]}
    for data in (explorer_data(doc), explorer_data(doc, run=run)):
        assert json.loads(data["trajectory"][0]) == doc["samples"][0]["trajectory"]
        assert data["trajectory"][1] is None


def test_the_limit_keeps_failing_executions_first(run: ef.Run) -> None:
    full = explorer_data(run.report(), run=run)
    bad = [
        i
        for i in range(full["shown"])
        if any(
            full["error"][m][i] is not None
            or (full["score"][m][i] is not None and full["score"][m][i] < t)
            for m, t in zip(full["metrics"], full["thresholds"], strict=True)
        )
    ]
    capped = explorer_data(run.report(), run=run, limit=len(bad))
    assert (capped["total"], capped["shown"]) == (8, len(bad))
    kept = list(zip(capped["id"], capped["rep"], strict=True))
    assert kept == [(full["id"][i], full["rep"][i]) for i in bad]  # run order kept
    assert "of 8 executions" in explorer_html(capped)


def test_user_text_cannot_close_the_data_script() -> None:
    ds = ef.Dataset.from_records(
        [{"id": "x</script><script>alert(1)</script>", "input": {"q": "<!-- hi"},
          "expected_output": "</script>"}], name="xss")  # fmt: skip
    run = ef.evaluate(ds, outputs={ds.get_column("sample_id")[0]: "</script>"},
                      metrics=["exact-match"])  # fmt: skip
    html = page(run.report(), charts="none", run=run)
    data_part = html[
        html.index('id="ef-x-data">') : html.index("</script>", html.index("ef-x-data"))
    ]
    assert "<" not in data_part[len('id="ef-x-data">') :]
    assert _data_of(html)["id"] == ["x</script><script>alert(1)</script>"]


def test_page_is_balanced_with_the_explorer(run: ef.Run) -> None:
    parsed = parse(page(run.report(), charts="none", run=run))
    assert parsed.tags.count("section") == 1  # one explorer, every element closed


def test_explorer_section_snapshot(run: ef.Run) -> None:
    html = explorer_html(explorer_data(run.report(), run=run))
    check_snapshot("explorer.html", html)


# --- word diff ---------------------------------------------------------------------------


def test_word_diff_marks_only_changed_words() -> None:
    left, right = word_diff("Refunds within 30 days.", "Refunds within a month.")
    assert left == "Refunds within <del>30</del> <del>days</del>."
    assert right == "Refunds within <ins>a</ins> <ins>month</ins>."
    assert word_diff("<b>", "<b>") == ("&lt;b&gt;", "&lt;b&gt;")
    assert word_diff(None, "new") == ("", "<ins>new</ins>")


# --- the comparison page -----------------------------------------------------------------


def _two_runs() -> tuple[ef.Run, ef.Run]:
    outputs = json.loads((EXAMPLES / "support.outputs.json").read_text(encoding="utf-8"))
    before_outputs = outputs["outputs"]
    after_outputs = {**before_outputs, "refund-window": "a month", "warranty": "2 years"}
    metrics = ["contains", "rouge-l"]
    before = ef.evaluate(EXAMPLES / "support.yaml", outputs=before_outputs, metrics=metrics,
                         run_id="before-run")  # fmt: skip
    after = ef.evaluate(EXAMPLES / "support.yaml", outputs=after_outputs, metrics=metrics,
                        run_id="after-run")  # fmt: skip
    return before, after


def test_comparison_page_shows_regressed_and_improved_rows_side_by_side() -> None:
    before, after = _two_runs()
    html = comparison_page(compare(before, after, label="baseline"))
    assert html.startswith("<!DOCTYPE html>")
    assert "default-src 'none'" in html
    parse(html)
    cases = re.findall(r'data-status="(\w+)" data-sample="([^"]+)"', html)
    assert cases == [("regressed", "refund-window"), ("improved", "warranty")]
    assert '<pre class="ef-cmp-before"><del>30</del> <del>days</del></pre>' in html
    assert '<pre class="ef-cmp-after"><ins>a</ins> <ins>month</ins></pre>' in html


def test_a_report_file_rebuilds_a_run_that_compares_the_same() -> None:
    """Oracle: comparing runs rebuilt from their report files = comparing the runs."""
    before, after = _two_runs()
    direct = compare(before, after, label="b")
    rebuilt = compare(
        run_from_report(json.loads(before.report().to_json())),
        run_from_report(json.loads(after.report().to_json())),
        label="b",
    )
    assert rebuilt.counts == direct.counts
    assert rebuilt.metrics.equals(direct.metrics)
    assert rebuilt.regressions().equals(direct.regressions())
    assert rebuilt.macro_f1 == direct.macro_f1


def test_a_report_without_samples_cannot_be_compared() -> None:
    before, _ = _two_runs()
    doc = json.loads(before.report(samples=False).to_json())
    with pytest.raises(ef.EvalframeError, match="lists no samples"):
        run_from_report(doc, source="old.json")


def test_report_compare_command_from_files_and_from_the_store(tmp_path: Path) -> None:
    from evalframe.store import Store

    before, after = _two_runs()
    a, b = tmp_path / "after.json", tmp_path / "before.json"
    a.write_text(after.report().to_json(), encoding="utf-8")
    b.write_text(before.report().to_json(), encoding="utf-8")
    db = tmp_path / "runs.duckdb"
    with Store(db) as store:
        store.save(before)
        store.save(after)
    runner = CliRunner()
    from_files = runner.invoke(cli, ["report", str(a), "--compare", str(b), "--format", "html"])
    assert from_files.exit_code == 0, from_files.output
    stored = runner.invoke(
        cli, ["report", "latest", "--compare", "previous", "--store", str(db), "--format", "html"]
    )
    assert stored.exit_code == 0, stored.output
    for html in (from_files.output, stored.output):
        assert re.findall(r'data-sample="([^"]+)"', html) == ["refund-window", "warranty"]
    md = runner.invoke(cli, ["report", str(a), "--compare", str(b), "--format", "markdown"])
    assert md.exit_code == 0
    assert md.output.startswith("# Comparison")
    js = runner.invoke(cli, ["report", str(a), "--compare", str(b), "--format", "json"])
    assert json.loads(js.output)["schema_version"] == "evalframe.comparison.v1"


def test_report_command_passes_evidence_and_max_rows(tmp_path: Path) -> None:
    from evalframe.store import Store

    cited = _cited_run()
    db = tmp_path / "runs.duckdb"
    with Store(db) as store:
        store.save(cited)
    runner = CliRunner()
    args = ["report", "cited-run", "--store", str(db), "--charts", "none"]
    plain = runner.invoke(cli, args)
    assert plain.exit_code == 0, plain.output
    assert "SECRET-EVIDENCE-SPAN" not in plain.output
    assert _data_of(plain.output)["input"][0] is not None  # a stored run has its inputs
    shown = runner.invoke(cli, [*args, "--include-evidence", "--max-rows", "1"])
    assert "SECRET-EVIDENCE-SPAN" in shown.output
    assert "1 of 2 failing samples shown" in shown.output


@pytest.fixture(scope="module")
def run() -> ef.Run:
    return fixed_run()


def test_the_failing_samples_section_is_the_same_with_the_run_at_hand(run: ef.Run) -> None:
    """With the run, the section is read from its frames; without, from the document."""

    def section(html: str) -> str:
        return html[html.index("<h3>Failing samples</h3>") : html.index("<h3>Execution errors")]

    doc = run.report()
    assert section(page(doc, charts="none", run=run)) == section(page(doc, charts="none"))
