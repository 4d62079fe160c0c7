"""The labelling queue: which executions to show a person, and what to show of each.

By default the queue holds the rows ``evalframe calibrate --suggest N --run RUN --metric
METRIC --strata S --seed K`` would pick given the labels already in the store (Neyman
allocation over judge-score bins, the rows still unlabelled): the same scores in the same
order reach the same function, so the two lists are equal. Each row shows its first
execution (repetition 0).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from evalframe.views._web._filters import RequestError, integer

if TYPE_CHECKING:
    from evalframe.store._read import Reading

__all__ = ["QueueQuery", "queue"]

MAX_QUEUE: Final = 200


@dataclass(frozen=True, slots=True)
class QueueQuery:
    """``metric`` (default: the run's first), ``n`` rows (1 to 200, default 20), ``strata``
    (1 to 20, default 5) and ``seed`` (default 0), as ``calibrate --suggest`` takes them."""

    metric: str
    n: int
    strata: int
    seed: int

    @classmethod
    def parse(cls, params: Mapping[str, str], metrics: list[str]) -> QueueQuery:
        metric = params.get("metric") or (metrics[0] if metrics else "")
        if metric not in metrics:
            raise RequestError(
                400, f"Unknown metric {metric!r}: this run has {', '.join(metrics)}."
            )
        return cls(
            metric=metric,
            n=integer(params, "n", 20, 1, MAX_QUEUE),
            strata=integer(params, "strata", 5, 1, 20),
            seed=integer(params, "seed", 0, -(2**31), 2**31 - 1),
        )


def queue(r: Reading, info: Mapping[str, Any], q: QueueQuery) -> list[dict[str, Any]]:
    """The queue's rows, in the order ``suggest_labels`` gives them: sample_id, repetition,
    stratum, input, expected and actual output, contexts, and the judge's score, verdict,
    error and details (its reason among them)."""
    import polars as pl

    from evalframe.core._estimate import suggest_labels

    scores = r.sql(
        "SELECT s.sample_id, s.metric, s.score, s.passed, s.error FROM scores AS s "
        "JOIN samples AS d ON d.dataset_hash = $hash AND d.sample_id = s.sample_id "
        "WHERE s.run_id = $run AND s.metric = $metric ORDER BY s.repetition, d.ordinal",
        {"hash": info["dataset_hash"], "run": info["run_id"], "metric": q.metric},
    )
    have = r.sql(
        "SELECT sample_id, avg(label) AS label FROM run_labels "
        "WHERE run_id = $run AND metric = $metric GROUP BY sample_id",
        {"run": info["run_id"], "metric": q.metric},
    )
    if scores.filter(pl.col("error").is_null()).height == 0:
        return []
    picks = suggest_labels(
        scores,
        metric=q.metric,
        n=q.n,
        labels=have if have.height else None,
        strata=q.strata,
        seed=q.seed,
    )
    if picks.height == 0:
        return []
    rows = r.sql(
        "WITH k AS (SELECT unnest($ids) AS sample_id, unnest($order) AS k) "
        "SELECT k.k, o.sample_id, o.repetition, o.actual_output, o.system_error, o.extra, "
        "d.input, d.expected_output, d.tags, s.score, s.passed, s.error, s.details "
        "FROM k JOIN outputs AS o ON o.run_id = $outputs AND o.sample_id = k.sample_id "
        "AND o.repetition = 0 "
        "JOIN samples AS d ON d.dataset_hash = $hash AND d.sample_id = k.sample_id "
        "LEFT JOIN scores AS s ON s.run_id = $run AND s.sample_id = k.sample_id "
        "AND s.repetition = 0 AND s.metric = $metric ORDER BY k.k",
        {
            "ids": picks.get_column("sample_id").to_list(),
            "order": list(range(picks.height)),
            "outputs": info["outputs_run_id"],
            "hash": info["dataset_hash"],
            "run": info["run_id"],
            "metric": q.metric,
        },
    )
    strata = dict(zip(picks.get_column("sample_id"), picks.get_column("stratum"), strict=True))
    out = []
    for row in rows.iter_rows(named=True):  # the queue: at most 200
        extra = json.loads(row["extra"]) if row["extra"] else {}
        details = json.loads(row["details"]) if row["details"] else None
        out.append(
            {
                "sample_id": row["sample_id"],
                "repetition": row["repetition"],
                "stratum": strata[row["sample_id"]],
                "input": json.loads(row["input"]) if row["input"] else None,
                "expected_output": row["expected_output"],
                "actual_output": row["actual_output"],
                "system_error": row["system_error"],
                "tags": list(row["tags"] or []),
                "contexts": extra.get("contexts"),
                "judge": {
                    "score": row["score"],
                    "passed": row["passed"],
                    "error": row["error"],
                    "reason": (details or {}).get("reason") if isinstance(details, dict) else None,
                    "details": details,
                },
            }
        )
    return out
