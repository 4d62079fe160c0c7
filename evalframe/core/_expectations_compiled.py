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

from evalframe.core._json._numbers import exact_integer, number_end
from evalframe.core._json._strings import json_string
from evalframe.core._json._text import skip_ws, surely_not_blank, word_at
from evalframe.core._json._values import (
    compact_value,
    member_key,
    name_index,
    name_table,
    next_member,
    skip_value,
)
from evalframe.core._njit import in_halves, kernel_int, njit
from evalframe.core._pages import small_pages

__all__ = ["LIST_FIELDS", "decode_expectations"]

LIST_FIELDS: Final = ("tools", "forbidden_tools", "order", "expected_tools", "requires_approval")
_WORDS = (
    *LIST_FIELDS, "max_steps", "optimal_steps", "tool_arguments", "goal",  # a block's (0-8)
    "name", "tool", "arguments", "args",  # an argument spec's (9-12)
    "trajectory",  # the metadata's (13)
)  # fmt: skip
_NAMES, _NAME_OFF = name_table(_WORDS)
_int = kernel_int  # constants kernels pass on: NumPy integers, not literals
_BLOCK_KEYS, _SPEC_KEYS, _META_KEYS, _END_KEYS = _int(0), _int(9), _int(13), _int(14)
_MAX_STEPS, _OPTIMAL, _TOOL_ARGUMENTS, _GOAL = 5, 6, 7, 8
_SINGLE = np.array([True, True, False, False, True])  # a string stands for a one-item list

# The int64 table, by row: string columns' starts (_S) and lengths (_LEN, -1 null): the
# five name lists' items (0-4), the specs' names and arguments (5, 6), the goal's (7, 8);
# per text: whether it was read exactly, each field's presence (_HAS: lists 0-4,
# tool_arguments 7, goal 8), the counts (_COUNT, _COUNT_NULL: 0 max_steps, 1 optimal_steps),
# the specs skipped, and list ends (_END: lists 0-4, specs 7); counters (_C: items per
# column 0-6, output bytes 9).
_S, _LEN = _int(0), _int(9)
_EXACT, _HAS, _COUNT, _COUNT_NULL, _SKIPPED, _END, _C = (
    _int(r) for r in (18, 19, 28, 30, 32, 33, 42)
)
_C_OUT = _int(9)
_TABLE_ROWS = 43
_NULL = np.frombuffer(b"null", np.uint8)
_QUOTE, _OPEN, _CLOSE, _LIST, _LIST_END = 34, 123, 125, 91, 93


@njit
def _item(data: Any, p: int, end: int, t: Any, out: Any, col: int, i: int) -> int:
    """The JSON string at ``p`` as string column ``col``'s item ``i``."""
    o = t[_C, _C_OUT]
    p, stop = json_string(data, p, end, out, o)
    if p >= 0:
        t[_C, _C_OUT] = stop
        t[_S + col, i] = o
        t[_LEN + col, i] = stop - o
    return p


@njit
def _names(data: Any, p: int, end: int, t: Any, out: Any, f: int) -> int:
    """Name list ``f``: a list of strings, or (where allowed) one string."""
    k = t[_C, f]
    if data[p] == _QUOTE:
        if not _SINGLE[f] or p + 1 >= end or data[p + 1] in (_OPEN, _LIST, 92):
            return -1  # an error, or a text the path lookups read as JSON: theirs
        p = _item(data, p, end, t, out, f, k)
        t[_C, f] = k + 1
        return p
    if data[p] != _LIST:
        return -1
    p = skip_ws(data, p + 1, end)
    done = p < end and data[p] == _LIST_END
    p += done
    while not done:
        if p >= end or data[p] != _QUOTE or k >= t.shape[1]:
            return -1
        p = _item(data, p, end, t, out, f, k)
        if p < 0:
            return -1
        k += 1
        p, done = next_member(data, p, end, _LIST_END)
        if p < 0:
            return -1
    t[_C, f] = k
    return p


