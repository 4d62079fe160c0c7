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
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import numpy.typing as npt
import polars as pl

from evalframe.core._arrow_text import string_array
from evalframe.core._errors import MetricError
from evalframe.core._json._numbers import digits_end, exact_double
from evalframe.core._json._strings import PLAIN, json_string
from evalframe.core._json._text import JSON_WS, same_bytes, skip_ws
from evalframe.core._json._values import member_key, next_member
from evalframe.core._njit import compiling, njit, threads, worth_compiling
from evalframe.metrics._ranking import dedupe_lists, flat, may_repeat
from evalframe.metrics._text import utf8_buffers

if TYPE_CHECKING:
    pass

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


# --- the compiled scanner (arrays of ids or {id, text} objects, every row at once) ----------

_OK, _BAD_ENTRY, _EXACT = 0, 1, 2
_RETRIEVED_KEY = np.frombuffer(b"retrieved", np.uint8)
_ID_KEY = np.frombuffer(b"id", np.uint8)
_TEXT_KEY = np.frombuffer(b"text", np.uint8)
_TRUE = np.frombuffer(b"true", np.uint8)
_FALSE = np.frombuffer(b"false", np.uint8)
_NULL = np.frombuffer(b"null", np.uint8)
_PHP_WS = JSON_WS.copy()  # what PHP's trim() strips
_PHP_WS[[0, 11]] = True
# UTF-8 lead byte bits and continuation count by code point size
_QUOTE, _BACKSLASH, _COLON, _COMMA = 34, 92, 58, 44
_OPEN_ARRAY, _CLOSE_ARRAY, _OPEN_OBJECT, _CLOSE_OBJECT = 91, 93, 123, 125


@njit
def _equals(buf: Any, lo: int, hi: int, word: Any) -> bool:
    return hi - lo == word.size and same_bytes(buf, lo, word, 0, word.size)


@njit
def _scalar(data: Any, p: int, end: int) -> int:
    """The position after the JSON number, ``true``, ``false`` or ``null`` at ``p``, or -1."""
    c = data[p]
    if c in (116, 102, 110):  # true, false, null
        word = _TRUE if c == 116 else _FALSE if c == 102 else _NULL
        stop = p + word.size
        return stop if _equals(data, p, min(stop, end), word) else -1
    q = p + 1 if c == 45 else p
    if q >= end or not 48 <= data[q] <= 57:
        return -1
    q = q + 1 if data[q] == 48 else digits_end(data, q, end)
    if q < end and data[q] == 46:
        r = digits_end(data, q + 1, end)
        if r == q + 1:
            return -1
        q = r
    if q < end and data[q] in (101, 69):
        q += 1
        if q < end and data[q] in (43, 45):
            q += 1
        r = digits_end(data, q, end)
        if r == q:
            return -1
        q = r
    return q


@njit
def _ignored(data: Any, p: int, end: int, scratch: Any) -> int:
    """The position after a string or scalar value at ``p`` (-1 for anything else)."""
    if data[p] == _QUOTE:
        return json_string(data, p, end, scratch, 0)[0]
    return _scalar(data, p, end)


@njit
def _entry(
    data: Any, p: int, end: int, ids: Any, i0: int, texts: Any, t0: int, scratch: Any
) -> tuple[int, int, int]:
    """Read an ``{id, text, ...}`` object at ``p``: the position after it (-1: not read), the
    end of its id in ``ids`` (``i0`` or less: no usable id) and of its text in ``texts``."""
    id_stop, text_stop = -1, t0
    p = skip_ws(data, p + 1, end)
    if p < end and data[p] == _CLOSE_OBJECT:
        return p + 1, id_stop, text_stop
    done = False
    while not done:
        p, k = member_key(data, p, end, scratch)
        if p < 0:
            return -1, -1, -1
        is_id = _equals(scratch, 0, k, _ID_KEY)
        is_text = _equals(scratch, 0, k, _TEXT_KEY)
        # a repeated key keeps its last value, as Python's and PHP's decoders do
        if is_id and data[p] == _QUOTE:
            p, id_stop = json_string(data, p, end, ids, i0)
        elif is_text and data[p] == _QUOTE:
            p, text_stop = json_string(data, p, end, texts, t0)
        else:
            p = _ignored(data, p, end, scratch)
            if is_id:
                id_stop = -1
            elif is_text:
                text_stop = t0
        if p < 0:
            return -1, -1, -1
        p, done = next_member(data, p, end, _CLOSE_OBJECT)
        if p < 0:
            return -1, -1, -1
    return p, id_stop, text_stop


