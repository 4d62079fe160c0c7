"""Structural metrics: json-valid, json-schema, json-diff and structural-similarity.

JSON is parsed by the strict compiled scanner of :mod:`evalframe.metrics._json_scan`
(:func:`json_leaves`, strict JSON, any depth, exact numbers), one column at a time.

json-schema validates with the ``jsonschema`` package (draft 3 to 2020-12, chosen by the
schema's ``$schema``), once per distinct (schema, output) pair.

structural-similarity compares two documents leaf by leaf, arrays in any order, with the
leaves counted and matched by group-bys over the whole column; YAML that is not also JSON is
read with evalframe's YAML 1.2 reader once per distinct text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, Any, Final, Literal

import numpy as np
import polars as pl

from evalframe.core import schema as C
from evalframe.core._errors import MetricError
from evalframe.metrics._batched import batched, sample_error
from evalframe.metrics._json_scan import json_leaves
from evalframe.metrics._registry import get, metric
from evalframe.metrics._spec import Derived, Metric, Need, Range, Scored

__all__ = [
    "composite",
    "json_diff",
    "json_leaves",
    "json_schema",
    "json_valid",
    "structural_similarity",
]

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
    """1.0 when the output is one valid JSON text, else 0.0.

    Strict: ``NaN``, ``Infinity``, comments, trailing commas, single quotes and raw control
    characters in strings are invalid; so is an empty output or anything after the value.
    Any nesting depth and any number size are valid. The details give the reason and the
    character offset of the first error.

    Returns:
        Float64 in {0, 1}; never null for a present output.

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([
        ...     {"id": "q1", "input": {"q": "As JSON"}, "expected_output": ""},
        ...     {"id": "q2", "input": {"q": "As JSON"}, "expected_output": ""}], name="demo")
        >>> run = ef.evaluate(ds, outputs={"q1": '{"a": [1, 2]}', "q2": "{'a': 1}"}, metrics=["json-valid"])
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        q1 1.0 {"valid":true,"reason":null,"position":null}
        q2 0.0 {"valid":false,"reason":"unexpected character","position":1}
    """  # noqa: E501
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

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([
        ...     {"id": "q1", "input": {"q": "Extract"}, "expected_output": {"name": "Ada", "tags": [1, 2]}}],
        ...     name="demo")
        >>> run = ef.evaluate(ds, outputs={"q1": '{"name": "Ada", "tags": [1, 3], "extra": true}'},
        ...                   metrics=["json-diff"])
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        q1 0.6666666666666666 {"matched":2,"total":3,"missing":[],"different":["$['tags'][1]"],"actual_error":null}
    """  # noqa: E501
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

    Examples:
        >>> import evalframe as ef
        >>> schema = {"type": "object", "required": ["age"], "properties": {"age": {"type": "integer"}}}
        >>> ds = ef.Dataset.from_records([
        ...     {"id": "q1", "input": {"q": "Age?"}, "expected_output": "", "metadata": {"json_schema": schema}},
        ...     {"id": "q2", "input": {"q": "Age?"}, "expected_output": "", "metadata": {"json_schema": schema}}],
        ...     name="demo")
        >>> run = ef.evaluate(ds, outputs={"q1": '{"age": 41}', "q2": '{"age": "41"}'}, metrics=["json-schema"])
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        q1 1.0 {"valid":true,"path":null,"reason":null}
        q2 0.0 {"valid":false,"path":"$.age","reason":"'41' is not of type 'integer'"}
    """  # noqa: E501
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


# --- structural-similarity ---------------------------------------------------------------------

_SEGMENT: Final = r"\['(?:[^'\\]|\\.)*'\]|\[\d+\]"
"""One segment of a leaf path: a key (``['k']``, with ``\\`` and ``'`` escaped) or an index."""


def _key_segment(name: str) -> str:
    return "['" + name.replace("\\", "\\\\").replace("'", "\\'") + "']"


def _yaml_as_json(text: str) -> tuple[str | None, str | None]:
    """``(json text, None)`` for a YAML document, or ``(None, reason)``."""
    import yaml

    from evalframe.core._yaml import YamlLimitError, parse_yaml

    try:
        value = parse_yaml(text)
    except (yaml.YAMLError, YamlLimitError) as exc:
        first = str(exc).strip().splitlines()
        return None, f"not valid YAML: {first[0] if first else type(exc).__name__}"
    try:
        return json.dumps(value, allow_nan=False, ensure_ascii=False), None
    except (TypeError, ValueError) as exc:
        return None, f"holds a value JSON cannot: {exc}"


def _documents(texts: pl.Series, fmt: str) -> tuple[pl.Series, pl.Series]:
    """Each text as JSON text (null when unusable) and why it is unusable (or null).

    JSON texts are kept as they are (JSON is YAML too); with ``fmt="yaml"`` the others are
    read as YAML, once per distinct text. A document whose root is a string is not a
    structure.
    """
    status, _ = json_leaves(texts, leaves=False)
    reason = pl.select(_parse_error(status)).to_series()
    if fmt == "yaml":
        retry = texts.filter(status.get_column("valid").fill_null(True).not_())
        distinct = retry.unique(maintain_order=True).to_list()
        converted = [_yaml_as_json(t) for t in distinct]  # distinct non-JSON texts, not rows
        table = pl.DataFrame(
            {
                "text": pl.Series(distinct, dtype=pl.String),
                "json": pl.Series([c[0] for c in converted], dtype=pl.String),
                "why": pl.Series([c[1] for c in converted], dtype=pl.String),
            }
        )
        looked = texts.to_frame("text").join(table, on="text", how="left", maintain_order="left")
        ok = status.get_column("valid").fill_null(False)
        texts = pl.select(
            pl.when(pl.lit(ok)).then(pl.lit(texts)).otherwise(looked.get_column("json"))
        ).to_series()
        reason = pl.select(
            pl.when(pl.lit(ok)).then(None).otherwise(looked.get_column("why"))
        ).to_series()
        status, _ = json_leaves(texts, leaves=False)
    usable = status.get_column("valid").fill_null(False) & (status.get_column("root") != "string")
    word = "YAML" if fmt == "yaml" else "JSON"
    why = pl.select(
        pl.when(pl.lit(usable))
        .then(None)
        .when(pl.lit(texts).is_null() & pl.lit(reason).is_null())
        .then(pl.lit("missing"))
        .when(pl.lit(status.get_column("root")) == "string")
        .then(pl.lit(f"a {word} string, not a structure"))
        .when(pl.lit(reason).is_not_null())
        .then(pl.format("not valid {}: {}", pl.lit(word), pl.lit(reason)))
        .otherwise(pl.lit(f"not valid {word}"))
    ).to_series()
    kept = pl.select(pl.when(pl.lit(usable)).then(pl.lit(texts))).to_series()
    return kept, why


def _star_leaves(texts: pl.Series, ignored: list[str]) -> pl.DataFrame:
    """The leaves of each document (``row``, ``spath``, ``kind``, ``value``), array indices
    written ``[*]`` (so arrays compare in any order), leaves under ignored keys left out."""
    _, leaves = json_leaves(texts)
    segments = pl.col("path").str.extract_all(_SEGMENT)
    starred = segments.list.eval(
        pl.when(pl.element().str.starts_with("['")).then(pl.element()).otherwise(pl.lit("[*]"))
    )
    out = leaves.with_columns(spath=starred.list.join(""))
    if ignored:
        keys = [_key_segment(k) for k in ignored]
        out = out.filter(~segments.list.eval(pl.element().is_in(keys)).list.any())
    return out.select("row", "spath", "kind", "value")


def _similarity_kernel(
    fmt: str, level: str, ignored: list[str], extra_keys: str, penalty: float
) -> Any:
    structural = level != "raw"

    def kernel(frame: pl.DataFrame) -> pl.DataFrame:
        e_text, e_why = _documents(frame.get_column("expected"), fmt)
        a_text, a_why = _documents(frame.get_column("actual"), fmt)
        skip = ignored if structural else []
        e_leaves = _star_leaves(e_text, skip)
        a_leaves = _star_leaves(a_text, skip)
        extra = pl.lit(False)
        if structural:
            known = e_leaves.select("row", "spath").unique().with_columns(known=pl.lit(True))
            a_leaves = a_leaves.join(known, on=["row", "spath"], how="left")
            extra = pl.col("known").is_null()
        a_counted = a_leaves.with_columns(extra=extra)
        extras = a_counted.group_by("row").agg(extra=pl.col("extra").sum().cast(pl.Int64))
        kept = a_counted.filter(~pl.col("extra"))
        key = ["row", "spath", "kind", "value"]
        matched = (
            e_leaves.group_by(key)
            .len("e")
            .join(kept.group_by(key).len("a"), on=key, how="inner")
            .group_by("row")
            .agg(matched=pl.min_horizontal("e", "a").sum().cast(pl.Int64))
        )
        sizes = [
            e_leaves.group_by("row").len("expected_leaves"),
            kept.group_by("row").len("actual_leaves"),
            matched,
            extras,
        ]
        rows = pl.DataFrame({"row": np.arange(frame.height, dtype=np.int64)})
        for table in sizes:
            rows = rows.join(table, on="row", how="left", maintain_order="left")
        counts = rows.with_columns(
            pl.col("expected_leaves", "actual_leaves", "matched", "extra")
            .fill_null(0)
            .cast(pl.Int64)
        )
        n_e, n_a, m = pl.col("expected_leaves"), pl.col("actual_leaves"), pl.col("matched")
        dice = pl.when(n_e + n_a == 0).then(1.0).otherwise(2.0 * m / (n_e + n_a))
        if extra_keys == "penalize" and structural:
            dice = pl.when(pl.col("extra") > 0).then(dice * penalty).otherwise(dice)
        out = counts.select(
            score=dice,
            matched=m,
            expected_leaves=n_e,
            actual_leaves=n_a,
            extra_leaves=pl.col("extra"),
        ).with_columns(expected_error=e_why, actual_error=a_why)
        if level == "schema_validated":
            checked = _schema_kernel(False)(
                pl.DataFrame({"schema": frame.get_column("schema"), "actual": a_text})
            )
            out = out.with_columns(
                schema_valid=checked.get_column("valid"),
                schema_reason=checked.get_column("reason"),
                schema_problem=checked.get_column("problem"),
            )
        else:
            out = out.with_columns(
                schema_valid=pl.lit(None, pl.Boolean),
                schema_reason=pl.lit(None, pl.String),
                schema_problem=pl.lit(None, pl.String),
            )
        return out

    return kernel


_SIMILARITY_OUTPUT: Final = {
    "score": pl.Float64,
    "matched": pl.Int64,
    "expected_leaves": pl.Int64,
    "actual_leaves": pl.Int64,
    "extra_leaves": pl.Int64,
    "expected_error": pl.String,
    "actual_error": pl.String,
    "schema_valid": pl.Boolean,
    "schema_reason": pl.String,
    "schema_problem": pl.String,
}


@metric("structural-similarity", family="structural", threshold=0.85)
def structural_similarity(
    *,
    format: Literal["yaml", "json"] = "yaml",
    level: Literal["raw", "structural", "schema_validated"] = "raw",
    ignore_keys: tuple[str, ...] = (),
    extra_keys: Literal["ignore", "penalize"] = "ignore",
    extra_keys_penalty: Annotated[float, Range(ge=0, le=1)] = 0.8,
) -> Scored:
    r"""How much of two YAML/JSON documents' structure and values agree, at three levels.

    Both sides are read as ``format`` (``yaml``, the default, also reads JSON) and
    flattened to leaves: a scalar, or an empty map or list, with its path and value
    (numbers by exact value). Array positions are ignored (``$.items[*].id``), so lists
    compare in any order. With m the leaves the two documents share (as multisets), the
    score is ``2m / (|expected leaves| + |output leaves|)``: 1.0 for equal documents.

    * ``raw``: every leaf of both documents counts.
    * ``structural``: keys named in ``ignore_keys`` are dropped at any depth, and output
      leaves at paths the expected document lacks (extra keys) are left out; with
      ``extra_keys=penalize`` the score is then multiplied by ``extra_keys_penalty`` when
      the output had any.
    * ``schema_validated``: 0.0 unless the output validates against the sample's JSON
      Schema (``metadata.json_schema``), else as ``structural``.

    An output that is not a document (unparsable, or a bare string) scores 0.0 with the
    reason in the details; an expected output that is not one, or a missing schema at
    ``schema_validated``, is the row's error. Details: ``matched``, ``expected_leaves``,
    ``actual_leaves``, ``extra_leaves`` and the reasons.

    Examples:
        >>> import evalframe as ef
        >>> expected = "name: web\nports: [80, 443]\nlabels: {tier: front}"
        >>> ds = ef.Dataset.from_records([
        ...     {"id": "a", "input": {"q": "?"}, "expected_output": expected},
        ...     {"id": "b", "input": {"q": "?"}, "expected_output": expected}], name="demo")
        >>> outputs = {"a": '{"ports": [443, 80], "name": "web", "labels": {"tier": "front"}}',
        ...            "b": "name: web\nports: [80]\nlabels: {tier: back, team: x}"}
        >>> run = ef.evaluate(ds, outputs=outputs, metrics=["structural-similarity"])
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        a 1.0 {"matched":4,"expected_leaves":4,"actual_leaves":4,"extra_leaves":0,"actual_error":null,"schema_valid":null,"schema_reason":null}
        b 0.5 {"matched":2,"expected_leaves":4,"actual_leaves":4,"extra_leaves":0,"actual_error":null,"schema_valid":null,"schema_reason":null}
    """  # noqa: E501
    if any(not k for k in ignore_keys):
        raise MetricError(
            "Metric 'structural-similarity' parameter 'ignore_keys' must hold key names; "
            "got an empty one."
        )
    k = pl.col(f"structural-similarity__kernel({format},{level})")
    field = k.struct.field
    expected_error = field("expected_error")
    problem = field("schema_problem")
    validated = level == "schema_validated"
    schema = C.metadata_field("json_schema") if validated else pl.lit(None, pl.String)
    no_schema = schema.is_null() if validated else pl.lit(False)
    error = (
        pl.when(expected_error.is_not_null())
        .then(
            sample_error(
                "expected_output is not a document for structural-similarity metric: {}.",
                expected_error,
            )
        )
        .when(no_schema)
        .then(
            sample_error(
                "has no JSON Schema for structural-similarity(level=schema_validated): put it "
                "in metadata.json_schema."
            )
        )
        .when(problem.is_not_null())
        .then(sample_error("structural-similarity metric: {}.", problem))
    )
    failed = field("actual_error").is_not_null() | (field("schema_valid") == False)  # noqa: E712
    score = pl.when(failed.fill_null(False)).then(0.0).otherwise(field("score"))
    return Scored(
        score=pl.when(error.is_null()).then(score.clip(0.0, 1.0).round(6)),
        error=error,
        details=pl.when(error.is_null()).then(
            pl.struct(
                *(
                    field(f).alias(f)
                    for f in ("matched", "expected_leaves", "actual_leaves", "extra_leaves")
                ),
                field("actual_error").alias("actual_error"),
                field("schema_valid").alias("schema_valid"),
                field("schema_reason").alias("schema_reason"),
            )
        ),
        prepare={
            f"structural-similarity__kernel({format},{level})": batched(
                _similarity_kernel(
                    format, level, list(ignore_keys), extra_keys, extra_keys_penalty
                ),
                {"expected": _EXPECTED, "actual": _ACTUAL, "schema": schema},
                _SIMILARITY_OUTPUT,
            )
        },
    )


# --- composite ---------------------------------------------------------------------------------


def _parts(metrics: Sequence[str]) -> list[Metric]:
    """The composite's metrics, resolved (a composite inside a composite is refused)."""
    if not metrics:
        raise MetricError("Metric 'composite' parameter 'metrics' must name at least one metric.")
    parts = [get(spec) for spec in metrics]
    if any(p.name == "composite" for p in parts):
        raise MetricError("Metric 'composite' cannot hold another composite.")
    ids = [p.id for p in parts]
    if len(set(ids)) != len(ids):
        raise MetricError(f"Metric 'composite' lists a metric twice: {', '.join(ids)}.")
    return parts


def _composite_derived(*, metrics: Sequence[str], **_: object) -> list[Derived]:
    found: dict[str, Derived] = {}
    for part in _parts(metrics):
        for d in part.derived():
            found.setdefault(d.column, d)
    return list(found.values())


def _composite_needs(*, metrics: Sequence[str], **_: object) -> list[Need]:
    return [n for part in _parts(metrics) for n in part.needs()]


@metric(
    "composite",
    family="structural",
    threshold=0.85,
    derived=_composite_derived,
    needs=_composite_needs,
)
def composite(
    *,
    metrics: tuple[str, ...],
    weights: Annotated[tuple[float, ...], Range(ge=0)] | None = None,
    on_error: Literal["error", "zero", "skip"] = "error",
) -> Scored:
    """A weighted mean of other metrics' scores: several checks as one score.

    harness-evals' composite weighs sub-checks; here each check is a metric spec in
    ``metrics`` (``composite(metrics=[json-schema, json-diff, "numeric-diff(abs_tol=1)"],
    weights=[1, 2, 1])``), all computed in the same pass as on their own. The score is
    ``sum(w_i * s_i) / sum(w_i)`` over the parts (weights default to 1 each). A part that
    cannot score a row makes the row an error naming it (``on_error=error``), counts 0.0
    with its weight (``zero``, harness-evals' rule), or is left out (``skip``; an error when
    every part is). Details: each part's id, weight and score.

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([
        ...     {"id": "a", "input": {"q": "?"}, "expected_output": "Paris"},
        ...     {"id": "b", "input": {"q": "?"}, "expected_output": "Paris"}], name="demo")
        >>> run = ef.evaluate(ds, outputs={"a": "Paris", "b": "It is Paris."},
        ...                   metrics=["composite(metrics=[exact-match, contains], weights=[1, 3])"])
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        a 1.0 {"parts":[{"metric":"exact-match","weight":1.0,"score":1.0},{"metric":"contains","weight":3.0,"score":1.0}]}
        b 0.75 {"parts":[{"metric":"exact-match","weight":1.0,"score":0.0},{"metric":"contains","weight":3.0,"score":1.0}]}
    """  # noqa: E501
    parts = _parts(metrics)
    w = list(weights) if weights is not None else [1.0] * len(parts)
    if len(w) != len(parts):
        raise MetricError(
            f"Metric 'composite' has {len(parts)} metrics and {len(w)} weights; give one "
            "weight per metric."
        )
    if sum(w) <= 0:
        raise MetricError("Metric 'composite' parameter 'weights' must not all be 0.")
    prepare: dict[str, pl.Expr] = {}
    scores, reasons = [], []
    for part in parts:  # the composite's parts, not rows
        scored = part.expressions()
        clash = set(prepare) & set(scored.prepare)
        if clash:
            raise MetricError(
                f"Metric 'composite' cannot combine metrics that share the intermediate "
                f"column {sorted(clash)[0]!r} ({part.id}); score them separately."
            )
        prepare.update(scored.prepare)
        s = scored.score.cast(pl.Float64)
        bad = s.is_null() | (scored.error.is_not_null() if scored.error is not None else False)
        scores.append(pl.when(~bad).then(s))
        why = scored.error if scored.error is not None else pl.lit("not scored", pl.String)
        reasons.append(pl.when(bad).then(pl.format("{}: {}", pl.lit(part.id), why)))
    if on_error == "skip":
        used = [
            pl.when(s.is_not_null()).then(pl.lit(wi)).otherwise(0.0)
            for s, wi in zip(scores, w, strict=True)
        ]
    else:
        used = [pl.lit(wi, pl.Float64) for wi in w]
    total = pl.sum_horizontal(*(s.fill_null(0.0) * wi for s, wi in zip(scores, w, strict=True)))
    weight = pl.sum_horizontal(*used)
    first_bad = pl.coalesce(reasons)
    error = (
        pl.when(first_bad.is_not_null()).then(sample_error("composite metric: {}", first_bad))
        if on_error == "error"
        else pl.when(weight == 0).then(
            sample_error("composite metric: no part scored the row; first: {}", first_bad)
        )
    )
    details = pl.concat_list(
        [
            pl.struct(metric=pl.lit(p.id), weight=pl.lit(wi, pl.Float64), score=s)
            for p, wi, s in zip(parts, w, scores, strict=True)
        ]
    )
    return Scored(
        score=pl.when(error.is_null()).then((total / weight).clip(0.0, 1.0)),
        error=error,
        details=pl.when(error.is_null()).then(pl.struct(parts=details)),
        prepare=prepare,
    )
