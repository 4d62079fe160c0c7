"""The report's large sections laid out by compiled passes over Arrow bytes.

``rows(heads, entries, literals)`` sizes rows that each end in an object of entries (the
report's ``samples`` and ``sample_aggregates``), which then write themselves into a buffer of
the caller's (``Rows.write_into``: a slice of the whole output), on threads, with no
intermediate string per row: each row's head and each entry's opening are written from
their fields (``_records.Template``) as the pass goes; ``section`` gives the rows' bytes
alone. An entry may end
in a stored JSON document, written as ``json.dumps(json.loads(doc), indent=2,
ensure_ascii=False)`` would write it as the value of a key at the entry's indent.

The pass copies a document's strings, numbers and literals as they are and only lays out its
brackets, commas and colons. That is exact for documents whose tokens are already spelled as
Python spells them, which is what evalframe's writers (Polars, orjson, ``json``) produce:
strings with the standard escapes and raw UTF-8, floats in their shortest round-trip digits. A
document with any other spelling (an exponent, trailing zeros, a ``\\u`` escape of a
printable character, ``-0``, an integer past 18 digits) is flagged by the sizing pass and
written by orjson instead, with its floats respelled in Python's way; so is one nested deeper
than :data:`MAX_DEPTH`. Documents are trusted to be valid JSON with distinct keys, as the
store keeps them.

Examples:
    >>> import numpy as np
    >>> import polars as pl
    >>> entries = Entries(
    ...     bounds=np.array([0, 1], dtype=np.int64),
    ...     prefixes=pl.Series(['  "m": ']),
    ...     documents=pl.Series(['{"a":[1,2.5e-7]}']),
    ...     indent=2,
    ... )
    >>> print(bytes(section(pl.Series(["{"]), entries, (",", "{}", "\\n", "\\n", "}"))).decode())
    {
      "m": {
        "a": [
          1,
          2.5e-07
        ]
      }
    }
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import pairwise

import numpy as np
import numpy.typing as npt
import orjson
import polars as pl

from evalframe.core._json._text import JSON_WS
from evalframe.core._njit import njit
from evalframe.metrics._lcs import _threads_for
from evalframe.metrics._text import utf8_buffers
from evalframe.views._format import python_floats
from evalframe.views._records import Fields, Template, field_row, fields

__all__ = ["MAX_DEPTH", "Entries", "Rows", "Texts", "rows", "section"]

MAX_DEPTH = 64
"""Deeper documents are written by orjson, not by the compiled pass."""

_FLAGGED = -1


@njit(inline="always")
def _newline(out: npt.NDArray[np.uint8], pos: int, pad: int, write: bool) -> int:
    if write:
        out[pos] = 10
        for i in range(pad):
            out[pos + 1 + i] = 32
    return pos + 1 + pad


@njit(inline="always")
def _string_end(buf: npt.NDArray[np.uint8], i: int, end: int) -> int:
    """Index after the string starting at ``buf[i] == '"'``, or -1 if not canonical."""
    i += 1
    while i < end:
        c = buf[i]
        if c == 34:
            return i + 1
        if c < 32:
            return -1
        if c == 92:
            e = buf[i + 1]
            if e == 117:  # \u00XX is canonical only for control characters other than \b\t\n\f\r
                if buf[i + 2] != 48 or buf[i + 3] != 48 or buf[i + 4] > 49:
                    return -1
                lo = buf[i + 5]
                if lo >= 97 and lo <= 102:
                    nibble = lo - 87
                elif lo >= 48 and lo <= 57:
                    nibble = lo - 48
                else:
                    return -1
                code = (buf[i + 4] - 48) * 16 + nibble
                if code in (8, 9, 10, 12, 13):
                    return -1
                i += 6
                continue
            if e in (34, 92, 98, 102, 110, 114, 116):
                i += 2
                continue
            return -1
        i += 1
    return -1


@njit(inline="always")
def _scalar_end(buf: npt.NDArray[np.uint8], i: int, end: int) -> int:
    """Index after the number or literal at ``i``, or -1 if not spelled as Python does."""
    c = buf[i]
    if c in (116, 110):  # true, null
        return i + 4
    if c == 102:  # false
        return i + 5
    j = i
    if buf[j] == 45:
        j += 1
    int_start = j
    while j < end and buf[j] >= 48 and buf[j] <= 57:
        j += 1
    int_digits = j - int_start
    if j < end and buf[j] == 46:
        frac_start = j + 1
        j += 1
        while j < end and buf[j] >= 48 and buf[j] <= 57:
            j += 1
        frac_digits = j - frac_start
        if j < end and (buf[j] == 101 or buf[j] == 69):
            return -1
        if int_digits > 16 or frac_digits == 0:
            return -1
        if frac_digits > 1 and buf[j - 1] == 48:  # trailing zero: not the shortest digits
            return -1
        small = int_digits == 1 and buf[int_start] == 48 and frac_digits >= 5
        if small and buf[frac_start : frac_start + 4].sum() == 4 * 48:
            return -1  # below 1e-4 Python switches to an exponent
        return j
    if j < end and (buf[j] == 101 or buf[j] == 69):
        return -1
    if int_digits == 0 or int_digits > 18:
        return -1
    if int_digits == 1 and buf[int_start] == 48 and int_start != i:  # -0
        return -1
    return j


@njit(inline="always")
def _render(
    buf: npt.NDArray[np.uint8],
    start: int,
    end: int,
    base: int,
    out: npt.NDArray[np.uint8],
    pos: int,
    write: bool,
) -> int:
    """Lay out ``buf[start:end]`` at ``out[pos:]``; the new position, or -1 when flagged."""
    depth = 0
    i = start
    while i < end:
        c = buf[i]
        if JSON_WS[c]:
            i += 1
            continue
        if c in (123, 91):  # { [
            j = i + 1
            while j < end and JSON_WS[buf[j]]:
                j += 1
            close = 125 if c == 123 else 93
            if j < end and buf[j] == close:
                if write:
                    out[pos] = c
                    out[pos + 1] = close
                pos += 2
                i = j + 1
                continue
            depth += 1
            if depth > 64:
                return _FLAGGED
            if write:
                out[pos] = c
            pos = _newline(out, pos + 1, base + 2 * depth, write)
            i += 1
        elif c in (125, 93):
            depth -= 1
            pos = _newline(out, pos, base + 2 * depth, write)
            if write:
                out[pos] = c
            pos += 1
            i += 1
        elif c == 44:  # ,
            if write:
                out[pos] = 44
            pos = _newline(out, pos + 1, base + 2 * depth, write)
            i += 1
        elif c == 58:  # :
            if write:
                out[pos] = 58
                out[pos + 1] = 32
            pos += 2
            i += 1
        else:
            j = _string_end(buf, i, end) if c == 34 else _scalar_end(buf, i, end)
            if j < 0:
                return _FLAGGED
            pos = _copy(buf, i, j, out, pos, write)
            i = j
    return pos


@njit
def _lengths(
    buf: npt.NDArray[np.uint8],
    off: npt.NDArray[np.int64],
    valid: npt.NDArray[np.bool_],
    base: int,
    sizes: npt.NDArray[np.int64],
    r0: int,
    r1: int,
) -> None:
    """Documents ``r0:r1``'s laid-out lengths; -1 for a flagged one, 4 (``null``) for a null."""
    scratch = np.empty(0, dtype=np.uint8)
    for r in range(r0, r1):
        if not valid[r]:
            sizes[r] = 4
        else:
            sizes[r] = _render(buf, off[r], off[r + 1], base, scratch, 0, False)


