"""The pages across runs: comparison, trends, online monitoring, the adversarial lane and
the SQL box."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import polars as pl

from evalframe.views._format import f4, signed
from evalframe.views._html._diff import word_diff
from evalframe.views._html._parts import colour, table, td
from evalframe.views._web._compare import metric_rows
from evalframe.views._web._filters import CompareQuery, TrendQuery
from evalframe.views._web._layout import (
    chips,
    error_box,
    escape,
    link,
    option,
    pager,
    run_url,
    status_badges,
    url,
    when,
)
from evalframe.views._web._trend import trend_svg

if TYPE_CHECKING:
    from evalframe.views._web._compare import Compared

__all__ = [
    "adversarial_page",
    "compare_page",
    "online_page",
    "sql_page",
    "statistics",
    "trends_page",
]


def _ci(pair: Sequence[Any]) -> str:
    low, high = pair
    if low is None or high is None:
        return ""
    return f' <span class="ef-muted">[{float(low):+.4f}, {float(high):+.4f}]</span>'


def _delta(value: Any) -> str:
    cls = (
        "ef-up"
        if isinstance(value, float) and value > 0
        else ("ef-down" if isinstance(value, float) and value < 0 else None)
    )
    return f'<span class="{cls or ""}">{signed(value)}</span>'


_COUNT_HEADERS = [
    "#", "macro-F1 Δ", "rows regressed", "(row, metric) pairs regressed", "improved", "stable",
    "added", "removed",
]  # fmt: skip


def compare_page(found: Compared, q: CompareQuery, total: int, rows: list[dict[str, Any]]) -> str:
    """Per-metric table with paired statistics, then the row matrix."""
    runs = found.runs
    refs = ",".join(r["run_id"] for r in runs)
    head = [
        f"<h2>Comparing {len(runs)} runs of {escape(found.comparisons[0].after.dataset.name)}</h2>",
        '<p class="ef-muted">The first run is the reference; each other run is compared with '
        "it on the rows both scored: paired bootstrap intervals (95%) of the differences, rows "
        "that went pass → fail / fail → pass, and McNemar's exact test, Holm-adjusted.</p>",
    ]
    run_rows = [
        [
            td(escape(i)),
            td(link(run_url(r["run_id"]), r["name"]), cls="ef-text"),
            td(f"<code>{escape(r['run_id'])}</code>", cls="ef-text"),
            td(status_badges(r["status"]), cls="ef-wrap ef-status-cell"),
            td(chips(r["labels"]), cls="ef-wrap"),
            td(f4(r["headline"]["macro_f1"])),
            td(escape(r["n_executions"])),
            td(
                escape(r["headline"]["errored_executions"]),
                cls="ef-fail" if r["headline"]["errored_executions"] else None,
            ),
        ]
        for i, r in enumerate(runs)
    ]
    headers = ["#", "name", "run", "status", "labels", "macro-F1", "executions", "errored"]
    parts = [*head, table(headers, run_rows, cls="ef-table ef-compare-runs")]
    stats = statistics(found)
    if not found.intervals:  # the page fetches them once shown
        src = url("/compare/intervals", {"runs": refs})
        stats = (
            f'<div id="ef-compare-stats" data-src="{src}">{stats}'
            '<p class="ef-muted" id="ef-intervals-note">The paired bootstrap intervals are '
            f"on their way ({link(src, 'open them')}).</p></div>"
        )
    parts.append(stats)
    params = {"runs": refs, "rows": q.rows}
    choices = "".join(
        link(url("/compare", {"runs": refs, "rows": value}), text, cls="ef-chip")
        for value, text in (
            (None, "all rows"),
            ("regressed", "regressed only"),
            ("differs", "differs only"),
        )
    )
    parts += [
        "<h3>Rows</h3>",
        f'<p id="ef-row-filters">{choices} <span class="ef-muted">showing '
        f"{escape(q.rows or 'all')}</span></p>",
        pager("/compare", params, total, q.page.limit, q.page.offset),
        _matrix(runs, rows),
        pager("/compare", params, total, q.page.limit, q.page.offset),
    ]
    return "\n".join(parts)


def statistics(found: Compared) -> str:
    """Each other run against the reference (row counts, the macro-F1 delta) and the
    per-metric paired statistics, with their intervals when ``found`` has them."""
    runs = found.runs
    counts = []
    for i, c in enumerate(found.comparisons, start=1):
        n = c.counts
        counts.append(
            [
                td(escape(i)),
                td(
                    _delta(c.macro_f1["delta"])
                    + _ci([c.macro_f1.get("ci_low"), c.macro_f1.get("ci_high")])
                ),
                td(escape(n["regressed"]), cls="ef-down" if n["regressed"] else None),
                td(
                    escape(n["regressed_pairs"]),
                    cls="ef-down" if n["regressed_pairs"] else None,
                ),
                td(escape(n["improved"])),
                td(escape(n["stable"])),
                td(escape(n["added"])),
                td(escape(n["removed"])),
            ]
        )
    parts = ["<h3>Against the reference</h3>", table(_COUNT_HEADERS, counts)]
    headers = ["metric", "#0 mean", "#0 pass-rate"]
    for i in range(1, len(runs)):
        headers += [
            f"#{i} mean Δ",
            f"#{i} pass-rate Δ",
            f"#{i} pass→fail / fail→pass",
            f"#{i} p (Holm)",
        ]
    metric_table = []
    for m in metric_rows(found):  # one per metric
        cells = [
            td(f"<code>{escape(m['metric'])}</code>"),
            td(f4(m["reference"]["mean"])),
            td(f4(m["reference"]["pass_rate"])),
        ]
        for i in range(1, len(runs)):
            r = m["runs"].get(runs[i]["run_id"])
            if r is None:
                cells += [td(""), td(""), td(""), td("")]
                continue
            cells += [
                td(_delta(r["mean_delta"]) + _ci(r["mean_ci"])),
                td(_delta(r["pass_rate_delta"]) + _ci(r["pass_rate_ci"])),
                td(
                    "n/a"
                    if r["pass_to_fail"] is None
                    else f"{r['pass_to_fail']} / {r['fail_to_pass']}"
                ),
                td(f4(r["p_holm"])),
            ]
        metric_table.append(cells)
    parts += ["<h3>Per metric</h3>", table(headers, metric_table, cls="ef-compare-metrics")]
    return "\n".join(parts)


def _matrix(runs: list[dict[str, Any]], rows: list[dict[str, Any]]) -> str:
    head = "<th>sample</th>" + "".join(
        f"<th>#{i} {escape(r['name'])}<br><code>{escape(r['run_id'])}</code>"
        f"<br>{status_badges(r['status'], detail=False)}</th>"
        for i, r in enumerate(runs)
    )
    body = []
    for row in rows:  # one page
        reference = row["runs"][0]["output"]
        cells = [
            td(
                link(
                    run_url(runs[0]["run_id"], "/sample", {"id": row["sample_id"], "rep": 0}),
                    row["sample_id"],
                ),
                cls="ef-text",
            )
        ]
        for i, side in enumerate(row["runs"]):
            status = side["status"] or ""
            if side["regressed_metrics"]:
                status = "regressed" if status == "stable" else status
            if i and side["output"] is not None and reference is not None:
                _, shown = word_diff(reference, side["output"])
            else:
                shown = escape(side["output"] if side["output"] is not None else "")
            figures = f"pass-rate {f4(side['pass_rate'])} · score {f4(side['score_mean'])}"
            if side["regressed_metrics"]:
                figures += " · worse: " + ", ".join(side["regressed_metrics"])
            cells.append(
                f'<td class="ef-{escape(status)}" data-status="{escape(status)}">'
                f'<div class="ef-muted">{escape(status)} · {figures}</div><pre>{shown}</pre></td>'
            )
        body.append(
            f'<tr class="ef-matrix-row" data-sample="{escape(row["sample_id"])}">'
            + "".join(cells)
            + "</tr>"
        )
    return (
        f'<div class="ef-table"><table class="ef-matrix" id="ef-matrix"><thead><tr>{head}</tr>'
        f"</thead><tbody>{''.join(body)}</tbody></table></div>"
    )


def trends_page(
    q: TrendQuery | None, data: Mapping[str, Any] | None, datasets: list[tuple[str, int]]
) -> str:
    """A metric over time, its points linking to the runs, with a table of the same."""
    chosen = q.dataset if q is not None else None
    opts = "".join(option(d, f"{d} ({n})", d == chosen) for d, n in datasets)
    metrics = (data or {}).get("metrics", [])
    metric_opts = '<option value="">every metric</option>' + "".join(
        f'<option value="{escape(m)}"{" selected" if q is not None and m == q.metric else ""}>'
        f"{escape(m)}</option>"
        for m in metrics
    )
    value = q.value if q is not None else "mean"
    value_opts = "".join(
        f'<option value="{v}"{" selected" if v == value else ""}>{v}</option>'
        for v in ("mean", "pass_rate", "p50", "p95")
    )
    floor = q.floor if q is not None and q.floor is not None else ""
    form = (
        '<form class="ef-filters" method="get" action="/trends" data-autosubmit id="ef-trend-form">'
        '<label>dataset<select name="dataset" id="ef-t-dataset">'
        f'<option value="">—</option>{opts}</select></label>'
        '<label>or label<input name="label" id="ef-t-label" '
        f'value="{escape((q.label if q else None) or "")}" placeholder="KEY=VALUE"></label>'
        f'<label>metric<select name="metric" id="ef-t-metric">{metric_opts}</select></label>'
        f'<label>value<select name="value" id="ef-t-value">{value_opts}</select></label>'
        '<label>gate floor<input name="floor" id="ef-t-floor" '
        f'value="{escape(floor)}" placeholder="e.g. 0.8"></label>'
        '<button type="submit">Show</button></form>'
    )
    parts = ["<h2>Trends</h2>", form]
    if q is None or data is None:
        parts.append(
            '<p class="ef-muted">Pick a dataset (or a label) to follow its metrics over its '
            "runs.</p>"
        )
        return "\n".join(parts)
    if not data["points"]:
        parts.append('<p class="ef-muted">No run matches.</p>')
        return "\n".join(parts)
    parts.append(
        '<p class="ef-muted">One point per run, oldest on the left; click a point for its run. '
        "Dashed: the metric's pass threshold (for score values), the gate floor you give, and "
        "the runs baselines point at. Hollow, ringed in red: a run with errored executions "
        "(INCOMPLETE; they count as not passed).</p>"
    )
    parts.append(f'<div id="ef-trend-chart">{trend_svg(data, value, q.floor)}</div>')
    base: dict[str, list[str]] = {}
    for b in data["baselines"]:
        base.setdefault(b["run_id"], []).append(b["name"])
    rows = [
        [
            td(when(p["created_at"])),
            td(link(run_url(p["run_id"]), p["name"]), cls="ef-text"),
            td(status_badges(p["status"], detail=False)),
            td(f"<code>{escape(p['metric'])}</code>"),
            td(f4(p[value])),
            td(f4(p["pass_rate"])),
            td(f"{float(p['threshold']):g}" if p["threshold"] is not None else ""),
            td(chips([f"baseline {n}" for n in base.get(p["run_id"], [])])),
        ]
        for p in reversed(data["points"])
    ]
    parts.append(
        table(
            ["created (UTC)", "run", "status", "metric", value, "pass-rate", "threshold", ""],
            rows,
            cls="ef-trend-table",
        )
    )
    return "\n".join(parts)


def online_page(
    datasets: pl.DataFrame, chosen: str | None, detail: Mapping[str, Any] | None
) -> str:
    """Production monitoring: each dataset's captures, and one dataset's window verdict,
    daily pass rate and latest scores."""
    parts = ["<h2>Online monitoring</h2>"]
    if datasets.height == 0:
        parts.append(
            '<p class="ef-muted">The store holds no production scores (captured with '
            "<code>ef.online.capture</code>, scored with <code>evalframe online score</code>).</p>"
        )
        return "\n".join(parts)
    rows = [
        [
            td(link(url("/online", {"dataset": d}), d), cls="ef-text"),
            td(escape(n)),
            td(f4(rate)),
            td(when(last)),
        ]
        for d, n, rate, last in datasets.iter_rows()
    ]
    parts.append(table(["dataset", "scores", "pass rate", "last judged (UTC)"], rows))
    if chosen is None or detail is None:
        return "\n".join(parts)
    from evalframe.views._online import trend_svg as daily_svg

    status = detail["status"]
    verdict = (
        '<b class="ef-fail">DROPPED</b>: pass rate '
        f"{f4(status.pass_rate)} &lt; {status.threshold:g}"
        if status.dropped
        else f'<b class="ef-pass">ok</b>: pass rate {f4(status.pass_rate)}'
    )
    parts += [
        f"<h3>{escape(chosen)}</h3>",
        f"<p>{verdict} over the latest {status.sample_count} scores (window {status.window}, "
        f"alert below {status.threshold:g} with at least {status.min_samples}).</p>",
        daily_svg(chosen, detail["trend"], status.threshold),
    ]
    latest = [
        [
            td(when(r["judged_at"])),
            td(escape(r["sample_id"]), cls="ef-text"),
            td(f"<code>{escape(r['metric'])}</code>"),
            td(f4(r["score"])),
            td(
                "pass"
                if r["passed"]
                else ('<span class="ef-fail">fail</span>' if r["passed"] is False else "")
            ),
            td(escape(r["error"] or ""), cls="ef-wrap"),
        ]
        for r in detail["latest"]
    ]
    parts += [
        "<h4>Latest scores</h4>",
        table(["judged (UTC)", "sample", "metric", "score", "verdict", "error"], latest),
    ]
    return "\n".join(parts)


def adversarial_page(
    datasets: list[tuple[str, int]], chosen: str | None, entries: list[dict[str, Any]]
) -> str:
    """The adversarial lane: each seed dataset's recorded runs, newest first."""
    parts = ["<h2>Adversarial lane</h2>"]
    if not datasets:
        parts.append(
            '<p class="ef-muted">The store holds no adversarial history (<code>evalframe '
            "adversarial run --store</code> records each clean run).</p>"
        )
        return "\n".join(parts)
    parts.append(
        table(
            ["dataset", "recorded runs"],
            [
                [td(link(url("/adversarial", {"dataset": d}), d), cls="ef-text"), td(escape(n))]
                for d, n in datasets
            ],
        )
    )
    if chosen is None:
        return "\n".join(parts)
    metric_names = sorted({m for e in entries for m in (e.get("metrics") or {})})
    rows = []
    for e in entries:  # the recorded runs of one dataset
        metrics = e.get("metrics") or {}
        categories = (e.get("adversarial") or {}).get("categories") or []
        cells = [
            td(link(run_url(str(e["run_id"])), e["run_id"]), cls="ef-text"),
            td(escape(_epoch(e.get("finished_at")))),
            td(escape(e.get("total_samples", ""))),
            td(f4(e.get("macro_f1"))),
        ]
        for m in metric_names:
            block = metrics.get(m) or {}
            cells.append(
                td(f4(block.get("mean")), style=f"background:{colour(block.get('pass_rate'))}")
            )
        cells.append(
            td(
                escape(", ".join(str(c.get("label") or c.get("category")) for c in categories)),
                cls="ef-wrap",
            )
        )
        rows.append(cells)
    parts += [
        f"<h3>{escape(chosen)}</h3>",
        table(
            [
                "run",
                "finished (UTC)",
                "samples",
                "macro-F1",
                *(f"{m} mean" for m in metric_names),
                "categories",
            ],
            rows,
        ),
    ]
    return "\n".join(parts)


