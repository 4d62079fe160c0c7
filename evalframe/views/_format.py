"""Number formats and Markdown and plain-text tables, shared by every view and the CLI."""

from __future__ import annotations

import html
import json
import re
import textwrap
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Any

__all__ = [
    "attempted",
    "clip",
    "f4",
    "fit_table",
    "fmt",
    "has_counts",
    "md_cell",
    "md_table",
    "one_line",
    "plain_cell",
    "points",
    "signed",
    "stat_cells",
    "text_table",
    "wrap_text",
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


def attempted(m: Mapping[str, Any]) -> Any:
    """A metric block's pass-rate over attempted executions (an errored one did not pass):
    evalframe's ``pass_rate_attempted``; an eval-harness block has only its ``pass_rate``."""
    return m.get("pass_rate_attempted", m.get("pass_rate"))


def stat_cells(m: Mapping[str, Any]) -> list[str]:
    """A metric block's mean, p50, p95 and (attempted) pass-rate, four decimals each or
    ``n/a``."""
    return [f4(m["mean"]), f4(m["p50"]), f4(m["p95"]), f4(attempted(m))]


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


# --- the plain-text table of the CLI and the terminal views ------------------------------

_GAP = "  "
_MIN_COL = 4
_READABLE = 8  # narrower columns than this: one block per row instead of one line
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?%?$")


def plain_cell(value: Any) -> str:
    """A value as one line of plain text: floats to four significant digits, datetimes to the
    second, lists and maps as JSON, whitespace collapsed, null as empty."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, (list, dict)):
        return json.dumps(value, default=str, ensure_ascii=False)
    return " ".join(str(value).split())


def _numeric(value: Any) -> bool:
    if value is None or isinstance(value, bool):
        return value is None
    if isinstance(value, (int, float)):
        return True
    return isinstance(value, str) and (value in ("", "n/a") or bool(_NUMBER.match(value)))


def _fit(widths: list[int], total: int, floor: list[int]) -> list[int]:
    """Column widths summing (with gaps) to at most ``total``: a column narrower than its fair
    share keeps its width, the wider ones split the rest (never below their ``floor``)."""
    avail = max(total - len(_GAP) * (len(widths) - 1), sum(floor))
    if sum(widths) <= avail:
        return list(widths)
    fitted = list(widths)
    wide = set(range(len(widths)))
    budget = avail
    while True:
        share = budget // len(wide)
        narrow = {i for i in wide if widths[i] <= share}
        if not narrow:
            break
        budget -= sum(widths[i] for i in narrow)
        wide -= narrow
        if not wide:
            return fitted
    share, extra = divmod(budget, len(wide))
    for n, i in enumerate(sorted(wide)):
        fitted[i] = max(floor[i], share + (1 if n < extra else 0))
    return fitted


def _widths(
    headers: Sequence[str], natural: list[int], floor: list[int], width: int, wrap: Collection[str]
) -> list[int]:
    """Column widths for ``width``: the wrapping columns give way while the others keep their
    natural width; when the wrapping ones cannot keep their floor so, nothing fits (a list
    wider than ``width``); a table without wrapping columns shares the width among all."""
    squeeze = [i for i, h in enumerate(headers) if h in wrap]
    if squeeze:
        room = width - len(_GAP) * (len(headers) - 1)
        fixed = sum(n for i, n in enumerate(natural) if i not in squeeze)
        if room - fixed >= sum(floor[i] for i in squeeze):
            shares = _fit(
                [natural[i] for i in squeeze],
                room - fixed + len(_GAP) * (len(squeeze) - 1),
                [floor[i] for i in squeeze],
            )
            out = list(natural)
            for i, w in zip(squeeze, shares, strict=True):
                out[i] = w
            return out
        return [width + 1]  # no readable fit: the caller prints one block per row
    return _fit(natural, width, floor)


def clip(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, an ellipsis marking the cut."""
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def fit_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[Any]],
    width: int | None = None,
    *,
    wrap: Collection[str] = (),
) -> list[str]:
    """The one plain-text table style: a header, a rule, one line per row, no wider than
    ``width`` characters (None: as wide as the cells need).

    Numeric columns are right-aligned. When the table is too wide, headers wrap at word
    boundaries first; then columns narrower than their share keep their width and the wider
    ones share the rest: their cells are cut with an ellipsis, or wrapped onto continuation
    lines for the columns named in ``wrap``. When there are too many columns for each to get
    a readable width, every row is printed as a block of ``column  value`` lines instead.
    """
    cells = [[plain_cell(v) for v in row] for row in rows]
    if width is not None and len(headers) * (_READABLE + len(_GAP)) > width + len(_GAP):
        return _records(headers, cells, width, wrap)
    natural = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    if width is not None and sum(natural) + len(_GAP) * (len(natural) - 1) > width:
        # Too wide: headers wrap at word boundaries before any cell is cut.
        natural = [
            max([len(max(h.split() or [""], key=len)), *(len(r[i]) for r in cells)])
            for i, h in enumerate(headers)
        ]
    floor = [min(n, 12 if h in wrap else _MIN_COL) for h, n in zip(headers, natural, strict=True)]
    widths = natural if width is None else _widths(headers, natural, floor, width, wrap)
    if width is not None and sum(widths) + len(_GAP) * (len(widths) - 1) > width:
        return _records(headers, cells, width, wrap)
    numeric = [
        all(_numeric(r[i]) for r in rows) and any(c[i] not in ("", "n/a") for c in cells)
        for i in range(len(headers))
    ]
    wrapped = [h in wrap for h in headers]

    def lines(values: Sequence[str], head: bool = False) -> list[str]:
        pieces = [
            [
                clip(t, widths[i])
                for t in textwrap.wrap(
                    v, widths[i], break_on_hyphens=False, break_long_words=not head
                )
            ]
            or [""]
            if wrapped[i] or head
            else [clip(v, widths[i])]
            for i, v in enumerate(values)
        ]
        out = []
        for k in range(max(len(p) for p in pieces)):
            parts = []
            for i, p in enumerate(pieces):
                text = p[k] if k < len(p) else ""
                parts.append(text.rjust(widths[i]) if numeric[i] else text.ljust(widths[i]))
            out.append(_GAP.join(parts).rstrip())
        return out

    out = lines(list(headers), head=True)
    out.append(_GAP.join("-" * w for w in widths))
    for r in cells:
        out += lines(r)
    return out


