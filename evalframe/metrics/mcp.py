"""MCP tool use: calls chosen from the advertised tools, arguments valid against their schemas,
and the expected operations all made (trace-completeness).

The advertised tools are the sample's ``metadata.mcp.tools``, in the shape of MCP's
``tools/list`` reply (``[{name, description?, inputSchema?}]``); the calls are the
trajectory's tool calls (``core/_trajectory.py``). Both metrics are deterministic. Tool names
are matched with joins over the exploded calls; schema validation uses the ``jsonschema``
package once per distinct (schema, arguments) pair, with one validator per distinct schema.
A row with no trajectory, or no ``metadata.mcp.tools``, is that row's error.

trace-completeness reads the expected operations from ``metadata.mcp.expected_trace``: a list
of tool names, or ``{name (or tool), arguments (or args, input)}`` maps. Arguments are
compared as JSON values (object keys in any order, numbers by value), once per distinct
text; calls and expected operations are then matched with group-bys over the exploded calls.
"""

from __future__ import annotations

import json
from typing import Any

import polars as pl

from evalframe.core import schema as C
from evalframe.metrics import structural  # read at call time: structural may still be loading
from evalframe.metrics._expectations import Expectations
from evalframe.metrics._registry import metric
from evalframe.metrics._spec import Scored
from evalframe.metrics.trajectory import items_frame, per_row, scoring_pass, trajectory_metric

__all__ = ["mcp_arguments_valid", "mcp_tool_selection", "trace_completeness"]

_NAMES = pl.List(pl.String())
_NO_TOOLS = "has no metadata.mcp.tools (the advertised MCP tools) for {} metric."


def _advertised(expect: Expectations) -> pl.DataFrame:
    """``row``, ``name``, ``input_schema`` per advertised tool."""
    return items_frame(expect.get_column("mcp_tools"), "tool").unnest("tool").drop("position")


def _schema_verdicts(pairs: pl.DataFrame) -> pl.DataFrame:
    """``valid`` and ``reason`` for each (``input_schema``, ``arguments``) pair."""
    import jsonschema  # type: ignore[import-untyped]
    from jsonschema.exceptions import best_match  # type: ignore[import-untyped]

    distinct = pairs.select("input_schema", "arguments").unique()
    validators: dict[str, Any] = {}
    rows: list[tuple[str | None, str | None, bool, str | None]] = []
    for schema_text, arguments in distinct.iter_rows():
        if schema_text is None:
            rows.append((schema_text, arguments, True, None))
            continue
        if schema_text not in validators:
            validators[schema_text] = structural._validator(schema_text, jsonschema, False)
        valid, path, reason, problem = structural._verdict(
            validators[schema_text], arguments or "{}", best_match
        )
        why = problem or (None if valid else f"{path}: {reason}")
        rows.append((schema_text, arguments, bool(valid), why))
    table = pl.DataFrame(
        rows,
        schema={
            "input_schema": pl.String,
            "arguments": pl.String,
            "valid": pl.Boolean,
            "reason": pl.String,
        },
        orient="row",
    )
    return pairs.join(
        table, on=["input_schema", "arguments"], how="left", maintain_order="left", nulls_equal=True
    )


@metric(
    "mcp-tool-selection", family="mcp", dimension="trajectory", threshold=1.0, derived=scoring_pass
)
def mcp_tool_selection() -> Scored:
    """The fraction of tool calls whose tool the MCP server advertised.

    A call to a name missing from ``metadata.mcp.tools`` is a hallucinated tool. Details list
    those names (``unknown``); no calls score 1.0 with a note.

    Examples:
        >>> import evalframe as ef
        >>> tools = [{"name": "search", "inputSchema": {"type": "object"}}]
        >>> ds = ef.Dataset.from_records([
        ...     {"id": "a", "input": {"q": "a"}, "expected_output": "", "metadata": {"mcp": {"tools": tools}}}],
        ...     name="demo")
        >>> def agent(sample):
        ...     return {"output": "", "trajectory": {"tool_calls": ["search", "browse"]}}
        >>> run = ef.evaluate(ds, system=agent, metrics=["mcp-tool-selection"])
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        a 0.5 {"met":1,"total":2,"unknown":["browse"],"note":null}
    """  # noqa: E501

    def kernel(frame: pl.DataFrame, expect: Expectations, calls: pl.DataFrame) -> pl.DataFrame:
        known = _advertised(expect).select("row", "name").unique().with_columns(ok=pl.lit(True))
        graded = calls.select("row", "name").join(
            known, on=["row", "name"], how="left", maintain_order="left"
        )
        counts = graded.group_by("row").agg(
            total=pl.len().cast(pl.Int64),
            met=pl.col("ok").fill_null(False).sum().cast(pl.Int64),
            unknown=pl.col("name").filter(pl.col("ok").is_null()).unique(maintain_order=True),
        )
        rows = per_row(frame.height, counts, {"total": 0, "met": 0})
        return rows.select(
            score=pl.when(pl.col("total") == 0)
            .then(1.0)
            .otherwise((pl.col("met") / pl.col("total")).round(6)),
            met="met",
            total="total",
            unknown=pl.col("unknown").fill_null(pl.lit([], _NAMES)),
            note=pl.when(pl.col("total") == 0).then(pl.lit("No tool calls: scored 1.0.")),
            has_tools=expect.get_column("mcp_tools").is_not_null(),
        )

    return trajectory_metric(
        "mcp-tool-selection",
        kernel,
        {
            "met": pl.Int64,
            "total": pl.Int64,
            "unknown": _NAMES,
            "note": pl.String,
            "has_tools": pl.Boolean,
        },
        lambda k: pl.struct(
            *(k.struct.field(f).alias(f) for f in ("met", "total", "unknown", "note"))
        ),
        required=("has_tools", _NO_TOOLS.format("mcp-tool-selection")),
    )


