"""Saved outputs entries read by orjson and checked a column at a time, for files too small to
be worth loading the compiled pass.

The exact reader (``core/_outputs.py``) checks each entry, context, turn and tool call in
Python, which costs several times what parsing the file does; the compiled pass
(``core/_outputs_compiled.py``) is faster, but loading numba costs a new process 1-2 s.
:func:`quick_lines` (JSONL) and :func:`quick_list` (``{"outputs": [...]}``) parse with
orjson, which loads in milliseconds, gather each field of every entry, call and turn into one
list, check each list's types at once and its texts as a Polars column, and build the frame
from those lists; or decline (return None), and the exact reader takes the file. They
decline:

* what orjson refuses or might read otherwise than Python's ``json``: a lone surrogate,
  ``NaN``, ``Infinity``, a number past the double range, invalid UTF-8, and an integer past
  64 bits, which orjson reads as a float (where a count or an id is due, that float is a
  wrong type; among values written again, one from 1e18 up may be such a float; where a
  float is due, it is the value ``float()`` makes of the integer, both correctly rounded);
* a list-form document with a member beside ``outputs`` (so no key repeats at its top level;
  below it, a repeated key keeps its last value, in orjson as in Python);
* a value the exact parsers would refuse or convert: a wrong type, JSON text, a count given
  as a string or a float, a blank name or role, a blank or repeated id;
* a map or list they would re-encode or skip that holds more brackets than the depth limit
  leaves room for.

Arguments, results and errors that are not strings are written by orjson, which writes JSON
values as Python's compact encoder does except some floats: a text with a digit before ``.``,
``e`` or ``E`` is written by Python's encoder instead. So every frame they return is the
exact reader's, and every error is raised by the exact reader.

Examples:
    >>> quick_lines(b'{"id": "q1", "actual_output": "30 days"}\\n', _NO_NUMBERS).rows()
    [('q1', '30 days')]
    >>> quick_lines(b'{"id": "q1", "actual_output": NaN}\\n', _NO_NUMBERS) is None
    True
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from itertools import chain, repeat
from operator import itemgetter
from typing import Any, Final

import orjson
import polars as pl

from evalframe.core import schema as C
from evalframe.core._agent_dtypes import TOOL_CALL, TRAJECTORY, TURN
from evalframe.core._formats import digits_as_zero
from evalframe.core._trajectory import COMPACT_JSON
from evalframe.core._yaml import MAX_DEPTH

__all__ = ["quick_array", "quick_cells", "quick_lines", "quick_list"]

_NO_NUMBERS: Final = pl.Schema()
# A value these readers re-encode or ignore sits at most this deep (document, outputs, entry,
# turns, turn, tool_calls, call, arguments); a text with no more brackets than the rest of the
# limit cannot cross it.
_BRACKETS: Final = MAX_DEPTH - 8
_WS: Final = b" \t\n\r"
_W: Final = b"[ \t\n\r]*"
_SPACE: Final = re.compile(_W)
# A digit before ".", "e" or "E", once digits are zeros: a fifth of three searches' time.
_FLOAT_ZEROS: Final = re.compile(b"0[.eE]")
# A float from 1e18 up as orjson writes it; an integer past 64 bits (from 9.2e18) is read so.
_BIG_FLOAT: Final = re.compile(b"[0-9]e\\+(?:1[89]|[2-9][0-9]|[0-9]{3})")
# An array's runs (see _array): their length, and the first item's opening: its first key,
# and the second where a plain value stands between (an entry's "id" and "actual_output", where
# its contexts' items have "id" and "text").
_RUN: Final = 1 << 15
_SCALAR: Final = b'(?:"[^"\\\\]*"|[-+.0-9eE]+|true|false|null)'
_OPENING: Final = re.compile(
    b"\\[" + _W + b'{' + _W + b'("[^"\\\\]*")(?:' + _W + b":" + _W + _SCALAR + _W + b"," + _W
    + b'("[^"\\\\]*"))?'
)  # fmt: skip
# A JSONL file is split into lines, and a text searched for floats, a piece this long at a
# time: the pieces' copies reuse one memory, where a copy of the whole touches fresh pages.
_PIECE: Final = 1 << 16
# Stands between values written as one array: DEL, which orjson writes as it is. Its text is
# ASCII (a non-Latin-1 mark's would be decoded two bytes a character) with no digit (every
# digit makes a candidate for the floats' search), and the split's separator is under 6
# characters (from 6, CPython's search prepares its table again at each match).
_MARKS: Final = tuple(
    (mark, orjson.dumps(mark), f",{orjson.dumps(mark).decode()},")
    for mark in ("\x7f", "\x1fevalframe\x1f")  # the second where a value holds the first
)

_ENTRY_KEYS: Final = frozenset(
    {"id", C.SAMPLE_ID, C.ACTUAL_OUTPUT, "contexts", "trajectory", "turns"}
)
_CALL_KEYS: Final = frozenset(
    {"name", "tool", "arguments", "args", "result", "error", "latency_ms", "tokens"}
)
_TRAJECTORY_KEYS: Final = frozenset(TRAJECTORY.to_schema())
_TURN_KEYS: Final = frozenset(TURN.to_schema())
_ITEM_KEYS: Final = frozenset({"id", "text"})
_NONE: Final = type(None)


class _Decline(Exception):  # noqa: N818 - never escapes: the reader returns None
    """Something the exact reader must judge."""


def quick_lines(data: bytes, numbers: pl.Schema) -> pl.DataFrame | None:
    """The saved outputs of a JSONL file's bytes (no BOM), or None: see the module.

    Args:
        data: the file's bytes.
        numbers: the numeric members an entry may carry, with their dtypes (Int64 or Float64).
    """
    try:
        entries: list[Any] = []
        at = 0
        while at < len(data):  # a piece of lines at a time: their copies reuse one memory
            stop = data.find(b"\n", at + _PIECE) + 1 or len(data)
            lines = data[at:stop].split(b"\n")
            # isspace() where strip() would copy each line to say the same
            entries.extend(orjson.loads(line) for line in lines if line and not line.isspace())
            at = stop
        return _frame(entries, numbers)
    except (orjson.JSONDecodeError, _Decline):
        return None


def quick_list(data: bytes, numbers: pl.Schema) -> pl.DataFrame | None:
    """The saved outputs of a list-form file's bytes (``{"outputs": [...]}``, no BOM), or
    None: as :func:`quick_lines`. The document's one member is ``outputs``: its value is
    parsed alone, so a second member (a repeated ``outputs`` too) is not JSON and declined."""
    start = _after(data, _after(data, _after(data, 0, b"{"), b'"outputs"'), b":")
    end = len(data)
    while end and data[end - 1] in _WS:
        end -= 1
    if start < 0 or end <= start or data[end - 1] != ord("}"):
        return None
    try:
        entries = _array(data, start, end - 1)
        if type(entries) is not list:
            return None
        return _frame(entries, numbers)
    except (orjson.JSONDecodeError, _Decline):
        return None


def _array(data: bytes, start: int, end: int) -> Any:
    """``orjson.loads(data[start:end])``, a JSON value; an array of objects is parsed a run of
    items at a time.

    In a new process the parse is paid mostly in fresh pages (about 2 us each): parsed whole,
    the document's parse tree touches over a third more pages than Python's ``json`` does, where
    runs of about 32 KiB reuse the memory the last run freed (and stay in the cache). A run ends
    at a ``}`` followed by a comma and an opening like the first item's. A cut anywhere else (in
    a string, or inside an item) leaves a string or a container unclosed in the run before it,
    which then does not parse: the text is parsed whole, so the value and any error are
    orjson's for the whole text.
    """
    view = memoryview(data)
    at = _SPACE.match(data, start).end()  # type: ignore[union-attr]  # it matches nothing too
    last = end
    while last > at and data[last - 1] in _WS:
        last -= 1
    opening = _OPENING.match(data, at)
    if last - at < 2 * _RUN or opening is None or data[last - 1] != ord("]"):
        return orjson.loads(view[start:end])  # the value, not copied
    item = b"({" + _W + re.escape(opening[1])
    if opening[2] is not None:
        item += _W + b":" + _W + _SCALAR + _W + b"," + _W + re.escape(opening[2])
    cuts = re.compile(b"}" + _W + b"," + _W + item + b")")
    runs: list[Any] = []
    at = at + 1
    while True:
        cut = cuts.search(data, at + _RUN, last)
        if cut is None and not runs:  # one run: the text as it is
            return orjson.loads(view[start:end])
        stop = last - 1 if cut is None else cut.start() + 1
        try:
            runs.append(orjson.loads(b"".join((b"[", view[at:stop], b"]"))))
        except orjson.JSONDecodeError:
            return orjson.loads(view[start:end])
        if cut is None:
            return list(chain.from_iterable(runs))
        at = cut.start(1)


def quick_cells(field: str, cells: list[str | None]) -> pl.Series | None:
    """Column ``field`` (``trajectory`` or ``turns``) from a table's JSON texts, as the exact
    reader parses each (a null or blank text is no value), or None: as :func:`quick_lines`.
    Some cell must hold a text."""
    text = "\n".join(t for t in cells if t is not None).encode()
    return _agent_column(
        field,
        text,
        lambda: [None if t is None or not t.strip() else orjson.loads(t) for t in cells],
    )


def quick_array(field: str, array: bytes) -> pl.Series | None:
    """Column ``field`` (``trajectory`` or ``turns``) from a JSON array of values (null for
    none) as orjson writes Python's, read as the exact parser reads each, or None: as
    :func:`quick_lines`."""
    return _agent_column(field, array, lambda: _array(array, 0, len(array)))


def _agent_column(field: str, text: bytes, values: Callable[[], Any]) -> pl.Series | None:
    """Column ``field`` of the ``values()`` parsed from JSON ``text``, or None."""
    build = _trajectories if field == "trajectory" else _turns
    try:
        return build(values())
    except (orjson.JSONDecodeError, _Decline):
        return None


def _after(data: bytes, at: int, token: bytes) -> int:
    """Where ``token`` ends in ``data`` when it follows JSON whitespace from ``at``; -1 where
    something else stands there (or ``at`` is -1)."""
    if at < 0:
        return -1
    at = _SPACE.match(data, at).end()  # type: ignore[union-attr]  # it matches nothing too
    return at + len(token) if data.startswith(token, at) else -1


def _frame(entries: list[Any], numbers: pl.Schema) -> pl.DataFrame:
    """The frame of ``entries``."""
    if not entries or _types(entries) != {dict}:
        raise _Decline
    keys: set[str] = set().union(*entries)
    _ignored(entries, keys, _ENTRY_KEYS | frozenset(numbers))
    ids = _field(entries, keys, "id", C.SAMPLE_ID)
    columns = [
        _strings(C.SAMPLE_ID, ids),
        _strings(C.ACTUAL_OUTPUT, _field(entries, keys, C.ACTUAL_OUTPUT)),
    ]
    if len(set(ids)) < len(ids) or _blank(ids):
        raise _Decline  # the exact reader names the id
    for name, dtype in numbers.items():
        if name in keys:
            columns.append(_number_column(name, _field(entries, keys, name), dtype))
    columns.extend(_contexts(_field(entries, keys, "contexts")))
    trajectories = _field(entries, keys, "trajectory")
    if any(t is not None for t in trajectories):
        columns.append(_trajectories(trajectories))
    turns = _field(entries, keys, "turns")
    if any(t is not None for t in turns):
        columns.append(_turns(turns))
    return pl.DataFrame(columns)


# --- checks in bulk ---------------------------------------------------------------------------


def _types(values: Iterable[object]) -> set[type]:
    return set(map(type, values))


def _blank(texts: Iterable[str]) -> bool:
    """Whether one of ``texts`` (each distinct one once) is empty or only whitespace."""
    return any(not text.strip() for text in set(texts))


def _strings(name: str, values: list[Any], nulls: bool = False) -> pl.Series:
    """Column ``name`` of ``values``, which are strings (or None, where ``nulls``): Polars
    refuses any other type as it builds the column."""
    try:
        column = pl.Series(name, values, pl.String)
    except TypeError:
        raise _Decline from None
    if not nulls and column.null_count():
        raise _Decline
    return column


def _nulls(name: str, height: int, dtype: pl.DataType) -> pl.Series:
    """A column of ``height`` nulls."""
    return pl.Series(name, [None] * height, dtype)


def _shallow(values: Iterable[object]) -> None:
    """Decline maps or lists among ``values`` (ones the reader ignores) that might nest past
    the depth limit."""
    nested = [v for v in values if type(v) is dict or type(v) is list]
    if nested:
        # Only their brackets are counted: their floats' spelling is moot.
        _compact_texts("", nested, spelled=False, nulls=False)


def _compact_texts(
    name: str, values: list[Any], *, spelled: bool = True, nulls: bool = True
) -> pl.Series:
    """Column ``name``: each of ``values`` (maps, lists, numbers, booleans, or None for a
    null, where ``nulls``) as Python's compact encoder writes it (where ``spelled``: else
    with floats as orjson spells them); declines one with more brackets than the depth limit
    leaves room for."""
    if not values:
        return pl.Series(name, [], pl.String)
    for mark, text, between in _MARKS:
        marked: list[Any] = [mark] * (2 * len(values) - 1)
        marked[::2] = values
        try:  # one array, the values separated by the mark: one call, where each cost 2 us
            blob = orjson.dumps(marked)
        except orjson.JSONEncodeError:  # nesting past orjson's limit
            raise _Decline from None
        if blob.count(text) == len(values) - 1:  # no value holds the mark itself
            separator = between
            break
    else:
        raise _Decline
    respell = spelled and _floats(blob)  # orjson writes some floats as Python does not
    if respell and _BIG_FLOAT.search(blob):  # maybe read from an integer past 64 bits
        raise _Decline
    view, cut = memoryview(blob), separator.encode()
    pieces: list[pl.Series] = []
    at, end = 1, len(blob) - 1  # within the brackets
    while True:  # a piece at a time: the texts' strings reuse one memory
        stop = blob.find(cut, at + _PIECE, end)
        texts = str(view[at : end if stop < 0 else stop], "utf-8").split(separator)
        if respell:
            done = sum(map(len, pieces))
            texts = [
                COMPACT_JSON.encode(v) if _floats(t.encode()) else t
                for v, t in zip(values[done : done + len(texts)], texts, strict=True)
            ]
        if max(map(len, texts)) > _BRACKETS and any(
            t.count("{") + t.count("[") > _BRACKETS for t in texts if len(t) > _BRACKETS
        ):
            raise _Decline
        pieces.append(pl.Series(name, texts, pl.String))
        if stop < 0:
            break
        at = stop + len(cut)
    column = pieces[0] if len(pieces) == 1 else pl.concat(pieces)
    if nulls and None in values:  # written as null, which no other value is
        column = pl.select(pl.when(column != "null").then(column)).to_series()
    return column


def _floats(text: bytes) -> bool:
    """Whether ``text`` might hold a float: a digit before ``.``, ``e`` or ``E``. Read a piece
    at a time: a copy of the whole would touch fresh pages, where the pieces' copies reuse one
    another's memory."""
    return any(
        _FLOAT_ZEROS.search(digits_as_zero(text[at : at + _PIECE + 1])) is not None
        for at in range(0, len(text), _PIECE)
    )


