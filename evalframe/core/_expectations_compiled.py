"""``metadata.trajectory`` expectations decoded from JSON texts by one compiled pass.

The trajectory metrics read a sample's expectations from its metadata text
(``metrics/_expectations.Expectations``): name lists (``tools``, ``forbidden_tools``, ``order``,
``expected_tools``, ``requires_approval``), counts (``max_steps``, ``optimal_steps``) and argument
specs (``tool_arguments``, ``goal``). :func:`decode_expectations` reads all of them from each
distinct text at once, straight into Arrow buffers, for the texts whose reading it can vouch
for, and marks the others inexact; ``Expectations`` reads those as it always has (JSON path
lookups, and Python per distinct nested value), so every field and every problem message is
the same. It vouches for a text that is an object whose ``trajectory`` (if any) holds:

* name lists as lists of strings (a single string where one stands for a one-item list,
  unless it starts with a bracket), counts as plain integers (``optimal_steps`` not negative);
* ``tool_arguments`` as a list whose entries are objects with a ``name`` (or ``tool``) and
  ``arguments`` (or ``args``) map, or anything else (an unusable entry, skipped and counted);
  ``goal`` as such an object or a tool name. Arguments are re-encoded as Python's compact
  encoder writes them (``core/_json/_values.compact_value``); integers past 18 digits, which the
  path lookups turn into floats, make the text inexact.

The pass is ``core/_expectations_pass.walk``; this module sizes the arrays it writes, grows
them when it runs short, and hands them to Arrow and Polars without copying.

Examples:
    >>> import polars as pl
    >>> texts = pl.Series(['{"trajectory": {"tools": "search", "max_steps": 3}}', '{"x": 1}'])
    >>> out = decode_expectations(texts)
    >>> out.select("exact", "tools", "max_steps").rows()
    [(True, ['search'], 3), (True, None, None)]
"""

from __future__ import annotations

import threading
from typing import Any, Final

import numpy as np
import polars as pl

from evalframe.core._expectations_pass import (
    COLUMNS,
    COUNTERS,
    EXACT,
    FULL,
    LIST_FIELDS,
    LONGEST,
    OUT,
    SLACK,
    walk,
)
from evalframe.core._njit import in_halves, njit

__all__ = ["LIST_FIELDS", "decode_expectations"]

_SAMPLE = 1024  # texts read first, to size the arrays for the rest
_SPARE = 64  # places (and bytes) the arrays are sized for beyond what the first texts predict


@njit(borrows=True)
def _commas(data: Any) -> int:
    """How many commas ``data`` holds (without a temporary as large as the data)."""
    n = 0
    for c in data:
        n += c == 44
    return n


_LOCK = threading.Lock()
_LAST: list[tuple[pl.Series, pl.DataFrame]] = []


def decode_expectations(texts: pl.Series) -> pl.DataFrame:
    """The expectations of each metadata text (String, no nulls): ``exact`` (False where the
    caller must read the text itself), the five name lists, ``max_steps``,
    ``optimal_steps``, ``tool_arguments`` (a list of ``{name, arguments}``), ``skipped`` (the
    unusable entries among them) and ``goal``; all null where absent or inexact.

    The last decoding of at most ``_KEPT_BYTES`` of text is kept: a dataset's texts, checked
    when it is read, are decoded again for its scoring only if they changed in between
    (comparing costs far less).
    """
    with _LOCK:
        for seen, decoded in _LAST:
            if seen.len() == texts.len() and seen.equals(texts):
                return decoded
    halves = in_halves(lambda a, b: _decode_texts(texts.slice(a, b - a)), texts.len())
    decoded = pl.concat(halves) if len(halves) > 1 else halves[0]
    kept = [(texts, decoded)] if (texts.str.len_bytes().sum() or 0) <= _KEPT_BYTES else []
    with _LOCK:
        _LAST[:] = kept
    return decoded


_KEPT_BYTES: Final = 64 << 20
"""The most text whose decoding is kept in memory for the next call."""


def _grown(a: Any, size: int, used: int) -> Any:
    """``a`` with ``size`` places along its last axis, its first ``used`` kept."""
    grown = np.empty((*a.shape[:-1], size), a.dtype)
    grown[..., :used] = a[..., :used]
    return grown