@njit(inline="always")
def _copy(
    src: npt.NDArray[np.uint8], a: int, b: int, out: npt.NDArray[np.uint8], pos: int, write: bool
) -> int:
    if write:
        if b - a > 32:
            out[pos : pos + b - a] = src[a:b]
        else:  # most pieces are a few bytes, where a slice assignment costs more
            for k in range(b - a):
                out[pos + k] = src[a + k]
    return pos + b - a


@njit(inline="always")
def _row(
    r: int,
    heads: Fields,
    bounds: npt.NDArray[np.int64],
    prefixes: Fields,
    doc_buf: npt.NDArray[np.uint8],
    doc_off: npt.NDArray[np.int64],
    doc_size: npt.NDArray[np.int64],
    alt_buf: npt.NDArray[np.uint8],
    alt_off: npt.NDArray[np.int64],
    alt_of: npt.NDArray[np.int64],
    base: int,
    literals: npt.NDArray[np.uint8],
    lit_off: npt.NDArray[np.int64],
    out: npt.NDArray[np.uint8],
    pos: int,
    write: bool,
) -> int:
    """Size (``write=False``) or write row ``r`` at ``pos``, separator first; the end.

    The row's head and each entry's prefix are written from their fields as they go (no
    text of their own to copy). ``literals`` holds, in order: separator, empty object,
    opening, closing, row end and entry suffix. An entry's document is laid out from
    ``doc_buf`` unless ``alt_of`` names its replacement text in ``alt_buf``; a negative
    ``doc_size`` means no document.
    """
    if r > 0:
        pos = _copy(literals, lit_off[0], lit_off[1], out, pos, write)
    pos = field_row(r, heads, out, pos, write)
    e0 = bounds[r]
    e1 = bounds[r + 1]
    if e0 == e1:
        pos = _copy(literals, lit_off[1], lit_off[2], out, pos, write)
    else:
        pos = _copy(literals, lit_off[2], lit_off[3], out, pos, write)
        for e in range(e0, e1):
            if e > e0:
                pos = _copy(literals, lit_off[0], lit_off[1], out, pos, write)
            pos = field_row(e, prefixes, out, pos, write)
            if alt_of[e] >= 0:
                a = alt_of[e]
                pos = _copy(alt_buf, alt_off[a], alt_off[a + 1], out, pos, write)
            elif doc_size[e] >= 0:
                if write:
                    _render(doc_buf, doc_off[e], doc_off[e + 1], base, out, pos, True)
                pos += doc_size[e]
            pos = _copy(literals, lit_off[5], lit_off[6], out, pos, write)
        pos = _copy(literals, lit_off[3], lit_off[4], out, pos, write)
    return _copy(literals, lit_off[4], lit_off[5], out, pos, write)