def _number_column(name: str, values: list[Any], dtype: pl.DataType) -> pl.Series:
    """An operational number: an integer (Int64), or an integer or float (Float64)."""
    kinds = _types(values)
    if dtype == pl.Int64:
        if not kinds <= {int, _NONE}:
            raise _Decline
    elif not kinds <= {int, float, _NONE}:
        raise _Decline
    elif int in kinds:
        values = [float(v) if type(v) is int else v for v in values]
    try:
        return pl.Series(name, values, dtype=dtype)
    except TypeError:  # past Int64
        raise _Decline from None


def _counts(name: str, rows: list[dict[str, Any]], keys: set[str]) -> pl.Series:
    """Column ``name`` of the rows' non-negative integers below 2^63 (or None), as the exact
    parser's counts."""
    if name not in keys:
        return _nulls(name, len(rows), pl.Int64())
    values = _field(rows, keys, name)
    if not _types(values) <= {int, _NONE}:
        raise _Decline
    try:
        column = pl.Series(name, values, pl.Int64)
    except TypeError:  # past Int64
        raise _Decline from None
    if (column < 0).any():
        raise _Decline
    return column


def _latencies(rows: list[dict[str, Any]], keys: set[str]) -> pl.Series:
    """The rows' ``latency_ms`` column: numbers >= 0 (or None) as floats."""
    if "latency_ms" not in keys:
        return _nulls("latency_ms", len(rows), pl.Float64())
    values = _field(rows, keys, "latency_ms")
    kinds = _types(values)
    if not kinds <= {int, float, _NONE}:
        raise _Decline
    if int in kinds:
        values = [float(v) if type(v) is int else v for v in values]
    column = pl.Series("latency_ms", values, pl.Float64)
    if (column < 0).any():
        raise _Decline
    return column


