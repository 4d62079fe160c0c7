"""The viewer's page shell and the small pieces every page uses: links, pagers, chips.

Every value that came from a user (run names, labels, sample ids, inputs, outputs, notes,
the SQL text) reaches a page through ``escape`` (or ``url`` for a link), never as markup;
scripts come only from ``/assets/`` (the Content-Security-Policy allows no inline script),
and data a script reads sits in ``<script type="application/json">`` with every ``<``
escaped.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final
from urllib.parse import quote, urlencode

from evalframe.views._format import f4
from evalframe.views._html._parts import CSS, escape

__all__ = [
    "chips",
    "escape",
    "json_script",
    "link",
    "option",
    "page",
    "pager",
    "run_url",
    "status_badges",
    "url",
    "when",
]

NAV: Final = (
    ("/", "Runs"),
    ("/trends", "Trends"),
    ("/online", "Online"),
    ("/adversarial", "Adversarial"),
    ("/sql", "SQL"),
)

VIEW_CSS: Final = """
body{margin:0;background:#fff}
.ef-nav{display:flex;gap:16px;align-items:center;padding:8px 16px;background:#24292f;
  font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;font-size:14px}
.ef-nav a{color:#f0f3f6;text-decoration:none}
.ef-nav a.ef-here{font-weight:700;text-decoration:underline}
.ef-nav .ef-brand{font-weight:700;margin-right:8px}
.ef-nav .ef-store{margin-left:auto;color:#9198a1;font-size:12px}
main.ef-report{padding:8px 16px 40px;max-width:1400px}
.ef-report a{color:#0969da}
.ef-report form.ef-filters{display:flex;flex-wrap:wrap;gap:8px;align-items:flex-end;margin:6px 0}
.ef-report form label{display:flex;flex-direction:column;font-size:12px;color:#57606a}
.ef-report input,.ef-report select,.ef-report textarea,.ef-report button{font:inherit;
  padding:3px 6px;border:1px solid #d0d7de;border-radius:4px;background:#fff}
.ef-report button{cursor:pointer;background:#f6f8fa}
.ef-report button.ef-primary{background:#1f883d;color:#fff;border-color:#1a7f37}
.ef-report .ef-chip{display:inline-block;padding:0 6px;margin:1px 2px;border-radius:10px;
  background:#ddf4ff;color:#0a3069;font-size:12px;white-space:nowrap}
.ef-report .ef-pager{display:flex;gap:12px;align-items:center;margin:6px 0}
.ef-report .ef-error{background:#ffebe9;border:1px solid #ff8182;padding:8px 12px;
  border-radius:4px;margin:8px 0;white-space:pre-wrap}
.ef-report .ef-fail{color:#cf222e}
.ef-report .ef-err{color:#9a6700;font-weight:600}
.ef-report .ef-pass{color:#1a7f37}
.ef-report pre{white-space:pre-wrap;word-break:break-word;background:#f6f8fa;padding:6px 8px;
  border-radius:4px;margin:2px 0 8px;font-size:12px;max-height:360px;overflow:auto}
.ef-report ins{background:#ccffd8;text-decoration:none}
.ef-report del{background:#ffd7d5;text-decoration:none}
.ef-report .ef-pair{display:grid;grid-template-columns:1fr 1fr;gap:10px}
.ef-report table.ef-rows td{max-width:380px;overflow:hidden;text-overflow:ellipsis}
.ef-report tr.ef-click{cursor:pointer}
.ef-report tr.ef-click:hover{background:#f6f8fa}
.ef-report .ef-label-card{border:1px solid #d8dee4;border-radius:6px;padding:10px 14px;margin:8px 0}
.ef-report .ef-keys kbd{border:1px solid #d0d7de;border-bottom-width:2px;border-radius:4px;
  padding:0 4px;font-size:12px;background:#f6f8fa}
.ef-report textarea{width:100%;box-sizing:border-box}
.ef-report .ef-matrix td{vertical-align:top;white-space:normal;max-width:320px;text-align:left}
.ef-report .ef-regressed{background:#fff1f0}
.ef-report .ef-improved{background:#f0fff4}
.ef-report .ef-badge{display:inline-block;padding:0 6px;margin:1px 2px 1px 0;border-radius:4px;
  font-size:11px;font-weight:700;white-space:nowrap;background:#dafbe1;color:#116329}
.ef-report td.ef-status-cell{min-width:220px}
.ef-report .ef-badge.ef-bad{background:#ffebe9;color:#a40e26;border:1px solid #ff8182}
""".strip()

_FAVICON: Final = (
    "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'%3E"
    "%3Crect width='16' height='16' rx='3' fill='%231f883d'/%3E%3C/svg%3E"
)


def url(path: str, params: Mapping[str, Any] | None = None) -> str:
    """A URL of the viewer: ``path`` (already quoted) and query parameters (None dropped),
    escaped for an attribute."""
    query = {k: v for k, v in (params or {}).items() if v is not None and v != ""}
    return escape(path + ("?" + urlencode(query, doseq=True) if query else ""))


def run_url(run_id: str, suffix: str = "", params: Mapping[str, Any] | None = None) -> str:
    """The page of a run (``suffix``: ``/sample``, ``/label``), escaped for an attribute."""
    return url(f"/runs/{quote(run_id, safe='')}{suffix}", params)


def link(href: str, text: Any, *, cls: str | None = None) -> str:
    """An anchor: ``href`` from ``url``/``run_url``, ``text`` escaped here."""
    attr = f' class="{cls}"' if cls else ""
    return f'<a href="{href}"{attr}>{escape(text)}</a>'


def option(value: Any, text: Any, selected: bool = False) -> str:
    """One ``<option>`` of a select, both escaped."""
    chosen = " selected" if selected else ""
    return f'<option value="{escape(value)}"{chosen}>{escape(text)}</option>'


def chips(values: Mapping[str, Any] | Sequence[Any]) -> str:
    """Labels (``key=value``) or tags as small chips."""
    items = [f"{k}={v}" for k, v in values.items()] if isinstance(values, Mapping) else list(values)
    return "".join(f'<span class="ef-chip">{escape(x)}</span>' for x in items)


def when(value: Any) -> str:
    """A stored time (UTC) to the second."""
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    return "" if value is None else escape(value)


def number(value: Any) -> str:
    return f4(value) if isinstance(value, float) or value is None else escape(value)


def status_badges(status: str, *, detail: bool = True) -> str:
    """A run's ``status`` (the report's first line: ``Run.status``) as badges: ``INCOMPLETE``
    and ``SAFETY FAILED``, each with the rest of its line beside it (with ``detail``) and as
    its tooltip, or ``ok`` for a complete run."""
    if status.startswith("COMPLETE"):
        return f'<span class="ef-badge ef-ok" title="{escape(status)}">ok</span>'
    out = []
    for line in re.split(r"; (?=INCOMPLETE: |SAFETY FAILED: )", status):
        word, _, rest = line.partition(": ")
        badge = f'<span class="ef-badge ef-bad" title="{escape(line)}">{escape(word)}</span>'
        out.append(f'<span class="ef-verdict">{badge} {escape(rest) if detail else ""}</span>')
    return "<br>".join(out) if detail else "".join(out)


def pager(path: str, params: Mapping[str, Any], total: int, limit: int, offset: int) -> str:
    """``first-last of total`` and previous/next links keeping the other parameters."""
    if total == 0:
        return '<div class="ef-pager ef-muted">Nothing matches.</div>'
    last = min(total, offset + limit)
    parts = [
        f'<span class="ef-muted" id="ef-count">{offset + 1:,}&ndash;{last:,} of {total:,}</span>'
    ]
    if offset > 0:
        back = {**params, "offset": max(0, offset - limit), "limit": limit}
        parts.append(link(url(path, back), "← previous", cls="ef-prev"))
    if last < total:
        ahead = {**params, "offset": offset + limit, "limit": limit}
        parts.append(link(url(path, ahead), "next →", cls="ef-next"))
    return f'<div class="ef-pager">{"".join(parts)}</div>'


def json_script(element_id: str, data: Any) -> str:
    """Data for a script, as JSON in a non-executed script element (no ``<`` inside)."""
    import orjson

    text = orjson.dumps(data, default=str).decode().replace("<", "\\u003c")
    return f'<script type="application/json" id="{escape(element_id)}">{text}</script>'


def error_box(message: str) -> str:
    return f'<div class="ef-error" role="alert">{escape(message)}</div>'


def page(
    title: str,
    body: str,
    *,
    here: str = "",
    store: str = "",
    scripts: Sequence[str] = ("app.js",),
) -> str:
    """A whole page: the navigation bar, ``body`` (already HTML) and the asset scripts."""
    current = ' class="ef-here"'
    nav = "".join(
        f'<a href="{href}"{current if href == here else ""}>{name}</a>' for href, name in NAV
    )
    tags = "".join(f'<script src="/assets/{name}"></script>' for name in scripts)
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f'<link rel="icon" href="{_FAVICON}">\n'
        f"<title>{escape(title)} · evalframe</title>\n"
        '<link rel="stylesheet" href="/assets/view.css">\n</head>\n<body>\n'
        f'<nav class="ef-nav"><span class="ef-brand"><a href="/">evalframe view</a></span>{nav}'
        f'<span class="ef-store" title="the run store">{escape(store)}</span></nav>\n'
        f'<main class="ef-report">\n{body}\n</main>\n{tags}\n</body>\n</html>\n'
    )


def stylesheet() -> str:
    """The viewer's stylesheet: the report's, then its own."""
    return CSS + "\n" + VIEW_CSS
