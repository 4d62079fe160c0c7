"""Dataset files into frames: ``read_dataset`` and the ``Dataset`` frame.

A dataset has one row per sample in the columns of ``schema.DATASET_SCHEMA``. Formats are
chosen by extension:

* ``.yaml`` / ``.yml``: eval-harness's ``eval-harness.dataset.v1`` document, with every one of
  its validation rules, plus an optional ``metrics:`` list (the default metric set).
* ``.json``: the same document, or a list of sample objects.
* ``.jsonl``: one sample object per line.
* ``.csv`` and ``.parquet``: one sample per row.

Samples read from JSON, JSONL, CSV and Parquet may spell the id ``sample_id`` or ``id`` and may
carry a ``tags`` field (a list, a JSON list text, or ``a|b`` text) that fills ``metadata.tags``.
CSV and Parquet ``input`` may be JSON object text, or plain text, which becomes
``{"question": text}``; ``metadata`` may be JSON object text. CSV cells are text, so a CSV
``expected_output`` is a string unless an ``expected_type`` column says otherwise (as in a
frame evalframe wrote); Parquet ``expected_output`` may be any Arrow type.

Values are kept as JSON: YAML dates and timestamps become ISO 8601 strings
(``2024-05-01``, ``2024-05-01T10:00:00+00:00``), map keys become strings, and NaN or infinite
numbers are rejected. YAML scalars follow the YAML 1.2 core schema, as eval-harness's parser
does: ``yes``, ``no``, ``on`` and ``off`` stay strings, and a repeated key is an error.
"""

from __future__ import annotations

import codecs
import io
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, cast

import polars as pl

from evalframe.core._any_of import EXPECTED_ANY, _BadAnswers, with_expected_any
from evalframe.core._canon import (
    JSONValue,
    UnsupportedValueError,
    compact,
    expected_type_of,
    row_hash,
    to_json_value,
    trimmed_tags,
)
from evalframe.core._contexts import (
    REFERENCE_CONTEXTS,
    _BadContexts,
    with_reference_contexts,
)
from evalframe.core._dataset_columns import dataset_columns, finite_json, first_surrogate_sample
from evalframe.core._errors import DatasetError, type_name
from evalframe.core._formats import (
    COLUMNAR_FIELDS,
    READERS,
    Document,
    Source,
    columnar_source,
    jsonl_source,
    load_json,
    read_parquet_source,
    records_from_columns,
)
from evalframe.core._gc import gc_paused
from evalframe.core._njit import worth_compiling
from evalframe.core._parquet_source import is_parquet_source
from evalframe.core._trajectory import check_expectation_texts, check_expectations

__all__ = ["SCHEMA_VERSION", "Dataset", "read_dataset"]

SCHEMA_VERSION: Final = "eval-harness.dataset.v1"
"""The only dataset schema version there is, and the default when a file gives none."""

_DATASET_ATTRIBUTES: Final = ("name", "metrics", "repetitions", "path", "schema_version")
_EXPECTED_TYPES: Final = ("string", "int", "float", "bool", "null", "list", "map")
# A JSONL file from this size on is read by a compiled pass first (core/_dataset_lines.py);
# below it the exact reader is fast enough and numba stays unloaded, unless this process has
# the pass loaded already (a larger file was read), from _WARM_FROM.
_COMPILED_FROM: Final = 4 << 20
_WARM_FROM: Final = 64 << 10


