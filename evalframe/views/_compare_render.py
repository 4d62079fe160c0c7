"""The comparison and gate as text: Markdown (``Comparison.to_markdown()``, ``evalframe
compare --format markdown``) and the plain-text tables of the CLI (``evalframe compare`` and
``evalframe gate``), fitted to a width."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from evalframe.core import schema as C

# ``fmt`` and ``table`` stay importable from here for the CLI. Unlike the report's Markdown,
# comparison cells are not HTML-escaped: the text has always gone out as it is.
from evalframe.views._format import fit_table, fmt, signed, wrap_text
from evalframe.views._format import md_table as table

if TYPE_CHECKING:
    from evalframe.core._compare import Comparison
    from evalframe.core._gate import GateResult

__all__ = ["comparison_text", "fmt", "gate_text", "render", "row_table", "table"]


@dataclass(frozen=True)
class _Style:
    """Markdown, or plain text no wider than ``width`` (None: unbounded)."""

    markdown: bool
    width: int | None = None

    def title(self, text: str) -> list[str]:
        return [f"# {text}" if self.markdown else text, ""]

    def heading(self, text: str) -> list[str]:
        return [f"## {text}" if self.markdown else f"{text}:", ""]

    def note(self, text: str) -> list[str]:
        return [f"_{text}_"] if self.markdown else wrap_text(text.replace("`", ""), self.width)

    def table(self, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
        return table(headers, rows) if self.markdown else fit_table(headers, rows, self.width)


_MARKDOWN = _Style(markdown=True)


def _interval(low: float | None, high: float | None) -> str:
    return "n/a" if low is None or high is None else f"[{low:+.4f}, {high:+.4f}]"


def _p(x: float | None) -> str:
    if x is None:
        return "n/a"
    return f"{x:.2e}" if x < 1e-4 else f"{x:.4f}"


def row_table(rows: pl.DataFrame, style: _Style = _MARKDOWN) -> list[str]:
    """Regressed (or improved) (row, metric) pairs: sample | metric | pass rate before ->
    after | score delta | beyond noise | newly failing (rows without a metric column show
    the row verdicts)."""
    pairs = C.METRIC in rows.columns
    # Plain text shows pass rates as short as they are exact (one repetition: 1 → 0).
    spec = ".4f" if style.markdown else ".4g"

    def rate(x: float | None) -> str:
        return fmt(x, spec)

    body = [
        (
            r["sample_id"],
            *((r[C.METRIC],) if pairs else ()),
            f"{rate(r['before_pass_rate'])} → {rate(r['after_pass_rate'])}",
            signed(r["score_delta"]),
            "yes" if r["confident"] else "no",
            "yes" if r["newly_failing"] else "no",
        )
        for r in rows.iter_rows(named=True)
    ]
    headers = (
        "sample",
        *(("metric",) if pairs else ()),
        "pass rate before → after" if style.markdown else "pass rate",
        "score delta",
        "beyond noise",
        "newly failing",
    )
    return style.table(headers, body)


def render(c: Comparison, *, max_rows: int = 20) -> str:
    """The comparison as Markdown, ending in a single newline."""
    return _comparison(c, max_rows, _MARKDOWN)


def comparison_text(c: Comparison, *, max_rows: int = 20, width: int | None = None) -> str:
    """The comparison as plain text in the CLI's table style, no wider than ``width``."""
    return _comparison(c, max_rows, _Style(markdown=False, width=width))


