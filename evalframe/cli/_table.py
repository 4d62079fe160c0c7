"""The one table renderer of the CLI (``runs``, ``sql``), fitted to the terminal width.

Columns share the width: a column narrower than its fair share keeps its full width and the
rest is split among the wider ones, whose cells are cut with an ellipsis. When there are too
many columns to give each a readable width (``SELECT * FROM runs``), each row is printed as a
block of ``column  value`` lines instead. The width is ``shutil.get_terminal_size`` (which
honours ``COLUMNS``).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import click
import polars as pl

__all__ = ["render", "render_frame", "terminal_width", "write_frame"]

_GAP = "  "
_MIN_COL = 4
_READABLE = 8  # narrower columns than this: one block per row instead of one line


def terminal_width() -> int:
    """The terminal's width in characters (``COLUMNS`` first, 100 when unknown)."""
    return shutil.get_terminal_size((100, 24)).columns


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, (list, dict)):
        return json.dumps(value, default=str, ensure_ascii=False)
    return " ".join(str(value).split())  # one line per row


def _fit(widths: list[int], total: int) -> list[int]:
    """Column widths summing (with gaps) to at most ``total``: narrow columns keep theirs."""
    avail = max(total - len(_GAP) * (len(widths) - 1), _MIN_COL * len(widths))
    fitted = list(widths)
    if sum(fitted) <= avail:
        return fitted
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
        fitted[i] = max(_MIN_COL, share + (1 if n < extra else 0))
    return fitted


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def render(headers: Sequence[str], rows: Sequence[Sequence[Any]], width: int | None = None) -> str:
    """A plain-text table no wider than ``width`` (default: the terminal's)."""
    width = terminal_width() if width is None else width
    cells = [[_cell(v) for v in row] for row in rows]
    if len(headers) * (_READABLE + len(_GAP)) > width + len(_GAP):
        return _records(headers, cells, width)
    natural = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    widths = _fit(natural, width)
    numeric = [
        all(isinstance(row[i], (int, float)) or row[i] is None for row in rows) and bool(rows)
        for i in range(len(headers))
    ]

    def line(values: Sequence[str]) -> str:
        parts = []
        for i, v in enumerate(values):
            text = _clip(v, widths[i])
            parts.append(text.rjust(widths[i]) if numeric[i] else text.ljust(widths[i]))
        return _GAP.join(parts).rstrip()

    out = [line(list(headers)), _GAP.join("-" * w for w in widths)]
    out.extend(line(r) for r in cells)
    return "\n".join(out)


def _records(headers: Sequence[str], cells: list[list[str]], width: int) -> str:
    """One block per row (``name  value`` lines) when the columns cannot fit side by side."""
    key = max(len(h) for h in headers)
    room = max(width - key - len(_GAP), _MIN_COL)
    out: list[str] = []
    for n, row in enumerate(cells, 1):
        out.append(_clip(f"-[ row {n} ]" + "-" * width, width))
        out.extend(
            f"{h.ljust(key)}{_GAP}{_clip(v, room)}".rstrip()
            for h, v in zip(headers, row, strict=True)
        )
    return "\n".join(out)


def render_frame(frame: pl.DataFrame, width: int | None = None) -> str:
    """:func:`render` on a Polars frame's columns and rows."""
    return render(frame.columns, frame.rows(), width)


def write_frame(frame: pl.DataFrame, output: str, out: Path | None, max_rows: int | None) -> None:
    """Print or write ``frame`` as ``table``, ``csv``, ``json``, ``ndjson`` or ``parquet``."""
    from evalframe.cli._options import emit

    if output == "parquet":
        if out is None:
            raise click.UsageError("--format parquet needs --out PATH.")
        frame.write_parquet(out)
        click.echo(f"wrote {out} ({frame.height} rows)", err=True)
        return
    if output == "csv":
        flat = frame.with_columns(
            pl.col(c).map_elements(_cell, return_dtype=pl.String)
            for c, t in frame.schema.items()
            if isinstance(t, (pl.List, pl.Struct, pl.Array))
        )
        emit(flat.write_csv(), out)
    elif output == "json":
        emit(json.dumps(frame.to_dicts(), default=str, ensure_ascii=False, indent=2) + "\n", out)
    elif output == "ndjson":
        lines = (
            json.dumps(r, default=str, ensure_ascii=False) for r in frame.iter_rows(named=True)
        )
        emit("".join(line + "\n" for line in lines), out)
    else:
        shown = frame if max_rows is None else frame.head(max_rows)
        emit(render_frame(shown) + "\n", out)
        if max_rows is not None and frame.height > max_rows:
            click.echo(f"({frame.height} rows; showing {max_rows}: use --max-rows)", err=True)
