"""Saved outputs: ``read_outputs`` and ``align_outputs``.

An outputs frame has ``sample_id`` and ``actual_output`` (String), plus whichever of the
operational columns (``schema.OPERATIONAL_COLUMNS``: ``latency_ms``, ``prompt_tokens``,
``completion_tokens``, ``cost_usd``, ``retries``) the file carries. Formats, by extension:

* ``.json``, ``.yaml``, ``.yml`` and any other extension: eval-harness saved outputs:
  an object whose ``outputs`` is a map of sample id to output text, or a list of
  ``{id, actual_output}`` entries that may also carry operational fields. ``.json`` is strict
  JSON, ``.yaml``/``.yml`` YAML; other extensions are tried as JSON, then as YAML. Map keys
  are ids as written: ``1: yes`` is sample ``"1"``.
* ``.jsonl``: one ``{sample_id (or id), actual_output, ...}`` object per line.
* ``.csv`` and ``.parquet``: columns ``sample_id`` (or ``id``) and ``actual_output``. An empty
  CSV ``actual_output`` cell is the empty string.

Entries, lines and rows may also carry the sample's retrieved ``contexts`` (see
``core/_contexts.py``): they add the ``contexts`` and ``context_ids`` columns; and the
system's ``confidence`` that its output is correct (a number, read by the reliability
family's brier-score, calibration-error and discrimination), kept as a Float64 column.
"""

from __future__ import annotations

import codecs
import os
import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import polars as pl
import yaml

from evalframe.core import schema as C
from evalframe.core._contexts import CONTEXTS, _BadContexts, contexts_columns, parse_contexts
from evalframe.core._dataset import Dataset
from evalframe.core._dataset_columns import lone_surrogate_in
from evalframe.core._errors import DatasetError, type_name
from evalframe.core._formats import (
    decode_utf8,
    load_json,
    yaml_limit_error,
)
from evalframe.core._gc import gc_paused
from evalframe.core._outputs_quick import quick_lines, quick_list
from evalframe.core._turns import agent_fields, with_agent_columns
from evalframe.core._yaml import (
    YamlLimitError,
    YamlLoader,
    check_yaml_limits,
    yaml_problem,
    yaml_value,
)

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "MAX_LISTED_IDS",
    "align_outputs",
    "attach_baseline",
    "check_coverage",
    "coverage_problem",
    "duplicate_output",
    "outputs_from_table",
    "read_outputs",
]

_SUBJECT: Final = "Saved outputs file"
MAX_LISTED_IDS: Final = 20
# A JSON or JSONL file from this size on is read by a compiled pass first
# (core/_outputs_compiled.py); below it the exact reader is fast enough, and numba stays
# unloaded.
_COMPILED_FROM: Final = 4 << 20
# Smaller files whose entries carry contexts, a trajectory or turns take it too once this
# process has its kernels loaded (a larger file was read): nothing compiles or loads, and
# those fields cost the exact reader 3-6x what they cost the pass.
_WARM_FROM: Final = 64 << 10
# Files up to this size that no compiled pass read are parsed by orjson and checked a column
# at a time (core/_outputs_quick.py) before the exact reader is asked; past it, orjson's
# Python objects would take more memory than the exact reader's.
_QUICK_UP_TO: Final = 1 << 30
_NESTED_FIELDS: Final = (b'"contexts"', b'"trajectory"', b'"turns"')
_INTEGER_TEXT: Final = re.compile(r"\s*[+-]?[0-9]+\s*")
CONFIDENCE: Final = "confidence"
# Typed numeric fields an entry may carry: the operational ones and the system's confidence.
_NUMBERS: Final = pl.Schema({**C.OPERATIONAL_COLUMNS, CONFIDENCE: pl.Float64()})
_NUMBER_KEYS: Final = frozenset(_NUMBERS)
_INTEGERS: Final = frozenset(c for c, dtype in _NUMBERS.items() if dtype == pl.Int64)
_TABLE_COLUMNS: Final = (
    C.SAMPLE_ID, "id", C.ACTUAL_OUTPUT, *_NUMBERS, CONTEXTS, "trajectory", "turns"
)  # fmt: skip


