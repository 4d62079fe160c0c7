"""A run or a report as an HTML fragment (the notebook repr) or as plain text."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import polars as pl

from evalframe.core import schema as C
from evalframe.views._format import f4, has_counts, stat_cells, text_table
from evalframe.views._html._parts import CSS, MAX_FAILURES, bar, colour, escape, spark, table, td
from evalframe.views._report import failing_samples, lower_note, metric_sections

if TYPE_CHECKING:
    from evalframe.core._run import Run

__all__ = ["report_html", "report_text", "run_document", "run_html", "run_text"]


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
        "failing_samples": _failing_of(run),
    }


def _failing_of(run: Run) -> list[tuple[str, list[tuple[str, float, float]]]]:
    """``failing_samples`` from ``Run.failing()``: each sample's worst score per metric (its
    lowest, or its highest for a lower-is-better metric)."""
    low = [m.id for m in run.metrics if not m.higher_is_better]
    is_low = pl.col(C.METRIC).is_in(low)
    below = (
        run.failing()
        .filter(pl.col(C.ERROR).is_null())
        .group_by(C.SAMPLE_ID, C.METRIC)
        .agg(
            pl.when(is_low.first())
            .then(pl.col(C.SCORE).max())
            .otherwise(pl.col(C.SCORE).min())
            .alias(C.SCORE),
            pl.col("threshold").first(),
        )
        .with_columns(
            pl.when(is_low)
            .then(pl.col("threshold") - pl.col(C.SCORE))
            .otherwise(pl.col(C.SCORE) - pl.col("threshold"))
            .alias("_short")
        )
        .sort("_short", C.SAMPLE_ID, C.METRIC)
    )
    per: dict[str, list[tuple[str, float, float, float]]] = {}
    for sid, metric, score, threshold, short in below.iter_rows():  # failing pairs only
        per.setdefault(sid, []).append((metric, score, threshold, short))
    ranked = sorted(per.items(), key=lambda p: (p[1][0][3], -len(p[1]), p[0]))
    return [(sid, [(m, s, t) for m, s, t, _ in failed]) for sid, failed in ranked]


def _header(doc: Mapping[str, Any]) -> str:
    name = doc.get("run_name") or doc.get("dataset")
    title = f"evalframe run — {escape(name)}"
    if doc.get("dataset") and doc.get("dataset") != name:
        title += f' <span class="ef-muted">on {escape(doc["dataset"])}</span>'
    kpis = [
        f'<span class="ef-headline">{doc["macro_f1"]:.4f}</span>'
        '<span class="ef-muted" style="align-self:flex-end">macro-F1</span>',
        f"<span><b>{doc['total_samples']}</b> samples</span>",
        f"<span><b>{doc['total_executions']}</b> executions</span>",
        f"<span><b>{doc['total_failures']}</b> failures</span>",
        f"<span><b>{float(doc.get('duration_seconds') or 0.0):.2f}</b> s</span>",
    ]
    if doc.get("run_id"):
        kpis.append(f"<span>run <code>{escape(doc['run_id'])}</code></span>")
    return f'<h2>{title}</h2><div class="ef-kpis">{"".join(kpis)}</div>'


def _metrics_table(doc: Mapping[str, Any]) -> str:
    dists = doc.get("metric_distributions") or {}
    # Only n_scored decides: run_document's blocks carry the counts but no threshold.
    extended = has_counts(doc)
    rows = []
    for name, m in doc["metrics"].items():
        cells = [td(f"<code>{escape(name)}</code>")]
        if extended:
            cells.append(td(escape(m.get("family", "")), cls="ef-text"))
        cells += [
            td(f4(m["mean"])),
            td(f4(m["p50"])),
            td(f4(m["p95"])),
            td(bar(m["pass_rate"]) + f4(m["pass_rate"])),
        ]
        if extended:
            cells += [
                td("" if m.get("threshold") is None else f"{float(m['threshold']):g}"),
                td(str(m["n_scored"])),
                td(str(m["n_errors"])),
            ]
        rows.append([*cells, td(spark(dists.get(name, [])))])
    if extended:
        headers = [
            "metric", "family", "mean", "p50", "p95", "pass-rate", "threshold", "scored",
            "errors", "histogram",
        ]  # fmt: skip
    else:
        headers = ["metric", "mean", "p50", "p95", "pass-rate (>= 0.5)", "histogram"]
    return table(headers, rows, cls="ef-metrics")


def _cohort_table(doc: Mapping[str, Any]) -> str:
    """Cohort x metric pass-rates as a heatmap table (mean and count in each tooltip)."""
    names = list(doc["metrics"])
    rows = []
    for c in doc["cohorts"]:
        cells = [
            td(escape(c["label"]), cls="ef-text"),
            td(str(c["sample_count"])),
        ]
        for name in names:
            m = c["metrics"].get(name)
            # eval-harness cohorts carry no counts: a metric absent from a cohort is zeros.
            if m is None or not m.get("n_scored", 1):
                cells.append(td("&ndash;", style=f"background:{colour(None)}"))
                continue
            over = f" over {m['n_scored']} scored" if "n_scored" in m else ""
            cells.append(
                td(
                    f4(m["pass_rate"]),
                    style=f"background:{colour(m['pass_rate'])}",
                    title=f"mean {f4(m['mean'])}{over}",
                )
            )
        rows.append(cells)
    return table(["cohort", "samples", *names], rows, cls="ef-cohorts")


def _failures_list(doc: Mapping[str, Any]) -> str:
    failures = doc["failures"]
    total = int(doc.get("total_failures", len(failures)))
    if not failures:
        return '<p class="ef-muted">None.</p>'
    rows = [
        [
            td(f"<code>{escape(f['sample_id'])}</code>"),
            td(str(f.get("repetition", 0))),
            td(f"<code>{escape(f['metric'])}</code>", cls="ef-text"),
            td(escape(f["error"]), cls="ef-wrap"),
        ]
        for f in failures[:MAX_FAILURES]
    ]
    more = total - len(rows)
    tail = f'<p class="ef-muted">… and {more} more.</p>' if more > 0 else ""
    return table(["sample", "repetition", "metric", "error"], rows) + tail


def _failing_table(doc: Mapping[str, Any], max_rows: int) -> str:
    found = failing_samples(doc)
    if not found:
        return '<p class="ef-muted">None: every scored sample reached each metric\'s threshold.</p>'
    shown = found[: max(0, max_rows)]
    rows = [
        [
            td(f"<code>{escape(sid)}</code>"),
            td(str(len(failed))),
            td(
                "; ".join(
                    f"<code>{escape(name)}</code> {score:.4f} "
                    f"(threshold {t:g}{lower_note(doc, name)})"
                    for name, score, t in failed
                ),
                cls="ef-wrap",
            ),
        ]
        for sid, failed in shown
    ]
    note = (
        f'<p class="ef-muted">{len(shown)} of {len(found)} failing samples shown, worst '
        "first (each sample's lowest score against each metric's threshold).</p>"
    )
    return note + table(["sample", "metrics failed", "scores below threshold"], rows)


def report_html(doc: Mapping[str, Any], *, charts: str = "", max_rows: int = 20) -> str:
    """An HTML fragment for a report document: header, metrics, cohorts, failing samples,
    execution errors.

    Args:
        doc: a report (``Run.report()``, a report JSON read back) or ``run_document(run)``.
        charts: extra HTML placed after the cohort table (the page's Vega-Lite charts).
        max_rows: the failing samples listed, worst first.

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
    parts += ["<h3>Failing samples</h3>", _failing_table(doc, max_rows)]
    parts += ["<h3>Execution errors</h3>", _failures_list(doc), "</div>"]
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
    counts = ["scored", "errors"] if has_counts(doc) else []
    lines += text_table(
        ["metric", "mean", "p50", "p95", "pass-rate", *counts],
        [
            [
                n,
                *stat_cells(m),
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
