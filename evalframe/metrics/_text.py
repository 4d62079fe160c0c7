"""Tokenisation as Polars expressions, and exact token-id interning for the NumPy kernels.

The shared tokeniser (reference §2.0) lowercases with full Unicode case mapping and keeps the
maximal runs of Unicode letters and numbers (``\\p{L}\\p{N}``). Everything else separates
tokens: whitespace, punctuation, underscore, apostrophes and combining marks.

Agreement with Python's ``str.lower()`` plus runs of ``c.isalnum()`` was checked over every code
point and on mixed text. The differences are:

* Combining marks (``Mn``/``Mc``) split words in both, so a decomposed ``"e\\u0301cole"`` gives
  ``["e", "cole"]`` while the precomposed ``"école"`` is one token. No NFC normalisation is done
  (as in the reference); normalise upstream with ``str.normalize("NFC")`` if your data mixes
  forms.
* Polars' Rust regex uses a newer Unicode version than Python 3.11's ``unicodedata`` (14.0), so
  letters assigned since then (about 9,400 code points, all unassigned in 14.0) are token
  characters here but separators for ``isalnum``; the lowercasing of about 55 of them differs
  for the same reason.
* ``"İ"`` lowercases to ``"i"`` plus a combining dot, so ``"İstanbul"`` gives
  ``["i", "stanbul"]``, in Python and here alike. Final sigma is handled the same in both.

Polars strings are always valid UTF-8, so the reference's UTF-8 check belongs to ingestion.

The interning kernels map tokens to dense ``int32`` ids with an open-addressing hash table that
compares the bytes of every candidate, so equal ids mean equal tokens (no hash collisions).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import numba
import numpy as np
import numpy.typing as npt
import polars as pl

__all__ = ["TOKEN_PATTERN", "intern", "intern_texts", "tokens"]

TOKEN_PATTERN = r"[\p{L}\p{N}]+"
"""Regex (Rust syntax) of one token: a maximal run of Unicode letters and numbers."""

IdArray = npt.NDArray[np.int32]
OffsetArray = npt.NDArray[np.int64]

_F = TypeVar("_F", bound=Callable[..., Any])


def njit_cached(fn: _F) -> _F:
    """``numba.njit(cache=True, nogil=True)``, without the cache when no cache dir is writable.

    Numba writes its cache beside the module, else in a user-wide directory; when neither is
    writable ``cache=True`` raises at decoration time, so compile on every run instead.
    """
    try:
        return numba.njit(cache=True, nogil=True)(fn)  # type: ignore[no-any-return]
    except RuntimeError:
        return numba.njit(nogil=True)(fn)  # type: ignore[no-any-return]


def tokens(expr: pl.Expr) -> pl.Expr:
    """Tokenise a String expression into ``list[str]`` with the shared tokeniser (§2.0).

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
# Interning kernels. The hash table ``slots`` has two uint64 per slot, kept together so a probe
# touches one cache line: a tag (the token's first 8 bytes, with its length in the top byte when
# it is shorter than 8) and ``id << 32 | length`` (all ones when empty). Comparing tag and
# length decides tokens up to 7 bytes exactly; longer ones are compared with their bytes in
# ``pool``, where id ``i`` owns ``pool[id_start[i]:id_start[i + 1]]``.

_EMPTY = np.uint64(0xFFFFFFFFFFFFFFFF)
_LOW32 = np.uint64(0xFFFFFFFF)
_PRIME = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xFF51AFD7ED558CCD)
_MIX2 = np.uint64(0xC4CEB9FE1A85EC53)
_U8 = np.uint64(8)
_U29 = np.uint64(29)
_U32 = np.uint64(32)
_U33 = np.uint64(33)
_U35 = np.uint64(35)
_U56 = np.uint64(56)

# Byte maps applied while hashing and storing: identity for exact interning, ASCII lowercasing
# for raw ASCII text (on ASCII, full Unicode lowercasing is exactly ASCII lowercasing).
_IDENTITY = np.arange(256, dtype=np.uint8)
_ASCII_LOWER = _IDENTITY.copy()
_ASCII_LOWER[ord("A") : ord("Z") + 1] += 32
# Token bytes of raw ASCII text: [0-9A-Za-z], i.e. \p{L}\p{N} restricted to ASCII.
_ASCII_ALNUM = np.zeros(256, dtype=np.bool_)
for _lo, _hi in ((ord("0"), ord("9")), (ord("A"), ord("Z")), (ord("a"), ord("z"))):
    _ASCII_ALNUM[_lo : _hi + 1] = True
# Token bytes of a space-joined list of tokens (tokens never contain a space).
_NOT_SPACE = np.ones(256, dtype=np.bool_)
_NOT_SPACE[ord(" ")] = False

