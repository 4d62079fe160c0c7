"""JSON values, their compact encoding, and the row hash.

Three things live here:

* ``to_json_value`` turns a parsed value (YAML, JSON, Arrow) into plain JSON data: dates
  become ISO strings, map keys become strings, and what JSON cannot carry (NaN, infinity,
  bytes, sets, ...) is rejected with the place it was found.
* ``compact`` is what the dataset columns store: no spaces, Unicode and slashes unescaped,
  keys in the order the file gave them. ``json.loads(compact(v)) == v``.
* ``row_hash`` is eval-harness's ``RowHash``, its row identity: SHA-256 of the
  PHP-style canonical JSON of ``{"input": ..., "expected": ...}``. Canonical means map keys
  sorted the way PHP's ``ksort`` sorts array keys, lists left alone, an empty map written
  ``[]``, floats spelt as PHP spells them (``1.0``, ``1.0e-5``, ``1.0e+25``) and U+2028/U+2029
  escaped, so evalframe and eval-harness give the same hash for the same row.

Examples:
    >>> compact({"question": "How many days?", "k": 1.0})
    '{"question":"How many days?","k":1.0}'
    >>> row_hash({"question": "How many days?"}, "30 days")[:8]
    '4d2e9427'
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import re
from collections.abc import Iterable
from functools import cmp_to_key
from typing import Any, Final, TypeAlias

from evalframe.core._errors import UnsupportedValueError
from evalframe.core.schema import ExpectedType

__all__ = [
    "JSONValue",
    "UnsupportedValueError",
    "compact",
    "expected_type_of",
    "php_canonical_json",
    "php_trim",
    "row_hash",
    "to_json_value",
    "trimmed_tags",
]

JSONValue: TypeAlias = "str | int | float | bool | list[JSONValue] | dict[str, JSONValue] | None"

_ENCODER: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1
# PHP arrays turn decimal integer keys into int keys ("7" -> 7, but not "07", "-0" or "7.0").
_PHP_INT_KEY: Final = re.compile(r"0|-?[1-9][0-9]*")
# PHP 8 numeric strings: optional surrounding whitespace, a decimal number, an optional exponent.
_PHP_NUMERIC: Final = re.compile(
    r"[ \t\n\r\v\f]*[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?[ \t\n\r\v\f]*"
)
_NUMERIC_START: Final = frozenset(" \t\n\r\v\f+-.0123456789")
_PHP_TRIM: Final = " \t\n\r\0\x0b"


def php_trim(text: str) -> str:
    """Strip what PHP's ``trim()`` strips: ASCII space, tab, newlines, NUL and vertical tab.

    Examples:
        >>> php_trim("\\u00a0 tag \\n")
        '\\xa0 tag'
    """
    return text.strip(_PHP_TRIM)


def trimmed_tags(tags: Iterable[str]) -> list[str]:
    """Tags as the report's cohorts read them: trimmed (PHP trim), non-empty, unique, in order.

    Examples:
        >>> trimmed_tags([" a", "b", "a", "\\n"])
        ['a', 'b']
    """
    return list(dict.fromkeys(tag for tag in map(php_trim, tags) if tag))


def to_json_value(value: object, path: str = "") -> JSONValue:
    """Convert a parsed value into plain JSON data, or say why it cannot be.

    Dates and times become ISO 8601 strings (``date.isoformat()``); map keys become strings
    (``1`` -> ``"1"``, ``True`` -> ``"true"``, as ``json.dumps`` spells them); tuples become
    lists. Non-finite floats, bytes, decimals, sets and other objects are rejected.

    Args:
        value: the parsed value.
        path: where ``value`` sits, prefixed to nested paths in errors.

    Returns:
        The value as ``str``, ``int``, ``float``, ``bool``, ``None``, lists and string-keyed
        dicts.

    Raises:
        UnsupportedValueError: a value or key JSON cannot carry, or two keys that read the
            same once they are strings.

    Examples:
        >>> import datetime
        >>> to_json_value({1: datetime.date(2024, 5, 1), "x": (1, 2.5)})
        {'1': '2024-05-01', 'x': [1, 2.5]}
    """
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value  # type: ignore[return-value]  # narrowed by the exact type checks above
    if isinstance(value, dict):
        out: dict[str, JSONValue] = {}
        for key, item in value.items():
            if type(key) is str:
                text = key
            else:
                text = _key_text(key, path)
                if text in out or text in value:
                    raise UnsupportedValueError(path, f"has two keys that both read {text!r}")
            kind = type(item)
            if kind is str or kind is int or kind is bool or item is None:
                out[text] = item
            else:
                out[text] = to_json_value(item, f"{path}.{text}")
        return out
    if isinstance(value, list | tuple):
        return [to_json_value(item, f"{path}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, float):
        if not math.isfinite(value):
            raise UnsupportedValueError(
                path, f"is {value!r}; JSON cannot carry NaN or infinite numbers"
            )
        return float(value)
    if isinstance(value, str | int):  # subclasses, e.g. numpy.str_ or an IntEnum
        return str(value) if isinstance(value, str) else int(value)
    if isinstance(value, dt.date | dt.time):  # datetime is a date
        return value.isoformat()
    raise UnsupportedValueError(
        path, f"has a value of unsupported type {type(value).__name__}; JSON cannot carry it"
    )


def _key_text(key: object, path: str) -> str:
    if isinstance(key, str):
        return str(key)
    if isinstance(key, bool) or key is None:
        return json.dumps(key)
    if isinstance(key, int):
        return str(int(key))
    if isinstance(key, float) and math.isfinite(key):
        return repr(float(key))
    if isinstance(key, dt.date | dt.time):
        return key.isoformat()
    raise UnsupportedValueError(path, f"has a key of unsupported type {type(key).__name__}")


def compact(value: JSONValue) -> str:
    """Compact JSON: no spaces, Unicode and ``/`` unescaped, key order kept.

    Examples:
        >>> compact({"ids": ["d/1", "é"], "n": None})
        '{"ids":["d/1","é"],"n":null}'
    """
    return _ENCODER.encode(value)


def expected_type_of(value: JSONValue) -> ExpectedType:
    """The ``expected_type`` column value of a JSON value.

    Examples:
        >>> [expected_type_of(v) for v in ("a", 1, 1.0, True, None, [], {})]
        ['string', 'int', 'float', 'bool', 'null', 'list', 'map']
    """
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if value is None:
        return "null"
    return "list" if isinstance(value, list) else "map"


def row_hash(input_: JSONValue, expected: JSONValue) -> str:
    """eval-harness's row identity: SHA-256 hex of the canonical input and expected output.

    The sample id and metadata do not take part, so a renamed or re-tagged row keeps its hash.

    Raises:
        UnicodeEncodeError: a string holds a lone surrogate (not valid Unicode).

    Examples:
        >>> row_hash({"question": "How many days?"}, "30 days")
        '4d2e94278cc66e21259576a1f00a0f113abbc6675969f6b45f745565bf878845'
    """
    text = (
        '{"input":'
        + php_canonical_json(input_)
        + ',"expected":'
        + php_canonical_json(expected)
        + "}"
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def php_canonical_json(value: JSONValue) -> str:
    """The canonical JSON eval-harness hashes, as PHP's ``json_encode`` writes it.

    Examples:
        >>> php_canonical_json({"b": [2, 1], "a": {}, "10": 1e-5, "9": 1.0})
        '{"9":1.0,"10":1.0e-5,"a":[],"b":[2,1]}'
    """
    if isinstance(value, str):
        return _php_string(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        # PHP integers are 64-bit: larger literals are parsed as floats.
        if _INT64_MIN <= value <= _INT64_MAX:
            return str(value)
        return _php_float(float(value))
    if isinstance(value, float):
        return _php_float(value)
    if isinstance(value, list):
        return "[" + ",".join(map(php_canonical_json, value)) + "]"
    items = _php_sorted_items(value)
    if [key for key, _ in items] == list(range(len(items))):
        # A PHP array with keys 0..n-1 is a list, so json_encode writes [...] (also when empty).
        return "[" + ",".join(php_canonical_json(item) for _, item in items) + "]"
    return (
        "{"
        + ",".join(f"{_php_string(str(key))}:{php_canonical_json(item)}" for key, item in items)
        + "}"
    )


def _php_string(text: str) -> str:
    encoded: str = json.encoder.encode_basestring(text)
    if "\u2028" in encoded or "\u2029" in encoded:
        # Without JSON_UNESCAPED_LINE_TERMINATORS PHP still escapes these two.
        encoded = encoded.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return encoded


def _php_float(value: float) -> str:
    """PHP's ``json_encode`` spelling of a finite float (serialize_precision -1, zero fraction)."""
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    # repr() and PHP both print the shortest digits that round-trip (Gay's dtoa, mode 0).
    mantissa, _, exponent = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    raw = whole + fraction
    significant = raw.lstrip("0")
    point = len(whole) - (len(raw) - len(significant)) + int(exponent or 0)
    digits = significant.rstrip("0")
    sign = "-" if value < 0 else ""
    if point < -3 or point > 17:
        power = point - 1
        return f"{sign}{digits[0]}.{digits[1:] or '0'}e{'-' if power < 0 else '+'}{abs(power)}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if len(digits) <= point:
        return f"{sign}{digits}{'0' * (point - len(digits))}.0"
    return f"{sign}{digits[:point]}.{digits[point:]}"


