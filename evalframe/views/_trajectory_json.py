"""The report's ``samples[].trajectory``: present only on executions that recorded one.

Tool calls appear as eval-harness writes them (``name`` and ``arguments``, the arguments as
an object), followed by whichever of ``result``, ``error``, ``latency_ms`` and ``tokens``
were recorded; then ``steps``, ``finish_reason``, ``approvals`` and ``pending_approvals``.
Both report writers (``_report._samples`` and ``_report_json._samples_text``) take the
blocks from here, so they stay byte-identical.
"""

from __future__ import annotations

import json
from typing import Any

import orjson
import polars as pl

from evalframe.core._trajectory import TRAJECTORY_COLUMN
from evalframe.views._format import python_floats

__all__ = ["trajectory_blocks", "trajectory_suffixes"]

_OPTIONAL = ("result", "error", "latency_ms", "tokens")


def _block(row: dict[str, Any]) -> dict[str, Any]:
    calls = []
    for call in row["tool_calls"] or []:
        arguments = call["arguments"]
        entry: dict[str, Any] = {
            "name": call["name"],
            "arguments": {} if arguments is None else json.loads(arguments),
        }
        entry.update({k: call[k] for k in _OPTIONAL if call[k] is not None})
        calls.append(entry)
    return {
        "tool_calls": calls,
        "steps": row["steps"],
        "finish_reason": row["finish_reason"],
        "approvals": row["approvals"] or [],
        "pending_approvals": row["pending_approvals"],
    }


def trajectory_blocks(rows: pl.DataFrame) -> list[dict[str, Any] | None]:
    """Each execution's trajectory block, or None (also when the frame has no trajectories)."""
    if TRAJECTORY_COLUMN not in rows.columns:
        return [None] * rows.height
    column = rows.get_column(TRAJECTORY_COLUMN)
    out: list[dict[str, Any] | None] = [None] * rows.height
    present = column.is_not_null()
    for index, row in zip(
        present.arg_true().to_list(), column.filter(present).to_list(), strict=True
    ):
        out[index] = _block(row)
    return out


def trajectory_suffixes(rows: pl.DataFrame, indent: int) -> pl.Series:
    """``,\\n<pad>"trajectory": {...}`` per execution that has one, else the empty string."""
    pad = " " * indent
    texts = []
    for block in trajectory_blocks(rows):
        if block is None:
            texts.append("")
            continue
        dumped = python_floats(orjson.dumps(block, option=orjson.OPT_INDENT_2)).decode("utf-8")
        texts.append(f',\n{pad}"trajectory": ' + dumped.replace("\n", "\n" + pad))
    return pl.Series(texts, dtype=pl.String)
