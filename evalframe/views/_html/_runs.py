"""A store's listing of runs, one row per run."""

from __future__ import annotations

import polars as pl

from evalframe.views._format import f4
from evalframe.views._html._parts import CSS, bar, escape, table, td

__all__ = ["runs_html", "runs_text"]


def runs_html(runs: pl.DataFrame, *, title: str = "Stored runs") -> str:
    """A store listing (one row per run) as an HTML fragment, macro-F1 drawn as a bar."""
    rows = []
    for r in runs.head(50).iter_rows(named=True):
        cells = []
        for k, v in r.items():
            if k in ("macro_f1", "pass_rate") and isinstance(v, float):
                cells.append(td(bar(v) + f4(v)))
            elif isinstance(v, float):
                cells.append(td(f4(v)))
            elif isinstance(v, list):
                cells.append(td(escape(", ".join(map(str, v))), cls="ef-text"))
            elif v is None or isinstance(v, int | bool):
                cells.append(td(escape("" if v is None else v)))
            else:
                cells.append(td(escape(v), cls="ef-text"))
        rows.append(cells)
    more = runs.height - min(runs.height, 50)
    tail = f'<p class="ef-muted">… and {more} more runs.</p>' if more > 0 else ""
    return (
        f'<div class="ef-report"><style>{CSS}</style><h3>{escape(title)} '
        f'<span class="ef-muted">({runs.height})</span></h3>'
        f"{table(runs.columns, rows)}{tail}</div>"
    )


def runs_text(runs: pl.DataFrame) -> str:
    """A store listing as plain text."""
    return str(runs)
