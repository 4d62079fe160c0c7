"""A comparison of two runs as an HTML fragment or as plain text."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from evalframe.core import schema as C
from evalframe.views._format import f4, signed, text_table
from evalframe.views._html._diff import word_diff
from evalframe.views._html._parts import CSS, MAX_FAILURES, escape, table, td

if TYPE_CHECKING:
    from evalframe.core._compare import Comparison

__all__ = ["comparison_html", "comparison_page", "comparison_text"]


def _ci(low: Any, high: Any) -> str:
    if low is None or high is None:
        return ""
    return f'<span class="ef-muted">[{float(low):+.4f}, {float(high):+.4f}]</span>'


def _delta_td(value: Any, extra: str = "") -> str:
    sign = None
    if isinstance(value, float):
        sign = "ef-up" if value > 0 else ("ef-down" if value < 0 else None)
    return td(f"{signed(value)} {extra}".strip(), cls=sign)


_COUNTS = (
    ("regressed_pairs", "regressed pairs"),
    ("regressed", "rows regressed"),
    ("regressed_confident", "beyond noise"),
    ("newly_failing", "newly failing"),
    ("improved", "improved"),
    ("stable", "stable"),
    ("added", "added"),
    ("removed", "removed"),
)


def _heading(c: Comparison) -> list[str]:
    """The title, then the macro-F1 move and the row verdict counts as chips."""
    counts, mf = c.counts, c.macro_f1
    title = (
        f"Comparison — {escape(c.after.dataset.name)}: <code>{escape(c.before.run_id)}</code> "
        f"({escape(c.label)}) → <code>{escape(c.after.run_id)}</code>"
    )
    chips = [
        f'<span class="ef-headline">{signed(mf["delta"])}</span>'
        '<span class="ef-muted" style="align-self:flex-end">macro-F1 '
        f"{f4(mf['before'])} → {f4(mf['after'])} {_ci(mf.get('ci_low'), mf.get('ci_high'))}"
        "</span>"
    ]
    for key, label in _COUNTS:
        cls = ' class="ef-down"' if key.startswith(("regressed", "newly")) and counts[key] else ""
        chips.append(f"<span{cls}><b>{counts[key]}</b> {label}</span>")
    return [
        f'<div class="ef-report"><style>{CSS}</style><h2>{title}</h2>',
        f'<div class="ef-kpis">{"".join(chips)}</div>',
    ]


def _metrics(c: Comparison) -> list[str]:
    rows = [
        [
            td(f"<code>{escape(r['metric'])}</code>"),
            td(f4(r["before_mean"])),
            td(f4(r["after_mean"])),
            _delta_td(r["mean_delta"], _ci(r["mean_ci_low"], r["mean_ci_high"])),
            td(f4(r["before_pass_rate"])),
            td(f4(r["after_pass_rate"])),
            _delta_td(r["pass_rate_delta"], _ci(r["pass_rate_ci_low"], r["pass_rate_ci_high"])),
            td(f"{r['pass_to_fail']} / {r['fail_to_pass']}"),
            td(f4(r["p_holm"])),
        ]
        for r in c.metrics.iter_rows(named=True)
    ]
    headers = [
        "metric", "mean before", "mean after", "Δ mean", "pass-rate before", "pass-rate after",
        "Δ pass-rate", "pass→fail / fail→pass", "p (Holm)",
    ]  # fmt: skip
    return ["<h3>Metrics</h3>", table(headers, rows)]


def _cohorts(c: Comparison) -> list[str]:
    moved = c.cohorts.filter(
        (pl.col("mean_delta").fill_null(0) != 0) | (pl.col("pass_rate_delta").fill_null(0) != 0)
    )
    if not moved.height:
        return []
    rows = [
        [
            td(escape(r["label"]), cls="ef-text"),
            td(f"<code>{escape(r['metric'])}</code>", cls="ef-text"),
            _delta_td(r["mean_delta"]),
            _delta_td(r["pass_rate_delta"]),
            td(f4(r["p_holm"])),
        ]
        for r in moved.iter_rows(named=True)
    ]
    headers = ["cohort", "metric", "Δ mean", "Δ pass-rate", "p (Holm)"]
    return ["<h3>Cohorts that moved</h3>", table(headers, rows)]


def _regressed_rows(c: Comparison, max_rows: int) -> list[str]:
    worst = c.regressions()
    if not worst.height:
        return ["<h3>Regressions (row, metric)</h3>", '<p class="ef-muted">None.</p>']
    rows = [
        [
            td(f"<code>{escape(r['sample_id'])}</code>"),
            td(f"<code>{escape(r['metric'])}</code>"),
            td("yes" if r["confident"] else "no"),
            _delta_td(r["pass_rate_delta"]),
            _delta_td(r["score_delta"]),
            td(f"{f4(r['before_pass_rate'])} → {f4(r['after_pass_rate'])}"),
            td(f"{f4(r['before_score_mean'])} → {f4(r['after_score_mean'])}"),
        ]
        for r in worst.head(max_rows).iter_rows(named=True)
    ]
    headers = ["sample", "metric", "confident", "Δ pass-rate", "Δ score", "pass-rate", "score"]
    out = ["<h3>Regressions (row, metric)</h3>", table(headers, rows)]
    if worst.height > max_rows:
        out.append(f'<p class="ef-muted">… and {worst.height - max_rows} more.</p>')
    return out


_CASE_CSS = """
.ef-cmp .ef-cmp-case{border:1px solid #d8dee4;border-radius:4px;padding:6px 10px;margin:6px 0}
.ef-cmp .ef-cmp-pair{display:grid;grid-template-columns:1fr 1fr;gap:10px}
.ef-cmp pre{white-space:pre-wrap;word-break:break-word;background:#f6f8fa;padding:6px 8px;
  border-radius:4px;margin:2px 0;font-size:12px;max-height:240px;overflow:auto}
.ef-cmp ins{background:#ccffd8;text-decoration:none}
.ef-cmp del{background:#ffd7d5;text-decoration:none}
.ef-cmp h4{margin:2px 0;font-size:12px;color:#57606a;font-weight:600}
""".strip()


def _outputs(run: Any, ids: list[str]) -> dict[str, str | None]:
    """Each sample's actual output in its first repetition."""
    rows = (
        run.frame.filter(pl.col(C.SAMPLE_ID).is_in(ids))
        .sort(C.REPETITION)
        .unique(C.SAMPLE_ID, keep="first", maintain_order=True)
    )
    return dict(zip(rows.get_column(C.SAMPLE_ID), rows.get_column(C.ACTUAL_OUTPUT), strict=True))


def _cases(c: Comparison, status: str, max_rows: int) -> list[str]:
    """The rows whose metrics regressed (or improved), worst (or best) first, each with its
    moved metrics and both outputs side by side, word-diffed."""
    moved = c.row_metrics.filter(pl.col("status") == status)
    title = "Regressed rows" if status == "regressed" else "Improved rows"
    if not moved.height:
        return [f"<h3>{title}</h3>", '<p class="ef-muted">None.</p>']
    sign = 1 if status == "regressed" else -1
    per_row = (
        moved.group_by(C.SAMPLE_ID, maintain_order=True)
        .agg(
            pl.col(C.METRIC),
            pl.col("pass_rate_delta"),
            pl.col("score_delta"),
            (sign * pl.col("pass_rate_delta")).min().alias("_p"),
            (sign * pl.col("score_delta")).min().alias("_s"),
        )
        .sort(["_p", "_s", C.SAMPLE_ID], nulls_last=True)
    )
    shown = per_row.head(max_rows)
    ids = shown.get_column(C.SAMPLE_ID).to_list()
    before, after = _outputs(c.before, ids), _outputs(c.after, ids)
    out = [
        f"<h3>{title}</h3>",
        f'<p class="ef-muted">{shown.height} of {per_row.height} rows shown; outputs of the '
        "first repetition, words removed in red and added in green.</p>",
    ]
    for sid, metrics, dp, ds, _, _ in shown.iter_rows():  # at most max_rows cases
        moves = "; ".join(
            f"<code>{escape(m)}</code> pass-rate {signed(p)}, score {signed(s)}"
            for m, p, s in zip(metrics, dp, ds, strict=True)
        )
        left, right = word_diff(before.get(sid), after.get(sid))
        out.append(
            f'<div class="ef-cmp-case" data-status="{status}" data-sample="{escape(sid)}">'
            f"<div><code>{escape(sid)}</code> {moves}</div>"
            f'<div class="ef-cmp-pair"><div><h4>before ({escape(c.before.run_id)})</h4>'
            f'<pre class="ef-cmp-before">{left}</pre></div>'
            f"<div><h4>after ({escape(c.after.run_id)})</h4>"
            f'<pre class="ef-cmp-after">{right}</pre></div></div></div>'
        )
    return out


def comparison_html(comparison: Comparison, *, max_rows: int = MAX_FAILURES) -> str:
    """A comparison of two runs as an HTML fragment (``Comparison._repr_html_``).

    Row verdict counts, macro-F1 before and after with its paired interval, per-metric
    deltas with bootstrap intervals and Holm-adjusted p-values, the cohorts that moved, the
    worst regressed (row, metric) pairs, then the regressed and the improved rows with both
    outputs side by side (at most ``max_rows`` of each).
    """
    c = comparison
    parts = [
        *_heading(c),
        *_metrics(c),
        *_cohorts(c),
        *_regressed_rows(c, max_rows),
        f'<div class="ef-cmp"><style>{_CASE_CSS}</style>',
        *_cases(c, "regressed", max_rows),
        *_cases(c, "improved", max_rows),
        "</div></div>",
    ]
    return "\n".join(parts)


def comparison_page(comparison: Comparison, *, max_rows: int = MAX_FAILURES) -> str:
    """The comparison as one self-contained HTML file (no script, no network)."""
    from evalframe.views._html._page import document

    c = comparison
    title = f"evalframe comparison — {c.before.run_id} → {c.after.run_id}"
    return document(title, comparison_html(c, max_rows=max_rows))


def comparison_text(comparison: Comparison) -> str:
    """A comparison as plain text: counts, macro-F1 and per-metric deltas."""
    c = comparison
    counts = c.counts
    lines = [
        f"comparison {c.before.run_id} ({c.label}) -> {c.after.run_id} — {c.after.dataset.name}",
        f"macro-F1 {f4(c.macro_f1['before'])} -> {f4(c.macro_f1['after'])} "
        f"({signed(c.macro_f1['delta'])}) · {counts['regressed_pairs']} regressed pairs · rows: "
        f"{counts['regressed']} regressed, {counts['improved']} improved, "
        f"{counts['stable']} stable",
        "",
    ]
    lines += text_table(
        ["metric", "mean before", "mean after", "delta mean", "pass-rate delta", "p (Holm)"],
        [
            [
                r["metric"],
                f4(r["before_mean"]),
                f4(r["after_mean"]),
                signed(r["mean_delta"]),
                signed(r["pass_rate_delta"]),
                f4(r["p_holm"]),
            ]
            for r in c.metrics.iter_rows(named=True)
        ],
    )
    return "\n".join(lines)