class Dataset(pl.DataFrame):
    """A dataset frame: one row per sample, with its name and defaults as attributes.

    Columns are those of ``schema.DATASET_SCHEMA``, in order: ``sample_id``, ``input``
    (compact JSON object), ``expected_output`` (the text itself for a string, else compact
    JSON), ``expected_type``, ``metadata`` (compact JSON object), ``tags`` and ``row_hash``.
    ``json.loads(expected_output)`` gives back any non-string expected value.

    Build one with ``read_dataset``, ``Dataset.from_records`` or ``Dataset.from_frame``.
    Polars operations on a dataset return plain ``pl.DataFrame`` values.

    Attributes:
        name: the dataset name.
        metrics: the dataset's default metric specs (``metrics:`` in YAML), maybe empty.
        repetitions: executions per row the file asks for, or None when it does not say.
        path: the file it was read from, if any.
        schema_version: always ``"eval-harness.dataset.v1"``.

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records(
        ...     [{"id": "q1", "input": {"question": "Refund window?"},
        ...       "expected_output": "30 days", "metadata": {"tags": [" policy "]}},
        ...      {"id": "q2", "input": {"query": "refunds"}, "expected_output": ["d1", "d7"]}],
        ...     name="faq")
        >>> ds.name, ds.height
        ('faq', 2)
        >>> ds.select("sample_id", "expected_output", "expected_type", "tags")
        shape: (2, 4)
        ┌───────────┬─────────────────┬───────────────┬────────────┐
        │ sample_id ┆ expected_output ┆ expected_type ┆ tags       │
        │ ---       ┆ ---             ┆ ---           ┆ ---        │
        │ str       ┆ str             ┆ str           ┆ list[str]  │
        ╞═══════════╪═════════════════╪═══════════════╪════════════╡
        │ q1        ┆ 30 days         ┆ string        ┆ ["policy"] │
        │ q2        ┆ ["d1","d7"]     ┆ list          ┆ []         │
        └───────────┴─────────────────┴───────────────┴────────────┘
    """

    name: str
    metrics: list[str]
    repetitions: int | None
    path: Path | None
    schema_version: str

    def __new__(cls, *args: Any, **kwargs: Any) -> pl.DataFrame:  # type: ignore[misc]
        # Polars makes new frames with self.__class__(...) and cls._from_pydf(...): they are
        # plain frames, not datasets without a name. _wrap() makes datasets.
        return pl.DataFrame(*args, **kwargs)

    @classmethod
    def _from_pydf(cls, py_df: Any) -> pl.DataFrame:
        return pl.DataFrame._from_pydf(py_df)

    @classmethod
    def from_frame(
        cls,
        frame: pl.DataFrame,
        *,
        name: str,
        metrics: Sequence[str] = (),
        repetitions: int | None = None,
        path: str | os.PathLike[str] | None = None,
    ) -> Dataset:
        """A dataset from a frame with one row per sample.

        The frame needs ``sample_id`` (or ``id``), ``input`` and ``expected_output``, and
        may have ``metadata``, ``tags`` and ``expected_type``; other columns are ignored.
        Columns follow the Parquet rules (module docstring), so a dataset frame, or one
        read back from a file a dataset was written to, gives the same dataset again.

        Args:
            frame: the samples.
            name: the dataset name.
            metrics: default metric specs.
            repetitions: executions per row, at least 1.
            path: where the samples came from, if anywhere.

        Raises:
            DatasetError: a missing column or an invalid sample, name, metric list or
                repetition count.

        Examples:
            >>> import polars as pl
            >>> frame = pl.DataFrame({"id": ["a"], "input": ["What is 2+2?"],
            ...                       "expected_output": ["4"]})
            >>> Dataset.from_frame(frame, name="math").row(0)[:3]
            ('a', '{"question":"What is 2+2?"}', '4')
        """
        source = columnar_source(name, "frame")
        wanted = [column for column in COLUMNAR_FIELDS if column in frame.columns]
        columns = {column: frame.get_column(column).to_list() for column in wanted}
        records = records_from_columns(columns, frame.columns, source)
        return cls._build(records, source, name, metrics, repetitions, path)

    @classmethod
    def from_records(
        cls,
        records: Iterable[Mapping[str, Any]],
        *,
        name: str,
        metrics: Sequence[str] = (),
        repetitions: int | None = None,
        path: str | os.PathLike[str] | None = None,
    ) -> Dataset:
        """A dataset from sample mappings with ``id``, ``input``, ``expected_output``, ``metadata``.

        The sample rules are the YAML ones; ``sample_id`` may stand for
        ``id`` and a ``tags`` field may give ``metadata.tags``.

        Args:
            records: the samples.
            name: the dataset name.
            metrics: default metric specs.
            repetitions: executions per row, at least 1.
            path: where the samples came from, if anywhere.

        Raises:
            DatasetError: an invalid sample, name, metric list or repetition count.

        Examples:
            >>> ds = Dataset.from_records(
            ...     [{"id": "q1", "input": {}, "expected_output": 3}], name="n", repetitions=2)
            >>> ds.get_column("expected_type").to_list(), ds.repetitions
            (['int'], 2)
        """
        source = Source(f"Dataset '{name}'", "records", ("id", "sample_id"), tags_field=True)
        rows = (r if type(r) is dict else dict(r) if isinstance(r, Mapping) else r for r in records)
        return cls._build(rows, source, name, metrics, repetitions, path)

    @classmethod
    def _build(
        cls,
        records: Iterable[object],
        source: Source,
        name: object,
        metrics: object,
        repetitions: object,
        path: str | os.PathLike[str] | None,
    ) -> Dataset:
        if not isinstance(name, str) or not name.strip():
            raise DatasetError(f"Dataset name must be a non-empty string; got {name!r}.")
        with gc_paused():
            frame = _samples_frame(records, source)
        return cls._wrap(
            frame,
            name=name,
            metrics=_check_metrics(metrics, "metrics", source.where),
            repetitions=_check_repetitions(repetitions, "repetitions", source.where),
            path=None if path is None else Path(path),
        )

    @classmethod
    def _wrap(
        cls,
        frame: pl.DataFrame,
        *,
        name: str,
        metrics: list[str],
        repetitions: int | None,
        path: Path | None,
        schema_version: str = SCHEMA_VERSION,
    ) -> Dataset:
        dataset = object.__new__(cls)
        dataset._df = frame._df
        dataset.name = name
        dataset.metrics = metrics
        dataset.repetitions = repetitions
        dataset.path = path
        dataset.schema_version = schema_version
        return dataset

    def __repr__(self) -> str:
        return f"Dataset {self.name!r}: {self.height} samples\n{super().__repr__()}"

    def __reduce__(self) -> tuple[Any, ...]:
        attributes = {key: getattr(self, key) for key in _DATASET_ATTRIBUTES}
        return _unpickle_dataset, (self.serialize(), attributes)


