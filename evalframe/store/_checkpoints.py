"""Checkpoints of a run in progress: the executions a system under test has completed.

Each checkpoint is one chunk of the outputs frame (whatever columns the system produced),
kept as Arrow IPC bytes so a run resumes with exactly what was recorded. They are removed
once the run itself is saved.
"""

from __future__ import annotations

import io
import time
from typing import TYPE_CHECKING, Any

import polars as pl

from evalframe.store._connect import execute, fetch, query
from evalframe.store._locks import Lock, holds
from evalframe.store._write import dataset_hash, transaction

if TYPE_CHECKING:
    from evalframe.store._store import Store

__all__ = ["add_checkpoint", "dataset_hash", "drop_checkpoints", "load_checkpoints", "run_exists"]


def add_checkpoint(
    store: Store,
    lock: Lock,
    run_id: str,
    dataset: str,
    digest: str,
    repetitions: int,
    chunk: pl.DataFrame,
) -> None:
    """Append one chunk of completed executions (its own transaction: it survives a kill),
    while this process still holds the run's ``lock``."""
    buffer = io.BytesIO()
    chunk.write_ipc(buffer)
    with store._connector.connect(write=True) as con, transaction(con):
        holds(con, lock, f"run {run_id}")
        seq = fetch(con, "SELECT count(*) FROM checkpoints WHERE run_id = ?", [run_id])
        execute(
            con,
            "INSERT INTO checkpoints VALUES (?, ?, make_timestamp(?::BIGINT), ?, ?, ?, ?)",
            [run_id, seq, int(time.time() * 1e6), dataset, digest, repetitions, buffer.getvalue()],
        )


def load_checkpoints(store: Store, run_id: str) -> tuple[dict[str, Any] | None, pl.DataFrame]:
    """The run's recorded identity (dataset, hash, repetitions) and its executions so far."""
    with store._connector.connect(write=False) as con:
        rows = query(
            con,
            "SELECT dataset, dataset_hash, repetitions, executions FROM checkpoints "
            "WHERE run_id = ? ORDER BY seq",
            [run_id],
        )
    if rows.height == 0:
        return None, pl.DataFrame()
    first = rows.row(0, named=True)
    identity = {k: first[k] for k in ("dataset", "dataset_hash", "repetitions")}
    chunks = [pl.read_ipc(io.BytesIO(b)) for b in rows.get_column("executions").to_list()]
    return identity, pl.concat(chunks, how="diagonal_relaxed")


def drop_checkpoints(store: Store, run_id: str, lock: Lock) -> None:
    """Remove a saved run's checkpoints, and release its lock, in one transaction."""
    with store._connector.connect(write=True) as con, transaction(con):
        execute(con, "DELETE FROM checkpoints WHERE run_id = ?", [run_id])
        execute(con, "DELETE FROM locks WHERE name = ? AND token = ?", [lock.name, lock.token])


def run_exists(store: Store, run_id: str) -> bool:
    with store._connector.connect(write=False) as con:
        return bool(fetch(con, "SELECT count(*) FROM runs WHERE run_id = ?", [run_id]))
