"""Retrieval inputs as typed columns: JSON strings or columns users already hold.

``parse_retrieval`` and ``parse_relevance`` turn whole columns of JSON into lists; the
``*_from_columns`` functions validate typed columns the same way. Well-formed JSON in the usual
shapes is handled by Polars string operations and decoders; anything else (errors, odd shapes) is
read once per distinct string by a PHP-compatible reader, so the messages match eval-harness.
Messages are the text after ``Sample '<id>' ``; the metrics add the prefix.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any, Final

import polars as pl

from evalframe.core._errors import MetricError
from evalframe.metrics._ranking import dedupe_lists, flat

__all__ = [
    "GAINS",
    "PHP_WHITESPACE",
    "RELEVANT_IDS",
    "RETRIEVED_IDS",
    "RETRIEVED_TEXTS",
    "parse_relevance",
    "parse_retrieval",
    "php_json",
    "php_list",
    "relevance_from_columns",
    "retrieval_from_columns",
]

RETRIEVED_IDS: Final = "actual_output__retrieved"
RETRIEVED_TEXTS: Final = "actual_output__retrieved_text"
RELEVANT_IDS: Final = "expected_output__relevant"
GAINS: Final = "expected_output__gains"

PHP_WHITESPACE: Final = " \t\n\r\0\x0b"

_IDS = pl.List(pl.String)
_RETRIEVAL_FIELDS = {"ids": _IDS, "texts": _IDS, "error": pl.String}
_RELEVANCE_FIELDS = {"ids": _IDS, "gains": pl.List(pl.Float64), "error": pl.String}

# --- messages (eval-harness's), each after "Sample '<id>' " ---------------------------------

ACTUAL_NOT_JSON = "retrieval actualOutput is not valid JSON: {}."
ACTUAL_SHAPE = "retrieval actualOutput must be a JSON array or an object with a 'retrieved' array."
BAD_ENTRY = "retrieval entry must be a non-empty id string or an object with a non-empty 'id'."
BAD_IDS = "retrieval expected_output ids must be non-empty strings."
EXPECTED_NOT_JSON = "retrieval expected_output is not valid JSON: {}."
BAD_GAIN = "retrieval expected_output gain map must be id => numeric gain."
NO_RELEVANT = "retrieval expected_output must list at least one relevant id."

# --- shapes Polars handles directly (the rest takes the exact, PHP-compatible reader) --------

_WS = r"[ \t\n\r]*"
# A compact array of strings without escapes or control characters; splitting it needs no
# JSON decoder.
_COMPACT_IDS = r'^\["[^"\\\x00-\x1f]*"(?:, ?"[^"\\\x00-\x1f]*")*\]$'
# A loose capture: if other keys follow, the capture is not one array and the row falls
# through to the exact reader.
_WRAPPED = rf"(?s)^\{{{_WS}\"retrieved\"{_WS}:{_WS}(\[.*\]){_WS}\}}$"
_NUM = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
# keys with at least one non-digit: an all-digit key may make PHP read the map as a list
_KEY = r'"[^"\\]*[^"\\0-9][^"\\]*"'
_MAP_NUM = rf"^\{{{_WS}{_KEY}{_WS}:{_WS}{_NUM}{_WS}(?:,{_WS}{_KEY}{_WS}:{_WS}{_NUM}{_WS})*\}}$"
_PHP_NUMERIC = re.compile(
    r"[ \t\n\r\v\f]*[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[ \t\n\r\v\f]*"
)


# --- the PHP-compatible reader (rows the strict grammars do not cover) ----------------------


class _RejectedError(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    raise _RejectedError(name)


def _has_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return any("\ud800" <= ch <= "\udfff" for ch in value)
    if isinstance(value, list):
        return any(_has_surrogate(v) for v in value)
    if isinstance(value, dict):
        return any(_has_surrogate(k) or _has_surrogate(v) for k, v in value.items())
    return False


def php_json(text: str) -> tuple[Any, str | None]:
    """Decode like PHP's ``json_decode($text, true)``: the value, or its error message."""
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        return None, "Maximum stack depth exceeded"
    except ValueError as exc:
        if "control character" in str(exc):
            return None, "Control character error, possibly incorrectly encoded"
        return None, "Syntax error"
    if _has_surrogate(value):
        return None, "Single unpaired UTF-16 surrogate in unicode escape"
    return value, None


