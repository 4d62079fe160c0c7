"""Rich HTML and plain-text views of runs, reports, comparisons and store listings.

Jupyter shows the HTML fragments (``Run._repr_html_``, ``Report._repr_html_``, ...); a
terminal gets the plain-text views. Both read the report document (``evalframe.report.v1``
keys), so a run, a report built from it and a report read back from JSON look the same.
Histograms are drawn as small inline SVGs that need no JavaScript and no extra package.

``page`` turns a report into one self-contained HTML file (the ``evalframe report`` command):
the same tables plus interactive Vega-Lite charts whose JavaScript is inlined from
``vl-convert-python`` (the ``viz`` extra). A Content-Security-Policy forbids every network
request, so the file renders the same on an air-gapped CI runner as on a laptop.

Examples:
    >>> import evalframe as ef
    >>> ds = ef.Dataset.from_records(
    ...     [{"id": "q1", "input": {"q": "2+2?"}, "expected_output": "4"}], name="math")
    >>> run = ef.evaluate(ds, outputs={"q1": "4"}, metrics=["exact-match"], run_id="r1")
    >>> from evalframe.views._html import run_text
    >>> print(run_text(run))
    evalframe run r1 — math
    1 samples · 1 executions · 0 failures · macro-F1 1.0000
    <BLANKLINE>
    metric       mean    p50     p95     pass-rate  scored  errors
    exact-match  1.0000  1.0000  1.0000  1.0000     1       0
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import polars as pl

from evalframe.core import schema as C
from evalframe.views._report import metric_sections

if TYPE_CHECKING:
    from evalframe.core._compare import Comparison
    from evalframe.core._run import Run

__all__ = [
    "CSS",
    "comparison_html",
    "comparison_text",
    "page",
    "report_html",
    "report_text",
    "run_document",
    "run_html",
    "run_text",
    "runs_html",
    "runs_text",
]

MAX_FAILURES = 20
"""Failures listed in a fragment; the rest are counted."""

CSS = """
.ef-report{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;font-size:13px;
  color:#1f2328;line-height:1.4;max-width:1100px}
.ef-report h2{font-size:17px;margin:4px 0 6px}
.ef-report h3{font-size:14px;margin:14px 0 6px}
.ef-report .ef-kpis{display:flex;flex-wrap:wrap;gap:14px;margin:4px 0 10px;color:#57606a}
.ef-report .ef-kpis b{color:#1f2328}
.ef-report .ef-headline{font-size:22px;font-weight:600;color:#1f2328}
.ef-report table{border-collapse:collapse;margin:2px 0 8px}
.ef-report th,.ef-report td{padding:3px 8px;border-bottom:1px solid #d8dee4;text-align:right;
  vertical-align:middle;white-space:nowrap}
.ef-report th{background:#f6f8fa;font-weight:600}
.ef-report th:first-child,.ef-report td:first-child,.ef-report td.ef-text{text-align:left}
.ef-report td.ef-wrap{white-space:normal;max-width:520px;text-align:left}
.ef-report .ef-bar{display:inline-block;height:8px;background:#2da44e;border-radius:2px;
  vertical-align:middle;margin-right:6px}
.ef-report .ef-bar.ef-bg{background:#d8dee4}
.ef-report code{font-size:12px;background:#f6f8fa;padding:0 3px;border-radius:3px}
.ef-report .ef-muted{color:#57606a}
.ef-report .ef-up{color:#1a7f37}
.ef-report .ef-down{color:#cf222e}
.ef-report .ef-chart{margin:6px 0 14px}
""".strip()


# --- documents ---------------------------------------------------------------------------


def _block(row: Mapping[str, Any]) -> dict[str, Any]:
    return {k: row[k] for k in ("mean", "p50", "p95", "pass_rate", "n", "n_scored", "n_errors")}


def run_document(run: Run, *, buckets: int = 10) -> dict[str, Any]:
    """The report keys a view needs, computed from a run without per-sample detail.

    Building the full report walks every sample; the views only need the aggregates,
    so a notebook repr of a million-row run stays fast.
    """
    metrics, distributions, cohorts = metric_sections(run, _block, buckets=buckets)
    failures = run.failures.sort(C.REPETITION, maintain_order=True)
    return {
        "run_id": run.run_id,
        "run_name": run.name,
        "dataset": run.dataset.name,
        "duration_seconds": max(0.0, run.finished_at - run.started_at),
        "total_samples": run.dataset.height,
        "total_executions": run.frame.height,
        "repetitions": run.repetitions,
        "total_failures": failures.height,
        "macro_f1": run.macro_f1,
        "metrics": metrics,
        "metric_distributions": distributions,
        "cohorts": cohorts,
        "failures": failures.head(MAX_FAILURES).to_dicts(),
    }


# --- small pieces ------------------------------------------------------------------------


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _f4(x: Any) -> str:
    return "n/a" if x is None else f"{float(x):.4f}"


def _signed(x: Any) -> str:
    return "n/a" if x is None else f"{float(x):+.4f}"


def _colour(value: float | None) -> str:
    """A light red-amber-green background for a value in [0, 1]; grey for null."""
    if value is None:
        return "#eaeef2"
    hue = round(120 * min(1.0, max(0.0, float(value))))
    return f"hsl({hue},62%,82%)"


def _bar(value: float | None, width: int = 60) -> str:
    if value is None:
        return ""
    filled = round(width * min(1.0, max(0.0, float(value))))
    return (
        f'<span class="ef-bar" style="width:{filled}px"></span>'
        f'<span class="ef-bar ef-bg" style="width:{width - filled}px;margin-left:-6px"></span>'
    )


def _spark(buckets: Sequence[Mapping[str, Any]], *, width: int = 120, height: int = 26) -> str:
    """An inline SVG histogram: one bar per bucket, its range and count in a tooltip."""
    if not buckets:
        return ""
    peak = max(int(b["count"]) for b in buckets) or 1
    step = width / len(buckets)
    rects = []
    for i, b in enumerate(buckets):
        h = 0.0 if not b["count"] else max(1.0, (height - 2) * int(b["count"]) / peak)
        rects.append(
            f'<rect x="{i * step + 0.5:.1f}" y="{height - 1 - h:.1f}" width="{step - 1:.1f}" '
            f'height="{h:.1f}" fill="#0969da"><title>{float(b["min"]):.1f}&ndash;'
            f"{float(b['max']):.1f}: {int(b['count'])}</title></rect>"
        )
    total = sum(int(b["count"]) for b in buckets)
    return (
        f'<svg class="ef-hist" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="histogram of {total} scores">'
        f'<line x1="0" y1="{height - 0.5}" x2="{width}" y2="{height - 0.5}" stroke="#d8dee4"/>'
        + "".join(rects)
        + "</svg>"
    )


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, cls: str = "ef-table") -> str:
    """A table from pre-escaped cells."""
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(row) + "</tr>" for row in rows)
    return (
        f'<div class="{cls}"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


def _td(value: Any, *, cls: str | None = None, style: str | None = None, title: str = "") -> str:
    attrs = f' class="{cls}"' if cls else ""
    attrs += f' style="{style}"' if style else ""
    attrs += f' title="{_e(title)}"' if title else ""
    return f"<td{attrs}>{value}</td>"


def _text_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    cells = [[str(h) for h in headers], *[[str(c) for c in r] for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]


# --- runs and reports --------------------------------------------------------------------


def _header(doc: Mapping[str, Any]) -> str:
    name = doc.get("run_name") or doc.get("dataset")
    title = f"evalframe run — {_e(name)}"
    if doc.get("dataset") and doc.get("dataset") != name:
        title += f' <span class="ef-muted">on {_e(doc["dataset"])}</span>'
    kpis = [
        f'<span class="ef-headline">{doc["macro_f1"]:.4f}</span>'
        '<span class="ef-muted" style="align-self:flex-end">macro-F1</span>',
        f"<span><b>{doc['total_samples']}</b> samples</span>",
        f"<span><b>{doc['total_executions']}</b> executions</span>",
        f"<span><b>{doc['total_failures']}</b> failures</span>",
        f"<span><b>{float(doc.get('duration_seconds') or 0.0):.2f}</b> s</span>",
    ]
    if doc.get("run_id"):
        kpis.append(f"<span>run <code>{_e(doc['run_id'])}</code></span>")
    return f'<h2>{title}</h2><div class="ef-kpis">{"".join(kpis)}</div>'


def _has_counts(doc: Mapping[str, Any]) -> bool:
    """Whether the metric blocks carry evalframe's additions (eval-harness reports do not)."""
    return all("n_scored" in m for m in doc["metrics"].values())


def _metrics_table(doc: Mapping[str, Any]) -> str:
    dists = doc.get("metric_distributions") or {}
    extended = _has_counts(doc)
    rows = []
    for name, m in doc["metrics"].items():
        cells = [_td(f"<code>{_e(name)}</code>")]
        if extended:
            cells.append(_td(_e(m.get("family", "")), cls="ef-text"))
        cells += [
            _td(_f4(m["mean"])),
            _td(_f4(m["p50"])),
            _td(_f4(m["p95"])),
            _td(_bar(m["pass_rate"]) + _f4(m["pass_rate"])),
        ]
        if extended:
            cells += [
                _td("" if m.get("threshold") is None else f"{float(m['threshold']):g}"),
                _td(str(m["n_scored"])),
                _td(str(m["n_errors"])),
            ]
        rows.append([*cells, _td(_spark(dists.get(name, [])))])
    if extended:
        headers = [
            "metric", "family", "mean", "p50", "p95", "pass-rate", "threshold", "scored",
            "errors", "histogram",
        ]  # fmt: skip
    else:
        headers = ["metric", "mean", "p50", "p95", "pass-rate (>= 0.5)", "histogram"]
    return _table(headers, rows, cls="ef-metrics")


def _cohort_table(doc: Mapping[str, Any]) -> str:
    """Cohort x metric pass-rates as a heatmap table (mean and count in each tooltip)."""
    names = list(doc["metrics"])
    rows = []
    for c in doc["cohorts"]:
        cells = [
            _td(_e(c["label"]), cls="ef-text"),
            _td(str(c["sample_count"])),
        ]
        for name in names:
            m = c["metrics"].get(name)
            # eval-harness cohorts carry no counts: a metric absent from a cohort is zeros.
            if m is None or not m.get("n_scored", 1):
                cells.append(_td("&ndash;", style=f"background:{_colour(None)}"))
                continue
            over = f" over {m['n_scored']} scored" if "n_scored" in m else ""
            cells.append(
                _td(
                    _f4(m["pass_rate"]),
                    style=f"background:{_colour(m['pass_rate'])}",
                    title=f"mean {_f4(m['mean'])}{over}",
                )
            )
        rows.append(cells)
    return _table(["cohort", "samples", *names], rows, cls="ef-cohorts")


def _failures_list(doc: Mapping[str, Any]) -> str:
    failures = doc["failures"]
    total = int(doc.get("total_failures", len(failures)))
    if not failures:
        return '<p class="ef-muted">None.</p>'
    rows = [
        [
            _td(f"<code>{_e(f['sample_id'])}</code>"),
            _td(str(f.get("repetition", 0))),
            _td(f"<code>{_e(f['metric'])}</code>", cls="ef-text"),
            _td(_e(f["error"]), cls="ef-wrap"),
        ]
        for f in failures[:MAX_FAILURES]
    ]
    more = total - len(rows)
    tail = f'<p class="ef-muted">… and {more} more.</p>' if more > 0 else ""
    return _table(["sample", "repetition", "metric", "error"], rows) + tail


def report_html(doc: Mapping[str, Any], *, charts: str = "") -> str:
    """An HTML fragment for a report document: header, metrics, cohorts, failures.

    Args:
        doc: a report (``Run.report()``, a report JSON read back) or ``run_document(run)``.
        charts: extra HTML placed after the cohort table (the page's Vega-Lite charts).

    Returns:
        A ``<div class="ef-report">`` with its own ``<style>``.
    """
    parts = [
        f'<div class="ef-report"><style>{CSS}</style>',
        _header(doc),
        "<h3>Per-metric aggregates</h3>",
        _metrics_table(doc),
    ]
    if doc["cohorts"]:
        parts += ["<h3>Cohorts by tag (pass-rate)</h3>", _cohort_table(doc)]
    if charts:
        parts += [charts]
    parts += ["<h3>Failures</h3>", _failures_list(doc), "</div>"]
    return "\n".join(parts)


def run_html(run: Run) -> str:
    """The HTML fragment for a run (``Run._repr_html_``)."""
    return report_html(run_document(run))


def report_text(doc: Mapping[str, Any]) -> str:
    """A plain-text summary of a report document, for terminals."""
    name = doc.get("run_name") or doc.get("dataset")
    run_id = f" {doc['run_id']}" if doc.get("run_id") else ""
    lines = [
        f"evalframe run{run_id} — {name}",
        f"{doc['total_samples']} samples · {doc['total_executions']} executions · "
        f"{doc['total_failures']} failures · macro-F1 {doc['macro_f1']:.4f}",
        "",
    ]
    counts = ["scored", "errors"] if _has_counts(doc) else []
    lines += _text_table(
        ["metric", "mean", "p50", "p95", "pass-rate", *counts],
        [
            [
                n,
                *(_f4(m[k]) for k in ("mean", "p50", "p95", "pass_rate")),
                *(m[f"n_{k}"] for k in counts),
            ]
            for n, m in doc["metrics"].items()
        ],
    )
    failures = doc["failures"]
    if failures:
        lines += ["", f"failures (first {min(len(failures), 5)} of {doc['total_failures']}):"]
        lines += [f"  {f['sample_id']} / {f['metric']}: {f['error']}" for f in failures[:5]]
    return "\n".join(lines)


def run_text(run: Run) -> str:
    """A plain-text summary of a run, for terminals."""
    return report_text(run_document(run))


# --- the self-contained page -------------------------------------------------------------

_CSP = (
    "default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; "
    "style-src 'unsafe-inline'; img-src data:; font-src data:"
)


def _chart_specs(doc: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    from evalframe.views import plot

    specs = [("Score histograms", plot.histograms(doc).to_dict())]
    if doc["cohorts"]:
        specs.append(("Cohort x metric pass-rate", plot.heatmap(doc).to_dict()))
    return specs


def page(
    doc: Mapping[str, Any],
    *,
    charts: Literal["auto", "vega", "svg", "none"] = "auto",
    title: str | None = None,
) -> str:
    """One self-contained HTML file for a report: tables and charts, no network at all.

    Args:
        doc: a report document.
        charts: ``"vega"`` embeds interactive Vega-Lite charts with their JavaScript inlined;
            ``"svg"`` renders them to static SVG; ``"none"`` keeps only the tables and inline
            histograms; ``"auto"`` is ``"vega"`` when the ``viz`` extra is installed, else
            ``"none"``.
        title: the document title (default: the run and dataset names).

    Returns:
        The HTML text, starting with ``<!DOCTYPE html>``.
    """
    if charts == "auto":
        try:
            import altair  # noqa: F401  (a probe for the viz extra)
            import vl_convert
        except ImportError:
            charts = "none"
        else:
            charts = "vega"
    body_charts = ""
    script = ""
    if charts != "none":
        specs = _chart_specs(doc)
        blocks = []
        if charts == "svg":
            from evalframe.views.plot import to_svg

            for i, (label, spec) in enumerate(specs):
                blocks.append(
                    f"<h3>{_e(label)}</h3>"
                    f'<div class="ef-chart" id="ef-chart-{i}">{to_svg(spec)}</div>'
                )
        else:
            import vl_convert

            calls = []
            for i, (label, spec) in enumerate(specs):
                blocks.append(
                    f'<h3>{_e(label)}</h3><div class="ef-chart vega-chart" id="ef-chart-{i}"></div>'
                )
                data = json.dumps(spec, sort_keys=True).replace("</", "<\\/")
                calls.append(
                    f"vegaEmbed('#ef-chart-{i}', {data}, "
                    '{"actions": false, "renderer": "svg"}).catch(console.error);'
                )
            # The stub marks ``snippet`` required; at run time it defaults to the bundle
            # that defines window.vegaEmbed, which is what we want.
            bundle: str = vl_convert.javascript_bundle()  # type: ignore[call-arg]
            script = f"<script>{bundle}</script>\n<script>\n{chr(10).join(calls)}\n</script>"
        body_charts = "\n".join(blocks)
    name = title or f"evalframe report — {doc.get('run_name') or doc.get('dataset')}"
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_e(name)}</title>\n</head>\n<body>\n"
        f"{report_html(doc, charts=body_charts)}\n{script}\n</body>\n</html>\n"
    )


# --- comparisons and store listings ------------------------------------------------------


def runs_html(runs: pl.DataFrame, *, title: str = "Stored runs") -> str:
    """A store listing (one row per run) as an HTML fragment, macro-F1 drawn as a bar."""
    rows = []
    for r in runs.head(50).iter_rows(named=True):
        cells = []
        for k, v in r.items():
            if k in ("macro_f1", "pass_rate") and isinstance(v, float):
                cells.append(_td(_bar(v) + _f4(v)))
            elif isinstance(v, float):
                cells.append(_td(_f4(v)))
            elif isinstance(v, list):
                cells.append(_td(_e(", ".join(map(str, v))), cls="ef-text"))
            elif v is None or isinstance(v, int | bool):
                cells.append(_td(_e("" if v is None else v)))
            else:
                cells.append(_td(_e(v), cls="ef-text"))
        rows.append(cells)
    more = runs.height - min(runs.height, 50)
    tail = f'<p class="ef-muted">… and {more} more runs.</p>' if more > 0 else ""
    return (
        f'<div class="ef-report"><style>{CSS}</style><h3>{_e(title)} '
        f'<span class="ef-muted">({runs.height})</span></h3>'
        f"{_table(runs.columns, rows)}{tail}</div>"
    )


def runs_text(runs: pl.DataFrame) -> str:
    """A store listing as plain text."""
    return str(runs)


def _ci(low: Any, high: Any) -> str:
    if low is None or high is None:
        return ""
    return f'<span class="ef-muted">[{float(low):+.4f}, {float(high):+.4f}]</span>'


def _delta_td(value: Any, extra: str = "") -> str:
    sign = None
    if isinstance(value, float):
        sign = "ef-up" if value > 0 else ("ef-down" if value < 0 else None)
    return _td(f"{_signed(value)} {extra}".strip(), cls=sign)


def comparison_html(comparison: Comparison, *, max_rows: int = MAX_FAILURES) -> str:
    """A comparison of two runs as an HTML fragment (``Comparison._repr_html_``).

    Row verdict counts, macro-F1 before and after with its paired interval, per-metric
    deltas with bootstrap intervals and Holm-adjusted p-values, the cohorts that moved and
    the worst regressed rows.
    """
    c = comparison
    counts = c.counts
    mf = c.macro_f1
    title = (
        f"Comparison — {_e(c.after.dataset.name)}: <code>{_e(c.before.run_id)}</code> "
        f"({_e(c.label)}) → <code>{_e(c.after.run_id)}</code>"
    )
    chips = [
        f'<span class="ef-headline">{_signed(mf["delta"])}</span>'
        '<span class="ef-muted" style="align-self:flex-end">macro-F1 '
        f"{_f4(mf['before'])} → {_f4(mf['after'])} {_ci(mf.get('ci_low'), mf.get('ci_high'))}"
        "</span>"
    ]
    for key, label in (
        ("regressed", "regressed"),
        ("regressed_confident", "beyond noise"),
        ("newly_failing", "newly failing"),
        ("improved", "improved"),
        ("stable", "stable"),
        ("added", "added"),
        ("removed", "removed"),
    ):
        cls = ' class="ef-down"' if key.startswith(("regressed", "newly")) and counts[key] else ""
        chips.append(f"<span{cls}><b>{counts[key]}</b> {label}</span>")
    metric_rows = [
        [
            _td(f"<code>{_e(r['metric'])}</code>"),
            _td(_f4(r["before_mean"])),
            _td(_f4(r["after_mean"])),
            _delta_td(r["mean_delta"], _ci(r["mean_ci_low"], r["mean_ci_high"])),
            _td(_f4(r["before_pass_rate"])),
            _td(_f4(r["after_pass_rate"])),
            _delta_td(r["pass_rate_delta"], _ci(r["pass_rate_ci_low"], r["pass_rate_ci_high"])),
            _td(f"{r['pass_to_fail']} / {r['fail_to_pass']}"),
            _td(_f4(r["p_holm"])),
        ]
        for r in c.metrics.iter_rows(named=True)
    ]
    parts = [
        f'<div class="ef-report"><style>{CSS}</style><h2>{title}</h2>',
        f'<div class="ef-kpis">{"".join(chips)}</div>',
        "<h3>Metrics</h3>",
        _table(
            [
                "metric", "mean before", "mean after", "Δ mean", "pass-rate before",
                "pass-rate after", "Δ pass-rate", "pass→fail / fail→pass", "p (Holm)",
            ],
            metric_rows,
        ),
    ]  # fmt: skip
    moved = c.cohorts.filter(
        (pl.col("mean_delta").fill_null(0) != 0) | (pl.col("pass_rate_delta").fill_null(0) != 0)
    )
    if moved.height:
        parts += [
            "<h3>Cohorts that moved</h3>",
            _table(
                ["cohort", "metric", "Δ mean", "Δ pass-rate", "p (Holm)"],
                [
                    [
                        _td(_e(r["label"]), cls="ef-text"),
                        _td(f"<code>{_e(r['metric'])}</code>", cls="ef-text"),
                        _delta_td(r["mean_delta"]),
                        _delta_td(r["pass_rate_delta"]),
                        _td(_f4(r["p_holm"])),
                    ]
                    for r in moved.iter_rows(named=True)
                ],
            ),
        ]
    worst = c.regressions()
    parts.append("<h3>Regressed rows</h3>")
    if worst.height:
        parts.append(
            _table(
                ["sample", "confident", "Δ pass-rate", "Δ score", "pass-rate", "score"],
                [
                    [
                        _td(f"<code>{_e(r['sample_id'])}</code>"),
                        _td("yes" if r["confident"] else "no"),
                        _delta_td(r["pass_rate_delta"]),
                        _delta_td(r["score_delta"]),
                        _td(f"{_f4(r['before_pass_rate'])} → {_f4(r['after_pass_rate'])}"),
                        _td(f"{_f4(r['before_score_mean'])} → {_f4(r['after_score_mean'])}"),
                    ]
                    for r in worst.head(max_rows).iter_rows(named=True)
                ],
            )
        )
        if worst.height > max_rows:
            parts.append(f'<p class="ef-muted">… and {worst.height - max_rows} more.</p>')
    else:
        parts.append('<p class="ef-muted">None.</p>')
    parts.append("</div>")
    return "\n".join(parts)


def comparison_text(comparison: Comparison) -> str:
    """A comparison as plain text: counts, macro-F1 and per-metric deltas."""
    c = comparison
    counts = c.counts
    lines = [
        f"comparison {c.before.run_id} ({c.label}) -> {c.after.run_id} — {c.after.dataset.name}",
        f"macro-F1 {_f4(c.macro_f1['before'])} -> {_f4(c.macro_f1['after'])} "
        f"({_signed(c.macro_f1['delta'])}) · {counts['regressed']} regressed · "
        f"{counts['improved']} improved · {counts['stable']} stable",
        "",
    ]
    lines += _text_table(
        ["metric", "mean before", "mean after", "delta mean", "pass-rate delta", "p (Holm)"],
        [
            [
                r["metric"],
                _f4(r["before_mean"]),
                _f4(r["after_mean"]),
                _signed(r["mean_delta"]),
                _signed(r["pass_rate_delta"]),
                _f4(r["p_holm"]),
            ]
            for r in c.metrics.iter_rows(named=True)
        ],
    )
    return "\n".join(lines)
