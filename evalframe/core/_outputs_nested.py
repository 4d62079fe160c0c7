"""Retrieved contexts, trajectories and turns read straight from JSON bytes into columns.

The compiled outputs readers (``core/_outputs_compiled.py``) meet these three nested fields in
saved outputs entries; JSONL, CSV and Parquet cells, frames and systems under test hold them as
JSON text (or as values this module's callers encode to it). :func:`nested_value` reads one
field's value where it stands, :func:`nested_cells` a column of JSON texts, both into a
:class:`Builder`'s flat arrays (offsets and values, as Arrow lays out lists and structs), and
:func:`nested_columns` hands those to Polars as the ``contexts``, ``context_ids``,
``trajectory`` and ``turns`` columns, with the dtypes of ``core/_contexts.py``,
``core/_trajectory.py`` and ``core/_turns.py``.

What the readers vouch for is what the exact parsers (``parse_contexts``,
``parse_trajectory``, ``parse_turns``) return for the same value; anything else makes them
decline (return -1), and the caller leaves the whole input to the exact parsers, which keep
every error message: a value of the wrong type, a blank tool name or role, an argument map
that repeats a key or holds a 16-17 digit float that is not its value's repr, a count that
is not a plain non-negative integer, arguments given as JSON text, a lone surrogate, nesting
past 64 levels. Tool arguments, and results or errors that are not strings, are re-encoded
as Python's compact JSON encoder writes them; a float of 16-17 significant digits in them
(most computed floats) is laid out from its digits and checked afterwards to be Python's
``repr`` of its value. Numbers the compiled reader cannot convert exactly (more than 15
significant digits, say) are read afterwards by Polars' correctly rounded parser, from their
text.

Examples:
    >>> import numpy as np
    >>> text = b'{"tool_calls": ["search", {"name": "book", "args": {"id": 7}}]}'
    >>> data = np.frombuffer(text, np.uint8)
    >>> builder = Builder.sized(data, rows=1)
    >>> start_row(builder.arrays, 0)
    >>> nested_value(TRAJECTORY_FIELD, data, 0, data.size, builder.arrays, 0) == data.size
    True
    >>> end_row(builder.arrays, 0)
    >>> calls = nested_columns(builder, data, 1)["trajectory"][0]["tool_calls"]
    >>> [(c["name"], c["arguments"]) for c in calls]
    [('search', None), ('book', '{"id":7}')]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import polars as pl

from evalframe.core._arrow_text import list_array, numbers_array, strings_array
from evalframe.core._json._numbers import (
    exact_double,
    exact_integer,
    float_record,
    floats_at,
    number_end,
    written_as_repr,
)
from evalframe.core._json._strings import json_string
from evalframe.core._json._text import (
    ascii_space,
    copy_bytes,
    skip_ws,
    surely_not_blank,
    word_at,
)
from evalframe.core._json._values import (
    compact_value,
    flat_object,
    member_key,
    name_index,
    name_table,
    next_member,
    skip_value,
)
from evalframe.core._njit import kernel_int, njit
from evalframe.core._pages import small_pages

__all__ = [
    "CONTEXTS_FIELD",
    "TRAJECTORY_FIELD",
    "TURNS_FIELD",
    "Builder",
    "cells_loaded",
    "end_row",
    "nested_array",
    "nested_cells",
    "nested_columns",
    "nested_value",
    "read_array",
    "read_cells",
    "start_row",
]

CONTEXTS_FIELD, TRAJECTORY_FIELD, TURNS_FIELD = (kernel_int(f) for f in range(3))

_int = kernel_int  # constants kernels pass on: NumPy integers, not literals

# The builder's int64 table ``t``, by row. String columns (``_S``): where each item starts in
# the output and (``_S + _LEN``) its length, -1 for null; a tool call's four are 0-3 for a
# trajectory's calls, 4-7 for a turn's.
_S, _LEN = _int(0), _int(14)
_S_FINISH, _S_APPROVAL, _S_TEXT, _S_ID, _S_ROLE, _S_CONTENT = (_int(c) for c in range(8, 14))
# Integer columns (``_I``, and ``_I_NULL`` 1 where null): a call's tokens (trajectory 0,
# turn 1), steps, pending approvals, a turn's tokens. Float columns live in table ``f``; 1 in
# ``_F_NULL`` where null: a call's latency (trajectory 0, turn 1), a turn's latency.
_I, _I_NULL, _F_NULL = _int(28), _int(33), _int(38)
_STEPS, _PENDING, _TURN_TOKENS, _TURN_LATENCY = _int(2), _int(3), _int(4), _int(2)
# The call tables: a trajectory's calls, a turn's calls.
_TRAJECTORY_CALLS, _TURN_CALLS = _int(0), _int(1)
# List ends: per row its calls, approvals, context items and turns; per turn its calls.
_O = 41
_O_CALLS, _O_APPROVALS, _O_ITEMS, _O_TURNS, _O_TURN_CALLS = (_int(c) for c in range(_O, _O + 5))
# 1 where a row has contexts, a trajectory, turns.
_HAS = _int(46)
# Numbers left as text for Polars to read: start, end, float column, index.
_DEFER = _int(49)
# Counters: calls (trajectory 0, turn 1), approvals, items, turns, output bytes, deferred
# numbers, whether any context item had an id.
_C = _int(53)
_C_APPROVALS, _C_ITEMS, _C_TURNS, _C_OUT, _C_DEFER, _C_ANY_ID = (_int(c) for c in range(2, 8))
_TABLE_ROWS = 54
_NO_OFFSET = _int(0)

_WORDS = (
    # a trajectory's members (0-4), a tool call's (5-12), a context item's (13-14), a turn's
    "tool_calls", "steps", "finish_reason", "approvals", "pending_approvals",
    "name", "tool", "arguments", "args", "result", "error", "latency_ms", "tokens",
    "text", "id",
    "role", "content", "tool_calls", "latency_ms", "tokens",
)  # fmt: skip
_NAMES, _NAME_OFF = name_table(_WORDS)
_TRAJECTORY_KEYS, _CALL_KEYS, _ITEM_KEYS, _TURN_KEYS, _NO_KEYS = (
    _int(k) for k in (0, 5, 13, 15, len(_WORDS))
)
_NULL = np.frombuffer(b"null", np.uint8)
_SKIP_DEPTH: Final = 64  # nesting past this (in a member nobody reads) is left to Python
_QUOTE, _OPEN, _CLOSE, _LIST, _LIST_END, _COLON = 34, 123, 125, 91, 93, 58
_EXACT = 2**53


@dataclass(frozen=True)
class Builder:
    """What one compiled pass fills: ``arrays`` is the tuple the kernels take (the output
    bytes, the int64 and float64 tables, and scratch space)."""

    arrays: tuple[Any, ...]

    @classmethod
    def sized(cls, data: npt.NDArray[np.uint8], rows: int) -> Builder:
        """Room for ``rows`` rows of values read from ``data``: as many list items as it has
        commas and opening brackets, as many decoded bytes as it has bytes (in small pages:
        memory the pass does not write is never touched)."""
        items = int(_items_bound(data))
        cap = max(rows + items + 2, 8)  # the counters share the table
        table = small_pages((_TABLE_ROWS, cap + 1), np.int64)
        table[_C, :8] = 0
        table[_O : _O + 5, 0] = 0
        scratch = small_pages(data.size + 16, np.uint8)
        readonly = scratch.view()
        readonly.flags.writeable = False
        grown = data.size // 16 + 64  # bytes Python's spelling of floats may add to theirs
        return cls(
            (
                small_pages(data.size + 16 + grown, np.uint8),  # decoded and re-encoded text
                table,
                small_pages((3, cap), np.float64),
                np.empty(128, np.int64),  # scratch: nesting
                np.empty(2 * 4096, np.int64),  # scratch: the keys of the objects open
                scratch,  # scratch: member names, arguments given as text
                readonly,  # the same bytes, read-only: the array type compact_value reads
                float_record(cap + data.size // 16, grown),  # floats to check: written_as_repr
            )
        )


@njit(borrows=True)
def _items_bound(data: Any) -> int:
    """How many commas and opening brackets ``data`` holds: no list in it has more items.
    (One pass, which the compiler vectorises: nine times faster than ``bytes.count`` twice.)"""
    n = 0
    for c in data:
        n += (c == 44) | (c == 91)
    return n


@njit(borrows=True)
def _span(data: Any, p: int, end: int, b: Any, compact: bool) -> tuple[int, int, int]:
    """Write the string (or, ``compact``, the value as compact JSON) at ``p`` to the output:
    the position after it, where it was written and its length."""
    out, t = b[0], b[1]
    o = t[_C, _C_OUT]
    if compact:
        q, stop = flat_object(data, p, end, out, o, b[4]) if data[p] == _OPEN else (-1, -1)
        if q < 0:
            q, stop = compact_value(data, p, end, out, o, b[3], b[4], b[7])
        p = q
    else:
        p, stop = json_string(data, p, end, out, o)
    t[_C, _C_OUT] = max(stop, o)
    return p, o, stop - o


@njit(borrows=True)
def _string(data: Any, p: int, end: int, b: Any, col: int, i: int) -> int:
    """The string at ``p`` as string column ``col``'s item ``i``."""
    out, t = b[0], b[1]
    o = t[_C, _C_OUT]
    p, stop = json_string(data, p, end, out, o)
    t[_C, _C_OUT] = max(stop, o)
    t[_S + col, i] = o
    t[_LEN + col, i] = stop - o
    return p


