"""What every importer shares: reading the source within the limits, mapping columns to
fields, and writing the dataset and saved outputs.

Every importer reads its source into flat rows (one per sample, ``column -> value``), then
maps columns to evalframe fields with a table: the source's defaults, overridden by
``mapping`` (the CLI's ``--map COLUMN=FIELD``). A column may be a path into nested values:
``answers.text`` is the ``text`` of the ``answers`` struct, or the ``text`` of every item
when ``answers`` is a list of structs; an integer step (``answers.text.0``) picks a list item.
A field is one of

* ``id``, ``expected_output``, ``expected_any`` (any-of answers), ``tags``;
* ``input.<key>`` (the sample's input map), ``metadata.<key>``;
* ``actual_output``, ``contexts`` (a list of retrieved passages), ``turns`` (a
  conversation), ``trajectory.<key>`` (``tool_calls``, ``steps``, ``finish_reason``, ...) and
  ``outputs.<column>`` for the operational columns (``latency_ms``, ``prompt_tokens``,
  ``completion_tokens``, ``cost_usd``, ``retries``): these go to the saved outputs.

Sources are read under the dataset readers' limits (lists and maps nest at most
``MAX_DEPTH`` levels; text must be UTF-8); a value of the wrong type is an error naming the
file, the record and the field.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from dataclasses import field as _field
from pathlib import Path
from typing import Any, Final

import polars as pl

from evalframe.core import schema as C
from evalframe.core._dataset import Dataset
from evalframe.core._dataset_columns import lone_surrogate_in
from evalframe.core._errors import DatasetError
from evalframe.core._formats import load_json, read_text
from evalframe.core._yaml import dump_yaml

__all__ = [
    "Imported",
    "Rows",
    "build",
    "check_type",
    "finish",
    "load_json_source",
    "parse_mapping",
    "read_records",
    "source_path",
    "unique_labels",
    "variants",
]

_OPERATIONAL: Final = tuple(C.OPERATIONAL_COLUMNS.names())
_PLAIN_FIELDS: Final = frozenset(
    {"id", "expected_output", "expected_any", "tags", "actual_output", "contexts", "turns"}
)
_PREFIXES: Final = ("input.", "metadata.", "trajectory.", "outputs.")
_SUBJECT: Final = "Source file"

Rows = list[dict[str, Any]]


@dataclass(frozen=True)
class Imported:
    """What an importer produced.

    Attributes:
        dataset: the evalframe dataset (when the source answers only some samples: the
            answered ones, which ``outputs`` covers).
        outputs: the saved outputs (``sample_id``, ``actual_output``, ...), or ``None`` when
            the source holds no outputs.
        dataset_document: the dataset as written to YAML.
        outputs_document: the saved outputs as written to JSON (``None`` without outputs).
        variants: when the source holds several sets of outputs for the same samples
            (Inspect's epochs, promptfoo's prompt and provider pairs), every set by its label,
            the first included (it is ``outputs``); empty otherwise.
        variant_files: where each set was written: the first to ``outputs``, the others
            beside it as ``<stem>.<label><suffix>``.
        unanswered: the samples the source gives no output for, when it answers others
            (DeepEval goldens beside test cases): a dataset of their own, written beside the
            dataset as ``<stem>.no-outputs<suffix>``; ``None`` otherwise.
        unanswered_file: where ``unanswered`` was written, if it was.
        notes: what the user should know about the conversion (assertion types with no
            evalframe metric, ...), one sentence each.
    """

    dataset: Dataset
    outputs: pl.DataFrame | None
    dataset_document: dict[str, Any]
    outputs_document: dict[str, Any] | None
    variants: dict[str, pl.DataFrame] = _field(default_factory=dict)
    variant_files: dict[str, Path] = _field(default_factory=dict)
    unanswered: Dataset | None = None
    unanswered_file: Path | None = None
    notes: tuple[str, ...] = ()


def parse_mapping(pairs: Iterable[str]) -> dict[str, str]:
    """``["COLUMN=FIELD", ...]`` as a mapping; a field is checked when it is used."""
    out: dict[str, str] = {}
    for pair in pairs:
        column, sep, field = pair.partition("=")
        if not sep or not column.strip() or not field.strip():
            raise DatasetError(
                f"--map expects COLUMN=FIELD, e.g. question=input.question; got {pair!r}."
            )
        out[column.strip()] = field.strip()
    return out


# --- reading -----------------------------------------------------------------------------------


def source_path(path: str | os.PathLike[str]) -> Path:
    found = Path(path)
    if not found.exists():
        raise DatasetError(f"{found} does not exist.")
    return found


def load_json_source(file: Path, *, lines: bool | None = None) -> Any:
    """A JSON document, or the list of a JSONL file's values (``lines``: by the suffix).

    Raises:
        DatasetError: unreadable, not UTF-8, not JSON (naming the line), or nested past the
            readers' limit.
    """
    where = str(file)
    text = read_text(file, where, _SUBJECT)
    if lines is None:
        lines = file.suffix.lower() == ".jsonl"
    if not lines:
        return _json(text, where, "JSON", rescan=None)
    values = []
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            values.append(_json(line, where, f"JSONL line {number}", rescan=text))
    return values


def _json(text: str, where: str, subject: str, *, rescan: str | None) -> Any:
    try:
        return load_json(text, where, subject, rescan=rescan)
    except DatasetError:  # the nesting limit: already its own message
        raise
    except ValueError as exc:
        raise DatasetError(f"{where}: {subject} is not valid JSON: {exc}.") from None


def json_text(value: str, where: str, record: str, field: str) -> Any:
    """A cell holding JSON text (CSV), decoded under the nesting limit."""
    try:
        return load_json(value, where, f"{record} field '{field}'", lines=False)
    except DatasetError:
        raise
    except ValueError as exc:
        raise DatasetError(f"{where}: {record} field '{field}' is not valid JSON: {exc}.") from None


def read_records(file: Path, *, container_keys: tuple[str, ...] = ()) -> Rows:
    """Records of a CSV (every cell text, an empty cell null), Parquet, JSON or JSONL file.

    A JSON object is looked into for a list under one of ``container_keys``.
    """
    suffix = file.suffix.lower()
    where = str(file)
    if suffix == ".parquet":
        try:
            return pl.read_parquet(file, glob=False).to_dicts()
        except (pl.exceptions.PolarsError, OSError) as exc:
            raise DatasetError(f"{where}: not a valid Parquet file: {exc}") from None
    if suffix == ".csv":
        text = read_text(file, where, _SUBJECT)
        try:
            frame = pl.read_csv(text.encode("utf-8"), infer_schema=False)
        except pl.exceptions.PolarsError as exc:
            raise DatasetError(f"{where}: CSV could not be parsed: {exc}") from None
        return frame.to_dicts()
    data = load_json_source(file)
    if isinstance(data, dict):
        found = next((data[k] for k in container_keys if isinstance(data.get(k), list)), None)
        if found is None:
            keys = ", ".join(container_keys) or "(none)"
            raise DatasetError(
                f"{where}: expected a list of records, or an object with one of: {keys}; "
                f"found keys: {', '.join(map(str, data)) or '(none)'}."
            )
        data = found
    if not isinstance(data, list):
        raise DatasetError(f"{where}: expected a list of records; got {_kind(data)}.")
    for index, item in enumerate(data):
        check_type(item, dict, where, f"record {index}", "(the record)")
    return data


def _kind(value: object) -> str:
    if value is None:
        return "null"
    return {"dict": "object", "str": "string", "list": "list"}.get(
        type(value).__name__, type(value).__name__
    )


def check_type(
    value: Any, types: type | tuple[type, ...], where: str, record: str, field: str
) -> Any:
    """``value`` when it is one of ``types`` (or null); else an error naming the file, the
    record and the field."""
    if value is None or (isinstance(value, types) and not isinstance(value, bool)):
        return value
    if isinstance(value, bool) and (types is bool or (isinstance(types, tuple) and bool in types)):
        return value
    wanted = types if isinstance(types, tuple) else (types,)
    names = " or ".join(_kind(t()) if t is not dict else "an object" for t in wanted)
    raise DatasetError(
        f"{where}: {record} field '{field}' must be {names}; got {_kind(value)} {value!r:.60}."
    )


# --- mapping ---------------------------------------------------------------------------------


def _check_field(field: str) -> None:
    if field in _PLAIN_FIELDS:
        return
    prefix = next((p for p in _PREFIXES if field.startswith(p) and len(field) > len(p)), None)
    if prefix is None:
        raise DatasetError(
            f"Unknown field {field!r}: expected id, expected_output, expected_any, tags, "
            "actual_output, contexts, turns, input.<key>, metadata.<key>, trajectory.<key> or "
            "outputs.<column>."
        )
    if prefix == "outputs." and field[len(prefix) :] not in _OPERATIONAL:
        raise DatasetError(
            f"Unknown outputs column {field!r}: expected one of {', '.join(_OPERATIONAL)}."
        )


_MISSING: Final = object()


def _lookup(row: Mapping[str, Any], column: str) -> Any:
    """The row's value at ``column``: a column name, or a dotted path into nested structs
    and lists (``_MISSING`` when the path leads nowhere)."""
    if column in row:
        return row[column]
    head, _, rest = column.partition(".")
    if not rest or head not in row:
        return _MISSING
    value = row[head]
    for step in rest.split("."):
        value = _step(value, step)
        if value is _MISSING:
            return _MISSING
    return value


def _step(value: Any, step: str) -> Any:
    if isinstance(value, dict):
        return value.get(step, _MISSING)
    if isinstance(value, list | tuple):
        if step.lstrip("-").isdigit():
            index = int(step)
            return value[index] if -len(value) <= index < len(value) else _MISSING
        found = [_step(item, step) for item in value]
        return [None if item is _MISSING else item for item in found]
    return _MISSING


def _json_safe(value: Any) -> Any:
    """Plain JSON values (Arrow and Polars give tuples, numpy scalars and the like)."""
    return json.loads(json.dumps(value, default=_default))


def _default(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


def _put(target: dict[str, Any], dotted: str, value: Any) -> None:
    keys = dotted.split(".")
    for key in keys[:-1]:
        nested = target.setdefault(key, {})
        if not isinstance(nested, dict):
            raise DatasetError(f"Field {dotted!r} nests under a value that is not a map.")
        target = nested
    target[keys[-1]] = value


def _strings(value: Any, source: str, index: int, column: str, field: str) -> list[str]:
    items = value if isinstance(value, list) else [value]
    for position, item in enumerate(items):
        if not isinstance(item, str):
            raise DatasetError(
                f"{source}: row {index} column '{column}' ({field}) item {position} must be a "
                f"string; got {_kind(item)} {item!r:.40}."
            )
    return list(items)


def build(
    rows: Rows,
    defaults: Mapping[str, str],
    mapping: Mapping[str, str] | None,
    *,
    name: str,
    source: str,
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The dataset document and the saved outputs document (``None`` without outputs)."""
    table = {**defaults, **(mapping or {})}
    for field in table.values():
        _check_field(field)
    found = list(dict.fromkeys(c for row in rows for c in row))
    unknown = [c for c in mapping or {} if all(_lookup(r, c) is _MISSING for r in rows)]
    if unknown and rows:
        raise DatasetError(
            f"{source}: --map names column(s) the source does not have: "
            f"{', '.join(sorted(unknown))}; it has: {', '.join(found) or '(none)'} (a path "
            "such as answers.text reaches into nested values)."
        )
    samples: list[dict[str, Any]] = []
    entries: list[dict[str, Any]] = []
    seen: set[str] = set()
    for index, row in enumerate(rows):
        sample: dict[str, Any] = {"id": str(index), "input": {}}
        entry: dict[str, Any] = {}
        for column, field in table.items():
            raw = _lookup(row, column)
            if raw is _MISSING or raw is None:
                continue
            value = _json_safe(raw)
            if field == "id":
                sample["id"] = str(value)
            elif field == "expected_output" or field.startswith("input."):
                _put(sample, field, value)
            elif field == "expected_any":
                sample["expected_any"] = _strings(value, source, index, column, field)
            elif field == "tags":
                _put(sample, "metadata.tags", value if isinstance(value, list) else [value])
            elif field.startswith("metadata."):
                _put(sample, field, value)
            elif field == "actual_output":
                entry["actual_output"] = value if isinstance(value, str) else json.dumps(value)
            elif field == "contexts":
                entry["contexts"] = _strings(value, source, index, column, field)
            elif field == "turns":
                entry["turns"] = value
            elif field.startswith("outputs."):
                entry[field.removeprefix("outputs.")] = value
            else:  # trajectory.<key>
                _put(entry, field, value)
        if "expected_output" not in sample:
            answers = sample.get("expected_any")
            sample["expected_output"] = answers[0] if answers else None
        if sample["id"] in seen:
            raise DatasetError(f"{source}: duplicate sample id {sample['id']!r} (row {index}).")
        for field, value in (*sample.items(), *entry.items()):
            bad = lone_surrogate_in(value)
            if bad is not None:
                at = sample["id"].encode("utf-8", "backslashreplace").decode("utf-8")
                raise DatasetError(
                    f"{source}: row {index} (sample '{at}') holds a lone surrogate {bad} in "
                    f"field '{field}'; text must be valid Unicode."
                )
        seen.add(sample["id"])
        if not sample["input"]:
            raise DatasetError(
                f"{source}: row {index} has no input field: map a column to input.<key> "
                "with --map COLUMN=input.question."
            )
        samples.append(_ordered(sample))
        if entry:
            entries.append({"id": sample["id"], **entry})
    dataset = {"schema_version": "eval-harness.dataset.v1", "name": name, "samples": samples}
    if not entries:
        return dataset, None
    missing = [e["id"] for e in entries if "actual_output" not in e]
    if missing:
        raise DatasetError(
            f"{source}: sample(s) {', '.join(missing[:5])} carry output fields but no "
            "actual_output."
        )
    return dataset, {"outputs": entries}