@njit
def _integer(data: Any, p: int, end: int, t: Any, which: int, d: int) -> int:
    """A count: a plain integer of at most 18 digits (``optimal_steps`` not negative)."""
    q = number_end(data, p, end)
    r, value = exact_integer(data, p, end)
    if q < 0 or r != q or (which == _OPTIMAL and value < 0):
        return -1
    t[_COUNT + which - _MAX_STEPS, d] = value
    t[_COUNT_NULL + which - _MAX_STEPS, d] = 0
    return q


@njit
def _long_integer(out: Any, lo: int, hi: int) -> bool:
    """Whether compact JSON ``out[lo:hi]`` holds an integer of more than 18 digits (outside
    strings), which the path lookups would turn into a float."""
    run, inside, k = 0, False, lo
    while k < hi:
        c = out[k]
        if inside:
            if c == 92:  # a backslash: skip the escaped character
                k += 1
            elif c == _QUOTE:
                inside = False
        elif c == _QUOTE:
            inside = True
            run = 0
        elif 0x30 <= c <= 0x39:
            run += 1
            if run > 18:
                return True
        else:
            run = 0
        k += 1
    return False


@njit
def _spec(
    data: Any, p: int, end: int, t: Any, out: Any, b: Any, col: int, i: int
) -> tuple[int, bool]:
    """An argument spec (``{name|tool, arguments|args}``) at ``p`` into string columns
    ``col`` (name) and ``col + 1`` (arguments, compact) item ``i``: the position after it and
    whether it is usable; -1 for one the compiled pass cannot judge."""
    stack, keys, scratch = b
    name, name_len, tool, tool_len, args, args_len, alt, alt_len = 0, -1, 0, -1, 0, -1, 0, -1
    bad, seen = False, 0
    p = skip_ws(data, p + 1, end)
    done = p < end and data[p] == _CLOSE
    p += done
    while not done:
        p, n = member_key(data, p, end, scratch)
        if p < 0:
            return -1, False
        which = name_index(scratch, n, _NAMES, _NAME_OFF, _SPEC_KEYS, _META_KEYS)
        if which >= 0:
            if seen & (1 << (which - _SPEC_KEYS)):
                return -1, False
            seen |= 1 << (which - _SPEC_KEYS)
        c = data[p]
        if which < 0:
            p = skip_value(data, p, end, stack[:64])
        elif c == 0x6E:  # null: as if absent
            p = word_at(data, p, end, _NULL)
        elif which <= _SPEC_KEYS + 1:  # name, tool: a string, or anything (unusable)
            if c == _QUOTE:
                o = t[_C, _C_OUT]
                p, stop = json_string(data, p, end, out, o)
                t[_C, _C_OUT] = max(stop, o)
                if which == _SPEC_KEYS:
                    name, name_len = o, stop - o
                else:
                    tool, tool_len = o, stop - o
            else:
                p = skip_value(data, p, end, stack[:64])
                if which == _SPEC_KEYS:
                    name_len = -2  # not a string
                else:
                    tool_len = -2
        elif c == _OPEN:  # arguments, args: a map
            o = t[_C, _C_OUT]
            p, stop = compact_value(data, p, end, out, o, stack, keys)
            t[_C, _C_OUT] = max(stop, o)
            if p >= 0 and _long_integer(out, o, stop):
                return -1, False
            if which == _SPEC_KEYS + 2:
                args, args_len = o, stop - o
            else:
                alt, alt_len = o, stop - o
        else:
            p = skip_value(data, p, end, stack[:64])
            if which == _SPEC_KEYS + 2:
                args_len = -2  # not a map
            else:
                alt_len = -2
        if p < 0:
            return -1, False
        p, done = next_member(data, p, end, _CLOSE)
        if p < 0:
            return -1, False
    if name_len == -1:  # the first spelling that is not null
        name, name_len = tool, tool_len
    if args_len == -1:
        args, args_len = alt, alt_len
    if name_len < 0 or args_len == -2:
        bad = True
    elif not surely_not_blank(out, name, name + name_len):
        for k in range(name, name + name_len):  # blank only if all ASCII space
            c = out[k]
            if not (c == 0x20 or 0x09 <= c <= 0x0D or 0x1C <= c <= 0x1F):
                return -1, False
        bad = True
    if not bad:
        t[_S + col, i], t[_LEN + col, i] = name, name_len
        if args_len < 0:  # no arguments: an empty map
            o = t[_C, _C_OUT]
            out[o] = _OPEN
            out[o + 1] = _CLOSE
            t[_C, _C_OUT] = o + 2
            args, args_len = o, 2
        t[_S + col + 1, i], t[_LEN + col + 1, i] = args, args_len
    return p, not bad