@njit(borrows=True)
def _text_or_json(data: Any, p: int, end: int, b: Any, col: int, i: int) -> int:
    """A result or an error: null, a string as it is, anything else as compact JSON."""
    if data[p] == 0x6E:  # 'n'
        q = word_at(data, p, end, _NULL)
        if q >= 0:
            b[1][_LEN + col, i] = -1
            return q
    p, lo, length = _span(data, p, end, b, bool(data[p] != _QUOTE))
    b[1][_S + col, i] = lo
    b[1][_LEN + col, i] = length
    return p


@njit(borrows=True)
def _integral(data: Any, p: int, q: int) -> bool:
    k = p
    while k < q and data[k] not in (0x2E, 0x65, 0x45):  # '.', 'e', 'E'
        k += 1
    return k == q


@njit(borrows=True)
def _latency(data: Any, p: int, end: int, b: Any, col: int, i: int) -> int:
    """A latency: null, or a number >= 0 (read later from its text when it has more digits
    than the exact conversion takes)."""
    t, f = b[1], b[2]
    t[_F_NULL + col, i] = 1
    if data[p] == 0x6E:
        return word_at(data, p, end, _NULL)
    q = number_end(data, p, end)
    if q < 0 or data[p] == 0x2D:  # a negative latency is an error: the exact parser's
        return -1
    t[_F_NULL + col, i] = 0
    if _integral(data, p, q):
        r, whole = exact_integer(data, p, end)
        if r == q:
            f[col, i] = float(whole)
            return q
    else:
        r, value = exact_double(data, p, end)
        if r == q:
            f[col, i] = value
            return q
    d = t[_C, _C_DEFER]
    if d >= t.shape[1]:
        return -1
    t[_DEFER, d] = p
    t[_DEFER + 1, d] = q
    t[_DEFER + 2, d] = col
    t[_DEFER + 3, d] = i
    t[_C, _C_DEFER] = d + 1
    return q


