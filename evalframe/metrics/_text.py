"""Tokenisation as Polars expressions, and exact token-id interning for the NumPy kernels.

The shared tokeniser (eval-harness's) lowercases with full Unicode case mapping and keeps the
maximal runs of Unicode letters and numbers (``\\p{L}\\p{N}``). Everything else separates
tokens: whitespace, punctuation, underscore, apostrophes and combining marks.

Agreement with Python's ``str.lower()`` plus runs of ``c.isalnum()`` was checked over every code
point and on mixed text. The differences are:

* Combining marks (``Mn``/``Mc``) split words in both, so a decomposed ``"e\\u0301cole"`` gives
  ``["e", "cole"]`` while the precomposed ``"école"`` is one token. No NFC normalisation is done
  (as in eval-harness); normalise upstream with ``str.normalize("NFC")`` if your data mixes
  forms.
* Polars' Rust regex uses a newer Unicode version than Python 3.11's ``unicodedata`` (14.0), so
  letters assigned since then (about 9,400 code points, all unassigned in 14.0) are token
  characters here but separators for ``isalnum``; the lowercasing of about 55 of them differs
  for the same reason.
* ``"İ"`` lowercases to ``"i"`` plus a combining dot, so ``"İstanbul"`` gives
  ``["i", "stanbul"]``, in Python and here alike. Final sigma is handled the same in both.

Polars strings are always valid UTF-8, so eval-harness's UTF-8 check belongs to ingestion.

The interning kernels map tokens to dense ``int32`` ids with an open-addressing hash table that
compares the bytes of every candidate, so equal ids mean equal tokens (no hash collisions).
``intern_texts`` tokenises and interns in one pass over the Arrow buffers, because the Polars
expression (``extract_all``) alone costs about 3 µs per 200-character text, more than the
whole LCS. Each row takes the cheapest exact route:

* ASCII, plus non-ASCII separators that stay separators when lowercased (curly quotes, dashes,
  symbols, emoji): scanned as bytes, ``[0-9A-Za-z]`` runs, lowercased as ASCII;
* other characters below U+40000 (accented letters, other scripts): lowercased by Polars, then
  scanned as UTF-8 with a table of which code points are letters or numbers, built once from
  ``TOKEN_PATTERN`` itself so that it follows Polars' Unicode version;
* anything else (plane 14 tags and variation selectors): the ``tokens`` expression.
"""

from __future__ import annotations

import functools
import itertools
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
import polars as pl

from evalframe.core._arrow_text import text_buffers
from evalframe.core._njit import njit, numba_object, worth_compiling

__all__ = [
    "INTERPRETED_UP_TO",
    "TOKEN_PATTERN",
    "Numbering",
    "intern",
    "intern_texts",
    "tokens",
    "utf8_buffers",
]

TOKEN_PATTERN = r"[\p{L}\p{N}]+"
"""Regex (Rust syntax) of one token: a maximal run of Unicode letters and numbers."""

IdArray = npt.NDArray[np.int32]
OffsetArray = npt.NDArray[np.int64]

_F = TypeVar("_F", bound=Callable[..., Any])

trailing_zeros = numba_object("numba.cpython.unsafe.numbers", "trailing_zeros")


def tokens(expr: pl.Expr) -> pl.Expr:
    """Tokenise a String expression into ``list[str]`` with the shared tokeniser.

    Args:
        expr: A String expression.

    Returns:
        A ``List(String)`` expression: the lowercased maximal runs of Unicode letters and
        numbers, ``[]`` for a text without any, null for a null text.

    Examples:
        >>> import polars as pl
        >>> df = pl.DataFrame({"text": ["It's 3.14", "École supérieure", "", None]})
        >>> df.select(tokens(pl.col("text")))["text"].to_list()
        [['it', 's', '3', '14'], ['école', 'supérieure'], [], None]
    """
    return expr.str.to_lowercase().str.extract_all(TOKEN_PATTERN)


# ---------------------------------------------------------------------------------------------
# Interning kernels.
#
# Bytes are read 8 at a time as little-endian words (``_load8``): a token of n bytes is the
# chunks of its words, the last one masked to its remaining bytes. The hash table ``slots``
# holds two uint64 per slot, kept together so that a probe touches one cache line: a tag (the
# first chunk, with the length in its top byte when the token is shorter than 8 bytes) and
# ``id << 32 | length`` (all ones when empty). Equal tag and length decide tokens of up to 8
# bytes exactly; longer ones also compare their other bytes with ``pool``, where id ``i`` owns
# the (lowercased) bytes ``pool[id_start[i]:id_start[i + 1]]``. So equal ids mean equal tokens.
#
# Numba reference-counts arrays (a call and an atomic operation each time) wherever its pruning
# gives up: an array rebound in a loop, a call with different arrays in the branches of an
# ``if``, ``and``/``or`` in a condition, a ``while`` loop left by ``break``. The hot loops here
# and in ``_lcs`` avoid all four, which made them two to five times faster; the helpers are
# plain ``njit`` functions (``inline="always"`` was 2.5 times slower). When the table is full
# the kernels return where they stopped, and ``_Interner.reserve`` grows it before they resume.

