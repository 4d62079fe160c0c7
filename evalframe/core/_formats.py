"""Dataset files into Python values, one reader per format (the I/O half of ``read_dataset``).

A reader takes the file, the path as the user spelled it (``where``, which prefixes every
message) and the requested dataset name, reads and decodes the file, and returns what it
found without validating a single sample:

* ``Document``: an eval-harness ``eval-harness.dataset.v1`` document (``.yaml``/``.yml``, and
  ``.json`` files in the same shape), whose fields ``evalframe.core._dataset`` checks;
* ``Records``: sample records (``.json`` lists, ``.jsonl``, ``.csv``, ``.parquet``) with the
  dataset name (the requested one, else the file stem).

``evalframe.core._dataset`` turns either into a ``Dataset``. Unreadable files, invalid UTF-8,
unparseable content and files past the nesting and alias limits (``MAX_DEPTH``,
``MAX_ALIAS_NODES``) are ``DatasetError`` here; everything about the samples is checked there.
"""

from __future__ import annotations

import codecs
import contextlib
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import orjson
import polars as pl
import yaml

from evalframe.core import schema as C
from evalframe.core._errors import DatasetError
from evalframe.core._parquet_source import open_source, parquet_files, source_stem
from evalframe.core._yaml import (
    MAX_ALIAS_NODES,
    MAX_DEPTH,
    YamlLimitError,
    parse_yaml,
    yaml_problem,
)

__all__ = [
    "COLUMNAR_FIELDS",
    "MAX_ALIAS_NODES",
    "MAX_DEPTH",
    "READERS",
    "Document",
    "Records",
    "Source",
    "check_json_depth",
    "columnar_source",
    "decode_utf8",
    "depth_error",
    "digits_as_zero",
    "jsonl_source",
    "load_json",
    "long_digit_run",
    "long_zero_run",
    "read_bytes",
    "read_parquet_source",
    "read_text",
    "records_from_columns",
    "yaml_limit_error",
]


@dataclass(frozen=True, slots=True)
class Source:
    """Where samples come from, and the format rules that differ between sources."""

    where: str  # prefixes every message: the file path, or "Dataset '<name>'"
    label: str  # "YAML", "JSON", "JSONL", "CSV", "Parquet", "frame" or "records"
    id_keys: tuple[str, ...] = ("id",)
    text_fields: bool = False  # input, metadata and expected_type may come as text
    tags_field: bool = False  # a per-sample "tags" field fills metadata.tags

    def error(self, message: str) -> DatasetError:
        return DatasetError(f"{self.where}: {message}")

    @property
    def a_list(self) -> str:
        return "a YAML list" if self.label == "YAML" else "a list"


@dataclass(frozen=True, slots=True)
class Document:
    """An eval-harness dataset document as parsed (any value: checking it is not I/O)."""

    value: object
    source: Source


@dataclass(frozen=True, slots=True)
class Records:
    """Sample records (possibly a lazy iterator that raises on a bad line) and a name."""

    samples: Iterable[object]
    source: Source
    name: str


Reader = Callable[[Path, str, str | None], Document | Records]


# --- the formats ------------------------------------------------------------------------------


def _read_yaml(file: Path, where: str, name: str | None) -> Document:
    source = Source(where, "YAML")
    text = read_text(file, where, "Dataset YAML")
    try:
        document = parse_yaml(text)
    except YamlLimitError as exc:
        raise yaml_limit_error(exc, where, "Dataset YAML") from exc
    except yaml.YAMLError as exc:
        raise source.error(f"Dataset YAML is not valid YAML: {yaml_problem(exc)}") from exc
    return Document(document, source)


def _read_json(file: Path, where: str, name: str | None) -> Document | Records:
    text = read_text(file, where, "Dataset JSON")
    if not text.strip():
        raise DatasetError(f"{where}: Dataset JSON file is empty.")
    try:
        document = load_json(text, where, "Dataset JSON")
    except DatasetError:  # the nesting limit: already its own message
        raise
    except ValueError as exc:
        raise DatasetError(f"{where}: Dataset JSON is not valid JSON: {exc}.") from exc
    if isinstance(document, dict):
        return Document(document, Source(where, "JSON"))
    if isinstance(document, list):
        source = Source(where, "JSON", ("sample_id", "id"), tags_field=True)
        return Records(document, source, name or file.stem)
    raise DatasetError(
        f"{where}: Dataset JSON must be an object with 'name' and 'samples', or a list of "
        f"samples; got {type(document).__name__}."
    )


def jsonl_source(where: str) -> Source:
    """Where a JSONL file's samples come from, and its format rules."""
    return Source(where, "JSONL", ("sample_id", "id"), tags_field=True)