@metric(
    "mcp-arguments-valid", family="mcp", dimension="trajectory", threshold=1.0, derived=scoring_pass
)
def mcp_arguments_valid() -> Scored:
    """The fraction of tool calls whose arguments validate against the tool's ``inputSchema``.

    A call to an unadvertised tool is not valid; an advertised tool without a schema accepts
    any arguments; absent arguments validate as ``{}``. Details give the first failing call's
    position and the validator's reason. No calls score 1.0 with a note.

    Examples:
        >>> import evalframe as ef
        >>> schema = {"type": "object", "required": ["query"], "properties": {"query": {"type": "string"}}}
        >>> tools = [{"name": "search", "inputSchema": schema}]
        >>> ds = ef.Dataset.from_records([
        ...     {"id": "a", "input": {"q": "a"}, "expected_output": "", "metadata": {"mcp": {"tools": tools}}}],
        ...     name="demo")
        >>> def agent(sample):
        ...     calls = [{"name": "search", "arguments": {"query": "oslo"}},
        ...              {"name": "search", "arguments": {"q": "oslo"}}]
        ...     return {"output": "", "trajectory": {"tool_calls": calls}}
        >>> run = ef.evaluate(ds, system=agent, metrics=["mcp-arguments-valid"])
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        a 0.5 {"met":1,"total":2,"first_invalid":1,"reason":"$: 'query' is a required property","note":null}
    """  # noqa: E501

    def kernel(frame: pl.DataFrame, expect: Expectations, calls: pl.DataFrame) -> pl.DataFrame:
        tools = _advertised(expect).unique(["row", "name"], keep="first", maintain_order=True)
        pairs = calls.select("row", "position", "name", "arguments").join(
            tools.with_columns(known=pl.lit(True)), on=["row", "name"], how="left"
        )
        pairs = _schema_verdicts(pairs).with_columns(
            valid=pl.col("known").fill_null(False) & pl.col("valid"),
            reason=pl.when(pl.col("known").is_null())
            .then(pl.format("tool '{}' is not advertised", pl.col("name")))
            .otherwise(pl.col("reason")),
        )
        counts = (
            pairs.sort("row", "position")
            .group_by("row")
            .agg(
                total=pl.len().cast(pl.Int64),
                met=pl.col("valid").sum().cast(pl.Int64),
                first_invalid=pl.col("position").filter(~pl.col("valid")).first().cast(pl.Int64),
                reason=pl.col("reason").filter(~pl.col("valid")).first(),
            )
        )
        rows = per_row(frame.height, counts, {"total": 0, "met": 0})
        return rows.select(
            score=pl.when(pl.col("total") == 0)
            .then(1.0)
            .otherwise((pl.col("met") / pl.col("total")).round(6)),
            met="met",
            total="total",
            first_invalid="first_invalid",
            reason="reason",
            note=pl.when(pl.col("total") == 0).then(pl.lit("No tool calls: scored 1.0.")),
            has_tools=expect.get_column("mcp_tools").is_not_null(),
        )

    fields = ("met", "total", "first_invalid", "reason", "note")
    return trajectory_metric(
        "mcp-arguments-valid",
        kernel,
        {
            "met": pl.Int64,
            "total": pl.Int64,
            "first_invalid": pl.Int64,
            "reason": pl.String,
            "note": pl.String,
            "has_tools": pl.Boolean,
        },
        lambda k: pl.struct(*(k.struct.field(f).alias(f) for f in fields)),
        required=("has_tools", _NO_TOOLS.format("mcp-arguments-valid")),
    )


