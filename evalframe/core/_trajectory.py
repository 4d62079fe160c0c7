"""Agent trajectories as typed columns: the ``trajectory`` dtype, parsing, and the recorder.

A trajectory is what an agent did on its way to ``actual_output``: the tools it called, the
steps it took, why it stopped, and the actions a person approved. It is stored per execution
in a ``trajectory`` column of dtype ``TRAJECTORY`` (null where none was recorded)::

    tool_calls         List(Struct)  in call order: name (String), arguments (String: the
                                     arguments object as compact JSON, or null), result
                                     (String), error (String), latency_ms (Float64), tokens
                                     (Int64)
    steps              Int64         agent steps; the number of tool calls when not given
    finish_reason      String        why the agent stopped (free text, may be null)
    approvals          List(String)  ids of the actions a person approved
    pending_approvals  Int64         approvals still waiting (0 when not given)

eval-harness writes tool calls in two forms, both read here: a list of names
(``["search", "book"]``) or a list of objects (``{name, arguments}``; ``args`` and ``tool``
are accepted aliases). A result or error that is not a string is kept as compact JSON.

Sources: a saved-outputs entry's ``trajectory`` block (or a JSON text of one, in JSONL, CSV
and Parquet columns), a system under test returning ``{"output": ..., "trajectory": ...}``,
or ``record`` called inside the system under test. The recorder is context-local: each call
of the system under test gets its own, so repetitions and concurrent calls never mix.
"""

from __future__ import annotations

import contextvars
import json
import math
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Final

import polars as pl

from evalframe.core._agent_dtypes import TOOL_CALL, TRAJECTORY, TRAJECTORY_COLUMN, typed_series
from evalframe.core._errors import DatasetError, type_name
from evalframe.core._njit import worth_compiling

__all__ = [
    "ARGUMENT_SPEC",
    "COMPACT_JSON",
    "EXPECTATIONS_IN_PYTHON_UP_TO",
    "MCP_TOOL",
    "TOOL_CALL",
    "TRAJECTORY",
    "TRAJECTORY_COLUMN",
    "argument_spec",
    "check_expectation_texts",
    "mcp_tool",
    "parse_expectations",
    "parse_trajectory",
    "record",
    "recording",
    "trajectory_series",
]


_NAME_KEYS: Final = ("name", "tool")
_ARGUMENT_KEYS: Final = ("arguments", "args")


# One encoder for every call: ``json.dumps`` with options builds a new one each time, which
# was a third of reading a trajectory.
COMPACT_JSON: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _compact(value: object, field: str = "", at: str = "A trajectory") -> str:
    """``value`` as compact JSON text; NaN and infinities (which JSON cannot hold) are an error."""
    try:
        return COMPACT_JSON.encode(value)
    except ValueError as exc:  # allow_nan=False: Python's json reads NaN/Infinity, JSON has none
        where = f" field '{field}'" if field else ""
        raise DatasetError(
            f"{at}{where} holds NaN or an infinity, which JSON cannot represent; "
            "give a finite number or a string."
        ) from exc


_COUNT_MAX: Final = 2**63 - 1  # the Int64 columns that hold counts


def _count(value: object, field: str, at: str) -> int | None:
    """A non-negative integer (an int, or a string of digits) below 2^63, or None when absent."""
    if value is None:
        return None
    count: int | None = None
    if isinstance(value, str) and value.strip().isdigit():
        count = int(value.strip())
    elif isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        count = value
    elif isinstance(value, float) and value.is_integer() and value >= 0:
        count = int(value)
    if count is not None and count <= _COUNT_MAX:
        return count
    raise DatasetError(
        f"{at} field '{field}' must be a non-negative integer below 2^63; "
        f"got {type_name(value)} {value!r:.40}."
    )