@njit
def _wrapped(data: Any, p: int, end: int, scratch: Any) -> int:
    """The position of the last ``"retrieved"`` array of the object at ``p`` whose other
    values are strings or scalars and which ends at ``end``; -2 for ``{}``, -1 otherwise."""
    p = skip_ws(data, p + 1, end)
    if p < end and data[p] == _CLOSE_OBJECT:
        return -2 if p + 1 == end else -1
    at = -1
    done = False
    while not done:
        p, k = member_key(data, p, end, scratch)
        if p < 0:
            return -1
        if _equals(scratch, 0, k, _RETRIEVED_KEY):
            if data[p] != _OPEN_ARRAY or at >= 0:
                return -1  # a repeated key: its earlier values are left to the full decoder
            at = p
            # skip it by bracket depth (strings may hold brackets); it is read later
            depth = 0
            while p < end:
                c = data[p]
                if c == _QUOTE:
                    p = json_string(data, p, end, scratch, 0)[0]
                    if p < 0:
                        return -1
                    continue
                if c in (_OPEN_ARRAY, _OPEN_OBJECT):
                    depth += 1
                elif c in (_CLOSE_ARRAY, _CLOSE_OBJECT):
                    depth -= 1
                    if depth == 0:
                        break
                p += 1
            if depth != 0:
                return -1
            p += 1
        else:
            p = _ignored(data, p, end, scratch)
            if p < 0:
                return -1
        p, done = next_member(data, p, end, _CLOSE_OBJECT)
        if p < 0:
            return -1
    return at if p == end else -1


@njit
def _scan_retrieval(data: Any, offsets: Any, valid: Any, room: int) -> tuple[Any, ...]:
    """Read every row that is an array (bare or the ``"retrieved"`` of an object) of id
    strings and ``{id, text}`` objects whose other values are strings or scalars.

    Returns the row status (``_OK``; ``_BAD_ENTRY``; ``_EXACT``: the exact reader must take
    the row), whether the row held an object, the rows' offsets into the entries, and the
    entries' ids and texts as Arrow string buffers (bytes, then offsets); or, when more than
    ``room`` entries are kept, a status array of size 0. (The entry offsets do not grow in
    the loop: an array reassigned there costs a third of the scan.)
    """
    rows = offsets.size - 1
    status = np.zeros(rows, np.int8)
    has_text = np.zeros(rows, np.bool_)
    row_off = np.zeros(rows + 1, np.int64)
    size = offsets[rows] - offsets[0] + 1
    ids = np.empty(size, np.uint8)
    texts = np.empty(size, np.uint8)
    scratch = np.empty(size, np.uint8)
    id_end = np.empty(room + 1, np.int64)
    text_end = np.empty(room + 1, np.int64)
    id_end[0] = text_end[0] = 0
    n = 0  # entries kept so far
    for r in range(rows):
        row_off[r] = n
        p, end = offsets[r], offsets[r + 1]
        while p < end and _PHP_WS[data[p]]:
            p += 1
        while end > p and _PHP_WS[data[end - 1]]:
            end -= 1
        if not valid[r] or p == end:
            status[r] = _EXACT
            continue
        bare = data[p] == _OPEN_ARRAY
        if not bare:
            at = _wrapped(data, p, end, scratch) if data[p] == _OPEN_OBJECT else -1
            if at == -2:
                continue
            if at < 0:
                status[r] = _EXACT
                continue
            p = at
        first, bad = n, False
        p = skip_ws(data, p + 1, end)
        done = p < end and data[p] == _CLOSE_ARRAY
        p += done
        while not done:
            if p >= end:
                p = -1
                break
            i0, t0 = id_end[n], text_end[n]
            if data[p] == _QUOTE:
                # the usual id: plain bytes up to the closing quote, copied here (a call per
                # id costs more than the copy); anything else is decoded by _string
                q, id_stop = p + 1, i0
                while q < end and PLAIN[data[q]]:
                    ids[id_stop] = data[q]
                    id_stop += 1
                    q += 1
                if q < end and data[q] == _QUOTE:
                    p = q + 1
                else:
                    p, id_stop = json_string(data, p, end, ids, i0)
                text_stop = t0
            elif data[p] == _OPEN_OBJECT:
                has_text[r] = True
                p, id_stop, text_stop = _entry(data, p, end, ids, i0, texts, t0, scratch)
            else:
                p = -1
            if p < 0:
                break
            if id_stop <= i0:
                bad = True
            else:
                if n == room:
                    return status[:0], has_text, row_off, ids, id_end, texts, text_end
                n += 1
                id_end[n], text_end[n] = id_stop, text_stop
            while p < end and JSON_WS[data[p]]:
                p += 1
            if p < end and data[p] == _COMMA:
                p = skip_ws(data, p + 1, end)
            elif p < end and data[p] == _CLOSE_ARRAY:
                p += 1
                done = True
            else:
                p = -1
                break
        if p < 0 or (bare and p != end) or bad:
            status[r] = _EXACT if p < 0 or (bare and p != end) else _BAD_ENTRY
            has_text[r] = False
            n = first
    row_off[rows] = n
    return status, has_text, row_off, ids, id_end[: n + 1], texts, text_end[: n + 1]


