"""Failure promotion: a run's failing rows become a dataset you can run again.

A row fails when any of its executions scored below the metric's threshold or could not be
scored (an error). Each failing row is written with its original id, input, expected output
and metadata, plus ``metadata.eval_harness.promoted_failure: {source_dataset,
failed_metrics}`` (metric ids, sorted). The system's outputs and the error messages are never
written: the file may be shared, and a failing output can hold what should not leak.

The file is a promotion file (``evalframe.core._promotion_file``): the dataset being
evaluated and any existing file evalframe did not write for promotions are refused; an
existing promotion file keeps its samples and gains the failing rows it does not hold yet;
a row that would not load is skipped and named; the file is written atomically. ``force``
replaces the file's samples with this run's failures, and deletes a promotion file when
nothing failed (eval-harness always does both).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from evalframe.core import schema as C
from evalframe.core._dataset import SCHEMA_VERSION
from evalframe.core._errors import DatasetError
from evalframe.core._promotion_file import (
    Skipped,
    check_target,
    dataset_records,
    is_promotion_file,
    promotion_error,
    write_samples,
)
from evalframe.core._safe_write import locked, real_target
from evalframe.core._yaml import dump_yaml

if TYPE_CHECKING:
    from evalframe.core._run import Run

__all__ = ["Promotion", "dump_dataset_yaml", "promote_failures", "promoted_records"]


@dataclass(frozen=True, slots=True)
class Promotion:
    """What ``promote_failures`` did.

    Attributes:
        path: the promotion file.
        name: the promoted dataset's name (of a new file).
        rows: failing rows written to it.
        deleted: whether a stale promotion file was deleted (``force`` with nothing failing).
        kept: samples the file held before that it still holds.
        skipped: failing rows left out (already in the file, or that would not load).
    """

    path: Path
    name: str
    rows: int
    deleted: bool
    kept: int = 0
    skipped: list[Skipped] = field(default_factory=list)

    def describe(self) -> str:
        """What was done, for the terminal."""
        if self.rows:
            text = f"promoted {self.rows} failing row(s) to {self.path} (dataset {self.name})"
            if self.kept:
                text += f", after the {self.kept} sample(s) it held"
        elif self.deleted:
            text = f"no failing rows: deleted the stale promotion file {self.path}"
        elif self.kept:
            text = f"no new failing rows: {self.path} keeps its {self.kept} sample(s)"
        else:
            text = f"no failing rows: {self.path} not written"
        if self.skipped:
            text += f"; skipped {len(self.skipped)}: " + "; ".join(map(str, self.skipped))
        return text


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
    records = dataset_records(rows)
    for record in records:  # one per failing row: each gains its own promotion block
        metadata = record.setdefault("metadata", {})
        harness = metadata.get("eval_harness")
        if isinstance(harness, dict) and "promoted_failure" in harness:
            raise DatasetError(
                f"Sample '{record['id']}' already has metadata.eval_harness.promoted_failure; a "
                "promoted failure cannot be promoted again."
            )
        harness = dict(harness) if isinstance(harness, dict) else {}
        harness["promoted_failure"] = {
            "source_dataset": run.dataset.name,
            "failed_metrics": sorted(failed[record["id"]]),
        }
        metadata["eval_harness"] = harness
    return records


def dump_dataset_yaml(
    name: str, records: list[dict[str, Any]], *, metrics: list[str] | None = None
) -> str:
    """A dataset YAML document (``schema_version``, ``name``, ``metrics``?, ``samples``)."""
    doc: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "name": name}
    if metrics:
        doc["metrics"] = list(metrics)
    doc["samples"] = records
    return dump_yaml(doc)


def promote_failures(
    run: Run,
    path: str | os.PathLike[str],
    *,
    name: str | None = None,
    force: bool = False,
    protected: Mapping[str, str | os.PathLike[str] | None] | None = None,
) -> Promotion:
    """Add ``run``'s failing rows to the promotion file at ``path`` (a dataset YAML).

    Args:
        run: the scored run.
        path: the YAML file: new, or a promotion file evalframe wrote (its samples are kept,
            and a failing row whose id it holds is skipped).
        name: a new file's dataset name (default: ``<dataset>.failures``).
        force: replace what ``path`` holds, whatever it is, with this run's failing rows;
            with none, delete a promotion file there.
        protected: other files of the caller that must never be written, by role (the
            dataset the run was read from always is).

    Returns:
        What was done: rows written, rows skipped and why, or a stale file deleted.

    Raises:
        PromotionTargetError: ``path`` is the dataset being evaluated (or another protected
            file), or an existing file that is not a promotion file (without ``force``).
        DatasetError: a failing row is itself a promoted failure, or the existing promotion
            file does not load.
        EvalframeError: the file could not be written (it is then unchanged).
    """
    target = real_target(path)
    dataset_name = name or f"{run.dataset.name}.failures"
    if not dataset_name.strip():
        raise DatasetError("The promoted dataset name must be a non-empty string.")
    guard = {"the dataset being evaluated": run.dataset.path, **(protected or {})}
    check_target(target, guard, force=force)
    records = promoted_records(run)
    try:
        with locked(target, "Promotion file"):
            check_target(target, guard, force=force)  # again: another process may have written
            if not records:
                if force and is_promotion_file(target):
                    target.unlink()
                    return Promotion(target, dataset_name, 0, True)
                kept = _samples_in(target) if is_promotion_file(target) else 0
                return Promotion(target, dataset_name, 0, False, kept)
            written = write_samples(
                target, records, kind="failures", name=dataset_name, metrics=run.metric_ids,
                force=force,
            )  # fmt: skip
    except OSError as exc:
        raise promotion_error(exc, target) from exc
    return Promotion(target, dataset_name, written.added, False, written.kept, written.skipped)


def _samples_in(path: Path) -> int:
    """The number of samples in the dataset file at ``path``."""
    from evalframe.core._dataset import read_dataset

    return read_dataset(path).height
