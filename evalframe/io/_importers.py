"""Other tools' evaluation data as an evalframe dataset and saved outputs.

Every importer reads its source into flat rows (one per sample, ``column -> value``), then
maps columns to evalframe fields with a table: the source's defaults, overridden by
``mapping`` (the CLI's ``--map COLUMN=FIELD``). A field is one of

* ``id``, ``expected_output``, ``tags``;
* ``input.<key>`` (the sample's input map), ``metadata.<key>``;
* ``actual_output``, ``contexts`` (a list of retrieved passages), ``trajectory.<key>``
  (``tool_calls``, ``steps``, ``finish_reason``, ...) and ``outputs.<column>`` for the
  operational columns (``latency_ms``, ``prompt_tokens``, ``completion_tokens``,
  ``cost_usd``, ``retries``): these go to the saved outputs.

Columns no entry maps are left out. A sample without an id takes its index (``"0"``, ``"1"``,
...). The dataset is written as an ``eval-harness.dataset.v1`` YAML file; the outputs as
eval-harness saved-outputs JSON in list form: ``{"outputs": [{"id", "actual_output",
"contexts"?, "trajectory"?, <operational columns>?}, ...]}``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from dataclasses import field as _field
from pathlib import Path
from typing import Any, Final

import polars as pl
import yaml

from evalframe.core import schema as C
from evalframe.core._dataset import Dataset
from evalframe.core._dataset_columns import lone_surrogate_in
from evalframe.core._errors import DatasetError

__all__ = [
    "SOURCES",
    "Imported",
    "from_deepeval",
    "from_hf",
    "from_inspect",
    "from_promptfoo",
    "from_ragas",
    "parse_mapping",
]

_OPERATIONAL: Final = tuple(C.OPERATIONAL_COLUMNS.names())
_PLAIN_FIELDS: Final = frozenset({"id", "expected_output", "tags", "actual_output", "contexts"})
_PREFIXES: Final = ("input.", "metadata.", "trajectory.", "outputs.")

RAGAS: Final = {
    "id": "id",
    "user_input": "input.question",
    "response": "actual_output",
    "retrieved_contexts": "contexts",
    "reference": "expected_output",
    "reference_contexts": "metadata.reference_contexts",
}
DEEPEVAL: Final = {
    "name": "id",
    "input": "input.question",
    "actual_output": "actual_output",
    "expected_output": "expected_output",
    "retrieval_context": "contexts",
    "context": "metadata.context",
    "tools_called": "trajectory.tool_calls",
    "expected_tools": "metadata.trajectory.tools",
    "additional_metadata": "metadata.additional_metadata",
    "comments": "metadata.comments",
}
INSPECT: Final = {
    "id": "id",
    "input": "input.question",
    "target": "expected_output",
    "output": "actual_output",
    "tool_calls": "trajectory.tool_calls",
    "steps": "trajectory.steps",
    "finish_reason": "trajectory.finish_reason",
    "scores": "metadata.inspect_scores",
    "metadata": "metadata.inspect_metadata",
}
PROMPTFOO: Final = {
    "id": "id",
    "output": "actual_output",
    "expected": "expected_output",
    "description": "metadata.description",
    "provider": "metadata.promptfoo_provider",
    "score": "metadata.promptfoo_score",
    "success": "metadata.promptfoo_success",
    **{c: f"outputs.{c}" for c in ("latency_ms", "prompt_tokens", "completion_tokens", "cost_usd")},
}
HF: Final = {
    "id": "id",
    "question": "input.question",
    "answer": "expected_output",
    "contexts": "contexts",
}


@dataclass(frozen=True)
class Imported:
    """What an importer produced.

    Attributes:
        dataset: the evalframe dataset.
        outputs: the saved outputs (``sample_id``, ``actual_output``, ...), or ``None`` when
            the source holds no outputs.
        dataset_document: the dataset as written to YAML.
        outputs_document: the saved outputs as written to JSON (``None`` without outputs).
        variants: when the source holds several sets of outputs for the same samples
            (Inspect's epochs, promptfoo's prompt and provider pairs), every set by its label,
            the first included (it is ``outputs``); empty otherwise.
        variant_files: where each set was written: the first to ``outputs``, the others
            beside it as ``<stem>.<label><suffix>``.
    """

    dataset: Dataset
    outputs: pl.DataFrame | None
    dataset_document: dict[str, Any]
    outputs_document: dict[str, Any] | None
    variants: dict[str, pl.DataFrame] = _field(default_factory=dict)
    variant_files: dict[str, Path] = _field(default_factory=dict)


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


def _check_field(field: str) -> None:
    if field in _PLAIN_FIELDS:
        return
    prefix = next((p for p in _PREFIXES if field.startswith(p) and len(field) > len(p)), None)
    if prefix is None:
        raise DatasetError(
            f"Unknown field {field!r}: expected id, expected_output, tags, actual_output, "
            "contexts, input.<key>, metadata.<key>, trajectory.<key> or outputs.<column>."
        )
    if prefix == "outputs." and field[len(prefix) :] not in _OPERATIONAL:
        raise DatasetError(
            f"Unknown outputs column {field!r}: expected one of {', '.join(_OPERATIONAL)}."
        )


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


def _build(
    rows: list[dict[str, Any]],
    defaults: Mapping[str, str],
    mapping: Mapping[str, str] | None,
    *,
    name: str,
    source: str,
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    table = {**defaults, **(mapping or {})}
    for field in table.values():
        _check_field(field)
    unknown = set(mapping or {}) - {c for row in rows for c in row}
    if unknown and rows:
        raise DatasetError(
            f"{source}: --map names column(s) the source does not have: "
            f"{', '.join(sorted(unknown))}."
        )
    samples: list[dict[str, Any]] = []
    entries: list[dict[str, Any]] = []
    seen: set[str] = set()
    for index, row in enumerate(rows):
        sample: dict[str, Any] = {"id": str(index), "input": {}, "expected_output": None}
        entry: dict[str, Any] = {}
        for column, field in table.items():
            if column not in row or row[column] is None:
                continue
            value = _json_safe(row[column])
            if field == "id":
                sample["id"] = str(value)
            elif field in ("expected_output",) or field.startswith("input."):
                _put(sample, field, value)
            elif field == "tags":
                _put(sample, "metadata.tags", value if isinstance(value, list) else [value])
            elif field.startswith("metadata."):
                _put(sample, field, value)
            elif field == "actual_output":
                entry["actual_output"] = value if isinstance(value, str) else json.dumps(value)
            elif field == "contexts":
                entry["contexts"] = [
                    str(v) for v in (value if isinstance(value, list) else [value])
                ]
            elif field.startswith("outputs."):
                entry[field.removeprefix("outputs.")] = value
            else:  # trajectory.<key>
                _put(entry, field, value)
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
        samples.append(sample)
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


def _finish(
    dataset_doc: dict[str, Any],
    outputs_doc: dict[str, Any] | None,
    to: str | os.PathLike[str] | None,
    outputs: str | os.PathLike[str] | None,
    source: str,
) -> Imported:
    from evalframe.core._dataset import read_dataset
    from evalframe.core._outputs import read_outputs

    if outputs is not None and outputs_doc is None:
        raise DatasetError(f"{source} holds no outputs (no column maps to actual_output).")
    if to is not None:
        Path(to).write_text(
            yaml.safe_dump(dataset_doc, sort_keys=False, allow_unicode=True, width=100),
            encoding="utf-8",
        )
        dataset = read_dataset(to)
    else:
        dataset = Dataset.from_records(dataset_doc["samples"], name=dataset_doc["name"])
    frame = None
    if outputs_doc is not None:
        if outputs is not None:
            Path(outputs).write_text(
                json.dumps(outputs_doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
            )
            frame = read_outputs(outputs)
        else:
            frame = _outputs_frame(outputs_doc)
    return Imported(dataset, frame, dataset_doc, outputs_doc)


def _variants(
    groups: list[tuple[str, list[dict[str, Any]]]],
    defaults: Mapping[str, str],
    mapping: Mapping[str, str] | None,
    *,
    name: str,
    source: str,
    to: str | os.PathLike[str] | None,
    outputs: str | os.PathLike[str] | None,
) -> Imported:
    """Several sets of outputs for the same samples, as one dataset and one outputs file each.

    ``groups`` are ``(label, rows)`` in order; the first set goes to ``outputs`` and each
    other beside it as ``<stem>.<label><suffix>``. Every set must hold the same samples.
    """
    built = [
        (label, *_build(rows, defaults, mapping, name=name, source=f"{source} ({label})"))
        for label, rows in groups
    ]
    _, dataset_doc, first = built[0]
    ids = [s["id"] for s in dataset_doc["samples"]]
    for label, doc, _ in built[1:]:
        if [s["id"] for s in doc["samples"]] != ids:
            raise DatasetError(f"{source}: {label} holds other samples than {built[0][0]}.")
    imported = _finish(dataset_doc, first, to, outputs, source)
    if len(built) == 1 or first is None:
        return imported
    files: dict[str, Path] = {}
    frames: dict[str, pl.DataFrame] = {}
    for i, (label, _, outs) in enumerate(built):
        assert outs is not None  # every set maps the same columns as the first
        if outputs is None:
            frames[label] = _outputs_frame(outs)
            continue
        target = Path(outputs)
        if i:
            target = target.with_name(f"{target.stem}.{label}{target.suffix}")
            target.write_text(
                json.dumps(outs, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
            )
        files[label] = target
        from evalframe.core._outputs import read_outputs

        frames[label] = read_outputs(target)
    return Imported(
        imported.dataset, imported.outputs, dataset_doc, first, variants=frames, variant_files=files
    )


def _label(text: str) -> str:
    """A file-name-safe label: runs of other characters become one ``-``."""
    import re

    return re.sub(r"[^A-Za-z0-9_.]+", "-", text).strip("-.") or "x"


def _outputs_frame(doc: dict[str, Any]) -> pl.DataFrame:
    entries = doc["outputs"]
    data: dict[str, list[Any]] = {
        C.SAMPLE_ID: [e["id"] for e in entries],
        C.ACTUAL_OUTPUT: [e["actual_output"] for e in entries],
    }
    schema: dict[str, Any] = {C.SAMPLE_ID: pl.String, C.ACTUAL_OUTPUT: pl.String}
    for column in _OPERATIONAL:
        if any(column in e for e in entries):
            data[column] = [e.get(column) for e in entries]
            schema[column] = C.OPERATIONAL_COLUMNS[column]
    return pl.DataFrame(data, schema=schema)


def _load_json_or_lines(path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}: not valid JSON: {exc}") from None


def _read_table(path: Path) -> list[dict[str, Any]]:
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return pl.read_parquet(path).to_dicts()
    if suffix == ".csv":
        return pl.read_csv(path, infer_schema=False).to_dicts()
    data = _load_json_or_lines(path)
    if isinstance(data, dict):
        data = data.get("samples", data.get("data"))
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise DatasetError(f"{path}: expected a list of sample objects.")
    return data


def _name(path: Path, name: str | None) -> str:
    return name or path.stem


def _source(path: str | os.PathLike[str]) -> Path:
    found = Path(path)
    if not found.exists():
        raise DatasetError(f"{found} does not exist.")
    return found


def from_ragas(
    path: str | os.PathLike[str],
    *,
    to: str | os.PathLike[str] | None = None,
    outputs: str | os.PathLike[str] | None = None,
    mapping: Mapping[str, str] | None = None,
    name: str | None = None,
) -> Imported:
    """A Ragas evaluation dataset (``EvaluationDataset.to_jsonl``/``to_csv``, or a JSON list).

    Maps ``user_input`` to ``input.question``, ``reference`` to ``expected_output``,
    ``response`` to the outputs and ``retrieved_contexts`` to their ``contexts``;
    ``reference_contexts`` goes to ``metadata.reference_contexts``.
    """
    file = _source(path)
    rows = _read_table(file)
    for row in rows:  # Ragas' CSV writes list columns as their Python repr
        for column in ("retrieved_contexts", "reference_contexts"):
            if isinstance(row.get(column), str):
                row[column] = _literal_list(row[column])
    dataset, outs = _build(rows, RAGAS, mapping, name=_name(file, name), source=str(file))
    return _finish(dataset, outs, to, outputs, str(file))


def _literal_list(text: str) -> Any:
    import ast

    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return [text]
    return value if isinstance(value, list) else [text]


def from_deepeval(
    path: str | os.PathLike[str],
    *,
    to: str | os.PathLike[str] | None = None,
    outputs: str | os.PathLike[str] | None = None,
    mapping: Mapping[str, str] | None = None,
    name: str | None = None,
) -> Imported:
    """DeepEval test cases or goldens (``EvaluationDataset.save_as(file_type="json")``).

    A JSON list of objects, or an object whose ``test_cases`` or ``goldens`` is one. Maps
    ``input``, ``expected_output``, ``actual_output``, ``retrieval_context`` (the outputs'
    ``contexts``), ``context`` (``metadata.context``), ``tools_called`` (the trajectory's
    ``tool_calls``, as ``{name, arguments}``) and ``expected_tools`` (the tool names, as
    ``metadata.trajectory.tools``, which the trajectory metrics read).
    """
    file = _source(path)
    data = _load_json_or_lines(file)
    if isinstance(data, dict):
        data = data.get("test_cases", data.get("goldens"))
    if not isinstance(data, list):
        raise DatasetError(f"{file}: expected a list of DeepEval test cases or goldens.")
    rows = []
    for case in data:
        row = dict(case)
        if isinstance(row.get("tools_called"), list):
            row["tools_called"] = [_deepeval_tool(t) for t in row["tools_called"]]
        if isinstance(row.get("expected_tools"), list):
            row["expected_tools"] = [_deepeval_tool(t)["name"] for t in row["expected_tools"]]
        rows.append(row)
    dataset, outs = _build(rows, DEEPEVAL, mapping, name=_name(file, name), source=str(file))
    return _finish(dataset, outs, to, outputs, str(file))


def _deepeval_tool(tool: Any) -> dict[str, Any]:
    if isinstance(tool, str):
        return {"name": tool, "arguments": {}}
    # DeepEval writes ``inputParameters``; older files and hand-built ones ``input_parameters``
    arguments = tool.get("inputParameters", tool.get("input_parameters"))
    return {"name": tool.get("name"), "arguments": arguments or {}}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part.get("text", "")
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        )
    return ""


def from_inspect(
    path: str | os.PathLike[str],
    *,
    to: str | os.PathLike[str] | None = None,
    outputs: str | os.PathLike[str] | None = None,
    mapping: Mapping[str, str] | None = None,
    name: str | None = None,
) -> Imported:
    """An Inspect eval log in JSON (``inspect eval ... --log-format json``).

    One sample per log sample: ``input`` (the user messages' text) to ``input.question``,
    ``target`` to ``expected_output``, the output's completion to the outputs, the assistant
    messages' tool calls, with their results or errors, to the trajectory (``tool_calls``,
    ``steps``, ``finish_reason``) and
    the scorers' values to ``metadata.inspect_scores`` (the first epoch's). The dataset takes
    the task's name. With several epochs, each epoch's outputs are a set of their own
    (``Imported.variants``, labelled ``epoch1``, ``epoch2``, ...): the first is written to
    ``outputs``, the others beside it (``out.epoch2.json``, ...).
    """
    file = _source(path)
    log = _load_json_or_lines(file)
    if not isinstance(log, dict) or not isinstance(log.get("samples"), list):
        raise DatasetError(f"{file}: not an Inspect eval log with samples (JSON log format).")
    epochs: dict[int, list[dict[str, Any]]] = {}
    for sample in log["samples"]:
        rows = epochs.setdefault(int(sample.get("epoch", 1)), [])
        raw_input = sample.get("input")
        question = (
            raw_input
            if isinstance(raw_input, str)
            else "\n".join(
                _text(m.get("content")) for m in raw_input or [] if m.get("role") == "user"
            )
        )
        target = sample.get("target")
        if isinstance(target, list) and len(target) == 1:
            target = target[0]
        output = sample.get("output") or {}
        choices = output.get("choices") or []
        completion = output.get("completion")
        if completion is None and choices:
            completion = _text((choices[0].get("message") or {}).get("content"))
        messages = sample.get("messages") or []
        assistant = [m for m in messages if m.get("role") == "assistant"]
        results = {
            m.get("tool_call_id"): m for m in messages if m.get("role") == "tool"
        }  # a tool message answers the call whose id it names
        calls = [
            _inspect_call(c, results.get(c.get("id")))
            for m in assistant
            for c in m.get("tool_calls") or []
        ]
        rows.append(
            {
                "id": sample.get("id"),
                "input": question,
                "target": target,
                "output": completion,
                "tool_calls": calls if assistant else None,
                "steps": len(assistant) if assistant else None,
                "finish_reason": choices[0].get("stop_reason") if choices else None,
                "scores": {
                    k: (v or {}).get("value") for k, v in (sample.get("scores") or {}).items()
                }
                or None,
                "metadata": sample.get("metadata") or None,
            }
        )
    task = (log.get("eval") or {}).get("task")
    groups = [(f"epoch{e}", epochs[e]) for e in sorted(epochs)] or [("epoch1", [])]
    return _variants(
        groups,
        INSPECT,
        mapping,
        name=name or task or file.stem,
        source=str(file),
        to=to,
        outputs=outputs,
    )


def _inspect_call(call: dict[str, Any], answer: dict[str, Any] | None) -> dict[str, Any]:
    """An Inspect tool call as a trajectory tool call, with its result or error when answered."""
    out: dict[str, Any] = {"name": call.get("function"), "arguments": call.get("arguments") or {}}
    if answer is not None:
        error = answer.get("error")
        if error:
            out["error"] = error.get("message") if isinstance(error, dict) else str(error)
        else:
            out["result"] = _text(answer.get("content"))
    return out


_EXPECTING: Final = ("equals", "contains", "icontains", "starts-with", "similar", "levenshtein")


def from_promptfoo(
    path: str | os.PathLike[str],
    *,
    to: str | os.PathLike[str] | None = None,
    outputs: str | os.PathLike[str] | None = None,
    mapping: Mapping[str, str] | None = None,
    name: str | None = None,
) -> Imported:
    """promptfoo results JSON (``promptfoo eval -o results.json``).

    One sample per test case (``testIdx``). When the results hold several prompts or
    providers, each (prompt, provider) pair's outputs are a set of their own
    (``Imported.variants``, labelled ``prompt<index>-<provider id>``, in the order the results
    list them): the first pair is written to ``outputs``, the others beside it
    (``out.prompt1-openai-gpt-4o-mini.json``, ...). Each of the test's
    ``vars`` becomes ``input.<var>``; the value of its first ``equals``, ``contains``,
    ``icontains``, ``starts-with``, ``similar`` or ``levenshtein`` assertion becomes
    ``expected_output``; the response's output, latency, token counts and cost go to the
    outputs; promptfoo's own score and verdict to ``metadata.promptfoo_score`` and
    ``metadata.promptfoo_success``.
    """
    file = _source(path)
    doc = _load_json_or_lines(file)
    results = doc.get("results") if isinstance(doc, dict) else None
    if isinstance(results, dict):
        results = results.get("results")
    if not isinstance(results, list):
        raise DatasetError(f"{file}: not promptfoo results JSON (no results.results list).")
    pairs: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
    for result in sorted(results, key=lambda r: r.get("testIdx") or 0):
        rows = pairs.setdefault((result.get("promptIdx"), _provider(result, label=True)), [])
        test = result.get("testCase") or {}
        variables = result.get("vars") or test.get("vars") or {}
        response = result.get("response") or {}
        usage = response.get("tokenUsage") or {}
        expected = next(
            (
                a.get("value")
                for a in test.get("assert") or []
                if a.get("type") in _EXPECTING and isinstance(a.get("value"), str)
            ),
            None,
        )
        row: dict[str, Any] = {f"vars.{k}": v for k, v in variables.items()}
        row.update(
            {
                "id": result.get("testIdx"),
                "output": response.get("output"),
                "expected": expected,
                "description": test.get("description"),
                "provider": _provider(result),
                "score": result.get("score"),
                "success": result.get("success"),
                "latency_ms": result.get("latencyMs"),
                "prompt_tokens": usage.get("prompt"),
                "completion_tokens": usage.get("completion"),
                "cost_usd": result.get("cost"),
            }
        )
        rows.append(row)
    defaults = {
        **PROMPTFOO,
        **{
            c: f"input.{c[5:]}"
            for g in pairs.values()
            for r in g
            for c in r
            if c.startswith("vars.")
        },
    }
    groups = [(_label(f"prompt{p}-{provider}"), g) for (p, provider), g in pairs.items()]
    return _variants(
        groups or [("prompt0", [])],
        defaults,
        mapping,
        name=_name(file, name),
        source=str(file),
        to=to,
        outputs=outputs,
    )


def _provider(result: dict[str, Any], *, label: bool = False) -> str | None:
    """The result's provider id (``label=True``: its label when it has one)."""
    provider = result.get("provider")
    if isinstance(provider, dict):
        return (provider.get("label") if label else None) or provider.get("id")
    return provider