@njit
def _gain_maps(data: Any, offsets: Any, take: Any) -> tuple[Any, ...]:
    """Read the rows ``take`` marks, each a ``{"id": number, ...}`` map whose grammar
    ``_MAP_NUM`` has checked (keys without escapes, JSON numbers).

    Returns whether each row was read (a control character in a key, or a number the exact
    fast path cannot vouch for, leaves it to the exact reader), the rows' offsets into the
    entries, the keys as Arrow string buffers (bytes, then offsets) and the gains.
    """
    rows = offsets.size - 1
    size = offsets[rows] - offsets[0]
    room = size // 6 + 1  # an entry takes at least 6 bytes: '"a":1,'
    read = np.zeros(rows, np.bool_)
    row_off = np.zeros(rows + 1, np.int64)
    keys = np.empty(size, np.uint8)
    key_end = np.empty(room + 1, np.int64)
    gains = np.empty(room, np.float64)
    key_end[0] = 0
    n = 0
    for r in range(rows):
        row_off[r] = n
        if not take[r]:
            continue
        p, end = offsets[r], offsets[r + 1]
        first, good = n, True
        p = skip_ws(data, p + 1, end)
        while good and data[p] != _CLOSE_OBJECT:
            k = key_end[n]
            p += 1
            while data[p] != _QUOTE:
                good &= data[p] >= 0x20
                keys[k] = data[p]
                k += 1
                p += 1
            p = skip_ws(data, skip_ws(data, p + 1, end) + 1, end)
            p, value = exact_double(data, p, end)
            if p < 0:
                good = False
                break
            gains[n] = value
            n += 1
            key_end[n] = k
            p = skip_ws(data, p, end)
            if data[p] == _COMMA:
                p = skip_ws(data, p + 1, end)
        if good:
            read[r] = True
        else:
            n = first
    row_off[rows] = n
    return read, row_off, keys, key_end[: n + 1], gains[:n]


def _read_gain_maps(text: pl.Series, take: pl.Series) -> tuple[pl.Series, pl.Series, pl.Series]:
    """The ids and gains of the maps ``take`` marks (null elsewhere), and which were read: a
    map that repeats a key is left to the exact reader too (its last value counts)."""
    import pyarrow as pa

    data, offsets, _ = utf8_buffers(text)
    if worth_compiling(data.size, _INTERPRETED_UP_TO):
        compiling("the retrieval kernels", _gain_maps, _scan_retrieval)
        read, row_off, keys, key_end, gains = _gain_maps(data, offsets, take.to_numpy())
    else:
        read, row_off, keys, key_end, gains = _gain_maps.interpreted(
            bytes(data), offsets, take.to_numpy()
        )
    unread = pa.array(~read)
    list_offsets = pa.array(row_off)
    ids = pl.Series(
        "ids", pa.LargeListArray.from_arrays(list_offsets, string_array(key_end, keys), mask=unread)
    )
    read &= ~may_repeat(ids)
    values = pa.LargeListArray.from_arrays(list_offsets, pa.array(gains), mask=unread)
    return ids, pl.Series("gains", values), pl.Series("read", read)


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


_ROWS_PER_THREAD: Final = 4096
# Bytes of JSON up to which the scanners run interpreted (about 0.1 s) instead of compiling.
_INTERPRETED_UP_TO: Final = 1 << 16