@njit
def _row_sizes(
    heads: Fields,
    bounds: npt.NDArray[np.int64],
    prefixes: Fields,
    doc_buf: npt.NDArray[np.uint8],
    doc_off: npt.NDArray[np.int64],
    doc_size: npt.NDArray[np.int64],
    alt_buf: npt.NDArray[np.uint8],
    alt_off: npt.NDArray[np.int64],
    alt_of: npt.NDArray[np.int64],
    base: int,
    literals: npt.NDArray[np.uint8],
    lit_off: npt.NDArray[np.int64],
) -> npt.NDArray[np.int64]:
    n = bounds.shape[0] - 1
    starts = np.zeros(n + 1, dtype=np.int64)
    scratch = np.empty(0, dtype=np.uint8)
    for r in range(n):
        starts[r + 1] = _row(
            r, heads, bounds, prefixes, doc_buf, doc_off, doc_size,
            alt_buf, alt_off, alt_of, base, literals, lit_off, scratch, starts[r], False,
        )  # fmt: skip
    return starts


@njit
def _write_rows(
    heads: Fields,
    bounds: npt.NDArray[np.int64],
    prefixes: Fields,
    doc_buf: npt.NDArray[np.uint8],
    doc_off: npt.NDArray[np.int64],
    doc_size: npt.NDArray[np.int64],
    alt_buf: npt.NDArray[np.uint8],
    alt_off: npt.NDArray[np.int64],
    alt_of: npt.NDArray[np.int64],
    base: int,
    literals: npt.NDArray[np.uint8],
    lit_off: npt.NDArray[np.int64],
    starts: npt.NDArray[np.int64],
    out: npt.NDArray[np.uint8],
    r0: int,
    r1: int,
) -> None:
    for r in range(r0, r1):
        _row(
            r, heads, bounds, prefixes, doc_buf, doc_off, doc_size,
            alt_buf, alt_off, alt_of, base, literals, lit_off, out, starts[r], True,
        )  # fmt: skip


def _by_orjson(documents: list[str], indent: int) -> list[str]:
    pad = "\n" + " " * indent
    # A space before and a line after let the respelling see a top-level number as a value.
    return [
        python_floats(b" " + orjson.dumps(orjson.loads(doc), option=orjson.OPT_INDENT_2) + b"\n")
        .decode("utf-8")[1:-1]
        .replace("\n", pad)
        for doc in documents
    ]


Texts = pl.Series | Template
"""Each row's text: a String Series of JSON text, or the fields to write it from."""


def _fields(texts: Texts, n: int) -> Fields:
    if isinstance(texts, pl.Series):
        texts = Template().text("", texts)
    return fields(texts, n)


@dataclass(frozen=True)
class Entries:
    """The entries of each row's trailing object, in row order.

    ``bounds`` (``rows + 1`` offsets) gives row ``r`` the entries ``bounds[r]:bounds[r + 1]``;
    each entry is its ``prefixes`` text, then its document laid out at ``indent`` spaces (when
    ``documents`` is given), then ``suffix``.
    """

    bounds: npt.NDArray[np.int64]
    prefixes: Texts
    documents: pl.Series | None = None
    indent: int = 0
    suffix: str = ""