_LITTLE = sys.byteorder == "little"  # Arrow's views are read as little-endian words
_EMPTY = np.uint64(0xFFFFFFFFFFFFFFFF)
_LOW32 = np.uint64(0xFFFFFFFF)
_PRIME = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xFF51AFD7ED558CCD)
_MIX2 = np.uint64(0xC4CEB9FE1A85EC53)
_U1 = np.uint64(1)
_U2 = np.uint64(2)
_U7 = np.uint64(7)
_U8 = np.uint64(8)
_U29 = np.uint64(29)
_U32 = np.uint64(32)
_U33 = np.uint64(33)
_U35 = np.uint64(35)
_U56 = np.uint64(56)
_U63 = np.uint64(63)
_HIGH_BITS = np.uint64(0x8080808080808080)
_GE_A = np.uint64((0x80 - ord("A")) * 0x0101010101010101)  # byte + this >= 0x80 iff byte >= 'A'
_GT_Z = np.uint64((0x7F - ord("Z")) * 0x0101010101010101)  # byte + this >= 0x80 iff byte > 'Z'
_GE_0 = np.uint64((0x80 - ord("0")) * 0x0101010101010101)
_GT_9 = np.uint64((0x7F - ord("9")) * 0x0101010101010101)
_GE_LOWER_A = np.uint64((0x80 - ord("a")) * 0x0101010101010101)
_GT_LOWER_Z = np.uint64((0x7F - ord("z")) * 0x0101010101010101)
_LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)
_CASE_BITS = np.uint64(0x2020202020202020)
_GATHER = np.uint64(0x0102040810204080)  # bit 8k -> bit 56 + k: the bytes' flags in one byte
_ALL_BITS = np.uint64(0xFFFFFFFFFFFFFFFF)
_ZERO = np.uint64(0)
_ctz: Any = trailing_zeros  # count trailing zeros, an LLVM intrinsic (typed for mypy)

_ROW_NULL, _ROW_SCAN, _ROW_LOWER, _ROW_REGEX = 0, 1, 2, 3
# _TOKEN_BYTES[kind, byte]: the byte belongs to a token. Raw ASCII rows and lowercased rows:
# [0-9A-Za-z], i.e. \p{L}\p{N} in ASCII (lowercased rows decode their other bytes); rows of
# space-joined tokens: any byte but the space (tokens never contain one).
_TOKEN_BYTES = np.zeros((4, 256), dtype=np.uint8)
for _lo, _hi in ((ord("0"), ord("9")), (ord("A"), ord("Z")), (ord("a"), ord("z"))):
    _TOKEN_BYTES[[_ROW_SCAN, _ROW_LOWER], _lo : _hi + 1] = 1
_TOKEN_BYTES[_ROW_REGEX] = 1
_TOKEN_BYTES[_ROW_REGEX, ord(" ")] = 0
# Byte maps for comparing and storing: ASCII lowercasing for raw ASCII rows, else identity.
_IDENTITY = np.arange(256, dtype=np.uint8)
_ASCII_LOWER = _IDENTITY.copy()
_ASCII_LOWER[ord("A") : ord("Z") + 1] += 32

_ALNUM, _STABLE_SEPARATOR = 1, 2
_EMPTY_CLASSES = np.zeros(0, dtype=np.uint8)
# Planes 0-3 hold every letter and number of Unicode 16 (the last, CJK extension H, ends at
# U+323AF); lowercasing maps a code point below this to code points below it.
_CHAR_TABLE_SIZE = 0x40000
# Tokens up to which ``intern`` numbers them with Polars instead of compiling its kernel.
INTERPRETED_UP_TO = 50_000


@njit
def _load8(words: Any, p: int) -> Any:
    """The 8 bytes at byte offset ``p`` of ``words``, first byte lowest."""
    r = np.uint64(p & 7) * _U8
    # Two shifts for the high part, so that r == 0 never shifts by 64 (undefined in LLVM).
    return (words[p >> 3] >> r) | ((words[(p >> 3) + 1] << _U1) << (_U63 - r))


@njit
def _chunk(words: Any, p: int, n: int, lower: bool) -> Any:
    """The ``min(n, 8)`` bytes at ``p``, zero-padded; ASCII-lowercased if ``lower``.

    Lowercasing sets bit 5 of the bytes in 'A'..'Z' and is only valid on ASCII (bytes < 0x80).
    """
    if n <= 0:
        return np.uint64(0)
    w = _load8(words, p)
    if lower:
        w |= ((w + _GE_A) & ~(w + _GT_Z) & _HIGH_BITS) >> _U2
    return w if n >= 8 else w & ((_U2 << np.uint64(8 * n - 1)) - _U1)


@njit
def _fmix(h: Any) -> Any:
    # murmur3's fmix64: the table index takes the low bits, which the multiply leaves weak.
    h ^= h >> _U33
    h *= _MIX1
    h ^= h >> _U33
    h *= _MIX2
    h ^= h >> _U33
    return h


@njit
def _mix(h: Any, chunk: Any) -> Any:
    return (((h << _U29) | (h >> _U35)) ^ chunk) * _PRIME


