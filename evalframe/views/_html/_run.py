"""A run or a report as an HTML fragment (the notebook repr) or as plain text."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import polars as pl

from evalframe.core import schema as C
from evalframe.core.aggregate import status_lines
from evalframe.views._format import attempted, f4, has_counts, stat_cells, text_table
from evalframe.views._html._parts import CSS, MAX_FAILURES, bar, colour, escape, spark, table, td
from evalframe.views._report import failing_rows, headline_of, lower_note
from evalframe.views._report_build import metric_block, metric_sections

if TYPE_CHECKING:
    from evalframe.core._run import Run

__all__ = ["report_html", "report_text", "run_document", "run_html", "run_text"]


def run_document(run: Run, *, buckets: int = 10) -> dict[str, Any]:
    """The report keys a view needs, computed from a run without per-sample detail.

    Building the full report walks every sample; the views only need the aggregates,
    so a notebook repr of a million-row run stays fast.
    """
    metrics, distributions, cohorts = metric_sections(run, metric_block, buckets=buckets)
    failures = run.failures.sort(C.REPETITION, maintain_order=True)
    return {
        "status": run.status,
        "run_id": run.run_id,
        "run_name": run.name,
        "dataset": run.dataset.name,
        "duration_seconds": max(0.0, run.finished_at - run.started_at),
        "total_samples": run.dataset.height,
        "total_executions": run.frame.height,
        "repetitions": run.repetitions,
        "total_failures": failures.height,
        "macro_f1": run.macro_f1,
        "headline": run.headline,
        "metrics": metrics,
        "metric_distributions": distributions,
        "cohorts": cohorts,
        "failures": failures.head(MAX_FAILURES).to_dicts(),
        "failing_samples": _failing_of(run),
        "errored_samples": _errored_of(failures),
    }


def _errored_of(failures: pl.DataFrame) -> list[tuple[str, list[tuple[str, str]]]]:
    """``errored_samples`` from every failure of a run (the document lists only the first)."""
    first = failures.unique([C.SAMPLE_ID, C.METRIC], keep="first", maintain_order=True)
    found: dict[str, list[tuple[str, str]]] = {}
    for sid, metric, error in first.select(C.SAMPLE_ID, C.METRIC, C.ERROR).iter_rows():
        found.setdefault(sid, []).append((metric, error))
    return list(found.items())


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


def _status(doc: Mapping[str, Any]) -> str:
    """The ``INCOMPLETE`` and ``SAFETY FAILED`` lines, above everything else."""
    return "".join(
        f'<p class="ef-status"><b>{escape(line)}</b></p>' for line in status_lines(headline_of(doc))
    )


def _macro_kpi(doc: Mapping[str, Any]) -> str:
    head = headline_of(doc)
    macro, scored = head["macro_f1"], head["macro_f1_scored"]
    label = "macro-F1" if "headline" in doc else "macro-F1 (over scored executions)"
    text = (
        f'<span class="ef-headline">{f4(macro)}</span>'
        f'<span class="ef-muted" style="align-self:flex-end">{label}</span>'
    )
    if "headline" in doc and scored is not None and (macro is None or abs(scored - macro) > 5e-5):
        text += (
            f'<span class="ef-muted" style="align-self:flex-end">({f4(scored)} over scored '
            "executions only)</span>"
        )
    return text


def _header(doc: Mapping[str, Any]) -> str:
    name = doc.get("run_name") or doc.get("dataset")
    title = f"evalframe run — {escape(name)}"
    if doc.get("dataset") and doc.get("dataset") != name:
        title += f' <span class="ef-muted">on {escape(doc["dataset"])}</span>'
    head = headline_of(doc)
    kpis = [
        _macro_kpi(doc),
        f"<span><b>{doc['total_samples']}</b> samples</span>",
        f"<span><b>{doc['total_executions']}</b> executions</span>",
        f"<span><b>{head['errored_executions']}</b> errored</span>",
        f"<span><b>{doc['total_failures']}</b> failures</span>",
        f"<span><b>{float(doc.get('duration_seconds') or 0.0):.2f}</b> s</span>",
    ]
    safety = head.get("safety")
    if safety:
        verdict = "passed" if safety["passed"] else "FAILED"
        kpis.insert(1, f"<span>safety <b>{verdict}</b></span>")
    if doc.get("run_id"):
        kpis.append(f"<span>run <code>{escape(doc['run_id'])}</code></span>")
    return f'{_status(doc)}<h2>{title}</h2><div class="ef-kpis">{"".join(kpis)}</div>'


def _metrics_table(doc: Mapping[str, Any], names: list[str]) -> str:
    """Per-metric aggregates of ``names``; the pass-rate over scored executions beside the
    attempted one when some execution errored."""
    dists = doc.get("metric_distributions") or {}
    extended = has_counts(doc)
    scored = extended and any(
        doc["metrics"][n].get("n_errors") and "pass_rate_attempted" in doc["metrics"][n]
        for n in names
    )
    rows = []
    for name in names:
        m = doc["metrics"][name]
        cells = [td(f"<code>{escape(name)}</code>")]
        if extended:
            cells.append(td(escape(m.get("family", "")), cls="ef-text"))
        rate = attempted(m)
        cells += [td(f4(m["mean"])), td(f4(m["p50"])), td(f4(m["p95"])), td(bar(rate) + f4(rate))]
        if scored:
            cells.append(td(f4(m["pass_rate"])))
        if extended:
            cells += [
                td("" if m.get("threshold") is None else f"{float(m['threshold']):g}"),
                td(str(m["n_scored"])),
                td(str(m["n_errors"])),
            ]
        rows.append([*cells, td(spark(dists.get(name, [])))])
    if extended:
        headers = [
            "metric", "family", "mean", "p50", "p95", "pass-rate",
            *(["of scored"] if scored else []), "threshold", "scored", "errors", "histogram",
        ]  # fmt: skip
    else:
        headers = ["metric", "mean", "p50", "p95", "pass-rate (>= 0.5)", "histogram"]
    return table(headers, rows, cls="ef-metrics")


def _safety_block(doc: Mapping[str, Any]) -> list[str]:
    safety = headline_of(doc).get("safety")
    if not safety:
        return []
    verdict = "passed" if safety["passed"] else "FAILED"
    note = (
        f'<p class="ef-muted">Hard constraints, kept out of macro-F1: '
        f"{safety['failed_executions']} of {safety['executions']} executions failed or "
        f"errored on one ({safety['errored_executions']} errored).</p>"
    )
    return [f"<h3>Safety: {verdict}</h3>", note, _metrics_table(doc, safety["metrics"])]


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
                errors = (m or {}).get("n_errors")
                cells.append(
                    td(
                        "n/a" + (f" ({errors} errored)" if errors else ""),
                        style=f"background:{colour(None)}",
                        title="no execution of the cohort was scored",
                    )
                )
                continue
            rate = attempted(m)
            over = f" over {m['n_scored']} scored" if "n_scored" in m else ""
            errors = f", {m['n_errors']} errored" if m.get("n_errors") else ""
            cells.append(
                td(
                    f4(rate),
                    style=f"background:{colour(rate)}",
                    title=f"mean {f4(m['mean'])}{over}{errors}",
                )
            )
        rows.append(cells)
    return table(["cohort", "executions", *names], rows, cls="ef-cohorts")


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
    found = failing_rows(doc)
    if not found:
        return (
            '<p class="ef-muted">None: every sample was scored and reached each metric\'s '
            "threshold.</p>"
        )
    shown = found[: max(0, max_rows)]
    rows = []
    for sid, errors, failed in shown:
        parts = [f"<code>{escape(name)}</code> errored: {escape(error)}" for name, error in errors]
        parts += [
            f"<code>{escape(name)}</code> {score:.4f} (threshold {t:g}{lower_note(doc, name)})"
            for name, score, t in failed
        ]
        count = len({m for m, _ in errors} | {m for m, _, _ in failed})
        rows.append(
            [td(f"<code>{escape(sid)}</code>"), td(str(count)), td("; ".join(parts), cls="ef-wrap")]
        )
    errored = sum(1 for _, errors, _ in found if errors)
    order = (
        f": {errored} with an errored execution first, then the rest worst first"
        if errored
        else ", worst first"
    )
    note = (
        f'<p class="ef-muted">{len(shown)} of {len(found)} failing samples shown{order} (each '
        "sample's lowest score against each metric's threshold).</p>"
    )
    return note + table(["sample", "metrics failed", "errors and scores below threshold"], rows)


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
    safety = set((headline_of(doc).get("safety") or {}).get("metrics") or ())
    names = [n for n in doc["metrics"] if n not in safety]
    parts = [
        f'<div class="ef-report"><style>{CSS}</style>',
        _header(doc),
        "<h3>Per-metric aggregates</h3>",
        _metrics_table(doc, names) if names else '<p class="ef-muted">No quality metric.</p>',
        *_safety_block(doc),
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
    head = headline_of(doc)
    macro = f"macro-F1 {f4(head['macro_f1'])}"
    scored = head["macro_f1_scored"]
    if "headline" in doc and scored is not None and head["macro_f1"] != scored:
        macro += f" ({f4(scored)} over scored executions only)"
    safety = head.get("safety")
    verdict = f" · safety {'passed' if safety['passed'] else 'FAILED'}" if safety else ""
    lines = [
        *status_lines(head),
        f"evalframe run{run_id} — {name}",
        f"{doc['total_samples']} samples · {doc['total_executions']} executions · "
        f"{head['errored_executions']} errored · {doc['total_failures']} failures · "
        f"{macro}{verdict}",
        "",
    ]
    counts = ["scored", "errors"] if has_counts(doc) else []
    lines += text_table(
        ["metric", "mean", "p50", "p95", "pass-rate", *counts],
        [
            [
                f"{n} (safety)" if n in ((safety or {}).get("metrics") or ()) else n,
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
