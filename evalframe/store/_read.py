"""Reading runs back: listing, resolving references, and loading a whole ``Run``."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

import duckdb
import polars as pl

from evalframe.core import schema as C
from evalframe.core._errors import MetricError, StoreError
from evalframe.core._trajectory import TRAJECTORY_COLUMN
from evalframe.store._agent import trajectory_join, typed_agent_columns
from evalframe.store._connect import execute, fetch, query
from evalframe.store._files import check_run
from evalframe.store._sandbox import user_query
from evalframe.store._write import OUTPUT_COLUMNS

if TYPE_CHECKING:
    from evalframe.core._run import Run
    from evalframe.metrics._spec import Metric

__all__ = ["RUN_LIST_COLUMNS", "Reading", "list_runs", "load_run", "looks_like_sql", "resolve"]

RUN_LIST_COLUMNS: Final = (
    "run_id",
    "name",
    "dataset",
    "created_at",
    "macro_f1",
    "n_samples",
    "repetitions",
    "n_failures",
    "source_run_id",
    "git_commit",
    "git_branch",
    "labels",
)
_NEWEST_FIRST: Final = "ORDER BY created_at DESC, seq DESC"
_SQL_START: Final = re.compile(r"^\s*(select|with|from|values|\()", re.IGNORECASE)
_MIN_PREFIX: Final = 6


def looks_like_sql(text: str) -> bool:
    """Whether a reference is a query (SELECT, WITH, FROM, VALUES or a parenthesis)."""
    return _SQL_START.match(text) is not None


def list_runs(
    con: duckdb.DuckDBPyConnection, *, dataset: str | None = None, limit: int | None = None
) -> pl.DataFrame:
    """Runs newest first: id, name, dataset, created_at, macro_f1, n samples and more, and each
    run's ``lineage``: the runs it was rescored from, nearest first (empty for a scored run)."""
    cols = ", ".join(f"r.{c}" for c in RUN_LIST_COLUMNS)
    where = "WHERE r.dataset = $dataset" if dataset is not None else ""
    tail = "LIMIT $limit" if limit is not None else ""
    params: dict[str, Any] = {}
    if dataset is not None:
        params["dataset"] = dataset
    if limit is not None:
        params["limit"] = limit
    # The lowest agreement among the run's judged metrics' calibrations, where one exists.
    calibrated = (
        "LEFT JOIN (SELECT run_id, min(agreement_rate) AS judge_agreement "
        "FROM run_calibration GROUP BY run_id) AS c ON c.run_id = r.run_id"
    )
    order = "ORDER BY r.created_at DESC, r.seq DESC"
    return query(
        con,
        f"WITH RECURSIVE {_LINEAGE} SELECT {cols}, coalesce(l.lineage, []::VARCHAR[]) AS lineage, "
        f"c.judge_agreement FROM runs AS r {calibrated} "
        f"LEFT JOIN lineage AS l ON l.run_id = r.run_id {where} {order} {tail}",
        params or None,
    )


# Each rescored run's sources, nearest first: the run it rescored, the run that one rescored...
_LINEAGE: Final = """
    chain(run_id, ancestor, depth) AS (
        SELECT run_id, source_run_id, 1 FROM runs WHERE source_run_id IS NOT NULL
        UNION ALL
        SELECT c.run_id, r.source_run_id, c.depth + 1
        FROM chain AS c JOIN runs AS r ON r.run_id = c.ancestor
        WHERE r.source_run_id IS NOT NULL AND c.depth < 100
    ),
    lineage AS (
        SELECT run_id, list(ancestor ORDER BY depth) AS lineage FROM chain GROUP BY run_id
    )"""


def _known_runs(con: duckdb.DuckDBPyConnection) -> str:
    rows = execute(con, f"SELECT run_id, name FROM runs {_NEWEST_FIRST} LIMIT 5")
    if not rows:
        return "The store has no runs yet."
    listed = ", ".join(f"{rid} ({name})" for rid, name in rows)
    total = fetch(con, "SELECT count(*) FROM runs")
    return f"Newest of {total} run(s): {listed}."


