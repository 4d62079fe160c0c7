"""Bytes of JSON text: whitespace, literal words, copies, blank strings, valid UTF-8.

The smallest pieces the compiled JSON readers and writers share (``core/_json/``).

Examples:
    >>> import numpy as np
    >>> data = np.frombuffer(b"  null", np.uint8)
    >>> word_at(data, skip_ws(data, 0, data.size), data.size, NULL) == data.size
    True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from evalframe.core._njit import njit, numba_object

__all__ = [
    "FALSE",
    "JSON_WS",
    "NULL",
    "TRUE",
    "WORD_SLACK",
    "ascii_space",
    "copy_bytes",
    "copy_words",
    "literal_end",
    "skip_space",
    "skip_ws",
    "surely_not_blank",
    "valid_utf8",
    "word_at",
]

JSON_WS = np.zeros(256, np.bool_)
JSON_WS[[9, 10, 13, 32]] = True
TRUE, FALSE, NULL = (np.frombuffer(w, np.uint8) for w in (b"true", b"false", b"null"))


@njit(borrows=True)
def skip_ws(data: Any, p: int, end: int) -> int:
    """The position of the first byte at or after ``p`` that is not JSON whitespace."""
    while p < end and JSON_WS[data[p]]:
        p += 1
    return p


@njit(inline="always")
def skip_space(data: Any, p: int, end: int, newline: bool) -> int:
    """JSON whitespace from ``p``; within a JSONL line (``newline`` False), less the newline."""
    while p < end and (
        data[p] == 0x20 or data[p] == 0x09 or data[p] == 0x0D or (newline and data[p] == 0x0A)
    ):
        p += 1
    return p


@njit(borrows=True)
def copy_bytes(data: Any, lo: int, hi: int, out: Any, o: int) -> int:
    """Copy ``data[lo:hi]`` to ``out[o:]``; the end of the copy. (A loop: a slice assignment
    costs Numba seconds to compile.)"""
    for k in range(hi - lo):
        out[o + k] = data[lo + k]
    return o + hi - lo


def _load8(data: Any, at: int) -> int:
    return int.from_bytes(bytes(data[at : at + 8]).ljust(8, b"\0"), "little")


def _store8(out: Any, at: int, word: int) -> None:
    for j in range(min(8, len(out) - at)):
        out[at + j] = (word >> (8 * j)) & 0xFF


_load = numba_object("evalframe.core._json._unaligned", "load8", _load8)
_store = numba_object("evalframe.core._json._unaligned", "store8", _store8)
WORD_SLACK = 8
"""The bytes :func:`copy_words` may read past ``data[hi]`` and write past its copy's end."""


@njit(inline="always")
def copy_words(data: Any, lo: int, hi: int, out: Any, o: int) -> int:
    """``copy_bytes`` eight bytes at a time (four times faster for the short names and keys
    of details texts), for arrays with ``WORD_SLACK`` bytes after ``hi`` in ``data`` and
    after ``o + hi - lo`` in ``out``: it reads and overwrites up to 7 bytes past the copy,
    which the caller writes next or leaves unused."""
    n = hi - lo
    k = 0
    while k < n:
        _store(out, o + k, _load(data, lo + k))
        k += 8
    return o + n


@njit(inline="always")
def same_bytes(a: Any, a_lo: int, b: Any, b_lo: int, n: int) -> bool:
    """Whether ``a[a_lo:a_lo + n]`` and ``b[b_lo:b_lo + n]`` hold the same bytes."""
    for j in range(n):  # noqa: SIM110 - Numba compiles no generator expressions
        if a[a_lo + j] != b[b_lo + j]:
            return False
    return True


@njit(inline="always")
def word_at(data: Any, p: int, end: int, word: Any) -> int:
    """The position after ``word`` (bytes) when it is spelled at ``p``, else -1."""
    if p + word.size > end:
        return -1
    for k in range(word.size):
        if data[p + k] != word[k]:
            return -1
    return p + int(word.size)


@njit(inline="always")
def literal_end(data: Any, p: int, end: int) -> int:
    """The position after ``true``, ``false`` or ``null`` at ``p`` (the one its first byte
    names; ``data[p]`` is one of ``t``, ``f``, ``n``), else -1."""
    c = data[p]
    return word_at(data, p, end, TRUE if c == 0x74 else FALSE if c == 0x66 else NULL)


@njit(inline="always")
def ascii_space(c: int) -> bool:
    """ASCII whitespace as ``str.strip()`` sees it."""
    return c == 0x20 or 0x09 <= c <= 0x0D or 0x1C <= c <= 0x1F


@njit(borrows=True)
def surely_not_blank(text: Any, lo: int, hi: int) -> bool:
    """Whether the UTF-8 text ``text[lo:hi]`` holds a character Python's ``str.strip()``
    keeps: a byte that is ASCII and not whitespace, or that leads a character no Unicode
    space starts with (spaces begin with 0xC2, 0xE1, 0xE2 or 0xE3). False also for texts
    it cannot tell, such as one of only no-break spaces."""
    for k in range(lo, hi):
        b = text[k]
        if b < 0x80:
            if not ascii_space(b):
                return True
        elif b >= 0xC0 and b not in (0xC2, 0xE1, 0xE2, 0xE3):
            return True
    return False


def valid_utf8(data: Any) -> bool:
    """Whether ``data`` (bytes, or a uint8 array) is valid UTF-8, as ``bytes.decode`` judges
    it, checked by Arrow without building a string (the exact readers name the first bad
    byte). Text a kernel decodes from valid bytes is valid: escapes decode to whole
    characters, and a lone surrogate is declined."""
    import pyarrow as pa

    raw = np.frombuffer(data, np.uint8)
    whole = pa.LargeStringArray.from_buffers(
        1, pa.py_buffer(np.array([0, raw.size], np.int64)), pa.py_buffer(raw)
    )
    try:
        whole.validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True