def php_list(value: Any) -> list[Any] | None:
    """The items of a value PHP sees as a list: a JSON array, or an object keyed 0..n-1."""
    if isinstance(value, list):
        return value
    if isinstance(value, dict) and list(value) == [str(i) for i in range(len(value))]:
        return list(value.values())
    return None


def _read_retrieval(text: str) -> tuple[list[str] | None, list[str] | None, str | None]:
    value, problem = php_json(text.strip(PHP_WHITESPACE))
    if problem is not None:
        return None, None, ACTUAL_NOT_JSON.format(problem)
    entries = php_list(value)
    if entries is None and isinstance(value, dict) and "retrieved" in value:
        entries = php_list(value["retrieved"])
    if entries is None:
        return None, None, ACTUAL_SHAPE
    ids: list[str] = []
    texts: list[str] = []
    with_text = False
    seen: set[str] = set()
    for entry in entries:
        if isinstance(entry, str) and entry:
            key, body = entry, ""
        elif isinstance(entry, dict) and isinstance(entry.get("id"), str) and entry["id"]:
            key, with_text = entry["id"], True
            body = entry["text"] if isinstance(entry.get("text"), str) else ""
        else:
            return None, None, BAD_ENTRY
        if key not in seen:
            seen.add(key)
            ids.append(key)
            texts.append(body)
    return ids, texts if with_text else None, None


def _read_relevance(
    kind: str, text: str
) -> tuple[list[str] | None, list[float] | None, str | None]:
    if kind in ("string", "list", "map"):
        value, problem = php_json(text)
        if problem is not None:
            message = EXPECTED_NOT_JSON if kind == "string" else NO_RELEVANT
            return None, None, message.format(problem)
    else:
        return None, None, NO_RELEVANT
    items = php_list(value)
    if items is not None:
        if not items:
            return None, None, NO_RELEVANT
        if not all(isinstance(x, str) and x for x in items):
            return None, None, BAD_IDS
        unique = list(dict.fromkeys(items))
        return unique, [1.0] * len(unique), None
    if not isinstance(value, dict):
        return None, None, NO_RELEVANT
    ids, gains = [], []
    for key, gain in value.items():
        if not key:
            return None, None, BAD_GAIN
        if isinstance(gain, bool):
            return None, None, BAD_GAIN
        numeric_text = isinstance(gain, str) and _PHP_NUMERIC.fullmatch(gain)
        if isinstance(gain, int | float) or numeric_text:
            number = float(gain)
        else:
            return None, None, BAD_GAIN
        if not math.isfinite(number):
            return None, None, BAD_GAIN
        ids.append(key)
        gains.append(number)
    return ids, gains, None


# --- parsing whole columns ------------------------------------------------------------------


def _exact(
    rows: pl.DataFrame, reader: Callable[..., tuple[Any, Any, str | None]], fields: dict[str, Any]
) -> pl.DataFrame:
    """Run ``reader`` once per distinct key row of ``rows`` (columns: index, then its args)."""
    keys = rows.columns[1:]
    distinct = rows.select(keys).unique()
    names = list(fields)
    results = [reader(*args) for args in distinct.iter_rows()]
    parsed = pl.DataFrame(
        {name: [r[i] for r in results] for i, name in enumerate(names)},
        schema=fields,
    )
    return rows.join(distinct.hstack(parsed), on=keys, how="left").select("index", *names)


def _overlay(base: pl.DataFrame, patch: pl.DataFrame) -> pl.DataFrame:
    """``base`` with the rows listed in ``patch`` (by ``index``) replaced."""
    if patch.is_empty():
        return base
    names = [c for c in base.columns if c != "index"]
    joined = base.join(patch, on="index", how="left", suffix="__patch", maintain_order="left")
    patched = pl.col("index").is_in(patch.get_column("index").implode())
    return joined.select(
        "index",
        *[
            pl.when(patched).then(pl.col(f"{n}__patch")).otherwise(pl.col(n)).alias(n)
            for n in names
        ],
    )