def read_outputs(path: str | os.PathLike[str]) -> pl.DataFrame:
    """Read saved outputs (eval-harness JSON or YAML, JSONL, CSV or Parquet).

    Args:
        path: the file.

    Returns:
        One row per output, in file order: ``sample_id``, ``actual_output`` and the
        operational columns present in the file, cast to their schema dtypes.

    Raises:
        DatasetError: the file is missing, unreadable, empty or unparseable, or an entry
            breaks a rule; the message names the file and the entry index or
            sample id.

    Examples:
        >>> import pathlib, tempfile
        >>> file = pathlib.Path(tempfile.mkdtemp()) / "outputs.json"
        >>> _ = file.write_text('{"outputs": {"q1": "30 days", "2": "no"}}')
        >>> read_outputs(file).rows()
        [('q1', '30 days'), ('2', 'no')]
    """
    file = Path(path)
    where = os.fspath(path)
    if not file.is_file():
        raise DatasetError(f"{_SUBJECT} {where} does not exist or is not a regular file.")
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise DatasetError(f"{_SUBJECT} {where} is not readable.") from exc
    with gc_paused():  # parsing makes many containers and no cycles
        return _read(data, file.suffix.lower(), where)


def _read(data: bytes, suffix: str, where: str) -> pl.DataFrame:
    if suffix == ".parquet":
        return _from_parquet(data, where)
    if suffix not in {".csv", ".yaml", ".yml"}:
        frame = _fast(data.removeprefix(codecs.BOM_UTF8), suffix == ".jsonl")
        if frame is not None:
            return frame
    text = decode_utf8(data, where, _SUBJECT)
    if not text.strip():
        raise DatasetError(f"{where}: {_SUBJECT} must not be empty.")
    if suffix == ".jsonl":
        return _from_entries(_jsonl_values(text, where), where)
    if suffix == ".csv":
        return _from_csv(text, where)
    return _from_document(_parse_document(text, suffix, where), where)


def _fast(body: bytes, lines: bool) -> pl.DataFrame | None:
    """The outputs of a JSON or JSONL file's bytes (no BOM) as a faster reader vouches for
    them (the compiled pass, or orjson's), or None for the exact reader."""
    large = len(body) >= _COMPILED_FROM
    if large or (len(body) >= _WARM_FROM and _warm(body)):
        from evalframe.core import _outputs_compiled as compiled  # imports numpy and numba

        if lines:
            frame = compiled.outputs_lines(body, _NUMBERS)
        else:
            frame = compiled.outputs_map(body) if large else None  # no nested fields
            if frame is None:
                frame = compiled.outputs_list(body, _NUMBERS)
        if frame is not None:
            return frame
    if len(body) > _QUICK_UP_TO:
        return None
    return quick_lines(body, _NUMBERS) if lines else quick_list(body, _NUMBERS)


def _warm(data: bytes) -> bool:
    """Whether the compiled entries pass is loaded in this process and ``data`` names a
    nested field (a plain file is as fast through the exact reader)."""
    compiled = sys.modules.get("evalframe.core._outputs_compiled")
    return (
        compiled is not None
        and compiled.entries_loaded()
        and any(field in data for field in _NESTED_FIELDS)
    )