def _text_values(name: str, rows: list[dict[str, Any]], keys: set[str]) -> pl.Series:
    """Column ``name`` of the rows' results or errors: strings as they are, any other value as
    compact JSON."""
    if name not in keys:
        return _nulls(name, len(rows), pl.String())
    values = _field(rows, keys, name)
    kinds = _types(values)
    if not kinds <= {str, _NONE}:
        if not kinds <= {str, _NONE, dict, list, int, float, bool}:
            raise _Decline
        strings = [v if type(v) is str else None for v in values]
        others = [None if type(v) is str else v for v in values]
        return pl.Series(name, strings, pl.String).fill_null(_compact_texts(name, others))
    return pl.Series(name, values, pl.String)


def _lists(name: str, items: pl.Series | pl.DataFrame, lengths: Sequence[int]) -> pl.Series:
    """A list column of ``len(lengths)`` rows, row ``i`` holding the next ``lengths[i]`` of
    ``items`` (a column, or a frame's rows as structs)."""
    values = items.to_struct(name) if isinstance(items, pl.DataFrame) else items.alias(name)
    if not values.len() or min(lengths) == max(lengths):  # rows of one length: a matrix
        return values.reshape((len(lengths), lengths[0] if lengths else 0)).cast(
            pl.List(values.dtype)
        )
    owner = pl.Series("row", list(chain.from_iterable(map(repeat, range(len(lengths)), lengths))))
    grouped = (
        pl.DataFrame([owner.set_sorted(), values])
        .group_by("row", maintain_order=True)
        .agg(pl.col(name))
    )
    if grouped.height == len(lengths):  # no row is empty: the groups are the rows, in order
        return grouped.get_column(name)
    rows = pl.DataFrame([pl.Series("row", range(len(lengths)), pl.Int64)])
    return (
        rows.join(grouped, on="row", how="left", maintain_order="left")
        .get_column(name)
        .fill_null(pl.Series(name, [[]], pl.List(values.dtype)))
    )


