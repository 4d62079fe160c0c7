"""Large JSONL dataset files read by one compiled pass over their bytes, a column at a time.

The exact reader (``core/_formats.py`` and ``core/_dataset.py``) parses each line, checks the
sample it holds and encodes its input, expected value and metadata to compact JSON again,
3-4 us of Python per sample. :func:`dataset_lines` instead walks the file's bytes once and
writes the dataset columns' text straight into Arrow buffers: the id and a string expected
output decoded, the input, a non-string expected value and the metadata re-encoded as
Python's compact JSON encoder writes them, and the text each row hash is taken of.

The tags of ``metadata.tags`` are read once per distinct value after the pass. A line the
pass cannot vouch for is left to the exact per-sample code, and its sample merged in file
order: a line that is not one JSON object, a repeated member, an id given twice or not a
string, a blank id, an input that is not an object or holds objects, an expected output that
holds objects, metadata that is not an object or names ``expected_any``, a ``metadata.tags``
that is not a string, a list of strings or null, a ``tags``, ``reference_contexts`` or
``expected_any`` member, a string Python would read differently (a lone surrogate, a control
character), a number whose Python spelling is longer than its text, nesting past 64 levels.
(A float of 16-17 significant digits, as Python writes most computed floats, is laid out from
its digits and checked afterwards to be Python's ``repr`` of its value; one that is not gives
the file to the exact reader.) Any error then (a bad line, a repeated id, no sample
at all), and invalid UTF-8, gives the file to the exact reader whole, so every value and
every message is the exact reader's.

Examples:
    >>> frame = dataset_lines(
    ...     b'{"id": "q1", "input": {"question": "Why?"}, "expected_output": "42"}\\n',
    ...     lambda records: None, "faq.jsonl")
    >>> frame.select("sample_id", "input", "expected_output", "metadata").rows()
    [('q1', '{"question":"Why?"}', '42', '{}')]
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any, Final

import numpy as np
import polars as pl

from evalframe.core import schema as C
from evalframe.core._arrow_text import string_array, strings_array
from evalframe.core._canon import php_canonical_json, trimmed_tags
from evalframe.core._dataset_columns import MAYBE_NOT_CANONICAL
from evalframe.core._errors import DatasetError
from evalframe.core._formats import load_json, long_digit_run
from evalframe.core._json._numbers import float_record, written_as_repr
from evalframe.core._json._strings import encode_string, json_string, skip_string
from evalframe.core._json._text import (
    NULL,
    copy_bytes,
    same_bytes,
    skip_space,
    surely_not_blank,
    valid_utf8,
    word_at,
)
from evalframe.core._json._values import compact_value, name_index, name_table, skip_value
from evalframe.core._njit import compiling, kernel_int, njit
from evalframe.core._sha256 import digests_kernel, sha256_hex

__all__ = ["announce", "dataset_lines", "lines_loaded"]

# The members the pass reads, by index; the last three it takes only as null.
_WORDS = (
    "id", "sample_id", "input", "expected_output", "metadata",
    "tags", "reference_contexts", "expected_any",
)  # fmt: skip
_ID, _SAMPLE_ID, _INPUT, _EXPECTED, _METADATA, _NULL_ONLY = (kernel_int(k) for k in range(6))
_NAMES, _NAME_OFF = name_table(_WORDS)
# A metadata member the exact code reads (answers): a line whose metadata may name it is
# left to it (a false alarm only costs that line the exact path). Tags are read after the pass.
_ANY_KEY = np.frombuffer(b'"expected_any":', np.uint8)
_TAGS_KEY = np.frombuffer(b'"tags":', np.uint8)
_HASH_HEAD = np.frombuffer(b'{"input":', np.uint8)
_HASH_MIDDLE = np.frombuffer(b',"expected":', np.uint8)
_EMPTY_MAP = np.frombuffer(b"{}", np.uint8)
# expected_type by the code the pass gives a row; -1: the line is left to the exact code
_TYPES: Final = ("string", "int", "float", "bool", "null", "list")
_STRING, _INT, _FLOAT, _BOOL, _NONE, _LIST = (kernel_int(k) for k in range(6))
_QUOTE, _COLON, _COMMA, _OPEN, _CLOSE, _LIST_OPEN = 34, 58, 44, 123, 125, 91
_BACKSLASH, _NEWLINE = 92, 10
_DEPTH = 64  # nesting the pass follows (a line nests at most 100 levels): deeper is declined
_MAX_KEYS = 256  # members of an input object the pass sorts; more are declined
# Columns of the row table: where each row's text ends in the id, input, expected output,
# metadata and row-hash buffers.
_COLUMNS = 5


@njit(borrows=True)
def _names_answers(text: Any, lo: int, hi: int) -> bool:
    """Whether the compact metadata ``text[lo:hi]`` may name ``expected_any`` (anywhere: a
    false alarm only costs the line the exact path)."""
    for k in range(lo, hi):
        if text[k] == _QUOTE and text[k + 1] == 0x65 and word_at(text, k, hi, _ANY_KEY) >= 0:
            return True
    return False


@njit(borrows=True)
def _tag_values(text: Any, offsets: Any, rows: Any, lo: Any, length: Any, stack: Any) -> None:
    """Where the value of each row's top-level ``tags`` member is in the compact metadata
    ``text[offsets[row]:offsets[row + 1]]``: ``text[lo[i]:lo[i] + length[i]]``; ``length``
    -1 where the metadata has no such member, -2 where it nests too deep to follow."""
    for i in range(rows.size):
        start, hi = offsets[rows[i]], offsets[rows[i] + 1]
        lo[i], length[i] = 0, -1
        q = start + 1
        while text[q] != _CLOSE:
            key = q
            value = skip_string(text, q, hi) + 1  # past the key's colon
            q = skip_value(text, value, hi, stack)
            if q < 0:
                length[i] = -2
                break
            if value - key == _TAGS_KEY.size and same_bytes(text, key, _TAGS_KEY, 0, value - key):
                lo[i], length[i] = value, q - value
            q += text[q] == _COMMA


@njit(borrows=True)
def _holds_object(text: Any, lo: int, hi: int) -> bool:
    """Whether the compact JSON value ``text[lo:hi]`` has an object in it (or is one)."""
    k = lo
    while k < hi:
        if text[k] == _QUOTE:
            k = skip_string(text, k, hi)
        elif text[k] == _OPEN:
            return True
        else:
            k += 1
    return False


@njit(borrows=True)
def _before(text: Any, a: int, a_end: int, b: int, b_end: int) -> bool:
    """Whether the bytes ``text[a:a_end]`` sort before ``text[b:b_end]``."""
    for k in range(min(a_end - a, b_end - b)):
        if text[a + k] != text[b + k]:
            return bool(text[a + k] < text[b + k])
    return a_end - a < b_end - b


@njit(borrows=True)
def _canonical_input(text: Any, lo: int, hi: int, out: Any, o: int, spans: Any, stack: Any) -> int:
    """Write the compact input object ``text[lo:hi]`` with its keys sorted (as the row hash
    takes it) at ``out[o:]``; the end, or -1 for an object with an object inside, or with
    two or more keys of which one is escaped (the order is that of the decoded keys)."""
    n = 0
    escaped = False
    q = lo + 1
    while text[q] != _CLOSE:
        if n == _MAX_KEYS:
            return -1
        key = q
        q = skip_string(text, q, hi)
        value = q + 1
        q = skip_value(text, value, hi, stack)
        if q < 0:
            return -1
        for k in range(key, value):
            escaped |= text[k] == _BACKSLASH
        if _holds_object(text, value, q):
            return -1
        spans[3 * n], spans[3 * n + 1], spans[3 * n + 2] = key, value, q
        n += 1
        q += text[q] == _COMMA
    if n < 2:
        return copy_bytes(text, lo, hi, out, o)
    if escaped:
        return -1
    for i in range(1, n):  # insertion sort by key (a few keys)
        a0, a1, a2 = spans[3 * i], spans[3 * i + 1], spans[3 * i + 2]
        j = i
        # the keys' text, without their quotes and the colon
        while j > 0 and _before(text, a0 + 1, a1 - 2, spans[3 * j - 3] + 1, spans[3 * j - 2] - 2):
            spans[3 * j], spans[3 * j + 1], spans[3 * j + 2] = (
                spans[3 * j - 3],
                spans[3 * j - 2],
                spans[3 * j - 1],
            )
            j -= 1
        spans[3 * j], spans[3 * j + 1], spans[3 * j + 2] = a0, a1, a2
    out[o] = _OPEN
    o += 1
    for i in range(n):
        if i:
            out[o] = _COMMA
            o += 1
        o = copy_bytes(text, spans[3 * i], spans[3 * i + 2], out, o)
    out[o] = _CLOSE
    return o + 1


@njit(borrows=True)
def _expected_type(text: Any, lo: int, hi: int) -> int:
    """The type code of the compact non-string value ``text[lo:hi]``; -1 for a value with an
    object inside (the row hash sorts its keys)."""
    c = text[lo]
    if c == _LIST_OPEN:
        return -1 if _holds_object(text, lo, hi) else _LIST
    if c in (0x74, 0x66):
        return _BOOL
    if c == 0x6E:
        return _NONE
    for k in range(lo, hi):
        if text[k] == 0x2E or text[k] == 0x65 or text[k] == 0x45:
            return _FLOAT
    return _INT


@njit(borrows=True)
def _sample(
    data: Any, p: int, stop: int, out: Any, at: Any, ends: Any, work: Any, scratch: Any
) -> int:
    """Read the sample object opening at ``p`` (its line ends at ``stop``) into the buffers
    ``out`` from positions ``at``, setting ``ends``; its expected type code, or -1 for a
    line the pass does not vouch for."""
    ids, inputs, expected, metadata, hashed = out
    stack, keys, spans, levels, long = work
    seen = 0
    id_end, input_end, expected_end, metadata_end = -1, -1, -1, -1
    kind, expected_at = -1, -1
    p = skip_space(data, p + 1, stop, False)
    while True:
        if p >= stop or data[p] != _QUOTE:
            return -1
        p, k = json_string(data, p, stop, scratch, 0)
        if p < 0:
            return -1
        p = skip_space(data, p, stop, False)
        if p >= stop or data[p] != _COLON:
            return -1
        p = skip_space(data, p + 1, stop, False)
        if p >= stop:
            return -1
        which = name_index(scratch, k, _NAMES, _NAME_OFF, 0, _NAME_OFF.size - 1)
        if which >= 0:
            if seen & (1 << which):  # a repeated member: Python keeps the last
                return -1
            seen |= 1 << which
        c = data[p]
        null = word_at(data, p, stop, NULL) if c == 0x6E else -1
        if which in (_ID, _SAMPLE_ID):
            if null >= 0:
                p = null  # as if absent
            elif c != _QUOTE or id_end >= 0:  # not a string, or both spellings given
                return -1
            else:
                p, id_end = json_string(data, p, stop, ids, at[0])
        elif which == _INPUT:
            if c != _OPEN:
                return -1
            p, input_end = compact_value(data, p, stop, inputs, at[1], stack, keys, long[0])
        elif which == _EXPECTED:
            expected_at = p
            if c == _QUOTE:
                p, expected_end = json_string(data, p, stop, expected, at[2])
                kind = _STRING
            elif c == _OPEN:
                return -1
            else:
                p, expected_end = compact_value(
                    data, p, stop, expected, at[2], stack, keys, long[1]
                )
                if p >= 0:
                    kind = _expected_type(expected, at[2], expected_end)
        elif which == _METADATA:
            if null >= 0:
                p = null
            elif c != _OPEN:
                return -1
            else:
                p, metadata_end = compact_value(
                    data, p, stop, metadata, at[3], stack, keys, long[2]
                )
        elif which >= _NULL_ONLY:
            if null < 0:
                return -1
            p = null
        else:  # a member the dataset does not read: valid JSON all the same
            p = skip_value(data, p, stop, levels)
        if p < 0:
            return -1
        p = skip_space(data, p, stop, False)
        if p < stop and data[p] == _COMMA:
            p = skip_space(data, p + 1, stop, False)
        elif p < stop and data[p] == _CLOSE:
            break
        else:
            return -1
    if skip_space(data, p + 1, stop, False) != stop or id_end < 0 or input_end < 0 or kind < 0:
        return -1
    if not surely_not_blank(ids, at[0], id_end):
        return -1
    if metadata_end < 0:
        metadata_end = copy_bytes(_EMPTY_MAP, 0, 2, metadata, at[3])
    elif _names_answers(metadata, at[3], metadata_end):
        return -1
    o = copy_bytes(_HASH_HEAD, 0, _HASH_HEAD.size, hashed, at[4])
    o = _canonical_input(inputs, at[1], input_end, hashed, o, spans, stack)
    if o < 0:
        return -1
    o = copy_bytes(_HASH_MIDDLE, 0, _HASH_MIDDLE.size, hashed, o)
    if kind == _STRING:
        o = encode_string(data, expected_at, stop, hashed, o)[1]
    else:
        o = copy_bytes(expected, at[2], expected_end, hashed, o)
    hashed[o] = _CLOSE
    ends[0], ends[1], ends[2], ends[3] = id_end, input_end, expected_end, metadata_end
    ends[4] = o + 1
    return kind


@njit
def _scan(data: Any, out: Any, table: Any, kinds: Any, lines: Any, work: Any) -> int:
    """Read every line of the JSONL bytes ``data``: the number of samples (non-blank lines).

    Sample ``i``'s texts end at ``table[:, i + 1]`` in the buffers ``out``; ``kinds[i]`` is
    its expected type code, -1 where the line (``data[lines[0, i]:lines[1, i]]``) is left to
    the exact code (its texts then empty)."""
    end = data.size
    scratch = np.empty(end + 1, np.uint8)
    at = np.zeros(_COLUMNS, np.int64)
    ends = np.zeros(_COLUMNS, np.int64)
    table[:, 0] = 0
    n = 0
    p = 0
    while p < end:
        stop = p
        while stop < end and data[stop] != _NEWLINE:
            stop += 1
        q = skip_space(data, p, stop, False)
        if q < stop:
            for c in range(_COLUMNS):
                at[c] = table[c, n]
            kind = -1
            if data[q] == _OPEN:
                copied = (work[4][0][0], work[4][1][0], work[4][2][0])
                kind = _sample(data, q, stop, out, at, ends, work, scratch)
                if kind < 0:  # the floats its texts recorded are forgotten too
                    work[4][0][0], work[4][1][0], work[4][2][0] = copied
            kinds[n] = kind
            lines[0, n] = p
            lines[1, n] = stop
            for c in range(_COLUMNS):
                table[c, n + 1] = ends[c] if kind >= 0 else at[c]
            n += 1
        p = stop + 1
    return n


def announce() -> None:
    """Say once on stderr that the pass compiles now, unless numba has it cached."""
    compiling("the JSONL dataset reader", _scan, digests_kernel)


def lines_loaded() -> bool:
    """Whether this process has already run the pass compiled (a further call compiles and
    loads nothing)."""
    dispatcher = _scan.dispatcher
    return dispatcher is not None and bool(dispatcher.signatures)


_Frame = Callable[[list[object]], pl.DataFrame]


def dataset_lines(data: bytes, samples_frame: _Frame, where: str) -> pl.DataFrame | None:
    """The dataset frame (``schema.DATASET_SCHEMA``) of a JSONL file's bytes (no BOM), or
    None: the exact reader must read the file (see the module).

    Args:
        data: the file's bytes.
        samples_frame: the exact code's frame of the records of the lines the pass leaves to
            it (raising ``DatasetError`` as it does).
        where: the file, as the user named it.
    """
    if not (data.isascii() or valid_utf8(data)):
        return None
    raw = np.frombuffer(data, np.uint8)
    slots = data.count(b"\n") + 1
    room = raw.size + 16  # no text the pass writes is longer than the line it reads
    out = tuple(np.empty(room, np.uint8) for _ in range(_COLUMNS))
    table = np.empty((_COLUMNS, slots + 1), np.int64)
    kinds = np.empty(slots, np.int8)
    lines = np.empty((2, slots), np.int64)
    work = (
        np.empty(2 * _DEPTH, np.int64),  # nesting
        np.empty(2 * 4096, np.int64),  # keys of the objects open
        np.empty(3 * _MAX_KEYS, np.int64),  # an input's members
        np.empty(_DEPTH, np.int64),  # nesting, as skip_value counts it
        # the floats the input, expected value and metadata record (no room to grow: the
        # buffers are the file's size)
        tuple(float_record(raw.size // 16 + 3, 0) for _ in range(3)),
    )
    n = _scan(raw, out, table, kinds, lines, work)
    if n == 0 or not all(written_as_repr(out[c + 1], work[4][c]) for c in range(3)):
        return None
    kinds, table, lines = kinds[:n], table[:, : n + 1], lines[:, :n]
    metadata = pl.Series(C.METADATA, string_array(table[3], out[3]))
    tags = _tags(metadata, table[3], out[3], kinds, work[3])  # declines lines with bad tags
    frame = pl.DataFrame(
        [
            pl.Series(C.SAMPLE_ID, string_array(table[0], out[0])),
            pl.Series(C.INPUT, string_array(table[1], out[1])),
            pl.Series(C.EXPECTED_OUTPUT, string_array(table[2], out[2])),
            pl.Series(C.EXPECTED_TYPE, np.array(_TYPES)[np.maximum(kinds, 0)], pl.String),
            metadata,
            tags,
            _row_hashes(table[4], out[4], kinds, data, lines),
        ]
    )
    left = np.flatnonzero(kinds < 0)
    if left.size:
        found = _exact_lines(data, lines[:, left], samples_frame, where)
        if found is None:
            return None
        exact, taken = found
        read = np.flatnonzero(kinds >= 0)
        order = np.argsort(np.concatenate([read, left[taken]]), kind="stable")
        frame = pl.concat([frame[read], exact]).select(pl.all().gather(order))
    if frame.is_empty() or frame.get_column(C.SAMPLE_ID).is_duplicated().any():
        return None  # the exact reader says there is no sample, or names the repeated id
    return frame


def _tags(metadata: pl.Series, offsets: Any, text: Any, kinds: Any, stack: Any) -> pl.Series:
    """The tags of each sample the pass read, from its metadata's ``tags`` member (each
    distinct value parsed once); a line whose ``metadata.tags`` is not a string, a list of
    strings or null is left to the exact code (its kind set to -1), which names the error.
    ``metadata`` is the column of the texts at ``offsets`` in ``text``."""
    named = metadata.str.contains('"tags":', literal=True).to_numpy()  # or a false alarm
    rows = np.flatnonzero(named & (kinds >= 0))
    lo, length = np.empty(rows.size, np.int64), np.empty(rows.size, np.int64)
    if rows.size:
        _tag_values(text, offsets, rows, lo, length, stack)
    kinds[rows[length == -2]] = -1
    values = pl.Series(strings_array(lo, np.maximum(length, -1), text, copy=False))
    distinct = values.drop_nulls().unique().sort()
    lists: list[list[str]] = [[]]  # the lists by code: 0 for no tags
    bad = []
    for value in distinct.to_list():
        tags = _tag_list(json.loads(value))
        lists.append([] if tags is None else tags)
        if tags is None:
            bad.append(value)
    if bad:
        kinds[rows[values.is_in(bad).to_numpy()]] = -1
    codes = np.zeros(kinds.size, np.int64)
    codes[rows] = values.rank("dense").fill_null(0).cast(pl.Int64).to_numpy()
    return pl.Series(C.TAGS, lists, pl.List(pl.String)).gather(codes)


def _tag_list(value: object) -> list[str] | None:
    """The tags of a ``metadata.tags`` value, or None where the exact code reports an error."""
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(tag, str) for tag in value):
        return None
    return trimmed_tags(value)


def _row_hashes(offsets: Any, text: Any, kinds: Any, data: bytes, lines: Any) -> pl.Series:
    """The row hash of each sample the pass read, from the text it wrote for it; where that
    text may not be the canonical JSON eval-harness hashes (``MAYBE_NOT_CANONICAL``), from
    the canonical JSON of the line's values."""
    hashes = pl.Series(C.ROW_HASH, sha256_hex(offsets, text))
    hashed = pl.Series(string_array(offsets, text))
    suspect = hashed.str.contains(MAYBE_NOT_CANONICAL) & pl.Series(kinds >= 0)
    rows = suspect.arg_true().to_list()
    if not rows:
        return hashes
    canonical = []
    for i in rows:
        record = json.loads(data[lines[0, i] : lines[1, i]])
        value = (
            f'{{"input":{php_canonical_json(record["input"])},'
            f'"expected":{php_canonical_json(record["expected_output"])}}}'
        )
        canonical.append(hashlib.sha256(value.encode("utf-8")).hexdigest())
    return hashes.scatter(rows, canonical)


def _exact_lines(
    data: bytes, lines: Any, samples_frame: _Frame, where: str
) -> tuple[pl.DataFrame, Any] | None:
    """The exact code's frame of the samples on ``lines`` (start and end of each), and which
    of the lines hold one (the others are blank as Python sees them); None on any error."""
    fast = not long_digit_run(data)
    records, taken = [], []
    for k, (lo, hi) in enumerate(zip(lines[0].tolist(), lines[1].tolist(), strict=True)):
        line = data[lo:hi].decode("utf-8")
        if line.strip():
            try:
                records.append(load_json(line, where, "Dataset JSONL", fast=fast))
            except (ValueError, DatasetError):
                return None
            taken.append(k)
    if not records:
        return pl.DataFrame(schema=C.DATASET_SCHEMA), np.array(taken, np.int64)
    try:
        return samples_frame(records), np.array(taken, np.int64)
    except DatasetError:
        return None