def _php_sorted_items(mapping: dict[str, JSONValue]) -> list[tuple[int | str, JSONValue]]:
    """The items of a map as a PHP array after ``ksort($array)`` (SORT_REGULAR)."""
    if not any(key[:1] in _NUMERIC_START for key in mapping):
        # No integer and no numeric key: PHP compares the keys byte-wise, as Python does.
        return sorted(mapping.items())
    items = [(_php_key(key), item) for key, item in mapping.items()]
    return sorted(items, key=cmp_to_key(_php_compare_items))


def _php_key(key: str) -> int | str:
    if _PHP_INT_KEY.fullmatch(key) and _INT64_MIN <= int(key) <= _INT64_MAX:
        return int(key)
    return key


def _php_numeric(text: str) -> int | float | None:
    match = _PHP_NUMERIC.fullmatch(text)
    if match is None:
        return None
    if "." not in text and match.group(1) is None:
        number = int(text.strip())
        if _INT64_MIN <= number <= _INT64_MAX:
            return number
    return float(text.strip())


def _php_compare_items(a: tuple[int | str, JSONValue], b: tuple[int | str, JSONValue]) -> int:
    return _php_compare(a[0], b[0])


def _php_compare(a: int | str, b: int | str) -> int:
    """PHP 8's comparison of two array keys (``php_array_key_compare_unstable_i``)."""
    if isinstance(a, int):
        return _three_way(a, b) if isinstance(b, int) else -_compare_int_to_string(b, a)
    if isinstance(b, int):
        return _compare_int_to_string(a, b)
    x, y = _php_numeric(a), _php_numeric(b)
    if x is None or y is None:
        return _three_way(a, b)  # code point order is UTF-8 byte order
    return _compare_numbers(x, y)


def _compare_int_to_string(text: str, number: int) -> int:
    parsed = _php_numeric(text)
    if parsed is None:
        return _three_way(text, str(number))
    return _compare_numbers(parsed, number)


def _compare_numbers(x: int | float, y: int | float) -> int:
    if isinstance(x, int) and isinstance(y, int):
        return _three_way(x, y)
    return _three_way(float(x), float(y))


def _three_way(x: Any, y: Any) -> int:
    return int((x > y) - (x < y))