def _field(rows: list[dict[str, Any]], keys: set[str], name: str, alias: str = "") -> list[Any]:
    """Each row's member ``name`` (or, where that is null, ``alias``), None where it has
    neither; ``keys`` holds every member name the rows use."""
    values: list[Any] = [None] * len(rows)
    if name in keys:
        try:  # every row has it, most often: taken in C
            values = list(map(itemgetter(name), rows))
        except KeyError:
            values = [r.get(name) for r in rows]
    if alias in keys and None in values:
        values = [r.get(alias) if v is None else v for r, v in zip(rows, values, strict=True)]
    return values


def _ignored(rows: list[dict[str, Any]], keys: set[str], known: frozenset[str]) -> None:
    """Decline the members outside ``known`` that might nest past the depth limit."""
    if not keys <= known:
        _shallow(v for r in rows for k, v in r.items() if k not in known)


def _nulls_where(column: pl.Series, given: list[bool]) -> pl.Series:
    if all(given):
        return column
    return pl.select(pl.when(pl.Series(given)).then(column)).to_series().alias(column.name)


# --- the nested fields ------------------------------------------------------------------------


def _contexts(values: list[Any]) -> list[pl.Series]:
    """The ``contexts`` and ``context_ids`` columns, as ``contexts_columns`` builds them."""
    given = [v for v in values if v is not None]
    if not given:
        return []
    if _types(given) != {list}:
        raise _Decline
    items = [item for v in given for item in v]
    kinds = _types(items)
    if not kinds <= {str, dict}:
        raise _Decline
    ids: list[Any] = []
    if dict in kinds:
        objects = [item for item in items if type(item) is dict]
        if not _types(o.get("text") for o in objects) <= {str}:
            raise _Decline
        if not _types(o.get("id") for o in objects) <= {str, int, _NONE}:
            raise _Decline
        _ignored(objects, set().union(*objects), _ITEM_KEYS)
        ids = [None if type(i) is str else _id(i.get("id")) for i in items]
    texts = [i if type(i) is str else i["text"] for i in items]
    lengths = [0 if v is None else len(v) for v in values]
    present = [v is not None for v in values]
    columns = {"contexts": texts}
    if any(i is not None for i in ids):
        columns["context_ids"] = ids
    return [
        _nulls_where(_lists(name, pl.Series(flat, dtype=pl.String), lengths), present)
        for name, flat in columns.items()
    ]


