"""Large saved outputs files read by one compiled pass over their bytes.

``{"outputs": {"<sample id>": "<output>", ...}}`` is how eval-harness saves outputs (or
``{"outputs": [{"id", "actual_output", ...}, ...]}``), and one ``{"id", "actual_output", ...}``
object per line (JSONL) how most systems export them. At 100,000 outputs of ranked ids
(89 MB) Python's ``json`` module spends 0.3 s building a dictionary of strings that the
reader then copies into a frame; an entry costs 3-6 us of Python each. :func:`outputs_map`,
:func:`outputs_list` and :func:`outputs_lines` read those shapes straight into the frame's
Arrow buffers instead (an entry's contexts, trajectory and turns through
``core/_outputs_nested.py``), or decline (return None) and the exact reader takes the file:
any other shape, any text Python's reader would refuse or keep differently (a lone
surrogate, a control character, a bad escape), invalid UTF-8, an empty, blank or repeated
sample id, a value of the wrong type, a nested value the exact parsers would judge, or a
number past the double range. (A float with more digits than the pass converts exactly is
read afterwards from its text, correctly rounded.) So what a pass vouches for is what the
exact reader returns, and every error keeps its message. ``read_outputs`` tries them on files of
4 MiB and more, and on smaller ones with nested fields once :func:`entries_loaded`.

Examples:
    >>> outputs_map(b'{"outputs": {"q1": "30 days", "q2": "[\\\\"d1\\\\"]"}}').rows()
    [('q1', '30 days'), ('q2', '["d1"]')]
    >>> outputs_map(b'{"outputs": {"q1": 3}}') is None
    True
    >>> import polars as pl
    >>> line = b'{"id": "q1", "actual_output": "30 days", "latency_ms": 12}\\n'
    >>> outputs_lines(line, pl.Schema({"latency_ms": pl.Float64})).rows()
    [('q1', '30 days', 12.0)]
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
import polars as pl

from evalframe.core import schema as C
from evalframe.core._arrow_text import string_array
from evalframe.core._json._numbers import (
    exact_double,
    exact_integer,
    floats_at,
    number_end,
    number_ends,
)
from evalframe.core._json._strings import json_string
from evalframe.core._json._text import (
    FALSE,
    NULL,
    TRUE,
    skip_space,
    skip_ws,
    valid_utf8,
    word_at,
)
from evalframe.core._json._values import member_key, name_index, name_table, next_member
from evalframe.core._njit import njit
from evalframe.core._outputs_nested import Builder, end_row, nested_columns, nested_value, start_row
from evalframe.core._pages import small_pages

__all__ = ["entries_loaded", "outputs_lines", "outputs_list", "outputs_map"]

_OUTPUTS = np.frombuffer(b"outputs", np.uint8)
_QUOTE, _COLON, _OPEN, _CLOSE = 34, 58, 123, 125
# Ids Python's str.strip() may empty: Unicode whitespace, and the separators it also strips.
_MAYBE_BLANK: Final = r"^[\s\x1c-\x1f]*$"


@njit(borrows=True)
def _outputs_value(data: Any, scratch: Any, opening: int) -> int:
    """The position just inside the ``opening`` bracket of a document's one leading member,
    ``"outputs"``; -1 for any other start."""
    end = data.size
    p = skip_ws(data, 0, end)
    if p >= end or data[p] != _OPEN:
        return -1
    p, k = member_key(data, skip_ws(data, p + 1, end), end, scratch)
    if p < 0 or k != _OUTPUTS.size or data[p] != opening:
        return -1
    for i in range(k):
        if scratch[i] != _OUTPUTS[i]:
            return -1
    return skip_ws(data, p + 1, end)


@njit
def _scan(data: Any, ids: Any, texts: Any) -> tuple[int, Any, Any]:
    """The number of entries, and the id and text offsets into ``ids`` and ``texts``; -1 for a
    document this pass does not vouch for. ``ids`` and ``texts`` are ``data``'s size."""
    end = data.size
    # An entry takes at least 7 bytes ('"a":"",'); sized once, the offsets are not reassigned
    # in the loop, where Numba would count references on every entry.
    id_off = np.empty(end // 7 + 2, np.int64)
    text_off = np.empty(end // 7 + 2, np.int64)
    id_off[0] = text_off[0] = 0
    p = _outputs_value(data, texts, _OPEN)
    if p < 0:
        return -1, id_off, text_off
    n = 0
    done = p < end and data[p] == _CLOSE
    if done:
        p += 1
    while not done:
        if p >= end or data[p] != _QUOTE:
            return -1, id_off, text_off
        p, id_stop = json_string(data, p, end, ids, id_off[n])
        if p < 0 or id_stop == id_off[n]:
            return -1, id_off, text_off
        p = skip_ws(data, p, end)
        if p >= end or data[p] != _COLON:
            return -1, id_off, text_off
        p = skip_ws(data, p + 1, end)
        if p >= end or data[p] != _QUOTE:
            return -1, id_off, text_off
        p, text_stop = json_string(data, p, end, texts, text_off[n])
        if p < 0:
            return -1, id_off, text_off
        n += 1
        id_off[n] = id_stop
        text_off[n] = text_stop
        p, done = next_member(data, p, end, _CLOSE)
        if p < 0:
            return -1, id_off, text_off
    p = skip_ws(data, p, end)
    if p >= end or data[p] != _CLOSE or skip_ws(data, p + 1, end) != end:
        return -1, id_off, text_off
    return n, id_off, text_off


def outputs_map(data: bytes) -> pl.DataFrame | None:
    """The saved outputs of a map-form file's bytes (no BOM), or None: see the module.

    Returns:
        ``sample_id`` and ``actual_output``, one row per output in file order, as the exact
        reader returns them.
    """
    raw = np.frombuffer(data, np.uint8)
    ids = small_pages(raw.size, np.uint8)
    texts = small_pages(raw.size, np.uint8)
    n, id_off, text_off = _scan(raw, ids, texts)
    if n < 0:
        return None
    if not valid_utf8(raw):
        return None
    frame = pl.DataFrame(
        [
            pl.Series(C.SAMPLE_ID, string_array(id_off[: n + 1], ids)),
            pl.Series(C.ACTUAL_OUTPUT, string_array(text_off[: n + 1], texts)),
        ]
    )
    sample_ids = frame.get_column(C.SAMPLE_ID)
    if sample_ids.is_duplicated().any() or sample_ids.str.contains(_MAYBE_BLANK).any():
        return None  # the exact reader names the id
    return frame


# --- entries: {id, actual_output, operational numbers} objects, per line or in a list ---------

# The members a line may name, by index: the id (either spelling), the output, the nested
# fields (core/_outputs_nested.py), then the operational numbers.
_ID, _SAMPLE_ID, _TEXT = 0, 1, 2
_NESTED = ("contexts", "trajectory", "turns")
_FIRST_NUMBER = 3 + len(_NESTED)


def _names(numbers: list[str]) -> tuple[Any, Any]:
    return name_table(["id", C.SAMPLE_ID, C.ACTUAL_OUTPUT, *_NESTED, *numbers])


@njit(borrows=True)
def _line_end(data: Any, p: int, end: int) -> int:
    while p < end and data[p] != 0x0A:
        p += 1
    return p


@njit
def _scan_entries(
    data: Any,
    ids: Any,
    texts: Any,
    alt: Any,
    scratch: Any,
    names: Any,
    offsets: Any,
    integer: Any,
    listed: bool,
    nested: Any,
    has_nested: bool,
) -> tuple[int, Any, Any, Any, Any, Any, Any]:
    """Read the entries of a JSONL file, or (``listed``) of a ``{"outputs": [...]}``
    document: entries, id and text offsets, integer and float values, validity and which
    numeric members any entry named; -1 entries for a file this pass does not vouch for.
    With ``has_nested``, contexts, trajectories and turns go to the builder ``nested``
    (``core/_outputs_nested.py``); without, an entry holding one is declined."""
    end = data.size
    room = end // 30 + 2  # an entry takes at least 30 bytes: '{"id":"a","actual_output":""},'
    columns = integer.size
    id_off = np.empty(room + 1, np.int64)
    text_off = np.empty(room + 1, np.int64)
    # read only where valid: not zeroed (zeroing 2 x 85 MB took a 54 MB file's pass 0.1 s)
    ints = np.empty((columns, room), np.int64)
    floats = np.empty((columns, room), np.float64)
    valid = np.zeros((columns, room), np.bool_)
    seen = np.zeros(columns, np.bool_)
    got = np.zeros(offsets.size - 1, np.bool_)
    id_off[0] = text_off[0] = 0
    n = 0
    p = 0
    if listed:
        p = _outputs_value(data, scratch, 0x5B)
        if p < 0:
            return -1, id_off, text_off, ints, floats, valid, seen
    while p < end:
        if not listed:
            p = skip_space(data, p, end, False)
            if p < end and data[p] == 0x0A:
                p += 1
                continue
            if p >= end:
                break
        if data[p] != _OPEN or n == room:
            return -1, id_off, text_off, ints, floats, valid, seen
        if has_nested:
            start_row(nested, n)
        got[:] = False
        id_stop, sid_stop, text_stop = -1, -1, -1
        p = skip_space(data, p + 1, end, listed)
        done = p < end and data[p] == _CLOSE
        p += done
        while not done:
            if p >= end or data[p] != _QUOTE:
                return -1, id_off, text_off, ints, floats, valid, seen
            p, k = json_string(data, p, end, scratch, 0)
            if p < 0:
                return -1, id_off, text_off, ints, floats, valid, seen
            p = skip_space(data, p, end, listed)
            if p >= end or data[p] != _COLON:
                return -1, id_off, text_off, ints, floats, valid, seen
            p = skip_space(data, p + 1, end, listed)
            if p >= end:
                return -1, id_off, text_off, ints, floats, valid, seen
            which = name_index(scratch, k, names, offsets, 0, offsets.size - 1)
            if which >= 0:
                if got[which]:  # a repeated member: Python keeps the last, left to it
                    return -1, id_off, text_off, ints, floats, valid, seen
                got[which] = True
            c = data[p]
            null = word_at(data, p, end, NULL) if c == 0x6E else -1  # 'n'
            if which >= _FIRST_NUMBER:
                col = which - _FIRST_NUMBER
                seen[col] = True
                if null >= 0:
                    p = null
                elif integer[col]:
                    p, whole = exact_integer(data, p, end)
                    ints[col, n] = whole
                    valid[col, n] = True
                else:
                    q, number = exact_double(data, p, end)
                    if q < 0:  # more digits than it converts exactly: read later, from its text
                        q, number = number_end(data, p, end), np.nan
                        ints[col, n] = p
                    floats[col, n] = number
                    valid[col, n] = True
                    p = q
            elif which == _ID and c == _QUOTE:
                p, id_stop = json_string(data, p, end, ids, id_off[n])
            elif which == _SAMPLE_ID and c == _QUOTE:
                p, sid_stop = json_string(data, p, end, alt, 0)  # used when "id" is absent
            elif which == _TEXT and c == _QUOTE:
                p, text_stop = json_string(data, p, end, texts, text_off[n])
            elif null >= 0 and which != _TEXT:
                p = null  # a null id, contexts, trajectory or turns: as if absent
            elif has_nested and _TEXT < which < _FIRST_NUMBER:
                stop = end if listed else _line_end(data, p, end)  # a line holds its entry
                p = nested_value(which - _TEXT - 1, data, p, stop, nested, n)
            elif which >= 0 or c in (_OPEN, 0x5B):
                return -1, id_off, text_off, ints, floats, valid, seen
            elif c == _QUOTE:
                p = json_string(data, p, end, scratch, 0)[0]
            else:  # a scalar member the reader ignores
                t, f = word_at(data, p, end, TRUE), word_at(data, p, end, FALSE)
                p = t if t >= 0 else f if f >= 0 else number_end(data, p, end)
            if p < 0:
                return -1, id_off, text_off, ints, floats, valid, seen
            p = skip_space(data, p, end, listed)
            if p < end and data[p] == 0x2C:
                p = skip_space(data, p + 1, end, listed)
            elif p < end and data[p] == _CLOSE:
                p += 1
                done = True
            else:
                return -1, id_off, text_off, ints, floats, valid, seen
        if id_stop < 0 and sid_stop > 0:  # no "id" (or a null one): "sample_id" names it
            id_stop = id_off[n] + sid_stop
            ids[id_off[n] : id_stop] = alt[:sid_stop]
        if text_stop < 0 or id_stop <= id_off[n]:  # no output, or no (or an empty) id
            return -1, id_off, text_off, ints, floats, valid, seen
        if has_nested:
            end_row(nested, n)
        n += 1
        id_off[n] = id_stop
        text_off[n] = text_stop
        p = skip_space(data, p, end, listed)
        if not listed:
            if p < end and data[p] != 0x0A:
                return -1, id_off, text_off, ints, floats, valid, seen
            p += 1
        elif p < end and data[p] == 0x2C:
            p = skip_ws(data, p + 1, end)
        elif p < end and data[p] == 0x5D:  # the list's end, then the document's
            p = skip_ws(data, p + 1, end)
            if p >= end or data[p] != _CLOSE or skip_ws(data, p + 1, end) != end:
                return -1, id_off, text_off, ints, floats, valid, seen
            return n, id_off, text_off, ints, floats, valid, seen
        else:
            return -1, id_off, text_off, ints, floats, valid, seen
    if listed:  # the document ended inside its list
        return -1, id_off, text_off, ints, floats, valid, seen
    return n, id_off, text_off, ints, floats, valid, seen


def _read_later(values: Any, valid: Any, starts: Any, raw: Any) -> bool:
    """Put in ``values`` the floats the pass left as text (more digits than it converts
    exactly): NaN there, as JSON has none, their texts' starts in ``starts``. False for one
    past the double range, which the exact reader takes (as it does in nested values)."""
    later = np.flatnonzero(np.isnan(values) & valid)
    if later.size:
        at = starts[later]
        values[later] = floats_at(raw, at, number_ends(raw, at))
    return bool(np.isfinite(values[later]).all())


def entries_loaded() -> bool:
    """Whether this process has already run the entries pass compiled, so a further call
    compiles and loads nothing (for types it has seen)."""
    kernel = _scan_entries.dispatcher  # the strings it found are views into its output
    return kernel is not None and bool(kernel.signatures)


def outputs_lines(data: bytes, numbers: pl.Schema) -> pl.DataFrame | None:
    """The saved outputs of a JSONL file's bytes (no BOM), or None: see the module.

    Args:
        data: the file's bytes.
        numbers: the numeric members an entry may carry, with their dtypes (Int64 or Float64).

    Returns:
        ``sample_id``, ``actual_output`` and the ``numbers`` any entry names, one row per
        entry in file order, as the exact reader returns them.
    """
    return _entries(data, numbers, listed=False)


def outputs_list(data: bytes, numbers: pl.Schema) -> pl.DataFrame | None:
    """The saved outputs of a list-form file's bytes (``{"outputs": [{"id", "actual_output",
    ...}, ...]}``, no BOM), or None: as :func:`outputs_lines`."""
    return _entries(data, numbers, listed=True)


def _entries(data: bytes, numbers: pl.Schema, *, listed: bool) -> pl.DataFrame | None:
    raw = np.frombuffer(data, np.uint8)
    names, offsets = _names(list(numbers))
    integer = np.array([dtype == pl.Int64 for dtype in numbers.values()])
    ids, texts, alt, scratch = (small_pages(raw.size, np.uint8) for _ in range(4))
    has_nested = any(f'"{name}"'.encode() in data for name in _NESTED)
    room = raw.size // 30 + 2  # as _scan_entries sizes its own arrays
    nested = Builder.sized(raw, room) if has_nested else Builder.sized(raw[:0], 0)
    n, id_off, text_off, ints, floats, valid, seen = _scan_entries(
        raw, ids, texts, alt, scratch, names, offsets, integer, listed, nested.arrays, has_nested
    )
    if n <= 0:  # declined, or no entry (an error, or an empty list, the exact reader takes)
        return None
    if not valid_utf8(raw):
        return None
    found = nested_columns(nested, raw, n) if has_nested else {}
    if found is None:
        return None
    columns = [
        pl.Series(C.SAMPLE_ID, string_array(id_off[: n + 1], ids)),
        pl.Series(C.ACTUAL_OUTPUT, string_array(text_off[: n + 1], texts)),
    ]
    for col, (name, dtype) in enumerate(numbers.items()):
        if seen[col]:
            values = ints[col, :n] if integer[col] else floats[col, :n]
            if not integer[col] and not _read_later(values, valid[col, :n], ints[col], raw):
                return None
            column = pl.Series(name, values, dtype=dtype)
            columns.append(column.scatter(np.flatnonzero(~valid[col, :n]), None))
    frame = pl.DataFrame([*columns, *found.values()])
    sample_ids = frame.get_column(C.SAMPLE_ID)
    if sample_ids.is_duplicated().any() or sample_ids.str.contains(_MAYBE_BLANK).any():
        return None  # the exact reader names the id
    return frame