def _epoch(value: Any) -> str:
    import datetime as dt

    if not isinstance(value, int | float):
        return ""
    return dt.datetime.fromtimestamp(float(value), dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def sql_page(text: str, result: pl.DataFrame | None, error: str | None, limit: int) -> str:
    """The read-only query box and its result (the first ``limit`` rows)."""
    parts = [
        "<h2>SQL</h2>",
        '<p class="ef-muted">One read-only SELECT over the store\'s tables and views (see '
        "the store schema), as <code>evalframe sql</code> runs it: nothing can be written, and "
        "no file other than the store can be read. Ctrl+Enter runs it.</p>",
        '<form method="get" action="/sql" id="ef-sql-form">'
        f'<textarea name="q" id="ef-sql-text" rows="6" spellcheck="false">{escape(text)}</textarea>'
        '<p><button type="submit" class="ef-primary">Run</button></p></form>',
    ]
    if error is not None:
        parts.append(error_box(error))
    if result is not None:
        shown = result.head(limit)
        rows = [[td(escape(_cell(v)), cls="ef-wrap") for v in row] for row in shown.iter_rows()]
        more = " (the first rows only)" if result.height > limit else ""
        parts += [
            f'<p class="ef-muted" id="ef-sql-count">{shown.height:,} row(s){more}</p>',
            table(result.columns, rows, cls="ef-sql-result"),
        ]
    return "\n".join(parts)


def _cell(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, list | dict):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)
