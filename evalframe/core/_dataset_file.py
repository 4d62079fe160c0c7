"""Writing a new dataset file whole: YAML or JSON (the eval-harness document), or JSONL (one
sample a line), written through the atomic writer and read back before it replaces anything.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from evalframe.core._errors import DatasetError
from evalframe.core._safe_write import real_target, write_atomic
from evalframe.core._yaml import dump_yaml

__all__ = ["DATASET_SUFFIXES", "check_dataset_target", "write_dataset"]

DATASET_SUFFIXES: Final = (".yaml", ".yml", ".json", ".jsonl")
"""The files ``write_dataset`` writes, by extension."""


def check_dataset_target(path: str | os.PathLike[str], what: str = "The dataset") -> Path:
    """The file a dataset will be written to, checked before any work: a known extension, a
    folder that exists, not a folder itself.

    Raises:
        DatasetError: naming the file and what was expected.
    """
    target = real_target(path)
    if target.suffix.lower() not in DATASET_SUFFIXES:
        raise DatasetError(
            f"{path}: {what} is written as YAML (.yaml, .yml), JSON (.json) or JSONL "
            f"(.jsonl), chosen by the file's extension; got {target.suffix or 'none'!r}."
        )
    if target.is_dir():
        raise DatasetError(f"{path}: is a folder; expected a file name for {what.lower()}.")
    if not target.absolute().parent.is_dir():
        raise DatasetError(f"{path}: the folder {str(target.absolute().parent)!r} does not exist.")
    return target


def _text(
    path: Path,
    name: str,
    metrics: Sequence[str],
    samples: list[dict[str, Any]],
    extra: Mapping[str, Any],
) -> str:
    from evalframe.core._dataset import SCHEMA_VERSION

    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return "".join(json.dumps(s, ensure_ascii=False, allow_nan=False) + "\n" for s in samples)
    document: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "name": name}
    if metrics:
        document["metrics"] = list(metrics)
    document.update(extra)
    document["samples"] = samples
    if suffix == ".json":
        return json.dumps(document, ensure_ascii=False, allow_nan=False, indent=1) + "\n"
    return dump_yaml(document, blocks=True)


def write_dataset(
    path: str | os.PathLike[str],
    samples: list[dict[str, Any]],
    *,
    name: str,
    metrics: Sequence[str] = (),
    extra: Mapping[str, Any] | None = None,
) -> Path:
    """Write ``samples`` (records as a dataset file holds them) to ``path`` all at once: a
    temporary file beside it, read back with ``read_dataset`` (it must load, with these
    samples), then renamed over ``path``. YAML and JSON files carry ``name``, ``metrics`` and
    the top-level ``extra`` keys; a JSONL file holds the samples only.

    Returns:
        The file written (a symbolic link's target).

    Raises:
        DatasetError: the samples would not load (nothing is written), or the file cannot be
            written (naming it).
    """
    from evalframe.core._dataset import read_dataset

    target = check_dataset_target(path)
    text = _text(target, name, metrics, samples, extra or {})

    def check(scratch: Path) -> None:
        found = read_dataset(scratch, name=None if target.suffix.lower() == ".jsonl" else name)
        if found.height != len(samples):
            raise DatasetError(f"{path}: {found.height} samples read back of {len(samples)}.")

    try:
        write_atomic(target, text.encode("utf-8"), check=check)
    except OSError as exc:
        raise DatasetError(f"{path}: could not be written ({exc.strerror or exc}).") from None
    return target
