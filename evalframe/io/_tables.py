"""Tabular sources: Ragas and DeepEval datasets, Hugging Face datasets."""

from __future__ import annotations

import ast
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import polars as pl

from evalframe.core._errors import DatasetError
from evalframe.io._common import (
    Imported,
    build,
    check_type,
    finish,
    json_text,
    load_json_source,
    read_records,
    source_path,
)

__all__ = ["DEEPEVAL", "HF", "RAGAS", "RAGAS_01", "from_deepeval", "from_hf", "from_ragas"]

RAGAS: Final = {
    "id": "id",
    "user_input": "input.question",
    "response": "actual_output",
    "retrieved_contexts": "contexts",
    "reference": "expected_output",
    "reference_contexts": "metadata.reference_contexts",
    "turns": "turns",
    "reference_tool_calls": "metadata.reference_tool_calls",
    "trajectory_tools": "metadata.trajectory.tools",
    "rubrics": "metadata.rubrics",
    "multi_responses": "metadata.multi_responses",
    "ragas_scores": "metadata.ragas_scores",
}
RAGAS_01: Final = {
    "id": "id",
    "question": "input.question",
    "answer": "actual_output",
    "contexts": "contexts",
    "ground_truth": "expected_output",
    "ground_truths": "expected_any",
    "ragas_scores": "metadata.ragas_scores",
}
_RAGAS_LISTS: Final = (
    "retrieved_contexts", "reference_contexts", "contexts", "ground_truths", "multi_responses",
    "reference_tool_calls", "rubrics", "user_input",
)  # fmt: skip
_RAGAS_KNOWN: Final = frozenset({*RAGAS, *RAGAS_01, "persona_name", "query_style", "query_length"})

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
    "source_file": "metadata.source_file",
    "expectations": "metadata.expectations",
    "custom_column_key_values": "metadata.custom_column_key_values",
    "token_cost": "outputs.cost_usd",
    "input_token_count": "outputs.prompt_tokens",
    "output_token_count": "outputs.completion_tokens",
}
_DEEPEVAL_SPLIT: Final = ("retrieval_context", "context")  # joined with "|" in JSONL and CSV
_DEEPEVAL_JSON: Final = (
    "tools_called", "expected_tools", "additional_metadata", "custom_column_key_values",
    "expectations",
)  # fmt: skip
_DEEPEVAL_NUMBERS: Final = ("token_cost", "input_token_count", "output_token_count")

HF: Final = {
    "id": "id",
    "question": "input.question",
    "context": "input.context",
    "answer": "expected_output",
    "answers.text": "expected_any",
    "contexts": "contexts",
    "title": "metadata.title",
}


# --- Ragas -----------------------------------------------------------------------------------


def from_ragas(
    path: str | os.PathLike[str],
    *,
    to: str | os.PathLike[str] | None = None,
    outputs: str | os.PathLike[str] | None = None,
    mapping: Mapping[str, str] | None = None,
    name: str | None = None,
) -> Imported:
    """A Ragas dataset or result: ``EvaluationDataset.to_jsonl``/``to_csv``, a JSON list,
    ``EvaluationResult.to_pandas()`` saved as CSV, or the Ragas 0.1 columns.

    Ragas 0.2+ columns: ``user_input`` to ``input.question``, ``reference`` to
    ``expected_output``, ``response`` and ``retrieved_contexts`` to the outputs,
    ``reference_contexts`` to ``metadata.reference_contexts``. Ragas 0.1 columns:
    ``question``, ``answer``, ``contexts``, ``ground_truth`` (``ground_truths``: any-of
    answers). CSV list cells (Python list text, as pandas writes them) are read exactly; an
    empty ``response`` cell is an empty answer. A multi-turn sample (a list of messages in
    ``user_input``) becomes a conversation in the outputs' ``turns``, its last AI message
    the output. Score columns (``faithfulness``, ``exact_match``, ...) go to
    ``metadata.ragas_scores``.
    """
    file = source_path(path)
    where = str(file)
    rows = read_records(file, container_keys=("samples", "data"))
    found = list(dict.fromkeys(c for row in rows for c in row))
    if "user_input" in found:
        defaults = RAGAS
    elif "question" in found:
        defaults = RAGAS_01
    elif not any(f.startswith("input.") for f in (mapping or {}).values()):
        raise DatasetError(
            f"{where}: no Ragas column found: expected user_input, response, retrieved_contexts, "
            "reference (Ragas 0.2 and later) or question, answer, contexts, ground_truth (Ragas "
            f"0.1); found: {', '.join(found) or '(none)'}. Map columns with --map COLUMN=FIELD."
        )
    else:
        defaults = RAGAS
    csv = file.suffix.lower() == ".csv"
    output_column = "response" if defaults is RAGAS else "answer"
    out = []
    for index, row in enumerate(rows):
        out.append(_ragas_row(dict(row), found, where, f"row {index}", csv, output_column))
    others = {
        c: f"metadata.{c.removeprefix('__other.')}"
        for r in out
        for c in r
        if c.startswith("__other.")
    }
    dataset, outs = build(
        out, {**defaults, **others}, mapping, name=name or file.stem, source=where
    )
    return finish(dataset, outs, to, outputs, where)