@njit(borrows=True)
def _digits_text(out: Any, lo: int, hi: int) -> int:
    """The value of a text of ASCII digits (at most 18) with ASCII space around, or -1."""
    while lo < hi and ascii_space(out[lo]):
        lo += 1
    while hi > lo and ascii_space(out[hi - 1]):
        hi -= 1
    if hi == lo or hi - lo > 18:
        return -1
    value = 0
    for k in range(lo, hi):
        if not 0x30 <= out[k] <= 0x39:
            return -1
        value = value * 10 + (out[k] - 0x30)
    return value


@njit(borrows=True)
def _count(data: Any, p: int, end: int, b: Any, col: int, i: int) -> int:
    """A count: null, a non-negative integer, an integral float, or a string of digits."""
    t = b[1]
    t[_I_NULL + col, i] = 1
    c = data[p]
    if c == 0x6E:
        return word_at(data, p, end, _NULL)
    if c == 0x2D:
        return -1
    if c == _QUOTE:  # decoded past the output's end, then forgotten
        q, stop = json_string(data, p, end, b[0], t[_C, _C_OUT])
        value = -1 if q < 0 else _digits_text(b[0], t[_C, _C_OUT], stop)
    else:
        q = number_end(data, p, end)
        if q < 0:
            return -1
        if _integral(data, p, q):
            r, value = exact_integer(data, p, end)
        else:
            r, number = exact_double(data, p, end)
            value = int(number) if 0 <= number < _EXACT and number == np.floor(number) else -1
        if r != q:
            return -1
    if value < 0:
        return -1
    t[_I + col, i] = value
    t[_I_NULL + col, i] = 0
    return q


@njit(borrows=True)
def _no_call_fields(t: Any, c: int, k: int) -> None:
    """Call ``k`` of call table ``c`` before its fields: no arguments, result, error,
    latency or tokens."""
    t[_LEN + 4 * c + 1, k] = -1
    t[_LEN + 4 * c + 2, k] = -1
    t[_LEN + 4 * c + 3, k] = -1
    t[_I_NULL + c, k] = 1
    t[_F_NULL + c, k] = 1


@njit(borrows=True)
def _arguments_text(data: Any, p: int, end: int, b: Any) -> tuple[int, int, int]:
    """Arguments given as JSON text (the string at ``p``): re-encoded compactly, as the exact
    parser reads such text. Returns the position after the string, where the arguments were
    written and their length (-2 for blank text: no arguments), or -1 to decline (text that
    is not a JSON map)."""
    out, t, scratch, text = b[0], b[1], b[5], b[6]
    p, n = json_string(data, p, end, scratch, _NO_OFFSET)
    if p < 0:
        return -1, 0, 0
    q = skip_ws(text, 0, n)
    if q == n:
        return p, 0, -2
    if text[q] != _OPEN:
        return -1, 0, 0
    o = t[_C, _C_OUT]
    r, stop = compact_value(text, q, n, out, o, b[3], b[4], b[7])
    if r < 0 or skip_ws(text, r, n) != n:
        return -1, 0, 0
    t[_C, _C_OUT] = stop
    return p, o, stop - o