def _records(
    headers: Sequence[str], cells: list[list[str]], width: int, wrap: Collection[str]
) -> list[str]:
    """One block per row (``name  value`` lines) when the columns cannot sit side by side."""
    key = max(len(h) for h in headers)
    room = max(width - key - len(_GAP), _MIN_COL)
    out: list[str] = []
    for n, row in enumerate(cells, 1):
        out.append(f"-[ row {n} ]".ljust(width, "-")[:width])
        for h, v in zip(headers, row, strict=True):
            parts = textwrap.wrap(v, room, break_on_hyphens=False) if h in wrap else [clip(v, room)]
            for k, part in enumerate(parts or [""]):
                out.append(f"{(h if k == 0 else '').ljust(key)}{_GAP}{part}".rstrip())
    return out


def wrap_text(text: str, width: int | None) -> list[str]:
    """A paragraph as lines no wider than ``width`` (None: one line)."""
    if width is None:
        return [text]
    return textwrap.wrap(text, width, break_on_hyphens=False, break_long_words=False) or [""]


# orjson spells floats below 1e-4 differently from Python's repr: 0.00003 and 2.5e-7 where
# json writes 3e-05 and 2.5e-07. In indented output a number is preceded by a space and
# followed by a newline (or a comma and a newline), which never happens inside a string.
_FIXED_FLOAT = re.compile(rb"0\.0000\d+(?=,?\n)")
_EXPONENT_FLOAT = re.compile(rb"e-\d+(?=,?\n)")
_FLOAT_START = re.compile(rb"-?[\d.]*$")


def python_floats(data: bytes) -> bytes:
    """Rewrite orjson's spelling of floats below 1e-4 as Python's ``repr``."""
    edits: dict[int, tuple[int, bytes]] = {}
    for pattern in (_FIXED_FLOAT, _EXPONENT_FLOAT):
        for m in pattern.finditer(data):
            head = _FLOAT_START.search(data, max(0, m.start() - 32), m.start())
            start = head.start() if head is not None else m.start()
            if start == 0 or data[start - 1] != 0x20:  # not a whole value: part of a string
                continue
            if pattern is _EXPONENT_FLOAT and not data[start : m.start()].strip(b"-"):
                continue  # "e-5" with no mantissa is no number
            edits[start] = (m.end(), repr(float(data[start : m.end()])).encode("ascii"))
    if not edits:
        return data
    out: list[bytes] = []
    last = 0
    for start in sorted(edits):
        end, text = edits[start]
        out += [data[last:start], text]
        last = end
    out.append(data[last:])
    return b"".join(out)
