"""Conversations as a typed column: the ``turns`` dtype and its parser.

A multi-turn execution is kept in a ``turns`` column of dtype ``TURNS`` (null when the output
is single-turn), one element per turn in order::

    role        String             "user", "assistant", "system" or "tool" (any non-empty text)
    content     String             the turn's text
    tool_calls  List(TOOL_CALL)    tool calls made in the turn (same shape as a trajectory's)
    latency_ms  Float64            time to produce the turn (assistant turns), or null
    tokens      Int64              tokens the turn cost, or null

Saved outputs carry it as a ``turns`` list next to ``actual_output`` (or its JSON text in
JSONL, CSV and Parquet columns); a system under test returns it as ``{"output": ...,
"turns": [...]}``. A dataset's conversation so far goes in the sample's ``input`` map.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any, Final, cast

import polars as pl

from evalframe.core._agent_dtypes import TURN, TURNS, TURNS_COLUMN, typed_series
from evalframe.core._dataset_columns import lone_surrogate_in
from evalframe.core._errors import DatasetError, type_name
from evalframe.core._gc import gc_paused
from evalframe.core._trajectory import (
    _count,
    _number,
    json_field,
    parse_tool_calls,
)

__all__ = [
    "AGENT_FIELDS",
    "TURN",
    "TURNS",
    "TURNS_COLUMN",
    "agent_column",
    "agent_values",
    "parse_turns",
    "turns_series",
]


def parse_turns(value: object, at: str, field: str = "turns") -> list[dict[str, Any]] | None:
    """A list of turns as ``TURNS`` rows, or None when ``value`` is null.

    Raises:
        DatasetError: not a list, or a turn without a role or with non-string content; the
            message names ``at`` and the field (``turns[2].content``).

    Examples:
        >>> parse_turns([{"role": "user", "content": "hi"}], "x")[0]["role"]
        'user'
    """
    value = json_field(value, at, field)
    if value is None:
        return None
    if not isinstance(value, list | tuple):
        raise DatasetError(f"{at} field '{field}' must be a list of turns; got {type_name(value)}.")
    turns = []
    for index, turn in enumerate(value):
        here = f"{field}[{index}]"
        if not isinstance(turn, dict):
            raise DatasetError(f"{at} field '{here}' must be an object with role and content.")
        role = turn.get("role")
        if not isinstance(role, str) or not role.strip():
            raise DatasetError(f"{at} field '{here}.role' must be a non-empty string.")
        content = turn.get("content")
        if content is not None and not isinstance(content, str):
            raise DatasetError(
                f"{at} field '{here}.content' must be a string; got {type_name(content)}."
            )
        turns.append(
            {
                "role": role,
                "content": content,
                "tool_calls": parse_tool_calls(turn.get("tool_calls"), f"{here}.tool_calls", at),
                "latency_ms": _number(turn.get("latency_ms"), f"{here}.latency_ms", at),
                "tokens": _count(turn.get("tokens"), f"{here}.tokens", at),
            }
        )
    return turns


def turns_series(rows: list[list[dict[str, Any]] | None]) -> pl.Series:
    """The ``turns`` column from parsed rows (None for a single-turn output)."""
    return typed_series(TURNS_COLUMN, rows, TURNS)


def agent_fields(entry: dict[str, Any], at: str) -> dict[str, Any]:
    """The parsed ``trajectory`` and ``turns`` of one outputs entry (only those present)."""
    found: dict[str, Any] = {}
    if entry.get("trajectory") is not None:
        from evalframe.core._trajectory import parse_trajectory

        found["trajectory"] = parse_trajectory(entry["trajectory"], at)
    if entry.get(TURNS_COLUMN) is not None:
        found[TURNS_COLUMN] = parse_turns(entry[TURNS_COLUMN], at)
    return found


def with_agent_columns(frame: pl.DataFrame, rows: list[dict[str, Any]]) -> pl.DataFrame:
    """``frame`` with a ``trajectory`` and a ``turns`` column where any row has one."""
    from evalframe.core._trajectory import trajectory_series

    if any("trajectory" in row for row in rows):
        frame = frame.with_columns(trajectory_series([row.get("trajectory") for row in rows]))
    if any(TURNS_COLUMN in row for row in rows):
        frame = frame.with_columns(turns_series([row.get(TURNS_COLUMN) for row in rows]))
    return frame


def typed_agent_frame(frame: pl.DataFrame, where: str) -> pl.DataFrame:
    """An outputs frame given as a frame, its ``trajectory`` and ``turns`` columns parsed to
    their dtypes when they hold anything else (JSON text, or structs Polars inferred).

    Raises:
        DatasetError: a value has the wrong shape; the message names ``where``, the row,
            its sample and the field.
    """
    from evalframe.core._trajectory import TRAJECTORY, TRAJECTORY_COLUMN

    loose = [
        c
        for c, dtype in ((TRAJECTORY_COLUMN, TRAJECTORY), (TURNS_COLUMN, TURNS))
        if c in frame.columns and frame.schema[c] != dtype
    ]
    if not loose:
        return frame
    ids = frame.get_column("sample_id").to_list()
    columns: list[pl.Series] = []
    first: tuple[int, int, Exception] | None = None  # row, field, what the parser raised
    for rank, field in enumerate(c for c in (TRAJECTORY_COLUMN, TURNS_COLUMN) if c in loose):
        column, errors = agent_column(
            field,
            frame.get_column(field).to_list(),
            lambda i: f"{where} row {i} (sample '{ids[i]}')",
        )
        for i, exc in errors.items():
            if first is None or (i, rank) < first[:2]:
                first = (i, rank, exc)
        if column is not None:
            columns.append(column)
    if first is not None:
        i, rank, exc = first
        if isinstance(exc, _LoneSurrogate):
            field = [c for c in (TRAJECTORY_COLUMN, TURNS_COLUMN) if c in loose][rank]
            raise DatasetError(
                f"{where} row {i} (sample '{ids[i]}') field '{field}' holds a lone surrogate "
                f"{exc.bad}; text must be valid Unicode."
            )
        raise exc
    return frame.drop(loose).with_columns(columns)


AGENT_FIELDS: Final = ("trajectory", TURNS_COLUMN)


def agent_values(
    result: object, recorder: Any, sample_id: str
) -> tuple[object, dict[str, tuple[object, str, int]]]:
    """Split a system's return into its text and its agent fields, not yet parsed.

    A mapping with an ``output`` key is an agent's answer: its ``trajectory`` and ``turns``
    (those not null); else what ``recorder`` collected is the trajectory. Any other value is
    returned unchanged. Each field comes as (value, where it comes from for messages, and its
    rank: a row's fields are parsed, and their first error reported, in that order).
    """
    at = f"System under test for sample '{sample_id}' returned a value whose"
    found: dict[str, tuple[object, str, int]] = {}
    if isinstance(result, dict) and "output" in result:
        for rank, field in enumerate(AGENT_FIELDS):
            if result.get(field) is not None:
                found[field] = (result[field], at, rank)
        result = result["output"]
    if "trajectory" not in found:
        block = recorder.block()
        if block is not None:
            found["trajectory"] = (block, f"Recorded trajectory of sample '{sample_id}':", 2)
    return result, found


class _LoneSurrogate(ValueError):  # noqa: N818 - never escapes: callers word their error
    """A value the parser read holds a lone surrogate (``bad``, escaped), which no column can
    hold."""

    def __init__(self, bad: str) -> None:
        super().__init__(bad)
        self.bad = bad


# Values from which a batch is read by one pass rather than row by row (core/_outputs_quick.py
# in a new process, the compiled core/_outputs_nested.py once it is loaded), and from which
# the compiled pass reads it in any case: loading numba and the pass's cached code costs a
# new process about 1 s of CPU. Measured in new processes (CPU, load 5-6): 1,000 episodes
# 0.05 s quick, 0.11 s row by row; 5,000 0.26 s and 0.53 s; 10,000 0.60 s quick, 1.08 s
# compiled; 20,000 1.08 s and 1.20 s; 40,000 2.58 s and 1.22 s.
_COMPILED_FROM: Final = 1_000
_COLD_FROM: Final = 20_000


def _compiled(rows: int) -> bool:
    """Whether ``rows`` values take the compiled pass."""
    if rows < _COMPILED_FROM:
        return False
    nested = sys.modules.get("evalframe.core._outputs_nested")  # not imported: not loaded
    return rows >= _COLD_FROM or (nested is not None and nested.nested_array.loaded())


def agent_column(
    field: str, values: Sequence[object], at: Callable[[int], str]
) -> tuple[pl.Series | None, dict[int, Exception]]:
    """Column ``field`` (``trajectory`` or ``turns``) from each row's value as given (a map or
    list, its JSON text, or None for none), read as ``parse_trajectory`` or ``parse_turns``
    reads it with ``at(row)`` naming the row; None when no row has one.

    Large batches (from 20,000 values, or from 1,000 once this process has the pass
    loaded) go through the compiled pass as JSON text (orjson writes it, see
    :func:`_compiled_column`), every value it cannot vouch for through the parser itself;
    other batches from 1,000 values through orjson's reader (:func:`_quick_column`), all of
    them through the parser where it declines one.
    Returns the column and, by row, what the parser raised for the rows it refused, or
    ``_LoneSurrogate`` for a value it read that holds one (those rows are null).
    """
    from evalframe.core._trajectory import TRAJECTORY, parse_trajectory

    parse: Callable[..., Any] = parse_trajectory if field == "trajectory" else parse_turns
    dtype = TRAJECTORY if field == "trajectory" else TURNS
    given = [i for i, value in enumerate(values) if value is not None]
    if not given:
        return None, {}
    errors: dict[int, Exception] = {}

    def exact(i: int) -> Any:
        try:
            parsed = parse(values[i], at(i))
        except Exception as exc:  # the caller decides: a row's error, or the file's
            errors[i] = exc
            return None
        bad = lone_surrogate_in(parsed)
        if bad is not None:
            errors[i] = _LoneSurrogate(bad)
            return None
        return parsed

    if _compiled(len(given)):
        column, left = _compiled_column(field, values)
        if not left:
            return column, errors
        return _placed(column, left, typed_series(field, [exact(i) for i in left], dtype)), errors
    with gc_paused():  # many containers, no cycles: full collections would rescan the heap
        quick = _quick_column(field, values) if len(given) >= _COMPILED_FROM else None
        if quick is not None:
            return quick, errors
        rows: list[Any] = [None] * len(values)
        for i in given:
            rows[i] = exact(i)
        return typed_series(field, rows, dtype), errors


def _quick_column(field: str, values: Sequence[object]) -> pl.Series | None:
    """The column orjson's reader (``core/_outputs_quick.py``) makes of ``values``, written
    as one JSON array as :func:`_compiled_column` writes it, when it vouches for every one of
    them; None leaves them all to the exact parser (so do JSON texts)."""
    from evalframe.core._outputs_quick import quick_array

    if any(isinstance(value, str) for value in values):
        return None
    array = _json_array(list(values))
    return None if array is None else quick_array(field, array)


def _placed(column: pl.Series, rows: list[int], values: pl.Series) -> pl.Series:
    """``column`` with ``values`` in rows ``rows`` (in that order)."""
    import numpy as np

    order = np.arange(column.len())
    order[rows] = np.arange(column.len(), column.len() + len(rows))
    return pl.concat([column, values]).gather(order)


def _compiled_column(field: str, values: Sequence[object]) -> tuple[pl.Series, list[int]]:
    """The column the compiled pass reads from ``values``, and the rows it left to the exact
    parser.

    JSON texts are read as they are. Maps and lists are written by orjson as one JSON array
    (a fifth of the time Python's encoder takes, value by value), where that text is surely
    what the exact parser would see: ``marshal`` vouches that every value in them is of a
    type Python's encoder writes as orjson does (it refuses subclasses, enums, UUIDs, dates
    and dataclasses, which orjson writes and Python's encoder refuses) and no float in its
    bytes is NaN or infinite (orjson writes those as null; the exact parser refuses them). A
    value either refuses (orjson also: keys that are not strings, integers past 64 bits,
    lone surrogates, bytes, sets, nesting past 255 levels) is left to the exact parser, as
    is one the pass declines.
    """
    import numpy as np

    from evalframe.core import _outputs_nested as nested
    from evalframe.core._trajectory import TRAJECTORY

    number = nested.TRAJECTORY_FIELD if field == "trajectory" else nested.TURNS_FIELD
    dtype = TRAJECTORY if field == "trajectory" else TURNS
    texts = [i for i, value in enumerate(values) if isinstance(value, str)]
    objects = list(values)
    for i in texts:
        objects[i] = None
    left: list[int] = []
    array = _json_array(objects)
    if array is None:  # find the values at fault, one by one
        left = [i for i, v in enumerate(objects) if v is not None and _json_array([v]) is None]
        for i in left:
            objects[i] = None
        array = _json_array(objects)
    columns: dict[str, pl.Series] = {}
    if array is None:
        failed = np.ones(len(values), np.bool_)
    else:
        columns, failed = nested.read_array(number, array, len(values))
    column = columns.get(field, pl.Series(field, [None] * len(values), dtype=dtype))
    failed[left] = True
    if texts:
        encoded: list[bytes] = []
        for i in texts:
            try:
                encoded.append(cast(str, values[i]).encode("utf-8"))
            except UnicodeEncodeError:  # a lone surrogate: the parser reports it
                encoded.append(b"")
                failed[i] = True
        offsets = np.zeros(len(texts) + 1, np.int64)
        np.cumsum([len(e) for e in encoded], out=offsets[1:])
        data = np.frombuffer(b"".join(encoded) + b" ", np.uint8)[: offsets[-1]]
        valid = ~failed[texts]
        read, unread = nested.read_cells(number, data, offsets, valid)
        failed[texts] |= unread
        if field in read:
            column = _placed(column, texts, read[field])
    return column, np.flatnonzero(failed).tolist()


def _refuse(value: object) -> object:
    raise TypeError(f"{type(value).__name__} is not JSON")


def _json_array(objects: list[object]) -> bytes | None:
    """``objects`` as a JSON array by orjson, or None when that text might not be what the
    exact parser would read (see :func:`_compiled_column`)."""
    import marshal

    import numpy as np
    import orjson

    try:
        packed = marshal.dumps(objects, 4)
    except (ValueError, RecursionError):
        return None
    # A double is marshalled as b"g" (or b"\xe7", marked for reference) and its 8 bytes, little
    # endian: NaN and the infinities have their 11 exponent bits set.
    code = np.frombuffer(packed, np.uint8)
    at = np.flatnonzero((code[8:] & 0x7F) == 0x7F)
    if (((code[at + 7] & 0xF0) == 0xF0) & ((code[at] & 0x7F) == 0x67)).any():
        return None
    options = (
        orjson.OPT_PASSTHROUGH_SUBCLASS
        | orjson.OPT_PASSTHROUGH_DATETIME
        | orjson.OPT_PASSTHROUGH_DATACLASS
    )
    try:
        return orjson.dumps(objects, default=_refuse, option=options)
    except (TypeError, ValueError, RecursionError):  # orjson.JSONEncodeError is a TypeError
        return None
