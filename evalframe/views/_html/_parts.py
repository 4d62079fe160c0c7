"""The pieces every HTML view shares: the stylesheet, escaping, cells, bars and histograms."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["CSS", "MAX_FAILURES", "bar", "colour", "escape", "script_json", "spark", "table", "td"]

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
.ef-report .ef-status{margin:2px 0 6px;padding:4px 8px;background:#ffebe9;
  border-left:4px solid #cf222e}
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


def escape(value: Any) -> str:
    return html.escape(str(value), quote=True)


def colour(value: float | None) -> str:
    """A light red-amber-green background for a value in [0, 1]; grey for null."""
    if value is None:
        return "#eaeef2"
    hue = round(120 * min(1.0, max(0.0, float(value))))
    return f"hsl({hue},62%,82%)"


def bar(value: float | None, width: int = 60) -> str:
    if value is None:
        return ""
    filled = round(width * min(1.0, max(0.0, float(value))))
    return (
        f'<span class="ef-bar" style="width:{filled}px"></span>'
        f'<span class="ef-bar ef-bg" style="width:{width - filled}px;margin-left:-6px"></span>'
    )


def spark(buckets: Sequence[Mapping[str, Any]], *, width: int = 120, height: int = 26) -> str:
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


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, cls: str = "ef-table") -> str:
    """A table from pre-escaped cells."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(row) + "</tr>" for row in rows)
    return (
        f'<div class="{cls}"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


def td(value: Any, *, cls: str | None = None, style: str | None = None, title: str = "") -> str:
    attrs = f' class="{cls}"' if cls else ""
    attrs += f' style="{style}"' if style else ""
    attrs += f' title="{escape(title)}"' if title else ""
    return f"<td{attrs}>{value}</td>"


def script_json(data: Any) -> str:
    r"""``data`` as JSON to put inside a ``<script>`` element, whatever its strings hold.

    No ``<`` at all (``</script>`` would close the element, and ``<!--`` followed by
    ``<script>`` would make the parser skip the real ``</script>``), nor U+2028/U+2029 (line
    breaks to older JavaScript parsers): each is written as its ``\u`` escape, which JSON
    reads back as the same character.

    Examples:
        >>> script_json({"tag": "<!--<script>\u2028"})
        '{"tag":"\\u003c!--\\u003cscript>\\u2028"}'
    """
    import orjson

    text = orjson.dumps(data).decode()
    return text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
