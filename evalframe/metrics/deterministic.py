"""Deterministic metrics: numeric-diff and list-contains.

numeric-diff is a handful of Polars string and arithmetic expressions. list-contains reads
the expected list with the JSON scanner of :mod:`evalframe.metrics.structural`, so a list
holding a number or a nested list is that sample's error rather than a coerced string, and
checks every expected string against its row's output in one vectorized pass.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import numpy as np
import polars as pl

from evalframe.core import schema as C
from evalframe.metrics._batched import batched, sample_error
from evalframe.metrics._json_scan import json_leaves
from evalframe.metrics._registry import metric
from evalframe.metrics._spec import Range, Scored

__all__ = ["NUMBER_PATTERN", "list_contains", "numeric_diff"]

NUMBER_PATTERN = (
    r"[-+]?(?:(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]+)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"
)
"""A decimal number as written in prose: sign, thousands commas, fraction, exponent.

ASCII digits only (Rust's ``\\d`` would also match other scripts' digits, which the float
parser then rejects)."""

_ACTUAL = pl.col(C.ACTUAL_OUTPUT)
_EXPECTED = pl.col(C.EXPECTED_OUTPUT)
_TYPE = pl.col(C.EXPECTED_TYPE)


def _to_float(text: pl.Expr) -> pl.Expr:
    return text.str.replace_all(",", "", literal=True).cast(pl.Float64, strict=False)


def _whole_number(text: pl.Expr) -> pl.Expr:
    """The number a whole (trimmed) string spells, or null."""
    return _to_float(text.str.extract(rf"^\s*({NUMBER_PATTERN})\s*$", 1))


@metric("numeric-diff", family="deterministic")
def numeric_diff(
    *,
    abs_tol: Annotated[float, Range(ge=0)] = 0.0,
    rel_tol: Annotated[float, Range(ge=0)] = 1e-9,
    extract: Literal["first", "last", "whole"] = "first",
) -> Scored:
    """1.0 when the number in the output is within tolerance of the expected number.

    The output's number is its first number (``extract="first"``), its last, or the whole
    trimmed output (``"whole"``); numbers may carry a sign, thousands commas, a fraction
    and an exponent (``-1,234.5e3``). The expected number is ``expected_output`` when it is
    an int or a float, or a string that is exactly one number. With a the output's number
    and e the expected one, the score is 1.0 when ``a == e`` or ``|a - e| <= max(rel_tol *
    max(|a|, |e|), abs_tol)`` (``math.isclose``), else 0.0.

    Returns:
        Float64 in {0, 1}; null (an error) when the output has no number or the expected
        output is not a number.
    """
    if extract == "whole":
        actual = _whole_number(_ACTUAL)
    elif extract == "last":
        actual = _to_float(_ACTUAL.str.extract_all(NUMBER_PATTERN).list.last())
    else:
        actual = _to_float(_ACTUAL.str.extract(f"({NUMBER_PATTERN})", 1))
    expected = (
        pl.when(_TYPE.is_in(["int", "float"]))
        .then(_EXPECTED.cast(pl.Float64, strict=False))
        .when(_TYPE == "string")
        .then(_whole_number(_EXPECTED))
    )
    diff = (actual - expected).abs()
    tolerance = pl.max_horizontal(
        rel_tol * pl.max_horizontal(actual.abs(), expected.abs()), abs_tol
    )
    close = (actual == expected) | (diff <= tolerance)
    no_expected = expected.is_null()
    no_actual = actual.is_null()
    return Scored(
        score=pl.when(no_expected | no_actual).then(None).otherwise(close.cast(pl.Float64)),
        error=pl.when(no_expected)
        .then(
            sample_error(
                "expected_output must be a number for numeric-diff metric; got {} {}.",
                _TYPE,
                _EXPECTED.str.slice(0, 40),
            )
        )
        .when(no_actual)
        .then(
            sample_error(
                f"numeric-diff metric found no number ({extract}) in actual output {{}}.",
                _ACTUAL.str.slice(0, 40),
            )
        ),
        details=pl.struct(
            actual_number=actual,
            expected_number=expected,
            abs_diff=diff,
            tolerance=tolerance,
        ),
    )


def _list_kernel(case_sensitive: bool, limit: int) -> Any:
    def kernel(frame: pl.DataFrame) -> pl.DataFrame:
        _, leaves = json_leaves(frame.get_column("expected"))
        # An empty list is the single leaf "[]" at "$"; anything below "$[n]" is nested.
        items = leaves.filter(pl.col("path") != "$").join(
            frame.select("actual").with_row_index("row").cast({"row": pl.Int64}), on="row"
        )
        value, text = pl.col("value"), pl.col("actual")
        if not case_sensitive:
            value, text = value.str.to_lowercase(), text.str.to_lowercase()
        good = (
            pl.col("path").str.contains(r"^\$\[\d+\]$")
            & (pl.col("kind") == "string")
            & (pl.col("value") != "")
        )
        per_row = (
            items.with_columns(good=good)
            .with_columns(found=pl.col("good") & text.str.contains(value, literal=True))
            .group_by("row")
            .agg(
                pl.len().alias("total"),
                pl.col("found").sum().cast(pl.Int64).alias("found"),
                (~pl.col("good")).sum().cast(pl.Int64).alias("bad"),
                pl.col("value").filter(~pl.col("found")).head(limit).alias("missing"),
            )
        )
        base = pl.DataFrame({"row": np.arange(frame.height, dtype=np.int64)})
        return (
            base.join(per_row, on="row", how="left", maintain_order="left")
            .with_columns(pl.col("total", "found", "bad").fill_null(0))
            .select("total", "found", "bad", "missing")
        )

    return kernel


@metric("list-contains", family="deterministic")
def list_contains(
    *, case_sensitive: bool = True, max_missing: Annotated[int, Range(ge=0)] = 10
) -> Scored:
    """Fraction of the expected strings that occur in the output.

    ``expected_output`` is a list of non-empty strings; each item counts when it occurs in
    the output as a substring (case-sensitive unless ``case_sensitive=False``). Repeated
    items count once each. The score is ``found / len(expected)``; the details list up to
    ``max_missing`` items not found.

    Returns:
        Float64 in [0, 1]; null (an error) when ``expected_output`` is not a non-empty list
        of non-empty strings.
    """
    k = pl.col("list-contains__kernel")
    total = k.struct.field("total")
    found = k.struct.field("found")
    bad_type = _TYPE != "list"
    empty = total == 0
    bad_items = k.struct.field("bad") > 0
    return Scored(
        score=pl.when(bad_type | empty | bad_items).then(None).otherwise(found / total),
        error=pl.when(bad_type)
        .then(
            sample_error("expected_output must be a list for list-contains metric; got {}.", _TYPE)
        )
        .when(empty)
        .then(sample_error("expected_output must not be an empty list for list-contains metric."))
        .when(bad_items)
        .then(
            sample_error(
                "expected_output must be a list of non-empty strings for list-contains metric."
            )
        ),
        details=pl.struct(found=found, total=total, missing=k.struct.field("missing")),
        prepare={
            "list-contains__kernel": batched(
                _list_kernel(case_sensitive, max_missing),
                {"expected": pl.when(_TYPE == "list").then(_EXPECTED), "actual": _ACTUAL},
                {
                    "total": pl.Int64,
                    "found": pl.Int64,
                    "bad": pl.Int64,
                    "missing": pl.List(pl.String),
                },
            )
        },
    )
