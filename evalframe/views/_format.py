"""Number formats and Markdown and plain-text tables, shared by every view."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "f4",
    "fmt",
    "has_counts",
    "md_cell",
    "md_table",
    "one_line",
    "points",
    "signed",
    "stat_cells",
    "text_table",
]


def fmt(x: Any, spec: str = ".4f") -> str:
    """A number with ``spec``, or ``n/a`` for null."""
    return "n/a" if x is None else format(float(x), spec)


def f4(x: Any) -> str:
    """Four decimals, or ``n/a``."""
    return fmt(x)


def signed(x: Any) -> str:
    """Four decimals with a sign, or ``n/a``."""
    return fmt(x, "+.4f")


def points(x: float) -> str:
    """A fraction as percentage points, trailing zeros dropped (``0.05`` -> ``5 pts``)."""
    return f"{x * 100:.1f}".rstrip("0").rstrip(".") + " pts"


def stat_cells(m: Mapping[str, Any]) -> list[str]:
    """A metric block's mean, p50, p95 and pass-rate, four decimals each."""
    return [f4(m[k]) for k in ("mean", "p50", "p95", "pass_rate")]


def has_counts(doc: Mapping[str, Any], keys: Sequence[str] = ("n_scored",)) -> bool:
    """Whether every metric block carries ``keys``, evalframe's additions to eval-harness."""
    return all(all(k in m for k in keys) for m in doc["metrics"].values())


def one_line(value: Any, *, escape_html: bool = False) -> str:
    """``value`` as text on one line, whitespace collapsed, HTML-escaped on request."""
    text = " ".join(str(value).split())
    return html.escape(text, quote=False) if escape_html else text


def md_cell(value: Any, *, escape_html: bool = False) -> str:
    """A Markdown table cell: one line with backslashes, ``|`` and backticks escaped."""
    text = one_line(value, escape_html=escape_html)
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("`", "\\`")


def md_table(
    headers: Sequence[str], rows: Sequence[Sequence[Any]], *, escape_html: bool = False
) -> list[str]:
    """A Markdown table's lines; headers are written as given, cells through ``md_cell``."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += [
        "| " + " | ".join(md_cell(c, escape_html=escape_html) for c in row) + " |" for row in rows
    ]
    return lines


def text_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """A plain-text table's lines: columns left-aligned, two spaces apart."""
    cells = [[str(h) for h in headers], *[[str(c) for c in r] for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