@njit
def _key(words: Any, s: int, e: int, lower: bool) -> tuple[Any, Any]:
    """Hash and tag of the token in bytes ``s:e``."""
    n = e - s
    first = _chunk(words, s, n, lower)
    h = (np.uint64(n) ^ first) * _PRIME
    for p in range(s + 8, e, 8):
        h = _mix(h, _chunk(words, p, e - p, lower))
    return _fmix(h), (first | (np.uint64(n) << _U56) if n < 8 else first)


@njit
def _find(
    src: Any,
    s: int,
    e: int,
    bytemap: Any,
    h: Any,
    tag: Any,
    slots: Any,
    id_start: Any,
    pool: Any,
) -> Any:
    """Id of the token if interned, else ``-(slot + 1)`` for the empty slot where it belongs."""
    mask = len(slots) - 1
    pos = np.int64(h & np.uint64(mask))
    n = e - s
    while True:
        meta = slots[pos, 1]
        if meta == _EMPTY:
            return -(pos + 1)
        if slots[pos, 0] == tag and np.int64(meta & _LOW32) == n:
            idx = np.int64(meta >> _U32)
            if n <= 8:
                return idx
            # The tag holds the first 8 bytes. (Comparing bytes is faster here than words.)
            ks = id_start[idx]
            same = True
            for k in range(8, n):
                if bytemap[src[s + k]] != pool[ks + k]:
                    same = False
                    break
            if same:
                return idx
        pos = (pos + 1) & mask


@njit
def _store(
    src: Any,
    s: int,
    e: int,
    bytemap: Any,
    tag: Any,
    slot: int,
    slots: Any,
    id_start: Any,
    pool: Any,
    n_ids: int,
) -> None:
    n = e - s
    slots[slot, 0] = tag
    slots[slot, 1] = (np.uint64(n_ids) << _U32) | np.uint64(n)
    ks = id_start[n_ids]
    for k in range(n):
        pool[ks + k] = bytemap[src[s + k]]
    id_start[n_ids + 1] = ks + n


@njit
def _has_room(
    slots: Any, id_start: Any, pool: Any, n_ids: int, new_ids: int, new_bytes: int
) -> bool:
    # ``&``, not ``and``: short-circuits make Numba reference-count the arrays.
    room = (2 * (n_ids + new_ids) <= len(slots)) & (n_ids + new_ids < len(id_start))
    return bool(room & (id_start[n_ids] + new_bytes <= len(pool)))


@njit
def _rehash(old: Any, slots: Any, id_start: Any, pool: Any) -> None:
    """Move every entry of the table ``old`` into the empty, larger table ``slots``."""
    mask = len(slots) - 1
    for q in range(len(old)):
        meta = old[q, 1]
        if meta == _EMPTY:
            continue
        # ``_key`` of the stored bytes, packed byte by byte (growth is rare).
        ks, n = id_start[np.int64(meta >> _U32)], np.int64(meta & _LOW32)
        h = np.uint64(0)
        for c in range(0, n if n > 0 else 1, 8):
            chunk = np.uint64(0)
            for k in range(c, c + 8 if c + 8 < n else n):
                chunk |= np.uint64(pool[ks + k]) << np.uint64(8 * (k - c))
            h = (np.uint64(n) ^ chunk) * _PRIME if c == 0 else _mix(h, chunk)
        pos = np.int64(_fmix(h) & np.uint64(mask))
        while slots[pos, 1] != _EMPTY:
            pos = (pos + 1) & mask
        slots[pos, 0] = old[q, 0]
        slots[pos, 1] = meta


@njit
def _intern_flat(
    src: Any,
    words: Any,
    tok_off: Any,
    identity: Any,
    slots: Any,
    id_start: Any,
    pool: Any,
    n_ids: int,
    ids: Any,
    t0: int,
) -> tuple[int, int]:
    """Write the ids of the tokens ``tok_off[t]:tok_off[t + 1]`` (bytes), from ``t0`` on.

    Returns the token it stopped at (``len(ids)`` when done) and the new id count.
    """
    for t in range(t0, len(ids)):
        s, e = tok_off[t], tok_off[t + 1]
        h, tag = _key(words, s, e, False)
        found = _find(src, s, e, identity, h, tag, slots, id_start, pool)
        if found < 0:
            if not _has_room(slots, id_start, pool, n_ids, 1, e - s):
                return t, n_ids
            _store(src, s, e, identity, tag, -(found + 1), slots, id_start, pool, n_ids)
            found = n_ids
            n_ids += 1
        ids[t] = found
    return len(ids), n_ids


@njit
def _view_key(w0: Any, w1: Any, n: int) -> tuple[Any, Any]:
    """``_key`` of a string of ``n`` <= 12 bytes held in an Arrow view (words ``w0``,
    ``w1``: the length, then the bytes from the fifth on)."""
    first = (w0 >> _U32) | (w1 << _U32)
    if n < 8:
        first = first & ((_U2 << np.uint64(8 * n - 1)) - _U1) if n > 0 else np.uint64(0)
    h = (np.uint64(n) ^ first) * _PRIME
    if n > 8:
        h = _mix(h, (w1 >> _U32) & ((_U2 << np.uint64(8 * (n - 8) - 1)) - _U1))
    return _fmix(h), (first | (np.uint64(n) << _U56) if n < 8 else first)


