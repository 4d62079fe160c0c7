"""Calling a system under test with checkpoints, and resuming an interrupted run.

The executions are called in chunks of ``every`` (per repetition, in dataset order); each
finished chunk is written to the store in its own transaction, so a run stopped by Ctrl-C,
``kill -9`` or a provider outage loses at most the chunk in flight. Resuming calls the system
only for the executions no checkpoint holds, then scores everything as one run with the
original run id, so its report is that of an uninterrupted run.

A checkpointed run holds a lock in the store from its start (or resumption) until it is
saved, so a second ``--resume`` of the same run, while the first is alive, is refused with
the holder's process, host and start; a holder killed with SIGKILL leaves a lock that the
next resume on its host detects and takes over (``store/_locks``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import polars as pl

from evalframe.core import schema as C
from evalframe.core._errors import StoreError
from evalframe.core._system import System, call_system
from evalframe.store import _checkpoints, _locks

if TYPE_CHECKING:
    from evalframe.core._rate import RateLimit
    from evalframe.store import Store

__all__ = ["call_with_checkpoints", "hold_run"]


@contextmanager
def hold_run(store: Store, run_id: str, *, resume: bool) -> Iterator[_locks.Lock]:
    """Hold run ``run_id``'s lock for the duration of the block.

    Raises:
        StoreError: another process holds it (the message names that process).
    """
    purpose = "evalframe run --resume" if resume else "evalframe run --checkpoint-every"
    lock = _locks.acquire(store, f"run:{run_id}", purpose, f"run {run_id}")
    try:
        yield lock
    finally:
        _locks.release(store, lock)


def call_with_checkpoints(
    base: pl.DataFrame,
    system: System,
    *,
    store: Store,
    lock: _locks.Lock,
    run_id: str,
    dataset: str,
    repetitions: int,
    every: int,
    resume: bool,
    concurrency: int,
    progress: bool | None,
    rate: RateLimit | None = None,
) -> pl.DataFrame:
    """The outputs frame of every execution, checkpointed to ``store`` as it goes, under
    ``lock`` (``hold_run``).

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
            _checkpoints.add_checkpoint(store, lock, run_id, dataset, digest, repetitions, chunk)
            parts.append(chunk)
    produced = pl.concat(parts, how="diagonal_relaxed") if parts else pl.DataFrame()
    order = base.select(C.SAMPLE_ID).with_row_index("_row")
    return produced.join(order, on=C.SAMPLE_ID, how="left").sort(C.REPETITION, "_row").drop("_row")
