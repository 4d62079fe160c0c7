"""Rows of fixed fields written as JSON text by a compiled pass: ``records(template, n)``.

The report's per-sample aggregates are a few hundred thousand small objects of numbers
(rounded to six places), ids and booleans. Building them with Polars string expressions
spells every number as text, then concatenates a dozen pieces per row, then converts the
result for the layout pass; here one Numba pass sizes every row and a second writes it
(the layout pass calls the same field writer, ``field_row``, for each row it lays out), numbers
spelled as Python's ``repr`` spells them (``json.dumps``' spelling): a value that
``round(v, 6)`` leaves is ``n / 10**6`` for an integer ``n``, so its shortest round-trip
digits are those of ``n`` with the point moved and trailing zeros dropped (``0.5``,
``0.793451``, ``1.0``), and below 1e-4 Python's exponent form (``5e-05``, ``1.2e-05``). Any
other value (more digits, beyond 1e9, ``-0.0``, NaN) is spelled by Python before the pass.

Examples:
    >>> import numpy as np
    >>> import polars as pl
    >>> t = Template()
    >>> t.text('{"id": ', pl.Series(['"a"', '"b"'])).number(", \\"x\\": ", pl.Series([0.5, None]))
    ... # doctest: +ELLIPSIS
    <...Template object at ...>
    >>> buf, off = records(t.end("}"), 2)
    >>> bytes(buf).decode()
    '{"id": "a", "x": 0.5}{"id": "b", "x": null}'
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise

import numpy as np
import numpy.typing as npt
import polars as pl

from evalframe.core._json._strings import write_string
from evalframe.core._njit import njit
from evalframe.metrics._lcs import _threads_for
from evalframe.metrics._text import utf8_buffers

__all__ = ["Fields", "Template", "field_row", "fields", "records"]

_TEXT, _NUMBER, _INTEGER, _BOOLEAN, _STRING = 0, 1, 2, 3, 4

Fields = tuple[
    npt.NDArray[np.int64],  # kinds: each field's kind
    npt.NDArray[np.int64],  # column: each field's column among those of its kind
    npt.NDArray[np.uint8],  # literals: each field's, then the end's
    npt.NDArray[np.int64],  # their offsets
    npt.NDArray[np.uint8],  # the text columns' bytes
    npt.NDArray[np.int64],  # each (row, text column)'s start
    npt.NDArray[np.int64],  # and end
    npt.NDArray[np.int64],  # numbers in micro-units, a column per number field
    npt.NDArray[np.int64],  # the text column spelling a number instead, or -1
    npt.NDArray[np.int64],  # integers and booleans, a column per field
    npt.NDArray[np.bool_],  # whether each (row, field) is not null
]
"""The arrays the compiled pass reads, as one argument."""
# Words the pass writes: null, true, false, 0.0 and the exponent's "e-0".
_WORDS = np.frombuffer(b"nulltruefalse0.0e-0", dtype=np.uint8)
_NULL, _TRUE, _FALSE, _ZERO, _EXPONENT = (0, 4), (4, 8), (8, 13), (13, 16), (16, 19)


@njit(inline="always")
def _put(src: npt.NDArray[np.uint8], a: int, b: int, out: npt.NDArray[np.uint8], pos: int) -> int:
    n = b - a
    k = 0
    while k + 8 <= n:  # eight at a time: LLVM turns the fixed inner loop into one move
        for j in range(8):
            out[pos + k + j] = src[a + k + j]
        k += 8
    for j in range(k, n):
        out[pos + j] = src[a + j]
    return pos + n


@njit(inline="always")
def _word(word: tuple[int, int], out: npt.NDArray[np.uint8], pos: int, write: bool) -> int:
    if write:
        _put(_WORDS, word[0], word[1], out, pos)
    return pos + word[1] - word[0]


@njit(inline="always")
def _digits(n: int, out: npt.NDArray[np.uint8], pos: int, width: int, write: bool) -> int:
    """``n >= 0`` in decimal, zero-padded to ``width`` digits (at least its own)."""
    count = 1
    m = n
    while m >= 10:
        m //= 10
        count += 1
    count = max(count, width)
    if write:
        m = n
        for k in range(count - 1, -1, -1):
            out[pos + k] = 48 + m % 10
            m //= 10
    return pos + count


@njit(inline="always")
def _sign(n: int, out: npt.NDArray[np.uint8], pos: int, write: bool) -> int:
    """A minus sign when ``n`` is negative; the position after it."""
    if n >= 0:
        return pos
    if write:
        out[pos] = 45
    return pos + 1


@njit(inline="always")
def _integer(n: int, out: npt.NDArray[np.uint8], pos: int, write: bool) -> int:
    return _digits(abs(n), out, _sign(n, out, pos, write), 1, write)


@njit(inline="always")
def _micros(n: int, out: npt.NDArray[np.uint8], pos: int, write: bool) -> int:
    """``n / 10**6`` as Python's ``repr`` writes it (``n`` not 0)."""
    pos = _sign(n, out, pos, write)
    n = abs(n)
    if n < 100:  # below 1e-4: 5e-06, 1.2e-05, 9e-05
        if n < 10:
            pos = _digits(n, out, pos, 1, write)
            exponent = 54  # '6'
        else:
            pos = _digits(n // 10, out, pos, 1, write)
            if n % 10:
                if write:
                    out[pos] = 46
                pos = _digits(n % 10, out, pos + 1, 1, write)
            exponent = 53  # '5'
        pos = _word(_EXPONENT, out, pos, write)
        if write:
            out[pos] = exponent
        return pos + 1
    whole = n // 1_000_000
    frac = n % 1_000_000
    pos = _digits(whole, out, pos, 1, write)
    if write:
        out[pos] = 46
    pos += 1
    if frac == 0:
        if write:
            out[pos] = 48
        return pos + 1
    width = 6
    while frac % 10 == 0:
        frac //= 10
        width -= 1
    return _digits(frac, out, pos, width, write)


@njit(inline="always")
def write_fields(r: int, columns: Fields, out: npt.NDArray[np.uint8], pos: int, write: bool) -> int:
    """Size or write row ``r``: each field's literal, then its value; then the end literal.

    ``numbers`` hold micro-units (``round(v * 10**6)``) unless ``spelled`` names the row's
    text for that value in the text columns; ``valid`` is per field.
    """
    (kinds, column, lit, lit_off, text_buf, text_start, text_end, numbers, spelled, integers,
     valid) = columns  # fmt: skip
    for f in range(kinds.shape[0]):
        a, b = int(lit_off[f]), int(lit_off[f + 1])
        pos = _put(lit, a, b, out, pos) if write else pos + b - a
        c = column[f]
        kind = kinds[f]
        if not valid[r, f]:
            pos = _word(_NULL, out, pos, write)
        elif kind == _STRING:
            ta, tb = int(text_start[r, c]), int(text_end[r, c])
            pos = write_string(text_buf, ta, tb, out, pos, write)
        elif kind == _TEXT or (kind == _NUMBER and spelled[r, c] >= 0):
            t = c if kind == _TEXT else spelled[r, c]
            ta, tb = int(text_start[r, t]), int(text_end[r, t])
            pos = _put(text_buf, ta, tb, out, pos) if write else pos + tb - ta
        elif kind == _NUMBER:
            n = numbers[r, c]
            pos = _micros(n, out, pos, write) if n else _word(_ZERO, out, pos, write)
        elif kind == _INTEGER:
            pos = _integer(integers[r, c], out, pos, write)
        else:  # boolean
            pos = _word(_TRUE if integers[r, c] else _FALSE, out, pos, write)
    a, b = int(lit_off[kinds.shape[0]]), int(lit_off[kinds.shape[0] + 1])
    return _put(lit, a, b, out, pos) if write else pos + b - a


@njit
def field_row(r: int, columns: Fields, out: npt.NDArray[np.uint8], pos: int, write: bool) -> int:
    """``write_fields`` compiled on its own: the layout pass calls it for two templates (a
    row's head, an entry's opening), and inlining it at both compiles three times longer."""
    return write_fields(r, columns, out, pos, write)


@njit
def _sizes(n: int, columns: Fields) -> npt.NDArray[np.int64]:
    starts = np.zeros(n + 1, dtype=np.int64)
    scratch = np.empty(0, dtype=np.uint8)
    for r in range(n):
        starts[r + 1] = write_fields(r, columns, scratch, starts[r], False)
    return starts


@njit
def _write(
    columns: Fields, starts: npt.NDArray[np.int64], out: npt.NDArray[np.uint8], r0: int, r1: int
) -> None:
    for r in range(r0, r1):
        write_fields(r, columns, out, starts[r], True)


def _micro_units(values: npt.NDArray[np.float64]) -> tuple[npt.NDArray[np.int64], list[int]]:
    """Each value in micro-units, and the rows whose value is not exactly ``n / 10**6`` (or
    is ``-0.0``, beyond 1e9, NaN, infinite): those are spelled by Python."""
    with np.errstate(invalid="ignore", over="ignore"):
        finite = np.isfinite(values) & (np.abs(values) < 1e9)
        micros = np.where(finite, np.rint(values * 1e6), 0.0).astype(np.int64)
        exact = finite & (micros / 1e6 == values) & ~((values == 0) & np.signbit(values))
    return micros, np.flatnonzero(~exact).tolist()


class Template:
    """The fields of every row, in order: a literal, then a column's value.

    ``text`` columns hold JSON text already (a string or ``null``); ``string`` columns
    strings to write as JSON strings; ``number`` columns floats rounded to six places;
    ``integer`` and ``boolean`` columns their kind. A null is written ``null``.
    """

    def __init__(self) -> None:
        self._literals: list[str] = []
        self._fields: list[tuple[int, pl.Series]] = []
        self._end = ""

    def _add(self, literal: str, kind: int, values: pl.Series) -> Template:
        self._literals.append(literal)
        self._fields.append((kind, values))
        return self

    def text(self, literal: str, values: pl.Series) -> Template:
        return self._add(literal, _TEXT, values.cast(pl.String))

    def string(self, literal: str, values: pl.Series) -> Template:
        """A column of strings, written as JSON string literals."""
        return self._add(literal, _STRING, values.cast(pl.String))

    def number(self, literal: str, values: pl.Series) -> Template:
        return self._add(literal, _NUMBER, values.cast(pl.Float64))

    def integer(self, literal: str, values: pl.Series) -> Template:
        return self._add(literal, _INTEGER, values.cast(pl.Int64))

    def boolean(self, literal: str, values: pl.Series) -> Template:
        return self._add(literal, _BOOLEAN, values.cast(pl.Boolean))

    def end(self, literal: str) -> Template:
        self._end = literal
        return self


def fields(template: Template, n: int) -> Fields:
    """The arrays the compiled pass reads to write ``n`` rows of ``template``."""
    fields = template._fields
    kinds = np.array([k for k, _ in fields], dtype=np.int64)
    column = np.zeros(len(fields), dtype=np.int64)
    valid = np.ones((n, max(len(fields), 1)), dtype=np.bool_)
    texts: list[pl.Series] = []
    numbers: list[npt.NDArray[np.int64]] = []
    integers: list[npt.NDArray[np.int64]] = []
    odd: list[tuple[int, list[int], pl.Series]] = []
    for f, (kind, values) in enumerate(fields):
        if values.null_count():
            valid[:, f] = values.is_not_null().to_numpy()
        if kind in (_TEXT, _STRING):
            column[f] = len(texts)
            texts.append(values.fill_null(""))
        elif kind == _NUMBER:
            column[f] = len(numbers)
            micros, rows = _micro_units(values.fill_null(0.0).to_numpy())
            if rows:
                odd.append((len(numbers), rows, values))
            numbers.append(micros)
        else:
            column[f] = len(integers)
            filler = 0 if kind == _INTEGER else False
            integers.append(values.fill_null(filler).cast(pl.Int64).to_numpy())
    # The few values Python spells become text columns of their own.
    spelled = np.full((n, max(len(numbers), 1)), -1, dtype=np.int64)
    for c, rows, values in odd:
        words = [""] * n
        for r in rows:
            words[r] = json.dumps(values[r])
        spelled[rows, c] = len(texts)
        texts.append(pl.Series(words, dtype=pl.String))
    text_buf, text_start, text_end = _text_columns(texts, n)
    parts = [s.encode("utf-8") for s in (*template._literals, template._end)]
    lit = np.frombuffer(b"".join(parts) + b" ", dtype=np.uint8)
    lit_off = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in parts], out=lit_off[1:])
    return (
        kinds, column, lit, lit_off, text_buf, text_start, text_end,
        _matrix(numbers, n), spelled, _matrix(integers, n), valid,
    )  # fmt: skip