_ROW_NULL, _ROW_ASCII, _ROW_JOINED = 0, 1, 2
# Read-only like the buffers np.frombuffer gives, so the kernels compile one specialisation.
_EMPTY_BYTES = np.frombuffer(b"", dtype=np.uint8)
_ZERO_OFFSETS = np.frombuffer(np.zeros(1, dtype=np.int64).tobytes(), dtype=np.int64)


@numba.njit(inline="always")
def _fmix(h: Any) -> Any:
    # murmur3's fmix64: the table index takes the low bits, which the multiply leaves weak.
    h ^= h >> _U33
    h *= _MIX1
    h ^= h >> _U33
    h *= _MIX2
    h ^= h >> _U33
    return h


@numba.njit(inline="always")
def _key(src: Any, s: int, e: int, bytemap: Any) -> tuple[Any, Any]:
    """Hash and tag of the token ``bytemap[src[s:e]]``."""
    n = e - s
    stop = min(s + 8, e)
    chunk = np.uint64(0)
    shift = np.uint64(0)
    for i in range(s, stop):
        chunk |= np.uint64(bytemap[src[i]]) << shift
        shift += _U8
    tag = chunk | (np.uint64(n) << _U56) if n < 8 else chunk
    h = (np.uint64(n) ^ chunk) * _PRIME
    k = stop
    while k < e:
        stop = min(k + 8, e)
        chunk = np.uint64(0)
        shift = np.uint64(0)
        for i in range(k, stop):
            chunk |= np.uint64(bytemap[src[i]]) << shift
            shift += _U8
        h = ((h << _U29) | (h >> _U35)) ^ chunk
        h *= _PRIME
        k = stop
    return _fmix(h), tag


@numba.njit(inline="always")
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
) -> int:
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
            if n < 8:
                return idx
            ks = id_start[idx]
            same = True
            for k in range(8, n):
                if bytemap[src[s + k]] != pool[ks + k]:
                    same = False
                    break
            if same:
                return idx
        pos = (pos + 1) & mask


@numba.njit(inline="always")
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


@numba.njit(inline="always")
def _has_room(
    slots: Any, id_start: Any, pool: Any, n_ids: int, new_ids: int, new_bytes: int
) -> bool:
    return bool(
        2 * (n_ids + new_ids) <= len(slots)
        and n_ids + new_ids < len(id_start)
        and id_start[n_ids] + new_bytes <= len(pool)
    )


@njit_cached
def _rehash(slots: Any, id_start: Any, pool: Any, n_ids: int) -> None:
    mask = len(slots) - 1
    for idx in range(n_ids):
        s, e = id_start[idx], id_start[idx + 1]
        h, tag = _key(pool, s, e, _IDENTITY)
        pos = np.int64(h & np.uint64(mask))
        while slots[pos, 1] != _EMPTY:
            pos = (pos + 1) & mask
        slots[pos, 0] = tag
        slots[pos, 1] = (np.uint64(idx) << _U32) | np.uint64(e - s)


# The kernels below never rebind an array inside a loop (Numba would then refcount it on
# every iteration, several times slower); when the table is full they return where they
# stopped, and ``_Interner.reserve`` grows it before the caller resumes.


@njit_cached
def _intern_flat(
    src: Any,
    tok_off: Any,
    bytemap: Any,
    slots: Any,
    id_start: Any,
    pool: Any,
    n_ids: int,
    ids: Any,
    t0: int,
) -> tuple[int, int]:
    """Write the ids of tokens ``bytemap[src[tok_off[t]:tok_off[t + 1]]]``, from ``t0`` on.

    Returns the token it stopped at (``len(ids)`` when done) and the new id count.
    """
    for t in range(t0, len(ids)):
        s, e = tok_off[t], tok_off[t + 1]
        h, tag = _key(src, s, e, bytemap)
        found = _find(src, s, e, bytemap, h, tag, slots, id_start, pool)
        if found < 0:
            if not _has_room(slots, id_start, pool, n_ids, 1, e - s):
                return t, n_ids
            _store(src, s, e, bytemap, tag, -(found + 1), slots, id_start, pool, n_ids)
            found = n_ids
            n_ids += 1
        ids[t] = found
    return len(ids), n_ids


@njit_cached
def _row_kinds(buf: Any, off: Any, valid: Any) -> Any:
    n = len(off) - 1
    kinds = np.empty(n, dtype=np.int8)
    for i in range(n):
        if not valid[i]:
            kinds[i] = _ROW_NULL
            continue
        high = np.uint8(0)
        for k in range(off[i], off[i + 1]):
            high |= buf[k]
        kinds[i] = _ROW_JOINED if high >= 128 else _ROW_ASCII
    return kinds


