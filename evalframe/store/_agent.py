"""Agent trajectories in the store: the ``trajectories`` table and the views over it.

Each execution that recorded a trajectory has one ``trajectories`` row under the run that
produced its outputs, holding the typed ``trajectory`` column's fields as columns (the tool
calls as a list of structs, in call order). ``run_trajectories`` resolves a rescored run to
its source's rows, as ``run_outputs`` does for outputs, and ``tool_calls`` explodes every
call into a row with its position. A conversation's ``turns`` stay in ``outputs.extra``.

Stores of schema version 2 kept the trajectory inside ``outputs.extra``;
``trajectories_from_extra`` moves it out (the 2 -> 3 migration, and importing a version-2
export).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import polars as pl

from evalframe.core import schema as C
from evalframe.core._trajectory import TRAJECTORY, TRAJECTORY_COLUMN
from evalframe.core._turns import TURNS, TURNS_COLUMN, typed_agent_frame
from evalframe.store._connect import execute, fetch

if TYPE_CHECKING:
    import duckdb

__all__ = [
    "AGENT_VIEWS",
    "TRAJECTORIES_TABLE",
    "trajectories_frame",
    "trajectories_from_extra",
    "trajectory_join",
    "typed_agent_columns",
]

_FIELDS: Final = tuple(f.name for f in TRAJECTORY.fields)  # tool_calls, steps, ...
_TOOL_CALL_SQL: Final = (
    "STRUCT(name VARCHAR, arguments VARCHAR, result VARCHAR, error VARCHAR, "
    "latency_ms DOUBLE, tokens BIGINT)[]"
)

TRAJECTORIES_TABLE: Final = f"""
    CREATE TABLE IF NOT EXISTS trajectories (
        run_id VARCHAR NOT NULL,
        sample_id VARCHAR NOT NULL USING COMPRESSION zstd,
        repetition BIGINT NOT NULL,
        tool_calls {_TOOL_CALL_SQL},
        steps BIGINT,
        finish_reason VARCHAR,
        approvals VARCHAR[],
        pending_approvals BIGINT
    )"""
"""One row per execution that recorded a trajectory (keyed like ``outputs``)."""

AGENT_VIEWS: Final[dict[str, str]] = {
    "run_trajectories": """
        CREATE OR REPLACE VIEW run_trajectories AS
        SELECT r.run_id, t.* EXCLUDE (run_id), len(t.tool_calls) AS n_tool_calls
        FROM runs AS r JOIN trajectories AS t ON t.run_id = r.outputs_run_id""",
    "tool_calls": """
        CREATE OR REPLACE VIEW tool_calls AS
        WITH exploded AS (
            SELECT run_id, sample_id, repetition,
                   unnest(range(len(tool_calls))) AS position, unnest(tool_calls) AS call
            FROM run_trajectories
        )
        SELECT run_id, sample_id, repetition, position,
               call.name AS name, call.arguments AS arguments, call.result AS result,
               call.error AS error, call.latency_ms AS latency_ms, call.tokens AS tokens
        FROM exploded""",
}
"""The views' DDL, created with the store's other views."""


def trajectory_join(
    con: duckdb.DuckDBPyConnection, outputs_run_id: str, outputs: str = "o"
) -> tuple[str, str]:
    """SQL adding the ``trajectory`` column to the rows of ``outputs`` (an alias of that
    table) of one run: a select item to append (``", ... AS trajectory"``, null where none
    was recorded) and the join clause; both empty when the run recorded no trajectory, so
    its frame has no such column."""
    recorded = fetch(
        con, "SELECT EXISTS (SELECT 1 FROM trajectories WHERE run_id = ?)", [outputs_run_id]
    )
    if not recorded:
        return "", ""
    fields = ", ".join(f"{f} := t.{f}" for f in _FIELDS)
    column = f"CASE WHEN t.run_id IS NULL THEN NULL ELSE struct_pack({fields}) END"
    join = (
        f"LEFT JOIN trajectories AS t ON t.run_id = {outputs}.run_id "
        f"AND t.sample_id = {outputs}.sample_id AND t.repetition = {outputs}.repetition"
    )
    return f", {column} AS {TRAJECTORY_COLUMN}", join


def trajectories_frame(frame: pl.DataFrame, run_id: str) -> pl.DataFrame | None:
    """The ``trajectories`` rows of an evaluation frame (``None`` when it recorded none)."""
    if TRAJECTORY_COLUMN not in frame.columns:
        return None
    if frame.schema[TRAJECTORY_COLUMN] != TRAJECTORY:  # a frame built by hand
        frame = typed_agent_frame(frame.select(C.SAMPLE_ID, C.REPETITION, TRAJECTORY_COLUMN), "Run")
        if TRAJECTORY_COLUMN not in frame.columns:
            return None
    recorded = frame.select(C.SAMPLE_ID, C.REPETITION, TRAJECTORY_COLUMN)
    recorded = recorded.filter(pl.col(TRAJECTORY_COLUMN).is_not_null())
    if recorded.height == 0:
        return None
    return recorded.select(
        pl.lit(run_id, pl.String).alias(C.RUN_ID),
        pl.col(C.SAMPLE_ID),
        pl.col(C.REPETITION).cast(pl.Int64),
        pl.col(TRAJECTORY_COLUMN).struct.unnest(),
    )


def trajectories_from_extra(con: duckdb.DuckDBPyConnection, run_ids: list[str] | None) -> None:
    """Move trajectories kept in ``outputs.extra`` (schema version 2) into ``trajectories``.

    Only the outputs of ``run_ids`` (every run with None). The ``trajectory`` key leaves
    ``extra``, which becomes null when nothing else is left in it.
    """
    where = "extra IS NOT NULL AND json_exists(extra, '$.trajectory')"
    params: list[Any] = []
    if run_ids is not None:
        where += " AND list_contains(?::VARCHAR[], run_id)"
        params = [run_ids]
    tool_call = (
        '{"name": "VARCHAR", "arguments": "VARCHAR", "result": "VARCHAR", '
        '"error": "VARCHAR", "latency_ms": "DOUBLE", "tokens": "BIGINT"}'
    )
    execute(
        con,
        f"""INSERT INTO trajectories BY NAME
        SELECT run_id, sample_id, repetition,
               from_json(json_extract(extra, '$.trajectory.tool_calls'), '[{tool_call}]')
                   AS tool_calls,
               CAST(json_extract(extra, '$.trajectory.steps') AS BIGINT) AS steps,
               json_extract_string(extra, '$.trajectory.finish_reason') AS finish_reason,
               CAST(json_extract(extra, '$.trajectory.approvals') AS VARCHAR[]) AS approvals,
               CAST(json_extract(extra, '$.trajectory.pending_approvals') AS BIGINT)
                   AS pending_approvals
        FROM outputs WHERE {where} AND json_type(extra, '$.trajectory') = 'OBJECT'""",
        params,
    )
    execute(
        con,
        "UPDATE outputs SET extra = nullif(CAST(json_merge_patch(extra, "
        """'{"trajectory": null}') AS VARCHAR), '{}') """
        f"WHERE {where}",
        params,
    )


def typed_agent_columns(produced: pl.DataFrame, extra: pl.Series) -> pl.DataFrame:
    """``produced`` with its ``turns`` decoded to their dtype from ``extra``.

    The generic decoding of ``outputs.extra`` infers types from the values; turns have a
    fixed dtype (``core/_turns.py``).
    """
    if TURNS_COLUMN in produced.columns:
        text = extra.str.json_path_match(f"$.{TURNS_COLUMN}")
        produced = produced.with_columns(text.str.json_decode(TURNS).alias(TURNS_COLUMN))
    return produced
