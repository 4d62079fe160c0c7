"""The dtypes of the agent columns: ``trajectory`` (``core/_trajectory.py`` parses and records
it) and ``turns`` (``core/_turns.py``), shared by the exact parsers and the compiled pass
(``core/_outputs_nested.py``).
"""

from __future__ import annotations

from typing import Final

import polars as pl

__all__ = ["TOOL_CALL", "TRAJECTORY", "TRAJECTORY_COLUMN", "TURN", "TURNS", "TURNS_COLUMN"]

TRAJECTORY_COLUMN: Final = "trajectory"

TOOL_CALL: Final = pl.Struct(
    {
        "name": pl.String(),
        "arguments": pl.String(),
        "result": pl.String(),
        "error": pl.String(),
        "latency_ms": pl.Float64(),
        "tokens": pl.Int64(),
    }
)
"""One tool call; ``arguments`` is the arguments object as compact JSON text."""

TRAJECTORY: Final = pl.Struct(
    {
        "tool_calls": pl.List(TOOL_CALL),
        "steps": pl.Int64(),
        "finish_reason": pl.String(),
        "approvals": pl.List(pl.String()),
        "pending_approvals": pl.Int64(),
    }
)
"""The dtype of the ``trajectory`` column."""

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