def _decode_texts(texts: pl.Series) -> pl.DataFrame:
    """:func:`decode_expectations` of ``texts`` on this thread."""
    from evalframe.core._arrow_text import text_buffers

    n = texts.len()
    data, offsets, _ = text_buffers(texts)
    if n > 1 and offsets[-1] - offsets[0] > LONGEST:  # ``out`` stays within a view's reach
        h = n // 2
        return pl.concat([_decode_texts(texts.slice(0, h)), _decode_texts(texts.slice(h))])
    flags = np.empty(n, np.uint16)
    counts = np.empty((2, n), np.int64)
    skipped = np.empty(n, np.int64)
    ends = np.empty((6, n + 1), np.int64)
    ends[:, 0] = 0
    goal = np.empty((2, 2 * n), np.uint64)
    c = np.zeros(COUNTERS, np.int64)
    longest = int(np.diff(offsets).max(initial=0))
    b = (np.empty(128, np.int64), np.empty(8192, np.int64), np.empty(longest + SLACK, np.uint8))
    # The first texts, into columns as large as they could fill, size those for the rest.
    m = min(n, _SAMPLE)
    lo, hi = int(offsets[0]), int(offsets[m])
    items = np.empty((COLUMNS, 2 * (_commas(data[lo:hi]) + m + 2)), np.uint64)
    out = np.empty(hi - lo + SLACK, np.uint8)
    walk(data, offsets[: m + 1], 0, flags, counts, skipped, ends, goal, items, out, c, b)
    scale = (int(offsets[-1]) - lo) / max(hi - lo, 1)
    room = min(longest, LONGEST) + SLACK  # a text writes at most its own length to ``out``
    places = int(c[:6].max() * scale * 1.25) + _SPARE  # per string column
    room_out = int(c[OUT] * scale * 1.25) + _SPARE + room
    d = m
    while d < n:
        if 2 * places > items.shape[1]:
            items = _grown(items, 2 * places, 2 * int(c[:6].max()))
        if room_out > out.size:
            out = _grown(out, room_out, int(c[OUT]))
        c[FULL] = 0
        d = walk(data, offsets, d, flags, counts, skipped, ends, goal, items, out, c, b)
        if d < n and c[OUT] + int(offsets[d + 1] - offsets[d]) + SLACK > out.size:
            room_out = 2 * out.size
        elif d < n:  # a string column lacked room
            places = items.shape[1]
    return _frame(flags, counts, skipped, ends, goal, items, out, c)


def _frame(
    flags: Any, counts: Any, skipped: Any, ends: Any, goal: Any, items: Any, out: Any, c: Any
) -> pl.DataFrame:
    """The columns of what :func:`walk` wrote, as Arrow arrays over its arrays (no copies)."""
    import pyarrow as pa

    n = flags.size
    body = pa.py_buffer(out)

    def bits(valid: Any) -> Any:
        return pa.py_buffer(np.packbits(valid, bitorder="little"))

    def strings(views: Any, k: int) -> Any:
        return pa.Array.from_buffers(
            pa.string_view(), k, [None, pa.py_buffer(views[: 2 * k]), body]
        )

    def has(f: int) -> tuple[Any, int]:
        valid = (flags >> (1 + f)) & 1
        return bits(valid.astype(np.bool_)), n - int(valid.sum())

    def lists(f: int, child: Any, valid: tuple[Any, int]) -> Any:
        return pa.Array.from_buffers(
            pa.large_list(child.type), n, [valid[0], pa.py_buffer(ends[f])],
            null_count=valid[1], children=[child],
        )  # fmt: skip

    def spec(names: Any, arguments: Any, valid: tuple[Any, int] | None = None) -> Any:
        children = [names, arguments]
        type_ = pa.struct([("name", names.type), ("arguments", arguments.type)])
        if valid is None:
            return pa.StructArray.from_arrays(children, fields=list(type_))
        return pa.Array.from_buffers(type_, n, [valid[0]], null_count=valid[1], children=children)

    def numbers(values: Any, valid: tuple[Any, int]) -> Any:
        return pa.Array.from_buffers(
            pa.int64(), n, [valid[0], pa.py_buffer(values)], null_count=valid[1]
        )

    columns: dict[str, Any] = {
        "exact": pa.Array.from_buffers(pa.bool_(), n, [None, bits((flags & EXACT) > 0)])
    }
    for f, field in enumerate(LIST_FIELDS):
        columns[field] = lists(f, strings(items[f], int(c[f])), has(f))
    columns["max_steps"] = numbers(counts[0], has(5))
    columns["optimal_steps"] = numbers(counts[1], has(6))
    k = int(c[5])
    arguments = has(7)
    columns["tool_arguments"] = lists(
        5, spec(strings(items[5], k), strings(items[6], k)), arguments
    )
    columns["skipped"] = numbers(skipped, arguments)
    columns["goal"] = spec(strings(goal[0], n), strings(goal[1], n), has(8))
    table = pa.table(columns)
    return pl.from_arrow(table)  # type: ignore[return-value]
