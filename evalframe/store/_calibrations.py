"""Calibration reports in the store: saved once, listed, and matched to runs.

A calibration belongs next to the runs it vouches for: those that scored the same metric
(its id carries its parameters, hence its prompt) with the same judge model. The
``run_calibration`` view makes that match; ``evalframe runs`` shows its agreement.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import TYPE_CHECKING

import polars as pl

from evalframe.store._connect import execute, query

if TYPE_CHECKING:
    import duckdb

    from evalframe.core._calibration import Calibration

__all__ = ["list_calibrations", "save_calibration"]


def save_calibration(con: duckdb.DuckDBPyConnection, calibration: Calibration) -> str:
    """Insert one calibration; returns its new id."""
    calibration_id = uuid.uuid4().hex[:16]
    kappa = calibration.kappa
    execute(
        con,
        "INSERT INTO calibrations VALUES "
        "(?, make_timestamp(?::BIGINT), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            calibration_id,
            int(time.time() * 1_000_000),
            calibration.name,
            calibration.metric,
            calibration.judge_model,
            calibration.model_under_test,
            calibration.case_count,
            calibration.agreement_rate,
            kappa.kappa,
            kappa.low,
            kappa.high,
            calibration.weighted_kappa,
            calibration.passed,
            json.dumps(calibration.to_dict(), ensure_ascii=False),
        ],
    )
    return calibration_id


def list_calibrations(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Stored calibrations, newest first (the report JSON left out)."""
    return query(
        con,
        "SELECT * EXCLUDE (report) FROM calibrations ORDER BY created_at DESC, calibration_id",
    )