def _unpickle_dataset(data: bytes, attributes: dict[str, Any]) -> Dataset:
    return Dataset._wrap(pl.DataFrame.deserialize(io.BytesIO(data)), **attributes)


def read_dataset(path: str | os.PathLike[str], *, name: str | None = None) -> Dataset:
    """Read a dataset file (YAML, JSON, JSONL, CSV or Parquet, by extension), or Parquet
    files named by a directory (searched recursively), a glob or an fsspec URL.

    Args:
        path: the file; or a directory, glob or URL of Parquet files, read in sorted order
            (``s3://`` and other remote filesystems need fsspec and their package).
        name: the dataset name. YAML files (and JSON files in the YAML document shape)
            declare their own name, which must then equal this one; for other files it
            defaults to the file stem.

    Returns:
        The dataset, in file order.

    Raises:
        DatasetError: the file is missing, unreadable, not valid UTF-8 or not parseable, or
            a rule is broken. The message names the file, the sample index and id, the
            field and what was expected.

    Examples:
        >>> import pathlib, tempfile
        >>> file = pathlib.Path(tempfile.mkdtemp()) / "faq.yaml"
        >>> _ = file.write_text(
        ...     "name: faq\\nsamples:\\n"
        ...     "  - id: q1\\n    input: {question: How many days?}\\n"
        ...     "    expected_output: 30 days\\n")
        >>> ds = read_dataset(file)
        >>> ds.name, ds.get_column("row_hash")[0][:12]
        ('faq', '4d2e94278cc6')
    """
    file = Path(path)
    where = os.fspath(path)
    suffix = file.suffix.lower()
    parquet = suffix == ".parquet" or suffix not in READERS
    if parquet and not file.is_file() and is_parquet_source(where):
        with gc_paused():
            many = read_parquet_source(where, name)
            return Dataset._build(many.samples, many.source, many.name, (), None, None)
    reader = READERS.get(suffix)
    if reader is None:
        raise DatasetError(
            f"{where}: unsupported dataset file extension {file.suffix!r}; expected one of "
            ".yaml, .yml, .json, .jsonl, .csv or .parquet."
        )
    with gc_paused():
        compiled = _compiled_jsonl(file, where, name) if suffix == ".jsonl" else None
        if compiled is not None:
            return compiled
        found = reader(file, where, name)
        if isinstance(found, Document):
            return _from_document(found.value, found.source, name, file)
        return Dataset._build(found.samples, found.source, found.name, (), None, file)