_EMPTY_BYTES = np.zeros(0, dtype=np.uint8)


def _documents(
    entries: Entries,
) -> tuple[
    npt.NDArray[np.uint8],
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
    npt.NDArray[np.uint8],
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
]:
    """Document buffers, laid-out sizes, and orjson's texts for the ones the pass flags."""
    n = int(entries.bounds[-1])
    alt_of = np.full(n, -1, dtype=np.int64)
    if entries.documents is None:
        none = np.full(n, -1, dtype=np.int64)
        return _EMPTY_BYTES, np.zeros(n + 1, dtype=np.int64), none, _EMPTY_BYTES, alt_of[:1], alt_of
    buf, off, valid = utf8_buffers(entries.documents)
    sizes = np.empty(n, dtype=np.int64)
    _on_threads(_lengths, n, buf, off, valid, entries.indent, sizes)
    flagged = np.flatnonzero((sizes < 0) | ~valid)
    texts = entries.documents.gather(flagged).fill_null("null").to_list()
    alt_of[flagged] = np.arange(flagged.size)
    alt_buf, alt_off, _ = utf8_buffers(
        pl.Series(_by_orjson(texts, entries.indent), dtype=pl.String)
    )
    return buf, off, sizes, alt_buf, alt_off, alt_of


@dataclass(frozen=True)
class Rows:
    """Rows sized and ready to write: ``size`` bytes of UTF-8, written by :meth:`write_into`."""

    args: tuple[object, ...]
    starts: npt.NDArray[np.int64]
    sources: tuple[npt.NDArray[np.uint8], ...]

    @property
    def size(self) -> int:
        return int(self.starts[-1])

    def ascii(self) -> bool:
        """Whether every byte written is ASCII (every byte copied from is)."""
        return all(b.size == 0 or int(b.max()) < 128 for b in self.sources)

    def write_into(self, out: npt.NDArray[np.uint8]) -> None:
        """Write the rows at ``out[:size]``."""
        _on_threads(_write_rows, len(self.starts) - 1, *self.args, self.starts, out)

    def written(self) -> npt.NDArray[np.uint8]:
        out = np.empty(self.size, dtype=np.uint8)
        self.write_into(out)
        return out


def rows(heads: Texts, entries: Entries, literals: tuple[str, ...]) -> Rows:
    """Every row sized: its head, then its entries' object, then the row end.

    ``literals`` are the separator between rows (and between entries), the text of an empty
    object, the object's opening and closing, and the row end.
    """
    n = len(entries.bounds) - 1
    head = _fields(heads, n)
    prefix = _fields(entries.prefixes, int(entries.bounds[-1]))
    doc_buf, doc_off, doc_size, alt_buf, alt_off, alt_of = _documents(entries)
    parts = [t.encode("utf-8") for t in (*literals, entries.suffix)]
    lit = np.frombuffer(b"".join(parts), dtype=np.uint8)
    lit_off = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in parts], out=lit_off[1:])
    args = (
        head, entries.bounds, prefix, doc_buf, doc_off, doc_size,
        alt_buf, alt_off, alt_of, entries.indent, lit, lit_off,
    )  # fmt: skip
    # Every byte is copied from these, or is ASCII (numbers, escapes, literals of the fields).
    sources = (head[2], head[4], prefix[2], prefix[4], doc_buf, alt_buf, lit)
    return Rows(args, _row_sizes(*args), sources)


def section(heads: Texts, entries: Entries, literals: tuple[str, ...]) -> npt.NDArray[np.uint8]:
    """UTF-8 bytes of every row (see :func:`rows`)."""
    return rows(heads, entries, literals).written()


def _on_threads(kernel: Callable[..., None], rows: int, *args: object) -> None:
    """``kernel(*args, r0, r1)`` over contiguous slices of ``rows``, one per thread.

    The kernels release the GIL and write disjoint parts of their output.
    """
    cuts = np.linspace(0, rows, _threads_for(rows) + 1).astype(np.int64).tolist()
    if len(cuts) == 2:
        kernel(*args, 0, rows)
        return
    with ThreadPoolExecutor(len(cuts) - 1) as pool:
        for done in [pool.submit(kernel, *args, a, b) for a, b in pairwise(cuts)]:
            done.result()
