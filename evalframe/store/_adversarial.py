"""The adversarial lane's history in the run store: one table, ``adversarial_runs``.

Each row is one recorded adversarial run (only clean runs are recorded; see
``core/_adversarial_history``): ``run_id``, ``dataset``, ``slice`` (the compatibility key),
``finished_at``, ``total_failures`` and ``entry`` (the eval-harness manifest entry as JSON
text). The table is created the first time an adversarial run is recorded, so stores that
never see the lane do not carry it; it is not part of a run's export.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from evalframe.core._adversarial_history import slice_key
from evalframe.store._connect import execute
from evalframe.store._write import transaction

if TYPE_CHECKING:
    from evalframe.store._store import Store

__all__ = ["TABLE", "history", "record"]

TABLE: Final = "adversarial_runs"
_DDL: Final = f"""
    CREATE TABLE IF NOT EXISTS {TABLE} (
        run_id VARCHAR PRIMARY KEY,
        dataset VARCHAR NOT NULL,
        slice VARCHAR NOT NULL,
        finished_at DOUBLE NOT NULL,
        total_failures BIGINT NOT NULL,
        entry VARCHAR NOT NULL
    )
"""


def record(store: Store, entry: Mapping[str, Any]) -> None:
    """Add (or replace) ``entry`` in the store's adversarial history, in one transaction."""
    with store._connector.connect(write=True) as con, transaction(con):
        execute(con, _DDL)
        execute(con, f"DELETE FROM {TABLE} WHERE run_id = ?", [entry["run_id"]])
        execute(
            con,
            f"INSERT INTO {TABLE} VALUES (?, ?, ?, ?, ?, ?)",
            [
                entry["run_id"],
                entry["dataset"],
                slice_key(entry),
                float(entry["finished_at"]),
                int(entry["total_failures"]),
                json.dumps(entry, ensure_ascii=False),
            ],
        )


def history(store: Store, dataset: str) -> list[dict[str, Any]]:
    """The recorded entries of ``dataset``, newest first (none when nothing was recorded)."""
    with store._connector.connect(write=False) as con:
        present = execute(
            con,
            "SELECT count(*) FROM information_schema.tables WHERE table_name = ?",
            [TABLE],
        )
        if not present or not present[0][0]:
            return []
        rows = execute(
            con,
            f"SELECT entry FROM {TABLE} WHERE dataset = ? ORDER BY finished_at DESC, run_id",
            [dataset],
        )
    out: list[dict[str, Any]] = [json.loads(r[0]) for r in rows]
    return out