def _compiled_jsonl(file: Path, where: str, name: str | None) -> Dataset | None:
    """A large JSONL file read by the compiled pass, or None: the exact reader reads it (a
    small file, any error, anything the pass leaves to it whole)."""
    try:
        size = file.stat().st_size
    except OSError:
        return None
    loaded = sys.modules.get("evalframe.core._dataset_lines")
    warm = size >= _WARM_FROM and loaded is not None and loaded.lines_loaded()
    name = name or file.stem
    if not (warm or worth_compiling(size, _COMPILED_FROM - 1)) or not name.strip():
        return None
    try:
        data = file.read_bytes()
    except OSError:
        return None
    from evalframe.core import _dataset_lines as lines  # imports numpy, and numba to compile

    if not warm:
        lines.announce()
    source = jsonl_source(where)
    frame = lines.dataset_lines(
        data.removeprefix(codecs.BOM_UTF8), lambda records: _samples_frame(records, source), where
    )
    if frame is None:
        return None
    check_expectation_texts(
        frame.get_column("sample_id"), frame.get_column("metadata"), source.error
    )
    return Dataset._wrap(frame, name=name, metrics=[], repetitions=None, path=file)


# --- per-sample validation ------------------------------------------------------------------


_Sample = tuple[str, dict[str, JSONValue], JSONValue, dict[str, JSONValue], list[str]]


def _samples_frame(records: Iterable[object], source: Source) -> pl.DataFrame:
    """Validate samples one by one, then build the dataset columns a column at a time."""
    samples: list[_Sample] = []
    append, plain, check = samples.append, _plain_sample, _sample
    id_keys = (*source.id_keys, None)[:2]
    try:
        for index, record in enumerate(records):
            append(plain(record, index, id_keys, source) or check(record, index, source))
    except DatasetError:
        # Repeated ids and lone surrogates are looked for once the samples are in: report the
        # first problem in file order, as a sample-by-sample check would.
        earlier = _first_problem(samples, source)
        if earlier is not None:
            raise earlier  # noqa: B904  # its cause is set: the lone surrogate
        raise
    if not samples:
        raise source.error(f"Dataset {source.label} must declare at least one sample.")
    ids, inputs, expected, metadata, tags = (list(column) for column in zip(*samples, strict=True))
    if len(set(ids)) < len(ids):
        repeated = _first_problem(samples, source)
        if repeated is not None:
            raise repeated

    def surrogate_error(index: int) -> Exception:
        found = _surrogate_error(samples[index], index, source)
        return found or source.error(f"Sample at index {index} holds a lone surrogate.")

    try:
        frame = dataset_columns(
            ids, inputs, expected, metadata, tags, surrogate_error=surrogate_error
        )
    except DatasetError:
        check_expectations(ids, metadata, source.error)  # the earlier check reports first
        raise
    # metadata.trajectory, checked over the metadata texts: core/_trajectory.py
    check_expectation_texts(
        frame.get_column("sample_id"), frame.get_column("metadata"), source.error
    )
    return frame


def _first_problem(samples: list[_Sample], source: Source) -> DatasetError | None:
    """The first repeated id or lone surrogate among ``samples``, as its error, or None."""
    seen: set[str] = set()
    repeated = len(samples)
    for index, (sample_id, *_) in enumerate(samples):
        if sample_id in seen:
            repeated = index
            break
        seen.add(sample_id)
    ids, inputs, expected, metadata, _ = zip(*samples, strict=True) if samples else ([],) * 5
    bad = first_surrogate_sample(
        list(ids[: repeated + 1]),
        list(inputs[: repeated + 1]),
        list(expected[: repeated + 1]),
        list(metadata[: repeated + 1]),
    )
    if bad is not None:
        return _surrogate_error(samples[bad], bad, source)
    if repeated < len(samples):
        return source.error(f"Duplicate sample id '{samples[repeated][0]}' at index {repeated}.")
    return None


def _surrogate_error(sample: _Sample, index: int, source: Source) -> DatasetError | None:
    try:
        _check_unicode(*sample[:4], index, source)
    except DatasetError as exc:
        return exc
    return None


