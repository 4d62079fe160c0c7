"""Promotion files: the dataset files ``--promote-failures`` and ``promote-online`` write.

The rules, the same for every command that promotes samples into a file a user names:

* **Nothing is destroyed.** The file being evaluated (its dataset, outputs, store or report,
  compared by inode, so hard and symbolic links count) is never a target. An existing file
  is written only when it is a promotion file evalframe wrote (its top-level
  ``evalframe_promotion`` key says so) or the dataset named by ``promote-online --merge``;
  anything else is refused, and ``--force`` replaces it.
* **What is there is kept.** New samples are appended; a sample whose id the file already
  holds is skipped. A YAML dataset gains its samples as text added after its last sample, so
  every byte before them (comments, layout, anchors) stays as it was; a JSONL dataset gains
  lines. Only ``--force`` replaces a file's samples.
* **What is written loads.** A sample that the dataset reader would refuse (nested past its
  depth limit, a lone surrogate, an id or tags it does not accept) is skipped and named; the
  whole file is written to a temporary file, read back with ``read_dataset``, and only then
  renamed over the target (flushed to disk first), under a lock that serialises writers.
"""

from __future__ import annotations

import codecs
import fnmatch
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

import polars as pl
import yaml

from evalframe.core import schema as C
from evalframe.core._errors import DatasetError, EvalframeError, PromotionTargetError
from evalframe.core._safe_write import real_target, same_file, write_atomic
from evalframe.core._yaml import MAX_DEPTH, YamlLoader, dump_yaml, parse_yaml

__all__ = [
    "PROMOTION_KEY",
    "SAMPLE_DEPTH",
    "PromotionTargetError",
    "Skipped",
    "Written",
    "check_target",
    "dataset_records",
    "fit_problem",
    "is_promotion_file",
    "promotion_error",
    "refuse_protected",
    "value_depth",
    "write_samples",
]

PROMOTION_KEY: Final = "evalframe_promotion"
"""The top-level key that marks a dataset file evalframe wrote by promoting samples."""

SAMPLE_DEPTH: Final = MAX_DEPTH - 2
"""How deep a promoted sample may nest: it sits two levels down (the document, ``samples``)."""

Kind = Literal["failures", "online"]


@dataclass(frozen=True, slots=True)
class Skipped:
    """A sample left out of a promotion file, and why."""

    sample_id: str
    reason: str

    def __str__(self) -> str:
        return f"{self.sample_id} ({self.reason})"


@dataclass(frozen=True, slots=True)
class Written:
    """What ``write_samples`` did to a file.

    Attributes:
        path: the file.
        added: samples written to it.
        kept: samples it held before that are still there.
        skipped: samples left out (already in the file, or that would not load).
        replaced: whether the file's previous samples were dropped (``force``).
    """

    path: Path
    added: int
    kept: int
    skipped: list[Skipped] = field(default_factory=list)
    replaced: bool = False


# --- what counts as a promotion file, and what may never be one ------------------------------


