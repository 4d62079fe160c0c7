"""ordinal-distance: partial credit for labels on an ordered scale.

The scale is a required parameter (``ordinal-distance(scale=[low,medium,high,urgent])``); a
sample's ``metadata.ordinal_scale`` replaces it when that is itself a valid scale (an invalid
override is ignored, as in eval-harness). Labels are looked up exactly: case-sensitive, no
trimming.
"""

from __future__ import annotations

from typing import Literal

import polars as pl

from evalframe.core import schema as C
from evalframe.core._errors import MetricError
from evalframe.metrics._batched import batched, sample_error, type_error
from evalframe.metrics._registry import metric
from evalframe.metrics._spec import Scored

__all__ = ["ordinal_distance"]

BAD_SCALE = "Ordinal scale must be a non-empty list of unique strings."
_LABELS = pl.List(pl.String)
# serde's compact JSON of an array of strings, as json_path_match returns it
_STRING_ARRAY = r'^\[(?:"(?:[^"\\]|\\.)*")(?:,"(?:[^"\\]|\\.)*")*\]$'


def _override() -> pl.Expr:
    """``metadata.ordinal_scale`` where it is a valid scale, else null."""
    raw = C.metadata_field("ordinal_scale")
    # "[0]" exists only for an array: it tells ["a"] from the string '["a"]'
    is_array = C.metadata_field("ordinal_scale[0]").is_not_null() & raw.str.contains(_STRING_ARRAY)
    labels = pl.when(is_array).then(raw).otherwise(pl.lit("[]")).str.json_decode(_LABELS)
    valid = (
        is_array
        & (labels.list.len() > 0)
        & (labels.list.n_unique() == labels.list.len())
        & ~labels.list.eval(pl.element().str.len_bytes() == 0).list.any()
    )
    return pl.when(valid).then(labels)


def _positions(frame: pl.DataFrame) -> pl.DataFrame:
    """0-based positions of ``expected`` and ``actual`` in each row's ``scale`` (or null)."""
    rows = frame.with_row_index("row")
    exploded = rows.select(
        "row",
        "expected",
        "actual",
        label="scale",
        position=pl.int_ranges(pl.col("scale").list.len()),
    ).explode("label", "position", empty_as_null=False, keep_nulls=False)

    def where(side: str) -> pl.DataFrame:
        return (
            exploded.filter(pl.col("label") == pl.col(side))
            .group_by("row")
            .agg(pl.col("position").first().alias(f"{side}_index"))
        )

    return (
        rows.select("row")
        .join(where("expected"), on="row", how="left", maintain_order="left")
        .join(where("actual"), on="row", how="left", maintain_order="left")
        .select(pl.col("expected_index", "actual_index").cast(pl.Int64))
    )


@metric("ordinal-distance", family="ordinal")
def ordinal_distance(*, scale: tuple[str, ...], mode: Literal["step", "linear"] = "step") -> Scored:
    """Credit by how many steps the output label is from the expected one on an ordered scale.

    With i and j the positions of the expected and actual labels and d = |i - j|, ``mode="step"``
    (eval-harness's) scores 1.0 for d = 0, 0.5 for d = 1 and 0.0 for d ≥ 2; ``mode="linear"``
    scores 1 - d / (n - 1) on a scale of n labels (1.0 on a one-label scale). An output label
    outside the scale scores 0.0. Codomain [0, 1]; null (an error) when ``expected_output`` is
    not a string or not on the scale.

    Args:
        scale: the labels in order, e.g. ``[low,medium,high,urgent]``; required, no default.
        mode: ``"step"`` (reference) or ``"linear"`` decay.

    Raises:
        MetricError: the scale is empty, holds an empty label, or repeats a label.

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([
        ...     {"id": "t1", "input": {"ticket": "Site down"}, "expected_output": "urgent"},
        ...     {"id": "t2", "input": {"ticket": "Typo"}, "expected_output": "low"}], name="demo")
        >>> run = ef.evaluate(ds, outputs={"t1": "high", "t2": "high"},
        ...                   metrics=["ordinal-distance(scale=[low,medium,high,urgent])"])
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        t1 0.5 {"expected":"urgent","actual":"high","expected_index":3,"actual_index":2,"distance":1}
        t2 0.0 {"expected":"low","actual":"high","expected_index":0,"actual_index":2,"distance":2}
    """  # noqa: E501
    if not scale or any(not isinstance(s, str) or not s for s in scale):
        raise MetricError(BAD_SCALE)
    if len(set(scale)) != len(scale):
        raise MetricError(BAD_SCALE)
    default = pl.lit(pl.Series([list(scale)], dtype=_LABELS)).first()
    active = pl.coalesce(_override(), default)
    expected = C.expected_text()
    actual = pl.col(C.ACTUAL_OUTPUT)
    kernel = pl.col("ordinal-distance__positions")
    i = kernel.struct.field("expected_index")
    j = kernel.struct.field("actual_index")
    distance = (i - j).abs()
    if mode == "step":
        credit = pl.when(distance == 0).then(1.0).when(distance == 1).then(0.5).otherwise(0.0)
    else:
        steps = (active.list.len() - 1).cast(pl.Float64)
        credit = pl.when(steps > 0).then(1.0 - distance / steps).otherwise(1.0)
    bad_type, type_message = type_error("ordinal-distance")
    off_scale = i.is_null()
    error = (
        pl.when(bad_type)
        .then(type_message)
        .when(off_scale)
        .then(
            sample_error(
                "expected_output '{}' is not in the ordinal scale [{}].",
                expected,
                active.list.join(", "),
            )
        )
    )
    return Scored(
        score=pl.when(error.is_null()).then(pl.when(j.is_null()).then(0.0).otherwise(credit)),
        error=error,
        details=pl.when(error.is_null()).then(
            pl.struct(
                expected=expected,
                actual=actual,
                expected_index=i,
                actual_index=j,
                distance=distance,
            )
        ),
        prepare={
            "ordinal-distance__positions": batched(
                _positions,
                {"scale": active, "expected": expected, "actual": actual},
                {"expected_index": pl.Int64, "actual_index": pl.Int64},
            )
        },
    )