def _scan_in_threads(
    data: npt.NDArray[np.uint8], offsets: npt.NDArray[np.int64], valid: npt.NDArray[np.bool_]
) -> list[tuple[Any, ...]]:
    """``_scan_part`` over byte-balanced runs of rows, one per Polars thread (the kernels
    release the GIL); the results in row order."""
    rows = offsets.size - 1
    if not worth_compiling(data.size, _INTERPRETED_UP_TO):
        return [_scan_part(data, offsets, valid, interpreted=True)]
    compiling("the retrieval kernels", _scan_retrieval, _gain_maps)
    parts = max(1, min(threads(), rows // _ROWS_PER_THREAD))
    if parts == 1:
        return [_scan_part(data, offsets, valid)]
    targets = np.linspace(offsets[0], offsets[-1], parts + 1)[1:-1]
    cuts = [0, *np.unique(np.searchsorted(offsets, targets).clip(1, rows - 1)).tolist(), rows]
    with ThreadPoolExecutor(len(cuts) - 1) as pool:
        return list(
            pool.map(
                lambda lo, hi: _scan_part(data, offsets[lo : hi + 1], valid[lo:hi]),
                cuts[:-1],
                cuts[1:],
            )
        )


def _scan_part(
    data: npt.NDArray[np.uint8],
    offsets: npt.NDArray[np.int64],
    valid: npt.NDArray[np.bool_],
    *,
    interpreted: bool = False,
) -> tuple[Any, ...]:
    """Status, has-text flags and list offsets of the rows, their ids and texts as Arrow
    string arrays (texts None when no row has one)."""
    size, rows = int(offsets[-1] - offsets[0]), offsets.size - 1
    scan = _scan_retrieval.interpreted if interpreted else _scan_retrieval
    source: Any = bytes(data) if interpreted else data
    # Room for ids of 8 bytes with their quotes and comma, then for as many as can fit: a
    # kept entry takes at least 4 bytes ('"x",'), and a row's brackets 2.
    for room in (size // 8 + rows + 16, size // 4 + rows + 16):
        scanned = scan(source, offsets, valid, room)
        if scanned[0].size == rows:
            break
    status, has_text, row_off, id_bytes, id_end, text_bytes, text_end = scanned
    texts = string_array(text_end, text_bytes) if has_text.any() else None
    return status, has_text, row_off, string_array(id_end, id_bytes), texts


def parse_retrieval(actual: pl.Series) -> pl.DataFrame:
    """Parse retrieval JSON into ``ids`` (deduplicated), ``texts`` and ``error`` columns.

    ``texts`` is null when no entry is an object (a bare id list carries no text); ``error``
    is eval-harness's message after ``Sample '<id>' ``, null when the row parsed.

    One compiled pass over the column's UTF-8 buffer reads every array (bare or under
    ``"retrieved"``) of id strings and ``{id, text}`` objects, escapes included; a row it
    does not vouch for (invalid JSON, other shapes, nested values, lone surrogates) takes the
    exact reader, once per distinct string, so messages and edge cases stay eval-harness's.
    """
    import pyarrow as pa

    text = actual.cast(pl.String)
    chunks = _scan_in_threads(*utf8_buffers(text))
    status = np.concatenate([c[0] for c in chunks])
    any_text = any(c[4] is not None for c in chunks)
    ids, texts = [], []
    for chunk_status, has_text, row_off, id_array, text_array in chunks:
        unread = chunk_status != _OK
        list_offsets = pa.array(row_off)
        ids.append(pa.LargeListArray.from_arrays(list_offsets, id_array, mask=pa.array(unread)))
        if any_text:
            texts.append(
                pa.nulls(unread.size, pa.large_list(pa.string_view()))
                if text_array is None
                else pa.LargeListArray.from_arrays(
                    list_offsets, text_array, mask=pa.array(unread | ~has_text)
                )
            )
    out = pl.DataFrame(
        {
            "ids": pl.Series("ids", pa.chunked_array(ids), dtype=_IDS),
            "texts": (
                pl.Series("texts", pa.chunked_array(texts), dtype=_IDS)
                if any_text
                else pl.Series("texts", dtype=_IDS).extend_constant(None, status.size)
            ),
            "error": pl.Series("error", status == _BAD_ENTRY),
        }
    ).with_columns(error=pl.when("error").then(pl.lit(BAD_ENTRY)))
    exact = np.flatnonzero(status == _EXACT)
    if exact.size:
        rows = pl.DataFrame(
            {"index": exact, "text": text.gather(exact).fill_null("")},
            schema={"index": pl.UInt32, "text": pl.String},
        )
        out = _overlay(out.with_row_index(), _exact(rows, _read_retrieval, _RETRIEVAL_FIELDS)).drop(
            "index"
        )
    ids_, texts_, hashes = dedupe_lists(
        out.get_column("ids"), out.get_column("texts"), with_hashes=True
    )
    return pl.DataFrame(
        {"ids": ids_, "texts": texts_, "hashes": hashes, "error": out.get_column("error")}
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
    listed = _split_ids(pl.when(is_list).then(list_text).otherwise(pl.lit("[]")))
    map_ids, map_gains, is_map = _read_gain_maps(
        frame.get_column("text"),
        frame.select((kind_ == "map") & text.str.contains(_MAP_NUM)).to_series(),
    )
    fast = frame.with_columns(map_ids, map_gains, is_map).select(
        "index",
        pl.when(is_list).then(listed).when("read").then("ids").alias("ids"),
        pl.when(is_list)
        .then(listed.list.eval(pl.element().str.len_bytes().cast(pl.Float64) * 0.0 + 1.0))
        .when("read")
        .then("gains")
        .alias("gains"),
        (is_list | pl.col("read")).alias("fast"),
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
