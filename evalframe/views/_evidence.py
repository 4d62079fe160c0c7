"""The report's ``evidence`` section: the retrieved contexts behind judged scores.

Metric details keep context text out (they hold claims, verdicts and ranks), so a report
shared outside the team never carries retrieved documents by accident. Asked for
(``include_evidence=True``, ``--include-evidence`` on ``evalframe run`` and ``evalframe
report``), the report gains ``evidence``: one entry per execution that has contexts, with
its ``id``, ``repetition``, ``contexts`` and, when given, ``context_ids``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from evalframe.core import schema as C
from evalframe.core._contexts import CONTEXT_IDS, CONTEXTS

if TYPE_CHECKING:
    from evalframe.core._run import Run

__all__ = ["evidence_block"]


def evidence_block(run: Run) -> list[dict[str, Any]]:
    """The executions' contexts, in repetition order (empty when the run has none)."""
    frame = run.frame
    if CONTEXTS not in frame.columns:
        return []
    columns = [c for c in (CONTEXTS, CONTEXT_IDS) if c in frame.columns]
    rows = (
        frame.select(
            pl.col(C.SAMPLE_ID).alias("id"),
            C.REPETITION,
            *(pl.col(c).cast(pl.List(pl.String)) for c in columns),
        )
        .sort(C.REPETITION, maintain_order=True)
        .filter(pl.col(CONTEXTS).is_not_null())
    )
    return rows.to_dicts()