def is_promotion_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a YAML document evalframe wrote by promoting samples."""
    file = Path(path)
    if file.suffix.lower() not in (".yaml", ".yml") or not file.is_file():
        return False
    try:
        document = parse_yaml(file.read_bytes().removeprefix(codecs.BOM_UTF8).decode("utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError, DatasetError):
        return False
    return isinstance(document, dict) and isinstance(document.get(PROMOTION_KEY), str)


def _is_pattern(text: str) -> bool:
    return any(c in text for c in "*?[") and not Path(text).exists()


def refuse_protected(
    target: str | os.PathLike[str], protected: Mapping[str, str | os.PathLike[str] | None]
) -> None:
    """Refuse a target that is one of the command's own files: ``protected`` maps a role
    ("the dataset being evaluated") to its path, a folder or a glob of files.

    Raises:
        PromotionTargetError: naming the role and the path.
    """
    file = Path(target)
    for role, path in protected.items():
        if path is None or "://" in str(path):
            continue
        text = os.fspath(path)
        if (
            same_file(file, text)
            or (Path(text).is_dir() and file.resolve().is_relative_to(Path(text).resolve()))
            or (
                _is_pattern(text)
                and fnmatch.fnmatch(str(file.resolve()), str(Path(text).resolve()))
            )
        ):
            raise PromotionTargetError(
                f"Refusing to write promoted samples to {target}: it is {role} ({text}). "
                "Promotions never overwrite a command's own files; name another file."
            )


def check_target(
    path: str | os.PathLike[str],
    protected: Mapping[str, str | os.PathLike[str] | None],
    *,
    force: bool = False,
    any_dataset: bool = False,
    force_option: str = "--force",
) -> None:
    """Refuse, before any work, a target promoted samples may not be written to: one of the
    command's own files, or an existing file that is not a promotion file (unless ``force``,
    or ``any_dataset`` for the dataset ``--merge`` names).

    Raises:
        PromotionTargetError: naming the file and what to do instead.
    """
    target = real_target(path)
    refuse_protected(target, protected)
    if target.is_dir():
        raise PromotionTargetError(f"Cannot write promoted samples to {target}: it is a folder.")
    if target.exists() and not force and not any_dataset and not is_promotion_file(target):
        _refuse_foreign(target, force_option)
    _check_suffix(target, appending=target.exists() and any_dataset and not force)


_YAML: Final = (".yaml", ".yml")


def _check_suffix(target: Path, *, appending: bool) -> None:
    suffix = target.suffix.lower()
    if suffix in _YAML or (appending and suffix == ".jsonl"):
        return
    if appending:
        raise PromotionTargetError(
            f"Cannot add promoted samples to {target} in place: evalframe adds samples to YAML "
            "and JSONL datasets. Write them to a new .yaml file."
        )
    raise PromotionTargetError(
        f"Cannot write promoted samples to {target}: a promotion file is a dataset YAML, and "
        "the dataset reader knows one by its name. Name it *.yaml or *.yml."
    )


def _refuse_foreign(target: Path, option: str) -> None:
    raise PromotionTargetError(
        f"Refusing to write promoted samples to {target}: the file exists and is not a "
        f"promotion file evalframe wrote (a dataset YAML with a top-level '{PROMOTION_KEY}' "
        f"key), so writing it would destroy what it holds. Name a new file, or pass {option} "
        "to replace it."
    )


# --- what a sample must be to load -----------------------------------------------------------


def value_depth(value: object) -> int:
    """How many lists and maps nest in ``value`` (a scalar is 0), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children)
    return deepest


def fit_problem(record: Mapping[str, Any]) -> str | None:
    """Why the dataset reader would refuse ``record`` as a sample of a YAML dataset, or None.

    Checked: the nesting limit (a sample nests at most ``SAMPLE_DEPTH`` levels), text no UTF-8
    file can hold (a lone surrogate, in values or keys), and every sample rule of
    ``Dataset.from_records`` (the id, the input map, tags, contexts, trajectories).
    """
    return _shape_problem(record) or _rules_problem([dict(record)])


def _shape_problem(record: Mapping[str, Any]) -> str | None:
    depth = value_depth(dict(record))
    if depth > SAMPLE_DEPTH:
        return (
            f"it nests {depth} levels of lists and maps; a sample in a dataset file may nest "
            f"at most {SAMPLE_DEPTH} ({MAX_DEPTH} counted from the top of the file)"
        )
    try:
        json.dumps(record, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except UnicodeEncodeError:
        return "it holds a lone surrogate, which no UTF-8 file can hold"
    except (TypeError, ValueError) as exc:
        return f"it holds a value JSON cannot carry ({exc})"
    return None


def _rules_problem(records: list[dict[str, Any]]) -> str | None:
    from evalframe.core._dataset import Dataset

    try:
        Dataset.from_records(records, name="promoted")
    except DatasetError as exc:
        return str(exc).removeprefix("Dataset 'promoted': ")
    return None


def _shown_id(record: Mapping[str, Any], index: int) -> str:
    sample_id = record.get("id")
    if not isinstance(sample_id, str):
        return f"#{index}"
    return sample_id.encode("utf-8", "backslashreplace").decode("utf-8")


def _fitting(
    records: Sequence[Mapping[str, Any]], known_ids: set[str]
) -> tuple[list[dict[str, Any]], list[Skipped]]:
    kept: list[dict[str, Any]] = []
    skipped: list[Skipped] = []
    for index, record in enumerate(records):
        sample_id = record.get("id")
        if isinstance(sample_id, str) and sample_id in known_ids:
            skipped.append(Skipped(_shown_id(record, index), "its id is already in the file"))
            continue
        problem = _shape_problem(record)
        if problem is not None:
            skipped.append(Skipped(_shown_id(record, index), f"would not load: {problem}"))
            continue
        if isinstance(sample_id, str):
            known_ids.add(sample_id)
        kept.append(dict(record))
    if kept and _rules_problem(kept) is not None:  # one check for all; one each to find which
        fine = []
        for index, record in enumerate(kept):
            problem = _rules_problem([record])
            if problem is None:
                fine.append(record)
            else:
                skipped.append(Skipped(_shown_id(record, index), f"would not load: {problem}"))
        kept = fine
    return kept, skipped


def dataset_records(dataset: pl.DataFrame) -> list[dict[str, Any]]:
    """A dataset frame's samples as records (``id``, ``input``, ``expected_output``,
    ``metadata``), in order: what a dataset file would hold to load as the same samples."""
    records: list[dict[str, Any]] = []
    # One iteration per sample: each becomes a record of Python values.
    for sid, inp, expected, etype, meta in dataset.select(
        C.SAMPLE_ID, C.INPUT, C.EXPECTED_OUTPUT, C.EXPECTED_TYPE, C.METADATA
    ).iter_rows():
        record: dict[str, Any] = {
            "id": sid,
            "input": json.loads(inp),
            "expected_output": expected if etype == "string" else json.loads(expected),
        }
        metadata = json.loads(meta) if meta else {}
        if metadata:
            record["metadata"] = metadata
        records.append(record)
    return records


# --- writing -----------------------------------------------------------------------------------


def _document(
    kind: Kind, name: str, metrics: Sequence[str], samples: list[dict[str, Any]]
) -> dict[str, Any]:
    from evalframe.core._dataset import SCHEMA_VERSION

    document: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "name": name,
        PROMOTION_KEY: kind,
    }
    if metrics:
        document["metrics"] = list(metrics)
    document["samples"] = samples
    return document


