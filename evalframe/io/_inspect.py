"""Inspect AI eval logs: the ``.eval`` archive (Inspect's default) and the JSON log format."""

from __future__ import annotations

import os
import struct
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from evalframe.core._errors import DatasetError
from evalframe.core._formats import decode_utf8, load_json
from evalframe.io._common import (
    Imported,
    Rows,
    check_type,
    load_json_source,
    source_path,
    variants,
)

__all__ = ["INSPECT", "from_inspect"]

INSPECT: Final = {
    "id": "id",
    "input": "input.question",
    "target": "expected_output",
    "targets": "expected_any",
    "output": "actual_output",
    "tool_calls": "trajectory.tool_calls",
    "steps": "trajectory.steps",
    "finish_reason": "trajectory.finish_reason",
    "scores": "metadata.inspect_scores",
    "metadata": "metadata.inspect_metadata",
}
_ZSTD: Final = 93  # the zip compression method Inspect writes (Zstandard)


def from_inspect(
    path: str | os.PathLike[str],
    *,
    to: str | os.PathLike[str] | None = None,
    outputs: str | os.PathLike[str] | None = None,
    mapping: Mapping[str, str] | None = None,
    name: str | None = None,
) -> Imported:
    """An Inspect eval log: the ``.eval`` archive Inspect writes by default, or a JSON log
    (``--log-format json``).

    One sample per log sample, in the task's dataset order: ``input`` (the user messages'
    text) to ``input.question``; ``target`` to ``expected_output``, and a target list (any of
    its items is right, in Inspect) also to ``expected_any``, so exact-match, contains and
    rouge-l score the best over it; the output's completion to the outputs; the assistant
    messages' tool calls, with their results or errors, to the trajectory (``tool_calls``,
    ``steps``, ``finish_reason``); every epoch's scorer values to
    ``metadata.inspect_scores.<epoch>``. The dataset takes the task's name. With several
    epochs, each epoch's outputs are a set of their own (``Imported.variants``, labelled
    ``epoch1``, ``epoch2``, ...): the first is written to ``outputs``, the others beside it.
    """
    file = source_path(path)
    log, samples = _read_log(file)
    where = str(file)
    order = _dataset_order(log)
    epochs: dict[int, Rows] = {}
    scores: dict[Any, dict[str, Any]] = {}
    for index, sample in enumerate(samples):
        record = f"sample {index}"
        check_type(sample, dict, where, record, "(the sample)")
        epoch = check_type(sample.get("epoch", 1), int, where, record, "epoch") or 1
        row = _row(sample, where, record)
        epochs.setdefault(epoch, []).append(row)
        scores.setdefault(row["id"], {})[f"epoch{epoch}"] = row.pop("scores")
    groups = []
    for epoch in sorted(epochs):
        rows = sorted(epochs[epoch], key=lambda r: order.get(str(r["id"]), len(order)))
        for row in rows:
            row["scores"] = {k: v for k, v in scores[row["id"]].items() if v} or None
        groups.append((f"epoch{epoch}", rows))
    task = log.get("eval", {}).get("task") if isinstance(log.get("eval"), dict) else None
    return variants(
        groups or [("epoch1", [])],
        INSPECT,
        mapping,
        name=name or (task if isinstance(task, str) and task.strip() else file.stem),
        source=where,
        to=to,
        outputs=outputs,
    )


def _dataset_order(log: dict[str, Any]) -> dict[str, int]:
    """Sample id -> position in the task's dataset (``eval.dataset.sample_ids``)."""
    info = log.get("eval")
    dataset = info.get("dataset") if isinstance(info, dict) else None
    ids = dataset.get("sample_ids") if isinstance(dataset, dict) else None
    return {str(i): n for n, i in enumerate(ids)} if isinstance(ids, list) else {}


def _row(sample: dict[str, Any], where: str, record: str) -> dict[str, Any]:
    sample_id = check_type(sample.get("id"), (str, int), where, record, "id")
    raw_input = check_type(sample.get("input"), (str, list), where, record, "input")
    if isinstance(raw_input, list):
        question = "\n".join(
            _text(m.get("content"))
            for m in raw_input
            if isinstance(m, dict) and m.get("role") == "user"
        )
    else:
        question = raw_input
    target = check_type(sample.get("target"), (str, list), where, record, "target")
    targets = None
    if isinstance(target, list):
        for position, item in enumerate(target):
            check_type(item, str, where, record, f"target[{position}]")
        targets = target if len(target) > 1 else None
        target = target[0] if target else None
    output = check_type(sample.get("output") or {}, dict, where, record, "output")
    choices = check_type(output.get("choices") or [], list, where, record, "output.choices")
    completion = check_type(output.get("completion"), str, where, record, "output.completion")
    if completion is None and choices and isinstance(choices[0], dict):
        completion = _text((choices[0].get("message") or {}).get("content"))
    messages = check_type(sample.get("messages") or [], list, where, record, "messages")
    messages = [m for m in messages if isinstance(m, dict)]
    assistant = [m for m in messages if m.get("role") == "assistant"]
    # a tool message answers the call whose id it names
    results = {m.get("tool_call_id"): m for m in messages if m.get("role") == "tool"}
    calls = [
        _call(c, results.get(c.get("id")))
        for m in assistant
        for c in check_type(m.get("tool_calls") or [], list, where, record, "tool_calls")
        if isinstance(c, dict)
    ]
    raw_scores = check_type(sample.get("scores") or {}, dict, where, record, "scores")
    first = choices[0] if choices and isinstance(choices[0], dict) else {}
    return {
        "id": sample_id,
        "input": question,
        "target": target,
        "targets": targets,
        "output": completion,
        "tool_calls": calls if assistant else None,
        "steps": len(assistant) if assistant else None,
        "finish_reason": first.get("stop_reason"),
        "scores": {k: v.get("value") if isinstance(v, dict) else v for k, v in raw_scores.items()},
        "metadata": sample.get("metadata") or None,
    }


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


