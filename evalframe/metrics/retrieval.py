"""Retrieval-ranking metrics (reference §2.10-§2.15): hit, recall, MRR, nDCG at k, and answer
containment.

Inputs. ``actual_output`` is the ranked retrieval as JSON: a list of ids, a list of
``{"id", "text"}`` objects, or ``{"retrieved": [...]}``. ``expected_output`` is the relevant
set: a list of ids (gain 1.0 each), the same list JSON-encoded in a string, or an id -> gain
map. Duplicate retrieved ids are dropped, keeping the first (best) rank.

Retrieval data already in columns skips JSON altogether. When the evaluation frame carries

    actual_output__retrieved        List(String)  ranked ids, rank 1 first
    actual_output__retrieved_text   List(String)  optional: one text per id (for containment)
    expected_output__relevant       List(String)  relevant ids, binary gains
    expected_output__gains          Struct, Map or List(Struct{key, value}): id -> gain

those are read instead of ``actual_output`` / ``expected_output`` (``expected_output__gains``
wins over ``expected_output__relevant``). Either way the inputs are parsed once per frame,
whatever the number of retrieval metrics, into the generated columns

    actual_output__retrieval        Struct{ids, texts, hashes, error}
    expected_output__relevance      Struct{ids, gains, error}
    retrieval__ranking              Struct{ranks, terms, ideal}: the ranks (ascending) of the
                                    relevant ids retrieved, their DCG terms, the ideal terms
    retrieval__metadata_k           Struct{k}: metadata.k where it is an integer > 0

Well-formed JSON in the usual shapes is decoded by Polars; anything else (errors, odd shapes)
is parsed once per distinct string by a PHP-compatible reader, so messages match the reference.

The cutoff ``k`` is ``metadata.k`` when it is an integer > 0 (strings and floats are ignored),
else the metric's ``k`` parameter (default 5). MRR ignores k.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import polars as pl

from evalframe import schema as C
from evalframe.exceptions import MetricError
from evalframe.metrics._batched import batched, sample_error
from evalframe.metrics._ranking import dedupe_lists, flat, rank_matches
from evalframe.metrics._registry import metric
from evalframe.metrics._spec import Enrichment, Scored

__all__ = [
    "RANKING",
    "RELEVANCE",
    "RETRIEVAL",
    "answer_containment_at_k",
    "parse_relevance",
    "parse_retrieval",
    "retrieval_hit_at_k",
    "retrieval_mrr",
    "retrieval_ndcg_at_k",
    "retrieval_recall_at_k",
]

RETRIEVAL: Final = "actual_output__retrieval"
RELEVANCE: Final = "expected_output__relevance"
RANKING: Final = "retrieval__ranking"
METADATA_K: Final = "retrieval__metadata_k"
RETRIEVED_IDS: Final = "actual_output__retrieved"
RETRIEVED_TEXTS: Final = "actual_output__retrieved_text"
RELEVANT_IDS: Final = "expected_output__relevant"
GAINS: Final = "expected_output__gains"

PHP_WHITESPACE: Final = " \t\n\r\0\x0b"

_IDS = pl.List(pl.String)
_RETRIEVAL_FIELDS = {"ids": _IDS, "texts": _IDS, "error": pl.String}
_RELEVANCE_FIELDS = {"ids": _IDS, "gains": pl.List(pl.Float64), "error": pl.String}

# --- messages (reference §2.10), each after "Sample '<id>' " ---------------------------------

ACTUAL_NOT_JSON = "retrieval actualOutput is not valid JSON: {}."
ACTUAL_SHAPE = "retrieval actualOutput must be a JSON array or an object with a 'retrieved' array."
BAD_ENTRY = "retrieval entry must be a non-empty id string or an object with a non-empty 'id'."
BAD_IDS = "retrieval expected_output ids must be non-empty strings."
EXPECTED_NOT_JSON = "retrieval expected_output is not valid JSON: {}."
BAD_GAIN = "retrieval expected_output gain map must be id => numeric gain."
NO_RELEVANT = "retrieval expected_output must list at least one relevant id."
BAD_K = "Retrieval metric k must be a positive integer."

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
    is the reference's message after ``Sample '<id>' ``, null when the row parsed.

    Arrays of escape-free id strings are split directly; arrays of objects are decoded by
    Polars when every ``id`` and ``text`` key holds a string (Polars would turn ``7`` into
    ``"7"``, which the reference rejects); every other row takes the exact reader.
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


def _retrieval_from_columns(frame: pl.DataFrame) -> pl.DataFrame:
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


def _relevance_from_columns(frame: pl.DataFrame) -> pl.DataFrame:
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


# --- enrichments: parsed once per frame, shared by every retrieval metric -------------------


@dataclass(frozen=True)
class _Derived:
    """A generated column computed from other columns of the frame (no provider involved)."""

    column: str
    compute: Callable[[pl.DataFrame], pl.DataFrame]

    def apply(self, frame: pl.DataFrame, context: Any) -> pl.Series:
        return self.compute(frame).to_struct(self.column)


def _retrieval_column(frame: pl.DataFrame) -> pl.DataFrame:
    if RETRIEVED_IDS in frame.columns:
        return _retrieval_from_columns(frame)
    return parse_retrieval(frame.get_column(C.ACTUAL_OUTPUT))


def _relevance_column(frame: pl.DataFrame) -> pl.DataFrame:
    if GAINS in frame.columns or RELEVANT_IDS in frame.columns:
        return _relevance_from_columns(frame)
    return parse_relevance(frame.get_column(C.EXPECTED_OUTPUT), frame.get_column(C.EXPECTED_TYPE))


def _ranking_column(frame: pl.DataFrame) -> pl.DataFrame:
    retrieval = frame.get_column(RETRIEVAL)
    relevance = frame.get_column(RELEVANCE)
    fields = {f.name for f in retrieval.dtype.fields}  # type: ignore[attr-defined]
    return rank_matches(
        retrieval.struct.field("ids"),
        relevance.struct.field("ids"),
        relevance.struct.field("gains"),
        retrieval.struct.field("hashes") if "hashes" in fields else None,
    )


_RETRIEVAL_ENRICHMENT: Final = _Derived(RETRIEVAL, _retrieval_column)
_RELEVANCE_ENRICHMENT: Final = _Derived(RELEVANCE, _relevance_column)
_RANKING_ENRICHMENT: Final = _Derived(RANKING, _ranking_column)


def _metadata_k(frame: pl.DataFrame) -> pl.DataFrame:
    """``metadata.k`` when it is a JSON integer > 0, else null."""
    # A JSONPath filter keeps numbers only, so "3" (a string) is ignored; the regex then
    # drops floats such as 3.0 and 1e2, and the strict cast integers beyond Int64 (PHP floats).
    wrapped = pl.concat_str(pl.lit("["), pl.col(C.METADATA), pl.lit("]"))
    found = wrapped.str.json_path_match("$[?(@.k > 0)].k")
    return frame.select(
        k=pl.when(found.str.contains(r"^[0-9]+$")).then(found.cast(pl.Int64, strict=False))
    )


_METADATA_K_ENRICHMENT: Final = _Derived(METADATA_K, _metadata_k)


def _ranking_inputs(**_: Any) -> list[Enrichment]:
    return [
        _METADATA_K_ENRICHMENT,
        _RETRIEVAL_ENRICHMENT,
        _RELEVANCE_ENRICHMENT,
        _RANKING_ENRICHMENT,
    ]


def _retrieval_only(**_: Any) -> list[Enrichment]:
    return [_METADATA_K_ENRICHMENT, _RETRIEVAL_ENRICHMENT]


# --- shared expressions ---------------------------------------------------------------------


def _cutoff(k: int) -> pl.Expr:
    """``metadata.k`` when it is a JSON integer > 0, else ``k``."""
    if k < 1:
        raise MetricError(BAD_K)
    return pl.coalesce(_field(METADATA_K, "k"), pl.lit(k, pl.Int64))


def _field(column: str, name: str) -> pl.Expr:
    return pl.col(column).struct.field(name)


def _input_error(*columns: str) -> pl.Expr:
    reason = pl.coalesce([_field(c, "error") for c in columns])
    return pl.when(reason.is_not_null()).then(sample_error("{}", reason))


def _ranked(score: pl.Expr, details: pl.Expr) -> Scored:
    error = _input_error(RETRIEVAL, RELEVANCE)
    return Scored(
        score=pl.when(error.is_null()).then(score),
        error=error,
        details=pl.when(error.is_null()).then(details),
    )


def _found(cutoff: pl.Expr) -> pl.Expr:
    """How many relevant ids rank within the cutoff (ranks are ascending)."""
    return (
        (_field(RANKING, "ranks") - cutoff).list.eval(pl.element() <= 0).list.sum().cast(pl.Int64)
    )


# --- the metrics ----------------------------------------------------------------------------


@metric("retrieval-hit-at-k", family="retrieval", enrichments=_ranking_inputs)
def retrieval_hit_at_k(*, k: int = 5) -> Scored:
    """1.0 when any relevant id is among the top-k retrieved ids, else 0.0.

    hit@k = 1[|top-k ∩ relevant| > 0]. Ids with gain 0 (or below) in a gain map still count
    as relevant. Codomain {0, 1}; null (an error) when either input cannot be parsed.
    """
    cutoff = _cutoff(k)
    first = _field(RANKING, "ranks").list.first()
    hit = (first <= cutoff).fill_null(value=False)
    return _ranked(
        hit.cast(pl.Float64),
        pl.struct(
            k=cutoff,
            relevant=_field(RELEVANCE, "ids"),
            top_k=_field(RETRIEVAL, "ids").list.head(cutoff),
        ),
    )


@metric("retrieval-recall-at-k", family="retrieval", enrichments=_ranking_inputs)
def retrieval_recall_at_k(*, k: int = 5) -> Scored:
    """The fraction of the relevant ids found in the top-k retrieved ids.

    recall@k = |top-k ∩ relevant| / |relevant|, in [0, 1]. Null (an error) when either input
    cannot be parsed; an empty relevant set is an error, never 0/0.
    """
    cutoff = _cutoff(k)
    found = _found(cutoff)
    relevant = _field(RELEVANCE, "ids").list.len()
    return _ranked(
        (found / relevant).clip(0.0, 1.0),
        pl.struct(
            k=cutoff,
            relevant_count=relevant.cast(pl.Int64),
            found=found,
            top_k=_field(RETRIEVAL, "ids").list.head(cutoff),
        ),
    )


@metric("retrieval-mrr", family="retrieval", enrichments=_ranking_inputs)
def retrieval_mrr() -> Scored:
    """Reciprocal rank of the first relevant id, over the whole ranking (k is ignored).

    RR = 1 / rank of the first retrieved id in the relevant set, 0.0 when none is retrieved;
    in [0, 1]. Dataset-level MRR is the mean of this column. Null (an error) when either input
    cannot be parsed.
    """
    first = _field(RANKING, "ranks").list.first()
    return _ranked(
        (1.0 / first.cast(pl.Float64)).fill_null(0.0),
        pl.struct(first_relevant_rank=first),
    )


@metric("retrieval-ndcg-at-k", family="retrieval", enrichments=_ranking_inputs)
def retrieval_ndcg_at_k(*, k: int = 5) -> Scored:
    """Normalised discounted cumulative gain at k, with linear gains and a log2 discount.

    DCG@k = Σ_{i ≤ k} gain(id_i) / log2(i + 1) over the top-k ranks (irrelevant ids gain 0);
    IDCG@k is the same sum over the relevant gains sorted in descending order and truncated
    at k. nDCG@k = clamp(DCG@k / IDCG@k, 0, 1), and 0.0 when IDCG@k ≤ 0. Gains are the map's
    values, or 1.0 for an id list (the gain is linear, not 2^g - 1). Null (an error) when
    either input cannot be parsed.
    """
    cutoff = _cutoff(k)
    # + 0.0 turns the empty sum (-0.0) into 0.0
    dcg = _field(RANKING, "terms").list.head(_found(cutoff)).list.sum() + 0.0
    idcg = _field(RANKING, "ideal").list.head(cutoff).list.sum()
    score = pl.when(idcg > 0).then((dcg / idcg).clip(0.0, 1.0)).otherwise(0.0)
    return _ranked(score, pl.struct(k=cutoff, dcg=dcg, idcg=idcg))


def normalise_span(text: pl.Expr, *, case_sensitive: bool) -> pl.Expr:
    """Collapse Unicode whitespace runs to one space, trim, and lowercase unless asked not to."""
    out = text.str.replace_all(r"\s+", " ").str.strip_chars(PHP_WHITESPACE)
    return out if case_sensitive else out.str.to_lowercase()


def _containment_kernel(frame: pl.DataFrame) -> pl.DataFrame:
    """First 1-based rank in ``texts`` (already top-k and normalised) that contains ``needle``."""
    rows = frame.with_row_index("row")
    exploded = rows.select(
        "row",
        "needle",
        text="texts",
        rank=pl.int_ranges(1, pl.col("texts").list.len().fill_null(0) + 1),
    ).explode("text", "rank", empty_as_null=False, keep_nulls=False)
    found = (
        exploded.filter(
            (pl.col("text").str.len_bytes() > 0)
            & pl.col("text").str.contains(pl.col("needle"), literal=True)
        )
        .group_by("row")
        .agg(pl.col("rank").min().alias("matched_rank"))
    )
    return rows.join(found, on="row", how="left", maintain_order="left").select(
        pl.col("matched_rank").cast(pl.Int64)
    )


@metric("answer-containment-at-k", family="retrieval", enrichments=_retrieval_only)
def answer_containment_at_k(*, k: int = 5, case_sensitive: bool = False) -> Scored:
    """1.0 when a top-k retrieved text contains the expected answer span, else 0.0.

    Both sides are normalised alike (Unicode whitespace runs collapsed to one space, trimmed,
    lowercased unless ``case_sensitive``); empty texts are skipped. A bare id list carries no
    text, so it always scores 0.0. Codomain {0, 1}; null (an error) when the retrieval cannot
    be parsed or ``expected_output`` is not a string that is non-empty after trimming.
    """
    cutoff = _cutoff(k)
    expected = C.expected_text()
    bad_expected = expected.is_null() | (expected.str.strip_chars(PHP_WHITESPACE) == "")
    texts = _field(RETRIEVAL, "texts").list.head(cutoff)
    kernel = batched(
        _containment_kernel,
        {
            "texts": texts.list.eval(normalise_span(pl.element(), case_sensitive=case_sensitive)),
            "needle": normalise_span(expected.fill_null(""), case_sensitive=case_sensitive),
        },
        {"matched_rank": pl.Int64},
    )
    matched = pl.col("answer-containment-at-k__kernel").struct.field("matched_rank")
    error = pl.coalesce(
        _input_error(RETRIEVAL),
        pl.when(bad_expected).then(
            sample_error(
                "expected_output must be a non-empty string (the answer span) for "
                "answer-containment-at-k metric."
            )
        ),
    )
    return Scored(
        score=pl.when(error.is_null()).then(matched.is_not_null().cast(pl.Float64)),
        error=error,
        details=pl.when(error.is_null()).then(
            pl.struct(k=cutoff, expected_span=expected, matched_rank=matched)
        ),
        prepare={"answer-containment-at-k__kernel": kernel},
    )