def _block_sequence_end(text: str) -> tuple[int, int] | None:
    """Where text may be added after the last item of the top-level ``samples:`` block
    sequence of a YAML document, and the column its items start at; None when the
    document has no such sequence (a flow sequence, a map of samples, none at all)."""
    loader = YamlLoader(text)
    try:
        root = loader.get_single_node()
    except (yaml.YAMLError, RecursionError):
        return None
    finally:
        loader.dispose()
    if not isinstance(root, yaml.MappingNode):
        return None
    found = [v for k, v in root.value if isinstance(k, yaml.ScalarNode) and k.value == "samples"]
    if len(found) != 1 or not isinstance(found[0], yaml.SequenceNode):
        return None
    sequence = found[0]
    if sequence.flow_style or not sequence.value:
        return None
    # The last item's last leaf: where its text ends (a collection's own end mark can lie
    # past the comments and keys that follow it).
    node: yaml.Node = sequence.value[-1]
    while (
        isinstance(node, yaml.SequenceNode | yaml.MappingNode)
        and node.value
        and not node.flow_style
    ):
        last = node.value[-1]
        node = last[1] if isinstance(last, tuple) else last
    end = node.end_mark.index
    if end > 0 and text[end - 1] != "\n":
        newline = text.find("\n", end)
        end = len(text) if newline < 0 else newline + 1
    return end, sequence.start_mark.column


def _appended_yaml(text: str, records: list[dict[str, Any]]) -> str | None:
    """``text`` with ``records`` added to its ``samples:`` as text, every other byte kept; None
    when that cannot be done so that the document reads back as before plus the records."""
    place = _block_sequence_end(text)
    if place is None:
        return None
    end, column = place
    newline = "\r\n" if "\r\n" in text else "\n"
    pad = " " * column
    items = "".join(
        (pad + line if line else line) + newline for line in dump_yaml(records).split("\n")[:-1]
    )
    head = text[:end]
    if head and not head.endswith("\n"):
        head += newline
    result = head + items + text[end:]
    try:
        before, after = parse_yaml(text), parse_yaml(result)
    except (yaml.YAMLError, DatasetError):
        return None
    if not isinstance(before, dict) or not isinstance(after, dict):
        return None
    expected = {**before, "samples": [*before["samples"], *records]}
    return result if after == expected else None


def _appended_jsonl(text: str, records: list[dict[str, Any]]) -> str:
    newline = "\r\n" if "\r\n" in text else "\n"
    head = text if not text or text.endswith("\n") else text + newline
    lines = (json.dumps(r, ensure_ascii=False, allow_nan=False) + newline for r in records)
    return head + "".join(lines)


def _read(path: Path) -> pl.DataFrame:
    from evalframe.core._dataset import read_dataset

    return read_dataset(path)


