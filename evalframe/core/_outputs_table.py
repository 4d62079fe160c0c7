"""Saved outputs in a table (a Parquet file, or a piece of a partitioned source) read a column
at a time.

The exact reader (``core/_outputs.py``) turns every row of the table into a Python entry and
checks it. :func:`outputs_columns` checks whole columns instead and builds the frame from
them, or declines (returns None) and the exact reader takes the table, so the frame and every
error message are the same. It vouches for tables whose ids (``id``, else ``sample_id``) are
strings, none empty, blank or repeated; whose ``actual_output`` has no null; whose numbers
are integers (or floats, where a float belongs); whose ``contexts`` are lists of strings;
and whose ``contexts``, ``trajectory`` and ``turns`` are otherwise JSON texts, or structs and
lists of structs (as Arrow writes Python's dicts, and the ``TRAJECTORY`` struct evalframe
writes) encoded to JSON texts by Polars, that the compiled pass (``core/_outputs_nested.py``)
or orjson's reader reads exactly.

Examples:
    >>> import pyarrow as pa, polars as pl
    >>> table = pa.table({"id": ["q1", "q2"], "actual_output": ["a", "b"], "latency_ms": [3, 4]})
    >>> outputs_columns(table, pl.Schema({"latency_ms": pl.Float64})).rows()
    [('q1', 'a', 3.0), ('q2', 'b', 4.0)]
"""

from __future__ import annotations

import json
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
        if contexts.dtype in (pl.List(pl.String), pl.List(pl.Null)):
            if contexts.explode(empty_as_null=False, keep_nulls=False).null_count():
                return None
            if contexts.null_count() < n:
                columns.append(contexts.cast(pl.List(pl.String)))
        else:
            read = _context_items(contexts)
            if read is None:
                return None  # text, or items other than {id, text}: the exact reader's
            columns.extend(read)
    for field in ("trajectory", "turns"):
        read = _nested(field, _texts(table, field))
        if read is None:
            return None
        columns.extend(read)
    return pl.DataFrame(columns)


def _context_items(contexts: pl.Series) -> list[pl.Series] | None:
    """``contexts`` and ``context_ids`` from lists of ``{id, text}`` structs, or None to
    decline: an item that is null or has no string text, an id neither text nor integer."""
    from evalframe.core._contexts import CONTEXT_IDS, CONTEXTS

    kind = contexts.dtype
    if not (isinstance(kind, pl.List) and isinstance(kind.inner, pl.Struct)):
        return None
    members = {field.name: field.dtype for field in kind.inner.fields}
    given_id = members.get("id", pl.Null())
    if members.get("text") != pl.String or not (
        given_id in (pl.Null, pl.String) or given_id.is_integer()
    ):
        return None
    items = contexts.explode(empty_as_null=False, keep_nulls=False)  # the rows' items
    if items.null_count() or items.struct.field("text").null_count():
        return None  # a null item, or an item without its text
    texts = contexts.list.eval(pl.element().struct.field("text")).alias(CONTEXTS)
    if given_id == pl.Null or not items.struct.field("id").is_not_null().any():
        return [texts]
    ids = contexts.list.eval(pl.element().struct.field("id").cast(pl.String))
    return [texts, ids.alias(CONTEXT_IDS)]


def _texts(table: pa.Table, name: str) -> pl.Series | None:
    """Column ``name`` (None where the table has none), its structs and lists of structs as
    JSON texts; a column whose values JSON could not carry as they are is returned as it is,
    for the exact reader (see :func:`_json_values`)."""
    column = _column(table, name)
    if column is None or not isinstance(column.dtype, pl.Struct | pl.List):
        return column
    if not _json_values(table.column(name)):
        return column
    if isinstance(column.dtype, pl.Struct):
        texts = column.struct.json_encode()
    else:  # a list: encoded inside a struct, whose member's value is the list's text
        prefix = "{" + json.dumps(name) + ":"
        encoded = column.to_frame().select(pl.struct(name).struct.json_encode()).to_series()
        texts = encoded.str.strip_prefix(prefix).str.strip_suffix("}")
    return pl.select(pl.when(column.is_not_null()).then(texts)).to_series().alias(name)


def _json_values(array: pa.ChunkedArray | pa.Array) -> bool:
    """Whether the JSON text of each value of ``array`` reads back as the value its
    ``to_pylist()`` gives: structs (distinct member names) and lists of texts, integers,
    booleans, nulls and finite 64-bit floats. Not maps, dictionaries, dates or bytes (Python
    values JSON has no spelling for), nor a float32 (its JSON text is the float32's shortest
    spelling, not the digits of the float Python reads), nor NaN or infinity."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(array, pa.ChunkedArray):
        return all(_json_values(chunk) for chunk in array.chunks)
    kind = array.type
    if pa.types.is_struct(kind):
        names = [kind.field(i).name for i in range(kind.num_fields)]
        return (
            bool(names)
            and len(set(names)) == len(names)
            and all(_json_values(array.field(i)) for i in range(kind.num_fields))
        )
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return _json_values(array.flatten())
    if pa.types.is_float64(kind):
        return pc.all(pc.is_finite(array)).as_py() is not False  # None: no number at all
    plain = (pa.types.is_string, pa.types.is_large_string, pa.types.is_integer)
    return any(test(kind) for test in (*plain, pa.types.is_boolean, pa.types.is_null))


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

    if column.dtype != pl.String:
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