def _run_row(con: duckdb.DuckDBPyConnection, run_id: str) -> tuple[Any, ...] | None:
    rows = execute(
        con,
        "SELECT run_id, dataset, epoch_us(created_at), seq FROM runs WHERE run_id = ?",
        [run_id],
    )
    return rows[0] if rows else None


def resolve(con: duckdb.DuckDBPyConnection, ref: str, *, relative_to: str | None = None) -> str:
    """The run id a reference names.

    A reference is, in this order: a run id; ``latest`` or ``previous``; ``baseline`` or
    ``baseline:NAME``; a SQL query returning one run id; a run name (its newest run); a
    baseline name; or a unique prefix of a run id (6 characters at least).

    With ``relative_to`` (the run being gated or compared), ``latest`` and ``previous``
    look only at that run's dataset and never return the run itself: ``latest`` is the
    newest other run, ``previous`` the newest one created before it; ``baseline`` is that
    dataset's baseline.
    """
    text = ref.strip()
    if not text:
        raise StoreError("A run reference is empty; give a run id, name, latest, previous, ...")
    if _run_row(con, text) is not None:
        return text
    context = _run_row(con, relative_to) if relative_to is not None else None
    low = text.lower()
    if low in ("latest", "previous"):
        return _by_recency(con, low, context)
    if low == "baseline" or low.startswith("baseline:"):
        return _baseline(con, text[len("baseline:") :] if ":" in text else None, context)
    if looks_like_sql(text):
        return _by_query(con, text)
    named = execute(con, f"SELECT run_id FROM runs WHERE name = ? {_NEWEST_FIRST} LIMIT 1", [text])
    if named:
        return str(named[0][0])
    based = execute(con, "SELECT run_id FROM baselines WHERE name = ?", [text])
    if based:
        return _existing(con, str(based[0][0]), f"baseline '{text}'")
    if len(text) >= _MIN_PREFIX:
        prefixed = execute(
            con, "SELECT run_id FROM runs WHERE starts_with(run_id, ?) LIMIT 2", [text]
        )
        if len(prefixed) == 1:
            return str(prefixed[0][0])
    raise StoreError(
        f"Unknown run reference '{text}': it is not a run id, a run name, a baseline, "
        f"'latest', 'previous' or a SQL query (SELECT ...). {_known_runs(con)}"
    )


def _by_recency(con: duckdb.DuckDBPyConnection, which: str, context: tuple[Any, ...] | None) -> str:
    if context is None:
        offset = 0 if which == "latest" else 1
        rows = execute(con, f"SELECT run_id FROM runs {_NEWEST_FIRST} LIMIT 1 OFFSET ?", [offset])
        if not rows:
            count = fetch(con, "SELECT count(*) FROM runs")
            raise StoreError(
                f"No '{which}' run: the store holds {count} run(s)."
                + (" 'previous' needs two." if which == "previous" else "")
            )
        return str(rows[0][0])
    run_id, dataset, created_us, seq = context
    if which == "latest":
        rows = execute(
            con,
            f"SELECT run_id FROM runs WHERE dataset = ? AND run_id <> ? {_NEWEST_FIRST} LIMIT 1",
            [dataset, run_id],
        )
    else:
        rows = execute(
            con,
            "SELECT run_id FROM runs WHERE dataset = ? AND run_id <> ? AND "
            "(epoch_us(created_at) < ? OR (epoch_us(created_at) = ? AND seq < ?)) "
            f"{_NEWEST_FIRST} LIMIT 1",
            [dataset, run_id, created_us, created_us, seq],
        )
    if not rows:
        raise StoreError(
            f"No '{which}' run to compare run {run_id} with: it is the only run of dataset "
            f"'{dataset}'" + (" or the oldest one." if which == "previous" else ".")
        )
    return str(rows[0][0])


