"""JSON numbers read and re-spelled by compiled kernels.

:func:`exact_double` and :func:`exact_integer` convert what they can vouch for exactly (and
decline the rest, for a correctly rounded reader to take); :func:`number_end` follows the
grammar at any length; :func:`floats_at` is that correctly rounded reader, for the numbers a
pass left as text; :func:`compact_number` writes a number as Python's JSON encoder writes the
value it parses to.

Examples:
    >>> import numpy as np
    >>> data = np.frombuffer(b"-12.5e1", np.uint8)
    >>> exact_double(data, 0, data.size)
    (7, -125.0)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from evalframe.core._json._text import copy_bytes
from evalframe.core._njit import kernel_int, njit
from evalframe.core._pages import small_pages

__all__ = [
    "compact_number",
    "digits_end",
    "exact_double",
    "exact_integer",
    "float_record",
    "floats_at",
    "number_end",
    "number_ends",
    "written_as_repr",
]

_ONE, _FIFTEEN, _SEVENTEEN = kernel_int(1), kernel_int(15), kernel_int(17)

# Exact doubles 10^0 .. 10^22: a mantissa below 2^53 times or over one of them is one IEEE
# operation on exact operands, so it rounds as a correct decimal reader does (Clinger).
_POW10 = np.array([10.0**e for e in range(23)])
_EXACT_MANTISSA = 2**53


@njit(inline="always")
def digits_end(data: Any, p: int, end: int) -> int:
    """The position after the ASCII digits from ``p``."""
    while p < end and 0x30 <= data[p] <= 0x39:
        p += 1
    return p


@njit(borrows=True)
def exact_double(data: Any, p: int, end: int) -> tuple[int, float]:
    """The JSON number at ``p``: the position after it and its value as Python's reader
    gives it, or position -1 where it is no JSON number or the exact fast path (at most 18
    significant digits, a mantissa under 2^53 and a power of ten up to 10^22) cannot vouch
    for the value."""
    neg = p < end and data[p] == 0x2D
    p += neg
    if p >= end or not 0x30 <= data[p] <= 0x39:
        return -1, 0.0
    if data[p] == 0x30 and p + 1 < end and 0x30 <= data[p + 1] <= 0x39:
        return -1, 0.0  # a leading zero
    m, digits, e10 = 0, 0, 0
    fraction = False
    while p < end:
        c = data[p]
        if c == 0x2E and not fraction:
            if p + 1 >= end or not 0x30 <= data[p + 1] <= 0x39:
                return -1, 0.0
            fraction = True
        elif 0x30 <= c <= 0x39:
            if m > 0 or c != 0x30:
                digits += 1
                if digits > 18:
                    return -1, 0.0
            m = m * 10 + (c - 0x30)
            e10 -= fraction
        else:
            break
        p += 1
    if p < end and (data[p] == 0x65 or data[p] == 0x45):
        p += 1
        sign = 1
        if p < end and (data[p] == 0x2D or data[p] == 0x2B):
            sign = -1 if data[p] == 0x2D else 1
            p += 1
        start = p
        x = 0
        while p < end and 0x30 <= data[p] <= 0x39:
            x = min(x * 10 + (data[p] - 0x30), 10_000)
            p += 1
        if p == start:
            return -1, 0.0
        e10 += sign * x
    if m == 0:
        value = 0.0
    elif m > _EXACT_MANTISSA or e10 < -22 or e10 > 22:
        return -1, 0.0
    elif e10 >= 0:
        value = m * _POW10[e10]
    else:
        value = m / _POW10[-e10]
    return p, -value if neg else value


@njit(borrows=True)
def exact_integer(data: Any, p: int, end: int) -> tuple[int, int]:
    """The JSON integer at ``p`` (no fraction, no exponent, at most 18 digits): the position
    after it and its value, or position -1 for anything else."""
    neg = p < end and data[p] == 0x2D
    p += neg
    start = p
    stop = digits_end(data, p, end)
    if stop == start or stop - start > 18 or (data[start] == 0x30 and stop - start > 1):
        return -1, 0
    if stop < end and (data[stop] == 0x2E or data[stop] == 0x65 or data[stop] == 0x45):
        return -1, 0
    value = 0
    for k in range(start, stop):
        value = value * 10 + (data[k] - 0x30)
    return stop, -value if neg else value


@njit(borrows=True)
def number_end(data: Any, p: int, end: int) -> int:
    """The position after the JSON number at ``p`` (any length, exact grammar), or -1."""
    p += p < end and data[p] == 0x2D
    if p >= end or not 0x30 <= data[p] <= 0x39:
        return -1
    if data[p] == 0x30:
        p += 1
    else:
        p = digits_end(data, p, end)
    if p < end and data[p] == 0x2E:
        start = p + 1
        p = digits_end(data, start, end)
        if p == start:
            return -1
    if p < end and (data[p] == 0x65 or data[p] == 0x45):
        p += 1
        if p < end and (data[p] == 0x2B or data[p] == 0x2D):
            p += 1
        start = p
        p = digits_end(data, p, end)
        if p == start:
            return -1
    return p


@njit
def number_ends(data: Any, starts: Any) -> Any:
    """:func:`number_end` of the number at each of ``starts`` (int64 positions in ``data``)."""
    ends = np.empty(starts.size, np.int64)
    for k in range(starts.size):
        ends[k] = number_end(data, starts[k], data.size)
    return ends


def floats_at(data: Any, starts: Any, ends: Any) -> Any:
    """The JSON numbers ``data[starts[k]:ends[k]]`` as Python's ``float`` reads their texts:
    Polars' cast rounds correctly too, so both give the nearest double (infinity past the
    range, as ``json.loads`` gives for ``1e400``).

    Examples:
        >>> import numpy as np
        >>> data = np.frombuffer(b"[0.30000000000000004, 1e400]", np.uint8)
        >>> floats_at(data, np.array([1, 22]), np.array([20, 27])).tolist()
        [0.30000000000000004, inf]
    """
    import polars as pl

    return _texts_at(data, starts, ends).cast(pl.Float64).to_numpy()


def _texts_at(data: Any, starts: Any, ends: Any) -> Any:
    """The texts ``data[starts[k]:ends[k]]`` as a Polars String Series (views, no copy)."""
    import polars as pl

    from evalframe.core._arrow_text import strings_array

    return pl.Series(strings_array(starts, ends - starts, data, copy=False))


def float_record(floats: int, room: int) -> Any:
    """A ``long`` array for :func:`compact_number`: room to record ``floats`` floats (none
    yet), and ``room`` bytes their Python spellings may take beyond their texts."""
    long = small_pages(2 * floats + 2, np.int64)
    long[0], long[-1] = 0, room
    return long


def written_as_repr(out: Any, long: Any) -> bool:
    """Whether each float :func:`compact_number` laid out from its 16-17 digits (its span in
    ``out`` recorded in ``long``) is what Python's ``repr`` writes for its value; one that is
    not (``0.10000000000000001``, ``%.17g``'s spelling of 0.1) is the exact reader's to
    re-encode.

    Examples:
        >>> import numpy as np
        >>> out = np.frombuffer(b"0.8444218515250481 0.10000000000000001", np.uint8)
        >>> written_as_repr(out, np.array([1, 0, 18, 0]))
        True
        >>> written_as_repr(out, np.array([2, 0, 18, 19, 38, 0]))
        False
    """
    k = int(long[0])
    if not k:
        return True
    spans = long[1 : 2 * k + 1].reshape(k, 2)
    distinct = list(set(_texts_at(out, spans[:, 0], spans[:, 1]).to_list()))
    return all(map(str.__eq__, map(repr, map(float, distinct)), distinct))


@njit(borrows=True)
def _put_digits(out: Any, o: int, m: int, n: int) -> int:
    """Write the ``n`` decimal digits of ``m`` (leading zeros included) at ``out[o]``."""
    for k in range(n - 1, -1, -1):
        out[o + k] = 0x30 + m % 10
        m //= 10
    return o + n


@njit(borrows=True)
def _float_repr(data: Any, p: int, q: int, out: Any, o: int, most: int) -> int:
    """Write at ``out[o:]`` what Python's ``repr`` gives for the float JSON number
    ``data[p:q]``; the end of it, or -1 where that cannot be told here (more than ``most``
    significant digits, or magnitudes near the ends of the double range).

    A number of at most 15 significant digits is the shortest spelling of its double (no
    two such numbers share a double), so its repr has the same digits; only the layout is
    Python's: positional for exponents from -4 to 15, else ``d.ddde+XX``. With ``most`` up
    to 17, the digits are laid out as Python would if they were its repr's, which the
    caller has to check."""
    neg = data[p] == 0x2D
    m, nd, trailing, decpt = 0, 0, 0, 0
    point, started = False, False
    k = p + neg
    while k < q and data[k] != 0x65 and data[k] != 0x45:
        c = data[k]
        if c == 0x2E:
            point = True
        elif not started and c == 0x30:
            decpt -= point
        else:
            started = True
            decpt += not point
            if nd == 17:
                return -1
            m = m * 10 + (c - 0x30)
            nd += 1
            trailing = trailing + 1 if c == 0x30 else 0
        k += 1
    if k < q:
        k += 1
        sign = 1
        if data[k] == 0x2D or data[k] == 0x2B:
            sign = -1 if data[k] == 0x2D else 1
            k += 1
        x = 0
        while k < q:
            x = min(x * 10 + (data[k] - 0x30), 10_000)
            k += 1
        decpt += sign * x
    if neg:
        out[o] = 0x2D
        o += 1
    if not started:
        out[o] = 0x30
        out[o + 1] = 0x2E
        out[o + 2] = 0x30
        return o + 3
    for _ in range(trailing):
        m //= 10
    nd -= trailing
    if nd > most or (most == 15 and (decpt > 300 or decpt < -300)):  # near subnormals
        return -1
    if -4 < decpt <= 16:
        if decpt <= 0:
            out[o] = 0x30
            out[o + 1] = 0x2E
            o += 2
            for _ in range(-decpt):
                out[o] = 0x30
                o += 1
            return _put_digits(out, o, m, nd)
        if decpt >= nd:
            o = _put_digits(out, o, m, nd)
            for _ in range(decpt - nd):
                out[o] = 0x30
                o += 1
            out[o] = 0x2E
            out[o + 1] = 0x30
            return o + 2
        head = m // 10 ** (nd - decpt)
        o = _put_digits(out, o, head, decpt)
        out[o] = 0x2E
        return _put_digits(out, o + 1, m - head * 10 ** (nd - decpt), nd - decpt)
    top = m // 10 ** (nd - 1)
    o = _put_digits(out, o, top, _ONE)
    if nd > 1:
        out[o] = 0x2E
        o = _put_digits(out, o + 1, m - top * 10 ** (nd - 1), nd - 1)
    e = decpt - 1
    out[o] = 0x65
    out[o + 1] = 0x2D if e < 0 else 0x2B
    e = abs(e)
    return _put_digits(out, o + 2, e, 3 if e >= 100 else 2)


@njit(borrows=True)
def compact_number(
    data: Any, p: int, end: int, out: Any, o: int, long: Any = None
) -> tuple[int, int]:
    """The JSON number at ``p`` as Python's JSON encoder writes the value it parses to, or
    (-1, -1) where that cannot be told here.

    A float is written as Python lays out its repr. Where that is longer than its text
    (``1e-07`` for ``1e-7``) it is declined, so that ``out`` need not be larger than the
    input, unless ``long`` grants the room: its last item is how many bytes more than their
    texts the floats may take in all. With ``long`` (int64), a float of 16 or 17 significant
    digits (as most writers spell computed floats) is laid out as Python would if its digits
    were the repr's, and where it went in ``out`` recorded (``long[0]`` counts them, their
    starts and ends follow), for the caller to check with :func:`written_as_repr`; declined
    once full."""
    q = number_end(data, p, end)
    if q < 0:
        return -1, -1
    integer = True
    for k in range(p, q):
        if data[k] == 0x2E or data[k] == 0x65 or data[k] == 0x45:
            integer = False
    if integer:
        if q - p > 4000:  # Python refuses integers of more than 4300 digits
            return -1, -1
        if q - p == 2 and data[p] == 0x2D and data[p + 1] == 0x30:
            out[o] = 0x30  # -0 is the integer 0
            return q, o + 1
        return q, copy_bytes(data, p, q, out, o)
    stop = _float_repr(data, p, q, out, o, _FIFTEEN)
    if long is None:
        if stop < 0 or stop - o > q - p:
            return -1, -1
        return q, stop
    stop = _laid_out(data, p, q, out, o, stop, long)
    if stop < 0:
        return -1, -1
    return q, stop


@njit(borrows=True)
def _laid_out(data: Any, p: int, q: int, out: Any, o: int, stop: int, long: Any) -> int:
    """:func:`compact_number`'s end of the float ``data[p:q]`` with ``long`` (``stop``: where
    its repr of at most 15 digits ended, -1 for none), or -1."""
    k = long[0]
    copied = stop < 0 and 2 * k + 4 <= long.size
    if copied:
        stop = _float_repr(data, p, q, out, o, _SEVENTEEN)
    if stop < 0:
        return -1
    grown = (stop - o) - (q - p)
    if grown > 0:
        if long[long.size - 1] < grown:
            return -1
        long[long.size - 1] -= grown
    if copied:
        long[2 * k + 1] = o
        long[2 * k + 2] = stop
        long[0] = k + 1
    return stop
