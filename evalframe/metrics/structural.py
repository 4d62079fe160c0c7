"""Structural metrics: json-valid, json-schema and json-diff.

JSON is parsed by the strict compiled scanner of :mod:`evalframe.metrics._json_scan`
(:func:`json_leaves`, RFC 8259, any depth, exact numbers), one column at a time.

json-schema validates with the ``jsonschema`` package (draft 3 to 2020-12, chosen by the
schema's ``$schema``), once per distinct (schema, output) pair.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import numpy as np
import polars as pl

from evalframe.core import schema as C
from evalframe.metrics._batched import batched, sample_error
from evalframe.metrics._json_scan import json_leaves
from evalframe.metrics._registry import metric
from evalframe.metrics._spec import Range, Scored

__all__ = ["json_diff", "json_leaves", "json_schema", "json_valid"]

_ACTUAL = pl.col(C.ACTUAL_OUTPUT)
_EXPECTED = pl.col(C.EXPECTED_OUTPUT)


def _parse_error(status: pl.DataFrame) -> pl.Expr:
    """``<reason> at character <offset>`` per text of a :func:`json_leaves` status; null
    where the text is valid or null (its ``error`` is null there)."""
    return pl.format(
        "{} at character {}", status.get_column("error"), status.get_column("position")
    )


# --- json-valid ---------------------------------------------------------------------------------


def _valid_kernel(frame: pl.DataFrame) -> pl.DataFrame:
    status, _ = json_leaves(frame.get_column("text"), leaves=False)
    return status.select("valid", "error", "position")


@metric("json-valid", family="structural")
def json_valid() -> Scored:
    """1.0 when the output is one valid JSON text (RFC 8259), else 0.0.

    Strict: ``NaN``, ``Infinity``, comments, trailing commas, single quotes and raw control
    characters in strings are invalid; so is an empty output or anything after the value.
    Any nesting depth and any number size are valid. The details give the reason and the
    character offset of the first error.

    Returns:
        Float64 in {0, 1}; never null for a present output.
    """
    k = pl.col("json-valid__kernel")
    valid = k.struct.field("valid")
    return Scored(
        score=valid.cast(pl.Float64),
        details=pl.struct(
            valid=valid, reason=k.struct.field("error"), position=k.struct.field("position")
        ),
        prepare={
            "json-valid__kernel": batched(
                _valid_kernel,
                {"text": _ACTUAL},
                {"valid": pl.Boolean, "error": pl.String, "position": pl.Int64},
            )
        },
    )


# --- json-diff ----------------------------------------------------------------------------------


def _diff_kernel(limit: int) -> Any:
    def kernel(frame: pl.DataFrame) -> pl.DataFrame:
        e_status, e_leaves = json_leaves(frame.get_column("expected"))
        a_status, a_leaves = json_leaves(frame.get_column("actual"))
        # A repeated key keeps its last value, as Python's json and most parsers do.
        e_leaves = e_leaves.unique(["row", "path"], keep="last", maintain_order=True)
        a_leaves = a_leaves.unique(["row", "path"], keep="last", maintain_order=True)
        joined = e_leaves.join(
            a_leaves, on=["row", "path"], how="left", suffix="_actual", maintain_order="left"
        ).with_columns(
            match=(pl.col("kind") == pl.col("kind_actual"))
            & (pl.col("value") == pl.col("value_actual")),
            missing=pl.col("kind_actual").is_null(),
        )
        per_row = joined.group_by("row").agg(
            pl.len().alias("total"),
            pl.col("match").fill_null(False).sum().alias("matched"),
            pl.col("path").filter(pl.col("missing")).head(limit).alias("missing"),
            pl.col("path")
            .filter(~pl.col("missing") & ~pl.col("match"))
            .head(limit)
            .alias("different"),
        )
        base = pl.DataFrame({"row": np.arange(frame.height, dtype=np.int64)})
        return (
            base.join(per_row, on="row", how="left", maintain_order="left")
            .with_columns(
                expected_error=_parse_error(e_status),
                actual_error=_parse_error(a_status),
            )
            .drop("row")
        )

    return kernel


@metric("json-diff", family="structural")
def json_diff(*, max_paths: Annotated[int, Range(ge=0)] = 10) -> Scored:
    """Share of the expected JSON's leaf paths whose values the output's JSON matches.

    Both sides are parsed as JSON (a string ``expected_output`` is read as JSON text). A
    leaf is a scalar or an empty object or array, addressed by its path (``$['a'][0]``).
    With E the expected leaves, the score is ``|{l in E : output has l's path with an equal
    value}| / |E|``. Values are equal when they have the same kind and value: numbers by
    exact decimal value (``1 == 1.0``), strings after unescaping. Keys the output adds are
    ignored; array elements match by index. An output that is not valid JSON scores 0.0.
    The details list up to ``max_paths`` missing and differing paths.

    Returns:
        Float64 in [0, 1]; null (an error) when ``expected_output`` is not valid JSON.
    """
    k = pl.col("json-diff__kernel")
    expected_error = k.struct.field("expected_error")
    actual_error = k.struct.field("actual_error")
    total = k.struct.field("total")
    matched = k.struct.field("matched")
    score = pl.when(actual_error.is_not_null()).then(0.0).otherwise(matched / total)
    return Scored(
        score=pl.when(expected_error.is_null()).then(score),
        error=pl.when(expected_error.is_not_null()).then(
            sample_error(
                "expected_output is not valid JSON for json-diff metric: {}.", expected_error
            )
        ),
        details=pl.struct(
            matched=pl.when(actual_error.is_null()).then(matched).otherwise(0),
            total=total,
            missing=k.struct.field("missing"),
            different=k.struct.field("different"),
            actual_error=actual_error,
        ),
        prepare={
            "json-diff__kernel": batched(
                _diff_kernel(max_paths),
                {"expected": _EXPECTED, "actual": _ACTUAL},
                {
                    "total": pl.Int64,
                    "matched": pl.Int64,
                    "missing": pl.List(pl.String),
                    "different": pl.List(pl.String),
                    "expected_error": pl.String,
                    "actual_error": pl.String,
                },
            )
        },
    )


# --- json-schema --------------------------------------------------------------------------------


def _verdict(
    validator: Any, actual_text: str, best_match: Any
) -> tuple[bool | None, str | None, str | None, str | None]:
    """``(valid, path, reason, problem)`` of one output under one schema's validator.

    ``validator`` is the schema's problem instead, when the schema itself is unusable.
    """
    if isinstance(validator, str):
        return None, None, None, validator
    try:
        instance = json.loads(actual_text)
    except (ValueError, RecursionError) as exc:
        return None, None, None, f"output cannot be validated: {exc}"
    try:
        error = best_match(validator.iter_errors(instance))
    except RecursionError:
        return None, None, None, "output is nested too deeply to validate"
    if error is None:
        return True, None, None, None
    return False, error.json_path, error.message, None


def _schema_kernel(check_formats: bool) -> Any:
    def kernel(frame: pl.DataFrame) -> pl.DataFrame:
        # jsonschema ships no type information (types-jsonschema is a separate stub package).
        import jsonschema  # type: ignore[import-untyped]
        from jsonschema.exceptions import best_match  # type: ignore[import-untyped]

        status, _ = json_leaves(frame.get_column("actual"), leaves=False)
        work = frame.with_columns(
            ok=status.get_column("valid"),
            parse_error=_parse_error(status),
        )
        todo = (
            work.filter(pl.col("schema").is_not_null() & pl.col("ok"))
            .select("schema", "actual")
            .unique()
        )
        validators: dict[str, Any] = {}
        verdicts: list[tuple[str, str, bool | None, str | None, str | None, str | None]] = []
        # jsonschema is Python: one call per distinct (schema, output) pair, one validator
        # per distinct schema. Nothing here runs per row.
        for schema_text, actual_text in todo.iter_rows():
            if schema_text not in validators:
                validators[schema_text] = _validator(schema_text, jsonschema, check_formats)
            verdict = _verdict(validators[schema_text], actual_text, best_match)
            verdicts.append((schema_text, actual_text, *verdict))
        table = pl.DataFrame(
            verdicts,
            schema={
                "schema": pl.String,
                "actual": pl.String,
                "valid": pl.Boolean,
                "path": pl.String,
                "reason": pl.String,
                "problem": pl.String,
            },
            orient="row",
        )
        out = work.join(
            table, on=["schema", "actual"], how="left", maintain_order="left", nulls_equal=False
        )
        return out.select(
            pl.when(pl.col("ok")).then(pl.col("valid")).otherwise(False).alias("valid"),
            pl.when(pl.col("ok")).then(pl.col("path")).alias("path"),
            pl.when(pl.col("ok"))
            .then(pl.col("reason"))
            .otherwise(pl.format("output is not valid JSON: {}", pl.col("parse_error")))
            .alias("reason"),
            "problem",
        )

    return kernel


def _validator(schema_text: str, jsonschema: Any, check_formats: bool) -> Any:
    """A validator for the schema, or the reason there is none (a string)."""
    try:
        schema = json.loads(schema_text)
    except (ValueError, RecursionError) as exc:
        return f"the JSON Schema is not valid JSON: {exc}"
    if not isinstance(schema, dict | bool):
        return f"a JSON Schema must be an object or a boolean; got {type(schema).__name__}"
    cls = jsonschema.validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        return f"invalid JSON Schema at {exc.json_path}: {exc.message}"
    return cls(schema, format_checker=cls.FORMAT_CHECKER if check_formats else None)


def _schema_source() -> pl.Expr:
    """The schema text: ``metadata.json_schema``, else a map/bool ``expected_output``."""
    from_meta = pl.col(C.METADATA).str.json_path_match("$.json_schema")
    from_expected = pl.when(pl.col(C.EXPECTED_TYPE).is_in(["map", "bool"])).then(_EXPECTED)
    return pl.coalesce(from_meta, from_expected)


@metric("json-schema", family="structural")
def json_schema(*, check_formats: bool = False) -> Scored:
    """1.0 when the output is JSON that validates against the sample's JSON Schema, else 0.0.

    The schema is ``metadata.json_schema`` when present, else ``expected_output`` when it
    is a map (or a boolean schema). Validation uses the ``jsonschema`` package, with the
    draft named by the schema's ``$schema`` (2020-12 when absent); ``check_formats=True``
    also asserts ``format`` keywords. An output that is not valid JSON scores 0.0. The
    details give the most relevant error's JSONPath (``$.items[2]``) and reason.

    Returns:
        Float64 in {0, 1}; null (an error) when the sample has no schema, or the schema
        itself is invalid.
    """
    k = pl.col("json-schema__kernel")
    problem = k.struct.field("problem")
    schema = _schema_source()
    missing = schema.is_null()
    return Scored(
        score=pl.when(missing | problem.is_not_null())
        .then(None)
        .otherwise(k.struct.field("valid").cast(pl.Float64)),
        error=pl.when(missing)
        .then(
            sample_error(
                "has no JSON Schema for json-schema metric: put it in metadata.json_schema or "
                "give a map as expected_output."
            )
        )
        .when(problem.is_not_null())
        .then(sample_error("json-schema metric: {}.", problem)),
        details=pl.struct(
            valid=k.struct.field("valid"),
            path=k.struct.field("path"),
            reason=k.struct.field("reason"),
        ),
        prepare={
            "json-schema__kernel": batched(
                _schema_kernel(check_formats),
                {"schema": schema, "actual": _ACTUAL},
                {"valid": pl.Boolean, "path": pl.String, "reason": pl.String, "problem": pl.String},
            )
        },
    )