@njit
def _specs(data: Any, p: int, end: int, t: Any, out: Any, b: Any, d: int) -> int:
    """``tool_arguments``: a list of specs; entries that are not usable are skipped."""
    if data[p] != _LIST:
        return -1
    k, skipped = t[_C, 5], 0
    p = skip_ws(data, p + 1, end)
    done = p < end and data[p] == _LIST_END
    p += done
    while not done:
        if p >= end or k >= t.shape[1]:
            return -1
        if data[p] == _OPEN:
            p, usable = _spec(data, p, end, t, out, b, 5, k)
            k += usable
            skipped += not usable
        else:
            p = skip_value(data, p, end, b[0][:64])
            skipped += 1
        if p < 0:
            return -1
        p, done = next_member(data, p, end, _LIST_END)
        if p < 0:
            return -1
    t[_C, 5] = k
    t[_C, 6] = k
    t[_SKIPPED, d] = skipped
    return p


@njit
def _block(data: Any, p: int, end: int, t: Any, out: Any, b: Any, d: int) -> int:
    """A ``trajectory`` block at ``p`` (an object) as text ``d``'s fields."""
    scratch = b[2]
    if data[p] != _OPEN:
        return -1
    seen = 0
    p = skip_ws(data, p + 1, end)
    done = p < end and data[p] == _CLOSE
    p += done
    while not done:
        p, n = member_key(data, p, end, scratch)
        if p < 0:
            return -1
        which = name_index(scratch, n, _NAMES, _NAME_OFF, _BLOCK_KEYS, _SPEC_KEYS)
        if which < 0:
            p = skip_value(data, p, end, b[0][:64])
        else:
            if seen & (1 << which) or data[p] == 0x6E:
                return -1  # repeated, or null: the path lookups' reading
            seen |= 1 << which
            t[_HAS + which, d] = 1
            if which < _MAX_STEPS:
                p = _names(data, p, end, t, out, which)
            elif which <= _OPTIMAL:
                p = _integer(data, p, end, t, which, d)
            elif which == _TOOL_ARGUMENTS:
                p = _specs(data, p, end, t, out, b, d)
            elif data[p] == _QUOTE:  # the goal: a tool name (not one the lookups read as JSON)
                if p + 1 >= end or data[p + 1] in (_OPEN, _LIST, 92):
                    return -1
                p = _item(data, p, end, t, out, 7, d)
                lo, length = t[_S + 7, d], t[_LEN + 7, d]
                if p < 0 or not surely_not_blank(out, lo, lo + length):
                    return -1
                o = t[_C, _C_OUT]
                out[o] = _OPEN
                out[o + 1] = _CLOSE
                t[_C, _C_OUT] = o + 2
                t[_S + 8, d], t[_LEN + 8, d] = o, 2
            elif data[p] == _OPEN:
                p, usable = _spec(data, p, end, t, out, b, 7, d)
                if not usable:
                    return -1  # a problem: the path lookups' message
            else:
                return -1
        if p < 0:
            return -1
        p, done = next_member(data, p, end, _CLOSE)
        if p < 0:
            return -1
    return p


@njit
def _text(data: Any, p: int, end: int, t: Any, out: Any, b: Any, d: int) -> bool:
    """Metadata text ``d`` (``data[p:end]``): an object whose ``trajectory`` it reads."""
    scratch = b[2]
    p = skip_ws(data, p, end)
    if p >= end or data[p] != _OPEN:
        return False
    seen = False
    p = skip_ws(data, p + 1, end)
    done = p < end and data[p] == _CLOSE
    p += done
    while not done:
        p, n = member_key(data, p, end, scratch)
        if p < 0:
            return False
        if name_index(scratch, n, _NAMES, _NAME_OFF, _META_KEYS, _END_KEYS) >= 0:
            if seen:
                return False
            seen = True
            p = _block(data, p, end, t, out, b, d)
        else:
            p = skip_value(data, p, end, b[0][:64])
        if p < 0:
            return False
        p, done = next_member(data, p, end, _CLOSE)
        if p < 0:
            return False
    return skip_ws(data, p, end) == end


