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

from evalframe.core._njit import kernel_int, njit

__all__ = [
    "JSON_WS",
    "PLAIN",
    "compact_value",
    "copy_bytes",
    "encode_string",
    "exact_double",
    "exact_integer",
    "hex4",
    "json_string",
    "member_key",
    "next_member",
    "number_end",
    "put_utf8",
    "short_escape",
    "skip_string",
    "skip_value",
    "skip_ws",
    "surely_not_blank",
    "word_at",
]

# bytes a JSON string holds as they are (not '"', '\' or a control character)
PLAIN = np.ones(256, np.bool_)
PLAIN[[*range(32), ord('"'), ord("\\")]] = False
JSON_WS = np.zeros(256, np.bool_)
JSON_WS[[9, 10, 13, 32]] = True
_QUOTE, _BACKSLASH, _COLON, _COMMA = 34, 92, 58, 44
_ZERO, _ONE = kernel_int(0), kernel_int(1)


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
    p, k = json_string(data, p, end, scratch, _ZERO)
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


@njit
def number_end(data: Any, p: int, end: int) -> int:
    """The position after the JSON number at ``p`` (any length, exact grammar), or -1."""
    p += p < end and data[p] == 0x2D
    if p >= end or not 0x30 <= data[p] <= 0x39:
        return -1
    if data[p] == 0x30:
        p += 1
    else:
        p = _digits(data, p, end)
    if p < end and data[p] == 0x2E:
        start = p + 1
        p = _digits(data, start, end)
        if p == start:
            return -1
    if p < end and (data[p] == 0x65 or data[p] == 0x45):
        p += 1
        if p < end and (data[p] == 0x2B or data[p] == 0x2D):
            p += 1
        start = p
        p = _digits(data, p, end)
        if p == start:
            return -1
    return p


@njit
def copy_bytes(data: Any, lo: int, hi: int, out: Any, o: int) -> int:
    """Copy ``data[lo:hi]`` to ``out[o:]``; the end of the copy. (A loop: a slice assignment
    costs Numba seconds to compile.)"""
    for k in range(hi - lo):
        out[o + k] = data[lo + k]
    return o + hi - lo


@njit(inline="always")
def word_at(data: Any, p: int, end: int, word: Any) -> int:
    """The position after ``word`` (bytes) when it is spelled at ``p``, else -1."""
    if p + word.size > end:
        return -1
    for k in range(word.size):
        if data[p + k] != word[k]:
            return -1
    return p + int(word.size)


_TRUE, _FALSE, _NULL = (np.frombuffer(w, np.uint8) for w in (b"true", b"false", b"null"))


@njit
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
        cp = hex4(data, p, end)
        if cp < 0 or 0xDC00 <= cp <= 0xDFFF:
            return -1
        p += 4
        if 0xD800 <= cp <= 0xDBFF:
            if p + 1 >= end or data[p] != _BACKSLASH or data[p + 1] != 117:
                return -1
            if not 0xDC00 <= hex4(data, p + 2, end) <= 0xDFFF:
                return -1
            p += 6
    return -1


@njit
def _skip_key(data: Any, p: int, end: int) -> int:
    """After ``"key" :`` at ``p``: the value's position (before any space), or -1."""
    if p >= end or data[p] != _QUOTE:
        return -1
    p = skip_ws(data, skip_string(data, p, end), end)
    if p < 0 or p >= end or data[p] != _COLON:
        return -1
    return p + 1