@njit(borrows=True)
def _call(data: Any, p: int, end: int, b: Any, c: int) -> int:
    """One tool call in its object form into call table ``c`` (0: trajectories, 1: turns)."""
    t, scratch = b[1], b[5]
    k = t[_C, c]
    base = 4 * c
    _no_call_fields(t, c, k)
    # the two spellings of the name (name, tool) and of the arguments (arguments, args):
    # where they were written and their lengths (-1: absent or null)
    name, name_len, tool, tool_len = 0, -1, 0, -1
    arguments, arguments_len, args, args_len = 0, -1, 0, -1
    seen = 0
    p = skip_ws(data, p + 1, end)
    done = p < end and data[p] == _CLOSE
    p += done
    while not done:
        p, n = member_key(data, p, end, scratch)
        if p < 0:
            return -1
        which = name_index(scratch, n, _NAMES, _NAME_OFF, _CALL_KEYS, _ITEM_KEYS)
        if which >= 0:
            bit = 1 << (which - _CALL_KEYS)
            if seen & bit:  # repeated: Python keeps the last, left to it
                return -1
            seen |= bit
        x = data[p]
        if which < 0:
            p = skip_value(data, p, end, b[3][:_SKIP_DEPTH])
        elif which <= _CALL_KEYS + 3:  # name, tool: a string; arguments, args: an object
            if x == 0x6E:
                p = word_at(data, p, end, _NULL)
            elif x == (_QUOTE if which <= _CALL_KEYS + 1 else _OPEN):
                p, lo, length = _span(data, p, end, b, bool(which > _CALL_KEYS + 1))
                if which == _CALL_KEYS:
                    name, name_len = lo, length
                elif which == _CALL_KEYS + 1:
                    tool, tool_len = lo, length
                elif which == _CALL_KEYS + 2:
                    arguments, arguments_len = lo, length
                else:
                    args, args_len = lo, length
            elif x == _QUOTE and which > _CALL_KEYS + 1:  # arguments given as JSON text
                p, lo, length = _arguments_text(data, p, end, b)
                if which == _CALL_KEYS + 2:
                    arguments, arguments_len = lo, length
                else:
                    args, args_len = lo, length
            else:  # another type: the exact parser's
                return -1
        elif which <= _CALL_KEYS + 5:  # result, error
            p = _text_or_json(data, p, end, b, base + which - _CALL_KEYS - 2, k)
        elif which == _CALL_KEYS + 6:
            p = _latency(data, p, end, b, c, k)
        else:
            p = _count(data, p, end, b, c, k)
        if p < 0:
            return -1
        p, done = next_member(data, p, end, _CLOSE)
        if p < 0:
            return -1
    if name_len < 0:  # the first spelling that is not null, as the exact parser chooses
        name, name_len = tool, tool_len
    if arguments_len == -1:
        arguments, arguments_len = args, args_len
    arguments_len = max(arguments_len, -1)  # blank text: no arguments
    if name_len < 0 or not surely_not_blank(b[0], name, name + name_len):
        return -1
    t[_S + base, k], t[_LEN + base, k] = name, name_len
    t[_S + base + 1, k], t[_LEN + base + 1, k] = arguments, arguments_len
    t[_C, c] = k + 1
    return p


@njit(borrows=True)
def _calls(data: Any, p: int, end: int, b: Any, c: int) -> int:
    """A list of tool calls (names or objects) into call table ``c``; null is none."""
    t = b[1]
    if data[p] == 0x6E:
        return word_at(data, p, end, _NULL)
    if data[p] != _LIST:
        return -1
    p = skip_ws(data, p + 1, end)
    done = p < end and data[p] == _LIST_END
    p += done
    while not done:
        k = t[_C, c]
        if p >= end or k >= t.shape[1]:
            return -1
        if data[p] == _QUOTE:
            base = 4 * c
            _no_call_fields(t, c, k)
            p = _string(data, p, end, b, base, k)
            lo = t[_S + base, k]
            if p < 0 or not surely_not_blank(b[0], lo, lo + t[_LEN + base, k]):
                return -1
            t[_C, c] = k + 1
        elif data[p] == _OPEN:
            p = _call(data, p, end, b, c)
        else:
            return -1
        if p < 0:
            return -1
        p, done = next_member(data, p, end, _LIST_END)
        if p < 0:
            return -1
    return p


@njit(borrows=True)
def _integer_text(data: Any, p: int, end: int, b: Any, col: int, k: int) -> int:
    """A JSON integer at ``p`` as its text (``str(int)``), string column ``col``'s item
    ``k``; -1 for any other number."""
    t = b[1]
    q = number_end(data, p, end)
    if q < 0 or not _integral(data, p, q) or q - p > 4000:
        return -1
    if q - p == 2 and data[p] == 0x2D and data[p + 1] == 0x30:
        return -1  # -0 is 0: left to Python
    o = t[_C, _C_OUT]
    t[_C, _C_OUT] = copy_bytes(data, p, q, b[0], o)
    t[_S + col, k] = o
    t[_LEN + col, k] = q - p
    return q


