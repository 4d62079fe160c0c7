"""Tool arguments against expected arguments, compared as JSON texts by a compiled pass.

``tool-called-with``, ``argument-correctness`` and ``goal-accuracy`` ask whether a call's
arguments (compact JSON text, ``core/_trajectory.py``) contain an expectation's:
``loose_subset`` (here), where numbers compare by value across types
(7, 7.0 and "7" are equal). :func:`loose_subsets` decides each pair from the two texts without
parsing them into Python, for the pairs whose expectation is a map of scalars; any other pair
(a nested expected value, a number it cannot convert exactly, a string only Python's
``float`` can judge, such as ``"1_000"``) is judged by ``loose_subset`` once per distinct
pair, so every verdict is Python's.

Examples:
    >>> import polars as pl
    >>> loose_subsets(
    ...     pl.Series(['{"id":7}', '{"id":"7"}', '{"q":"a"}', None]),
    ...     pl.Series(['{"id":"7","x":1}', '{"id":7.0}', '{"q":"b"}', '{"q":1}']),
    ... ).tolist()
    [True, True, False, True]
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from evalframe.core._arrow_text import text_buffers
from evalframe.core._json._numbers import exact_double, number_end
from evalframe.core._json._strings import hex4, skip_string
from evalframe.core._json._text import skip_ws
from evalframe.core._json._values import skip_value
from evalframe.core._njit import compiling, njit, worth_compiling

__all__ = ["judge_pairs", "loose_equal", "loose_subset", "loose_subsets"]

_UNKNOWN, _NO, _YES = -1, 0, 1
_STR, _NUM, _TRUE, _FALSE, _NULL, _MAP, _LIST = range(7)
_QUOTE, _OPEN, _CLOSE = 34, 123, 125
_PYTHON_UP_TO = 2_000  # pairs judged in Python without compiling


@njit(borrows=True, inline="always")
def _kind(data: Any, p: int) -> int:
    c = data[p]
    if c == _QUOTE:
        return _STR
    if c == _OPEN:
        return _MAP
    if c == 0x5B:
        return _LIST
    if c == 0x74:
        return _TRUE
    if c == 0x66:
        return _FALSE
    if c == 0x6E:
        return _NULL
    return _NUM


@njit(borrows=True, inline="always")
def _canonical(data: Any, lo: int, hi: int) -> bool:
    """Whether the JSON string ``data[lo:hi]`` is spelled as Python's encoder spells its text
    (so equal texts have equal bytes): escapes only for quotes, backslashes and control
    characters, those with a short form in it, the rest as ``\\u00xx`` in lower case."""
    k = lo + 1
    while k < hi - 1:
        if data[k] == 92:
            e = data[k + 1]
            if e == 0x2F:  # an escaped slash
                return False
            if e == 0x75:
                value = hex4(data, k + 2, hi)
                if not 0 <= value < 0x20 or value in (8, 9, 10, 12, 13):
                    return False
                if 0x41 <= data[k + 4] <= 0x46 or 0x41 <= data[k + 5] <= 0x46:
                    return False  # upper-case hex digits
                k += 6
                continue
            k += 2
            continue
        k += 1
    return True


@njit(borrows=True)
def _string_number(data: Any, lo: int, hi: int) -> tuple[int, float]:
    """What ``float(text.strip())`` makes of the JSON string ``data[lo:hi]``: (1, value),
    (0, 0.0) where it fails or is not finite, (-1, 0.0) where only Python can tell."""
    a, b = lo + 1, hi - 1
    while a < b and (data[a] == 0x20 or 0x09 <= data[a] <= 0x0D or 0x1C <= data[a] <= 0x1F):
        a += 1
    while b > a and (
        data[b - 1] == 0x20 or 0x09 <= data[b - 1] <= 0x0D or 0x1C <= data[b - 1] <= 0x1F
    ):
        b -= 1
    if a == b:
        return 0, 0.0
    end, value = exact_double(data, a, b)
    if end == b:
        return 1, value
    for k in range(a, b):
        c = data[k]
        if c >= 0x80 or c == 92:  # other digits or spaces, or an escape: Python's
            return -1, 0.0
        if not (
            0x30 <= c <= 0x39
            or c in (0x2B, 0x2D, 0x2E, 0x5F, 0x65, 0x45)  # + - . _ e E
            or c in (0x69, 0x6E, 0x66, 0x74, 0x79, 0x61, 0x49, 0x4E, 0x46, 0x54, 0x59, 0x41)
        ):
            return 0, 0.0  # a character float() never takes
    return -1, 0.0


@njit(borrows=True, inline="always")
def _number(data: Any, lo: int, hi: int, kind: int) -> tuple[int, float]:
    """``_number`` of ``metrics/trajectory.py`` for the JSON value ``data[lo:hi]``."""
    if kind == _STR:
        return _string_number(data, lo, hi)
    if kind == _NUM:
        end, value = exact_double(data, lo, hi)
        return (1, value) if end == hi else (-1, 0.0)
    return 0, 0.0  # true, false, null, a map or a list: no number


@njit(borrows=True, inline="always")
def _value(data: Any, p: int, end: int, stack: Any) -> tuple[int, int]:
    """The kind of the JSON value at ``p`` and the position after it (-1: not JSON)."""
    kind = _kind(data, p)
    if kind == _STR:
        return kind, skip_string(data, p, end)
    if kind == _NUM:
        return kind, number_end(data, p, end)
    return kind, skip_value(data, p, end, stack)


@njit(borrows=True)
def _equal(e: Any, e_lo: int, e_hi: int, ek: int, a: Any, a_lo: int, a_hi: int, ak: int) -> int:
    """``loose_equal`` of two scalar-or-container JSON values (a container expected is
    left to Python)."""
    if ek in (_MAP, _LIST):
        return _UNKNOWN if ak == ek else _NO
    if ek == ak and ek in (_TRUE, _FALSE, _NULL):
        return _YES
    if ek == _STR and ak == _STR:
        if not (_canonical(e, e_lo, e_hi) and _canonical(a, a_lo, a_hi)):
            return _UNKNOWN
        if e_hi - e_lo != a_hi - a_lo:
            return _NO
        for k in range(e_hi - e_lo):
            if e[e_lo + k] != a[a_lo + k]:
                return _NO
        return _YES
    x_ok, x = _number(e, e_lo, e_hi, ek)
    y_ok, y = _number(a, a_lo, a_hi, ak)
    if x_ok == 0 or y_ok == 0:
        return _NO
    if x_ok < 0 or y_ok < 0:
        return _UNKNOWN
    return _YES if x == y else _NO


@njit(borrows=True)
def _find(
    a: Any, lo: int, hi: int, e: Any, k_lo: int, k_hi: int, stack: Any
) -> tuple[int, int, int]:
    """The value (kind, start, end) of key ``e[k_lo:k_hi]`` in the object ``a[lo:hi]``:
    kind -2 where absent, -1 where the text is not a plain object of unique keys."""
    found, f_lo, f_hi = -2, 0, 0
    p = skip_ws(a, lo + 1, hi)
    if p < hi and a[p] == _CLOSE:
        return found, 0, 0
    while p < hi:
        if a[p] != _QUOTE:
            return -1, 0, 0
        q = skip_string(a, p, hi)
        if q < 0:
            return -1, 0, 0
        same = q - p == k_hi - k_lo
        if same:
            for j in range(q - p):
                if a[p + j] != e[k_lo + j]:
                    same = False
                    break
        if not _canonical(a, p, q):  # a key spelled otherwise may equal the expected one
            return -1, 0, 0
        p = skip_ws(a, q, hi)
        if p >= hi or a[p] != 58:  # ':'
            return -1, 0, 0
        v = skip_ws(a, p + 1, hi)
        if v >= hi:
            return -1, 0, 0
        kind, p = _value(a, v, hi, stack)
        if p < 0:
            return -1, 0, 0
        if same:
            if found != -2:
                return -1, 0, 0  # a repeated key: Python keeps the last
            found, f_lo, f_hi = kind, v, p
        p = skip_ws(a, p, hi)
        if p < hi and a[p] == 44:
            p = skip_ws(a, p + 1, hi)
        elif p < hi and a[p] == _CLOSE:
            return found, f_lo, f_hi
        else:
            return -1, 0, 0
    return -1, 0, 0


@njit(borrows=True)
def _subset(e: Any, e_lo: int, e_hi: int, a: Any, a_lo: int, a_hi: int, stack: Any) -> int:
    """``loose_subset`` of two JSON texts (an empty text is no arguments: ``{}``)."""
    if e_lo == e_hi:
        return _YES
    p = skip_ws(e, e_lo, e_hi)
    if p >= e_hi or e[p] != _OPEN:
        return _UNKNOWN
    p = skip_ws(e, p + 1, e_hi)
    if p < e_hi and e[p] == _CLOSE:
        return _YES
    a_p = skip_ws(a, a_lo, a_hi)
    if a_lo == a_hi:
        return _NO  # expected keys, and no arguments
    if a_p >= a_hi or a[a_p] != _OPEN:
        return _UNKNOWN
    verdict = _YES
    while p < e_hi:
        if e[p] != _QUOTE:
            return _UNKNOWN
        q = skip_string(e, p, e_hi)
        if q < 0 or not _canonical(e, p, q):
            return _UNKNOWN
        k_lo, k_hi = p, q
        p = skip_ws(e, q, e_hi)
        if p >= e_hi or e[p] != 58:
            return _UNKNOWN
        v = skip_ws(e, p + 1, e_hi)
        if v >= e_hi:
            return _UNKNOWN
        ek, p = _value(e, v, e_hi, stack)
        if p < 0:
            return _UNKNOWN
        ak, f_lo, f_hi = _find(a, a_p, a_hi, e, k_lo, k_hi, stack)
        if ak == -1:
            return _UNKNOWN
        if ak == -2:
            return _NO
        one = _equal(e, v, p, ek, a, f_lo, f_hi, ak)
        if one == _NO:
            return _NO
        if one == _UNKNOWN:
            verdict = _UNKNOWN  # a later key may still say no
        p = skip_ws(e, p, e_hi)
        if p < e_hi and e[p] == 44:
            p = skip_ws(e, p + 1, e_hi)
        elif p < e_hi and e[p] == _CLOSE:
            return verdict
        else:
            return _UNKNOWN
    return _UNKNOWN


@njit
def _subsets(e: Any, e_off: Any, e_valid: Any, a: Any, a_off: Any, a_valid: Any, out: Any) -> None:
    stack = np.empty(64, np.int64)
    for i in range(out.size):
        e_lo, e_hi = e_off[i], e_off[i + 1]
        a_lo, a_hi = a_off[i], a_off[i + 1]
        if not e_valid[i]:
            e_hi = e_lo
        if not a_valid[i]:
            a_hi = a_lo
        out[i] = _subset(e, e_lo, e_hi, a, a_lo, a_hi, stack)


def _number_value(value: object) -> float | None:
    """A number given as a JSON number or a string Python's ``float`` reads (finite)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