def _ragas_row(
    row: dict[str, Any], found: list[str], where: str, record: str, csv: bool, output: str
) -> dict[str, Any]:
    for column in _RAGAS_LISTS:
        value = row.get(column)
        if csv and isinstance(value, str):
            if column == "user_input" and not value.lstrip().startswith("[{"):
                continue  # a question; a conversation is a list of messages
            row[column] = _list_text(value, where, record, column)
    if csv and output in found and row.get(output) is None:
        row[output] = ""  # pandas writes an empty answer as an empty cell
    conversation = row.get("user_input")
    if isinstance(conversation, list):
        row.update(_conversation(conversation, where, record))
    calls = row.get("reference_tool_calls")
    if isinstance(calls, list):
        row["trajectory_tools"] = [
            c.get("name") for c in calls if isinstance(c, dict) and c.get("name") is not None
        ]
    scores = {}
    for column in found:
        if column in _RAGAS_KNOWN or row.get(column) is None:
            continue
        value = row.pop(column)
        number = _number(value) if csv else value
        if isinstance(number, int | float) and not isinstance(number, bool):
            scores[column] = number
        else:
            row[f"__other.{column}"] = value
    row["ragas_scores"] = scores or None
    return row


def _number(text: Any) -> Any:
    try:
        return float(text)
    except (TypeError, ValueError):
        return text


def _list_text(text: str, where: str, record: str, column: str) -> list[Any] | None:
    """A list cell as Ragas and pandas write it (Python list text) or as JSON, exactly.

    ``ast.literal_eval`` reads literals only: no name is looked up and nothing is called.
    """
    if not text.strip():
        return None
    try:
        value = json.loads(text)
    except ValueError:
        try:
            value = ast.literal_eval(text.strip())
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
            raise DatasetError(
                f"{where}: {record} column '{column}' is not a list as Ragas writes one "
                f"(['first passage', 'second passage']): {type(exc).__name__} in {text!r:.80}."
            ) from None
    if not isinstance(value, list):
        raise DatasetError(
            f"{where}: {record} column '{column}' must hold a list; got "
            f"{type(value).__name__} {text!r:.60}."
        )
    return value


_ROLES: Final = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}


def _conversation(messages: list[Any], where: str, record: str) -> dict[str, Any]:
    """A Ragas multi-turn sample's messages as turns, its first human message as the
    question and its last AI message as the output."""
    turns = []
    for position, message in enumerate(messages):
        field = f"user_input[{position}]"
        check_type(message, dict, where, record, field)
        kind = check_type(message.get("type"), str, where, record, f"{field}.type")
        content = check_type(message.get("content"), str, where, record, f"{field}.content")
        turn: dict[str, Any] = {"role": _ROLES.get(kind or "", kind), "content": content or ""}
        calls = check_type(message.get("tool_calls") or [], list, where, record, field)
        if calls:
            turn["tool_calls"] = [
                {"name": c.get("name"), "arguments": c.get("args") or {}}
                for c in calls
                if isinstance(c, dict)
            ]
        turns.append(turn)
    users = [t["content"] for t in turns if t["role"] == "user"]
    answers = [t["content"] for t in turns if t["role"] == "assistant"]
    return {
        "user_input": users[0] if users else "",
        "turns": turns,
        "response": answers[-1] if answers else "",
    }


# --- DeepEval --------------------------------------------------------------------------------