@njit
def _intern_views(
    views: Any,
    view_words: Any,
    data: Any,
    data_words: Any,
    bases: Any,
    identity: Any,
    slots: Any,
    id_start: Any,
    pool: Any,
    n_ids: int,
    ids: Any,
    t0: int,
) -> tuple[int, int]:
    """``_intern_flat`` of strings held as Arrow views (16 bytes each: ``views``, and the
    same as words): a string of up to 12 bytes lies in its view, a longer one in data buffer
    ``b`` at ``bases[b]`` of ``data``."""
    for t in range(t0, len(ids)):
        w0, w1 = view_words[2 * t], view_words[2 * t + 1]
        n = int(w0 & _LOW32)
        if n <= 12:
            src, s = views, 16 * t + 4
            h, tag = _view_key(w0, w1, n)
        else:
            src, s = data, int(bases[int(w1 & _LOW32)] + int(w1 >> _U32))
            h, tag = _key(data_words, s, s + n, False)
        found = _find(src, s, s + n, identity, h, tag, slots, id_start, pool)
        if found < 0:
            if not _has_room(slots, id_start, pool, n_ids, 1, n):
                return t, n_ids
            _store(src, s, s + n, identity, tag, -(found + 1), slots, id_start, pool, n_ids)
            found = n_ids
            n_ids += 1
        ids[t] = found
    return len(ids), n_ids


@njit
def _decode(src: Any, k: int) -> tuple[Any, int]:
    """Code point and length of the UTF-8 sequence at ``src[k]`` (Polars strings are valid)."""
    b = np.int64(src[k])
    if b < 0x80:
        return b, 1
    if b < 0xE0:
        cp, size = b & 0x1F, 2
    elif b < 0xF0:
        cp, size = b & 0x0F, 3
    else:
        cp, size = b & 0x07, 4
    for t in range(1, size):
        cp = (cp << 6) | (np.int64(src[k + t]) & 0x3F)
    return cp, size


@njit
def _row_kinds(buf: Any, off: Any, valid: Any, char_class: Any) -> Any:
    """How to tokenise each row: ``_ROW_SCAN``, ``_ROW_LOWER`` or ``_ROW_REGEX`` (or null).

    A row of ASCII and of separators that stay separators when lowercased is scanned as it is;
    a row with other characters, all in ``char_class``, is lowercased by Polars first; a row
    with a character past the table goes through the Polars expression.
    """
    n = len(off) - 1
    kinds = np.empty(n, dtype=np.int8)
    for i in range(n):
        kinds[i] = _ROW_SCAN if valid[i] else _ROW_NULL
        if len(char_class) == 0:  # the column is all ASCII
            continue
        k, e = off[i], off[i + 1]
        while k < e:
            if buf[k] < 0x80:
                k += 1
                continue
            cp, size = _decode(buf, k)
            if cp >= len(char_class):
                kinds[i] = _ROW_REGEX
                break
            if not char_class[cp] & _STABLE_SEPARATOR:
                kinds[i] = _ROW_LOWER
            k += size
    return kinds


@njit
def _alnum_bits(w: Any) -> Any:
    """Bit ``k`` set iff byte ``k`` of the word ``w`` is ``[0-9A-Za-z]`` (bytes >= 0x80: no)."""
    v = w & _LOW7  # seven bits a byte: adding a constant below 0x80 carries into no neighbour
    lv = v | _CASE_BITS
    digit = (v + _GE_0) & ~(v + _GT_9)
    letter = (lv + _GE_LOWER_A) & ~(lv + _GT_LOWER_Z)
    return ((((digit | letter) & ~w & _HIGH_BITS) >> _U7) * _GATHER) >> _U56


@njit
def _scan_bounds(words: Any, s: int, e: int, starts: Any, ends: Any) -> int:
    """``_bounds`` of a ``_ROW_SCAN`` row, 64 bytes at a time.

    Each block of 64 bytes becomes a bit mask of its token bytes (8 bytes per word, classified
    together); token starts and ends are the rising and falling edges of the mask, read off
    with count-trailing-zeros. A branch per token instead of a mispredicted one per byte.
    """
    n_starts = 0
    n_ends = 0
    carry = _ZERO  # the last byte of the previous block was a token byte
    q = s >> 3
    q_end = (e + 7) >> 3
    base = q << 3
    while q < q_end:
        q_next = min(q + 8, q_end)
        m = _ZERO
        for k in range(q_next - q):
            m |= _alnum_bits(words[q + k]) << np.uint64(8 * k)
        if s > base:
            m &= _ALL_BITS << np.uint64(s - base)
        if e - base < 64:
            m &= ~(_ALL_BITS << np.uint64(e - base))
        prev = (m << _U1) | carry
        rise = m & ~prev
        fall = ~m & prev
        carry = m >> _U63
        while rise:
            starts[n_starts] = base + _ctz(rise)
            n_starts += 1
            rise &= rise - _U1
        while fall:
            ends[n_ends] = base + _ctz(fall)
            n_ends += 1
            fall &= fall - _U1
        base += 64
        q = q_next
    ends[n_ends] = e
    return n_starts


