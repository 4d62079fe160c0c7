"""``run_set``: the datasets of an eval set in order, each recorded as a run, resumable.

Each dataset is recorded exactly once, wherever a kill lands. Its run id is fixed by the
manifest entry that marks it running (the set, the dataset and that entry's ``started_at``),
and with a store, the run and the manifest marking it completed are saved in one
transaction. A rerun that finds a dataset still marked running (in the manifest file, which
is written after the store) looks its run up by that id: saved, the entry is completed from
the stored run; not saved, the dataset runs again. With a store, the set holds a lock there
while it runs, so a second ``run-set`` of the same set at once is refused.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalframe.core._dataset import read_dataset
from evalframe.core._errors import DatasetError, EvalframeError
from evalframe.core._eval_set import (
    EvalSet,
    check_manifest,
    new_manifest,
    read_eval_set,
)
from evalframe.core._limits import checked
from evalframe.core._run_options import Concurrency, Limits, concurrency_of, no_limits_with
from evalframe.core._system import System
from evalframe.engine._evaluate import evaluate
from evalframe.store import _eval_sets, _locks, as_store

if TYPE_CHECKING:
    from evalframe.core._dataset import Dataset
    from evalframe.core._run import Run
    from evalframe.providers import JudgeClient, Providers
    from evalframe.store import Store

__all__ = ["run_set"]

REPORT_SCHEMA = "eval-harness.report.v1"


def _write_file(path: Path, manifest: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)  # never a half-written manifest


def set_run_id(eval_set: str, dataset: str, started_at: float) -> str:
    """The run id of a dataset's attempt, fixed by its running entry in the manifest."""
    key = json.dumps([eval_set, dataset, started_at])
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


def _completed(
    name: str, started: float, finished: float, total_samples: int, total_failures: int
) -> dict[str, Any]:
    return {
        "dataset": name,
        "status": "completed",
        "started_at": started,
        "finished_at": finished,
        "duration_seconds": finished - started,
        "report_schema_version": REPORT_SCHEMA,
        "total_samples": total_samples,
        "total_failures": total_failures,
    }


def run_set(
    eval_set: EvalSet | str | os.PathLike[str],
    *,
    system: System | None = None,
    store: Store | str | os.PathLike[str] | None = None,
    manifest: str | os.PathLike[str] | None = None,
    providers: Providers | JudgeClient | None = None,
    repetitions: int | None = None,
    concurrency: int | Concurrency = 8,
    progress: bool | None = None,
    limits: Limits | None = None,
) -> tuple[dict[str, Any], list[Any]]:
    """Run an eval set's datasets in order, skipping those its manifest has completed.

    Each dataset is scored from its ``outputs`` file, else by ``system``, and saved to
    ``store`` with the label ``eval_set=<name>``. The manifest advances after every step,
    in the store (when given) and in the ``manifest`` JSON file (when given; an existing
    file is resumed). A dataset that raises is marked failed with the message, and the run
    stops there; a failed entry is never retried (start a fresh manifest to run it again).
    Each dataset is recorded once, wherever an interruption lands (see the module's
    docstring).

    ``providers``, ``repetitions``, ``concurrency`` (a number of calls in flight, or an
    ``ef.Concurrency`` with a rate limit) and ``limits`` (an ``ef.Limits`` for providers
    built from the environment) apply to every dataset, as in ``evaluate``.

    Returns:
        The manifest and the runs made by this call.

    Raises:
        DatasetError: a malformed set, duplicate dataset names, or a manifest that breaks
            the rules or belongs to another set.
        StoreError: another live process runs the same set on this store (named).
        ValueError: ``repetitions`` or ``concurrency`` outside its range, or both
            ``providers`` and ``limits`` (as ``evaluate``).
    """
    # checked before any dataset is marked running
    if repetitions is not None:
        checked(repetitions, "repetitions")
    pace = concurrency_of(concurrency, None, None)
    no_limits_with(providers, limits)
    es = eval_set if isinstance(eval_set, EvalSet) else read_eval_set(Path(eval_set))
    datasets = [read_dataset(e.path) for e in es.entries]
    names = [d.name for d in datasets]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise DatasetError(f"{es.path}: dataset names must be unique; repeated: {repeated}.")
    target = as_store(store) if store is not None else None
    with ExitStack() as held:
        lock = None
        if target is not None:
            lock = _locks.acquire(
                target, f"eval_set:{es.name}", "evalframe run-set", f"eval set {es.name}"
            )
            held.callback(_locks.release, target, lock)
        return _run(
            es,
            datasets,
            target,
            lock,
            Path(manifest) if manifest is not None else None,
            system=system,
            providers=providers,
            repetitions=repetitions,
            concurrency=pace,
            progress=progress,
            limits=limits,
        )


