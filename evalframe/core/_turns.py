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

from typing import Any, Final

import polars as pl

from evalframe.core._errors import DatasetError
from evalframe.core._trajectory import (
    TOOL_CALL,
    _count,
    _kind,
    _number,
    json_field,
    parse_tool_calls,
)

__all__ = ["TURN", "TURNS", "TURNS_COLUMN", "parse_turns", "turns_series"]

TURNS_COLUMN: Final = "turns"

TURN: Final = pl.Struct(
    {
        "role": pl.String(),
        "content": pl.String(),
        "tool_calls": pl.List(TOOL_CALL),
        "latency_ms": pl.Float64(),
        "tokens": pl.Int64(),
    }
)
TURNS: Final = pl.List(TURN)
"""The dtype of the ``turns`` column."""


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
        raise DatasetError(f"{at} field '{field}' must be a list of turns; got {_kind(value)}.")
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
                f"{at} field '{here}.content' must be a string; got {_kind(content)}."
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
    return pl.Series(TURNS_COLUMN, rows, dtype=TURNS)


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
    rows = [
        agent_fields(dict(zip(loose, values, strict=True)), f"{where} row {i} (sample '{ids[i]}')")
        for i, values in enumerate(frame.select(loose).iter_rows())
    ]
    return with_agent_columns(frame.drop(loose), rows)


def agent_result(result: object, recorder: Any, sample_id: str) -> tuple[object, dict[str, Any]]:
    """Split a system's return into its text and its agent fields.

    A mapping with an ``output`` key is an agent's answer: its ``trajectory`` and ``turns``
    are parsed (a bad shape raises ``DatasetError``, which becomes the sample's error); else
    what ``recorder`` collected is the trajectory. Any other value is returned unchanged.
    """
    from evalframe.core._trajectory import parse_trajectory

    at = f"System under test for sample '{sample_id}' returned a value whose"
    found: dict[str, Any] = {}
    if isinstance(result, dict) and "output" in result:
        found = agent_fields(result, at)
        result = result["output"]
    if "trajectory" not in found:
        block = recorder.block()
        if block is not None:
            found["trajectory"] = parse_trajectory(
                block, f"Recorded trajectory of sample '{sample_id}':"
            )
    return result, found