def _split_ids(array: pl.Expr) -> pl.Expr:
    """A compact JSON array of escape-free strings (``["a","b"]`` or ``["a", "b"]``) as a list."""
    body = array.str.strip_prefix('["').str.strip_suffix('"]')
    return (
        pl.when(array == "[]")
        .then(pl.lit([], _IDS))
        .otherwise(body.str.replace_all('", "', '","', literal=True).str.split('","'))
    )


def _reject_empty_ids(rows: pl.DataFrame, aligned: str, message: str) -> pl.DataFrame:
    """Give rows whose ``ids`` hold a null or empty id the ``error`` ``message``."""
    values = flat(rows.get_column("ids"))
    if not (values.is_null().any() or (values.str.len_bytes() == 0).any()):
        return rows.with_columns(error=pl.lit(None, pl.String))
    bad = (
        pl.col("ids")
        .list.eval(pl.element().is_null() | (pl.element().str.len_bytes() == 0))
        .list.any()
    )
    return rows.with_columns(error=pl.when(bad).then(pl.lit(message))).with_columns(
        ids=pl.when(pl.col("error").is_null()).then("ids"),
        **{aligned: pl.when(pl.col("error").is_null()).then(aligned)},
    )


def _decode_objects(arrays: pl.Series) -> pl.Series | None:
    """Arrays of objects decoded as ``{id, text}`` structs, or None if any row will not decode."""
    try:
        return arrays.str.json_decode(pl.List(pl.Struct({"id": pl.String, "text": pl.String})))
    except pl.exceptions.PolarsError:
        return None


def parse_retrieval(actual: pl.Series) -> pl.DataFrame:
    """Parse retrieval JSON into ``ids`` (deduplicated), ``texts`` and ``error`` columns.

    ``texts`` is null when no entry is an object (a bare id list carries no text); ``error``
    is eval-harness's message after ``Sample '<id>' ``, null when the row parsed.

    Arrays of escape-free id strings are split directly; arrays of objects are decoded by
    Polars when every ``id`` and ``text`` key holds a string (Polars would turn ``7`` into
    ``"7"``, which eval-harness rejects); every other row takes the exact reader.
    """
    frame = pl.DataFrame({"text": actual.cast(pl.String).fill_null("")}).with_row_index()
    trimmed = pl.col("text").str.strip_chars(PHP_WHITESPACE)
    staged = frame.with_columns(array=pl.coalesce(trimmed.str.extract(_WRAPPED, 1), trimmed))
    array = pl.col("array")
    staged = staged.with_columns(is_ids=(array == "[]") | array.str.contains(_COMPACT_IDS))
    ws = "[ \t\n\r]*"
    object_rows = staged.filter(~pl.col("is_ids") & array.str.contains(f"^\\[{ws}\\{{"))
    object_rows = object_rows.with_columns(
        id_keys=array.str.count_matches(f'"id"{ws}:'),
        id_strings=array.str.count_matches(f'"id"{ws}:{ws}"'),
        text_keys=array.str.count_matches(f'"text"{ws}:'),
        text_strings=array.str.count_matches(f'"text"{ws}:{ws}"'),
    ).filter(
        (pl.col("id_keys") == pl.col("id_strings"))
        & (pl.col("text_keys") == pl.col("text_strings"))
        & ~array.str.contains(r"\\u[dD][89abAB]")
    )
    ids_rows = staged.filter("is_ids").select("index", ids=_split_ids(array))
    decoded = _decode_objects(object_rows.get_column("array")) if object_rows.height else None
    parts = [ids_rows.with_columns(texts=pl.lit(None, _IDS))]
    fast = ids_rows.get_column("index")
    if decoded is not None:
        objects = object_rows.select("index", "id_keys").with_columns(entries=decoded)
        objects = objects.filter(pl.col("entries").list.len() == pl.col("id_keys")).select(
            "index",
            ids=pl.col("entries").list.eval(pl.element().struct.field("id")),
            texts=pl.col("entries").list.eval(pl.element().struct.field("text").fill_null("")),
        )
        parts.append(objects)
        fast = pl.concat([fast, objects.get_column("index")])
    base = _reject_empty_ids(pl.concat(parts), "texts", BAD_ENTRY)
    slow = frame.filter(~pl.col("index").is_in(fast.implode()))
    if slow.height:
        base = pl.concat([base, _exact(slow, _read_retrieval, _RETRIEVAL_FIELDS)])
    out = base if base.get_column("index").is_sorted() else base.sort("index")
    ids, texts, hashes = dedupe_lists(
        out.get_column("ids"), out.get_column("texts"), with_hashes=True
    )
    return pl.DataFrame(
        {"ids": ids, "texts": texts, "hashes": hashes, "error": out.get_column("error")}
    )


