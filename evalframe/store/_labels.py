"""Human labels in the store: the ``labels`` table and the ``run_labels`` view.

A label is a person's verdict on one execution's output for one metric: pass or fail, or a
score in [0, 1], with an optional note. It is kept under the run whose outputs were judged
(``outputs_run_id``), so a rescored run, which shares its source's outputs, shares its
labels too: rescore with another judge and calibrate it against the same labels. Labels are
only ever added; the newest one for an (outputs, sample, repetition, metric) is the current
label, and ``run_labels`` lists the current labels of every run under its own id.

``evalframe view`` writes them (its Label page, ``POST /api/v1/labels``); ``calibrate`` and
``estimate`` read them when no case or label file is given.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import polars as pl

from evalframe.core._errors import LabelTargetError, StoreError
from evalframe.store._connect import execute, query
from evalframe.store._write import insert

if TYPE_CHECKING:
    import duckdb

    from evalframe.store._store import Store

__all__ = [
    "LABELS_TABLE",
    "LABEL_VIEWS",
    "MAX_LABELS",
    "MAX_NOTE",
    "Label",
    "current_labels",
    "judge_model",
    "labelled_executions",
    "parse_label",
    "save_labels",
]

MAX_NOTE: Final = 10_000
"""Characters a label's note may hold."""
MAX_LABELS: Final = 10_000
"""Labels one call may add."""

LABELS_TABLE: Final = """
    CREATE TABLE IF NOT EXISTS labels (
        label_id VARCHAR PRIMARY KEY,
        created_at TIMESTAMP NOT NULL,
        run_id VARCHAR NOT NULL,
        outputs_run_id VARCHAR NOT NULL,
        sample_id VARCHAR NOT NULL,
        repetition BIGINT NOT NULL,
        metric VARCHAR NOT NULL,
        label DOUBLE NOT NULL,
        verdict VARCHAR,
        note VARCHAR,
        labeller VARCHAR
    )"""

LABEL_VIEWS: Final = {
    "run_labels": """
        CREATE OR REPLACE VIEW run_labels AS
        SELECT r.run_id, l.sample_id, l.repetition, l.metric, l.label, l.verdict, l.note,
               l.labeller, l.created_at AS labelled_at, l.label_id
        FROM runs AS r
        JOIN (
            SELECT * FROM labels
            QUALIFY row_number() OVER (
                PARTITION BY outputs_run_id, sample_id, repetition, metric
                ORDER BY created_at DESC, label_id DESC
            ) = 1
        ) AS l ON l.outputs_run_id = r.outputs_run_id""",
}

_WORDS: Final = {"pass": 1.0, "fail": 0.0}


@dataclass(frozen=True, slots=True)
class Label:
    """One label to add: which execution, which metric, the verdict or score, a note."""

    run_id: str
    sample_id: str
    metric: str  # "" for the run's only metric
    label: float
    verdict: str | None
    repetition: int = 0
    note: str | None = None
    labeller: str | None = None