@njit
def skip_value(data: Any, p: int, end: int, stack: Any) -> int:
    """The position after the JSON value at ``p``, lists and objects nested at most
    ``stack.size`` deep (``stack`` is scratch space), or -1 for anything Python's reader
    refuses and for what compiled readers leave to it: ``NaN`` and ``Infinity``, lone
    surrogates, deeper nesting."""
    depth = 0
    while True:
        p = skip_ws(data, p, end)
        if p >= end:
            return -1
        c = data[p]
        if c in (0x7B, 0x5B):  # '{' or '['; its closing bracket is two bytes on
            p = skip_ws(data, p + 1, end)
            if p < end and data[p] == c + 2:
                p += 1
            else:
                if depth == stack.size:
                    return -1
                stack[depth] = c
                depth += 1
                if c == 0x7B:
                    p = _skip_key(data, p, end)
                    if p < 0:
                        return -1
                continue
        elif c == _QUOTE:
            p = skip_string(data, p, end)
        elif c == 0x74:
            p = word_at(data, p, end, _TRUE)
        elif c == 0x66:
            p = word_at(data, p, end, _FALSE)
        elif c == 0x6E:
            p = word_at(data, p, end, _NULL)
        else:
            p = number_end(data, p, end)
        if p < 0:
            return -1
        while True:  # after a value: the next one in its container, or the container's end
            if depth == 0:
                return p
            p = skip_ws(data, p, end)
            if p >= end:
                return -1
            c = data[p]
            kind = stack[depth - 1]
            if c == _COMMA:
                p += 1
                if kind == 0x7B:
                    p = _skip_key(data, skip_ws(data, p, end), end)
                    if p < 0:
                        return -1
                break
            if c != kind + 2:
                return -1
            p += 1
            depth -= 1


@njit(inline="always")
def _put_escaped(out: Any, o: int, b: int) -> int:
    """Write the ASCII character ``b`` as Python's JSON encoder writes it in a string."""
    if b in (_QUOTE, _BACKSLASH):
        out[o] = _BACKSLASH
        out[o + 1] = b
        return o + 2
    if b >= 0x20:
        out[o] = b
        return o + 1
    out[o] = _BACKSLASH
    short = 0
    if b == 0x08:
        short = 0x62
    elif b == 0x0C:
        short = 0x66
    elif b == 0x0A:
        short = 0x6E
    elif b == 0x0D:
        short = 0x72
    elif b == 0x09:
        short = 0x74
    if short:
        out[o + 1] = short
        return o + 2
    out[o + 1] = 0x75  # \u00XX, lower-case hex digits
    out[o + 2] = 0x30
    out[o + 3] = 0x30
    out[o + 4] = 0x30 + (b >> 4)
    low = b & 0xF
    out[o + 5] = 0x30 + low if low < 10 else 0x61 + low - 10
    return o + 6


@njit
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
        o = _put_escaped(out, o, cp) if cp < 0x80 else put_utf8(out, o, cp)
    return -1, -1


@njit
def _put_digits(out: Any, o: int, m: int, n: int) -> int:
    """Write the ``n`` decimal digits of ``m`` (leading zeros included) at ``out[o]``."""
    for k in range(n - 1, -1, -1):
        out[o + k] = 0x30 + m % 10
        m //= 10
    return o + n


@njit
def _float_repr(data: Any, p: int, q: int, out: Any, o: int) -> int:
    """Write at ``out[o:]`` what Python's ``repr`` gives for the float JSON number
    ``data[p:q]``; the end of it, or -1 where that cannot be told here (more than 15
    significant digits, or magnitudes near the ends of the double range).

    A number of at most 15 significant digits is the shortest spelling of its double (no
    two such numbers share a double), so its repr has the same digits; only the layout is
    Python's: positional for exponents from -4 to 15, else ``d.ddde+XX``."""
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
    if nd > 15 or decpt > 300 or decpt < -300:
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


@njit
def _compact_number(data: Any, p: int, end: int, out: Any, o: int) -> tuple[int, int]:
    """The JSON number at ``p`` as Python's JSON encoder writes the value it parses to, or
    (-1, -1) where that cannot be told here."""
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
    stop = _float_repr(data, p, q, out, o)
    if stop - o != q - p:
        return -1, -1
    for k in range(q - p):
        if out[o + k] != data[p + k]:
            return -1, -1
    return q, stop