def _id(value: object) -> str | None:
    return None if value is None else str(value)


def _calls(lists: list[Any]) -> pl.Series:
    """The ``tool_calls`` column: one list of calls (or None, no calls) per row."""
    height, kinds = len(lists), _types(lists)
    if not kinds <= {list, _NONE}:
        raise _Decline
    if _NONE in kinds:
        lists = [] if kinds == {_NONE} else [[] if row is None else row for row in lists]
    calls = list(chain.from_iterable(lists))
    if not calls:  # no row made a call: each an empty list
        return pl.Series("tool_calls", [], TOOL_CALL).reshape((height, 0)).cast(pl.List(TOOL_CALL))
    kinds = _types(calls)
    if not kinds <= {dict, str}:
        raise _Decline
    if str in kinds:
        calls = [{"name": c} if type(c) is str else c for c in calls]
    keys: set[str] = set().union(*calls)
    _ignored(calls, keys, _CALL_KEYS)
    names = _field(calls, keys, "name", "tool")
    flat = pl.DataFrame(
        [
            _strings("name", names),
            _arguments(_field(calls, keys, "arguments", "args")),
            _text_values("result", calls, keys),
            _text_values("error", calls, keys),
            _latencies(calls, keys),
            _counts("tokens", calls, keys),
        ]
    )
    if _blank(names):
        raise _Decline
    return _lists("tool_calls", flat, list(map(len, lists)))