def parse_label(raw: Mapping[str, Any], where: str = "label") -> Label:
    """A ``Label`` from a JSON-like mapping: ``run_id``, ``sample_id`` (or ``id``) and
    ``label`` (``"pass"``, ``"fail"``, a boolean or a number in [0, 1]; ``verdict`` or
    ``score`` are taken for it); optional ``metric`` (needed when the run has several;
    ``save_labels`` fills in a run's only metric), ``repetition`` (default 0), ``note`` and
    ``labeller``.

    Raises:
        StoreError: a field is missing or of the wrong kind; the message names it.

    Examples:
        >>> parse_label({"run_id": "r", "sample_id": "q1", "metric": "m", "label": "pass"}).label
        1.0
    """
    if not isinstance(raw, Mapping):
        raise StoreError(f"{where}: must be an object with run_id, sample_id, metric and label.")

    def text(name: str, *, required: bool = True, limit: int = 1_000) -> str | None:
        value = raw.get(name)
        if value is None and not required:
            return None
        if not isinstance(value, str) or (required and not value):
            raise StoreError(f"{where}: field {name!r} must be a non-empty string.")
        if len(value) > limit:
            raise StoreError(f"{where}: field {name!r} holds more than {limit:,} characters.")
        return value

    run_id = text("run_id")
    sample_id = text("sample_id" if "sample_id" in raw or "id" not in raw else "id")
    metric = text("metric", required=False)
    repetition = raw.get("repetition", 0)
    if isinstance(repetition, bool) or not isinstance(repetition, int) or repetition < 0:
        raise StoreError(f"{where}: field 'repetition' must be an integer >= 0.")
    value = next((raw[k] for k in ("label", "verdict", "score") if k in raw), None)
    verdict: str | None = None
    if isinstance(value, str) and value.strip().lower() in _WORDS:
        verdict = value.strip().lower()
        number = _WORDS[verdict]
    elif isinstance(value, bool):
        verdict = "pass" if value else "fail"
        number = 1.0 if value else 0.0
    elif isinstance(value, int | float) and math.isfinite(value) and 0.0 <= value <= 1.0:
        number = float(value)
    else:
        raise StoreError(
            f"{where}: field 'label' must be pass, fail, true, false or a number in [0, 1]; "
            f"got {value!r}."
        )
    return Label(
        run_id=str(run_id),
        sample_id=str(sample_id),
        metric=metric or "",
        label=number,
        verdict=verdict,
        repetition=repetition,
        note=text("note", required=False, limit=MAX_NOTE) or None,
        labeller=text("labeller", required=False) or None,
    )


def save_labels(con: duckdb.DuckDBPyConnection, labels: Sequence[Label]) -> list[str]:
    """Add labels (inside the caller's transaction) after checking that each names an
    execution of its run and one of the run's metrics; returns their new ids.

    Raises:
        StoreError: an unknown run (``missing`` is then ``"run"``), execution or metric.
    """
    if len(labels) > MAX_LABELS:
        raise StoreError(f"At most {MAX_LABELS:,} labels at a time; got {len(labels):,}.")
    found = query(
        con,
        "WITH f AS (SELECT unnest($i) AS i, unnest($run) AS run_id, unnest($sample) AS sample_id, "
        "unnest($rep) AS repetition, unnest($metric) AS metric) "
        "SELECT f.i, r.outputs_run_id, o.sample_id IS NOT NULL AS has_row, "
        "m.metric IS NOT NULL AS has_metric, "
        "(SELECT list(metric ORDER BY ordinal) FROM run_metrics WHERE run_id = f.run_id) "
        "AS metrics FROM f "
        "LEFT JOIN runs AS r ON r.run_id = f.run_id "
        "LEFT JOIN outputs AS o ON o.run_id = r.outputs_run_id AND o.sample_id = f.sample_id "
        "AND o.repetition = f.repetition "
        "LEFT JOIN run_metrics AS m ON m.run_id = f.run_id AND m.metric = f.metric ORDER BY f.i",
        {
            "i": list(range(len(labels))),
            "run": [x.run_id for x in labels],
            "sample": [x.sample_id for x in labels],
            "rep": [x.repetition for x in labels],
            "metric": [x.metric for x in labels],
        },
    )
    chosen: dict[int, str] = {}
    for i, outputs_run, has_row, has_metric, metrics in found.iter_rows():  # one per label
        x = labels[i]
        if outputs_run is None:
            raise LabelTargetError("run", f"Unknown run {x.run_id!r}: no such run in the store.")
        chosen[i] = x.metric
        if not x.metric:
            if len(metrics) != 1:
                raise LabelTargetError(
                    "metric",
                    f"Name the metric of the label on {x.sample_id!r}: run {x.run_id} has "
                    f"{', '.join(metrics)}.",
                )
            chosen[i] = metrics[0]
        elif not has_metric:
            raise LabelTargetError(
                "metric",
                f"Run {x.run_id} has no metric {x.metric!r}; it has: {', '.join(metrics)}.",
            )
        if not has_row:
            raise LabelTargetError(
                "execution",
                f"Run {x.run_id} has no execution of sample {x.sample_id!r} at repetition "
                f"{x.repetition}.",
            )
    outputs_of = dict(zip(found.get_column("i"), found.get_column("outputs_run_id"), strict=True))
    now = int(time.time() * 1_000_000)
    ids = [uuid.uuid4().hex[:16] for _ in labels]
    rows = pl.DataFrame(
        {
            "label_id": ids,
            "created_at": [now] * len(labels),
            "run_id": [x.run_id for x in labels],
            "outputs_run_id": [outputs_of[i] for i in range(len(labels))],
            "sample_id": [x.sample_id for x in labels],
            "repetition": [x.repetition for x in labels],
            "metric": [chosen[i] for i in range(len(labels))],
            "label": [x.label for x in labels],
            "verdict": [x.verdict for x in labels],
            "note": [x.note for x in labels],
            "labeller": [x.labeller for x in labels],
        },
        schema_overrides={"created_at": pl.Int64, "repetition": pl.Int64, "label": pl.Float64},
    ).with_columns(pl.col("created_at").cast(pl.Datetime("us")))
    insert(con, "labels", rows)
    return ids