def parse_relevance(expected: pl.Series, kind: pl.Series) -> pl.DataFrame:
    """Parse expected outputs into relevant ``ids``, their ``gains`` and an ``error`` column."""
    frame = pl.DataFrame(
        {
            "kind": kind.cast(pl.String).fill_null("null"),
            "text": expected.cast(pl.String).fill_null(""),
        }
    ).with_row_index()
    text = pl.col("text").fill_null("")
    kind_ = pl.col("kind")
    list_text = pl.when(kind_ == "string").then(text.str.strip_chars(" \t\n\r")).otherwise(text)
    is_list = kind_.is_in(["string", "list"]) & list_text.str.contains(_COMPACT_IDS)
    is_map = (kind_ == "map") & text.str.contains(_MAP_NUM)
    listed = _split_ids(pl.when(is_list).then(list_text).otherwise(pl.lit("[]")))
    mapped = (
        pl.when(is_map)
        .then(text)
        .otherwise(pl.lit("{}"))
        .str.json_decode(pl.Map(pl.String, pl.Float64))
    )
    fast = frame.select(
        "index",
        pl.when(is_list).then(listed).when(is_map).then(mapped.map.keys()).alias("ids"),
        pl.when(is_list)
        .then(listed.list.eval(pl.element().str.len_bytes().cast(pl.Float64) * 0.0 + 1.0))
        .when(is_map)
        .then(mapped.map.values())
        .alias("gains"),
        (is_list | is_map).alias("fast"),
    )
    empty_id = pl.col("ids").list.eval(pl.element().str.len_bytes() == 0).list.any()
    fast = fast.with_columns(error=pl.when(pl.col("fast") & empty_id).then(pl.lit(BAD_IDS)))
    fast = fast.with_columns(
        ids=pl.when(pl.col("error").is_null()).then("ids"),
        gains=pl.when(pl.col("error").is_null()).then("gains"),
    )
    slow = frame.filter(~fast.get_column("fast")).select("index", "kind", "text")
    base = fast.select("index", "ids", "gains", "error")
    out = _overlay(base, _exact(slow, _read_relevance, _RELEVANCE_FIELDS)) if slow.height else base
    ids, gains = dedupe_lists(out.get_column("ids"), out.get_column("gains"))
    return pl.DataFrame({"ids": ids, "gains": gains, "error": out.get_column("error")})


# --- retrieval data already in columns ------------------------------------------------------


def retrieval_from_columns(frame: pl.DataFrame) -> pl.DataFrame:
    """``actual_output__retrieved`` (and ``actual_output__retrieved_text``) as ids, texts,
    hashes and error, validated and deduplicated like parsed JSON."""
    ids = frame.get_column(RETRIEVED_IDS)
    if ids.dtype != _IDS:
        if not isinstance(ids.dtype, pl.List):
            raise MetricError(
                f"Column '{RETRIEVED_IDS}' must be a list of id strings; got {ids.dtype}."
            )
        ids = ids.cast(_IDS)
    texts = (
        frame.get_column(RETRIEVED_TEXTS).cast(_IDS)
        if RETRIEVED_TEXTS in frame.columns
        else pl.Series(RETRIEVED_TEXTS, [None] * frame.height, dtype=_IDS)
    )
    if RETRIEVED_TEXTS in frame.columns:
        texts = texts.list.eval(pl.element().fill_null(""))
    rows = _reject_empty_ids(pl.DataFrame({"ids": ids, "texts": texts}), "texts", BAD_ENTRY)
    rows = rows.with_columns(
        error=pl.when(ids.is_null())
        .then(pl.lit(f"{RETRIEVED_IDS} is null."))
        .when(texts.is_not_null() & (texts.list.len() != ids.list.len()))
        .then(pl.lit(f"{RETRIEVED_TEXTS} must hold one text per retrieved id."))
        .otherwise(pl.col("error"))
    )
    if rows.get_column("error").null_count() < rows.height:
        unusable = pl.col("error").is_not_null()
        rows = rows.with_columns(
            ids=pl.when(~unusable).then("ids"), texts=pl.when(~unusable).then("texts")
        )
    ids, texts, hashes = dedupe_lists(
        rows.get_column("ids"), rows.get_column("texts"), with_hashes=True
    )
    return pl.DataFrame(
        {"ids": ids, "texts": texts, "hashes": hashes, "error": rows.get_column("error")}
    )