@njit(borrows=True)
def _approvals(data: Any, p: int, end: int, b: Any) -> int:
    """Action ids: strings, or integers as their text; null is none."""
    t = b[1]
    if data[p] == 0x6E:
        return word_at(data, p, end, _NULL)
    if data[p] != _LIST:
        return -1
    p = skip_ws(data, p + 1, end)
    done = p < end and data[p] == _LIST_END
    p += done
    while not done:
        k = t[_C, _C_APPROVALS]
        if p >= end or k >= t.shape[1]:
            return -1
        if data[p] == _QUOTE:
            p = _string(data, p, end, b, _S_APPROVAL, k)
        else:
            p = _integer_text(data, p, end, b, _S_APPROVAL, k)
        if p < 0:
            return -1
        t[_C, _C_APPROVALS] = k + 1
        p, done = next_member(data, p, end, _LIST_END)
        if p < 0:
            return -1
    return p


@njit(borrows=True)
def _trajectory(data: Any, p: int, end: int, b: Any, row: int) -> int:
    """A trajectory block (an object) as row ``row``."""
    t, scratch = b[1], b[5]
    if data[p] != _OPEN:
        return -1
    seen = 0
    calls_before = t[_C, 0]
    p = skip_ws(data, p + 1, end)
    done = p < end and data[p] == _CLOSE
    p += done
    while not done:
        p, n = member_key(data, p, end, scratch)
        if p < 0:
            return -1
        which = name_index(scratch, n, _NAMES, _NAME_OFF, _TRAJECTORY_KEYS, _CALL_KEYS)
        if which >= 0:
            if seen & (1 << which):
                return -1
            seen |= 1 << which
        if which == 0:
            p = _calls(data, p, end, b, _TRAJECTORY_CALLS)
        elif which == 1:
            p = _count(data, p, end, b, _STEPS, row)
        elif which == 2:
            if data[p] == _QUOTE:
                p = _string(data, p, end, b, _S_FINISH, row)
            elif data[p] == 0x6E:
                p = word_at(data, p, end, _NULL)
            else:
                return -1
        elif which == 3:
            p = _approvals(data, p, end, b)
        elif which == 4:
            p = _count(data, p, end, b, _PENDING, row)
        else:
            p = skip_value(data, p, end, b[3][:_SKIP_DEPTH])
        if p < 0:
            return -1
        p, done = next_member(data, p, end, _CLOSE)
        if p < 0:
            return -1
    if t[_I_NULL + _STEPS, row]:  # steps default to the number of calls
        t[_I + _STEPS, row] = t[_C, 0] - calls_before
        t[_I_NULL + _STEPS, row] = 0
    if t[_I_NULL + _PENDING, row]:  # and none pending
        t[_I + _PENDING, row] = 0
        t[_I_NULL + _PENDING, row] = 0
    t[_HAS + TRAJECTORY_FIELD, row] = 1
    return p


@njit(borrows=True)
def _context_item(data: Any, p: int, end: int, b: Any, k: int) -> int:
    """A ``{text, id}`` object as context item ``k``."""
    t, scratch = b[1], b[5]
    seen = 0
    p = skip_ws(data, p + 1, end)
    done = p < end and data[p] == _CLOSE
    p += done
    while not done:
        p, n = member_key(data, p, end, scratch)
        if p < 0:
            return -1
        which = name_index(scratch, n, _NAMES, _NAME_OFF, _ITEM_KEYS, _TURN_KEYS)
        if which >= 0:
            if seen & (1 << (which - _ITEM_KEYS)):
                return -1
            seen |= 1 << (which - _ITEM_KEYS)
        x = data[p]
        if which == _ITEM_KEYS:
            p = _string(data, p, end, b, _S_TEXT, k) if x == _QUOTE else -1
        elif which < 0:
            p = skip_value(data, p, end, b[3][:_SKIP_DEPTH])
        elif x == 0x6E:
            p = word_at(data, p, end, _NULL)
        else:  # a string id, or an integer's text
            t[_C, _C_ANY_ID] = 1
            if x == _QUOTE:
                p = _string(data, p, end, b, _S_ID, k)
            else:
                p = _integer_text(data, p, end, b, _S_ID, k)
        if p < 0:
            return -1
        p, done = next_member(data, p, end, _CLOSE)
        if p < 0:
            return -1
    return p if seen & 1 else -1  # no text: an error


