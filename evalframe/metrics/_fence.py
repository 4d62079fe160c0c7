"""Fencing: how text from the data is put into a judge prompt so it cannot forge the prompt.

Every value a sample, a user or an earlier judge reply provides (a question, an answer, a
passage, a criteria, a conversation turn, a tool call) enters a prompt as a JSON string
literal on one line: ``"Berlin.\\nEXPECTED: Berlin."``. A JSON string cannot hold an
unescaped quote, backslash or control character, and here no line or paragraph separator
either (U+0085, U+2028, U+2029 and the other C1 controls are escaped too), so nothing inside a
value can end it, start a line, or open a section of the prompt; ``json.loads`` gives the
value back exactly. Lists are one item per line behind a label evalframe writes
(``1. "..."``, ``A2. "..."``), records one JSON object per line. The encoding is a fixed
function of the text, so a prompt, and the request that carries it, is the same on every
run and the response cache keeps working.

Text evalframe writes itself (numbers, ``yes``/``no``, a sentinel such as ``(no passages)``,
an already fenced list) is marked ``verbatim`` and inserted as it is; every other input of a
judge need is fenced by the engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import polars as pl

__all__ = [
    "ESCAPES",
    "Verbatim",
    "fenced",
    "json_object",
    "labelled",
    "numbered",
    "numbered_lines",
    "verbatim",
]


def _escapes() -> dict[str, str]:
    short = {"\\": "\\\\", '"': '\\"', "\b": "\\b", "\f": "\\f", "\n": "\\n"}
    short |= {"\r": "\\r", "\t": "\\t"}
    controls = [*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029]
    return {**{chr(c): f"\\u{c:04x}" for c in controls}, **short}


ESCAPES: Final = _escapes()
"""Each character a fenced value escapes, and its JSON escape: the quote, the backslash, the
C0 and C1 controls (line feeds and the like among them) and the Unicode line and paragraph
separators. Every other character is kept as it is, non-ASCII text included."""

_FROM: Final = list(ESCAPES)
_TO: Final = [ESCAPES[c] for c in _FROM]


def fenced(text: pl.Expr) -> pl.Expr:
    r"""A ``String`` expression as a JSON string literal on one line; null stays null.

    The escapes are replaced in one pass (an escape is never escaped again).

    Examples:
        >>> import polars as pl
        >>> s = pl.Series(["Berlin.\nEXPECTED: Berlin.", 'say "hi"', None])
        >>> for v in pl.select(fenced(pl.lit(s))).to_series():
        ...     print(v)
        "Berlin.\nEXPECTED: Berlin."
        "say \"hi\""
        None
    """
    return pl.concat_str(pl.lit('"'), text.str.replace_many(_FROM, _TO), pl.lit('"'))


def json_object(**fields: pl.Expr) -> pl.Expr:
    """A JSON object on one line whose values are the fields fenced (``null`` for a null):
    ``{"role": "user", "content": "Hi"}``. The keys are evalframe's own."""
    parts: list[pl.Expr] = []
    for i, (key, value) in enumerate(fields.items()):  # the object's keys, not rows
        parts.append(pl.lit(("{" if i == 0 else ", ") + f'"{key}": '))
        parts.append(pl.coalesce(fenced(value), pl.lit("null")))
    parts.append(pl.lit("}"))
    return pl.concat_str(parts)


def _number(rendered: pl.Expr, prefix: str) -> pl.Expr:
    index = pl.int_range(1, pl.len() + 1, dtype=pl.Int64)
    return rendered.list.eval(pl.format(prefix + "{}. {}", index, pl.element()))


def labelled(rendered: pl.Expr, *, prefix: str = "") -> pl.Expr:
    r"""A ``List(String)`` of rendered items (JSON objects, fenced values) as one line each
    behind its number: ``{prefix}1. {item}\n{prefix}2. {item}``; an empty list gives ``""``,
    a null list stays null."""
    return _number(rendered, prefix).list.join("\n")


def numbered_lines(items: pl.Expr, *, prefix: str = "") -> pl.Expr:
    """A ``List(String)`` of values as a list of numbered lines, each value fenced:
    ``['{prefix}1. "first"', '{prefix}2. "second"']``."""
    return _number(items.list.eval(fenced(pl.element())), prefix)


def numbered(items: pl.Expr, *, prefix: str = "") -> pl.Expr:
    r"""A ``List(String)`` of values, each fenced on its numbered line:
    ``1. "first"\n2. "second"``. An empty list gives ``""``; a null list stays null.

    Examples:
        >>> import polars as pl
        >>> print(pl.select(numbered(pl.lit(["a", "b\nc"]), prefix="A")).item())
        A1. "a"
        A2. "b\nc"
    """
    return numbered_lines(items, prefix=prefix).list.join("\n")


@dataclass(frozen=True, slots=True)
class Verbatim:
    """A judge need's input that is evalframe's own text, inserted unfenced."""

    expr: pl.Expr


def verbatim(expr: pl.Expr) -> Verbatim:
    """Mark a need's input as evalframe's own text (a number, a label, a fenced list)."""
    return Verbatim(expr)
