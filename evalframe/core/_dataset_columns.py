"""Validated samples into the dataset columns, a column at a time.

``evalframe.core._dataset`` checks each sample and collects its id, input map, expected value,
metadata map and tags; this module turns those lists into the frame of
``schema.DATASET_SCHEMA``. What costs per sample is JSON text and the row hash, so:

* compact JSON comes from one C encoder made once (``json.dumps`` makes a new one per call);
* the row hash's canonical JSON is the C encoder's sorted-key JSON wherever that is what PHP
  writes too. A vectorised regex over the whole column flags each row where it might not be
  (an empty map, a key that starts like a number or with an escape, a float, a long integer,
  U+2028/U+2029), and only those go through ``php_canonical_json``;
* a lone surrogate is looked for once per column; only a column that has one is searched
  row by row, to name the sample.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable
from json.encoder import (  # type: ignore[attr-defined]  # the C encoder is not in the stubs
    c_make_encoder,
    encode_basestring,
)
from typing import Any, Final

import polars as pl

from evalframe.core import schema as C
from evalframe.core._canon import JSONValue, php_canonical_json

__all__ = [
    "MAYBE_NOT_CANONICAL",
    "EncodedMap",
    "dataset_columns",
    "finite_json",
    "first_surrogate",
    "first_surrogate_sample",
    "lone_surrogate_in",
]


def _not_json(value: object) -> object:
    raise TypeError(f"{type(value).__name__} is not JSON")  # checked before: never raised


def _encoder(*, sort_keys: bool) -> Callable[[object, int], list[str]]:
    """Compact JSON as a list of chunks to join (what the C encoder returns)."""
    if c_make_encoder is None:  # pragma: no cover - CPython always has the C encoder
        import json

        return lambda value, _: [
            json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=sort_keys)
        ]
    encode: Callable[[object, int], list[str]] = c_make_encoder(
        None, _not_json, encode_basestring, None, ":", ",", sort_keys, False, False
    )
    return encode


_compact_chunks: Final = _encoder(sort_keys=False)
_sorted_chunks: Final = _encoder(sort_keys=True)


def _compact(value: object) -> str:
    return "".join(_compact_chunks(value, 0))


class EncodedMap(dict[str, Any]):
    """A map parsed from JSON that holds only finite numbers, with its compact JSON ``text``."""

    __slots__ = ("text",)

    def __init__(self, value: dict[str, Any], text: str) -> None:
        super().__init__(value)
        self.text = text


def finite_json(value: dict[str, Any]) -> EncodedMap | None:
    """``value``, parsed by Python's JSON parser, with its compact JSON text; None when it
    holds a number that is not finite.

    That parser makes plain JSON values (string keys, lists, no other types) except for
    ``NaN``, ``Infinity`` and numbers too large for a float; the compact encoder refuses
    those, at C speed, and its text is the metadata column's.
    """
    try:
        return EncodedMap(value, "".join(_compact_chunks(value, 0)))
    except (TypeError, ValueError, RecursionError):
        return None


_TYPE_NAMES: Final = {
    str: "string",
    int: "int",
    float: "float",
    bool: "bool",
    type(None): "null",
    list: "list",
    dict: "map",
}
# Where the sorted C encoding and PHP's canonical JSON may differ (see the module docstring);
# a false alarm only costs the slow path for that row.
MAYBE_NOT_CANONICAL: Final = (
    r"\{\}"
    r'|[{,]"(?:[ +\-.0-9]|\\)'
    r"|[:,\[]-?[0-9]+[.eE]"
    r"|[0-9]{19}"
    "|[\u2028\u2029]"
)


def dataset_columns(
    ids: list[str],
    inputs: list[dict[str, JSONValue]],
    expected: list[JSONValue],
    metadata: list[dict[str, JSONValue]],
    tags: list[list[str]],
    *,
    surrogate_error: Callable[[int], Exception],
) -> pl.DataFrame:
    """The dataset frame of validated samples, in order (ids unique, values plain JSON).

    Raises:
        Exception: ``surrogate_error(index)`` for the first sample holding a lone surrogate.
    """
    join, compact, sort = "".join, _compact_chunks, _sorted_chunks
    input_text = [join(compact(value, 0)) for value in inputs]
    expected_text = [value if type(value) is str else join(compact(value, 0)) for value in expected]
    metadata_text = [
        value.text if type(value) is EncodedMap else join(compact(value, 0)) if value else "{}"
        for value in metadata
    ]
    # A map of at most one key whose value is a string is already in sorted-key order.
    canonical_input = [
        text if len(i) < 2 and type(next(iter(i.values()), "")) is str else join(sort(i, 0))
        for text, i in zip(input_text, inputs, strict=True)
    ]
    hashed = [
        f'{{"input":{i},"expected":{encode_basestring(e) if type(e) is str else join(sort(e, 0))}}}'
        for i, e in zip(canonical_input, expected, strict=True)
    ]
    bad = first_surrogate(ids, hashed, metadata_text)
    if bad is not None:
        raise surrogate_error(bad)
    suspect = pl.Series(hashed, dtype=pl.String).str.contains(MAYBE_NOT_CANONICAL)
    for index in suspect.arg_true().to_list():
        hashed[index] = (
            f'{{"input":{php_canonical_json(inputs[index])},'
            f'"expected":{php_canonical_json(expected[index])}}}'
        )
    sha256 = hashlib.sha256
    columns: dict[str, Any] = {
        C.SAMPLE_ID: ids,
        C.INPUT: input_text,
        C.EXPECTED_OUTPUT: expected_text,
        C.EXPECTED_TYPE: [_TYPE_NAMES[type(value)] for value in expected],
        C.METADATA: metadata_text,
        C.TAGS: _list_series(tags),
        C.ROW_HASH: [sha256(text.encode("utf-8")).hexdigest() for text in hashed],
    }
    return pl.DataFrame(columns, C.DATASET_SCHEMA)


def first_surrogate_sample(
    ids: list[str],
    inputs: list[dict[str, JSONValue]],
    expected: list[JSONValue],
    metadata: list[dict[str, JSONValue]],
) -> int | None:
    """The first sample with a lone surrogate in its id, input, expected value or metadata."""
    compact = _compact
    return first_surrogate(
        ids,
        [compact(value) for value in inputs],
        [value if type(value) is str else compact(value) for value in expected],
        [compact(value) for value in metadata],
    )


def first_surrogate(*columns: list[str]) -> int | None:
    """The first row holding a lone surrogate in any of ``columns``, or None."""
    found: int | None = None
    for column in columns:
        try:
            "\n".join(column).encode("utf-8")
        except UnicodeEncodeError:
            for index, text in enumerate(column[: found if found is not None else None]):
                if not text.isascii():
                    try:
                        text.encode("utf-8")
                    except UnicodeEncodeError:
                        found = index
                        break
    return found


def lone_surrogate_in(value: object) -> str | None:
    """The first lone surrogate in ``value``'s text (escaped, as ``\\udXXX``), or None.

    Examples:
        >>> lone_surrogate_in({"a": ["ok", "x\\ud800"]})
        '\\\\ud800'
        >>> lone_surrogate_in("fine") is None
        True
    """
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return text[exc.start].encode("unicode_escape").decode("ascii")
    return None


def _list_series(rows: list[list[str]]) -> pl.Series:
    """A List(String) series; through Arrow offsets, 20x faster than Polars from nested lists."""
    import pyarrow as pa

    offsets = pa.array([0, *itertools.accumulate(map(len, rows))], pa.int64())
    values = pa.array([item for row in rows for item in row], pa.large_string())
    return pl.Series(C.TAGS, pa.LargeListArray.from_arrays(offsets, values))