def _call(call: dict[str, Any], answer: dict[str, Any] | None) -> dict[str, Any]:
    """An Inspect tool call as a trajectory tool call, with its result or error when answered."""
    out: dict[str, Any] = {"name": call.get("function"), "arguments": call.get("arguments") or {}}
    if answer is not None:
        error = answer.get("error")
        if error:
            out["error"] = error.get("message") if isinstance(error, dict) else str(error)
        else:
            out["result"] = _text(answer.get("content"))
    return out


# --- the log formats -------------------------------------------------------------------------


def _read_log(file: Path) -> tuple[dict[str, Any], list[Any]]:
    """The log's header (``eval``, ``status``, ...) and its samples, from either format."""
    if zipfile.is_zipfile(file):
        return _read_archive(file)
    log = load_json_source(file, lines=False)
    if not isinstance(log, dict) or not isinstance(log.get("samples"), list):
        raise DatasetError(
            f"{file}: not an Inspect eval log with samples (a .eval archive, or a JSON log "
            "written with --log-format json and samples logged)."
        )
    return log, log["samples"]


def _read_archive(file: Path) -> tuple[dict[str, Any], list[Any]]:
    where = str(file)
    try:
        with zipfile.ZipFile(file) as archive, file.open("rb") as raw:
            infos = {i.filename: i for i in archive.infolist()}
            header_name = next(
                (n for n in ("header.json", "_journal/start.json") if n in infos), None
            )
            if header_name is None:
                raise DatasetError(
                    f"{where}: not an Inspect .eval log (no header.json in the archive)."
                )
            header = _member(archive, raw, infos[header_name], where)
            names = sorted(n for n in infos if n.startswith("samples/") and n.endswith(".json"))
            samples = [_member(archive, raw, infos[n], where) for n in names]
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise DatasetError(f"{where}: the .eval archive cannot be read: {exc}") from None
    if not isinstance(header, dict):
        raise DatasetError(f"{where}: {header_name} in the archive is not a JSON object.")
    if not samples:
        raise DatasetError(
            f"{where}: the .eval log holds no samples (was it logged without them?)."
        )
    return header, samples


def _member(archive: zipfile.ZipFile, raw: Any, info: zipfile.ZipInfo, where: str) -> Any:
    at = f"{where}: {info.filename}"
    if info.compress_type == _ZSTD:
        data = _zstd_member(raw, info, at)
    elif info.compress_type in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        data = archive.read(info)
    else:
        raise DatasetError(
            f"{at} is compressed with zip method {info.compress_type}; evalframe reads "
            "stored, deflated and Zstandard members."
        )
    text = decode_utf8(data, at, "Inspect log member")
    try:
        return load_json(text, at, "Inspect log member")
    except DatasetError:
        raise
    except ValueError as exc:
        raise DatasetError(f"{at} is not valid JSON: {exc}.") from None


def _zstd_member(raw: Any, info: zipfile.ZipInfo, at: str) -> bytes:
    """A Zstandard member's bytes (Python's zipfile reads it only from 3.14; Arrow's codec
    does), checked against the archive's CRC."""
    import pyarrow as pa

    raw.seek(info.header_offset)
    local = raw.read(30)
    if len(local) < 30 or local[:4] != b"PK\x03\x04":
        raise DatasetError(f"{at}: the archive's local header is damaged.")
    name_length, extra_length = struct.unpack("<HH", local[26:30])
    raw.seek(info.header_offset + 30 + name_length + extra_length)
    compressed = raw.read(info.compress_size)
    try:
        body: bytes = pa.decompress(
            compressed, decompressed_size=info.file_size, codec="zstd", asbytes=True
        )
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise DatasetError(f"{at} cannot be decompressed: {exc}") from None
    if zlib.crc32(body) != info.CRC:
        raise DatasetError(f"{at} is damaged (its checksum does not match the archive's).")
    return body