def from_deepeval(
    path: str | os.PathLike[str],
    *,
    to: str | os.PathLike[str] | None = None,
    outputs: str | os.PathLike[str] | None = None,
    mapping: Mapping[str, str] | None = None,
    name: str | None = None,
) -> Imported:
    """DeepEval test cases or goldens, as ``EvaluationDataset.save_as`` writes them (JSON,
    JSONL or CSV).

    Maps ``input``, ``expected_output``, ``actual_output``, ``retrieval_context`` (the
    outputs' ``contexts``), ``context`` (``metadata.context``), ``tools_called`` (the
    trajectory's ``tool_calls``), ``expected_tools`` (``metadata.trajectory.tools``) and the
    token counts and cost. In JSONL and CSV DeepEval joins ``retrieval_context`` and
    ``context`` with ``|`` and splits them back on reading; so does evalframe. Goldens
    (no ``actual_output``) beside test cases go to a dataset of their own
    (``Imported.unanswered``, ``<stem>.no-outputs.yaml``), so each dataset runs: the test
    cases with their outputs, the goldens with a system.
    """
    file = source_path(path)
    where = str(file)
    suffix = file.suffix.lower()
    rows = read_records(file, container_keys=("test_cases", "goldens"))
    out = []
    for index, case in enumerate(rows):
        out.append(_deepeval_row(dict(case), where, f"record {index}", csv=suffix == ".csv"))
    dataset, outs = build(out, DEEPEVAL, mapping, name=name or file.stem, source=where)
    return finish(dataset, outs, to, outputs, where)


def _deepeval_row(row: dict[str, Any], where: str, record: str, *, csv: bool) -> dict[str, Any]:
    for column in _DEEPEVAL_SPLIT:
        value = check_type(row.get(column), (str, list), where, record, column)
        if isinstance(value, str):
            row[column] = value.split("|")
    for column in _DEEPEVAL_JSON:
        if csv and isinstance(row.get(column), str):
            row[column] = json_text(row[column], where, record, column)
    for column in _DEEPEVAL_NUMBERS:
        value = row.get(column)
        if csv and isinstance(value, str):
            number = _number(value)
            if isinstance(number, str):
                raise DatasetError(
                    f"{where}: {record} field '{column}' must be a number; got {value!r:.40}."
                )
            row[column] = int(number) if column != "token_cost" else number
        else:
            check_type(row.get(column), (int, float), where, record, column)
    calls = check_type(row.get("tools_called"), list, where, record, "tools_called")
    if calls is not None:
        row["tools_called"] = [_tool(t, where, record, "tools_called") for t in calls]
    expected = check_type(row.get("expected_tools"), list, where, record, "expected_tools")
    if expected is not None:
        row["expected_tools"] = [
            _tool(t, where, record, "expected_tools")["name"] for t in expected
        ]
    return row


def _tool(tool: Any, where: str, record: str, field: str) -> dict[str, Any]:
    if isinstance(tool, str):
        return {"name": tool, "arguments": {}}
    check_type(tool, dict, where, record, field)
    # DeepEval writes ``inputParameters``; older files and hand-built ones ``input_parameters``
    arguments = tool.get("inputParameters", tool.get("input_parameters"))
    return {"name": tool.get("name"), "arguments": arguments or {}}


# --- Hugging Face ----------------------------------------------------------------------------


def from_hf(
    path: str | os.PathLike[str],
    *,
    to: str | os.PathLike[str] | None = None,
    outputs: str | os.PathLike[str] | None = None,
    mapping: Mapping[str, str] | None = None,
    name: str | None = None,
    split: str | None = None,
) -> Imported:
    """A Hugging Face dataset: a ``save_to_disk`` folder (``Dataset`` or ``DatasetDict``),
    a Parquet, JSON or JSON Lines file as ``to_parquet``/``to_json`` write them, or a folder
    of such files, one split per file name (``train.parquet``, ``validation-0000.jsonl``).

    Reads the files directly (no ``datasets`` install needed). ``split`` picks the split of a
    ``DatasetDict`` or folder (default: ``test`` if present, else the first). Columns map by
    default as ``HF`` says (SQuAD's ``answers.text`` as any-of answers); ``mapping`` takes
    paths into nested values (``answers.text``, ``meta.source``).
    """
    file = source_path(path)
    frame, chosen = _hf_frame(file, split)
    rows = frame.to_dicts()
    label = name or (f"{file.stem}-{chosen}" if chosen and file.is_dir() else file.stem)
    dataset, outs = build(rows, HF, mapping, name=label, source=str(file))
    return finish(dataset, outs, to, outputs, str(file))