def _baseline(
    con: duckdb.DuckDBPyConnection, name: str | None, context: tuple[Any, ...] | None
) -> str:
    if name:
        rows = execute(con, "SELECT run_id FROM baselines WHERE name = ?", [name])
        if not rows:
            raise StoreError(f"No baseline named '{name}'. {_baseline_list(con)}")
        return _existing(con, str(rows[0][0]), f"baseline '{name}'")
    if context is not None:
        dataset = context[1]
        rows = execute(
            con,
            "SELECT run_id FROM baselines WHERE dataset = ? "
            "ORDER BY name = ? DESC, promoted_at DESC LIMIT 1",
            [dataset, dataset],
        )
        if not rows:
            raise StoreError(
                f"No baseline for dataset '{dataset}': promote one with "
                f"`evalframe baseline promote RUN`. {_baseline_list(con)}"
            )
        return _existing(con, str(rows[0][0]), f"the baseline of '{dataset}'")
    rows = execute(con, "SELECT run_id FROM baselines")
    if len(rows) != 1:
        raise StoreError(
            "'baseline' is ambiguous without a run to compare: use baseline:NAME. "
            + _baseline_list(con)
        )
    return _existing(con, str(rows[0][0]), "the baseline")


def _baseline_list(con: duckdb.DuckDBPyConnection) -> str:
    names = [r[0] for r in execute(con, "SELECT name FROM baselines ORDER BY name")]
    return f"Baselines: {', '.join(names)}." if names else "The store has no baselines."


def _existing(con: duckdb.DuckDBPyConnection, run_id: str, what: str) -> str:
    if _run_row(con, run_id) is None:
        raise StoreError(f"{what[0].upper()}{what[1:]} points at run {run_id}, which is gone.")
    return run_id


def _by_query(con: duckdb.DuckDBPyConnection, sql: str) -> str:
    result = user_query(con, sql)
    if result.height != 1 or result.width < 1:
        raise StoreError(
            f"The reference query returned {result.height} row(s); it must return exactly "
            f"one run id (for example ... ORDER BY created_at DESC LIMIT 1).\nquery: {sql}"
        )
    column = "run_id" if "run_id" in result.columns else result.columns[0]
    value = result.item(0, column)
    if not isinstance(value, str) or _run_row(con, value) is None:
        raise StoreError(f"The reference query returned {value!r}, which is not a run id.")
    return value


# --- loading a whole run -------------------------------------------------------------------


def _metric(row: dict[str, Any]) -> Metric:
    """The registered metric for a stored id, or an opaque stand-in when it is not registered.

    The stand-in keeps the id, threshold, family and dimension, so reports and comparisons
    work; only scoring with it fails, naming the missing metric.
    """
    from evalframe.metrics._registry import get
    from evalframe.metrics._spec import Metric, MetricDef, Scored

    try:
        found = get(row["metric"])
        if found.threshold == row["threshold"]:
            return found
    except MetricError:
        pass
    metric_id = row["metric"]

    def unavailable() -> Scored:
        raise MetricError(
            f"Metric '{metric_id}' is not registered in this process; register it (or install "
            "its plugin) to score with it."
        )

    definition = MetricDef(
        name=metric_id,
        family=row["family"] or "custom",
        dimension=row["dimension"] or "correctness",
        summary="(stored metric, not registered here)",
        build=unavailable,
        params=(),
        threshold=float(row["threshold"]),
    )
    return Metric(definition, (), float(row["threshold"]))


