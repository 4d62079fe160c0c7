"""Agent trajectories in the store: the ``trajectories`` and ``tool_calls`` views.

A run's trajectories and conversations are saved with its outputs (``outputs.extra``, as
JSON: the ``trajectory`` and ``turns`` fields), so export, import and rescoring carry them
like any output column. Two views make them SQL-friendly: ``trajectories`` (one row per
execution that recorded one) and ``tool_calls`` (one row per tool call, exploded, with its
position). Both read through ``run_outputs``, so a rescored run shows its source's calls.
Reading a run back restores the typed ``trajectory`` and ``turns`` columns.
"""

from __future__ import annotations

from typing import Final

import polars as pl

from evalframe.core._trajectory import TRAJECTORY, TRAJECTORY_COLUMN
from evalframe.core._turns import TURNS, TURNS_COLUMN

__all__ = ["AGENT_VIEWS", "typed_agent_columns"]

AGENT_VIEWS: Final[dict[str, str]] = {
    "trajectories": """
        CREATE OR REPLACE VIEW trajectories AS
        SELECT run_id, sample_id, repetition,
               CAST(json_extract(extra, '$.trajectory.steps') AS BIGINT) AS steps,
               json_extract_string(extra, '$.trajectory.finish_reason') AS finish_reason,
               CAST(json_extract(extra, '$.trajectory.approvals') AS VARCHAR[]) AS approvals,
               CAST(json_extract(extra, '$.trajectory.pending_approvals') AS BIGINT)
                   AS pending_approvals,
               json_array_length(extra, '$.trajectory.tool_calls') AS n_tool_calls
        FROM run_outputs
        WHERE extra IS NOT NULL AND json_type(extra, '$.trajectory') = 'OBJECT'""",
    "tool_calls": """
        CREATE OR REPLACE VIEW tool_calls AS
        WITH t AS (
            SELECT run_id, sample_id, repetition,
                   CAST(json_extract(extra, '$.trajectory.tool_calls') AS JSON[]) AS calls
            FROM run_outputs
            WHERE extra IS NOT NULL AND json_type(extra, '$.trajectory.tool_calls') = 'ARRAY'
        ),
        exploded AS (
            SELECT run_id, sample_id, repetition,
                   unnest(range(len(calls))) AS position, unnest(calls) AS call
            FROM t
        )
        SELECT run_id, sample_id, repetition, position,
               call->>'name' AS name,
               call->>'arguments' AS arguments,
               call->>'result' AS result,
               call->>'error' AS error,
               CAST(call->>'latency_ms' AS DOUBLE) AS latency_ms,
               CAST(call->>'tokens' AS BIGINT) AS tokens
        FROM exploded""",
}
"""The views' DDL, created with the store's other views."""


def typed_agent_columns(produced: pl.DataFrame, extra: pl.Series) -> pl.DataFrame:
    """``produced`` with its ``trajectory`` and ``turns`` decoded to their dtypes from ``extra``.

    The generic decoding of ``outputs.extra`` infers types from the values; these two
    columns have fixed dtypes (``core/_trajectory.py``, ``core/_turns.py``).
    """
    for column, dtype in ((TRAJECTORY_COLUMN, TRAJECTORY), (TURNS_COLUMN, TURNS)):
        if column in produced.columns:
            text = extra.str.json_path_match(f"$.{column}")
            produced = produced.with_columns(text.str.json_decode(dtype).alias(column))
    return produced