def _read_jsonl(file: Path, where: str, name: str | None) -> Records:
    source = jsonl_source(where)
    text = read_text(file, where, "Dataset JSONL")
    if not text.strip():
        raise source.error("Dataset JSONL file is empty.")
    return Records(_jsonl_values(text, source), source, name or file.stem)


def _jsonl_values(text: str, source: Source) -> Iterator[object]:
    fast = not long_digit_run(text.encode("utf-8", "surrogatepass"))
    # Split on "\n" only: str.splitlines() would also split at U+2028 inside JSON strings.
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            try:
                yield load_json(line, source.where, "Dataset JSONL", rescan=text, fast=fast)
            except DatasetError:  # the nesting limit: already its own message
                raise
            except ValueError as exc:
                raise source.error(
                    f"Dataset JSONL line {number} is not valid JSON: {exc}."
                ) from exc


def _read_csv(file: Path, where: str, name: str | None) -> Records:
    source = columnar_source(name or file.stem, "CSV", where)
    text = read_text(file, where, "Dataset CSV")
    if not text.strip():
        raise source.error("Dataset CSV file is empty.")
    try:
        # Every cell as text; an empty cell is null (absent), except in expected_output.
        frame = pl.read_csv(text.encode("utf-8"), infer_schema=False)
    except pl.exceptions.PolarsError as exc:
        raise source.error(f"Dataset CSV could not be parsed: {exc}") from exc
    if C.EXPECTED_OUTPUT in frame.columns:
        frame = frame.with_columns(pl.col(C.EXPECTED_OUTPUT).fill_null(""))
    wanted = [column for column in COLUMNAR_FIELDS if column in frame.columns]
    columns = {column: frame.get_column(column).to_list() for column in wanted}
    records = records_from_columns(columns, frame.columns, source)
    return Records(records, source, name or file.stem)


def _read_parquet(file: Path, where: str, name: str | None) -> Records:
    import pyarrow as pa
    import pyarrow.parquet as pq

    source = columnar_source(name or file.stem, "Parquet", where)
    data = read_bytes(file, where, "Dataset Parquet")
    if not data:
        raise source.error("Dataset Parquet file is empty.")
    try:
        table = pq.read_table(pa.BufferReader(data))
    except (pa.ArrowException, OSError, KeyError, ValueError) as exc:
        raise source.error(f"Dataset Parquet is not a valid Parquet file: {exc}") from exc
    return _table_records(table, source, name or file.stem)


def _table_records(table: Any, source: Source, name: str) -> Records:
    import pyarrow as pa

    wanted = [column for column in COLUMNAR_FIELDS if column in table.column_names]
    try:
        # Arrow maps come back as dicts rather than lists of (key, value) pairs.
        columns = {c: table.column(c).to_pylist(maps_as_pydicts="strict") for c in wanted}
    except (pa.ArrowException, KeyError, ValueError) as exc:
        raise source.error(f"Dataset Parquet could not be read: {exc}") from exc
    return Records(records_from_columns(columns, table.column_names, source), source, name)