def _arguments(values: list[Any]) -> pl.Series:
    """The ``arguments`` column: each map as compact JSON text (a JSON text read first)."""
    kinds = _types(values)
    if str in kinds:  # JSON text (the recorder keeps it so): read as the exact parser reads it
        values = [(orjson.loads(a) if a.strip() else None) if type(a) is str else a for a in values]
        kinds = _types(values)
    if not kinds <= {dict, _NONE}:
        raise _Decline  # a value of another type
    return _compact_texts("arguments", values, nulls=_NONE in kinds)


def _trajectories(values: list[Any]) -> pl.Series:
    """The ``trajectory`` column, as ``parse_trajectory`` and ``trajectory_series`` build it."""
    kinds = _types(values)
    if not kinds <= {dict, _NONE}:
        raise _Decline
    blocks = [{} if v is None else v for v in values] if _NONE in kinds else values
    keys: set[str] = set().union(*blocks)
    _ignored(blocks, keys, _TRAJECTORY_KEYS)
    lists = _field(blocks, keys, "tool_calls")
    approvals = [() if a is None else a for a in _field(blocks, keys, "approvals")]
    if not _types(approvals) <= {list, tuple}:
        raise _Decline
    flat_approvals = list(chain.from_iterable(approvals))
    kinds = _types(flat_approvals)
    if not kinds <= {str, int}:
        raise _Decline
    if int in kinds:
        flat_approvals = [str(a) for a in flat_approvals]
    calls = _calls(lists)
    counts = pl.Series("steps", [0 if row is None else len(row) for row in lists], pl.Int64)
    if "steps" in keys:
        counts = _counts("steps", blocks, keys).fill_null(counts)
    pending = pl.Series("pending_approvals", [0] * len(blocks), pl.Int64)
    if "pending_approvals" in keys:
        pending = _counts(pending.name, blocks, keys).fill_null(0)
    frame = pl.DataFrame(
        [
            calls,
            counts,
            _strings("finish_reason", _field(blocks, keys, "finish_reason"), nulls=True),
            _lists(
                "approvals", pl.Series(flat_approvals, dtype=pl.String), list(map(len, approvals))
            ),
            pending,
        ]
    )
    return _nulls_where(frame.to_struct("trajectory"), [v is not None for v in values])


def _turns(values: list[Any]) -> pl.Series:
    """The ``turns`` column, as ``parse_turns`` and ``turns_series`` build it."""
    kinds = _types(values)
    if not kinds <= {list, _NONE}:
        raise _Decline
    rows = [[] if v is None else v for v in values] if _NONE in kinds else values
    turns = list(chain.from_iterable(rows))
    if turns and _types(turns) != {dict}:
        raise _Decline
    keys: set[str] = set().union(*turns)
    _ignored(turns, keys, _TURN_KEYS)
    roles = _field(turns, keys, "role")
    flat = pl.DataFrame(
        [
            _strings("role", roles),
            _strings("content", _field(turns, keys, "content"), nulls=True),
            _calls(_field(turns, keys, "tool_calls")),
            _latencies(turns, keys),
            _counts("tokens", turns, keys),
        ]
    )
    if _blank(roles):
        raise _Decline
    return _nulls_where(
        _lists("turns", flat, list(map(len, rows))), [v is not None for v in values]
    )
