"""JSON read straight from UTF-8 bytes by compiled kernels: whitespace, strings, object members.

The pieces every compiled JSON reader shares (the saved outputs reader, the retrieval scanner,
the structural metrics' strict scanner). :func:`json_string` decodes a string exactly as
Python's ``json`` module does, or declines: it returns -1 where Python fails (a control
character, a bad escape, no closing quote) and where Python would keep a lone surrogate,
which no UTF-8 text can hold, so the caller can leave that text to the exact reader.

Examples:
    >>> import numpy as np
    >>> data = np.frombuffer(b'"caf\\\\u00e9 \\\\"ok\\\\""', np.uint8)
    >>> out = np.empty(data.size, np.uint8)
    >>> end, n = json_string(data, 0, data.size, out, 0)
    >>> end == data.size, bytes(out[:n]).decode()
    (True, 'café "ok"')
"""

from __future__ import annotations

from typing import Any

import numpy as np

from evalframe.core._njit import njit

__all__ = [
    "JSON_WS",
    "PLAIN",
    "exact_double",
    "exact_integer",
    "hex4",
    "json_string",
    "member_key",
    "next_member",
    "put_utf8",
    "short_escape",
    "skip_ws",
]

# bytes a JSON string holds as they are (not '"', '\' or a control character)
PLAIN = np.ones(256, np.bool_)
PLAIN[[*range(32), ord('"'), ord("\\")]] = False
JSON_WS = np.zeros(256, np.bool_)
JSON_WS[[9, 10, 13, 32]] = True
_QUOTE, _BACKSLASH, _COLON, _COMMA = 34, 92, 58, 44


@njit
def skip_ws(data: Any, p: int, end: int) -> int:
    """The position of the first byte at or after ``p`` that is not JSON whitespace."""
    while p < end and JSON_WS[data[p]]:
        p += 1
    return p


@njit
def put_utf8(out: Any, n: int, cp: int) -> int:
    """Write code point ``cp`` as UTF-8 at ``out[n]``; the position after it."""
    if cp < 0x80:
        out[n] = cp
        return n + 1
    if cp < 0x800:
        out[n] = 0xC0 | (cp >> 6)
        out[n + 1] = 0x80 | (cp & 0x3F)
        return n + 2
    if cp < 0x10000:
        out[n] = 0xE0 | (cp >> 12)
        out[n + 1] = 0x80 | ((cp >> 6) & 0x3F)
        out[n + 2] = 0x80 | (cp & 0x3F)
        return n + 3
    out[n] = 0xF0 | (cp >> 18)
    out[n + 1] = 0x80 | ((cp >> 12) & 0x3F)
    out[n + 2] = 0x80 | ((cp >> 6) & 0x3F)
    out[n + 3] = 0x80 | (cp & 0x3F)
    return n + 4


@njit
def hex4(buf: Any, pos: int, end: int) -> int:
    """The value of four hex digits at ``pos``, or -1."""
    if pos + 4 > end:
        return -1
    v = 0
    for k in range(pos, pos + 4):
        c = buf[k]
        if 0x30 <= c <= 0x39:
            d = c - 0x30
        elif 0x41 <= c <= 0x46:
            d = c - 0x41 + 10
        elif 0x61 <= c <= 0x66:
            d = c - 0x61 + 10
        else:
            return -1
        v = v * 16 + d
    return v


@njit(inline="always")
def short_escape(e: int) -> int:
    """The byte the one-character escape ``\\e`` stands for, or -1 (``\\u`` or invalid)."""
    if e in (_QUOTE, _BACKSLASH, 0x2F):
        return e
    if e == 0x62:
        return 0x08
    if e == 0x66:
        return 0x0C
    if e == 0x6E:
        return 0x0A
    if e == 0x72:
        return 0x0D
    if e == 0x74:
        return 0x09
    return -1


@njit
def json_string(data: Any, p: int, end: int, out: Any, o: int) -> tuple[int, int]:
    """Decode the JSON string opening at ``p`` into ``out[o:]``.

    Returns the position after it and the end of the decoded bytes, or (-1, -1) where
    Python's reader fails (control character, bad escape, no closing quote) or would keep a
    lone surrogate (the exact reader reports those). The decoded text is never longer than
    the JSON that spells it.
    """
    p += 1
    while p < end:
        c = data[p]
        if PLAIN[c]:
            out[o] = c
            o += 1
            p += 1
            continue
        if c == _QUOTE:
            return p + 1, o
        if c != _BACKSLASH or p + 1 >= end:
            return -1, -1
        e = data[p + 1]
        p += 2
        b = short_escape(e)
        if b >= 0:
            out[o] = b
            o += 1
            continue
        if e != 117:
            return -1, -1
        cp = hex4(data, p, end)
        if cp < 0 or 0xDC00 <= cp <= 0xDFFF:
            return -1, -1
        p += 4
        if 0xD800 <= cp <= 0xDBFF:
            if p + 1 >= end or data[p] != _BACKSLASH or data[p + 1] != 117:
                return -1, -1
            low = hex4(data, p + 2, end)
            if not 0xDC00 <= low <= 0xDFFF:
                return -1, -1
            p += 6
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00)
        o = put_utf8(out, o, cp)
    return -1, -1


@njit
def member_key(data: Any, p: int, end: int, scratch: Any) -> tuple[int, int]:
    """Read ``"key" :`` at ``p`` into ``scratch``: the value's position and the key's length,
    or (-1, -1)."""
    if p >= end or data[p] != _QUOTE:
        return -1, -1
    p, k = json_string(data, p, end, scratch, 0)
    if p < 0:
        return -1, -1
    p = skip_ws(data, p, end)
    if p >= end or data[p] != _COLON:
        return -1, -1
    p = skip_ws(data, p + 1, end)
    return (p, k) if p < end else (-1, -1)


@njit
def next_member(data: Any, p: int, end: int, close: int) -> tuple[int, bool]:
    """After a member: (position of the next one, False) after a comma, (position after the
    ``close`` bracket, True) at the end, or (-1, True)."""
    p = skip_ws(data, p, end)
    if p < end and data[p] == _COMMA:
        return skip_ws(data, p + 1, end), False
    if p < end and data[p] == close:
        return p + 1, True
    return -1, True


# Exact doubles 10^0 .. 10^22: a mantissa below 2^53 times or over one of them is one IEEE
# operation on exact operands, so it rounds as a correct decimal reader does (Clinger).
_POW10 = np.array([10.0**e for e in range(23)])
_EXACT_MANTISSA = 2**53


@njit(inline="always")
def _digits(data: Any, p: int, end: int) -> int:
    while p < end and 0x30 <= data[p] <= 0x39:
        p += 1
    return p


@njit
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


@njit
def exact_integer(data: Any, p: int, end: int) -> tuple[int, int]:
    """The JSON integer at ``p`` (no fraction, no exponent, at most 18 digits): the position
    after it and its value, or position -1 for anything else."""
    neg = p < end and data[p] == 0x2D
    p += neg
    start = p
    stop = _digits(data, p, end)
    if stop == start or stop - start > 18 or (data[start] == 0x30 and stop - start > 1):
        return -1, 0
    if stop < end and (data[stop] == 0x2E or data[stop] == 0x65 or data[stop] == 0x45):
        return -1, 0
    value = 0
    for k in range(start, stop):
        value = value * 10 + (data[k] - 0x30)
    return stop, -value if neg else value