def _check_unicode(
    sample_id: str,
    input_map: dict[str, JSONValue],
    expected: JSONValue,
    metadata: dict[str, JSONValue],
    index: int,
    source: Source,
) -> None:
    try:
        row_hash(input_map, expected)
        (sample_id + compact(metadata)).encode("utf-8")
    except UnicodeEncodeError as exc:
        at = f"Sample '{sample_id}' (index {index})"
        bad = exc.object[exc.start : exc.end].encode("unicode_escape").decode("ascii")
        safe_at = at.encode("utf-8", "backslashreplace").decode("utf-8")
        raise source.error(
            f"{safe_at} holds a lone surrogate {bad}; text must be valid Unicode."
        ) from exc


def _plain_sample(
    record: object, index: int, id_keys: tuple[str | None, ...], source: Source
) -> _Sample | None:
    """The sample, if it has the plain shape most samples have; None sends it to ``_sample``.

    Plain: a dict with one string id that is not blank, an input map of strings to strings,
    a string expected output, and metadata (if any) with no tags field beside it. This is
    what ``_sample`` would return for it, without most of the per-field calls that make up
    most of the time of a large load.
    """
    if type(record) is not dict:
        return None
    get = record.get
    first = get(id_keys[0])
    second = None if id_keys[1] is None else get(id_keys[1])
    sample_id = first if second is None else second if first is None else None
    expected = get("expected_output")
    input_map = get("input")
    if (
        type(sample_id) is not str
        or not sample_id.strip()
        or type(expected) is not str
        or type(input_map) is not dict
        or (source.tags_field and get("tags") is not None)
        or (source.text_fields and get("expected_type") not in (None, "string"))
        or get(REFERENCE_CONTEXTS) is not None
        or get(EXPECTED_ANY) is not None
    ):
        return None
    for key, item in input_map.items():
        if type(key) is not str or type(item) is not str:
            return None
    metadata = get("metadata")
    if metadata is None:
        return sample_id, input_map, expected, {}, []
    if type(metadata) is dict and EXPECTED_ANY in metadata:
        return None
    tags = _plain_metadata_tags(metadata)
    if tags is not None:
        return sample_id, input_map, expected, metadata, tags
    at = f"Sample '{sample_id}' (index {index})"
    encoded = None
    if source.label in _PARSED_JSON and type(metadata) is dict:
        encoded = finite_json(metadata)  # plain JSON as it is, and its text
    metadata = _metadata_map(metadata, at, source) if encoded is None else encoded
    tags, metadata = _tags(None, metadata, at, source)
    return sample_id, input_map, expected, metadata, tags


_PARSED_JSON: Final = frozenset({"JSON", "JSONL"})
"""Sources whose records Python's JSON parser made: plain JSON but for non-finite numbers."""


def _plain_metadata_tags(metadata: object) -> list[str] | None:
    """The tags of plain metadata, or None when it needs the general checks.

    Plain: a dict with string keys, whose values are strings, integers, booleans or nulls,
    except ``tags``, a list of strings. Such a map is its own JSON value.
    """
    if type(metadata) is not dict:
        return None
    for key, item in metadata.items():
        kind = type(item)
        if type(key) is not str or not (
            kind is str or kind is int or kind is bool or item is None or key == "tags"
        ):
            return None
    tags = metadata.get("tags")
    if tags is None:
        return []
    if type(tags) is not list:
        return None
    for tag in tags:
        if type(tag) is not str:
            return None
    return trimmed_tags(tags)


def _sample(record: object, index: int, source: Source) -> _Sample:
    if not isinstance(record, dict):
        raise source.error(f"Sample at index {index} is not an associative array.")
    sample_id = _sample_id(record, index, source)
    at = f"Sample '{sample_id}' (index {index})"
    input_map = _input_map(record.get("input"), at, source)
    metadata = _metadata_map(record.get("metadata"), at, source)
    try:
        answers, metadata = with_expected_any(record, metadata, from_text=source.text_fields)
    except _BadAnswers as exc:
        raise source.error(f"{at} field '{EXPECTED_ANY}' {exc}.") from exc
    given = record.get("expected_output", None)
    if answers and (given is None or (source.text_fields and given == "")):
        expected: JSONValue = answers[0]  # the first acceptable answer
    elif "expected_output" not in record:
        raise source.error(f"{at} missing required field 'expected_output'.")
    else:
        expected = _expected_value(record, at, source)
    tags, metadata = _tags(record.get("tags") if source.tags_field else None, metadata, at, source)
    try:
        metadata = with_reference_contexts(record, metadata)
    except _BadContexts as exc:
        raise source.error(f"{at} field '{REFERENCE_CONTEXTS}' {exc}.") from exc
    return sample_id, input_map, expected, metadata, tags


