"""JSON strings read and written by compiled kernels: decoding, skipping, re-encoding.

:func:`json_string` decodes a string exactly as Python's ``json`` module does, or declines:
it returns -1 where Python fails (a control character, a bad escape, no closing quote) and
where Python would keep a lone surrogate, which no UTF-8 text can hold, so the caller can
leave that text to the exact reader.

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
    "PLAIN",
    "encode_string",
    "hex4",
    "json_string",
    "put_utf8",
    "short_escape",
    "skip_string",
    "unicode_escape",
    "write_string",
]

# bytes a JSON string holds as they are (not '"', '\' or a control character)
PLAIN = np.ones(256, np.bool_)
PLAIN[[*range(32), ord('"'), ord("\\")]] = False
_QUOTE, _BACKSLASH = 34, 92
# How ``json.dumps(..., ensure_ascii=False)`` writes each byte of a string: as it is, as a
# two-character escape (its second character here), or as ``\u00XX`` (control characters).
_SHORT = {0x22: ord('"'), 0x5C: ord("\\"), 0x08: ord("b"), 0x0C: ord("f"), 0x0A: ord("n")}
_SHORT |= {0x0D: ord("r"), 0x09: ord("t")}
_ESCAPED = np.array(
    [_SHORT.get(c, 1 if c < 0x20 else 0) for c in range(256)],
    dtype=np.uint8,
)
_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)


@njit(borrows=True)
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


@njit(borrows=True)
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


@njit(inline="always")
def unicode_escape(data: Any, p: int, end: int) -> tuple[int, int]:
    """The ``\\uXXXX`` escape whose digits start at ``p``, a surrogate pair read whole: the
    position after it and its code point, or (-1, -1) for bad digits and a lone surrogate."""
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
    return p, cp


@njit(borrows=True)
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
        p, cp = unicode_escape(data, p, end)
        if p < 0:
            return -1, -1
        o = put_utf8(out, o, cp)
    return -1, -1


@njit(borrows=True)
def skip_string(data: Any, p: int, end: int) -> int:
    """The position after the JSON string opening at ``p``, or -1 where :func:`json_string`
    declines it."""
    p += 1
    while p < end:
        c = data[p]
        if PLAIN[c]:
            p += 1
            continue
        if c == _QUOTE:
            return p + 1
        if c != _BACKSLASH or p + 1 >= end:
            return -1
        e = data[p + 1]
        p += 2
        if short_escape(e) >= 0:
            continue
        if e != 117:
            return -1
        p = unicode_escape(data, p, end)[0]
        if p < 0:
            return -1
    return -1


@njit(inline="always")
def _put_escaped(out: Any, o: int, b: int) -> int:
    """Write the ASCII character ``b`` as Python's JSON encoder writes it in a string."""
    e = _ESCAPED[b]
    if e == 0:
        out[o] = b
        return o + 1
    out[o] = _BACKSLASH
    if e > 1:
        out[o + 1] = e
        return o + 2
    out[o + 1] = 0x75  # \u00XX, lower-case hex digits
    out[o + 2] = 0x30
    out[o + 3] = 0x30
    out[o + 4] = _HEX[b >> 4]
    out[o + 5] = _HEX[b & 0xF]
    return o + 6


@njit(borrows=True)
def encode_string(data: Any, p: int, end: int, out: Any, o: int) -> tuple[int, int]:
    """Re-encode the JSON string opening at ``p`` into ``out[o:]`` as Python's
    ``json.dumps(..., ensure_ascii=False)`` writes the text it decodes to (quotes included).

    Returns the position after it and the end of the written bytes, or (-1, -1) where
    :func:`json_string` declines. Never longer than the JSON it reads.
    """
    out[o] = _QUOTE
    o += 1
    p += 1
    while p < end:
        c = data[p]
        if PLAIN[c]:
            out[o] = c
            o += 1
            p += 1
            continue
        if c == _QUOTE:
            out[o] = _QUOTE
            return p + 1, o + 1
        if c != _BACKSLASH or p + 1 >= end:
            return -1, -1
        e = data[p + 1]
        p += 2
        b = short_escape(e)
        if b >= 0:
            o = _put_escaped(out, o, b)
            continue
        if e != 117:
            return -1, -1
        p, cp = unicode_escape(data, p, end)
        if p < 0:
            return -1, -1
        o = _put_escaped(out, o, cp) if cp < 0x80 else put_utf8(out, o, cp)
    return -1, -1


@njit(inline="always")
def write_string(src: Any, a: int, b: int, out: Any, pos: int, write: bool) -> int:
    """Write (or, not ``write``, only size) ``src[a:b]`` (UTF-8) at ``out[pos:]`` as
    ``json.dumps(..., ensure_ascii=False)`` writes it, quotes included; the position after it."""
    if write:
        out[pos] = 34
    pos += 1
    for k in range(a, b):
        c = src[k]
        e = _ESCAPED[c]
        if e == 0:
            if write:
                out[pos] = c
            pos += 1
        elif e > 1:
            if write:
                out[pos] = 92
                out[pos + 1] = e
            pos += 2
        else:
            if write:
                out[pos] = 92
                out[pos + 1] = 117  # u
                out[pos + 2] = 48
                out[pos + 3] = 48
                out[pos + 4] = _HEX[c >> 4]
                out[pos + 5] = _HEX[c & 15]
            pos += 6
    if write:
        out[pos] = 34
    return pos + 1