# --- trace-completeness ---------------------------------------------------------------------

_TRACE_SHAPE = (
    "a list of tool names or {name, arguments} maps (arguments as an object, or a JSON text of one)"
)


def _canonical(value: Any) -> Any:
    """A JSON value in a form where equal values are equal texts: keys sorted (by the dump),
    integral numbers as integers, so ``1`` and ``1.0`` compare equal."""
    if isinstance(value, dict):
        return {k: _canonical(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def canonical_arguments(text: str | None) -> str | None:
    """``text`` (a JSON object's text) in canonical form; ``None`` for no text or bad JSON."""
    if text is None:
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return json.dumps(_canonical(value), sort_keys=True, separators=(",", ":"))


def _trace_entry(entry: Any) -> tuple[str, str | None] | None:
    """``(name, canonical arguments or None for any)`` of one expected operation, or None."""
    if isinstance(entry, str) and entry:
        return entry, None
    if not isinstance(entry, dict):
        return None
    name = entry.get("name", entry.get("tool"))
    if not isinstance(name, str) or not name:
        return None
    args = next((entry[k] for k in ("arguments", "args", "input") if k in entry), None)
    if args is None:
        return name, None
    if isinstance(args, str):
        canon = canonical_arguments(args)
        return None if canon is None else (name, canon)
    if not isinstance(args, dict):
        return None
    return name, json.dumps(_canonical(args), sort_keys=True, separators=(",", ":"))


def _decode_trace(text: str) -> list[tuple[str, str | None]] | None:
    """The expected operations of one ``metadata.mcp.expected_trace`` JSON text, or None."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, list):
        return None
    entries = [_trace_entry(e) for e in value]
    return None if any(e is None for e in entries) else entries  # type: ignore[return-value]


def _expected_trace(meta: pl.Series) -> tuple[pl.DataFrame, pl.Series, pl.Series]:
    """One row per expected operation (``row``, ``name``, ``canon``), and per sample whether
    it has an expected trace and whether its shape is wrong."""
    text = meta.str.json_path_match("$.mcp.expected_trace")
    rows = (
        pl.DataFrame({"text": text})
        .with_row_index("row")
        .with_columns(pl.col("row").cast(pl.Int64))
    )
    distinct = text.drop_nulls().unique(maintain_order=True)
    decoded = [_decode_trace(t) for t in distinct.to_list()]  # distinct traces, not rows
    table = pl.DataFrame(
        {
            "text": distinct,
            "ok": pl.Series([d is not None for d in decoded], dtype=pl.Boolean),
            "entries": pl.Series(
                [[{"name": n, "canon": c} for n, c in d] if d is not None else [] for d in decoded],
                dtype=pl.List(pl.Struct({"name": pl.String, "canon": pl.String})),
            ),
        }
    )
    joined = rows.join(table, on="text", how="left", maintain_order="left")
    entries = (
        joined.filter(pl.col("ok").fill_null(False))
        .select("row", "entries")
        .explode("entries")
        .drop_nulls("entries")
        .unnest("entries")
    )
    has = text.is_not_null()
    bad = joined.get_column("ok").fill_null(True).not_() & has
    return entries, has, bad


@metric(
    "trace-completeness", family="mcp", dimension="trajectory", threshold=0.7, derived=scoring_pass
)
def trace_completeness() -> Scored:
    """The fraction of the expected MCP operations (``metadata.mcp.expected_trace``) executed.

    Each expected operation is a tool name (any arguments) or ``{name, arguments}``: a call
    with that name and equal arguments (JSON values: keys in any order, ``1`` equals
    ``1.0``). Each call counts for at most one expected operation; operations with arguments
    are matched first. An empty expected trace scores 1.0 with a note; a row without
    ``expected_trace`` (or without a trajectory) is that row's error. This is harness-evals'
    ``mcp_trace_completeness``, with the expected trace per sample. Details: ``found``,
    ``total`` and the ``missing`` operations' tool names.

    Examples:
        >>> import evalframe as ef
        >>> trace = [{"name": "search", "arguments": {"q": "refund", "k": 3}}, "answer"]
        >>> ds = ef.Dataset.from_records([
        ...     {"id": "a", "input": {"k": 3.0}, "expected_output": "",
        ...      "metadata": {"mcp": {"expected_trace": trace}}},
        ...     {"id": "b", "input": {"k": 5}, "expected_output": "",
        ...      "metadata": {"mcp": {"expected_trace": trace}}}], name="demo")
        >>> def agent(sample):
        ...     calls = [{"name": "search", "arguments": {"k": sample["k"], "q": "refund"}},
        ...              {"name": "answer", "arguments": {"text": "30 days"}}]
        ...     return {"output": "", "trajectory": {"tool_calls": calls}}
        >>> run = ef.evaluate(ds, system=agent, metrics=["trace-completeness"])
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        a 1.0 {"found":2,"total":2,"missing":[],"note":null}
        b 0.5 {"found":1,"total":2,"missing":["search"],"note":null}
    """

    def kernel(frame: pl.DataFrame, expect: Expectations, calls: pl.DataFrame) -> pl.DataFrame:
        wanted, has, bad = _expected_trace(frame.get_column("meta"))
        made = calls.select(
            "row",
            "name",
            canon=pl.col("arguments").map_batches(_canonical_column, return_dtype=pl.String),
        )
        # Operations with arguments first: as many as both sides have of each (name, arguments).
        exact_e = (
            wanted.filter(pl.col("canon").is_not_null()).group_by("row", "name", "canon").len("e")
        )
        exact_c = made.group_by("row", "name", "canon").len("c")
        exact = exact_e.join(exact_c, on=["row", "name", "canon"], how="left").with_columns(
            met=pl.min_horizontal("e", pl.col("c").fill_null(0))
        )
        used = exact.group_by("row", "name").agg(pl.col("met").sum().alias("used"))
        # Then name-only operations, from the calls left over.
        any_e = wanted.filter(pl.col("canon").is_null()).group_by("row", "name").len("e")
        left = (
            made.group_by("row", "name")
            .len("c")
            .join(used, on=["row", "name"], how="left")
            .select("row", "name", left=pl.col("c") - pl.col("used").fill_null(0))
        )
        loose = any_e.join(left, on=["row", "name"], how="left").with_columns(
            met=pl.min_horizontal("e", pl.col("left").fill_null(0))
        )
        both = pl.concat(
            [exact.select("row", "name", "e", "met"), loose.select("row", "name", "e", "met")]
        )
        counts = both.group_by("row").agg(
            total=pl.col("e").sum().cast(pl.Int64),
            found=pl.col("met").sum().cast(pl.Int64),
            missing=pl.col("name")
            .repeat_by(pl.col("e") - pl.col("met"))
            .list.explode(keep_nulls=False, empty_as_null=False),
        )
        rows = per_row(frame.height, counts, {"total": 0, "found": 0})
        return rows.select(
            score=pl.when(pl.col("total") == 0)
            .then(1.0)
            .otherwise((pl.col("found") / pl.col("total")).round(6)),
            found="found",
            total="total",
            missing=pl.col("missing").fill_null(pl.lit([], _NAMES)).list.sort(),
            note=pl.when(pl.col("total") == 0).then(
                pl.lit("Empty metadata.mcp.expected_trace: nothing to check, scored 1.0.")
            ),
            has_trace=pl.lit(has),
            shape_ok=pl.lit(~bad),
        )

    fields = ("found", "total", "missing", "note")
    scored = trajectory_metric(
        "trace-completeness",
        kernel,
        {
            "found": pl.Int64,
            "total": pl.Int64,
            "missing": _NAMES,
            "note": pl.String,
            "has_trace": pl.Boolean,
            "shape_ok": pl.Boolean,
        },
        lambda k: pl.struct(*(k.struct.field(f).alias(f) for f in fields)),
        required=(
            "has_trace",
            "has no metadata.mcp.expected_trace (the expected MCP operations) for "
            "trace-completeness metric.",
        ),
    )
    k = pl.col("trace-completeness__trajectory")
    shape = pl.when(~k.struct.field("shape_ok")).then(
        pl.concat_str(
            pl.lit("Sample '"),
            pl.col(C.SAMPLE_ID),
            pl.lit(f"' field 'metadata.mcp.expected_trace' must be {_TRACE_SHAPE}."),
        )
    )
    error = pl.coalesce(scored.error, shape) if scored.error is not None else shape
    return Scored(
        score=pl.when(error.is_null()).then(scored.score),
        error=error,
        details=pl.when(error.is_null()).then(scored.details),
        prepare=scored.prepare,
    )


def _canonical_column(arguments: pl.Series) -> pl.Series:
    """``canonical_arguments`` of each distinct text of a column (absent arguments are ``{}``)."""
    text = arguments.fill_null("{}")
    distinct = text.unique(maintain_order=True)
    canon = pl.Series([canonical_arguments(t) for t in distinct.to_list()], dtype=pl.String)
    table = pl.DataFrame({"t": distinct, "canon": canon})
    return (
        text.to_frame("t")
        .join(table, on="t", how="left", maintain_order="left")
        .get_column("canon")
    )