def read_parquet_source(text: str, name: str | None) -> Records:
    """Dataset records from a directory, glob or URL of Parquet files (``_parquet_source``),
    read in sorted file order; the name defaults to the last plain part of the path.

    Raises:
        DatasetError: no file matched, a file is unreadable (named), the files' columns do
            not agree, or a sample breaks a rule.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    stem = source_stem(text)
    source = columnar_source(name or stem, "Parquet", text)
    files = parquet_files(text)
    if not files:
        raise DatasetError(f"{text}: no Parquet file found there.")
    tables = []
    for url in files:
        try:
            with open_source(url) as f:
                tables.append(pq.read_table(f))
        except FileNotFoundError as exc:
            raise DatasetError(f"{url} does not exist or is not a regular file.") from exc
        except (pa.ArrowException, OSError) as exc:
            raise DatasetError(f"{url}: not a valid Parquet file: {exc}") from exc
    try:
        table = pa.concat_tables(tables, promote_options="permissive")
    except pa.ArrowException as exc:
        raise source.error(f"the Parquet files' columns do not agree: {exc}") from exc
    return _table_records(table, source, name or stem)


READERS: Final[dict[str, Reader]] = {
    ".yaml": _read_yaml,
    ".yml": _read_yaml,
    ".json": _read_json,
    ".jsonl": _read_jsonl,
    ".csv": _read_csv,
    ".parquet": _read_parquet,
}


# --- columns (CSV, Parquet and frames) --------------------------------------------------------

COLUMNAR_FIELDS: Final[tuple[str, ...]] = (
    C.SAMPLE_ID,
    "id",
    C.INPUT,
    C.EXPECTED_OUTPUT,
    C.EXPECTED_TYPE,
    C.METADATA,
    C.TAGS,
    "reference_contexts",
    "expected_any",
)


def columnar_source(name: str, label: str, where: str | None = None) -> Source:
    """The rules for samples in columns: ``sample_id`` or ``id``, text fields, ``tags``."""
    return Source(
        where or f"Dataset '{name}'",
        label,
        ("sample_id", "id"),
        text_fields=True,
        tags_field=True,
    )


def records_from_columns(
    columns: dict[str, list[Any]], found: Sequence[str], source: Source
) -> Iterator[dict[str, Any]]:
    """One record per row of ``columns``, once the required columns are known to be there."""
    required = [("sample_id", "id"), (C.INPUT,), (C.EXPECTED_OUTPUT,)]
    for choices in required:
        if not any(choice in columns for choice in choices):
            spelled = " (or 'id')" if len(choices) > 1 else ""
            raise source.error(
                f"Dataset {source.label} is missing required column '{choices[0]}'{spelled}; "
                f"found columns: {', '.join(found) or '(none)'}."
            )
    keys = list(columns)
    return (dict(zip(keys, values, strict=True)) for values in zip(*columns.values(), strict=True))


# --- limits (shared with evalframe.core._outputs) ---------------------------------------


def depth_error(where: str, subject: str, line: int | None = None) -> DatasetError:
    """The error for a value nested deeper than ``MAX_DEPTH``: the file, the line, the limit."""
    at = "" if line is None else f" (line {line})"
    return DatasetError(
        f"{where}: {subject} nests lists and maps more than {MAX_DEPTH} levels deep{at}; "
        f"evalframe reads at most {MAX_DEPTH} levels of nesting, counted from the top of the "
        "file, a JSONL line or a CSV cell."
    )


def yaml_limit_error(exc: YamlLimitError, where: str, subject: str) -> DatasetError:
    """A ``YamlLimitError`` as a ``DatasetError`` naming the file, the line and the limit."""
    if "alias" not in exc.problem:
        return depth_error(where, subject, exc.line)
    return DatasetError(
        f"{where}: {subject} {exc.problem} (line {exc.line}); aliases may add at most "
        f"{MAX_ALIAS_NODES:,} nodes to a document, or as many as it writes out itself if that "
        "is more."
    )


def load_json(
    text: str,
    where: str,
    subject: str,
    *,
    rescan: str | None = None,
    lines: bool = True,
    fast: bool = False,
    **options: Any,
) -> Any:
    """``json.loads`` of a value that may nest at most ``MAX_DEPTH`` levels.

    The text is parsed first and the parsed value's depth checked with a walk over its
    lists and maps; only a value that nests too deeply (or past the parser's recursion
    limit) is scanned again as bytes, to name the line where it crosses the limit. So the
    common case costs one parse and one walk, whatever the strings hold.

    Args:
        text: the JSON text.
        where: the file, for messages.
        subject: what the text is, for messages.
        rescan: the whole file's text when ``text`` is one of its JSONL lines, so the message
            names the file's line.
        lines: name the line in the message.
        fast: parse with orjson first, where the text holds no run of 19 digits (orjson
            reads an integer past 64 bits as a float); what orjson refuses (``NaN``,
            ``Infinity``, ``1e999``, a lone surrogate, deep nesting, bad JSON) goes to
            ``json.loads``, so the value and every message are ``json.loads``'s.
        options: passed to ``json.loads``.

    Raises:
        ValueError: the text is not valid JSON.
        DatasetError: it nests more than ``MAX_DEPTH`` levels deep.
    """
    value = _NOT_READ
    if fast:
        with contextlib.suppress(orjson.JSONDecodeError):  # json.loads says why
            value = orjson.loads(text)
    try:
        if value is _NOT_READ:
            value = json.loads(text, **options)
    except RecursionError:
        value = _TOO_DEEP
    # A short text (a JSONL line, say) with no more brackets than the limit cannot nest past
    # it: counting them costs less than the walk. A long text is walked without counting
    # (it has more brackets than the limit anyway, and a count of 90 MB costs 0.1 s).
    shallow = len(text) < _COUNTED_BELOW and text.count("{") + text.count("[") <= MAX_DEPTH
    if value is _TOO_DEEP or (not shallow and _deeper_than(value, MAX_DEPTH)):
        check_json_depth(text if rescan is None else rescan, where, subject, lines=lines)
        raise depth_error(where, subject)
    return value


_TOO_DEEP: Final = object()
_NOT_READ: Final = object()
_DIGITS_AS_ZERO: Final = bytes.maketrans(b"123456789", b"000000000")


def long_digit_run(data: bytes) -> bool:
    """Whether ``data`` holds 19 digits in a row, where orjson would read an integer past 64
    bits as a float (a bytes translation and search: a regular expression takes 50 times as
    long over a large file)."""
    return long_zero_run(digits_as_zero(data))


def digits_as_zero(data: bytes) -> bytes:
    """``data`` with every digit written as ``0``, to search for numbers' shapes."""
    return data.translate(_DIGITS_AS_ZERO)


