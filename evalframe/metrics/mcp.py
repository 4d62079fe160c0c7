"""MCP tool use: calls chosen from the advertised tools, arguments valid against their schemas.

The advertised tools are the sample's ``metadata.mcp.tools``, in the shape of MCP's
``tools/list`` reply (``[{name, description?, inputSchema?}]``); the calls are the
trajectory's tool calls (``core/_trajectory.py``). Both metrics are deterministic. Tool names
are matched with joins over the exploded calls; schema validation uses the ``jsonschema``
package once per distinct (schema, arguments) pair, with one validator per distinct schema.
A row with no trajectory, or no ``metadata.mcp.tools``, is that row's error.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from evalframe.core._trajectory import Expectations
from evalframe.metrics._registry import metric
from evalframe.metrics._spec import Scored
from evalframe.metrics.structural import _validator, _verdict
from evalframe.metrics.trajectory import items_frame, per_row, scoring_pass, trajectory_metric

__all__ = ["mcp_arguments_valid", "mcp_tool_selection"]

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
            validators[schema_text] = _validator(schema_text, jsonschema, False)
        valid, path, reason, problem = _verdict(
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
    """

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
    """

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