def _number(value: object, field: str, at: str) -> float | None:
    if value is None:
        return None
    number = value if isinstance(value, int | float) and not isinstance(value, bool) else None
    if number is not None and math.isfinite(number) and number >= 0:
        return float(number)
    raise DatasetError(
        f"{at} field '{field}' must be a finite number >= 0; got {type_name(value)} {value!r:.40}."
    )


def _text(value: object, field: str, at: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return _compact(value, field, at)


def _first(entry: Mapping[str, Any], keys: tuple[str, ...]) -> object:
    for key in keys:
        if entry.get(key) is not None:
            return entry[key]
    return None


def parse_tool_call(value: object, field: str, at: str) -> dict[str, Any]:
    """One tool call from its name or its object form."""
    if isinstance(value, str):
        if not value.strip():
            raise DatasetError(f"{at} field '{field}' must be a non-empty tool name.")
        return {"name": value, "arguments": None, "result": None, "error": None,
                "latency_ms": None, "tokens": None}  # fmt: skip
    if not isinstance(value, dict):
        raise DatasetError(
            f"{at} field '{field}' must be a tool name or an object with a name; "
            f"got {type_name(value)}."
        )
    name = _first(value, _NAME_KEYS)
    if not isinstance(name, str) or not name.strip():
        raise DatasetError(f"{at} field '{field}.name' must be a non-empty string.")
    arguments = _first(value, _ARGUMENT_KEYS)
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else None
        except ValueError:
            arguments = "not JSON"
    if arguments is not None and not isinstance(arguments, dict):
        raise DatasetError(
            f"{at} field '{field}.arguments' must be an object of named arguments; "
            f"got {type_name(arguments)}."
        )
    return {
        "name": name,
        "arguments": None if arguments is None else _compact(arguments, f"{field}.arguments", at),
        "result": _text(value.get("result"), f"{field}.result", at),
        "error": _text(value.get("error"), f"{field}.error", at),
        "latency_ms": _number(value.get("latency_ms"), f"{field}.latency_ms", at),
        "tokens": _count(value.get("tokens"), f"{field}.tokens", at),
    }


def parse_tool_calls(value: object, field: str, at: str) -> list[dict[str, Any]]:
    """A list of tool calls (names or objects); null is no calls."""
    if value is None:
        return []
    if not isinstance(value, list | tuple):
        raise DatasetError(f"{at} field '{field}' must be a list; got {type_name(value)}.")
    return [parse_tool_call(item, f"{field}[{i}]", at) for i, item in enumerate(value)]


def json_field(value: Any, at: str, field: str) -> Any:
    """A field that may come as JSON text (CSV, Parquet strings): decoded; blank is None.

    Raises:
        DatasetError: text that is not valid JSON, naming ``at`` and ``field``.
    """
    if not isinstance(value, str):
        return value
    if not value.strip():
        return None
    try:
        return json.loads(value)
    except ValueError as exc:
        raise DatasetError(f"{at} field '{field}' is not valid JSON: {exc}.") from exc


def parse_trajectory(value: object, at: str, field: str = "trajectory") -> dict[str, Any] | None:
    """A trajectory block as a ``TRAJECTORY`` row (a dict), or None when ``value`` is null.

    Args:
        value: the block: a mapping, or its JSON text.
        at: where it comes from, for messages (``"<file>: Saved outputs entry at index 3
            (sample 'q1')"``).
        field: the field's name in messages.

    Raises:
        DatasetError: the block or one of its fields has the wrong shape; the message names
            ``at`` and the field.

    Examples:
        >>> parse_trajectory({"tool_calls": ["search"], "finish_reason": "stop"}, "x")["steps"]
        1
    """
    value = json_field(value, at, field)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise DatasetError(f"{at} field '{field}' must be an object; got {type_name(value)}.")
    calls = parse_tool_calls(value.get("tool_calls"), f"{field}.tool_calls", at)
    steps = _count(value.get("steps"), f"{field}.steps", at)
    finish = value.get("finish_reason")
    if finish is not None and not isinstance(finish, str):
        raise DatasetError(f"{at} field '{field}.finish_reason' must be a string.")
    approvals = value.get("approvals")
    if approvals is None:
        approvals = []
    if not isinstance(approvals, list | tuple) or not all(
        isinstance(a, str | int) and not isinstance(a, bool) for a in approvals
    ):
        raise DatasetError(
            f"{at} field '{field}.approvals' must be a list of action ids (strings)."
        )
    pending = _count(value.get("pending_approvals"), f"{field}.pending_approvals", at)
    return {
        "tool_calls": calls,
        "steps": len(calls) if steps is None else steps,
        "finish_reason": finish,
        "approvals": [str(a) for a in approvals],
        "pending_approvals": 0 if pending is None else pending,
    }


def trajectory_series(rows: list[dict[str, Any] | None]) -> pl.Series:
    """The ``trajectory`` column from parsed rows (None for no trajectory)."""
    return typed_series(TRAJECTORY_COLUMN, rows, TRAJECTORY)


# --- the recorder ---------------------------------------------------------------------------


class _Recorder:
    __slots__ = ("approvals", "calls", "finish_reason", "pending_approvals", "steps", "used")

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.steps: int | None = None
        self.finish_reason: str | None = None
        self.approvals: list[str] = []
        self.pending_approvals: int | None = None
        self.used = False

    def block(self) -> dict[str, Any] | None:
        if not self.used:
            return None
        return {
            "tool_calls": self.calls,
            "steps": self.steps,
            "finish_reason": self.finish_reason,
            "approvals": self.approvals,
            "pending_approvals": self.pending_approvals,
        }


_CURRENT: contextvars.ContextVar[_Recorder | None] = contextvars.ContextVar(
    "evalframe_trajectory", default=None
)


@contextmanager
def recording() -> Iterator[_Recorder]:
    """A fresh recorder for the calls made inside the block (one per system call)."""
    recorder = _Recorder()
    token = _CURRENT.set(recorder)
    try:
        yield recorder
    finally:
        _CURRENT.reset(token)


def record(
    tool: str | None = None,
    arguments: Mapping[str, Any] | None = None,
    *,
    result: object = None,
    error: object = None,
    latency_ms: float | None = None,
    tokens: int | None = None,
    steps: int | None = None,
    finish_reason: str | None = None,
    approval: str | None = None,
    pending_approvals: int | None = None,
) -> None:
    """Record part of the current sample's trajectory, from inside the system under test.

    With ``tool``, appends one tool call (its arguments, result, error, latency and tokens).
    ``steps``, ``finish_reason`` and ``pending_approvals`` set those fields (steps default to
    the number of tool calls); ``approval`` appends one approved action id. Outside a call of
    the system under test (``evaluate(system=...)``) it does nothing, so an agent can keep
    its ``record`` calls in production.

    Examples:
        >>> import evalframe as ef
        >>> def agent(inp):
        ...     ef.trajectory.record("search", {"q": inp["question"]}, result="3 hits")
        ...     ef.trajectory.record(finish_reason="stop")
        ...     return "answer"
    """
    recorder = _CURRENT.get()
    if recorder is None:
        return
    recorder.used = True
    at = "ef.trajectory.record()"
    if tool is not None:
        entry: dict[str, Any] = {"name": tool, "arguments": dict(arguments or {}) or None}
        entry.update(result=result, error=error, latency_ms=latency_ms, tokens=tokens)
        recorder.calls.append(parse_tool_call(entry, "tool", at))
    if steps is not None:
        recorder.steps = _count(steps, "steps", at)
    if finish_reason is not None:
        recorder.finish_reason = str(finish_reason)
    if approval is not None:
        recorder.approvals.append(str(approval))
    if pending_approvals is not None:
        recorder.pending_approvals = _count(pending_approvals, "pending_approvals", at)


# --- expectations: metadata.trajectory ------------------------------------------------------

ARGUMENT_SPEC: Final = pl.Struct({"name": pl.String(), "arguments": pl.String()})
MCP_TOOL: Final = pl.Struct({"name": pl.String(), "input_schema": pl.String()})


def _names(value: object, field: str, at: str, *, single: bool = False) -> list[str] | None:
    if value is None:
        return None
    if single and isinstance(value, str):
        value = [value]
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        wanted = "a tool name or a list of tool names" if single else "a list of strings"
        raise DatasetError(f"{at} field '{field}' must be {wanted}; got {type_name(value)}.")
    return list(value)


def argument_spec(
    entry: object, field: str = "metadata.trajectory.tool_arguments", at: str = "A sample"
) -> dict[str, Any] | None:
    """A usable ``{tool|name, arguments|args}`` entry, or None (eval-harness skips those)."""
    if not isinstance(entry, dict):
        return None
    name = _first(entry, _NAME_KEYS)
    arguments = _first(entry, _ARGUMENT_KEYS)
    if arguments is None:
        arguments = {}
    if not isinstance(name, str) or not name.strip() or not isinstance(arguments, dict):
        return None
    return {"name": name, "arguments": _compact(arguments, f"{field}.arguments", at)}


def parse_expectations(metadata: Mapping[str, Any], at: str) -> dict[str, Any]:
    """Check ``metadata.trajectory`` (and ``metadata.mcp.tools``); returns the fields read.

    Keys (eval-harness's first): ``tools`` (a name or a list), ``forbidden_tools``,
    ``tool_arguments`` (a list of ``{tool|name, arguments|args}``; unusable entries are
    skipped and counted), ``order``, ``max_steps`` (an int or a digit string),
    ``requires_approval``; evalframe's agent family adds ``expected_tools`` (the expected
    tool sequence), ``optimal_steps`` and ``goal`` (``{tool|name, arguments}``).

    Raises:
        DatasetError: ``metadata.trajectory`` or one of its keys has the wrong shape; the
            message names ``at`` and the field.
    """
    block = metadata.get("trajectory")
    row: dict[str, Any] = {"skipped_arguments": 0}
    if block is not None:
        if not isinstance(block, dict):
            raise DatasetError(
                f"{at} field 'metadata.trajectory' must be a map; got {type_name(block)}."
            )
        f = "metadata.trajectory."
        row["tools"] = _names(block.get("tools"), f + "tools", at, single=True)
        row["forbidden_tools"] = _names(
            block.get("forbidden_tools"), f + "forbidden_tools", at, single=True
        )
        row["order"] = _names(block.get("order"), f + "order", at)
        row["expected_tools"] = _names(block.get("expected_tools"), f + "expected_tools", at)
        gated = block.get("requires_approval")
        if isinstance(gated, list | tuple):  # action ids may be numbers: 7 is "7"
            gated = [str(a) if isinstance(a, int) and not isinstance(a, bool) else a for a in gated]
        row["requires_approval"] = _names(gated, f + "requires_approval", at, single=True)
        specs = block.get("tool_arguments")
        if specs is not None:
            if not isinstance(specs, list | tuple):
                raise DatasetError(
                    f"{at} field '{f}tool_arguments' must be a list of "
                    f"{{tool, arguments}} entries; got {type_name(specs)}."
                )
            usable = [
                argument_spec(entry, f"{f}tool_arguments[{i}]", at) for i, entry in enumerate(specs)
            ]
            row["tool_arguments"] = [spec for spec in usable if spec is not None]
            row["skipped_arguments"] = len(specs) - len(row["tool_arguments"])
        limit = block.get("max_steps")
        if limit is not None:
            if isinstance(limit, str) and limit.strip().lstrip("-").isdigit():
                limit = int(limit.strip())
            if not isinstance(limit, int) or isinstance(limit, bool):
                raise DatasetError(
                    f"{at} field '{f}max_steps' must be an integer or a string of digits; "
                    f"got {type_name(limit)} {limit!r:.40}."
                )
            row["max_steps"] = limit
        row["optimal_steps"] = _count(block.get("optimal_steps"), f + "optimal_steps", at)
        goal = block.get("goal")
        if goal is not None:
            row["goal"] = argument_spec({"name": goal} if isinstance(goal, str) else goal)
            if row["goal"] is None:
                raise DatasetError(
                    f"{at} field '{f}goal' must be a tool name or a {{tool, arguments}} map."
                )
    mcp = metadata.get("mcp")
    # metadata.mcp may hold only an expected trace (trace-completeness reads it).
    if mcp is not None and not (isinstance(mcp, dict) and "tools" not in mcp and mcp):
        tools = mcp.get("tools") if isinstance(mcp, dict) else None
        if not isinstance(tools, list | tuple):
            raise DatasetError(f"{at} field 'metadata.mcp.tools' must be a list of tools.")
        row["mcp_tools"] = [
            mcp_tool(t, f"metadata.mcp.tools[{i}]", at) for i, t in enumerate(tools)
        ]
    return row


def mcp_tool(tool: object, field: str, at: str) -> dict[str, Any]:
    """An advertised MCP tool: ``{name, inputSchema}`` (MCP's ``tools/list`` shape)."""
    if not isinstance(tool, dict) or not isinstance(tool.get("name"), str) or not tool["name"]:
        raise DatasetError(f"{at} field '{field}' must be a map with a non-empty string name.")
    schema = tool.get("inputSchema", tool.get("input_schema"))
    if schema is not None and not isinstance(schema, dict):
        raise DatasetError(f"{at} field '{field}.inputSchema' must be a JSON schema object.")
    schema_text = None if schema is None else _compact(schema, f"{field}.inputSchema", at)
    return {"name": tool["name"], "input_schema": schema_text}


EXPECTATIONS_IN_PYTHON_UP_TO: Final = 2_000
"""Rows up to which expectations are decoded and checked without the compiled pass."""


def check_expectations(ids: list[str], metadata: list[dict[str, Any]], error: Any) -> None:
    """Raise ``error(message)`` for the first sample whose trajectory expectations are bad."""
    for index, (sample_id, meta) in enumerate(zip(ids, metadata, strict=True)):
        if "trajectory" in meta or "mcp" in meta:
            try:
                parse_expectations(meta, f"Sample '{sample_id}' (index {index})")
            except DatasetError as exc:
                raise error(str(exc)) from None


def check_expectation_texts(ids: pl.Series, texts: pl.Series, error: Any) -> None:
    """``check_expectations`` over a dataset frame's ``sample_id`` and ``metadata`` (texts).

    The rows the compiled decoding reads exactly hold good expectations; the others (and those
    with ``metadata.mcp``) are checked in Python, in sample order, so the first bad sample
    is the one reported.
    """
    named = texts.str.contains('"trajectory"', literal=True)
    mcp = texts.str.contains('"mcp"', literal=True)
    rows = pl.DataFrame({"id": ids, "metadata": texts}).with_row_index().filter(named | mcp)
    if not rows.height:
        return
    if worth_compiling(rows.height, EXPECTATIONS_IN_PYTHON_UP_TO):
        from evalframe.core._expectations_compiled import decode_expectations

        distinct = rows.get_column("metadata").unique(maintain_order=True)
        good = decode_expectations(distinct).select("exact", metadata=distinct)
        rows = rows.join(good, on="metadata", how="left", maintain_order="left").filter(
            ~pl.col("exact") | pl.col("metadata").str.contains('"mcp"', literal=True)
        )
    for index, sample_id, text in rows.select("index", "id", "metadata").iter_rows():
        try:
            parse_expectations(json.loads(text), f"Sample '{sample_id}' (index {index})")
        except DatasetError as exc:
            raise error(str(exc)) from None
