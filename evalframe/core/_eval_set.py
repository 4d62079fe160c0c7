"""Eval sets: several datasets run in order under one name, with a resumable manifest.

The definition is eval-harness's ``eval-harness.eval-set.v1`` (a ``name`` and a list of
``datasets``); each entry is a dataset file path (relative to the set file), or a map with
``path`` and, optionally, ``outputs`` (saved outputs for it) and ``metrics``. The manifest
(``eval-harness.eval-set-manifest.v1``) records each dataset's status, pending -> running ->
completed | failed, with eval-harness's rules: a pending entry has no other field, a running
one its start, a completed one its timing and report summary, a failed one its timing and
error; ``duration_seconds`` is ``finished_at - started_at``; after the first entry not
completed every entry is pending; a terminal status never changes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from evalframe.core._errors import DatasetError

__all__ = [
    "MANIFEST_SCHEMA",
    "SET_SCHEMA",
    "EvalSet",
    "SetEntry",
    "check_manifest",
    "new_manifest",
    "read_eval_set",
]

SET_SCHEMA: Final = "eval-harness.eval-set.v1"
MANIFEST_SCHEMA: Final = "eval-harness.eval-set-manifest.v1"
STATUSES: Final = ("pending", "running", "completed", "failed")
MAX_DATASETS: Final = 1_000
_TIMING: Final = ("started_at", "finished_at", "duration_seconds")
_SUMMARY: Final = ("report_schema_version", "total_samples", "total_failures")


@dataclass(frozen=True, slots=True)
class SetEntry:
    """One dataset of an eval set."""

    path: Path
    outputs: Path | None = None
    metrics: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class EvalSet:
    """An eval set definition: its name and datasets in run order."""

    name: str
    entries: tuple[SetEntry, ...]
    path: str


def _entry(raw: object, index: int, base: Path, where: str) -> SetEntry:
    if isinstance(raw, str):
        raw = {"path": raw}
    if not isinstance(raw, dict) or not isinstance(raw.get("path"), str) or not raw["path"]:
        raise DatasetError(
            f"{where}: datasets[{index}] must be a dataset file path, or a map with 'path'."
        )
    if raw["path"] != raw["path"].strip():
        raise DatasetError(f"{where}: datasets[{index}] has surrounding whitespace.")
    outputs = raw.get("outputs")
    if outputs is not None and not isinstance(outputs, str):
        raise DatasetError(f"{where}: datasets[{index}].outputs must be a file path.")
    metrics = raw.get("metrics", [])
    if not isinstance(metrics, list) or not all(isinstance(m, str) for m in metrics):
        raise DatasetError(f"{where}: datasets[{index}].metrics must be a list of metric specs.")
    return SetEntry(
        path=base / raw["path"],
        outputs=base / outputs if outputs else None,
        metrics=tuple(metrics),
    )


def read_eval_set(path: str | Path) -> EvalSet:
    """Read and check an eval set definition (YAML or JSON).

    Raises:
        DatasetError: naming the file and the offending field.
    """
    from evalframe.core._formats import load_json, read_text
    from evalframe.core._yaml import parse_yaml

    file = Path(path)
    where = str(file)
    text = read_text(file, where, "Eval set")
    document = load_json(text, where, "Eval set") if file.suffix == ".json" else parse_yaml(text)
    if not isinstance(document, dict):
        raise DatasetError(f"{where}: an eval set must be a map with 'name' and 'datasets'.")
    version = document.get("schema_version", SET_SCHEMA)
    if version != SET_SCHEMA:
        raise DatasetError(f"{where}: schema_version must be {SET_SCHEMA!r}; got {version!r}.")
    name = document.get("name")
    if not isinstance(name, str) or not name or name != name.strip():
        raise DatasetError(
            f"{where}: 'name' must be a non-empty string without surrounding whitespace."
        )
    datasets = document.get("datasets")
    if not isinstance(datasets, list) or not datasets:
        raise DatasetError(f"{where}: 'datasets' must list at least one dataset.")
    if len(datasets) > MAX_DATASETS:
        raise DatasetError(f"{where}: at most {MAX_DATASETS:,} datasets; got {len(datasets):,}.")
    entries = tuple(_entry(raw, i, file.parent, where) for i, raw in enumerate(datasets))
    return EvalSet(name=name, entries=entries, path=where)


def new_manifest(eval_set: str, names: list[str], now: float) -> dict[str, Any]:
    """A manifest with every dataset pending."""
    return {
        "schema_version": MANIFEST_SCHEMA,
        "eval_set": eval_set,
        "started_at": now,
        "updated_at": now,
        "datasets": [{"dataset": n, "status": "pending"} for n in names],
    }


def _number(entry: dict[str, Any], key: str) -> bool:
    value = entry.get(key)
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def check_manifest(manifest: object, eval_set: str, names: list[str], where: str) -> None:
    """Check a manifest against eval-harness's rules and the set it belongs to.

    Raises:
        DatasetError: the first rule it breaks, naming the dataset and field.
    """

    def bad(message: str) -> DatasetError:
        return DatasetError(f"{where}: {message}")

    if not isinstance(manifest, dict) or manifest.get("schema_version") != MANIFEST_SCHEMA:
        raise bad(f"a manifest must be a map with schema_version {MANIFEST_SCHEMA!r}.")
    if manifest.get("eval_set") != eval_set:
        raise bad(f"the manifest is for eval set {manifest.get('eval_set')!r}, not {eval_set!r}.")
    entries = manifest.get("datasets")
    if (
        not isinstance(entries, list)
        or [e.get("dataset") if isinstance(e, dict) else None for e in entries] != names
    ):
        raise bad("the manifest's datasets must match the eval set's, in the same order.")
    open_seen = False
    for e in entries:
        name, status = e["dataset"], e.get("status")
        if status not in STATUSES:
            raise bad(f"dataset {name!r}: status must be one of {', '.join(STATUSES)}.")
        if open_seen and status != "pending":
            raise bad(f"dataset {name!r}: after a dataset not completed, every one is pending.")
        open_seen = open_seen or status != "completed"
        extra = set(e) - {"dataset", "status"}
        if status == "pending" and extra:
            raise bad(f"dataset {name!r}: a pending entry has no other field.")
        if status == "running" and (not _number(e, "started_at") or extra - {"started_at"}):
            raise bad(f"dataset {name!r}: a running entry has only started_at.")
        if status in ("completed", "failed"):
            if not all(_number(e, k) for k in _TIMING):
                raise bad(f"dataset {name!r}: a {status} entry needs {', '.join(_TIMING)}.")
            if abs(e["duration_seconds"] - (e["finished_at"] - e["started_at"])) > 1e-6:
                raise bad(f"dataset {name!r}: duration_seconds must be finished_at - started_at.")
        if status == "completed" and ("error" in e or not all(k in e for k in _SUMMARY)):
            raise bad(
                f"dataset {name!r}: a completed entry has {', '.join(_SUMMARY)} and no error."
            )
        if status == "failed" and (
            not isinstance(e.get("error"), str) or any(k in e for k in _SUMMARY)
        ):
            raise bad(f"dataset {name!r}: a failed entry has an error and no report fields.")
