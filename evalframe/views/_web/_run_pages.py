"""The pages about runs: the runs listing, one run (summary and execution explorer), one
execution, and the labelling queue."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from evalframe.views._format import f4
from evalframe.views._html._parts import bar, table, td
from evalframe.views._web._filters import STATUSES, ExecutionQuery, RunQuery
from evalframe.views._web._layout import (
    chips,
    escape,
    json_script,
    link,
    option,
    pager,
    run_url,
    status_badges,
    url,
    when,
)

__all__ = ["execution_page", "label_page", "run_page", "runs_page"]

_DIFF_CELLS: Final = 4_000_000
"""Token pairs past which two outputs are shown without a word diff (as the report's)."""


def _options(values: Sequence[str], chosen: str | None, blank: str) -> str:
    return option("", blank) + "".join(option(v, v, v == chosen) for v in values)


def _field(name: str, label: str, value: str | None, *, kind: str = "text", hint: str = "") -> str:
    return (
        f'<label>{escape(label)}<input type="{kind}" name="{name}" id="ef-f-{name}" '
        f'value="{escape(value or "")}" placeholder="{escape(hint)}"></label>'
    )


# --- runs ----------------------------------------------------------------------------------


def runs_page(
    q: RunQuery, total: int, rows: list[dict[str, Any]], datasets: list[tuple[str, int]]
) -> str:
    """Every run, newest first, filtered; select 2 to 10 to compare them."""
    params = {
        "dataset": q.dataset,
        "name": q.name,
        "label": q.label,
        "since": q.since.date().isoformat() if q.since else None,
        "until": None,
    }
    filters = (
        '<form class="ef-filters" method="get" action="/" data-autosubmit id="ef-run-filters">'
        f'<label>dataset<select name="dataset" id="ef-f-dataset">'
        f"{_options([d for d, _ in datasets], q.dataset, 'every dataset')}</select></label>"
        + _field("name", "name contains", q.name)
        + _field("label", "label", q.label, hint="KEY=VALUE")
        + _field("since", "since", params["since"], kind="date")
        + _field("until", "until (inclusive)", None, kind="date")
        + '<button type="submit">Filter</button></form>'
    )
    body_rows = []
    for r in rows:  # one page
        href, head = run_url(r["run_id"]), r["headline"]
        flags = " ef-incomplete" if head["incomplete"] else ""
        if head["safety"] and not head["safety"]["passed"]:
            flags += " ef-unsafe"
        body_rows.append(
            f'<tr class="ef-click{flags}" data-href="{href}">'
            + td(
                f'<input type="checkbox" name="pick" value="{escape(r["run_id"])}" '
                f'form="ef-compare" aria-label="compare {escape(r["run_id"])}">'
            )
            + td(link(href, r["name"]), cls="ef-text")
            + td(status_badges(r["status"]), cls="ef-wrap ef-status-cell")
            + td(chips(r["labels"]), cls="ef-wrap")
            + td(link(url("/", {"dataset": r["dataset"]}), r["dataset"]), cls="ef-text")
            + td(escape(", ".join(r["metrics"] or [])), cls="ef-wrap")
            + td(bar(head["macro_f1"]) + f4(head["macro_f1"]))
            + td(
                f"{head['errored_executions']:,} of {head['executions']:,}",
                cls="ef-fail" if head["errored_executions"] else None,
            )
            + td(f"{float(r['duration_seconds'] or 0.0):.2f} s")
            + td(when(r["created_at"]))
            + td(f"<code>{escape(r['run_id'])}</code>", cls="ef-text")
            + "</tr>"
        )
    columns = "".join(
        f"<th>{h}</th>"
        for h in (
            "", "name", "status", "labels", "dataset", "metrics", "macro-F1",
            "errored", "duration", "created (UTC)", "run id",
        )
    )  # fmt: skip
    listing = (
        f'<div class="ef-table"><table class="ef-rows" id="ef-runs"><thead><tr>{columns}</tr>'
        f"</thead><tbody>{''.join(body_rows)}</tbody></table></div>"
    )
    compare = (
        '<form id="ef-compare" method="get" action="/compare" class="ef-filters">'
        '<button type="submit" class="ef-primary" id="ef-compare-go">Compare selected</button>'
        '<span class="ef-muted" id="ef-compare-n"></span>'
        '<span class="ef-muted">runs of one dataset, 2 to 10; the oldest is the reference'
        "</span></form>"
    )
    return (
        f'<h2>Runs <span class="ef-muted">({total:,})</span></h2>{filters}{compare}'
        + pager("/", params, total, q.page.limit, q.page.offset)
        + listing
        + pager("/", params, total, q.page.limit, q.page.offset)
    )


# --- one run -------------------------------------------------------------------------------


def _doc(info: Mapping[str, Any], hist: Mapping[str, Any]) -> dict[str, Any]:
    """The report-shaped parts the report's own tables and charts read."""
    cohorts: dict[str, dict[str, Any]] = {}
    for c in info["cohorts"]:  # a few per metric
        entry = cohorts.setdefault(
            c["label"],
            {
                "name": c["cohort"],
                "label": c["label"],
                "is_untagged": c["is_untagged"],
                "sample_count": c["sample_count"],
                "metrics": {},
            },
        )
        entry["metrics"][c["metric"]] = {
            "mean": c["mean"],
            "pass_rate": c["pass_rate_scored"],
            "pass_rate_attempted": c["pass_rate"],
            "n_scored": c["n_scored"],
            "n_errors": c["n_errors"],
        }
    return {
        "metrics": {
            m["metric"]: {
                "mean": m["mean"],
                "p50": m["p50"],
                "p95": m["p95"],
                # As the report names them: over scored executions, and over attempted ones
                # (the store's pass_rate, an errored execution not passing).
                "pass_rate": m["pass_rate_scored"],
                "pass_rate_attempted": m["pass_rate"],
                "n": m["n"],
                "n_scored": m["n_scored"] or 0,
                "n_errors": m["n_errors"] or 0,
                "threshold": m["threshold"],
                "family": m["family"],
                "dimension": m["dimension"],
            }
            for m in info["metrics"]
        },
        "metric_distributions": dict(hist),
        "cohorts": list(cohorts.values()),
        "headline": info["headline"],
    }


def _aggregates(doc: Mapping[str, Any]) -> str:
    """The quality metrics' aggregates, then the safety metrics' with their verdict (kept out
    of macro-F1), as the report shows them."""
    from evalframe.views._html._run import _metrics_table, _safety_block

    names = doc["headline"]["quality_metrics"]
    quality = (
        _metrics_table(doc, names)
        if names
        else '<p class="ef-muted">No quality metric: every metric of this run is a safety '
        "metric.</p>"
    )
    return f'<div id="ef-metrics">{quality}</div>' + "".join(_safety_block(doc))


def _charts(doc: Mapping[str, Any]) -> str:
    from evalframe.views._web._assets import has_vega

    if not has_vega():
        return ""
    from evalframe.views._html._page import _chart_specs

    out = []
    for i, (label, spec) in enumerate(_chart_specs(doc)):
        target = f"ef-chart-{i}"
        out.append(
            f'<h3>{escape(label)}</h3><div class="ef-chart" id="{target}"></div>'
            + json_script(f"{target}-spec", spec).replace(
                '<script type="application/json"',
                f'<script type="application/json" class="ef-vega" data-target="{target}"',
            )
        )
    return "".join(out)


def _header(info: Mapping[str, Any]) -> str:
    """The run's ``INCOMPLETE`` and ``SAFETY FAILED`` lines first (as the report's), then
    its name and figures: macro-F1 as the report gives it, beside its value over scored
    executions where that differs, and the safety verdict."""
    from evalframe.views._html._run import _macro_kpi, _status

    rid, head = info["run_id"], info["headline"]
    doc = {"headline": head}
    facts = [
        _macro_kpi(doc),
        f"<span><b>{int(info['n_samples'] or 0):,}</b> samples</span>",
        f"<span><b>{int(info['n_executions'] or 0):,}</b> executions</span>",
        f"<span><b>{head['errored_executions']:,}</b> errored</span>",
        f"<span><b>{int(info['n_failures'] or 0):,}</b> failures</span>",
        f"<span><b>{float(info['duration_seconds'] or 0.0):.2f}</b> s</span>",
        f"<span>created {when(info['created_at'])} UTC</span>",
        f"<span>run <code>{escape(rid)}</code></span>",
    ]
    if info["source_run_id"]:
        facts.append(
            "<span>rescored from "
            + link(run_url(info["source_run_id"]), info["source_run_id"])
            + "</span>"
        )
    if info["git_branch"] or info["git_commit"]:
        facts.append(
            f"<span>git <code>{escape(info['git_branch'] or '')} "
            f"{escape((info['git_commit'] or '')[:12])}</code></span>"
        )
    links = [
        link(url("/trends", {"dataset": info["dataset"]}), "trend of this dataset"),
        link(url("/", {"dataset": info["dataset"]}), "runs of this dataset"),
        link(run_url(rid, "/label"), f"label rows ({info['human_labels']} labelled)"),
        link(url(f"/api/v1/runs/{_quoted(rid)}"), "report JSON"),
    ]
    if head["safety"]:
        verdict = "passed" if head["safety"]["passed"] else "FAILED"
        facts.insert(1, f"<span>safety <b>{verdict}</b></span>")
    base = "".join(f'<span class="ef-chip">baseline {escape(b)}</span>' for b in info["baselines"])
    return (
        f'<div id="ef-run-status">{_status(doc)}</div>'
        f"<h2>{escape(info['name'])} "
        f'<span class="ef-muted">on {link(url("/", {"dataset": info["dataset"]}), info["dataset"])}'
        f"</span></h2>"
        f'<div class="ef-kpis">{"".join(facts)}</div>'
        f"<div>{chips(info['labels'])}{base}</div>"
        f"<p>{' · '.join(links)}</p>"
    )


def _quoted(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="")


def _score_cell(cell: Mapping[str, Any] | None) -> str:
    if cell is None:
        return td("")
    if cell["error"] is not None:
        return td('<span class="ef-err">error</span>', title=cell["error"])
    cls = "ef-fail" if cell["passed"] is False else None
    return td(f4(cell["score"]), cls=cls)


def _status(status: str) -> str:
    cls = {"fail": "ef-fail", "error": "ef-err", "pass": "ef-pass"}.get(status, "ef-muted")
    return f'<span class="{cls}">{escape(status)}</span>'


def explorer(
    info: Mapping[str, Any],
    q: ExecutionQuery,
    total: int,
    rows: list[dict[str, Any]],
    cohorts: list[str],
) -> str:
    """The execution explorer: filters, one page of executions, the pager."""
    rid = info["run_id"]
    metrics = [m["metric"] for m in info["metrics"]]
    path = f"/runs/{_quoted(rid)}"
    params = {"q": q.q, "metric": q.metric, "cohort": q.cohort, "status": q.status}
    status_opts = _options(list(STATUSES), q.status, "pass, fail or error")
    form = (
        f'<form class="ef-filters" method="get" action="{escape(path)}" data-autosubmit '
        'id="ef-x-filters">'
        f'<label>search<input type="search" name="q" id="ef-x-search" value="{escape(q.q or "")}"'
        ' placeholder="id, input, outputs"></label>'
        f'<label>metric<select name="metric" id="ef-x-metric">'
        f"{_options(metrics, q.metric, 'every metric')}</select></label>"
        f'<label>cohort<select name="cohort" id="ef-x-cohort">'
        f"{_options(cohorts, q.cohort, 'every cohort')}</select></label>"
        f'<label>status<select name="status" id="ef-x-status">{status_opts}</select></label>'
        '<button type="submit">Apply</button>'
        + (f" {link(url(path), 'clear')}" if q.filtered else "")
        + "</form>"
    )
    head = "".join(
        f"<th>{escape(h)}</th>"
        for h in ("sample", "rep", "status", *metrics, "tags", "actual output")
    )
    body = []
    for row in rows:  # one page
        href = run_url(rid, "/sample", {"id": row["sample_id"], "rep": row["repetition"]})
        actual = row["actual_output"]
        shown = (
            f'<span class="ef-err">{escape(row["system_error"])}</span>'
            if actual is None and row["system_error"]
            else escape(actual or "") + ("…" if row["truncated"] else "")
        )
        body.append(
            f'<tr class="ef-click ef-x-row" data-href="{href}" data-sample="'
            f'{escape(row["sample_id"])}">'
            + td(link(href, row["sample_id"]), cls="ef-text")
            + td(escape(row["repetition"]))
            + td(_status(row["status"]))
            + "".join(_score_cell(row["scores"].get(m)) for m in metrics)
            + td(chips(row["tags"]), cls="ef-wrap")
            + td(shown, cls="ef-wrap")
            + "</tr>"
        )
    listing = (
        f'<div class="ef-table"><table class="ef-rows" id="ef-x-table"><thead><tr>{head}</tr>'
        f"</thead><tbody>{''.join(body)}</tbody></table></div>"
    )
    return (
        '<h3 id="explorer">Executions</h3>'
        + form
        + pager(path, params, total, q.page.limit, q.page.offset)
        + listing
        + pager(path, params, total, q.page.limit, q.page.offset)
    )


def run_charts(info: Mapping[str, Any], hist: Mapping[str, Any]) -> str:
    """The parts of a run page that count every score (the aggregates table with its
    histograms, and the charts): fetched by the page once it is shown, since on a large run
    they take longer than everything else on it."""
    doc = _doc(info, hist)
    return _aggregates(doc) + _charts(doc)


def run_page(info: Mapping[str, Any], failures: list[dict[str, Any]], explorer_html: str) -> str:
    """A run: its summary, aggregates, cohorts, errors and the explorer; the histograms and
    charts arrive from ``/runs/RUN/charts`` (``run_charts``)."""
    from evalframe.views._html._run import _cohort_table

    doc = _doc(info, {})
    charts = run_url(info["run_id"], "/charts")
    parts = [
        _header(info),
        "<h3>Per-metric aggregates</h3>",
        f'<div id="ef-run-charts" data-src="{charts}">{_aggregates(doc)}'
        '<p class="ef-muted" id="ef-charts-note">Histograms and charts are on their way '
        f"({link(charts, 'open them')}).</p></div>",
    ]
    if doc["cohorts"]:
        parts += ["<h3>Cohorts by tag (pass-rate)</h3>", _cohort_table(doc)]
    parts.append(explorer_html)
    if failures:
        rows = [
            [
                td(
                    link(
                        run_url(
                            info["run_id"],
                            "/sample",
                            {"id": f["sample_id"], "rep": f["repetition"]},
                        ),
                        f["sample_id"],
                    )
                ),
                td(escape(f["repetition"])),
                td(f"<code>{escape(f['metric'])}</code>", cls="ef-text"),
                td(escape(f["error"]), cls="ef-wrap"),
            ]
            for f in failures
        ]
        more = int(info["n_failures"] or 0) - len(rows)
        parts += [
            "<h3>Execution errors</h3>",
            table(["sample", "repetition", "metric", "error"], rows),
            f'<p class="ef-muted">… and {more:,} more (filter the executions by error).</p>'
            if more > 0
            else "",
        ]
    return "\n".join(parts)


# --- one execution -------------------------------------------------------------------------


def _pretty(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _diff(expected: Any, actual: str | None) -> tuple[str, str]:
    from evalframe.views._html._diff import _tokens, word_diff

    a, b = _pretty(expected) if expected is not None else "", actual or ""
    if len(_tokens(a)) * len(_tokens(b)) > _DIFF_CELLS:
        return escape(a), escape(b)
    return word_diff(a, b)


def execution_page(info: Mapping[str, Any], e: Mapping[str, Any]) -> str:
    """One execution: input, expected and actual output (word-diffed), contexts, trajectory,
    every metric's score, threshold and details, and its human labels."""
    rid = info["run_id"]
    parts = [
        f"<h2>{escape(e['sample_id'])} "
        f'<span class="ef-muted">repetition {escape(e["repetition"])} · </span>'
        f"{_status(e['status'])}</h2>",
        "<p>" + link(run_url(rid), f"← {info['name']} ({rid})") + "</p>",
        f"<div>{chips(e['tags'])}</div>",
        "<h3>Input</h3>",
        f'<pre id="ef-input">{escape(_pretty(e["input"]))}</pre>',
    ]
    if e["expected_output"] is None:
        left = '<p class="ef-muted">none</p>'
        right = f'<pre class="ef-diff-b">{escape(e["actual_output"] or "")}</pre>'
    else:
        a, b = _diff(e["expected_output"], e["actual_output"])
        left, right = f'<pre class="ef-diff-a">{a}</pre>', f'<pre class="ef-diff-b">{b}</pre>'
    if e["system_error"]:
        right += f'<div class="ef-error">system error: {escape(e["system_error"])}</div>'
    parts.append(
        f'<div class="ef-pair"><div><h3>Expected output</h3>{left}</div>'
        f"<div><h3>Actual output</h3>{right}</div></div>"
    )
    rows = []
    for c in e["scores"]:  # one per metric
        verdict = (
            '<span class="ef-err">error</span>'
            if c["error"] is not None
            else ('<span class="ef-fail">fail</span>' if c["passed"] is False else "pass")
        )
        details = (
            escape(c["error"])
            if c["error"] is not None
            else (f"<pre>{escape(_pretty(c['details']))}</pre>" if c["details"] else "")
        )
        rows.append(
            [
                td(f"<code>{escape(c['metric'])}</code>"),
                td(f4(c["score"])),
                td(f"{float(c['threshold']):g}"),
                td(verdict),
                td(details, cls="ef-wrap"),
            ]
        )
    parts += [
        "<h3>Scores</h3>",
        table(["metric", "score", "threshold", "verdict", "details"], rows, cls="ef-scores"),
    ]
    if e["contexts"] is not None:
        items = e["contexts"] if isinstance(e["contexts"], list) else [e["contexts"]]
        parts += [
            "<h3>Retrieved contexts</h3>",
            '<ol class="ef-contexts">'
            + "".join(f"<li><pre>{escape(_pretty(c))}</pre></li>" for c in items)
            + "</ol>",
        ]
    if e["trajectory"] is not None:
        t = e["trajectory"]
        calls = [
            [
                td(escape(i)),
                td(f"<code>{escape(c.get('name'))}</code>"),
                td(f"<pre>{escape(c.get('arguments') or '')}</pre>", cls="ef-wrap"),
                td(f"<pre>{escape(c.get('result') or '')}</pre>", cls="ef-wrap"),
                td(escape(c.get("error") or ""), cls="ef-wrap"),
            ]
            for i, c in enumerate(t["tool_calls"] or [])
        ]
        parts += [
            "<h3>Trajectory</h3>",
            f'<p class="ef-muted ef-trajectory">{len(calls)} tool call(s), {escape(t["steps"])} '
            f"step(s), finish reason {escape(t['finish_reason'] or 'none')}</p>",
            table(["#", "tool", "arguments", "result", "error"], calls, cls="ef-trajectory"),
        ]
    if e["output_fields"]:
        parts += [
            "<h3>Other output fields</h3>",
            f"<pre>{escape(_pretty(e['output_fields']))}</pre>",
        ]
    if e["metadata"]:
        parts += ["<h3>Metadata</h3>", f"<pre>{escape(_pretty(e['metadata']))}</pre>"]
    if e["human_labels"]:
        labels = [
            [
                td(f"<code>{escape(x['metric'])}</code>"),
                td(escape(x["verdict"] or f4(x["label"]))),
                td(escape(x["note"] or ""), cls="ef-wrap"),
                td(when(x["labelled_at"])),
            ]
            for x in e["human_labels"]
        ]
        parts += [
            "<h3>Human labels</h3>",
            table(["metric", "label", "note", "labelled (UTC)"], labels),
        ]
    return "\n".join(parts)


# --- the labelling queue ---------------------------------------------------------------------


def label_page(info: Mapping[str, Any], q: Any, rows: list[dict[str, Any]]) -> str:
    """The queue, one card at a time: p pass, f fail, s score, n note, j/k next/previous."""
    rid = info["run_id"]
    metrics = [m["metric"] for m in info["metrics"]]
    path = f"/runs/{_quoted(rid)}/label"
    form = (
        f'<form class="ef-filters" method="get" action="{escape(path)}" data-autosubmit>'
        f'<label>metric<select name="metric" id="ef-q-metric">'
        + "".join(option(m, m, m == q.metric) for m in metrics)
        + "</select></label>"
        + _field("n", "rows", str(q.n), kind="number")
        + _field("strata", "strata", str(q.strata), kind="number")
        + _field("seed", "seed", str(q.seed), kind="number")
        + '<button type="submit">Pick rows</button></form>'
    )
    head = (
        f"<h2>Label rows of {escape(info['name'])} "
        f'<span class="ef-muted">({link(run_url(rid), rid)})</span></h2>'
        f"<p>The rows <code>evalframe calibrate --suggest {q.n} --run {escape(rid)} "
        f"--metric {escape(q.metric)} --strata {q.strata} --seed {q.seed}</code> picks, "
        f"given the {info['human_labels']} label(s) already kept: the judge's score bins, "
        "labelled where its errors spread most. Labels are saved in the store; "
        f"<code>evalframe calibrate --run {escape(rid)} --metric {escape(q.metric)}</code> and "
        f"<code>evalframe estimate {escape(rid)} --metric {escape(q.metric)}</code> read them.</p>"
        '<p class="ef-keys"><kbd>p</kbd> pass · <kbd>f</kbd> fail · <kbd>s</kbd> score '
        "(0 to 1, then Enter) · <kbd>n</kbd> note (Esc to leave it) · <kbd>j</kbd>/<kbd>k</kbd> "
        "next/previous</p>"
    )
    if not rows:
        return (
            head
            + form
            + '<p class="ef-muted" id="ef-queue-empty">Nothing to label: every row is labelled, '
            "or the metric scored none.</p>"
        )
    cards = []
    for i, row in enumerate(rows):  # the queue, at most 200
        judge = row["judge"]
        if judge["error"] is not None:
            verdict = f'<span class="ef-err">error: {escape(judge["error"])}</span>'
        else:
            word = "pass" if judge["passed"] else "fail"
            verdict = f"{_status(word)} score {f4(judge['score'])}"
        reason = (
            f"<p><b>Reason:</b> {escape(judge['reason'])}</p>"
            if judge["reason"]
            else (f"<pre>{escape(_pretty(judge['details']))}</pre>" if judge["details"] else "")
        )
        contexts = ""
        if row["contexts"] is not None:
            items = row["contexts"] if isinstance(row["contexts"], list) else [row["contexts"]]
            contexts = (
                "<h4>Retrieved contexts</h4><ol>"
                + "".join(f"<li><pre>{escape(_pretty(c))}</pre></li>" for c in items)
                + "</ol>"
            )
        sample_href = run_url(rid, "/sample", {"id": row["sample_id"], "rep": row["repetition"]})
        cards.append(
            f'<section class="ef-label-card" data-sample="{escape(row["sample_id"])}" '
            f'data-rep="{escape(row["repetition"])}"{" hidden" if i else ""}>'
            f"<h3>{i + 1}. {link(sample_href, row['sample_id'])} "
            f'<span class="ef-muted">score bin {escape(row["stratum"])}</span></h3>'
            f"<div>{chips(row['tags'])}</div>"
            f"<h4>Input</h4><pre>{escape(_pretty(row['input']))}</pre>"
            '<div class="ef-pair"><div><h4>Expected output</h4>'
            f"<pre>{escape(row['expected_output'] or '')}</pre></div>"
            '<div><h4>Actual output</h4><pre class="ef-actual">'
            f"{escape(row['actual_output'] or row['system_error'] or '')}</pre></div></div>"
            f"{contexts}"
            f"<h4>The judge ({escape(q.metric)})</h4><p>{verdict}</p>{reason}"
            '<div class="ef-filters">'
            '<button type="button" class="ef-do-pass">Pass (p)</button>'
            '<button type="button" class="ef-do-fail">Fail (f)</button>'
            '<label>score<input class="ef-score" type="number" min="0" max="1" step="0.05"></label>'
            '<button type="button" class="ef-do-score">Save score</button>'
            '<span class="ef-label-status ef-muted"></span></div>'
            '<label>note<textarea rows="2" maxlength="10000"></textarea></label>'
            "</section>"
        )
    meta = json_script("ef-queue-meta", {"run_id": rid, "metric": q.metric})
    return (
        head
        + form
        + '<p><b id="ef-queue-progress"></b></p>'
        + f'<div id="ef-queue">{"".join(cards)}</div>'
        + meta
    )
