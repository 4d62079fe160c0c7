"""JSON values and object members walked by compiled kernels: keys, separators, whole
values skipped or re-encoded as Python's compact encoder writes them.

Examples:
    >>> import numpy as np
    >>> data = np.frombuffer(b'{"a": [1, "x"]} tail', np.uint8)
    >>> skip_value(data, 0, data.size, np.empty(8, np.int64))
    15
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from evalframe.core._json._numbers import compact_number, number_end
from evalframe.core._json._strings import PLAIN, encode_string, json_string, skip_string
from evalframe.core._json._text import copy_bytes, literal_end, same_bytes, skip_ws
from evalframe.core._njit import kernel_int, njit

__all__ = [
    "compact_value",
    "flat_object",
    "member_key",
    "name_index",
    "name_table",
    "next_member",
    "skip_value",
]

_QUOTE, _COLON, _COMMA, _OPEN, _CLOSE = 34, 58, 44, 123, 125
_ZERO = kernel_int(0)


@njit(borrows=True)
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


def name_table(words: Sequence[str]) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    """The member names a reader knows, for :func:`name_index`: their UTF-8 bytes end to end
    and ``len(words) + 1`` offsets."""
    names = np.frombuffer("".join(words).encode(), np.uint8)
    return names, np.cumsum([0, *(len(w.encode()) for w in words)]).astype(np.int64)


@njit(borrows=True)
def name_index(key: Any, k: int, names: Any, offsets: Any, lo: int, hi: int) -> int:
    """The index among names ``lo`` to ``hi`` of a :func:`name_table` of the name ``key[:k]``
    spells, or -1."""
    for i in range(lo, hi):
        a, b = offsets[i], offsets[i + 1]
        if b - a == k and same_bytes(key, 0, names, a, k):
            return i
    return -1


@njit(borrows=True)
def next_member(data: Any, p: int, end: int, close: int) -> tuple[int, bool]:
    """After a member: (position of the next one, False) after a comma, (position after the
    ``close`` bracket, True) at the end, or (-1, True)."""
    p = skip_ws(data, p, end)
    if p < end and data[p] == _COMMA:
        return skip_ws(data, p + 1, end), False
    if p < end and data[p] == close:
        return p + 1, True
    return -1, True


@njit(borrows=True)
def _skip_key(data: Any, p: int, end: int) -> int:
    """After ``"key" :`` at ``p``: the value's position (before any space), or -1."""
    if p >= end or data[p] != _QUOTE:
        return -1
    p = skip_ws(data, skip_string(data, p, end), end)
    if p < 0 or p >= end or data[p] != _COLON:
        return -1
    return p + 1


@njit(borrows=True)
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
        elif c in (0x74, 0x66, 0x6E):  # true, false, null
            p = literal_end(data, p, end)
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


@njit(borrows=True)
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
        if hi - lo == o - start and same_bytes(out, lo, out, start, hi - lo):
            return -1, -1, n  # a repeated key: Python keeps the last value at the first place
    keys[2 * n] = start
    keys[2 * n + 1] = o
    p = skip_ws(data, p, end)
    if p >= end or data[p] != _COLON:
        return -1, -1, n
    out[o] = _COLON
    return p + 1, o + 1, n + 1


@njit(borrows=True)
def compact_value(
    data: Any, p: int, end: int, out: Any, o: int, stack: Any, keys: Any, long: Any = None
) -> tuple[int, int]:
    """Re-encode the JSON value at ``p`` into ``out[o:]`` as Python's
    ``json.dumps(json.loads(text), ensure_ascii=False, separators=(",", ":"))`` writes it.

    Returns the position after the value and the end of the written bytes, or (-1, -1)
    where it cannot vouch for that: what :func:`skip_value` declines, an object repeating a
    key, a float whose repr it cannot tell (unless ``long``: see
    :func:`~evalframe.core._json._numbers.compact_number`). ``stack`` (int64, two per level
    of nesting) and ``keys`` (int64, two per key of the objects open at once) are scratch
    space. Never longer than the JSON it reads, but for the room ``long`` grants floats.
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
            q = literal_end(data, p, end)
            if q < 0:
                return -1, -1
            o = copy_bytes(data, p, q, out, o)
            p = q
        else:
            p, o = compact_number(data, p, end, out, o, long)
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


@njit(inline="always")
def _plain_end(data: Any, p: int, end: int) -> int:
    """The position of the first byte at or after ``p`` a JSON string cannot hold as it is
    (a quote, a backslash, a control character), or ``end``."""
    while p < end and PLAIN[data[p]]:
        p += 1
    return p


@njit(borrows=True)
def flat_object(data: Any, p: int, end: int, out: Any, o: int, keys: Any) -> tuple[int, int]:
    """Write the object at ``p`` as Python's compact encoder writes its value, when that is
    its text less the whitespace between tokens: a flat object whose keys and strings need
    no escapes, whose values are strings, integers (not ``-0``), true, false or null, with
    no key twice (what ``json.dumps`` writes for a flat map, with or without spaces).
    Returns the position after it and the end of what it wrote, or (-1, -1) for anything
    else, which :func:`compact_value` then re-encodes (or declines). ``keys`` (int64, two
    per member) is scratch space."""
    n = 0
    out[o] = _OPEN
    o += 1
    p = skip_ws(data, p + 1, end)
    if p < end and data[p] == _CLOSE:
        out[o] = _CLOSE
        return p + 1, o + 1
    while True:
        if p >= end or data[p] != _QUOTE or 2 * n + 2 > keys.size:
            return -1, -1
        lo = p + 1
        p = _plain_end(data, lo, end)
        if p >= end or data[p] != _QUOTE:
            return -1, -1
        for j in range(n):  # a repeated key: Python keeps the last value at the first place
            a, z = keys[2 * j], keys[2 * j + 1]
            if z - a == p - lo and same_bytes(data, a, data, lo, p - lo):
                return -1, -1
        keys[2 * n], keys[2 * n + 1] = lo, p
        n += 1
        o = copy_bytes(data, lo - 1, p + 1, out, o)
        p = skip_ws(data, p + 1, end)
        if p >= end or data[p] != _COLON:
            return -1, -1
        out[o] = _COLON
        o += 1
        p = skip_ws(data, p + 1, end)
        if p >= end:
            return -1, -1
        value = p
        c = data[p]
        if c == _QUOTE:
            p = _plain_end(data, p + 1, end)
            if p >= end or data[p] != _QUOTE:
                return -1, -1
            p += 1
        elif c in (0x74, 0x66, 0x6E):  # true, false, null
            p = literal_end(data, p, end)
        else:  # an integer: -?(0|[1-9][0-9]*), as Python writes it back (-0 is 0)
            q = p + (c == 0x2D)
            if q >= end or not 0x30 <= data[q] <= 0x39 or (c == 0x2D and data[q] == 0x30):
                return -1, -1
            if data[q] == 0x30:
                q += 1
            else:
                while q < end and 0x30 <= data[q] <= 0x39:
                    q += 1
            if q - p > 4000:  # Python refuses integers of more than 4300 digits
                return -1, -1
            p = q
        if p < 0:
            return -1, -1
        o = copy_bytes(data, value, p, out, o)
        p = skip_ws(data, p, end)
        if p >= end:
            return -1, -1
        if data[p] == _CLOSE:
            out[o] = _CLOSE
            return p + 1, o + 1
        if data[p] != _COMMA:
            return -1, -1
        out[o] = _COMMA
        o += 1
        p = skip_ws(data, p + 1, end)