def load_run(con: duckdb.DuckDBPyConnection, run_id: str) -> Run:
    """Rebuild a ``Run`` (dataset, evaluation frame, scores, metrics, usage) from the store."""
    from evalframe.core._dataset import Dataset
    from evalframe.core._run import Run

    meta = query(con, "SELECT * FROM runs WHERE run_id = ?", [run_id])
    if meta.height == 0:
        raise StoreError(f"Run {run_id} is not in the store. {_known_runs(con)}")
    check_run(con, run_id)
    info = meta.row(0, named=True)
    digest = info["dataset_hash"]
    dataset_cols = C.DATASET_SCHEMA.names()
    samples = query(
        con,
        f"SELECT {', '.join(dataset_cols)} FROM samples WHERE dataset_hash = ? ORDER BY ordinal",
        [digest],
    ).cast(C.DATASET_SCHEMA)
    dataset = Dataset._wrap(samples, name=info["dataset"], metrics=[], repetitions=None, path=None)
    metric_rows = query(
        con, "SELECT * FROM run_metrics WHERE run_id = ? ORDER BY ordinal", [run_id]
    )
    metrics = [_metric(r) for r in metric_rows.iter_rows(named=True)]
    outputs_run = info["outputs_run_id"] or run_id
    trajectory, join = trajectory_join(con, outputs_run)
    outputs = query(
        con,
        f"SELECT o.* EXCLUDE (run_id){trajectory} FROM outputs AS o "
        f"JOIN samples AS d ON d.dataset_hash = ? AND d.sample_id = o.sample_id {join} "
        "WHERE o.run_id = ? ORDER BY o.repetition, d.ordinal",
        [digest, outputs_run],
    )
    frame = _frame(outputs, samples)
    scores = query(
        con,
        f"SELECT {', '.join('s.' + c for c in C.SCORES_SCHEMA.names())} FROM scores AS s "
        "JOIN run_metrics AS m ON m.run_id = s.run_id AND m.metric = s.metric "
        "JOIN samples AS d ON d.dataset_hash = ? AND d.sample_id = s.sample_id "
        "WHERE s.run_id = ? ORDER BY m.ordinal, s.repetition, d.ordinal",
        [digest, run_id],
    ).cast(C.SCORES_SCHEMA)
    usage = query(
        con,
        "SELECT * EXCLUDE (run_id, ordinal, extra), "
        "CAST(json_extract(extra, '$.derived') AS VARCHAR[]) AS derived, "
        "CAST(json_extract(extra, '$.started_at') AS DOUBLE) AS started_at "
        "FROM usage WHERE run_id = ? ORDER BY ordinal",
        [run_id],
    )
    extra = json.loads(info["extra"]) if info["extra"] else {}
    if info["models"]:
        extra["models"] = list(info["models"])
    if info["source_run_id"] is not None:
        extra["source_run_id"] = info["source_run_id"]
    return Run(
        run_id=run_id,
        name=info["name"],
        dataset=dataset,
        frame=frame,
        scores=scores,
        metrics=metrics,
        started_at=float(info["started_at"] or 0.0),
        finished_at=float(info["finished_at"] or 0.0),
        usage=usage if usage.height else pl.DataFrame(),
        labels=json.loads(info["labels"]) if info["labels"] else {},
        extra=extra,
    )


def _frame(outputs: pl.DataFrame, samples: pl.DataFrame) -> pl.DataFrame:
    """The evaluation frame: output columns (those with any value), repetition, dataset."""
    keep = [C.SAMPLE_ID, C.ACTUAL_OUTPUT]
    keep += [
        c
        for c in OUTPUT_COLUMNS
        if c != C.ACTUAL_OUTPUT and outputs.get_column(c).null_count() < outputs.height
    ]
    if TRAJECTORY_COLUMN in outputs.columns:  # already of its dtype (``trajectory_join``)
        keep.append(TRAJECTORY_COLUMN)
    produced = outputs.select(*keep)
    extra = outputs.get_column("extra")
    if extra.null_count() < outputs.height:
        decoded = extra.str.json_decode(infer_schema_length=None)
        if isinstance(decoded.dtype, pl.Struct):
            produced = pl.concat([produced, decoded.struct.unnest()], how="horizontal")
            produced = typed_agent_columns(produced, extra)
    produced = produced.with_columns(outputs.get_column(C.REPETITION).cast(pl.Int64))
    return produced.join(samples, on=C.SAMPLE_ID, how="left", maintain_order="left")


class Reading:
    """SELECT queries on one sandboxed, read-only connection (``Store.reading``): a few
    queries in a row open the file once. Each query is checked as ``Store.sql`` checks it."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self._con = con

    def sql(
        self,
        text: str,
        params: Sequence[Any] | dict[str, Any] | None = None,
        *,
        limit: int | None = None,
    ) -> pl.DataFrame:
        """The query's result (at most ``limit`` rows) as a Polars frame."""
        return user_query(self._con, text, params, limit=limit)

    def resolve(self, ref: str) -> str:
        """The run id of a reference, as ``Store.resolve`` finds it."""
        return resolve(self._con, ref)