def _comparison(c: Comparison, max_rows: int, style: _Style) -> str:
    counts = c.counts
    stat = "this run's detectable difference" if c.resolution_is_statistical else "epsilon"
    if c.resolution >= 1.0:
        stat += "; no change can exceed it, so none is beyond noise"
    out = [
        *style.title(f"Comparison — {c.after.dataset.name}"),
        *style.note(
            f"Run `{c.after.run_id}` ({c.after.name}) against {c.label} (`{c.before.run_id}`), "
            f"rows joined by {c.join_key}; noise threshold {c.resolution * 100:.1f} points "
            f"({stat})."
        ),
        "",
        *style.heading("Rows"),
        *style.note(
            f"{counts['regressed_pairs']} regressed (row, metric) pair(s) on {_pair_rows(c)} "
            "row(s); each row's verdict below weighs all its metrics."
        ),
        "",
        *style.table(
            (
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
        *style.heading("Metrics"),
        *style.note(
            f"Deltas are after - before; intervals are {c.confidence:.0%} paired bootstrap "
            f"({c.n_bootstrap} resamples, seed {c.seed}); p is McNemar's exact test on rows' "
            "pass/fail, Holm-adjusted across metrics and cohorts."
        ),
        "",
    ]
    rows = list(c.metrics.iter_rows(named=True))
    if style.markdown:
        out += style.table(
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
            [(*_means(r), *_pass_rates(r)[1:]) for r in rows],
        )
    else:  # eleven columns do not fit a terminal: means, then pass rates
        out += style.table(("metric", "mean before", "mean after", "Δ mean", "CI"), [
            _means(r) for r in rows
        ])  # fmt: skip
        out.append("")
        out += style.table(
            ("metric", "pass-rate before", "pass-rate after", "Δ pass-rate", "CI", "p",
             "p (Holm)"),
            [_pass_rates(r) for r in rows],
        )  # fmt: skip
    m = c.macro_f1
    macro = (
        f"Macro-F1: {fmt(m['before'])} → {fmt(m['after'])} ({signed(m['delta'])}, "
        f"paired CI {_interval(m['ci_low'], m['ci_high'])})"
    )
    out += ["", *([f"## {macro}"] if style.markdown else wrap_text(macro, style.width)), ""]
    reasons = sorted(
        set(c.metrics.get_column("ci_reason").drop_nulls().to_list())
        | ({m["ci_reason"]} if m.get("ci_reason") else set())
    )
    if reasons:
        out += [*style.note(f"n/a intervals: {'; '.join(reasons)}."), ""]
    moved = c.cohorts.filter(
        (pl.col("pass_rate_delta").abs() > 0) | (pl.col("mean_delta").abs() > c.resolution)
    )
    if moved.height:
        out += style.heading("Cohorts that moved")
        out += style.table(
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
    for kind, pairs in (("Regressed", c.regressions()), ("Improved", _improvements(c))):
        if pairs.height:
            shown = pairs.head(max_rows)
            order = "worst" if kind == "Regressed" else "best"
            out += style.heading(
                f"{kind} (row, metric) pairs ({shown.height} of {pairs.height}, {order} first)"
            )
            out += row_table(shown, style)
            out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def _pair_rows(c: Comparison) -> int:
    """Rows with a regressed (row, metric) pair."""
    return int(c.regressions().get_column(C.SAMPLE_ID).n_unique())


def _means(r: dict[str, Any]) -> tuple[str, ...]:
    return (
        r["metric"],
        fmt(r["before_mean"]),
        fmt(r["after_mean"]),
        signed(r["mean_delta"]),
        _interval(r["mean_ci_low"], r["mean_ci_high"]),
    )


def _pass_rates(r: dict[str, Any]) -> tuple[str, ...]:
    return (
        r["metric"],
        fmt(r["before_pass_rate"]),
        fmt(r["after_pass_rate"]),
        signed(r["pass_rate_delta"]),
        _interval(r["pass_rate_ci_low"], r["pass_rate_ci_high"]),
        _p(r["p_value"]),
        _p(r["p_holm"]),
    )


def _improvements(c: Comparison) -> pl.DataFrame:
    """Improved (row, metric) pairs, best first (largest pass-rate gain, then score gain)."""
    return c.row_metrics.filter(pl.col("status") == "improved").sort(
        ["pass_rate_delta", "score_delta", C.SAMPLE_ID, C.METRIC],
        descending=[True, True, False, False],
        nulls_last=True,
    )


def gate_text(result: GateResult, *, max_rows: int = 10, width: int | None = None) -> str:
    """A gate's CLI report: the verdict, each failure, the worst rows and safety failures; the
    tables in the CLI's style no wider than ``width`` (None: unbounded)."""
    c = result.comparison
    head = "passed" if result.passed else "FAILED"
    counts = c.counts
    rows = _pair_rows(c)
    # The verdict, each failure and each note stay one line apiece (CI logs grep them).
    line = (
        f"gate {head}: run {c.after.run_id} against {c.label} (run {c.before.run_id}): "
        f"{counts['regressed_pairs']} regressed pair(s) on {rows} row(s); row verdicts: "
        f"{counts['regressed']} regressed, {counts['improved']} improved, "
        f"{counts['stable']} stable, {counts['added']} added, {counts['removed']} removed"
    )
    if rows != counts["regressed"]:
        line += (
            f" (a row's verdict weighs all its metrics: {rows} row(s) have a regressed pair, "
            f"{counts['regressed']} regressed overall)"
        )
    out = [f"{line}; macro-F1 {fmt(c.macro_f1['before'])} → {fmt(c.macro_f1['after'])}."]
    out += [f"- {f}" for f in result.failures]
    out += [f"note: {n}" for n in result.notes]
    style = _Style(markdown=False, width=width)
    if result.worst_rows.height:
        shown = result.worst_rows.head(max_rows)
        out += [
            "",
            f"Worst regressed pairs ({shown.height} of {result.worst_rows.height}):",
            "",
        ]
        out += row_table(shown, style)
    if result.safety_failures.height:
        out += ["", f"Safety failures ({result.safety_failures.height}, all listed):", ""]
        out += style.table(
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
