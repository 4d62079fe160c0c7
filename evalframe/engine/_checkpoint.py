"""Calling a system under test with checkpoints, and resuming an interrupted run.

The executions are called in chunks of ``every`` (per repetition, in dataset order); each
finished chunk is written to the store in its own transaction, so a run stopped by Ctrl-C,
``kill -9`` or a provider outage loses at most the chunk in flight. Resuming calls the system
only for the executions no checkpoint holds, then scores everything as one run with the
original run id, so its report is that of an uninterrupted run.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import polars as pl

from evalframe.core import schema as C
from evalframe.core._errors import StoreError
from evalframe.core._system import System, call_system
from evalframe.store import _checkpoints

if TYPE_CHECKING:
    from evalframe.core._rate import RateLimit
    from evalframe.store import Store

__all__ = ["call_with_checkpoints"]


def call_with_checkpoints(
    base: pl.DataFrame,
    system: System,
    *,
    store: Store,
    run_id: str,
    dataset: str,
    repetitions: int,
    every: int,
    resume: bool,
    concurrency: int,
    progress: bool | None,
    rate: RateLimit | None = None,
) -> pl.DataFrame:
    """The outputs frame of every execution, checkpointed to ``store`` as it goes.

    Raises:
        StoreError: resuming a run that has no checkpoint, that is already saved, or whose
            dataset or repetitions differ from the checkpointed ones.
    """
    digest = _checkpoints.dataset_hash(base)
    done = pl.DataFrame(schema={C.SAMPLE_ID: pl.String, C.REPETITION: pl.Int64})
    parts: list[pl.DataFrame] = []
    if resume:
        if _checkpoints.run_exists(store, run_id):
            raise StoreError(f"Run {run_id} is already saved in the store: nothing to resume.")
        identity, recorded = _checkpoints.load_checkpoints(store, run_id)
        if identity is None:
            raise StoreError(f"The store has no checkpoint of run {run_id} to resume.")
        expected: dict[str, Any] = {
            "dataset": dataset,
            "dataset_hash": digest,
            "repetitions": repetitions,
        }
        changed = [k for k, v in expected.items() if identity[k] != v]
        if changed:
            raise StoreError(
                f"Run {run_id} was started with a different "
                + ", ".join(f"{k} ({identity[k]!r}, now {expected[k]!r})" for k in changed)
                + "; resume it with the same dataset and --repetitions."
            )
        parts.append(recorded)
        done = recorded.select(C.SAMPLE_ID, C.REPETITION)
    else:
        print(
            f"run {run_id}: checkpointing every {every} executions; if interrupted, resume "
            f"with --resume {run_id}",
            file=sys.stderr,
        )
    for rep in range(repetitions):  # a handful of repetitions, each in chunks
        taken = done.filter(pl.col(C.REPETITION) == rep).get_column(C.SAMPLE_ID)
        todo = base.filter(~pl.col(C.SAMPLE_ID).is_in(taken.implode()))
        for start in range(0, todo.height, every):
            chunk = call_system(
                todo.slice(start, every),
                system,
                repetitions=1,
                concurrency=concurrency,
                progress=progress,
                rate=rate,
            ).with_columns(pl.lit(rep, pl.Int64).alias(C.REPETITION))
            _checkpoints.add_checkpoint(store, run_id, dataset, digest, repetitions, chunk)
            parts.append(chunk)
    produced = pl.concat(parts, how="diagonal_relaxed") if parts else pl.DataFrame()
    order = base.select(C.SAMPLE_ID).with_row_index("_row")
    return produced.join(order, on=C.SAMPLE_ID, how="left").sort(C.REPETITION, "_row").drop("_row")