def long_zero_run(zeros: bytes) -> bool:
    """:func:`long_digit_run` of ``zeros``, a text already given to :func:`digits_as_zero`."""
    return b"0" * 19 in zeros


_COUNTED_BELOW: Final = 1 << 16


def _deeper_than(value: object, limit: int) -> bool:
    """Whether ``value``'s lists and maps nest more than ``limit`` levels (no recursion)."""
    if not isinstance(value, dict | list):
        return False
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        for child in node.values() if isinstance(node, dict) else node:  # type: ignore[attr-defined]
            if isinstance(child, dict | list):
                stack.append((child, depth + 1))
    return False


_LIST_OPEN, _LIST_CLOSE, _MAP_OPEN, _MAP_CLOSE = (ord(c) for c in "[]{}")


def check_json_depth(text: str, where: str, subject: str, *, lines: bool = True) -> None:
    """Refuse JSON (or JSONL) text whose lists and objects nest deeper than ``MAX_DEPTH``.

    A few vectorised passes over the bytes: brackets inside strings do not count, and a quote
    after an odd run of backslashes is escaped, not the end of its string. Invalid JSON is
    left to the parser. Text with at most ``MAX_DEPTH`` brackets is not scanned at all.

    Args:
        text: the JSON text.
        where: the file, for the message.
        subject: what the text is, for the message.
        lines: name the line in the message (text that is a whole file).

    Raises:
        DatasetError: the text nests too deeply; names the file, the line and the limit.
    """
    data = text.encode("utf-8", "surrogatepass")
    if data.count(b"[") + data.count(b"{") <= MAX_DEPTH:
        return
    import numpy as np  # only for texts with enough brackets to nest too deep

    raw = np.frombuffer(data, np.uint8)
    quotes = np.flatnonzero(raw == ord('"'))
    slashes = np.flatnonzero(raw == ord("\\"))
    if slashes.size and quotes.size:
        # Length of the run of backslashes that ends just before each quote.
        run_start = slashes[np.r_[True, np.diff(slashes) != 1]]
        before = quotes - 1
        starts = run_start[np.maximum(np.searchsorted(run_start, before, "right") - 1, 0)]
        in_run = np.isin(before, slashes, assume_unique=True)
        escaped = in_run & ((before - starts + 1) % 2 == 1)
        quotes = quotes[~escaped]
    brackets = np.flatnonzero(
        (raw == _LIST_OPEN) | (raw == _MAP_OPEN) | (raw == _LIST_CLOSE) | (raw == _MAP_CLOSE)
    )
    outside = np.searchsorted(quotes, brackets) % 2 == 0
    brackets = brackets[outside]
    kinds = raw[brackets]
    depth = np.cumsum(np.where((kinds == _LIST_OPEN) | (kinds == _MAP_OPEN), 1, -1))
    too_deep = np.flatnonzero(depth > MAX_DEPTH)
    if too_deep.size:
        offset = int(brackets[too_deep[0]])
        line = data.count(b"\n", 0, offset) + 1 if lines else None
        raise depth_error(where, subject, line)


# --- bytes and text (shared with evalframe.core._outputs) -------------------------------


def read_bytes(file: Path, where: str, subject: str) -> bytes:
    try:
        return file.read_bytes()
    except OSError as exc:
        noun = subject if subject.endswith("file") else f"{subject} file"
        raise DatasetError(f"{noun} is missing or unreadable: {where}") from exc


def read_text(file: Path, where: str, subject: str) -> str:
    return decode_utf8(read_bytes(file, where, subject), where, subject)


def decode_utf8(data: bytes, where: str, subject: str) -> str:
    """UTF-8 text without a BOM; invalid bytes are an error naming the line and offset."""
    body = data.removeprefix(codecs.BOM_UTF8)
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = body.count(b"\n", 0, exc.start) + 1
        raise DatasetError(
            f"{where}: {subject} is not valid UTF-8: byte 0x{body[exc.start]:02x} at line "
            f"{line} (byte offset {exc.start}) is {exc.reason}."
        ) from exc