@njit
def _bounds(
    src: Any, words: Any, s: int, e: int, kind: int, char_class: Any, starts: Any, ends: Any
) -> int:
    """Starts and ends of the tokens of bytes ``s:e`` of a row of ``kind``; returns how many.

    Tokens are runs of the bytes ``_TOKEN_BYTES[kind]`` marks, and in ``_ROW_LOWER`` rows of
    the non-ASCII characters ``char_class`` marks as letters or numbers. ``_ROW_SCAN`` rows
    take ``_scan_bounds``; the others a branch-free byte loop (token lengths are
    unpredictable, mispredicted branches would dominate).
    """
    if kind == _ROW_SCAN:
        return _scan_bounds(words, s, e, starts, ends)
    n_starts = 0
    n_ends = 0
    prev = 0
    utf8 = kind == _ROW_LOWER
    k = s
    while k < e:
        b = src[k]
        cur = int(_TOKEN_BYTES[kind, b])
        size = 1
        if utf8 & (b >= 0x80):
            cp, size = _decode(src, k)
            cur = int(char_class[cp] & _ALNUM)
        starts[n_starts] = k
        n_starts += cur & ~prev & 1
        ends[n_ends] = k
        n_ends += prev & ~cur & 1
        prev = cur
        k += size
    ends[n_ends] = e
    return n_starts


@njit
def _intern_spans(
    src: Any,
    words: Any,
    lower: bool,
    starts: Any,
    ends: Any,
    n_spans: int,
    slots: Any,
    id_start: Any,
    pool: Any,
    n_ids: int,
    ids: Any,
    n_tok: int,
) -> tuple[int, int]:
    """Intern the tokens ``starts[t]:ends[t]`` of ``src``; room for them is already made.

    ``lower``: ASCII-lowercase (raw ASCII rows); other rows are lowercase already, and ASCII
    lowercasing leaves them as they are, so ``_ASCII_LOWER`` serves every row.
    """
    for t in range(n_spans):
        a, b = starts[t], ends[t]
        h, tag = _key(words, a, b, lower)
        found = _find(src, a, b, _ASCII_LOWER, h, tag, slots, id_start, pool)
        if found < 0:
            _store(src, a, b, _ASCII_LOWER, tag, -(found + 1), slots, id_start, pool, n_ids)
            found = n_ids
            n_ids += 1
        ids[n_tok] = found
        n_tok += 1
    return n_tok, n_ids


