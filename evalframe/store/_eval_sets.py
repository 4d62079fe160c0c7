"""Eval set manifests in the store: one document per eval set, replaced as it advances.

A dataset's run and the manifest that marks it completed are written in one transaction,
so the store never holds one without the other.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from evalframe.store._connect import execute, fetch
from evalframe.store._locks import Lock, holds
from evalframe.store._write import transaction, write_run

if TYPE_CHECKING:
    import duckdb

    from evalframe.core._run import Run
    from evalframe.store._store import Store

__all__ = ["load_manifest", "save_manifest", "save_run", "stored_run"]


def _replace(con: duckdb.DuckDBPyConnection, eval_set: str, manifest: dict[str, Any]) -> None:
    execute(
        con,
        "INSERT OR REPLACE INTO eval_set_manifests VALUES (?, make_timestamp(?::BIGINT), ?)",
        [eval_set, int(time.time() * 1e6), json.dumps(manifest)],
    )


def save_manifest(store: Store, eval_set: str, manifest: dict[str, Any], lock: Lock) -> None:
    """Replace the eval set's manifest, while this process holds the set's ``lock``."""
    with store._connector.connect(write=True) as con, transaction(con):
        holds(con, lock, f"eval set {eval_set}")
        _replace(con, eval_set, manifest)


def save_run(store: Store, run: Run, eval_set: str, manifest: dict[str, Any], lock: Lock) -> None:
    """Save a dataset's run and the manifest that records it, in one transaction."""
    with store._connector.connect(write=True) as con, transaction(con):
        holds(con, lock, f"eval set {eval_set}")
        write_run(con, run)
        _replace(con, eval_set, manifest)


def stored_run(store: Store, run_id: str) -> dict[str, Any] | None:
    """A saved run's ``finished_at`` and ``n_failures`` (None when it is not saved)."""
    with store._connector.connect(write=False) as con:
        rows = execute(con, "SELECT finished_at, n_failures FROM runs WHERE run_id = ?", [run_id])
    return {"finished_at": rows[0][0], "n_failures": rows[0][1]} if rows else None


def load_manifest(store: Store, eval_set: str) -> dict[str, Any] | None:
    with store._connector.connect(write=False) as con:
        text = fetch(con, "SELECT manifest FROM eval_set_manifests WHERE eval_set = ?", [eval_set])
    return None if text is None else dict(json.loads(text))