def _sample_id(record: dict[Any, Any], index: int, source: Source) -> str:
    given = [(key, record[key]) for key in source.id_keys if record.get(key) is not None]
    if len(given) > 1 and given[0][1] != given[1][1]:
        raise source.error(
            f"Sample at index {index} has different '{given[0][0]}' ({given[0][1]!r}) and "
            f"'{given[1][0]}' ({given[1][1]!r}); give one."
        )
    value = given[0][1] if given else None
    if isinstance(value, str) and value.strip():
        return value
    if isinstance(value, str) and value:
        raise source.error(
            f"Sample at index {index} field '{given[0][0]}' must be a non-blank string; got "
            f"{value!r:.40}, which is only whitespace."
        )
    got = "" if value is None else f" (got {type(value).__name__} {value!r:.40})"
    raise source.error(
        f"Sample at index {index} missing required string field '{source.id_keys[0]}'{got}."
    )


def _input_map(value: object, at: str, source: Source) -> dict[str, JSONValue]:
    if source.text_fields and isinstance(value, str):
        # Plain text is the question; text that opens like a JSON object must be one.
        value = (
            _json_text(value, "input", at, source)
            if value.lstrip().startswith("{")
            else {"question": value}
        )
    if isinstance(value, list) and not value:
        value = {}  # eval-harness (PHP) cannot tell an empty list from an empty map
    if isinstance(value, list):
        raise source.error(
            f"{at} field 'input' must be an associative array (got {source.a_list})."
        )
    if not isinstance(value, dict):
        raise source.error(f"{at} missing required associative-array field 'input'.")
    return cast(dict[str, JSONValue], _plain(value, "input", at, source))


def _expected_value(record: dict[Any, Any], at: str, source: Source) -> JSONValue:
    value = record["expected_output"]
    declared = record.get("expected_type") if source.text_fields else None
    if declared is None:
        return _plain(value, "expected_output", at, source)
    if declared not in _EXPECTED_TYPES:
        raise source.error(
            f"{at} field 'expected_type' must be one of {', '.join(_EXPECTED_TYPES)}; "
            f"got {declared!r}."
        )
    if declared != "string":
        if not isinstance(value, str):
            raise source.error(
                f"{at} field 'expected_output' must be JSON text when expected_type is "
                f"'{declared}'; got {type(value).__name__}."
            )
        value = _json_text(value, "expected_output", at, source)
    plain = _plain(value, "expected_output", at, source)
    if expected_type_of(plain) != declared:
        raise source.error(
            f"{at} field 'expected_output' holds a {expected_type_of(plain)} value but "
            f"expected_type is '{declared}'."
        )
    return plain


def _metadata_map(value: object, at: str, source: Source) -> dict[str, JSONValue]:
    if source.text_fields and isinstance(value, str):
        value = _json_text(value, "metadata", at, source) if value.strip() else None
    if value is None or (isinstance(value, list) and not value):
        return {}
    if isinstance(value, list):
        raise source.error(
            f"{at} field 'metadata' must be an associative array (got {source.a_list})."
        )
    if not isinstance(value, dict):
        raise source.error(f"{at} field 'metadata' must be an associative array.")
    return cast(dict[str, JSONValue], _plain(value, "metadata", at, source))


def _tags(
    value: object, metadata: dict[str, JSONValue], at: str, source: Source
) -> tuple[list[str], dict[str, JSONValue]]:
    """The normalised tags, and the metadata with ``tags`` filled from a ``tags`` field."""
    from_metadata = _normalise_tags(metadata.get("tags"), "metadata.tags", at, source)
    if value is None:
        return from_metadata, metadata
    if isinstance(value, str):
        value = (
            _json_text(value, "tags", at, source)
            if value.lstrip().startswith("[")
            else value.split("|")
        )
    given = _normalise_tags(value, "tags", at, source)
    if "tags" in metadata:
        if given != from_metadata:
            raise source.error(
                f"{at} field 'tags' {given} disagrees with metadata.tags {from_metadata}; "
                "give the tags once."
            )
        return given, metadata
    return given, ({**metadata, "tags": cast(JSONValue, given)} if given else metadata)