@njit_cached
def _scan_row(
    src: Any,
    s: int,
    e: int,
    is_tok: Any,
    slots: Any,
    id_start: Any,
    pool: Any,
    n_ids: int,
    ids: Any,
    n_tok: int,
) -> tuple[int, int]:
    """Tokenise ``src[s:e]`` (runs of ``is_tok`` bytes, ASCII-lowercased) and intern it."""
    k = s
    while k < e:
        if not is_tok[src[k]]:
            k += 1
            continue
        t0 = k
        # Scan and pack the first 8 bytes in one pass; this is ``_key`` for short tokens.
        chunk = np.uint64(0)
        shift = np.uint64(0)
        while k < e and is_tok[src[k]] and k - t0 < 8:
            chunk |= np.uint64(_ASCII_LOWER[src[k]]) << shift
            shift += _U8
            k += 1
        if k < e and is_tok[src[k]]:
            while k < e and is_tok[src[k]]:
                k += 1
            h, tag = _key(src, t0, k, _ASCII_LOWER)
        else:
            n = k - t0
            tag = chunk | (np.uint64(n) << _U56) if n < 8 else chunk
            h = _fmix((np.uint64(n) ^ chunk) * _PRIME)
        found = _find(src, t0, k, _ASCII_LOWER, h, tag, slots, id_start, pool)
        if found < 0:
            _store(src, t0, k, _ASCII_LOWER, tag, -(found + 1), slots, id_start, pool, n_ids)
            found = n_ids
            n_ids += 1
        ids[n_tok] = found
        n_tok += 1
    return n_tok, n_ids