def _ordered(sample: dict[str, Any]) -> dict[str, Any]:
    order = ("id", "input", "expected_output", "expected_any", "metadata")
    return {k: sample[k] for k in (*order, *sample) if k in sample}


# --- writing ---------------------------------------------------------------------------------


def _write_yaml(path: Path, document: dict[str, Any]) -> None:
    # dump_yaml quotes what the dataset reader would read as another type ('0o17', '1_000')
    path.write_text(dump_yaml(document, blocks=True), encoding="utf-8")


def _write_json(path: Path, document: dict[str, Any]) -> None:
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def beside(path: str | os.PathLike[str], label: str) -> Path:
    """``<stem>.<label><suffix>`` next to ``path``."""
    target = Path(path)
    return target.with_name(f"{target.stem}.{label}{target.suffix}")


def _split_unanswered(
    dataset_doc: dict[str, Any], outputs_doc: dict[str, Any] | None
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(answered samples' document, unanswered samples' document or None)."""
    if outputs_doc is None:
        return dataset_doc, None
    answered = {e["id"] for e in outputs_doc["outputs"]}
    samples = dataset_doc["samples"]
    if len(answered) == len(samples):
        return dataset_doc, None
    keep = {**dataset_doc, "samples": [s for s in samples if s["id"] in answered]}
    rest = {**dataset_doc, "samples": [s for s in samples if s["id"] not in answered]}
    return keep, rest


def finish(
    dataset_doc: dict[str, Any],
    outputs_doc: dict[str, Any] | None,
    to: str | os.PathLike[str] | None,
    outputs: str | os.PathLike[str] | None,
    source: str,
    *,
    metrics: list[str] | None = None,
    notes: tuple[str, ...] = (),
) -> Imported:
    """Write (when asked) and read back the dataset and outputs; split off unanswered samples."""
    from evalframe.core._dataset import read_dataset
    from evalframe.core._outputs import read_outputs

    if outputs is not None and outputs_doc is None:
        raise DatasetError(f"{source} holds no outputs (no column maps to actual_output).")
    if metrics:
        dataset_doc = {**dataset_doc, "metrics": metrics}
        dataset_doc = {k: dataset_doc[k] for k in ("schema_version", "name", "metrics", "samples")}
    dataset_doc, rest_doc = _split_unanswered(dataset_doc, outputs_doc)
    unanswered = unanswered_file = None
    if to is not None:
        _write_yaml(Path(to), dataset_doc)
        dataset = read_dataset(to)
        if rest_doc is not None:
            unanswered_file = beside(to, "no-outputs")
            _write_yaml(unanswered_file, rest_doc)
            unanswered = read_dataset(unanswered_file)
    else:
        dataset = _in_memory(dataset_doc)
        unanswered = None if rest_doc is None else _in_memory(rest_doc)
    frame = None
    if outputs_doc is not None:
        if outputs is not None:
            _write_json(Path(outputs), outputs_doc)
            frame = read_outputs(outputs)
        else:
            frame = outputs_frame(outputs_doc)
    return Imported(
        dataset,
        frame,
        dataset_doc,
        outputs_doc,
        unanswered=unanswered,
        unanswered_file=unanswered_file,
        notes=notes,
    )


def _in_memory(document: dict[str, Any]) -> Dataset:
    return Dataset.from_records(
        document["samples"], name=document["name"], metrics=document.get("metrics", ())
    )


def variants(
    groups: list[tuple[str, Rows]],
    defaults: Mapping[str, str],
    mapping: Mapping[str, str] | None,
    *,
    name: str,
    source: str,
    to: str | os.PathLike[str] | None,
    outputs: str | os.PathLike[str] | None,
    metrics: list[str] | None = None,
    notes: tuple[str, ...] = (),
) -> Imported:
    """Several sets of outputs for the same samples, as one dataset and one outputs file each.

    ``groups`` are ``(label, rows)`` in order, labels unique; the first set goes to
    ``outputs`` and each other beside it as ``<stem>.<label><suffix>``. Every set must hold
    the same samples, and the dataset is the first set's.
    """
    built = [
        (label, *build(rows, defaults, mapping, name=name, source=f"{source} ({label})"))
        for label, rows in groups
    ]
    _, dataset_doc, first = built[0]
    ids = [s["id"] for s in dataset_doc["samples"]]
    for label, doc, _ in built[1:]:
        if [s["id"] for s in doc["samples"]] != ids:
            raise DatasetError(f"{source}: {label} holds other samples than {built[0][0]}.")
    imported = finish(dataset_doc, first, to, outputs, source, metrics=metrics, notes=notes)
    if len(built) == 1 or first is None:
        return imported
    from evalframe.core._outputs import read_outputs

    files: dict[str, Path] = {}
    frames: dict[str, pl.DataFrame] = {}
    for i, (label, _, outs) in enumerate(built):
        if outs is None:
            raise DatasetError(f"{source}: {label} holds no outputs, unlike {built[0][0]}.")
        if outputs is None:
            frames[label] = outputs_frame(outs)
            continue
        target = beside(outputs, label) if i else Path(outputs)
        if i:
            _write_json(target, outs)
        files[label] = target
        frames[label] = read_outputs(target)
    return Imported(
        imported.dataset,
        imported.outputs,
        imported.dataset_document,
        first,
        variants=frames,
        variant_files=files,
        unanswered=imported.unanswered,
        unanswered_file=imported.unanswered_file,
        notes=notes,
    )


def outputs_frame(doc: dict[str, Any]) -> pl.DataFrame:
    """The saved outputs as the outputs reader gives them (contexts, trajectories and turns
    typed as from the file): read back from a temporary file."""
    import tempfile

    from evalframe.core._outputs import read_outputs

    with tempfile.TemporaryDirectory(prefix="evalframe-import-") as folder:
        path = Path(folder) / "outputs.json"
        _write_json(path, doc)
        return read_outputs(path)


# --- labels ----------------------------------------------------------------------------------


def _slug(text: str, limit: int = 40) -> str:
    """A file-name-safe label: runs of other characters become one ``-``."""
    slug = re.sub(r"[^A-Za-z0-9_]+", "-", text).strip("-")
    return slug[:limit].rstrip("-") or "x"


def unique_labels(keys: list[tuple[str, ...]]) -> list[str]:
    """A stable, unique, file-name-safe label for each key (a tuple of texts).

    Each label joins the key's parts made safe (``openai:gpt-4`` becomes ``openai-gpt-4``).
    Keys whose safe forms collide (``openai:gpt-4``, ``openai/gpt-4``, ``openai gpt-4``) all
    take a short hash of their exact text, so no label depends on the order the source lists
    them in and none overwrites another.
    """
    plain = ["--".join(_slug(part) for part in key) for key in keys]
    counts: dict[str, int] = {}
    for label in plain:
        counts[label] = counts.get(label, 0) + 1
    out = []
    for key, label in zip(keys, plain, strict=True):
        digest = hashlib.sha256("\x00".join(key).encode("utf-8", "surrogatepass")).hexdigest()
        out.append(f"{label}-{digest[:8]}" if counts[label] > 1 else label)
    if len(set(out)) < len(out):  # the same key twice: the source's own repetition
        raise DatasetError(f"Two sets of outputs share one key: {keys}.")
    return out