def _normalise_tags(value: object, field: str, at: str, source: Source) -> list[str]:
    """Tags as the report's cohorts read them: trimmed (PHP trim), non-empty, unique, in order.

    A tag that is not a string is an error (eval-harness drops it without a word): a
    number or a null in a tag list is far more often a mistake than a wish.
    """
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    elif not isinstance(value, list):
        raise source.error(
            f"{at} field '{field}' must be a string or a list of strings; got "
            f"{type_name(value)} {value!r:.40}."
        )
    for position, item in enumerate(value):
        if not isinstance(item, str):
            raise source.error(
                f"{at} field '{field}[{position}]' must be a string (a tag); got "
                f"{type_name(item)} {item!r:.40}."
            )
    return trimmed_tags(value)


def _json_text(text: str, field: str, at: str, source: Source) -> object:
    subject = f"{at} field '{field}'"
    try:
        return load_json(text, source.where, subject, lines=False)
    except DatasetError:  # the nesting limit: already its own message
        raise
    except ValueError as exc:
        raise source.error(f"{at} field '{field}' is not valid JSON: {exc}.") from exc


def _plain(value: object, field: str, at: str, source: Source) -> JSONValue:
    try:
        return to_json_value(value)
    except UnsupportedValueError as exc:
        raise source.error(f"{at} field '{field}{exc.path}' {exc.reason}.") from exc
    except RecursionError as exc:
        raise source.error(
            f"{at} field '{field}' is nested too deeply or refers to itself."
        ) from exc


def _check_metrics(value: object, subject: str, where: str) -> list[str]:
    if value is None:
        return []
    if (
        isinstance(value, str)
        or not isinstance(value, Sequence)
        or not all(isinstance(spec, str) and spec.strip() for spec in value)
    ):
        raise DatasetError(
            f"{where}: {subject} must be a list of non-empty metric spec strings; "
            f"got {value!r:.80}."
        )
    return [spec.strip() for spec in value]


def _check_repetitions(value: object, subject: str, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise DatasetError(f"{where}: {subject} must be an integer; got {value!r:.40}.")
    if value < 1:
        raise DatasetError(f"{where}: {subject} must be at least 1; got {value}.")
    return int(value)


# --- the eval-harness document (YAML, and JSON of the same shape) ---------------------------


def _from_document(
    document: object, source: Source, requested_name: str | None, file: Path
) -> Dataset:
    subject = f"Dataset {source.label}"
    hint = ""
    if not isinstance(document, dict):
        # As in eval-harness: a document that is not a mapping counts as an empty one.
        hint = (
            " (the file is empty)"
            if document is None
            else (f" (the document is a {type(document).__name__}, not a mapping)")
        )
        document = {}
    version = _schema_version(document, subject, source)
    name = document.get("name")
    if not isinstance(name, str) or not name.strip():
        raise source.error(f"{subject} missing required string field 'name'.{hint}")
    if requested_name is not None and requested_name != name:
        raise source.error(
            f"Dataset name mismatch: the file declares '{name}' but '{requested_name}' "
            "was requested."
        )
    repetitions = _check_repetitions(
        document.get("repetitions"), f"{subject} field 'repetitions'", source.where
    )
    metrics = _check_metrics(document.get("metrics"), f"{subject} field 'metrics'", source.where)
    samples = document.get("samples")
    if isinstance(samples, dict):
        samples = list(samples.values())
    if not isinstance(samples, list):
        raise source.error(f"{subject} missing required list field 'samples'.")
    return Dataset._wrap(
        _samples_frame(samples, source),
        name=name,
        metrics=metrics,
        repetitions=repetitions,
        path=file,
        schema_version=version,
    )


def _schema_version(document: dict[Any, Any], subject: str, source: Source) -> str:
    if "schema_version" not in document:
        return SCHEMA_VERSION
    version = document["schema_version"]
    field = f"{subject} field 'schema_version'"
    if not isinstance(version, str) or not version.strip():
        raise source.error(f"{field} must be a non-empty string.")
    if version != SCHEMA_VERSION:
        raise source.error(
            f"{field} has unsupported value '{version}'. Supported versions: {SCHEMA_VERSION}."
        )
    return version
