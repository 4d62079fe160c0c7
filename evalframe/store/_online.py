"""Production captures and their scores in the store.

``online_captures`` holds what the serving path sent (text only while it waits to be
scored, or for good when retention is on); ``online_scores`` one row per scored capture.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from evalframe.store._connect import execute, query
from evalframe.store._write import insert, transaction

if TYPE_CHECKING:
    from evalframe.store._store import Store

__all__ = [
    "CAPTURE_SCHEMA",
    "SCORE_SCHEMA",
    "insert_captures",
    "pending",
    "record_scores",
    "scores",
]

CAPTURE_SCHEMA: dict[str, Any] = {
    "capture_id": pl.String,
    "dataset": pl.String,
    "sample_id": pl.String,
    "row_hash": pl.String,
    "captured_at": pl.Datetime("us"),
    "input": pl.String,
    "expected_output": pl.String,
    "actual_output": pl.String,
    "retained": pl.Boolean,
    "redactor": pl.String,
    "scored": pl.Boolean,
}
SCORE_SCHEMA: dict[str, Any] = {
    "capture_id": pl.String,
    "dataset": pl.String,
    "sample_id": pl.String,
    "metric": pl.String,
    "score": pl.Float64,
    "passed": pl.Boolean,
    "threshold": pl.Float64,
    "error": pl.String,
    "judge_model": pl.String,
    "details": pl.String,
    "judged_at": pl.Datetime("us"),
}


def insert_captures(store: Store, frame: pl.DataFrame) -> None:
    """Append captures (columns of ``CAPTURE_SCHEMA``) in one transaction."""
    with store._connector.connect(write=True) as con, transaction(con):
        insert(con, "online_captures", frame.select(list(CAPTURE_SCHEMA)))


def pending(store: Store, dataset: str | None, limit: int | None) -> pl.DataFrame:
    """Captures not scored yet, oldest first."""
    where = "WHERE NOT scored" + (" AND dataset = $dataset" if dataset is not None else "")
    tail = "LIMIT $limit" if limit is not None else ""
    params: dict[str, Any] = {}
    if dataset is not None:
        params["dataset"] = dataset
    if limit is not None:
        params["limit"] = limit
    with store._connector.connect(write=False) as con:
        return query(
            con,
            f"SELECT * FROM online_captures {where} ORDER BY captured_at, capture_id {tail}",
            params or None,
        )


def record_scores(store: Store, frame: pl.DataFrame) -> None:
    """Store scores and mark their captures scored; text not retained is dropped now."""
    with store._connector.connect(write=True) as con, transaction(con):
        insert(con, "online_scores", frame.select(list(SCORE_SCHEMA)))
        ids = frame.get_column("capture_id").unique().to_list()
        execute(
            con,
            "UPDATE online_captures SET scored = true, "
            "input = CASE WHEN retained THEN input END, "
            "expected_output = CASE WHEN retained THEN expected_output END, "
            "actual_output = CASE WHEN retained THEN actual_output END "
            "WHERE list_contains($ids, capture_id)",
            {"ids": ids},
        )


def scores(store: Store, dataset: str) -> pl.DataFrame:
    """Every score of a dataset's captures, newest first, with the capture's text and hash."""
    with store._connector.connect(write=False) as con:
        return query(
            con,
            "SELECT s.*, c.row_hash, c.input, c.expected_output, c.retained, c.redactor, "
            "c.captured_at FROM online_scores AS s JOIN online_captures AS c USING (capture_id) "
            "WHERE s.dataset = $dataset ORDER BY s.judged_at DESC, s.capture_id",
            {"dataset": dataset},
        )