@njit
def _decode(data: Any, offsets: Any, t: Any, out: Any, b: Any) -> None:
    n = offsets.size - 1
    for d in range(n):
        before = t[_C, :10].copy()
        for f in range(9):
            t[_HAS + f, d] = 0
        t[_COUNT_NULL, d] = 1
        t[_COUNT_NULL + 1, d] = 1
        t[_SKIPPED, d] = 0
        t[_LEN + 7, d] = -1
        t[_LEN + 8, d] = -1
        t[_EXACT, d] = _text(data, offsets[d], offsets[d + 1], t, out, b, d)
        if not t[_EXACT, d]:  # undo: the row reads as having nothing
            t[_C, :10] = before
            for f in range(9):
                t[_HAS + f, d] = 0
        for f in range(5):
            t[_END + f, d + 1] = t[_C, f]
        t[_END + 7, d + 1] = t[_C, 5]


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


def _decode_texts(texts: pl.Series) -> pl.DataFrame:
    import pyarrow as pa

    from evalframe.core._arrow_text import list_array, numbers_array, strings_array, text_buffers

    data, offsets, _ = text_buffers(texts)
    n = texts.len()
    items = _commas(data) + n + 2
    table = small_pages((_TABLE_ROWS, max(items, 16) + 1), np.int64)
    table[_C, :10] = 0
    table[_END : _END + 9, 0] = 0
    out = small_pages(data.size + 2 * n + 16, np.uint8)  # an empty map written per goal name
    scratch = np.empty(int(np.diff(offsets).max(initial=0)) + 16, np.uint8)  # a key at a time
    _decode(data, offsets, table, out, (np.empty(128, np.int64), np.empty(8192, np.int64), scratch))
    exact = table[_EXACT, :n].astype(np.bool_)
    has = table[_HAS : _HAS + 9, :n].astype(np.bool_)
    columns: dict[str, Any] = {"exact": exact}
    for f, field in enumerate(LIST_FIELDS):
        k = int(table[_C, f])
        items_ = strings_array(table[_S + f, :k], table[_LEN + f, :k], out, copy=False)
        columns[field] = list_array(table[_END + f, : n + 1], items_, has[f])
    for which, field in ((0, "max_steps"), (1, "optimal_steps")):
        columns[field] = numbers_array(table[_COUNT + which, :n], table[_COUNT_NULL + which, :n])
    k = int(table[_C, 5])
    specs = pa.StructArray.from_arrays(
        [strings_array(table[_S + c, :k], table[_LEN + c, :k], out, copy=False) for c in (5, 6)],
        ["name", "arguments"],
    )
    columns["tool_arguments"] = list_array(table[_END + 7, : n + 1], specs, has[_TOOL_ARGUMENTS])
    columns["skipped"] = numbers_array(table[_SKIPPED, :n], ~has[_TOOL_ARGUMENTS])
    columns["goal"] = pa.StructArray.from_arrays(
        [strings_array(table[_S + c, :n], table[_LEN + c, :n], out, copy=False) for c in (7, 8)],
        ["name", "arguments"],
        mask=pa.array(~has[_GOAL]),
    )
    spec = pl.Struct({"name": pl.String(), "arguments": pl.String()})
    names = pl.List(pl.String())
    schema = {
        "exact": pl.Boolean(),
        **dict.fromkeys(LIST_FIELDS, names),
        "max_steps": pl.Int64(),
        "optimal_steps": pl.Int64(),
        "tool_arguments": pl.List(spec),
        "skipped": pl.Int64(),
        "goal": spec,
    }
    return pl.DataFrame({k: pl.Series(k, v) for k, v in columns.items()}).cast(schema)  # type: ignore[arg-type]