@njit(borrows=True)
def _contexts(data: Any, p: int, end: int, b: Any, row: int) -> int:
    """Retrieved contexts: a list of strings and ``{id, text}`` objects."""
    t = b[1]
    if data[p] != _LIST:
        return -1
    p = skip_ws(data, p + 1, end)
    done = p < end and data[p] == _LIST_END
    p += done
    while not done:
        k = t[_C, _C_ITEMS]
        if p >= end or k >= t.shape[1]:
            return -1
        t[_LEN + _S_ID, k] = -1
        if data[p] == _QUOTE:
            p = _string(data, p, end, b, _S_TEXT, k)
        elif data[p] == _OPEN:
            p = _context_item(data, p, end, b, k)
        else:
            return -1
        if p < 0:
            return -1
        t[_C, _C_ITEMS] = k + 1
        p, done = next_member(data, p, end, _LIST_END)
        if p < 0:
            return -1
    t[_HAS + CONTEXTS_FIELD, row] = 1
    return p


@njit(borrows=True)
def _turn(data: Any, p: int, end: int, b: Any, k: int) -> int:
    """A ``{role, content, tool_calls, latency_ms, tokens}`` object as turn ``k``."""
    t, scratch = b[1], b[5]
    t[_LEN + _S_ROLE, k] = -1
    t[_LEN + _S_CONTENT, k] = -1
    t[_I_NULL + _TURN_TOKENS, k] = 1
    t[_F_NULL + _TURN_LATENCY, k] = 1
    seen = 0
    p = skip_ws(data, p + 1, end)
    done = p < end and data[p] == _CLOSE
    p += done
    while not done:
        p, n = member_key(data, p, end, scratch)
        if p < 0:
            return -1
        which = name_index(scratch, n, _NAMES, _NAME_OFF, _TURN_KEYS, _NO_KEYS)
        if which >= 0:
            if seen & (1 << (which - _TURN_KEYS)):
                return -1
            seen |= 1 << (which - _TURN_KEYS)
        x = data[p]
        if which == _TURN_KEYS:  # role
            p = _string(data, p, end, b, _S_ROLE, k) if x == _QUOTE else -1
        elif which == _TURN_KEYS + 1:  # content
            if x == 0x6E:
                p = word_at(data, p, end, _NULL)
            else:
                p = _string(data, p, end, b, _S_CONTENT, k) if x == _QUOTE else -1
        elif which == _TURN_KEYS + 2:
            p = _calls(data, p, end, b, _TURN_CALLS)
        elif which == _TURN_KEYS + 3:
            p = _latency(data, p, end, b, _TURN_LATENCY, k)
        elif which == _TURN_KEYS + 4:
            p = _count(data, p, end, b, _TURN_TOKENS, k)
        else:
            p = skip_value(data, p, end, b[3][:_SKIP_DEPTH])
        if p < 0:
            return -1
        p, done = next_member(data, p, end, _CLOSE)
        if p < 0:
            return -1
    lo, length = t[_S + _S_ROLE, k], t[_LEN + _S_ROLE, k]
    if length < 0 or not surely_not_blank(b[0], lo, lo + length):
        return -1
    return p


@njit(borrows=True)
def _turns(data: Any, p: int, end: int, b: Any, row: int) -> int:
    """A conversation: a list of turns."""
    t = b[1]
    if data[p] != _LIST:
        return -1
    p = skip_ws(data, p + 1, end)
    done = p < end and data[p] == _LIST_END
    p += done
    while not done:
        k = t[_C, _C_TURNS]
        if p >= end or k >= t.shape[1] or data[p] != _OPEN:
            return -1
        p = _turn(data, p, end, b, k)
        if p < 0:
            return -1
        t[_C, _C_TURNS] = k + 1
        t[_O_TURN_CALLS, k + 1] = t[_C, 1]
        p, done = next_member(data, p, end, _LIST_END)
        if p < 0:
            return -1
    t[_HAS + TURNS_FIELD, row] = 1
    return p


@njit(borrows=True)
def start_row(b: Any, row: int) -> None:
    """Row ``row`` before its fields: none of the three, a trajectory's defaults."""
    t = b[1]
    t[_HAS, row] = 0
    t[_HAS + 1, row] = 0
    t[_HAS + 2, row] = 0
    t[_I_NULL + _STEPS, row] = 1
    t[_I_NULL + _PENDING, row] = 1
    t[_LEN + _S_FINISH, row] = -1


@njit(borrows=True)
def end_row(b: Any, row: int) -> None:
    """Row ``row`` after its fields: where its lists end."""
    t = b[1]
    t[_O_CALLS, row + 1] = t[_C, 0]
    t[_O_APPROVALS, row + 1] = t[_C, _C_APPROVALS]
    t[_O_ITEMS, row + 1] = t[_C, _C_ITEMS]
    t[_O_TURNS, row + 1] = t[_C, _C_TURNS]


@njit(borrows=True)
def nested_value(field: int, data: Any, p: int, end: int, b: Any, row: int) -> int:
    """Read field ``field`` (contexts, trajectory or turns) of row ``row`` from the JSON
    value at ``p`` (not null); the position after it, or -1 to decline."""
    if row >= b[1].shape[1] - 1:
        return -1
    if field == CONTEXTS_FIELD:
        return _contexts(data, p, end, b, row)
    if field == TRAJECTORY_FIELD:
        return _trajectory(data, p, end, b, row)
    return _turns(data, p, end, b, row)