def current_labels(
    con: duckdb.DuckDBPyConnection, run_id: str, metric: str | None = None
) -> pl.DataFrame:
    """A run's current labels (``run_labels``), in dataset order: sample_id, repetition,
    metric, label, verdict, note, labeller, labelled_at, label_id."""
    where = "AND l.metric = $metric" if metric is not None else ""
    params: dict[str, Any] = {"run": run_id}
    if metric is not None:
        params["metric"] = metric
    return query(
        con,
        "SELECT l.sample_id, l.repetition, l.metric, l.label, l.verdict, l.note, l.labeller, "
        "l.labelled_at, l.label_id FROM run_labels AS l "
        "JOIN runs AS r ON r.run_id = l.run_id "
        "LEFT JOIN samples AS d ON d.dataset_hash = r.dataset_hash AND d.sample_id = l.sample_id "
        f"WHERE l.run_id = $run {where} ORDER BY d.ordinal, l.repetition, l.metric",
        params,
    )


def labelled_executions(store: Store, run_id: str, metric: str) -> pl.DataFrame:
    """The executions of a run that carry a current label for ``metric``, in dataset order,
    with what a calibration needs: sample_id, repetition, label, verdict, input (JSON text),
    expected_output, expected_type, actual_output, tags, and the run's score and error."""
    with store._connector.connect(write=False) as con:
        return query(
            con,
            "SELECT l.sample_id, l.repetition, l.label, l.verdict, d.input, d.expected_output, "
            "d.expected_type, o.actual_output, d.tags, s.score, "
            "coalesce(s.error, o.system_error) AS error "
            "FROM run_labels AS l JOIN runs AS r ON r.run_id = l.run_id "
            "JOIN samples AS d ON d.dataset_hash = r.dataset_hash AND d.sample_id = l.sample_id "
            "JOIN run_outputs AS o ON o.run_id = l.run_id AND o.sample_id = l.sample_id "
            "AND o.repetition = l.repetition "
            "LEFT JOIN scores AS s ON s.run_id = l.run_id AND s.sample_id = l.sample_id "
            "AND s.repetition = l.repetition AND s.metric = l.metric "
            "WHERE l.run_id = $run AND l.metric = $metric ORDER BY d.ordinal, l.repetition",
            {"run": run_id, "metric": metric},
        )


def judge_model(store: Store, run_id: str) -> str | None:
    """The model that answered most of a run's judge calls, or None when it made none."""
    with store._connector.connect(write=False) as con:
        rows = execute(
            con,
            "SELECT model FROM usage WHERE run_id = ? AND extra->>'$.kind' = 'judge' "
            "AND model IS NOT NULL GROUP BY model ORDER BY count(*) DESC, model LIMIT 1",
            [run_id],
        )
    return str(rows[0][0]) if rows else None
