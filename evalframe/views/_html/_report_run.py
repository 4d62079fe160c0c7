"""A ``Run`` rebuilt from a report JSON document, so a report file can be compared.

A report holds, per execution, the sample id, row hash, repetition, tags, actual output and
each metric's score and details, and lists every errored (sample, metric); with the
metrics' thresholds, families and dimensions that is what a comparison reads. It holds no
inputs or expected outputs: those columns stay null in the rebuilt run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import polars as pl

from evalframe.core import schema as C
from evalframe.core._errors import EvalframeError

if TYPE_CHECKING:
    from evalframe.core._run import Run

__all__ = ["run_from_report"]


def run_from_report(
    doc: Mapping[str, Any],
    *,
    source: str = "the report",
    run_id: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> Run:
    """The run a report document describes (scores, outputs, tags; no inputs).

    ``run_id`` replaces the report's own (an eval-harness report has none); ``labels`` are
    kept with the run.

    Raises:
        EvalframeError: the report has no ``samples`` (it was written without them).
    """
    import orjson

    from evalframe.core._dataset import Dataset
    from evalframe.core._run import Run
    from evalframe.store._read import _metric

    samples = doc.get("samples") or []
    if not samples and doc.get("total_executions"):
        raise EvalframeError(
            f"{source} lists no samples, so its rows cannot be compared; write the report "
            "with its samples (`evalframe run --format json`) or compare stored runs."
        )
    run_id = run_id or str(doc.get("run_id") or doc.get("dataset") or "report")
    execs = pl.DataFrame(
        {
            C.SAMPLE_ID: [s["id"] for s in samples],
            C.ACTUAL_OUTPUT: [s.get("actual_output") for s in samples],
            C.REPETITION: [int(s.get("repetition", 0)) for s in samples],
            C.TAGS: [s.get("tags") or [] for s in samples],
            C.ROW_HASH: [s.get("row_hash") or s["id"] for s in samples],
        },
        schema={
            C.SAMPLE_ID: pl.String,
            C.ACTUAL_OUTPUT: pl.String,
            C.REPETITION: pl.Int64,
            C.TAGS: pl.List(pl.String),
            C.ROW_HASH: pl.String,
        },
    )
    dataset_rows = (
        execs.unique(C.SAMPLE_ID, keep="first", maintain_order=True)
        .with_columns(
            pl.lit(None, pl.String).alias(C.INPUT),
            pl.lit(None, pl.String).alias(C.EXPECTED_OUTPUT),
            pl.lit(None, pl.String).alias(C.EXPECTED_TYPE),
            pl.lit("{}").alias(C.METADATA),
        )
        .select(C.DATASET_SCHEMA.names())
        .cast(C.DATASET_SCHEMA)
    )
    dataset = Dataset._wrap(
        dataset_rows, name=str(doc.get("dataset")), metrics=[], repetitions=None, path=None
    )
    frame = execs.join(
        dataset_rows.drop(C.TAGS, C.ROW_HASH), on=C.SAMPLE_ID, how="left", maintain_order="left"
    )
    metrics = [
        _metric(
            {
                "metric": name,
                "threshold": float(m["threshold"]) if m.get("threshold") is not None else 0.5,
                "family": m.get("family"),
                "dimension": m.get("dimension"),
            }
        )
        for name, m in (doc.get("metrics") or {}).items()
    ]
    thresholds = {m.id: float(m.threshold) for m in metrics}
    lower = {m.id: not m.higher_is_better for m in metrics}
    sid, rep, metric, score, details = [], [], [], [], []
    for s in samples:  # the document is Python objects already: one pass to flatten it
        for name, v in (s.get("scores") or {}).items():
            sid.append(s["id"])
            rep.append(int(s.get("repetition", 0)))
            metric.append(name)
            score.append(v.get("score"))
            details.append(orjson.dumps(v.get("details") or {}).decode())
    failures = doc.get("failures") or []
    scored = pl.DataFrame(
        {C.SAMPLE_ID: sid, C.REPETITION: rep, C.METRIC: metric, C.SCORE: score,
         C.ERROR: [None] * len(sid), "details": details},
        schema={C.SAMPLE_ID: pl.String, C.REPETITION: pl.Int64, C.METRIC: pl.String,
                C.SCORE: pl.Float64, C.ERROR: pl.String, "details": pl.String},
    )  # fmt: skip
    errored = pl.DataFrame(
        {C.SAMPLE_ID: [f["sample_id"] for f in failures],
         C.REPETITION: [int(f.get("repetition", 0)) for f in failures],
         C.METRIC: [f["metric"] for f in failures], C.SCORE: [None] * len(failures),
         C.ERROR: [f["error"] for f in failures], "details": [None] * len(failures)},
        schema=scored.schema,
    )  # fmt: skip
    limits = pl.DataFrame(
        {C.METRIC: list(thresholds), "_t": list(thresholds.values()), "_low": list(lower.values())}
    )
    scores = (
        pl.concat([scored, errored])
        .join(limits, on=C.METRIC, how="inner")
        .with_columns(
            pl.lit(run_id).alias(C.RUN_ID),
            pl.when(pl.col(C.ERROR).is_null())
            .then(
                pl.when(pl.col("_low"))
                .then(pl.col(C.SCORE) <= pl.col("_t"))
                .otherwise(pl.col(C.SCORE) >= pl.col("_t"))
            )
            .alias("passed"),
        )
        .select(C.SCORES_SCHEMA.names())
        .cast(C.SCORES_SCHEMA)
    )
    return Run(
        run_id=run_id,
        name=str(doc.get("run_name") or doc.get("dataset")),
        dataset=dataset,
        frame=frame,
        scores=scores,
        metrics=metrics,
        started_at=float(doc.get("started_at") or 0.0),
        finished_at=float(doc.get("finished_at") or 0.0),
        labels=dict(labels or {}),
        extra={"outputs": doc.get("outputs")},
    )
