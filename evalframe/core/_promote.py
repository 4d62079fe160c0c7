"""Failure promotion: a run's failing rows become a dataset you can run again.

A row fails when any of its executions scored below the metric's threshold or could not be
scored (an error). Each failing row is written with its original id, input, expected output
and metadata, plus ``metadata.eval_harness.promoted_failure: {source_dataset,
failed_metrics}`` (metric ids, sorted). The system's outputs and the error messages are never
written: the file may be shared, and a failing output can hold what should not leak.

When no row fails, an existing file at the path is deleted, so a stale list of failures
never outlives the run that fixed them (eval-harness does the same).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl
import yaml

from evalframe.core import schema as C
from evalframe.core._dataset import SCHEMA_VERSION
from evalframe.core._errors import DatasetError

if TYPE_CHECKING:
    from evalframe.core._run import Run

__all__ = ["Promotion", "dump_dataset_yaml", "promote_failures", "promoted_records"]


@dataclass(frozen=True, slots=True)
class Promotion:
    """What ``promote_failures`` did: ``rows`` written to ``path``, or the file ``deleted``."""

    path: Path
    name: str
    rows: int
    deleted: bool

    def describe(self) -> str:
        """One line for the terminal."""
        if self.rows:
            return f"promoted {self.rows} failing row(s) to {self.path} (dataset {self.name})"
        if self.deleted:
            return f"no failing rows: deleted the stale {self.path}"
        return f"no failing rows: {self.path} not written"


def promoted_records(run: Run) -> list[dict[str, Any]]:
    """The failing rows of ``run`` as dataset sample records, in dataset order.

    Raises:
        DatasetError: a failing row already carries ``metadata.eval_harness.promoted_failure``
            (promoting a promoted failure again would lose where it first came from).
    """
    failing = run.failing().group_by(C.SAMPLE_ID).agg(pl.col(C.METRIC).unique().sort())
    if failing.height == 0:
        return []
    failed = dict(zip(failing[C.SAMPLE_ID].to_list(), failing[C.METRIC].to_list(), strict=True))
    rows = run.dataset.filter(pl.col(C.SAMPLE_ID).is_in(list(failed)))
    records: list[dict[str, Any]] = []
    # One iteration per failing row: building each promoted record is per-row by nature.
    for sid, inp, expected, etype, meta in rows.select(
        C.SAMPLE_ID, C.INPUT, C.EXPECTED_OUTPUT, C.EXPECTED_TYPE, C.METADATA
    ).iter_rows():
        metadata = json.loads(meta) if meta else {}
        harness = metadata.get("eval_harness")
        if isinstance(harness, dict) and "promoted_failure" in harness:
            raise DatasetError(
                f"Sample '{sid}' already has metadata.eval_harness.promoted_failure; a promoted "
                "failure cannot be promoted again."
            )
        harness = dict(harness) if isinstance(harness, dict) else {}
        harness["promoted_failure"] = {
            "source_dataset": run.dataset.name,
            "failed_metrics": sorted(failed[sid]),
        }
        metadata["eval_harness"] = harness
        records.append(
            {
                "id": sid,
                "input": json.loads(inp),
                "expected_output": expected if etype == "string" else json.loads(expected),
                "metadata": metadata,
            }
        )
    return records


def dump_dataset_yaml(
    name: str, records: list[dict[str, Any]], *, metrics: list[str] | None = None
) -> str:
    """A dataset YAML document (``schema_version``, ``name``, ``metrics``?, ``samples``)."""
    doc: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "name": name}
    if metrics:
        doc["metrics"] = list(metrics)
    doc["samples"] = records
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100)


def promote_failures(
    run: Run, path: str | os.PathLike[str], *, name: str | None = None
) -> Promotion:
    """Write ``run``'s failing rows to ``path`` as a dataset YAML, or delete a stale file.

    Args:
        run: the scored run.
        path: the YAML file to write.
        name: the promoted dataset's name (default: ``<dataset>.failures``).

    Returns:
        What was done: rows written, or an existing file deleted because nothing failed.

    Raises:
        DatasetError: a failing row is itself a promoted failure.
    """
    target = Path(path)
    dataset_name = name or f"{run.dataset.name}.failures"
    if not dataset_name.strip():
        raise DatasetError("The promoted dataset name must be a non-empty string.")
    records = promoted_records(run)
    if not records:
        existed = target.exists()
        if existed:
            target.unlink()
        return Promotion(target, dataset_name, 0, existed)
    text = dump_dataset_yaml(dataset_name, records, metrics=run.metric_ids)
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = target.with_name(f".{target.name}.tmp")
    scratch.write_text(text, encoding="utf-8")
    scratch.replace(target)
    return Promotion(target, dataset_name, len(records), False)
