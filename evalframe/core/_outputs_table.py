"""Saved outputs in a table (a Parquet file, or a piece of a partitioned source) read a column
at a time.

The exact reader (``core/_outputs.py``) turns every row of the table into a Python entry and
checks it. :func:`outputs_columns` checks whole columns instead and builds the frame from
them, or declines (returns None) and the exact reader takes the table, so the frame and every
error message are the same. It vouches for tables whose ids (``id``, else ``sample_id``) are
strings, none empty, blank or repeated; whose ``actual_output`` has no null; whose numbers
are integers (or floats, where a float belongs); whose ``contexts`` are lists of strings;
and whose ``trajectory`` and ``turns`` are JSON texts, or trajectories in the ``TRAJECTORY``
struct evalframe writes, that the compiled pass (``core/_outputs_nested.py``) reads exactly.

Examples:
    >>> import pyarrow as pa, polars as pl
    >>> table = pa.table({"id": ["q1", "q2"], "actual_output": ["a", "b"], "latency_ms": [3, 4]})
    >>> outputs_columns(table, pl.Schema({"latency_ms": pl.Float64})).rows()
    [('q1', 'a', 3.0), ('q2', 'b', 4.0)]
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Final

import polars as pl

from evalframe.core import schema as C
from evalframe.core._njit import worth_compiling
from evalframe.core._outputs_quick import quick_cells
from evalframe.core._trajectory import TRAJECTORY
from evalframe.core._turns import TURNS

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["outputs_columns"]

_BLANK: Final = r"^[\s\x1c-\x1f]*$"  # ids str.strip() may empty: the exact reader names them
# Rows from which JSON text columns take the compiled pass once this process has it loaded,
# and from which they take it in any case: loading numba and the pass's cached code costs a
# new process 1-2 s, what the exact reader takes for about 5,000-10,000 trajectories or turns.
_COMPILED_FROM: Final = 1_000
_COLD_FROM: Final = 10_000


def _column(table: pa.Table, name: str) -> pl.Series | None:
    """Column ``name`` as Polars reads it, None where the table has none."""
    if name not in table.column_names:
        return None
    return pl.Series(name, table.column(name))


def outputs_columns(table: pa.Table, numbers: pl.Schema) -> pl.DataFrame | None:
    """The saved outputs of ``table``, or None: see the module.

    Args:
        table: the table, in the Parquet layout of saved outputs.
        numbers: the numeric columns an output may carry, with their dtypes.
    """
    n = table.num_rows
    text = _column(table, C.ACTUAL_OUTPUT)
    if n == 0 or text is None or text.dtype != pl.String or text.null_count():
        return None
    ids: pl.Series | None = None
    for name in ("id", C.SAMPLE_ID):  # "id", else "sample_id" where it is null
        column = _column(table, name)
        if column is None or column.dtype == pl.Null:
            continue
        if column.dtype != pl.String:
            return None
        ids = column if ids is None else ids.fill_null(column)
    if ids is None or ids.null_count() or ids.is_duplicated().any():
        return None
    if ids.str.contains(_BLANK).any():
        return None
    columns = [ids.alias(C.SAMPLE_ID), text.alias(C.ACTUAL_OUTPUT)]
    for name, dtype in numbers.items():
        column = _column(table, name)
        if column is None:
            continue
        integral = column.dtype.is_integer() and column.dtype not in (pl.UInt64, pl.Int128)
        if not (
            column.dtype == pl.Null or integral or (dtype == pl.Float64 and column.dtype.is_float())
        ):
            return None  # a float where an integer belongs, text, booleans: the exact reader's
        columns.append(column.cast(dtype))
    contexts = _column(table, "contexts")
    if contexts is not None and contexts.dtype != pl.Null:
        if contexts.dtype not in (pl.List(pl.String), pl.List(pl.Null)):
            return None  # text, or {id, text} items: the exact reader's
        if contexts.explode(empty_as_null=False, keep_nulls=False).null_count():
            return None
        if contexts.null_count() < n:
            columns.append(contexts.cast(pl.List(pl.String)))
    for field in ("trajectory", "turns"):
        read = _nested(field, _column(table, field))
        if read is None:
            return None
        columns.extend(read)
    return pl.DataFrame(columns)


def _nested(field: str, column: pl.Series | None) -> list[pl.Series] | None:
    """Field ``field``'s column (none when no row has one), or None to decline."""
    if column is None or column.dtype == pl.Null:
        return []
    given = column.null_count() < column.len()
    loaded = sys.modules.get("evalframe.core._outputs_nested")  # not imported: not loaded
    if not worth_compiling(column.len(), _COMPILED_FROM) or not (
        worth_compiling(column.len(), _COLD_FROM) or (loaded is not None and loaded.cells_loaded())
    ):  # a few rows: orjson's reader or the exact one, compiling and loading nothing
        if column.dtype != pl.String:
            return None
        read = quick_cells(field, column.to_list()) if given else None
        return [] if not given else None if read is None else [read]

    import numpy as np

    from evalframe.core import _outputs_nested as nested
    from evalframe.core._arrow_text import text_buffers

    if column.dtype == TRAJECTORY and field == "trajectory":
        latency = column.struct.field("tool_calls").explode().struct.field("latency_ms")
        if latency.is_nan().any():  # JSON has no NaN: the text would say null
            return None
        column = column.struct.json_encode()
    elif column.dtype != pl.String:
        return None  # another shape: the exact reader's
    data, offsets, valid = text_buffers(column)
    number = nested.TRAJECTORY_FIELD if field == "trajectory" else nested.TURNS_FIELD
    found, failed = nested.read_cells(number, data, np.ascontiguousarray(offsets), valid)
    if failed.any():
        return None
    if not found and given:  # only blank or null texts: a
        dtype = TRAJECTORY if field == "trajectory" else TURNS  # column of nulls
        return [pl.Series(field, [None] * column.len(), dtype=dtype)]
    return list(found.values())