@njit
def nested_cells(field: int, data: Any, offsets: Any, valid: Any, b: Any, failed: Any) -> int:
    """Read field ``field`` of every row from a column of JSON texts (``data`` and Arrow
    ``offsets``; ``valid`` false for a null cell): a null, blank or ``null`` text is no value
    (but ``null`` contexts are an error). A row it cannot vouch for is left without a value
    and marked in ``failed``; returns how many."""
    t = b[1]
    saved = np.empty(8, np.int64)
    bad = 0
    for row in range(offsets.size - 1):
        for k in range(8):
            saved[k] = t[_C, k]
        copied = b[7][0]
        start_row(b, row)
        lo, hi = offsets[row], offsets[row + 1]
        p = skip_ws(data, lo, hi)
        ok = True
        if valid[row] and p < hi:
            if data[p] == 0x6E and field != CONTEXTS_FIELD:
                p = word_at(data, p, hi, _NULL)
            else:
                p = nested_value(field, data, p, hi, b, row)
            ok = p >= 0 and skip_ws(data, p, hi) == hi
        else:
            for k in range(lo, hi):  # blank to str.strip() only if all of it is ASCII
                if data[k] >= 0x80:
                    ok = False
        failed[row] = not ok
        if not ok:  # undo what the row wrote
            for k in range(8):
                t[_C, k] = saved[k]
            b[7][0] = copied
            start_row(b, row)
            bad += 1
        end_row(b, row)
    return bad


@njit
def nested_array(field: int, data: Any, b: Any, failed: Any, stack: Any) -> int:
    """Read field ``field`` (trajectory or turns) of every row from a JSON array of the
    rows' values (``null`` for none), as :func:`nested_cells` reads a column of their texts;
    a row it cannot vouch for is marked in ``failed`` and skipped. Returns how many, or -1
    when the array itself cannot be read (``stack``: scratch space for skipping a value, one
    item a level of nesting)."""
    t = b[1]
    end = data.size
    saved = np.empty(8, np.int64)
    bad = 0
    p = skip_ws(data, 0, end)
    if p >= end or data[p] != _LIST:
        return -1
    p += 1
    if failed.size == 0:
        p = skip_ws(data, p, end)
        if p >= end or data[p] != _LIST_END:
            return -1
        p += 1
    for row in range(failed.size):
        p = skip_ws(data, p, end)
        if p >= end:
            return -1
        for k in range(8):
            saved[k] = t[_C, k]
        copied = b[7][0]
        start_row(b, row)
        if data[p] == 0x6E:
            q = word_at(data, p, end, _NULL)
        else:
            q = nested_value(field, data, p, end, b, row)
        failed[row] = q < 0
        if q < 0:  # undo what the row wrote
            for k in range(8):
                t[_C, k] = saved[k]
            b[7][0] = copied
            start_row(b, row)
            bad += 1
            q = skip_value(data, p, end, stack)
            if q < 0:
                return -1
        end_row(b, row)
        q = skip_ws(data, q, end)
        last = row == failed.size - 1
        if q >= end or data[q] != (_LIST_END if last else 0x2C):
            return -1
        p = q + 1
    return bad if skip_ws(data, p, end) == end else -1


def read_array(field: int, text: bytes, rows: int) -> tuple[dict[str, pl.Series], Any]:
    """The columns of field ``field`` read from ``text``, a JSON array of ``rows`` values
    (see :func:`nested_array`), and the rows left to the exact parser (all of them when the
    array cannot be read, or a number read from its text is not finite)."""
    data = np.frombuffer(text, np.uint8)
    builder = Builder.sized(data, rows)
    failed = np.zeros(rows, np.bool_)
    if nested_array(field, data, builder.arrays, failed, np.empty(1024, np.int64)) < 0:
        return {}, np.ones(rows, np.bool_)
    columns = nested_columns(builder, data, rows)
    if columns is None:
        return {}, np.ones(rows, np.bool_)
    return columns, failed


def cells_loaded() -> bool:
    """Whether this process has already run the cells pass compiled, so a further call
    compiles and loads nothing (for types it has seen)."""
    kernel = nested_cells.dispatcher  # the strings it found are views into its output
    return kernel is not None and bool(kernel.signatures)


def read_cells(
    field: int, data: npt.NDArray[np.uint8], offsets: Any, valid: Any
) -> tuple[dict[str, pl.Series], npt.NDArray[np.bool_]]:
    """The columns of field ``field`` read from a column of JSON texts (see
    :func:`nested_cells`; only those some row has), and the rows left to the exact parser
    (all of them when a number read from its text is not finite)."""
    rows = offsets.size - 1
    builder = Builder.sized(data, rows)
    failed = np.zeros(rows, np.bool_)
    nested_cells(field, data, offsets, valid, builder.arrays, failed)
    columns = nested_columns(builder, data, rows)
    if columns is None:
        return {}, np.ones(rows, np.bool_)
    return columns, failed