def records(template: Template, n: int) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    """Every row's text, ``n`` rows, as one UTF-8 buffer and ``n + 1`` offsets."""
    columns = fields(template, n)
    starts = _sizes(n, columns)
    out = np.empty(int(starts[-1]), dtype=np.uint8)
    cuts = np.linspace(0, n, _threads_for(n) + 1).astype(np.int64).tolist()
    with ThreadPoolExecutor(max(len(cuts) - 1, 1)) as pool:
        for done in [pool.submit(_write, columns, starts, out, a, b) for a, b in pairwise(cuts)]:
            done.result()
    return out, starts


def _matrix(columns: list[npt.NDArray[np.int64]], n: int) -> npt.NDArray[np.int64]:
    return np.column_stack(columns) if columns else np.zeros((n, 1), dtype=np.int64)


def _text_columns(
    texts: list[pl.Series], n: int
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The text columns' bytes in one buffer, and each (row, column)'s start and end.

    The columns are stacked first (Polars appends their views without copying a string),
    so their bytes are copied once, into the buffer.
    """
    texts = texts or [pl.repeat("", n, dtype=pl.String, eager=True)]
    buf, off, _ = utf8_buffers(pl.concat(texts, rechunk=False))
    width = len(texts)
    # Copies (of the offsets only): the pass reads C-ordered, writable (n, width) arrays.
    return buf, off[:-1].reshape(width, n).T.copy(), off[1:].reshape(width, n).T.copy()
