"""Online monitoring as text and a self-contained SVG chart of the daily pass rate."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from evalframe.views._format import f4, text_table
from evalframe.views._xml import xml_text

if TYPE_CHECKING:
    import polars as pl

    from evalframe.engine._online import OnlineStatus

__all__ = ["status_text", "trend_svg"]


def status_text(status: OnlineStatus, trend: pl.DataFrame) -> str:
    """The window's verdict, then the daily trend as a plain table."""
    verdict = (
        f"DROPPED: pass rate {f4(status.pass_rate)} < {status.threshold:g} over the latest "
        f"{status.sample_count} scores"
        if status.dropped
        else (
            f"ok: pass rate {f4(status.pass_rate)} over the latest {status.sample_count} scores "
            f"(alert below {status.threshold:g} with at least {status.min_samples})"
        )
    )
    lines = [f"{status.dataset}: {verdict} (window {status.window})"]
    if trend.height:
        lines += ["", "daily pass rate (UTC):"]
        lines += text_table(
            ["date", "pass_rate", "total", "passed"],
            [(str(d), f4(r), t, p) for d, r, t, p in trend.iter_rows()],  # one per day
        )
    return "\n".join(lines) + "\n"


def trend_svg(dataset: str, trend: pl.DataFrame, threshold: float) -> str:
    """A small self-contained SVG line chart of the daily pass rate and the alert line.

    Examples:
        >>> import datetime as dt, polars as pl
        >>> t = pl.DataFrame({"date": [dt.date(2026, 1, 1)], "pass_rate": [0.9],
        ...                   "total": [10], "passed": [9]})
        >>> trend_svg("faq", t, 0.8).startswith("<svg")
        True
    """
    width, height, pad = 640, 240, 40
    rows = list(trend.iter_rows(named=True))  # one per day, at most 365
    n = max(len(rows) - 1, 1)

    def x(i: int) -> float:
        return pad + (width - 2 * pad) * (i / n if len(rows) > 1 else 0.5)

    def y(v: float) -> float:
        return height - pad - (height - 2 * pad) * v

    points = " ".join(f"{x(i):.1f},{y(r['pass_rate']):.1f}" for i, r in enumerate(rows))
    dots = "".join(
        f'<circle cx="{x(i):.1f}" cy="{y(r["pass_rate"]):.1f}" r="3" fill="#1f77b4">'
        f"<title>{r['date']}: {r['pass_rate']:.4f} ({r['passed']}/{r['total']})</title></circle>"
        for i, r in enumerate(rows)
    )
    labels = ""
    if rows:
        labels = (
            f'<text x="{pad}" y="{height - 10}" font-size="11">{rows[0]["date"]}</text>'
            f'<text x="{width - pad}" y="{height - 10}" font-size="11" text-anchor="end">'
            f"{rows[-1]['date']}</text>"
        )
    title = html.escape(xml_text(f"{dataset}: daily pass rate"))
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="{title}"><title>{title}</title>'
        f'<rect width="{width}" height="{height}" fill="white"/>'
        f'<line x1="{pad}" y1="{y(0):.1f}" x2="{width - pad}" y2="{y(0):.1f}" stroke="#999"/>'
        f'<line x1="{pad}" y1="{y(1):.1f}" x2="{width - pad}" y2="{y(1):.1f}" stroke="#ddd"/>'
        f'<line x1="{pad}" y1="{y(threshold):.1f}" x2="{width - pad}" y2="{y(threshold):.1f}" '
        f'stroke="#d62728" stroke-dasharray="4 3"><title>alert below {threshold:g}</title></line>'
        f'<text x="4" y="{y(1) + 4:.1f}" font-size="11">1.0</text>'
        f'<text x="4" y="{y(0) + 4:.1f}" font-size="11">0.0</text>'
        f'<polyline points="{points}" fill="none" stroke="#1f77b4" stroke-width="2"/>'
        f"{dots}{labels}</svg>\n"
    )