def _checker(before: pl.DataFrame | None, added: list[dict[str, Any]], target: Path) -> Any:
    """A check of the temporary file: it loads, with the samples it held first, unchanged,
    then exactly the added ones."""
    columns = [C.SAMPLE_ID, C.ROW_HASH, C.METADATA]

    def check(scratch: Path) -> None:
        try:
            after = _read(scratch)
        except DatasetError as exc:
            raise DatasetError(
                f"Promoted samples were not written to {target}: the file would not load "
                f"({exc}). It is unchanged."
            ) from exc
        kept = 0 if before is None else before.height
        ids = after.get_column(C.SAMPLE_ID).to_list()
        if (
            after.height != kept + len(added)
            or ids[kept:] != [r["id"] for r in added]
            or (
                before is not None
                and not after.head(kept).select(columns).equals(before.select(columns))
            )
        ):
            raise DatasetError(
                f"Promoted samples were not written to {target}: the file would not read back "
                "as its samples followed by the promoted ones. It is unchanged."
            )

    return check


def write_samples(
    path: str | os.PathLike[str],
    records: Sequence[Mapping[str, Any]],
    *,
    kind: Kind,
    name: str,
    metrics: Sequence[str] = (),
    force: bool = False,
    any_dataset: bool = False,
    force_option: str = "--force",
) -> Written:
    """Add ``records`` to the dataset file at ``path`` by the module's rules (the caller holds
    ``locked(path)`` and has refused the command's own files).

    Args:
        path: the target file; a new one is a YAML dataset (``name``, ``metrics``, the
            ``evalframe_promotion: kind`` mark).
        records: the samples (``id``, ``input``, ``expected_output``, ``metadata``).
        kind: ``failures`` or ``online``, recorded in a new file's mark.
        name: a new file's dataset name.
        metrics: a new file's default metric specs.
        force: replace what the file holds (any file but a folder).
        any_dataset: append to any YAML or JSONL dataset, not only a promotion file (the
            dataset ``--merge`` names).
        force_option: the option that forces, for messages.

    Returns:
        What was written. Nothing is written when no sample is left to add.

    Raises:
        PromotionTargetError: the file exists and may not be written, or cannot take samples
            in place (a JSON, CSV or Parquet dataset).
        DatasetError: the target does not load as a dataset (with ``any_dataset``), or the
            written file would not load (the target is then unchanged).
    """
    target = real_target(path)
    if target.is_dir():
        raise PromotionTargetError(f"Cannot write promoted samples to {target}: it is a folder.")
    exists = target.exists()
    ours = exists and is_promotion_file(target)
    if exists and not force and not ours and not any_dataset:
        _refuse_foreign(target, force_option)
    _check_suffix(target, appending=exists and not force and (ours or any_dataset))
    before = None if not exists or force else _read(target)  # a broken target stops here
    known = set() if before is None else set(before.get_column(C.SAMPLE_ID).to_list())
    added, skipped = _fitting(records, known)
    if not added:
        return Written(target, 0, 0 if before is None else before.height, skipped)
    if before is None:
        text = dump_yaml(_document(kind, name, metrics, added))
        check = _checker(None, added, target)
        write_atomic(target, text.encode("utf-8"), check=check)
        return Written(target, len(added), 0, skipped, replaced=exists)
    raw = target.read_bytes()
    bom = codecs.BOM_UTF8 if raw.startswith(codecs.BOM_UTF8) else b""
    old = raw[len(bom) :].decode("utf-8")
    new: str | None
    if target.suffix.lower() == ".jsonl":
        new = _appended_jsonl(old, added)
    else:
        new = _appended_yaml(old, added)
        if new is None and ours:  # our own file, in a shape text cannot be added to: rewrite
            document = parse_yaml(old)
            assert isinstance(document, dict)
            document["samples"] = [*document["samples"], *added]
            new = dump_yaml(document)
        elif new is None:
            raise PromotionTargetError(
                f"Cannot add promoted samples to {target} without rewriting it: its samples "
                "are not a block list (`samples:` followed by `- id: ...` items). Write them "
                f"to a new file, or pass {force_option} to replace the file."
            )
    write_atomic(target, bom + new.encode("utf-8"), check=_checker(before, added, target))
    return Written(target, len(added), before.height, skipped)


def promotion_error(exc: OSError, target: Path) -> EvalframeError:
    """An OS error while writing a promotion file, as a one-line evalframe error."""
    return EvalframeError(
        f"Could not write promoted samples to {target}: {exc.strerror or exc}. It is unchanged."
    )
