"""Markdown rendering of a ``Comparison`` (the ``evalframe compare`` output)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from evalframe.core import schema as C

# ``fmt`` and ``table`` stay importable from here for the CLI. Unlike the report's Markdown,
# comparison cells are not HTML-escaped: the text has always gone out as it is.
from evalframe.views._format import fmt, signed
from evalframe.views._format import md_table as table

if TYPE_CHECKING:
    from evalframe.core._compare import Comparison
    from evalframe.core._gate import GateResult

__all__ = ["fmt", "gate_text", "render", "row_table", "table"]


def _interval(low: float | None, high: float | None) -> str:
    return "n/a" if low is None or high is None else f"[{low:+.4f}, {high:+.4f}]"


def _p(x: float | None) -> str:
    if x is None:
        return "n/a"
    return f"{x:.2e}" if x < 1e-4 else f"{x:.4f}"


def row_table(rows: pl.DataFrame) -> list[str]:
    """Regressed (row, metric) pairs: sample | metric | pass rate before -> after | score delta
    | beyond noise | newly failing (rows without a metric column show the row verdicts)."""
    pairs = C.METRIC in rows.columns
    body = [
        (
            r["sample_id"],
            *((r[C.METRIC],) if pairs else ()),
            f"{fmt(r['before_pass_rate'])} → {fmt(r['after_pass_rate'])}",
            signed(r["score_delta"]),
            "yes" if r["confident"] else "no",
            "yes" if r["newly_failing"] else "no",
        )
        for r in rows.iter_rows(named=True)
    ]
    headers = (
        "sample",
        *(("metric",) if pairs else ()),
        "pass rate before → after",
        "score delta",
        "beyond noise",
        "newly failing",
    )
    return table(headers, body)


def render(c: Comparison, *, max_rows: int = 20) -> str:
    """The comparison as Markdown, ending in a single newline."""
    counts = c.counts
    stat = "this run's detectable difference" if c.resolution_is_statistical else "epsilon"
    if c.exact:
        stat += "; one repetition on both sides, so every change is exact"
    out = [
        f"# Comparison — {c.after.dataset.name}",
        "",
        f"_Run `{c.after.run_id}` ({c.after.name}) against {c.label} (`{c.before.run_id}`), "
        f"rows joined by {c.join_key}; noise threshold {c.resolution * 100:.1f} points "
        f"({stat})._",
        "",
        "## Rows",
        "",
        *table(
            (
                "regressed (row, metric)",
                "regressed",
                "beyond noise",
                "newly failing",
                "improved",
                "stable",
                "added",
                "removed",
            ),
            [
                (
                    counts["regressed_pairs"],
                    counts["regressed"],
                    counts["regressed_confident"],
                    counts["newly_failing"],
                    counts["improved"],
                    counts["stable"],
                    counts["added"],
                    counts["removed"],
                )
            ],
        ),
        "",
        "## Metrics",
        "",
        f"_Deltas are after - before; intervals are {c.confidence:.0%} paired bootstrap "
        f"({c.n_bootstrap} resamples, seed {c.seed}); p is McNemar's exact test on rows' "
        "pass/fail, Holm-adjusted across metrics and cohorts._",
        "",
    ]
    metric_rows = [
        (
            r["metric"],
            fmt(r["before_mean"]),
            fmt(r["after_mean"]),
            signed(r["mean_delta"]),
            _interval(r["mean_ci_low"], r["mean_ci_high"]),
            fmt(r["before_pass_rate"]),
            fmt(r["after_pass_rate"]),
            signed(r["pass_rate_delta"]),
            _interval(r["pass_rate_ci_low"], r["pass_rate_ci_high"]),
            _p(r["p_value"]),
            _p(r["p_holm"]),
        )
        for r in c.metrics.iter_rows(named=True)
    ]
    out += table(
        (
            "metric",
            "mean before",
            "mean after",
            "Δ mean",
            "CI",
            "pass-rate before",
            "pass-rate after",
            "Δ pass-rate",
            "CI",
            "p",
            "p (Holm)",
        ),
        metric_rows,
    )
    m = c.macro_f1
    out += [
        "",
        f"## Macro-F1: {fmt(m['before'])} → {fmt(m['after'])} ({signed(m['delta'])}, "
        f"paired CI {_interval(m['ci_low'], m['ci_high'])})",
        "",
    ]
    moved = c.cohorts.filter(
        (pl.col("pass_rate_delta").abs() > 0) | (pl.col("mean_delta").abs() > c.resolution)
    )
    if moved.height:
        out += ["## Cohorts that moved", ""]
        out += table(
            ("cohort", "metric", "Δ mean", "Δ pass-rate", "p", "p (Holm)"),
            [
                (
                    r["label"],
                    r["metric"],
                    signed(r["mean_delta"]),
                    signed(r["pass_rate_delta"]),
                    _p(r["p_value"]),
                    _p(r["p_holm"]),
                )
                for r in moved.iter_rows(named=True)
            ],
        )
        out.append("")
    worst = c.regressions()
    if worst.height:
        shown = worst.head(max_rows)
        out += [
            f"## Regressed (row, metric) pairs ({shown.height} of {worst.height}, worst first)",
            "",
        ]
        out += row_table(shown)
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def gate_text(result: GateResult, *, max_rows: int = 10) -> str:
    """A gate's CLI report: the verdict, each failure, the worst rows and safety failures."""
    c = result.comparison
    head = "passed" if result.passed else "FAILED"
    counts = c.counts
    out = [
        f"gate {head}: run {c.after.run_id} against {c.label} (run {c.before.run_id}): "
        f"{counts['regressed_pairs']} (row, metric) regression(s); rows: "
        f"{counts['regressed']} regressed, {counts['improved']} improved, "
        f"{counts['stable']} stable, {counts['added']} added, {counts['removed']} removed; "
        f"macro-F1 {fmt(c.macro_f1['before'])} → {fmt(c.macro_f1['after'])}."
    ]
    out += [f"- {f}" for f in result.failures]
    out += [f"note: {n}" for n in result.notes]
    if result.worst_rows.height:
        shown = result.worst_rows.head(max_rows)
        out += [
            "",
            f"Worst regressions ({shown.height} of {result.worst_rows.height}):",
            "",
        ]
        out += row_table(shown)
    if result.safety_failures.height:
        out += ["", f"Safety failures ({result.safety_failures.height}, all listed):", ""]
        out += table(
            ("sample", "repetition", "metric", "score", "error"),
            [
                (
                    r[C.SAMPLE_ID],
                    r[C.REPETITION],
                    r[C.METRIC],
                    fmt(r[C.SCORE]),
                    r[C.ERROR] or "",
                )
                for r in result.safety_failures.iter_rows(named=True)
            ],
        )
    return "\n".join(out) + "\n"