def loose_equal(expected: object, actual: object) -> bool:
    """Equality where numbers compare by value across types (7 == 7.0 == "7").

    Maps compare as a subset (``loose_subset``), lists item by item.
    """
    if isinstance(expected, dict):
        return isinstance(actual, dict) and loose_subset(expected, actual)
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(expected) == len(actual)
            and all(loose_equal(e, a) for e, a in zip(expected, actual, strict=True))
        )
    if expected == actual and type(expected) is type(actual):
        return True
    if isinstance(expected, str) and isinstance(actual, str):
        return False
    a, b = _number_value(expected), _number_value(actual)
    return a is not None and b is not None and a == b


def loose_subset(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> bool:
    """Every expected key is in ``actual`` with a loosely equal value."""
    return all(key in actual and loose_equal(value, actual[key]) for key, value in expected.items())


def loose_subsets(expected: pl.Series, actual: pl.Series) -> npt.NDArray[np.bool_]:
    """Per pair: whether the ``actual`` arguments (JSON text; null: none) contain the
    ``expected`` ones (null: none expected), as ``loose_subset`` of the parsed maps."""
    n = expected.len()
    verdicts = np.full(n, _UNKNOWN, np.int8)
    if worth_compiling(n, _PYTHON_UP_TO):
        compiling("the tool arguments matcher", _subsets)
        e, e_off, e_valid = text_buffers(expected)
        a, a_off, a_valid = text_buffers(actual)
        _subsets(e, e_off, e_valid, a, a_off, a_valid, verdicts)
    unknown = np.flatnonzero(verdicts == _UNKNOWN)
    if unknown.size:
        index = pl.Series(unknown)
        verdicts[unknown] = judge_pairs(expected.gather(index), actual.gather(index))
    return verdicts.astype(np.bool_)


def judge_pairs(expected: pl.Series, actual: pl.Series) -> npt.NDArray[np.bool_]:
    """``loose_subsets`` by Python's ``loose_subset``, once per distinct pair of texts."""
    pairs = pl.DataFrame({"e": expected, "a": actual})
    distinct = pairs.unique()
    judged = [
        loose_subset(json.loads(e or "{}"), json.loads(a) if a else {})
        for e, a in distinct.iter_rows()
    ]
    table = distinct.with_columns(ok=pl.Series(judged, dtype=pl.Boolean))
    ok = pairs.join(table, on=["e", "a"], how="left", maintain_order="left", nulls_equal=True)
    return ok.get_column("ok").to_numpy()