@njit
def _tokenize_intern(
    buf: Any,
    words: Any,
    row_start: Any,
    row_end: Any,
    kinds: Any,
    char_class: Any,
    starts: Any,
    ends: Any,
    slots: Any,
    id_start: Any,
    pool: Any,
    n_ids: int,
    ids: Any,
    out_off: Any,
    row: int,
    n_tok: int,
) -> tuple[int, int, int, int]:
    """Tokenise and intern rows ``row:`` of a text column (a ``_TextColumn``'s arrays).

    Stops before a row that might not fit in the table; returns the row it stopped at
    (``len(kinds)`` when done), the token count, the id count and that row's byte length.
    """
    for i in range(row, len(kinds)):
        s, e = row_start[i], row_end[i]
        # A row of b bytes has at most (b + 1) // 2 tokens, so at most that many new ids.
        if not _has_room(slots, id_start, pool, n_ids, (e - s + 1) // 2, e - s):
            return i, n_tok, n_ids, e - s
        n_spans = _bounds(buf, words, s, e, kinds[i], char_class, starts, ends)
        n_tok, n_ids = _intern_spans(
            buf,
            words,
            kinds[i] == _ROW_SCAN,
            starts,
            ends,
            n_spans,
            slots,
            id_start,
            pool,
            n_ids,
            ids,
            n_tok,
        )
        out_off[i + 1] = n_tok
    return len(kinds), n_tok, n_ids, 0


@functools.cache
def _char_class() -> npt.NDArray[np.uint8]:
    """Flags of the code points below ``_CHAR_TABLE_SIZE``: ``_ALNUM``, ``_STABLE_SEPARATOR``.

    ``_ALNUM``: a letter or number (``TOKEN_PATTERN``); ``_STABLE_SEPARATOR``: neither, nor is
    any character of its lowercase. Built with the Polars expressions themselves, so that it
    follows their Unicode version exactly; once per process, on the first non-ASCII text.
    """
    cps = np.arange(_CHAR_TABLE_SIZE)
    cps = cps[(cps < 0xD800) | (cps > 0xDFFF)]  # surrogates are not characters
    chars = pl.DataFrame({"c": pl.Series(list(map(chr, cps.tolist())), dtype=pl.String)})
    alnum = pl.col("c").str.contains(TOKEN_PATTERN)
    flags = chars.select(
        alnum.cast(pl.UInt8) * _ALNUM
        + (~alnum & ~pl.col("c").str.to_lowercase().str.contains(TOKEN_PATTERN)).cast(pl.UInt8)
        * _STABLE_SEPARATOR
    )
    table = np.zeros(_CHAR_TABLE_SIZE, dtype=np.uint8)
    table[cps] = flags.to_series().to_numpy()
    return table


@njit
def _all_ascii(buf: Any) -> bool:
    high = np.uint8(0)
    for k in range(len(buf)):
        high |= buf[k]
    return bool(high < 0x80)


def _padded(parts: list[npt.NDArray[np.uint8]]) -> tuple[npt.NDArray[np.uint8], Any]:
    """The parts concatenated and followed by at least 8 zero bytes, as bytes and as 64-bit
    words (first byte lowest) over the same memory."""
    size = sum(len(p) for p in parts)
    words = np.zeros((size + 16) // 8, dtype=np.uint64)
    buf = words.view(np.uint8)
    at = 0
    for part in parts:  # the column, then its few re-tokenised rows: not a loop over rows
        buf[at : at + len(part)] = part
        at += len(part)
    if sys.byteorder != "little":
        # ``_load8`` wants the first byte lowest: keep a byte-swapped copy for the words.
        words = words.byteswap()
    return buf, words


def _in_place(
    parts: list[npt.NDArray[np.uint8]], view_words: npt.NDArray[np.uint64]
) -> tuple[npt.NDArray[np.uint8], Any] | None:
    """The one data buffer of an Arrow string-view array as bytes and as 64-bit words,
    without copying it, where every long string (over 12 bytes) ends at least a word before
    its end (``_load8`` reads the word after a string's last) and it is word-aligned; else
    None. A column cut from a larger one (the names of a trajectory's calls) shares that
    one's buffer, which copying would copy whole."""
    if len(parts) != 1 or not _LITTLE:
        return None
    data = parts[0]
    words = data[: data.size // 8 * 8].view(np.uint64) if data.size >= 8 else None
    if words is None or not words.flags.aligned:
        return None
    end = _long_end(view_words)
    if end > 0 and (end - 1) // 8 + 2 > words.size:
        return None
    return data, words


@njit(borrows=True)
def _long_end(view_words: Any) -> int:
    """Where the furthest-reaching string over 12 bytes ends in its data buffer (0: none)."""
    end = 0
    for t in range(view_words.shape[0] // 2):
        n = int(view_words[2 * t] & _LOW32)
        if n > 12:
            end = max(end, int(view_words[2 * t + 1] >> np.uint64(32)) + n)
    return end


class _Interner:
    """The shared id space of one ``intern``/``intern_texts`` call."""

    def __init__(self) -> None:
        self.slots = np.full((1 << 12, 2), _EMPTY, dtype=np.uint64)
        self.id_start = np.zeros(1 << 11, dtype=np.int64)
        self.pool = np.empty(1 << 15, dtype=np.uint8)
        self.n_ids = 0

    def reserve(self, new_ids: int, new_bytes: int) -> None:
        """Grow the table so that ``new_ids`` more ids of ``new_bytes`` in all fit."""
        ids = self.n_ids + new_ids
        if 2 * ids > len(self.slots):
            cap = len(self.slots)
            while 2 * ids > cap:
                cap *= 2
            old, self.slots = self.slots, np.full((cap, 2), _EMPTY, dtype=np.uint64)
            _rehash(old, self.slots, self.id_start, self.pool)
        if ids >= len(self.id_start):
            id_start = np.zeros(max(2 * len(self.id_start), ids + 1), dtype=np.int64)
            id_start[: self.n_ids + 1] = self.id_start[: self.n_ids + 1]
            self.id_start = id_start
        used = int(self.id_start[self.n_ids])
        need = used + new_bytes
        if need > len(self.pool):
            pool = np.empty(max(2 * len(self.pool), need), dtype=np.uint8)
            pool[:used] = self.pool[:used]
            self.pool = pool

    def intern_flat(self, data: Any, tok_off: OffsetArray) -> IdArray:
        ids = np.empty(len(tok_off) - 1, dtype=np.int32)
        buf, words = _padded([data])
        t = 0
        while t < len(ids):  # runs once, plus once per growth of the table
            t, self.n_ids = _intern_flat(
                buf, words, tok_off, _IDENTITY, self.slots, self.id_start, self.pool,
                self.n_ids, ids, t,
            )  # fmt: skip
            if t < len(ids):
                self.reserve(1, int(tok_off[t + 1] - tok_off[t]))
        return ids

    def intern_strings(self, strings: pl.Series) -> IdArray:
        """:meth:`intern_flat` of a String column's values (none null), read where Arrow
        keeps them: each in its 16-byte view, or a long one in a data buffer (only those
        are copied)."""
        array = strings.to_arrow(compat_level=pl.CompatLevel.newest())
        words = None
        if not array.null_count and str(array.type) == "string_view" and _LITTLE:
            at, n = 2 * array.offset, len(array)
            words = np.frombuffer(array.buffers()[1], np.uint64)[at : at + 2 * n]
        if words is None or not words.flags.aligned:
            data, off, _ = text_buffers(strings)
            return self.intern_flat(data, off)
        views = words.view(np.uint8)
        parts = [np.frombuffer(b, np.uint8) for b in array.buffers()[2:] if b is not None]
        bases = np.cumsum([0, *(p.size for p in parts)])
        data, data_words = _in_place(parts, words) or _padded(parts)
        # Read-only, as the views are: one array type for every source.
        data.flags.writeable = data_words.flags.writeable = False
        ids = np.empty(n, dtype=np.int32)
        t = 0
        while t < n:  # runs once, plus once per growth of the table
            t, self.n_ids = _intern_views(
                views, words, data, data_words, bases, _IDENTITY, self.slots, self.id_start,
                self.pool, self.n_ids, ids, t,
            )  # fmt: skip
            if t < n:
                self.reserve(1, int(words[2 * t] & 0xFFFFFFFF))
        return ids

    def tokenize_intern(self, text: _TextColumn) -> tuple[IdArray, OffsetArray]:
        """Ids and offsets of the tokens of every row of ``text``."""
        n = len(text.kinds)
        # Every token is followed by a separator or the end of its row.
        ids = np.empty((len(text.buf) + n) // 2 + 1, np.int32)
        out_off = np.zeros(n + 1, dtype=np.int64)
        starts = np.empty(text.longest // 2 + 2, np.int64)
        ends = np.empty(text.longest // 2 + 2, np.int64)
        row, n_tok = 0, 0
        while row < n:  # runs once, plus once per growth of the table
            row, n_tok, self.n_ids, row_bytes = _tokenize_intern(
                text.buf, text.words, text.row_start, text.row_end, text.kinds, text.char_class,
                starts, ends, self.slots, self.id_start, self.pool, self.n_ids, ids, out_off,
                row, n_tok,
            )  # fmt: skip
            if row < n:
                self.reserve((row_bytes + 1) // 2, row_bytes)
        # Keep the over-allocated buffer only when it is not much larger than the result.
        return (ids[:n_tok] if 2 * n_tok >= len(ids) else ids[:n_tok].copy()), out_off


@dataclass(frozen=True)
class _TextColumn:
    """A String Series as the kernels read it.

    ``buf`` holds the Arrow bytes of the column, then the ``_ROW_LOWER`` rows lowercased by
    Polars, then the ``_ROW_REGEX`` rows' tokens joined by spaces, and 8 zero bytes; ``words``
    is the same memory as 64-bit words. Row ``i`` is ``buf[row_start[i]:row_end[i]]``, to be
    tokenised as ``kinds[i]`` says.
    """

    buf: npt.NDArray[np.uint8]
    words: npt.NDArray[np.uint64]
    row_start: OffsetArray
    row_end: OffsetArray
    kinds: npt.NDArray[np.int8]
    char_class: npt.NDArray[np.uint8]
    longest: int  # bytes of the longest row

    @classmethod
    def from_series(cls, text: pl.Series) -> _TextColumn:
        raw, off, valid = utf8_buffers(text)
        row_start = off[:-1].copy()
        row_end = off[1:].copy()
        parts = [raw]
        ascii_only = _all_ascii(raw)
        char_class = _EMPTY_CLASSES if ascii_only else _char_class()
        kinds = _row_kinds(raw, off, valid, char_class)
        if not ascii_only:
            size = len(raw)
            for kind, expr in (
                (_ROW_LOWER, pl.col("t").str.to_lowercase()),
                (_ROW_REGEX, tokens(pl.col("t")).list.join(" ")),
            ):
                rows = np.flatnonzero(kinds == kind)
                if len(rows):
                    picked = text.gather(rows).to_frame("t").select(expr).to_series()
                    part, part_off, _ = utf8_buffers(picked)
                    row_start[rows] = part_off[:-1] + (size - part_off[0])
                    row_end[rows] = part_off[1:] + (size - part_off[0])
                    parts.append(part[part_off[0] : part_off[-1]])
                    size += int(part_off[-1] - part_off[0])
        buf, words = _padded(parts)
        longest = int((row_end - row_start).max(initial=0))
        return cls(buf, words, row_start, row_end, kinds, char_class, longest)


def utf8_buffers(
    s: pl.Series,
) -> tuple[npt.NDArray[np.uint8], OffsetArray, npt.NDArray[np.bool_]]:
    """Byte buffer, Arrow offsets (``len(s) + 1``) and validity of a String Series.

    Row ``i`` is ``buf[off[i]:off[i + 1]]``; both arrays are read-only views of Arrow memory.
    """
    return text_buffers(s)


def _check_dtype(s: pl.Series, expected: pl.DataType, what: str) -> None:
    if s.dtype not in (expected, pl.Null):
        msg = f"{what} expects {expected} Series; got {s.name!r} of type {s.dtype}."
        raise TypeError(msg)


def intern(*token_lists: pl.Series) -> tuple[tuple[IdArray, OffsetArray], ...]:
    """Map tokens to exact integer ids shared across all inputs.

    Equal tokens get equal ids and different tokens different ids (bytes are compared, so no
    hash collision can merge two tokens). Ids are dense, ``0..n_distinct - 1``, in order of
    first appearance. A null list has no tokens; a null inside a list counts as ``""``.

    Args:
        *token_lists: ``List(String)`` Series, e.g. from :func:`tokens`.

    Returns:
        Per input, ``(ids, offsets)``: a flat ``int32`` id array and ``int64`` Arrow-style
        offsets of length ``len(input) + 1``, so row ``i`` is ``ids[offsets[i]:offsets[i+1]]``.

    Raises:
        TypeError: An input is not a ``List(String)`` Series.

    Examples:
        >>> import polars as pl
        >>> (a_ids, a_off), (b_ids, b_off) = intern(
        ...     pl.Series([["the", "cat"], []]), pl.Series([["a", "cat"]])
        ... )
        >>> a_ids.tolist(), a_off.tolist(), b_ids.tolist(), b_off.tolist()
        ([0, 1], [0, 2, 2], [2, 1], [0, 2])
    """
    flats: list[pl.Series] = []
    offsets: list[OffsetArray] = []
    for lists in token_lists:  # one iteration per input column, not per row
        flat, off = _flatten(lists)
        flats.append(flat)
        offsets.append(off)
    if not worth_compiling(sum(len(f) for f in flats), INTERPRETED_UP_TO):
        return tuple(zip(_first_seen_ids(flats), offsets, strict=True))
    interner = _Interner()
    out: list[tuple[IdArray, OffsetArray]] = []
    for flat, off in zip(flats, offsets, strict=True):
        data, tok_off, _ = utf8_buffers(flat)
        out.append((interner.intern_flat(data, tok_off), off))
    return tuple(out)


def _flatten(lists: pl.Series) -> tuple[pl.Series, OffsetArray]:
    """The tokens of ``lists`` (``List(String)``) one after the other (a null as ``""``), and
    the Arrow offsets of its rows (a null list has none)."""
    _check_dtype(lists, pl.List(pl.String), "intern()")
    lengths = lists.cast(pl.List(pl.String)).list.len().fill_null(0).to_numpy()
    offsets = np.zeros(len(lists) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    flat = lists.cast(pl.List(pl.String)).explode(empty_as_null=False, keep_nulls=False)
    return flat.fill_null(""), offsets


class Numbering:
    """``intern`` for token lists that come one at a time: one table of ids, shared by every
    list numbered with it, so a column numbered once can be matched against many others.

    Examples:
        >>> import polars as pl
        >>> numbering = Numbering()
        >>> numbering.ids(pl.Series([["a", "b"]]))[0].tolist()
        [0, 1]
        >>> numbering.ids(pl.Series([["b"], ["c"]]))[0].tolist()
        [1, 2]
    """

    def __init__(self) -> None:
        self._interner = _Interner()
        self._lock = threading.Lock()

    def ids(self, lists: pl.Series) -> tuple[IdArray, OffsetArray]:
        """The ids and Arrow offsets of ``lists`` (``List(String)``), as ``intern`` gives them."""
        flat, offsets = _flatten(lists)
        data, tok_off, _ = utf8_buffers(flat)
        with self._lock:
            return self._interner.intern_flat(data, tok_off), offsets


def _first_seen_ids(flats: list[pl.Series]) -> list[IdArray]:
    """Dense ids in order of first appearance across ``flats``, by Polars (no compiling)."""
    every = pl.concat([f.cast(pl.String) for f in flats], rechunk=True) if flats else None
    if every is None or every.len() == 0:
        return [np.zeros(0, dtype=np.int32) for _ in flats]
    distinct = every.unique(maintain_order=True)
    ids = every.replace_strict(
        distinct, pl.int_range(distinct.len(), dtype=pl.Int32, eager=True)
    ).to_numpy()
    cuts = np.cumsum([0, *(len(f) for f in flats)])
    return [ids[a:b].astype(np.int32) for a, b in itertools.pairwise(cuts)]


def intern_texts(*texts: pl.Series) -> tuple[tuple[IdArray, OffsetArray], ...]:
    """Tokenise texts with the shared tokeniser and intern the tokens, in one pass.

    Tokenises exactly as :func:`tokens` and interns as :func:`intern`, several times faster
    than the two: a compiled byte scanner reads every row made of ASCII and of non-ASCII
    separators (curly quotes, dashes, no-break spaces, symbols, emoji), since there Unicode
    lowercasing and ``\\p{L}\\p{N}`` reduce to ASCII lowercasing and ``[a-z0-9]``; rows with
    other characters (accented letters, other scripts) are lowercased by Polars first. A null
    text has no tokens.

    Args:
        *texts: String Series.

    Returns:
        Per input, ``(ids, offsets)`` as in :func:`intern`, ids shared across all inputs.

    Raises:
        TypeError: An input is not a String Series.

    Examples:
        >>> import polars as pl
        >>> ((ids, off),) = intern_texts(pl.Series(["The cat", "It's THE cat!", None]))
        >>> ids.tolist(), off.tolist()
        ([0, 1, 2, 3, 0, 1], [0, 2, 6, 6])
    """
    interner = _Interner()
    out: list[tuple[IdArray, OffsetArray]] = []
    for column in texts:  # one iteration per input column, not per row
        _check_dtype(column, pl.String(), "intern_texts()")
        out.append(interner.tokenize_intern(_TextColumn.from_series(column.cast(pl.String))))
    return tuple(out)