def from_hf(
    path: str | os.PathLike[str],
    *,
    to: str | os.PathLike[str] | None = None,
    outputs: str | os.PathLike[str] | None = None,
    mapping: Mapping[str, str] | None = None,
    name: str | None = None,
    split: str | None = None,
) -> Imported:
    """A Hugging Face dataset saved to disk (``Dataset.save_to_disk``) or a Parquet file.

    Reads the Arrow files directly (no ``datasets`` install needed). For a saved
    ``DatasetDict``, ``split`` picks the split (default: ``test`` if present, else the
    first). Columns ``id``, ``question``, ``answer`` (to ``expected_output``) and
    ``contexts`` map by default; map the others with ``mapping``.
    """
    file = _source(path)
    if file.is_dir():
        frame = _hf_saved(file, split)
    elif file.suffix.lower() == ".parquet":
        frame = pl.read_parquet(file)
    else:
        raise DatasetError(f"{file}: expected a save_to_disk directory or a .parquet file.")
    rows = frame.to_dicts()
    dataset, outs = _build(rows, HF, mapping, name=_name(file, name), source=str(file))
    return _finish(dataset, outs, to, outputs, str(file))


def _hf_saved(folder: Path, split: str | None) -> pl.DataFrame:
    import pyarrow as pa

    splits_file = folder / "dataset_dict.json"
    if splits_file.exists():
        splits = json.loads(splits_file.read_text(encoding="utf-8")).get("splits", [])
        chosen = split or ("test" if "test" in splits else (splits[0] if splits else None))
        if chosen is None or chosen not in splits:
            raise DatasetError(f"{folder}: no split {chosen!r}; it has: {', '.join(splits)}.")
        folder = folder / chosen
    state_file = folder / "state.json"
    if not state_file.exists():
        raise DatasetError(f"{folder}: not a saved Hugging Face dataset (no state.json).")
    state = json.loads(state_file.read_text(encoding="utf-8"))
    tables = []
    for item in state.get("_data_files", []):
        with pa.memory_map(str(folder / item["filename"])) as source:
            tables.append(pa.ipc.open_stream(source).read_all())
    if not tables:
        raise DatasetError(f"{folder}: the saved dataset lists no data files.")
    frame = pl.from_arrow(pa.concat_tables(tables))
    assert isinstance(frame, pl.DataFrame)
    return frame


SOURCES: Final = {
    "ragas": from_ragas,
    "deepeval": from_deepeval,
    "inspect": from_inspect,
    "promptfoo": from_promptfoo,
    "hf": from_hf,
}