@njit
def _compact_key(
    data: Any, p: int, end: int, out: Any, o: int, keys: Any, n: int, first: int
) -> tuple[int, int, int]:
    """Re-encode ``"key":`` at ``p``; -1 for a key its object (keys ``first`` to ``n`` of
    ``keys``) already has. Returns the value's position, the output's end and the keys."""
    if p >= end or data[p] != _QUOTE or 2 * n + 2 > keys.size:
        return -1, -1, n
    start = o
    p, o = encode_string(data, p, end, out, o)
    if p < 0:
        return -1, -1, n
    for k in range(first, n):
        lo, hi = keys[2 * k], keys[2 * k + 1]
        if hi - lo == o - start:
            same = True
            for j in range(hi - lo):
                if out[lo + j] != out[start + j]:
                    same = False
                    break
            if same:  # a repeated key: Python keeps the last value at the first place
                return -1, -1, n
    keys[2 * n] = start
    keys[2 * n + 1] = o
    p = skip_ws(data, p, end)
    if p >= end or data[p] != _COLON:
        return -1, -1, n
    out[o] = _COLON
    return p + 1, o + 1, n + 1


@njit
def compact_value(
    data: Any, p: int, end: int, out: Any, o: int, stack: Any, keys: Any
) -> tuple[int, int]:
    """Re-encode the JSON value at ``p`` into ``out[o:]`` as Python's
    ``json.dumps(json.loads(text), ensure_ascii=False, separators=(",", ":"))`` writes it.

    Returns the position after the value and the end of the written bytes, or (-1, -1)
    where it cannot vouch for that: what :func:`skip_value` declines, an object repeating a
    key, a float whose repr it cannot tell. ``stack`` (int64, two per level of nesting) and
    ``keys`` (int64, two per key of the objects open at once) are scratch space. Never
    longer than the JSON it reads.
    """
    depth, n = _ZERO, _ZERO
    limit = stack.size // 2
    while True:
        p = skip_ws(data, p, end)
        if p >= end:
            return -1, -1
        c = data[p]
        if c in (0x7B, 0x5B):
            out[o] = c
            o += 1
            p = skip_ws(data, p + 1, end)
            if p < end and data[p] == c + 2:
                out[o] = c + 2
                o += 1
                p += 1
            else:
                if depth == limit:
                    return -1, -1
                stack[2 * depth] = c
                stack[2 * depth + 1] = n
                depth += 1
                if c == 0x7B:
                    p, o, n = _compact_key(data, p, end, out, o, keys, n, n)
                    if p < 0:
                        return -1, -1
                continue
        elif c == _QUOTE:
            p, o = encode_string(data, p, end, out, o)
        elif c in (0x74, 0x66, 0x6E):
            word = _TRUE if c == 0x74 else _FALSE if c == 0x66 else _NULL
            q = word_at(data, p, end, word)
            if q < 0:
                return -1, -1
            o = copy_bytes(data, p, q, out, o)
            p = q
        else:
            p, o = _compact_number(data, p, end, out, o)
        if p < 0:
            return -1, -1
        while True:
            if depth == 0:
                return p, o
            p = skip_ws(data, p, end)
            if p >= end:
                return -1, -1
            c = data[p]
            kind = stack[2 * depth - 2]
            if c == _COMMA:
                out[o] = _COMMA
                o += 1
                if kind == 0x7B:
                    first = stack[2 * depth - 1]
                    p, o, n = _compact_key(
                        data, skip_ws(data, p + 1, end), end, out, o, keys, n, first
                    )
                    if p < 0:
                        return -1, -1
                else:
                    p += 1
                break
            if c != kind + 2:
                return -1, -1
            out[o] = c
            o += 1
            p += 1
            depth -= 1
            n = stack[2 * depth + 1]


@njit
def surely_not_blank(text: Any, lo: int, hi: int) -> bool:
    """Whether the UTF-8 text ``text[lo:hi]`` holds a character Python's ``str.strip()``
    keeps: a byte that is ASCII and not whitespace, or that leads a character no Unicode
    space starts with (spaces begin with 0xC2, 0xE1, 0xE2 or 0xE3). False also for texts
    it cannot tell, such as one of only no-break spaces."""
    for k in range(lo, hi):
        b = text[k]
        if b < 0x80:
            if not (b == 0x20 or 0x09 <= b <= 0x0D or 0x1C <= b <= 0x1F):
                return True
        elif b >= 0xC0 and b not in (0xC2, 0xE1, 0xE2, 0xE3):
            return True
    return False
