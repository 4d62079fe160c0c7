"""The compiled walk of ``metadata.trajectory`` texts behind ``decode_expectations``.

One pass over the texts writes each text's fields straight into the arrays its Arrow columns
are made of (``core/_expectations_compiled.py`` hands them over): per text a flags word, the
two counts, the skipped specs and the lists' ends; per string a 16-byte Arrow view. A view
holds a string of up to 12 bytes in place; a longer one points into ``out``, the views' one
data buffer, where it is copied (decoded, where its JSON spells escapes), like the compact
arguments: the columns keep no reference to the texts. Member names are matched on their raw
bytes (by length and first byte, then a word at a time), decoded first only when they spell
an escape; string ends are found eight bytes at a time.

The arrays are sized by the caller. When a text would overflow one (``FULL``), the pass
undoes that text and returns its index, for the caller to grow the arrays and go on from it;
a text it cannot vouch for is undone too, and its flags say so.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np

from evalframe.core._json._numbers import exact_integer
from evalframe.core._json._strings import PLAIN, json_string
from evalframe.core._json._text import (
    NULL,
    ascii_space,
    copy_bytes,
    skip_ws,
    surely_not_blank,
    word_at,
)
from evalframe.core._json._values import (
    compact_value,
    flat_object,
    name_table,
    next_member,
    skip_value,
)
from evalframe.core._njit import kernel_int, njit, numba_object

__all__ = [
    "COLUMNS",
    "COUNTERS",
    "EXACT",
    "FULL",
    "LIST_FIELDS",
    "LONGEST",
    "OUT",
    "SLACK",
    "walk",
]

LIST_FIELDS: Final = ("tools", "forbidden_tools", "order", "expected_tools", "requires_approval")
_WORDS = (
    *LIST_FIELDS, "max_steps", "optimal_steps", "tool_arguments", "goal",  # a block's (0-8)
    "name", "tool", "arguments", "args",  # an argument spec's (9-12)
    "trajectory",  # the metadata's (13)
)  # fmt: skip
_NAMES, _NAME_OFF = name_table(_WORDS)
# The index of the name of each length (below 32) and first byte (ASCII): no two share both.
_BY_SHAPE = np.full((32, 128), -1, np.int64)
for _i, _w in enumerate(_WORDS):
    assert _BY_SHAPE[len(_w), ord(_w[0])] < 0
    _BY_SHAPE[len(_w), ord(_w[0])] = _i
_NAME_WORDS = np.array(
    [np.frombuffer(w.encode().ljust(24, b"\0"), "<u8") for w in _WORDS], np.uint64
)  # each name's bytes as three words (zeros past its end)
_int = kernel_int  # constants kernels pass on: NumPy integers, not literals
_BLOCK_KEYS, _SPEC_KEYS, _META_KEYS, _END_KEYS = _int(0), _int(9), _int(13), _int(14)
_MAX_STEPS, _OPTIMAL, _TOOL_ARGUMENTS, _GOAL = 5, 6, 7, 8
_SINGLE = np.array([True, True, False, False, True])  # a string stands for a one-item list

COLUMNS: Final = 7
"""String item columns: the five name lists' (0-4), the specs' names (5) and arguments (6)."""
# Counters (int64): items per column 0-5 (the specs' two columns share 5), ``out``'s end,
# the overflow mark, the block's fields seen (a bit each), the text's skipped specs.
OUT: Final = _int(6)
FULL: Final = _int(7)
_SEEN, _SKIPPED = _int(8), _int(9)
COUNTERS: Final = 10
EXACT: Final = 1
"""Flags bit 0: the text was read exactly; bit ``1 + f``: block field ``f`` was present."""
_QUOTE, _COLON, _OPEN, _CLOSE, _LIST, _LIST_END, _BACKSLASH = 34, 58, 123, 125, 91, 93, 92
_COMMA = 44
_N = 0x6E  # the first byte of null
_INLINE = 12
SLACK: Final = 16
"""Bytes ``out`` needs beyond what the texts write to it (a view reads whole words)."""
LONGEST: Final = 2**31 - 64
"""The longest text read (a view names its place in ``out`` with an int32); longer ones are
left to the caller."""
# a view's word masked to its first k bytes
_MASK = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [2**64 - 1], np.uint64)
_EMPTY_MAP = np.uint64(2 | (0x7D7B << 32))  # the view of "{}"
_load = numba_object("evalframe.core._json._unaligned", "load8")
_trailing_zeros = numba_object("numba.cpython.unsafe.numbers", "trailing_zeros")
_ONES, _HIGH = np.uint64(0x0101010101010101), np.uint64(0x8080808080808080)
_QUOTES, _BACKSLASHES = np.uint64(0x2222222222222222), np.uint64(0x5C5C5C5C5C5C5C5C)
_SPACES = np.uint64(0x2020202020202020)


@njit(borrows=True, inline="always")
def _plain_end(data: Any, q: int, end: int) -> int:
    """The position of the first quote, backslash or control character at or after ``q``
    (``end`` if none), eight bytes at a time: per byte, a borrow leaves the high bit set
    where it matched; a byte above a match may be marked too, never one below it."""
    while q + 8 <= end:
        w = _load(data, q)
        x, y = w ^ _QUOTES, w ^ _BACKSLASHES
        marks = ((x - _ONES) & ~x | (y - _ONES) & ~y | (w - _SPACES) & ~w) & _HIGH
        if marks:
            return q + int(np.int64(_trailing_zeros(marks)) >> 3)
        q += 8
    while q < end and PLAIN[data[q]]:
        q += 1
    return q


@njit(borrows=True, inline="always")
def _write_view(views: Any, i: int, src: Any, lo: int, n: int) -> None:
    """Write Arrow view ``i`` (two uint64 words in ``views``) of the string ``src[lo:lo+n]``,
    which lies at ``lo`` in the array's one data buffer when it is too long to hold in
    place. Reads whole words: ``src`` holds ``SLACK`` bytes from ``lo`` on (the masks drop
    those past the string)."""
    head = _load(src, lo) & _MASK[min(n, 4)]
    views[2 * i] = np.uint64(n) | (head << np.uint64(32))
    if n <= _INLINE:
        views[2 * i + 1] = _load(src, lo + 4) & _MASK[max(n - 4, 0)]
    else:
        views[2 * i + 1] = np.uint64(lo) << np.uint64(32)  # buffer 0


@njit(borrows=True, inline="always")
def _put(views: Any, i: int, data: Any, out: Any, buffer: int, lo: int, n: int, c: Any) -> None:
    """:func:`_write_view` of a string :func:`_string` found in the texts (``buffer`` 0) or
    in ``out``; one too long to hold in place (or too near the texts' end to read whole
    words) is copied to ``out`` first."""
    if buffer:
        _write_view(views, i, out, lo, n)
    elif n <= _INLINE and lo + SLACK <= data.size:
        _write_view(views, i, data, lo, n)
    else:  # kept out of place, or at the very end of the texts
        o = c[OUT]
        c[OUT] = copy_bytes(data, lo, lo + n, out, o)
        _write_view(views, i, out, o, n)


@njit(borrows=True, inline="always")
def _known(buf: Any, lo: int, n: int, first: int, stop: int) -> int:
    """The index among names ``first`` to ``stop`` of the name ``buf[lo:lo+n]``, or -1."""
    if n >= 32 or n == 0 or buf[lo] >= 128:
        return -1
    i = _BY_SHAPE[n, buf[lo]]
    if i < first or i >= stop:
        return -1
    if lo + 24 <= buf.size:  # a word at a time (no name is longer than 24 bytes)
        for j in range(0, n, 8):
            if _load(buf, lo + j) & _MASK[min(n - j, 8)] != _NAME_WORDS[i, j >> 3]:
                return -1
        return int(i)
    a = _NAME_OFF[i]
    for j in range(1, n):
        if buf[lo + j] != _NAMES[a + j]:
            return -1
    return int(i)


@njit(borrows=True, inline="always")
def _key(data: Any, p: int, end: int, scratch: Any, first: int, stop: int) -> tuple[int, int]:
    """``"key" :`` at ``p``: the value's position and the key's index among names ``first``
    to ``stop`` (-1: another name), or (-1, -1) for what is no member."""
    if p >= end or data[p] != _QUOTE:
        return -1, -1
    q = _plain_end(data, p + 1, end)
    if q < end and data[q] == _QUOTE:
        which = _known(data, p + 1, q - p - 1, first, stop)
        q += 1
    else:  # an escape (or what json_string declines): the name it decodes to
        q, n = json_string(data, p, end, scratch, 0)
        if q < 0:
            return -1, -1
        which = _known(scratch, 0, n, first, stop)
    q = skip_ws(data, q, end)
    if q >= end or data[q] != _COLON:
        return -1, -1
    q = skip_ws(data, q + 1, end)
    return (q, which) if q < end else (-1, -1)


@njit(borrows=True, inline="always")
def _string(data: Any, p: int, end: int, out: Any, c: Any) -> tuple[int, int, int, int]:
    """The JSON string at ``p``: the position after it (-1: declined) and where its text
    lies: buffer (0 the texts, 1 ``out``, where one spelling escapes is decoded), start and
    length."""
    q = _plain_end(data, p + 1, end)
    if q < end and data[q] == _QUOTE:
        return q + 1, 0, p + 1, q - p - 1
    o = c[OUT]
    q, stop = json_string(data, p, end, out, o)
    if q < 0:
        return -1, 0, 0, 0
    c[OUT] = stop
    return q, 1, o, stop - o


@njit(borrows=True, inline="always")
def _add(
    items: Any, col: int, c: Any, k: int, data: Any, out: Any, buffer: int, lo: int, n: int
) -> bool:
    """Write item ``k`` of string column ``col``; False (and ``FULL`` marked) without room."""
    if 2 * k + 2 > items.shape[1]:
        c[FULL] = 1
        return False
    _put(items[col], k, data, out, buffer, lo, n, c)
    return True


@njit(borrows=True)
def _one_name(data: Any, p: int, end: int, items: Any, out: Any, c: Any, f: int) -> int:
    """Name list ``f`` written as one string, where that stands for a one-item list."""
    if data[p] != _QUOTE or not _SINGLE[f] or p + 1 >= end:
        return -1
    if data[p + 1] in (_OPEN, _LIST, _BACKSLASH):
        return -1  # a text the path lookups read as JSON: theirs
    k = c[f]
    p, buffer, lo, n = _string(data, p, end, out, c)
    if p < 0 or not _add(items, f, c, k, data, out, buffer, lo, n):
        return -1
    c[f] = k + 1
    return p


@njit(borrows=True)
def _integer(data: Any, p: int, end: int, counts: Any, which: int, d: int) -> int:
    """A count: a plain integer of at most 18 digits (``optimal_steps`` not negative)."""
    q, value = exact_integer(data, p, end)  # where it ends, the number does (no . e E)
    if q < 0 or (which == _OPTIMAL and value < 0):
        return -1
    counts[which - _MAX_STEPS, d] = value
    return q


@njit(borrows=True, inline="always")
def _copy(data: Any, lo: int, hi: int, out: Any, o: int) -> int:
    """``copy_bytes`` inlined: a call costs more than copying a short name."""
    for k in range(hi - lo):
        out[o + k] = data[lo + k]
    return o + hi - lo


@njit(borrows=True)
def _long_integer(out: Any, lo: int, hi: int) -> bool:
    """Whether compact JSON ``out[lo:hi]`` holds an integer of more than 18 digits (outside
    strings), which the path lookups would turn into a float."""
    run, inside, k = 0, False, lo
    while k < hi:
        ch = out[k]
        if inside:
            if ch == _BACKSLASH:  # skip the escaped character
                k += 1
            elif ch == _QUOTE:
                inside = False
        elif ch == _QUOTE:
            inside = True
            run = 0
        elif 0x30 <= ch <= 0x39:
            run += 1
            if run > 18:
                return True
        else:
            run = 0
        k += 1
    return False


@njit(borrows=True)
def _blank(text: Any, lo: int, hi: int) -> int:
    """1 where ``text[lo:hi]`` is surely not blank, 0 where it is all ASCII space, -1 where
    the compiled pass cannot tell (Unicode spaces, perhaps)."""
    if surely_not_blank(text, lo, hi):
        return 1
    for k in range(lo, hi):
        if not ascii_space(text[k]):
            return -1
    return 0


@njit(borrows=True)
def _spec(
    data: Any, p: int, end: int, views: Any, i: int, out: Any, c: Any, b: Any
) -> tuple[int, bool]:
    """An argument spec (``{name|tool, arguments|args}``) at ``p``, written (when usable) as
    views ``i`` of ``views[0]`` (name) and ``views[1]`` (arguments, compact): the position
    after it and whether it is usable; -1 for one the compiled pass cannot judge."""
    stack, keys, scratch = b
    start = c[OUT]
    # each spelling's text: buffer, start, length (-1 absent or null, -2 of the wrong kind)
    name_b, name, name_len, tool_b, tool, tool_len = 0, 0, -1, 0, 0, -1
    args, args_len, alt, alt_len = 0, -1, 0, -1
    seen = 0
    p = skip_ws(data, p + 1, end)
    done = p < end and data[p] == _CLOSE
    p += done
    while not done:
        p, which = _key(data, p, end, scratch, _SPEC_KEYS, _META_KEYS)
        if p < 0:
            return -1, False
        if which >= 0:
            if seen & (1 << (which - _SPEC_KEYS)):
                return -1, False
            seen |= 1 << (which - _SPEC_KEYS)
        ch = data[p]
        if which < 0:
            p = skip_value(data, p, end, stack[:64])
        elif ch == _N:  # null: as if absent
            p = word_at(data, p, end, NULL)
        elif which <= _SPEC_KEYS + 1:  # name, tool: a string, or anything (unusable)
            if ch == _QUOTE:
                p, buffer, lo, n = _string(data, p, end, out, c)
                if which == _SPEC_KEYS:
                    name_b, name, name_len = buffer, lo, n
                else:
                    tool_b, tool, tool_len = buffer, lo, n
            else:
                p = skip_value(data, p, end, stack[:64])
                if which == _SPEC_KEYS:
                    name_len = -2
                else:
                    tool_len = -2
        elif ch == _OPEN:  # arguments, args: a map
            o = c[OUT]
            q, stop = flat_object(data, p, end, out, o, keys)
            if q < 0:
                q, stop = compact_value(data, p, end, out, o, stack, keys)
            p = q
            if p < 0:
                return -1, False
            c[OUT] = stop
            if stop - o > 18 and _long_integer(out, o, stop):
                return -1, False
            if which == _SPEC_KEYS + 2:
                args, args_len = o, stop - o
            else:
                alt, alt_len = o, stop - o
        else:
            p = skip_value(data, p, end, stack[:64])
            if which == _SPEC_KEYS + 2:
                args_len = -2  # not a map
            else:
                alt_len = -2
        if p < 0:
            return -1, False
        p, done = next_member(data, p, end, _CLOSE)
        if p < 0:
            return -1, False
    if name_len == -1:  # the first spelling that is not null
        name_b, name, name_len = tool_b, tool, tool_len
    if args_len == -1:
        args, args_len = alt, alt_len
    if name_len < 0 or args_len == -2:
        c[OUT] = start  # unusable: nothing points into what it wrote
        return p, False
    blank = _blank(out, name, name + name_len) if name_b else _blank(data, name, name + name_len)
    if blank < 0:
        return -1, False
    if blank == 0:
        c[OUT] = start
        return p, False
    if 2 * i + 2 > views.shape[1]:
        c[FULL] = 1
        return -1, False
    if (name_b == 0 or name_len <= _INLINE) and args_len <= _INLINE:
        c[OUT] = start  # the views hold what the spec wrote in place
    if args_len < 0:  # no arguments: an empty map
        views[1, 2 * i] = _EMPTY_MAP
        views[1, 2 * i + 1] = 0
    else:
        _write_view(views[1], i, out, args, args_len)
    _put(views[0], i, data, out, name_b, name, name_len, c)
    return p, True


@njit(borrows=True)
def _specs(data: Any, p: int, end: int, items: Any, out: Any, c: Any, b: Any) -> int:
    """``tool_arguments``: a list of specs; entries that are not usable are skipped."""
    if data[p] != _LIST:
        return -1
    k, skipped = c[5], 0
    p = skip_ws(data, p + 1, end)
    done = p < end and data[p] == _LIST_END
    p += done
    while not done:
        if p >= end:
            return -1
        if data[p] == _OPEN:
            p, usable = _spec(data, p, end, items[5:], k, out, c, b)
            k += usable
            skipped += not usable
        else:
            p = skip_value(data, p, end, b[0][:64])
            skipped += 1
        if p < 0:
            return -1
        p, done = next_member(data, p, end, _LIST_END)
        if p < 0:
            return -1
    c[5] = k
    c[_SKIPPED] = skipped
    return p


@njit(borrows=True)
def _goal(data: Any, p: int, end: int, goal: Any, d: int, out: Any, c: Any, b: Any) -> int:
    """The goal: a tool name (not one the lookups read as JSON) or a usable spec."""
    if data[p] == _QUOTE:
        if p + 1 >= end or data[p + 1] in (_OPEN, _LIST, _BACKSLASH):
            return -1
        p, buffer, lo, n = _string(data, p, end, out, c)
        if p < 0:
            return -1
        if buffer:
            if not surely_not_blank(out, lo, lo + n):
                return -1
        elif not surely_not_blank(data, lo, lo + n):
            return -1
        _put(goal[0], d, data, out, buffer, lo, n, c)
        goal[1, 2 * d] = _EMPTY_MAP
        goal[1, 2 * d + 1] = 0
        return p
    if data[p] == _OPEN:
        p, usable = _spec(data, p, end, goal, d, out, c, b)
        return p if usable else -1  # a problem: the path lookups' message
    return -1


@njit(borrows=True)
def _block(
    data: Any, p: int, end: int, d: int, counts: Any, items: Any, goal: Any, out: Any, c: Any,
    b: Any,
) -> int:  # fmt: skip
    """A ``trajectory`` block at ``p`` (an object) as text ``d``'s fields."""
    if data[p] != _OPEN:
        return -1
    seen = 0
    p = skip_ws(data, p + 1, end)
    done = p < end and data[p] == _CLOSE
    p += done
    while not done:
        p, which = _key(data, p, end, b[2], _BLOCK_KEYS, _SPEC_KEYS)
        if p < 0:
            return -1
        if which < 0:
            p = skip_value(data, p, end, b[0][:64])
        else:
            if seen & (1 << which) or data[p] == _N:
                return -1  # repeated, or null: the path lookups' reading
            seen |= 1 << which
            if which < _MAX_STEPS and data[p] == _LIST:  # a name list, read here
                k = c[which]
                p = skip_ws(data, p + 1, end)
                done = p < end and data[p] == _LIST_END
                p += done
                while not done:
                    if p >= end or data[p] != _QUOTE:
                        return -1
                    p, buffer, lo, n = _string(data, p, end, out, c)
                    if p < 0 or not _add(items, which, c, k, data, out, buffer, lo, n):
                        return -1
                    k += 1
                    p, done = next_member(data, p, end, _LIST_END)
                    if p < 0:
                        return -1
                c[which] = k
            elif which < _MAX_STEPS:
                p = _one_name(data, p, end, items, out, c, which)
            elif which <= _OPTIMAL:
                p = _integer(data, p, end, counts, which, d)
            elif which == _TOOL_ARGUMENTS:
                p = _specs(data, p, end, items, out, c, b)
            else:
                p = _goal(data, p, end, goal, d, out, c, b)
        if p < 0:
            return -1
        p, done = next_member(data, p, end, _CLOSE)
        if p < 0:
            return -1
    c[_SEEN] = seen
    return p


