"""Eval set manifests in the store: one document per eval set, replaced as it advances."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from evalframe.store._connect import execute, fetch
from evalframe.store._write import transaction

if TYPE_CHECKING:
    from evalframe.store._store import Store

__all__ = ["load_manifest", "save_manifest"]


def save_manifest(store: Store, eval_set: str, manifest: dict[str, Any]) -> None:
    with store._connector.connect(write=True) as con, transaction(con):
        execute(
            con,
            "INSERT OR REPLACE INTO eval_set_manifests VALUES (?, make_timestamp(?::BIGINT), ?)",
            [eval_set, int(time.time() * 1e6), json.dumps(manifest)],
        )


def load_manifest(store: Store, eval_set: str) -> dict[str, Any] | None:
    with store._connector.connect(write=False) as con:
        text = fetch(con, "SELECT manifest FROM eval_set_manifests WHERE eval_set = ?", [eval_set])
    return None if text is None else dict(json.loads(text))