_SPLIT_FILE: Final = re.compile(r"(?:^|[-_./])({})(?:$|[-_./])")
_DATA_SUFFIXES: Final = (".parquet", ".json", ".jsonl", ".arrow")


def _hf_frame(file: Path, split: str | None) -> tuple[pl.DataFrame, str | None]:
    where = str(file)
    if file.is_dir():
        if (file / "dataset_dict.json").exists():
            splits_doc = load_json_source(file / "dataset_dict.json", lines=False)
            splits = splits_doc.get("splits", []) if isinstance(splits_doc, dict) else []
            chosen = _choose(split, [str(s) for s in splits], where)
            return _hf_saved(file / chosen), chosen
        if (file / "state.json").exists():
            if split is not None:
                raise DatasetError(f"{where} is one saved split (a Dataset, not a DatasetDict).")
            return _hf_saved(file), None
        files = sorted(
            p for p in file.rglob("*") if p.is_file() and p.suffix.lower() in _DATA_SUFFIXES
        )
        if not files:
            raise DatasetError(
                f"{where}: not a saved Hugging Face dataset (no dataset_dict.json or "
                "state.json) and no Parquet or JSON files."
            )
        by_split: dict[str, list[Path]] = {}
        for part in files:
            rel = part.relative_to(file).as_posix().lower()
            names = [s for s in ("train", "validation", "test", "dev", "valid") if _has(rel, s)]
            by_split.setdefault(names[0] if names else "train", []).append(part)
        chosen = _choose(split, list(by_split), where)
        return pl.concat([_hf_file(p) for p in by_split[chosen]], how="diagonal_relaxed"), chosen
    if split is not None:
        raise DatasetError(f"{where} is one file, one split: --split applies to folders.")
    return _hf_file(file), None


def _has(path: str, split: str) -> bool:
    return re.search(_SPLIT_FILE.pattern.format(re.escape(split)), path) is not None


def _choose(split: str | None, splits: list[str], where: str) -> str:
    chosen = split or ("test" if "test" in splits else (splits[0] if splits else None))
    if chosen is None or chosen not in splits:
        raise DatasetError(f"{where}: no split {chosen!r}; it has: {', '.join(splits)}.")
    return chosen


def _hf_file(file: Path) -> pl.DataFrame:
    suffix = file.suffix.lower()
    where = str(file)
    if suffix == ".parquet":
        try:
            return pl.read_parquet(file, glob=False)
        except (pl.exceptions.PolarsError, OSError) as exc:
            raise DatasetError(f"{where}: not a valid Parquet file: {exc}") from None
    if suffix in (".json", ".jsonl"):
        # to_json writes JSON Lines unless lines=False, whatever the suffix
        with file.open("rb") as head:
            first = head.read(64).lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
        data = load_json_source(file, lines=first != b"[")
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise DatasetError(f"{where}: expected JSON records, one object per line or a list.")
        return pl.DataFrame(data, infer_schema_length=None) if data else pl.DataFrame()
    if suffix == ".arrow":
        return _arrow_stream(file)
    raise DatasetError(
        f"{where}: expected a save_to_disk folder, or a .parquet, .json or .jsonl file."
    )


def _hf_saved(folder: Path) -> pl.DataFrame:
    where = str(folder)
    state_file = folder / "state.json"
    if not state_file.exists():
        raise DatasetError(f"{where}: not a saved Hugging Face dataset (no state.json).")
    state = load_json_source(state_file, lines=False)
    files = state.get("_data_files", []) if isinstance(state, dict) else []
    frames = [_arrow_stream(folder / item["filename"]) for item in files if isinstance(item, dict)]
    if not frames:
        raise DatasetError(f"{where}: the saved dataset lists no data files.")
    return pl.concat(frames, how="diagonal_relaxed")


def _arrow_stream(file: Path) -> pl.DataFrame:
    import pyarrow as pa

    try:
        with pa.memory_map(str(file)) as source:
            table = pa.ipc.open_stream(source).read_all()
    except (pa.ArrowException, OSError) as exc:
        raise DatasetError(
            f"{file}: not an Arrow stream as save_to_disk writes it: {exc}"
        ) from None
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    return frame