@njit(borrows=True)
def _text(
    data: Any, p: int, end: int, d: int, counts: Any, items: Any, goal: Any, out: Any, c: Any,
    b: Any,
) -> bool:  # fmt: skip
    """Metadata text ``d`` (``data[p:end]``): an object whose ``trajectory`` it reads."""
    p = skip_ws(data, p, end)
    if p >= end or data[p] != _OPEN:
        return False
    seen = False
    p = skip_ws(data, p + 1, end)
    done = p < end and data[p] == _CLOSE
    p += done
    while not done:
        p, which = _key(data, p, end, b[2], _META_KEYS, _END_KEYS)
        if p < 0:
            return False
        if which >= 0:
            if seen:
                return False
            seen = True
            p = _block(data, p, end, d, counts, items, goal, out, c, b)
        else:
            p = skip_value(data, p, end, b[0][:64])
        if p < 0:
            return False
        p, done = next_member(data, p, end, _CLOSE)
        if p < 0:
            return False
    return skip_ws(data, p, end) == end


@njit(borrows=True)
def walk(
    data: Any, offsets: Any, first: int, flags: Any, counts: Any, skipped: Any, ends: Any,
    goal: Any, items: Any, out: Any, c: Any, b: Any,
) -> int:  # fmt: skip
    """Read texts ``first`` onwards (``data[offsets[d]:offsets[d + 1]]``) into the arrays:
    ``flags`` (uint16 per text), ``counts`` (int64, max_steps and optimal_steps per text),
    ``skipped`` (int64 per text), ``ends`` (int64, the five lists' and the specs' ends, one
    more than texts), ``goal`` (the goal's name and arguments views, uint64, two words per
    text), ``items`` (the string columns' views, uint64), ``out`` (bytes the views may point
    into), ``c`` (the counters) and ``b`` (scratch: a stack, keys, a decoded name). Returns
    the text where an array lacked room (``c[FULL]`` set, that text undone), or the number of
    texts."""
    n = int(offsets.size - 1)
    for d in range(first, n):
        lo, hi = offsets[d], offsets[d + 1]
        if hi - lo > LONGEST:
            lo = hi  # no object: inexact
        elif c[OUT] + (hi - lo) + SLACK > out.size:  # a text writes at most its own length
            c[FULL] = 1
            return d
        before0, before1, before2, before3 = c[0], c[1], c[2], c[3]
        before4, before5, before_out = c[4], c[5], c[OUT]
        c[_SEEN] = 0
        c[_SKIPPED] = 0
        counts[0, d] = 0
        counts[1, d] = 0
        goal[0, 2 * d] = 0  # an empty string: a struct's child is valid under its null
        goal[0, 2 * d + 1] = 0
        goal[1, 2 * d] = 0
        goal[1, 2 * d + 1] = 0
        exact = _text(data, lo, hi, d, counts, items, goal, out, c, b)
        if not exact:  # undo: the text reads as having nothing
            c[0], c[1], c[2], c[3] = before0, before1, before2, before3
            c[4], c[5], c[OUT] = before4, before5, before_out
            c[_SEEN] = 0
            if c[FULL]:
                return d
        flags[d] = exact | (c[_SEEN] << 1)
        skipped[d] = c[_SKIPPED]
        for f in range(6):
            ends[f, d + 1] = c[f]
    return n