def relevance_from_columns(frame: pl.DataFrame) -> pl.DataFrame:
    """``expected_output__gains`` (or ``expected_output__relevant``) as ids, gains and error."""
    if GAINS in frame.columns:
        gains = frame.get_column(GAINS)
        dtype = gains.dtype
        if isinstance(dtype, pl.Struct):
            names = [f.name for f in dtype.fields]
            col = pl.col(GAINS)
            entries = pl.concat_list(
                [
                    pl.struct(key=pl.lit(n), value=col.struct.field(n).cast(pl.Float64))
                    for n in names
                ]
            ).list.eval(pl.element().filter(pl.element().struct.field("value").is_not_null()))
        elif isinstance(dtype, pl.Map):
            entries = pl.col(GAINS).map.entries()
        elif isinstance(dtype, pl.List) and isinstance(dtype.inner, pl.Struct):
            entries = pl.col(GAINS)
        else:
            raise MetricError(
                f"Column '{GAINS}' must be a struct or map of id -> gain, or a list of "
                f"{{key, value}} structs; got {dtype}."
            )
        inner = frame.select(entries.alias("e")).get_column("e")
        fields = [f.name for f in inner.dtype.inner.fields]  # type: ignore[attr-defined]
        key, value = fields[0], fields[1]
        table = frame.select(
            ids=inner.list.eval(pl.element().struct.field(key).cast(pl.String)),
            gains=inner.list.eval(pl.element().struct.field(value).cast(pl.Float64)),
        )
        ids, gain_lists = table.get_column("ids"), table.get_column("gains")
        bad_entry = (
            pl.col("ids")
            .list.eval(pl.element().is_null() | (pl.element().str.len_bytes() == 0))
            .list.any()
            | pl.col("gains")
            .list.eval(pl.element().is_null() | pl.element().is_nan() | pl.element().is_infinite())
            .list.any()
        )
        bad_message = BAD_GAIN
    else:
        ids = frame.get_column(RELEVANT_IDS)
        if not isinstance(ids.dtype, pl.List):
            raise MetricError(
                f"Column '{RELEVANT_IDS}' must be a list of id strings; got {ids.dtype}."
            )
        ids = ids.cast(_IDS)
        gain_lists = ids.list.eval(pl.element().str.len_bytes().cast(pl.Float64) * 0.0 + 1.0)
        bad_entry = (
            pl.col("ids")
            .list.eval(pl.element().is_null() | (pl.element().str.len_bytes() == 0))
            .list.any()
        )
        bad_message = BAD_IDS
    checks = pl.DataFrame({"ids": ids, "gains": gain_lists}).select(
        error=pl.when(pl.col("ids").is_null() | (pl.col("ids").list.len() == 0))
        .then(pl.lit(NO_RELEVANT))
        .when(bad_entry)
        .then(pl.lit(bad_message))
    )
    error = checks.get_column("error")
    ok = error.is_null()
    ids = pl.select(pl.when(ok).then(ids)).to_series()
    gain_lists = pl.select(pl.when(ok).then(gain_lists)).to_series()
    ids, gain_lists = dedupe_lists(ids, gain_lists)
    return pl.DataFrame({"ids": ids, "gains": gain_lists, "error": error})
