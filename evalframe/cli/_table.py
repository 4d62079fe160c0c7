"""The CLI's tables (``runs``, ``sql``, ``metrics``, ``compare``, ``gate``), fitted to the
terminal width, and the ``--format`` writers of ``runs`` and ``sql``.

The table style itself is ``views._format.fit_table``: columns share the width; a column
narrower than its fair share keeps its full width and the rest is split among the wider ones,
whose cells are cut with an ellipsis (or wrapped, for the columns a command names). When
there are too many columns to give each a readable width (``SELECT * FROM runs``), each row
is printed as a block of ``column  value`` lines instead. The width is
``shutil.get_terminal_size`` (which honours ``COLUMNS``).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import click
import polars as pl

from evalframe.views._format import fit_table, plain_cell

__all__ = ["render", "render_frame", "terminal_width", "write_frame"]

_cell = plain_cell


def terminal_width() -> int:
    """The terminal's width in characters (``COLUMNS`` first, 100 when unknown)."""
    return shutil.get_terminal_size((100, 24)).columns


def render(
    headers: Sequence[str],
    rows: Sequence[Sequence[Any]],
    width: int | None = None,
    *,
    wrap: Collection[str] = (),
) -> str:
    """A plain-text table no wider than ``width`` (default: the terminal's); the cells of the
    columns named in ``wrap`` wrap onto continuation lines instead of being cut."""
    width = terminal_width() if width is None else width
    return "\n".join(fit_table(headers, rows, width, wrap=wrap))


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