# --- columns ---------------------------------------------------------------------------------


def _strings(b: tuple[Any, ...], col: int, n: int) -> Any:
    return strings_array(b[1][_S + col, :n], b[1][_LEN + col, :n], b[0], copy=False)


def _calls_array(b: tuple[Any, ...], c: int, n: int) -> Any:
    import pyarrow as pa

    t = b[1]
    fields = [_strings(b, 4 * c + k, n) for k in range(4)]
    fields.append(numbers_array(b[2][c, :n], t[_F_NULL + c, :n]))
    fields.append(numbers_array(t[_I + c, :n], t[_I_NULL + c, :n]))
    names = ["name", "arguments", "result", "error", "latency_ms", "tokens"]
    return pa.StructArray.from_arrays(fields, names)


def _read_deferred(b: tuple[Any, ...], data: npt.NDArray[np.uint8]) -> bool:
    """Put the numbers the pass left as text in their columns; False for one that is not
    finite (Python's reader gives infinity for 1e400, which the exact parser refuses)."""
    t = b[1]
    d = int(t[_C, _C_DEFER])
    if not d:
        return True
    defer = t[_DEFER : _DEFER + 4, :d]
    values = floats_at(data, defer[0], defer[1])
    if not np.isfinite(values).all():
        return False
    b[2][defer[2], defer[3]] = values
    return True


def nested_columns(
    builder: Builder, data: npt.NDArray[np.uint8], rows: int
) -> dict[str, pl.Series] | None:
    """The columns a pass over ``rows`` rows of ``data`` filled, as the exact parsers'
    frames hold them: ``contexts`` (and ``context_ids`` when an item had an id),
    ``trajectory`` and ``turns``, each only when some row has it; None to decline."""
    import pyarrow as pa

    from evalframe.core._agent_dtypes import TRAJECTORY, TRAJECTORY_COLUMN, TURNS, TURNS_COLUMN
    from evalframe.core._contexts import CONTEXT_IDS, CONTEXTS

    b = builder.arrays
    if not _read_deferred(b, data) or not written_as_repr(b[0], b[7]):
        return None
    t = b[1]
    has = t[_HAS : _HAS + 3, :rows].astype(np.bool_)
    out: dict[str, pl.Series] = {}
    if has[CONTEXTS_FIELD].any():
        valid = has[CONTEXTS_FIELD]
        ends = t[_O_ITEMS, : rows + 1]
        n = int(t[_C, _C_ITEMS])
        names = [CONTEXTS, CONTEXT_IDS] if t[_C, _C_ANY_ID] else [CONTEXTS]
        for name, col in zip(names, (_S_TEXT, _S_ID), strict=False):
            items = list_array(ends, _strings(b, col, n), valid)
            out[name] = pl.Series(name, items).cast(pl.List(pl.String))
    if has[TRAJECTORY_FIELD].any():
        valid = has[TRAJECTORY_FIELD]
        calls = _calls_array(b, 0, int(t[_C, 0]))
        approvals = _strings(b, _S_APPROVAL, int(t[_C, _C_APPROVALS]))
        fields = [
            list_array(t[_O_CALLS, : rows + 1], calls, valid),
            numbers_array(t[_I + _STEPS, :rows], ~valid),
            _strings(b, _S_FINISH, rows),
            list_array(t[_O_APPROVALS, : rows + 1], approvals, valid),
            numbers_array(t[_I + _PENDING, :rows], ~valid),
        ]
        names = ["tool_calls", "steps", "finish_reason", "approvals", "pending_approvals"]
        block = pa.StructArray.from_arrays(fields, names, mask=pa.array(~valid))
        out[TRAJECTORY_COLUMN] = pl.Series(TRAJECTORY_COLUMN, block).cast(TRAJECTORY)
    if has[TURNS_FIELD].any():
        valid = has[TURNS_FIELD]
        n = int(t[_C, _C_TURNS])
        turn_calls = list_array(t[_O_TURN_CALLS, : n + 1], _calls_array(b, 1, int(t[_C, 1])), None)
        turn = pa.StructArray.from_arrays(
            [
                _strings(b, _S_ROLE, n),
                _strings(b, _S_CONTENT, n),
                turn_calls,
                numbers_array(b[2][_TURN_LATENCY, :n], t[_F_NULL + _TURN_LATENCY, :n]),
                numbers_array(t[_I + _TURN_TOKENS, :n], t[_I_NULL + _TURN_TOKENS, :n]),
            ],
            ["role", "content", "tool_calls", "latency_ms", "tokens"],
        )
        turns = list_array(t[_O_TURNS, : rows + 1], turn, valid)
        out[TURNS_COLUMN] = pl.Series(TURNS_COLUMN, turns).cast(TURNS)
    return out
