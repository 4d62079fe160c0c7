"""Adapters from whole-column NumPy/Python kernels to Polars expressions."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

import polars as pl

from evalframe.core import schema as C

__all__ = ["batched", "sample_error", "type_error"]


def batched(
    kernel: Callable[[pl.DataFrame], pl.DataFrame],
    inputs: Mapping[str, pl.Expr],
    output: Mapping[str, pl.DataType | type[pl.DataType]],
    *,
    optional: Mapping[str, str] | None = None,
) -> pl.Expr:
    """Run ``kernel`` once per batch over whole columns and return its result as a struct.

    ``kernel`` receives a frame with one column per ``inputs`` entry (and per ``optional``
    entry, a column's name, whose column is in the frame) and must return a frame of the
    same height with exactly the ``output`` columns. Fields are read with
    ``.struct.field(name)``. With ``optional`` the kernel gets the whole columns at once,
    never a slice of rows (their rows may refer to each other).

    Examples:
        >>> import polars as pl
        >>> df = pl.DataFrame({"a": [1, 2]})
        >>> k = batched(lambda f: f.select(b=pl.col("x") * 2), {"x": pl.col("a")}, {"b": pl.Int64})
        >>> df.select(k.struct.field("b")).to_series().to_list()
        [2, 4]
    """
    schema = pl.Struct(dict(output))

    def run(packed: pl.Series) -> pl.Series:
        result = kernel(packed.struct.unnest())
        return (
            result.select(list(output)).cast(pl.Schema(schema.to_schema())).to_struct(packed.name)
        )

    exprs = [expr.alias(name) for name, expr in inputs.items()]
    # A column matched by a pattern is left out where it is missing, instead of failing.
    exprs += [pl.col(f"^{re.escape(c)}$").alias(name) for name, c in (optional or {}).items()]
    return pl.struct(*exprs).map_batches(run, return_dtype=schema, is_elementwise=optional is None)


def sample_error(template: str, *values: pl.Expr) -> pl.Expr:
    """``Sample '<id>' ...`` messages, with ``{}`` placeholders filled from ``values``.

    Null values print as ``null`` rather than nulling the whole message.
    """
    filled = [v.cast(pl.String).fill_null("null") for v in values]
    return pl.format("Sample '{}' " + template, pl.col(C.SAMPLE_ID), *filled)


def type_error(metric: str) -> tuple[pl.Expr, pl.Expr]:
    """The condition and message for a non-string ``expected_output``."""
    is_bad = pl.col(C.EXPECTED_TYPE) != "string"
    message = sample_error(
        f"expected_output must be a string for {metric} metric; got {{}}.", pl.col(C.EXPECTED_TYPE)
    )
    return is_bad, message