def _run(
    es: EvalSet,
    datasets: list[Dataset],
    target: Store | None,
    lock: _locks.Lock | None,
    file: Path | None,
    *,
    system: System | None,
    providers: Providers | JudgeClient | None,
    repetitions: int | None,
    concurrency: Concurrency,
    progress: bool | None,
    limits: Limits | None,
) -> tuple[dict[str, Any], list[Any]]:
    names = [d.name for d in datasets]
    doc: dict[str, Any] | None = None
    where = es.path
    if file is not None and file.exists():
        doc, where = json.loads(file.read_text(encoding="utf-8")), str(file)
    elif target is not None:
        doc, where = _eval_sets.load_manifest(target, es.name), f"the store's manifest of {es.name}"
    if doc is None:
        doc = new_manifest(es.name, names, time.time())
    check_manifest(doc, es.name, names, where)

    def save(run: Run | None = None) -> None:
        doc["updated_at"] = time.time()
        if target is not None and lock is not None:
            if run is not None:
                _eval_sets.save_run(target, run, es.name, doc, lock)
            else:
                _eval_sets.save_manifest(target, es.name, doc, lock)
        if file is not None:
            _write_file(file, doc)

    runs = []
    for i, (entry, ds) in enumerate(zip(es.entries, datasets, strict=True)):  # datasets, not rows
        current = doc["datasets"][i]
        if current["status"] == "completed":
            continue
        if current["status"] == "failed":
            break
        if current["status"] == "running" and target is not None:
            # Killed after its run was saved, before the manifest file said so.
            stored = _eval_sets.stored_run(
                target, set_run_id(es.name, ds.name, current["started_at"])
            )
            if stored is not None:
                doc["datasets"][i] = _completed(
                    ds.name,
                    current["started_at"],
                    max(float(stored["finished_at"] or 0.0), current["started_at"]),
                    ds.height,
                    int(stored["n_failures"] or 0),
                )
                save()
                continue
        started = time.time()
        doc["datasets"][i] = {"dataset": ds.name, "status": "running", "started_at": started}
        save()
        try:
            if entry.outputs is None and system is None:
                raise EvalframeError(
                    f"dataset {ds.name!r} has no outputs file in the eval set and no system "
                    "under test was given"
                )
            run = evaluate(
                ds,
                outputs=entry.outputs,
                system=None if entry.outputs is not None else system,
                metrics=list(entry.metrics) or None,
                repetitions=repetitions,
                concurrency=concurrency,
                progress=progress,
                providers=providers,
                limits=limits,
                labels={"eval_set": es.name},
                run_id=set_run_id(es.name, ds.name, started),
                baselines_from=target,
            )
        except (EvalframeError, ValueError, OSError) as exc:
            finished = time.time()
            new = {
                "dataset": ds.name,
                "status": "failed",
                "started_at": started,
                "finished_at": finished,
                "duration_seconds": finished - started,
                "error": f"{type(exc).__name__}: {exc}",
            }
            doc["datasets"][i] = new
            save()
            break
        finished = time.time()
        doc["datasets"][i] = _completed(ds.name, started, finished, ds.height, run.failures.height)
        save(run)
        runs.append(run)
    return doc, runs