def attach_baseline(frame: pl.DataFrame, baseline: str, outputs: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with column ``baseline``: the stored run's output for each row's sample, of
    the same repetition when the run has it, else of its first repetition.

    ``outputs`` holds the run's ``sample_id``, ``repetition`` and ``actual_output``.
    """
    same = outputs.select(C.SAMPLE_ID, C.REPETITION, pl.col(C.ACTUAL_OUTPUT).alias("__same"))
    first = (
        outputs.sort(C.REPETITION)
        .unique(C.SAMPLE_ID, keep="first", maintain_order=True)
        .select(C.SAMPLE_ID, pl.col(C.ACTUAL_OUTPUT).alias("__first"))
    )
    return (
        frame.join(same, on=[C.SAMPLE_ID, C.REPETITION], how="left", maintain_order="left")
        .join(first, on=C.SAMPLE_ID, how="left", maintain_order="left")
        .with_columns(pl.coalesce("__same", "__first").alias(baseline))
        .drop("__same", "__first")
    )


def align_outputs(dataset: Dataset, outputs: pl.DataFrame) -> pl.DataFrame:
    """Check that outputs cover the dataset exactly, and put them in dataset order.

    Args:
        dataset: the dataset the outputs answer.
        outputs: a frame with ``sample_id`` and ``actual_output`` (and any other columns).

    Returns:
        ``outputs`` with one row per dataset sample, in dataset order.

    Raises:
        DatasetError: a dataset sample has no output, an output names no dataset sample, an
            id appears twice, or a required column is missing. Up to 20 ids are listed.

    Examples:
        >>> import polars as pl
        >>> ds = Dataset.from_records(
        ...     [{"id": i, "input": {}, "expected_output": "x"} for i in ("a", "b")], name="d")
        >>> outputs = pl.DataFrame({"sample_id": ["b", "a"], "actual_output": ["2", "1"]})
        >>> align_outputs(ds, outputs).rows()
        [('a', '1'), ('b', '2')]
    """
    _check_outputs_frame(outputs)
    given = outputs.get_column(C.SAMPLE_ID)
    check_coverage(dataset, given)
    if given.equals(dataset.get_column(C.SAMPLE_ID)):  # in dataset order already: the join's
        return outputs.select(C.SAMPLE_ID, pl.exclude(C.SAMPLE_ID))  # frame, nothing moved
    order = dataset.select(C.SAMPLE_ID)
    return order.join(outputs, on=C.SAMPLE_ID, how="left", maintain_order="left")


def check_coverage(dataset: Dataset, given: pl.Series) -> None:
    """Check that the output ids ``given`` (from one file or many pieces) cover the dataset:
    no sample missing, no unknown id.

    Raises:
        DatasetError: as ``align_outputs`` says.
    """
    wanted = dataset.get_column(C.SAMPLE_ID)
    missing = wanted.filter(~wanted.is_in(given.implode())).to_list()
    unknown = given.filter(~given.is_in(wanted.implode())).to_list()
    problem = coverage_problem(dataset.name, missing, len(missing), unknown, len(unknown))
    if problem:
        raise DatasetError(problem)


def coverage_problem(
    name: str, missing: list[str], n_missing: int, unknown: list[str], n_unknown: int
) -> str | None:
    """The message for outputs that miss ``n_missing`` samples (the first ones ``missing``) or
    name ``n_unknown`` unknown ids; ``None`` when they cover dataset ``name`` exactly."""
    problems = []
    if n_missing:
        problems.append(
            f"Saved outputs for dataset '{name}' are missing sample ids: "
            f"{_id_list(missing, n_missing)}."
        )
    if n_unknown:
        problems.append(
            f"Saved outputs for dataset '{name}' contain unknown sample ids: "
            f"{_id_list(unknown, n_unknown)}."
        )
    return " ".join(problems) or None


def duplicate_output(where: str | None, sample_id: object) -> DatasetError:
    """The error for a sample with two saved outputs (in the file or source ``where``)."""
    prefix = f"{where}: " if where else ""
    return DatasetError(f"{prefix}Duplicate saved output for sample '{sample_id}'.")


def _check_outputs_frame(outputs: pl.DataFrame) -> None:
    absent = [c for c in (C.SAMPLE_ID, C.ACTUAL_OUTPUT) if c not in outputs.columns]
    if absent:
        raise DatasetError(
            f"Outputs frame is missing column(s) {', '.join(absent)}; "
            f"found: {', '.join(outputs.columns) or '(none)'}."
        )
    ids = outputs.get_column(C.SAMPLE_ID)
    if ids.dtype != pl.String:
        raise DatasetError(f"Outputs column '{C.SAMPLE_ID}' must be String; got {ids.dtype}.")
    blank = ids.is_null() | (ids.str.strip_chars() == "")
    if blank.any():
        index = int(blank.arg_true()[0])
        raise DatasetError(
            f"Saved outputs contain an empty sample id: row {index} has "
            f"{ids[index]!r:.40}; an id must be a non-empty string, not only whitespace."
        )
    repeated = ids.filter(ids.is_duplicated()).unique(maintain_order=True).to_list()
    if repeated:
        raise duplicate_output(None, repeated[0])


def _id_list(ids: list[str], total: int) -> str:
    shown = ", ".join(ids[:MAX_LISTED_IDS])
    more = total - min(len(ids), MAX_LISTED_IDS)
    return f"{shown} and {more} more" if more > 0 else shown


# --- eval-harness documents (JSON or YAML) ----------------------------------------------------


class _JsonObject(dict[str, Any]):
    """A JSON object that remembers the keys it saw more than once."""

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        super().__init__(pairs)
        self.repeated = _repeated(key for key, _ in pairs)


def _json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A plain dict, or a ``_JsonObject`` for the rare object that repeats a key (a plain
    function: a subclass's ``__init__`` on every object cost 4 us each)."""
    found = dict(pairs)
    return found if len(found) == len(pairs) else _JsonObject(pairs)


def _repeated(keys: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    repeated = []
    for key in keys:
        if key in seen:
            repeated.append(key)
        seen.add(key)
    return repeated


def _parse_document(text: str, suffix: str, where: str) -> object:
    if suffix == ".json":
        try:
            return _parse_json(text, where)
        except DatasetError:  # the nesting limit: already its own message
            raise
        except ValueError as exc:
            raise DatasetError(f"{where}: {_SUBJECT} contains invalid JSON: {exc}.") from exc
    if suffix in {".yaml", ".yml"}:
        try:
            return _parse_yaml_outputs(text, where)
        except yaml.YAMLError as exc:
            raise DatasetError(
                f"{where}: {_SUBJECT} contains invalid YAML: {yaml_problem(exc)}."
            ) from exc
    try:
        document = _parse_json(text, where)
    except DatasetError:  # the nesting limit: already its own message
        raise
    except ValueError as json_exc:
        try:
            return _parse_yaml_outputs(text, where)
        except yaml.YAMLError as yaml_exc:
            raise DatasetError(
                f"{where}: {_SUBJECT} could not be parsed as JSON or YAML. "
                f"JSON error: {json_exc}. YAML error: {yaml_problem(yaml_exc)}."
            ) from yaml_exc
    return document


def _parse_json(text: str, where: str) -> object:
    return load_json(text, where, _SUBJECT, object_pairs_hook=_json_object)


def _parse_yaml_outputs(text: str, where: str) -> object:
    """Parse YAML outputs, keeping each map key's text as written (``1`` -> ``"1"``)."""
    try:
        check_yaml_limits(text)
    except YamlLimitError as exc:
        raise yaml_limit_error(exc, where, _SUBJECT) from exc
    loader = YamlLoader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        node = _outputs_node(root)
        ids = [] if node is None else [str(key.value) for key, _ in node.value]
        repeated = _repeated(ids)
        if repeated:
            raise duplicate_output(where, repeated[0])
        if node is None:
            return yaml_value(loader, root)
        # Build the top level with a stand-in for the outputs map, whose keys stay as text.
        stand_in = yaml.ScalarNode("tag:yaml.org,2002:null", "")
        pairs = [(key, stand_in if value is node else value) for key, value in root.value]
        document = yaml_value(loader, yaml.MappingNode(root.tag, pairs))
        document["outputs"] = {  # type: ignore[index]  # a YAML map is a dict
            sample_id: yaml_value(loader, value)
            for sample_id, (_, value) in zip(ids, node.value, strict=True)
        }
        return document
    except RecursionError as exc:
        raise yaml.YAMLError("the document nests too deeply or an anchor refers to itself") from exc
    finally:
        loader.dispose()


def _outputs_node(root: yaml.Node | None) -> yaml.MappingNode | None:
    """The ``outputs`` map node when every key is a plain scalar; None otherwise."""
    if not isinstance(root, yaml.MappingNode):
        return None
    for key, value in root.value:
        if (
            isinstance(key, yaml.ScalarNode)
            and key.value == "outputs"
            and isinstance(value, yaml.MappingNode)
            and all(
                isinstance(k, yaml.ScalarNode) and k.tag != "tag:yaml.org,2002:merge"
                for k, _ in value.value
            )
        ):
            return value
    return None


def _from_document(document: object, where: str) -> pl.DataFrame:
    if not isinstance(document, dict):
        raise DatasetError(
            f"{where}: {_SUBJECT} must be a JSON/YAML object and must contain an outputs field."
        )
    repeated_keys = getattr(document, "repeated", None)
    if repeated_keys:
        raise DatasetError(f"{where}: {_SUBJECT} has the key '{repeated_keys[0]}' more than once.")
    if "outputs" not in document:
        raise DatasetError(f"{where}: {_SUBJECT} must contain an outputs field.")
    outputs = document["outputs"]
    if isinstance(outputs, list):
        return _from_entries(outputs, where)
    if not isinstance(outputs, dict):
        raise DatasetError(f"{where}: {_SUBJECT} must contain an outputs object or list.")
    repeated = getattr(outputs, "repeated", None)
    if repeated:
        raise duplicate_output(where, repeated[0])
    ids: list[str] = []
    texts: list[str] = []
    for index, (key, text) in enumerate(outputs.items()):
        sample_id = str(key)
        if not sample_id:
            raise DatasetError(f"{where}: Saved outputs contain an empty sample id.")
        if not sample_id.strip():
            raise DatasetError(
                f"{where}: Saved outputs contain a blank sample id: key {sample_id!r:.40} at "
                f"index {index} of field 'outputs' is only whitespace; an id must be a "
                "non-empty string that is not only whitespace."
            )
        if not isinstance(text, str):
            raise DatasetError(
                f"{where}: Saved output for sample '{sample_id}' must be a string; "
                f"got {type_name(text)}."
            )
        ids.append(sample_id)
        texts.append(text)
    return _frame(ids, texts, {}, where)


# --- entries: list form, JSONL, CSV and Parquet -----------------------------------------------


def _from_entries(
    entries: Iterable[object], where: str, *, from_text: bool = False
) -> pl.DataFrame:
    ids: list[str] = []
    texts: list[str] = []
    extras: list[dict[str, object]] = []
    contexts: list[Any] = []
    agent: list[dict[str, Any]] = []
    for index, entry in enumerate(entries):
        at = f"Saved outputs entry at index {index}"
        if not isinstance(entry, dict):
            raise DatasetError(f"{where}: {at} must be an object with id and actual_output.")
        id_key = "id" if entry.get("id") is not None else C.SAMPLE_ID
        sample_id = entry.get(id_key)
        if not isinstance(sample_id, str) or not sample_id:
            raise DatasetError(f"{where}: {at} must contain a non-empty string id.")
        if not sample_id.strip():
            raise DatasetError(
                f"{where}: {at} must contain a non-empty string id: field '{id_key}' holds "
                f"{sample_id!r:.40}, which is only whitespace."
            )
        at = f"{at} (sample '{sample_id}')"
        text = entry.get(C.ACTUAL_OUTPUT)
        if not isinstance(text, str):
            raise DatasetError(f"{where}: {at} must contain a string actual_output.")
        try:
            contexts.append(parse_contexts(entry.get(CONTEXTS), from_text=from_text))
        except _BadContexts as exc:
            raise DatasetError(f"{where}: {at} field '{CONTEXTS}' {exc}.") from exc
        ids.append(sample_id)
        texts.append(text)
        extras.append(
            {
                column: _operational(entry[column], column, f"{where}: {at}", from_text)
                for column in _NUMBERS
                if column in entry
            }
            if not _NUMBER_KEYS.isdisjoint(entry)
            else {}
        )
        agent.append(agent_fields(entry, f"{where}: {at}"))
    present = [c for c in _NUMBERS if any(c in extra for extra in extras)]
    columns: dict[str, Any] = {c: [extra.get(c) for extra in extras] for c in present}
    frame = _frame(ids, texts, columns, where)
    try:
        return with_agent_columns(frame.with_columns(**contexts_columns(contexts)), agent)
    except UnicodeEncodeError:
        fields = ([(CONTEXTS, c), *a.items()] for c, a in zip(contexts, agent, strict=True))
        raise _lone_surrogate(where, ids, fields) from None


def _operational(value: object, column: str, at: str, from_text: bool) -> object:
    integer = column in _INTEGERS
    if from_text and isinstance(value, str):
        value = _parse_number(value, integer)
    if value is None:
        return None
    if not isinstance(value, bool):
        if integer and isinstance(value, int):
            return value
        if not integer and isinstance(value, int | float):
            return float(value)
    wanted = "an integer" if integer else "a number"
    raise DatasetError(
        f"{at} field '{column}' must be {wanted}; got {type_name(value)} {value!r:.40}."
    )


def _parse_number(text: str, integer: bool) -> object:
    if not text.strip():
        return None
    if integer:
        return int(text) if _INTEGER_TEXT.fullmatch(text) else text
    try:
        return float(text)
    except ValueError:
        return text


def _jsonl_values(text: str, where: str) -> Iterator[object]:
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            try:
                yield load_json(line, where, _SUBJECT, rescan=text)
            except DatasetError:  # the nesting limit: already its own message
                raise
            except ValueError as exc:
                raise DatasetError(
                    f"{where}: Saved outputs line {number} is not valid JSON: {exc}."
                ) from exc


def _from_csv(text: str, where: str) -> pl.DataFrame:
    try:
        frame = pl.read_csv(text.encode("utf-8"), infer_schema=False)
    except pl.exceptions.PolarsError as exc:
        raise DatasetError(f"{where}: Saved outputs CSV could not be parsed: {exc}") from exc
    if C.ACTUAL_OUTPUT in frame.columns:
        frame = frame.with_columns(pl.col(C.ACTUAL_OUTPUT).fill_null(""))
    wanted = [c for c in _TABLE_COLUMNS if c in frame.columns]
    columns = {c: frame.get_column(c).to_list() for c in wanted}
    return _from_columns(columns, frame.columns, where, from_text=True)


def _from_parquet(data: bytes, where: str) -> pl.DataFrame:
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not data:
        raise DatasetError(f"{where}: {_SUBJECT} must not be empty.")
    try:
        # One file: read_table's dataset layer would import pandas (0.7 s in a new process)
        table = pq.ParquetFile(pa.BufferReader(data)).read()
    except (pa.ArrowException, OSError):
        try:  # read_table's message names the source as it always did
            table = pq.read_table(pa.BufferReader(data))
        except (pa.ArrowException, OSError) as exc:
            raise DatasetError(f"{where}: {_SUBJECT} is not a valid Parquet file: {exc}") from exc
    return outputs_from_table(table, where)


def outputs_from_table(table: pa.Table, where: str) -> pl.DataFrame:
    """Saved outputs from an Arrow table with the Parquet layout (one file, or one piece of
    a partitioned source), checked as ``read_outputs`` checks a file; ``where`` names it."""
    from evalframe.core._outputs_table import outputs_columns

    frame = outputs_columns(table, _NUMBERS)  # a column at a time, when it can vouch
    if frame is not None:
        return frame
    columns = {c: table.column(c).to_pylist() for c in _TABLE_COLUMNS if c in table.column_names}
    return _from_columns(columns, table.column_names, where, from_text=False)


def _from_columns(
    columns: Mapping[str, list[Any]], found: list[str], where: str, *, from_text: bool
) -> pl.DataFrame:
    for required in ((C.SAMPLE_ID, "id"), (C.ACTUAL_OUTPUT,)):
        if not any(c in columns for c in required):
            raise DatasetError(
                f"{where}: {_SUBJECT} is missing required column '{required[0]}'"
                f"{' (or id)' if len(required) > 1 else ''}; found columns: "
                f"{', '.join(found) or '(none)'}."
            )
    keys = list(columns)
    rows = (
        dict(zip(keys, values, strict=True))
        for values in zip(*(columns[k] for k in keys), strict=True)
    )
    return _from_entries(rows, where, from_text=from_text)


def _frame(
    ids: list[str], texts: list[str], operational: dict[str, list[object]], where: str
) -> pl.DataFrame:
    repeated = _repeated(ids)
    if repeated:
        raise duplicate_output(where, repeated[0])
    schema: dict[str, pl.DataType] = {C.SAMPLE_ID: pl.String(), C.ACTUAL_OUTPUT: pl.String()}
    schema.update({c: _NUMBERS[c] for c in operational})
    try:
        return pl.DataFrame({C.SAMPLE_ID: ids, C.ACTUAL_OUTPUT: texts, **operational}, schema)
    except UnicodeEncodeError:
        raise _lone_surrogate(where, ids, ([(C.ACTUAL_OUTPUT, t)] for t in texts)) from None


def _lone_surrogate(
    where: str, ids: list[str], fields: Iterable[Iterable[tuple[str, object]]]
) -> DatasetError:
    """The error for the first output with a lone surrogate (a ``\\udXXX`` escape without
    its pair, which no UTF-8 text can hold) in its id or one of its ``fields`` (per output:
    name and value pairs)."""
    for index, (sample_id, named) in enumerate(zip(ids, fields, strict=True)):
        for name, value in ((C.SAMPLE_ID, sample_id), *named):
            bad = lone_surrogate_in(value)
            if bad is not None:
                sample = sample_id.encode("utf-8", "backslashreplace").decode("utf-8")
                return DatasetError(
                    f"{where}: Saved output for sample '{sample}' (index {index}) holds a lone "
                    f"surrogate {bad} in field '{name}'; text must be valid Unicode."
                )
    raise AssertionError("no lone surrogate found")  # only called once Polars refused one