@njit_cached
def _tokenize_intern(
    buf: Any,
    off: Any,
    kinds: Any,
    joined_buf: Any,
    joined_off: Any,
    slots: Any,
    id_start: Any,
    pool: Any,
    n_ids: int,
    ids: Any,
    out_off: Any,
    row0: int,
    n_tok: int,
    j: int,
) -> tuple[int, int, int, int, int]:
    """Tokenise and intern a text column, from row ``row0`` on.

    ASCII rows are scanned from ``buf``; the other rows, in order (``j`` counts them), were
    tokenised by Polars and are given as space-joined token lists in ``joined_buf``. Stops
    before a row that might not fit in the table; returns that row (``n`` when done), the
    token count, ``j``, the id count and the row's byte length.
    """
    n = len(off) - 1
    for i in range(row0, n):
        kind = kinds[i]
        if kind == _ROW_ASCII:
            s, e = off[i], off[i + 1]
        elif kind == _ROW_JOINED:
            s, e = joined_off[j], joined_off[j + 1]
        else:
            out_off[i + 1] = n_tok
            continue
        # A row of b bytes has at most (b + 1) // 2 tokens, so at most that many new ids.
        if not _has_room(slots, id_start, pool, n_ids, (e - s + 1) // 2, e - s):
            return i, n_tok, j, n_ids, e - s
        if kind == _ROW_ASCII:
            n_tok, n_ids = _scan_row(
                buf, s, e, _ASCII_ALNUM, slots, id_start, pool, n_ids, ids, n_tok
            )
        else:
            n_tok, n_ids = _scan_row(
                joined_buf, s, e, _NOT_SPACE, slots, id_start, pool, n_ids, ids, n_tok
            )
            j += 1
        out_off[i + 1] = n_tok
    return n, n_tok, j, n_ids, 0


class _Interner:
    """The shared id space of one ``intern``/``intern_texts`` call."""

    def __init__(self) -> None:
        self.slots = np.full((1 << 12, 2), _EMPTY, dtype=np.uint64)
        self.id_start = np.zeros(1 << 11, dtype=np.int64)
        self.pool = np.empty(1 << 14, dtype=np.uint8)
        self.n_ids = 0

    def reserve(self, new_ids: int, new_bytes: int) -> None:
        """Grow the table so that ``new_ids`` more ids of ``new_bytes`` in all fit."""
        ids = self.n_ids + new_ids
        if 2 * ids > len(self.slots):
            cap = len(self.slots)
            while 2 * ids > cap:
                cap *= 2
            self.slots = np.full((cap, 2), _EMPTY, dtype=np.uint64)
            _rehash(self.slots, self.id_start, self.pool, self.n_ids)
        if ids >= len(self.id_start):
            id_start = np.zeros(max(2 * len(self.id_start), ids + 1), dtype=np.int64)
            id_start[: self.n_ids + 1] = self.id_start[: self.n_ids + 1]
            self.id_start = id_start
        used = int(self.id_start[self.n_ids])
        if used + new_bytes > len(self.pool):
            pool = np.empty(max(2 * len(self.pool), used + new_bytes), dtype=np.uint8)
            pool[:used] = self.pool[:used]
            self.pool = pool

    def intern_flat(self, data: Any, tok_off: OffsetArray, bytemap: Any) -> IdArray:
        ids = np.empty(len(tok_off) - 1, dtype=np.int32)
        t = 0
        while t < len(ids):  # runs once, plus once per growth of the table
            t, self.n_ids = _intern_flat(
                data, tok_off, bytemap, self.slots, self.id_start, self.pool, self.n_ids, ids, t
            )
            if t < len(ids):
                self.reserve(1, int(tok_off[t + 1] - tok_off[t]))
        return ids

    def tokenize_intern(
        self, buf: Any, off: OffsetArray, kinds: Any, joined_buf: Any, joined_off: OffsetArray
    ) -> tuple[IdArray, OffsetArray]:
        n = len(off) - 1
        # Every token is followed by a separator or the end of its row.
        ids = np.empty((len(buf) + len(joined_buf) + n) // 2 + 1, dtype=np.int32)
        out_off = np.zeros(n + 1, dtype=np.int64)
        row, n_tok, j = 0, 0, 0
        while row < n:  # runs once, plus once per growth of the table
            row, n_tok, j, self.n_ids, row_bytes = _tokenize_intern(
                buf,
                off,
                kinds,
                joined_buf,
                joined_off,
                self.slots,
                self.id_start,
                self.pool,
                self.n_ids,
                ids,
                out_off,
                row,
                n_tok,
                j,
            )
            if row < n:
                self.reserve((row_bytes + 1) // 2, row_bytes)
        return ids[:n_tok].copy(), out_off


def _string_buffers(
    s: pl.Series,
) -> tuple[npt.NDArray[np.uint8], OffsetArray, npt.NDArray[np.bool_]]:
    """Byte buffer, Arrow offsets (``len(s) + 1``) and validity of a String Series."""
    arr = s.to_arrow()
    if str(arr.type) != "large_string":
        arr = arr.cast("large_string")
    _validity, off_buf, data_buf = arr.buffers()
    off = np.frombuffer(off_buf, dtype=np.int64)[arr.offset : arr.offset + len(arr) + 1]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else _EMPTY_BYTES
    valid = s.is_not_null().to_numpy()
    return data, off, valid


def _check_dtype(s: pl.Series, expected: pl.DataType, what: str) -> None:
    if s.dtype not in (expected, pl.Null):
        msg = f"{what} expects {expected} Series; got {s.name!r} of type {s.dtype}."
        raise TypeError(msg)


def intern(*token_lists: pl.Series) -> tuple[tuple[IdArray, OffsetArray], ...]:
    """Map tokens to exact integer ids shared across all inputs.

    Equal tokens get equal ids and different tokens different ids (bytes are compared, so no
    hash collision can merge two tokens). Ids are dense, ``0..n_distinct - 1``, in order of
    first appearance. A null list has no tokens.

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
    interner = _Interner()
    out: list[tuple[IdArray, OffsetArray]] = []
    for lists in token_lists:  # one iteration per input column, not per row
        _check_dtype(lists, pl.List(pl.String), "intern()")
        lengths = lists.cast(pl.List(pl.String)).list.len().fill_null(0).to_numpy()
        offsets = np.zeros(len(lists) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        flat = lists.cast(pl.List(pl.String)).explode(empty_as_null=False, keep_nulls=False)
        data, tok_off, _ = _string_buffers(flat)
        out.append((interner.intern_flat(data, tok_off, _IDENTITY), offsets))
    return tuple(out)


def intern_texts(*texts: pl.Series) -> tuple[tuple[IdArray, OffsetArray], ...]:
    """Tokenise texts with the shared tokeniser and intern the tokens, in one pass.

    Gives the same as ``intern(*(tokenized texts))`` with :func:`tokens`, several times faster:
    rows of pure ASCII are tokenised by a compiled byte scanner (on ASCII, Unicode lowercasing
    and ``\\p{L}\\p{N}`` are exactly ``[a-z0-9]`` after ASCII lowercasing), and only rows with
    other characters go through the Polars expression. A null text has no tokens.

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
        text = column.cast(pl.String)
        buf, off, valid = _string_buffers(text)
        kinds = _row_kinds(buf, off, valid)
        others = np.flatnonzero(kinds == _ROW_JOINED)
        if len(others):
            joined = text.gather(others).to_frame("t").select(tokens(pl.col("t")).list.join(" "))
            joined_buf, joined_off, _ = _string_buffers(joined.to_series())
        else:
            joined_buf, joined_off = _EMPTY_BYTES, _ZERO_OFFSETS
        out.append(interner.tokenize_intern(buf, off, kinds, joined_buf, joined_off))
    return tuple(out)
