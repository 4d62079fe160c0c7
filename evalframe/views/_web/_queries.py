"""The viewer's reads: every query it runs on the store, each a SELECT with bound parameters.

The run pages read what the store keeps per run (``runs``, ``run_metric_stats``,
``run_cohort_stats``) and never load a run into memory: the explorer pages through a run's
executions with ``LIMIT``/``OFFSET`` in the order the run stored them, and fetches the
scores, samples and outputs of the page's rows only. Unfiltered, a page costs the same for
a run of 100 executions as for one of 1,000,000; a filter (status, metric, cohort, text)
scans the run's scores or outputs once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import polars as pl

from evalframe.views._web._filters import ExecutionQuery, RequestError, RunQuery, label_pointer

if TYPE_CHECKING:
    from evalframe.store._read import Reading

__all__ = [
    "STATUS_COLUMNS",
    "UNTAGGED",
    "datasets",
    "execution",
    "executions",
    "failures",
    "headline",
    "histograms",
    "run_info",
    "runs_page",
    "status_select",
    "with_status",
]

UNTAGGED: Final = "(untagged)"
_ACTUAL_CHARS: Final = 300
"""Characters of each output a listing shows (the row's page shows all of it)."""


def _records(frame: pl.DataFrame) -> list[dict[str, Any]]:
    return frame.to_dicts()


# --- what every view of a run shows first ----------------------------------------------

STATUS_COLUMNS: Final = (
    "executions",
    "errored_executions",
    "safety_executions",
    "safety_failed_executions",
    "safety_errored_executions",
    "stored_macro_f1",
    "metric_rates",
)


def status_select(runs: str) -> str:
    """A SELECT of the ``run_status`` view's counts for the runs of the relation ``runs``
    (``store/_schema.run_status_select``: it reads those runs' scores only), with each
    run's stored macro-F1 and its metrics in order with their stored counts and pass rates
    (``metric_rates``), from which ``headline`` gives the report's headline.

    Lists grouped over the runs' metrics cost a third of a list per run from a correlated
    subquery (8 ms against 20-60 ms for a page of 50 of 10,000 runs).
    """
    from evalframe.store._schema import run_status_select

    counts = ", ".join(f"st.{c}" for c in STATUS_COLUMNS[:5])
    return f"""
        WITH rates AS (
            SELECT m.run_id,
                   list({{'metric': m.metric, 'name': m.name, 'dimension': m.dimension,
                          'n': s.n, 'n_scored': s.n_scored,
                          'pass_rate_scored': s.pass_rate_scored}} ORDER BY m.ordinal)
                       AS metric_rates
            FROM run_metrics AS m SEMI JOIN {runs} AS k ON k.run_id = m.run_id
            LEFT JOIN run_metric_stats AS s ON s.run_id = m.run_id AND s.metric = m.metric
            GROUP BY m.run_id
        )
        SELECT st.run_id, {counts}, r.macro_f1 AS stored_macro_f1, rates.metric_rates
        FROM ({run_status_select(runs)}) AS st
        JOIN runs AS r ON r.run_id = st.run_id
        LEFT JOIN rates ON rates.run_id = st.run_id"""


def headline(row: Mapping[str, Any]) -> dict[str, Any]:
    """A run's ``headline`` from a ``status_select`` row, as the JSON report writes it
    (``aggregate.headline``): errored executions, the safety verdict, and macro-F1 as the
    run was saved with it (``Run.macro_f1``, errored executions not passed).

    Its macro-F1 over scored executions is the same number when every quality metric
    scored every execution (each pass rate over scored executions is then the very same
    division); otherwise it is computed from the stored pass rates as the report does.
    """
    from evalframe.core.aggregate import macro_f1_scored_of, quality_metrics

    rates = row["metric_rates"] or []
    order = [m["metric"] for m in rates]
    dimension_of = {m["metric"]: m["dimension"] for m in rates}
    quality = quality_metrics(order, dimension_of)
    macro = row["stored_macro_f1"]
    scored = macro
    if any(m["n_scored"] != m["n"] for m in rates if m["metric"] in quality):
        summary = pl.DataFrame(
            {"metric": order, "pass_rate_scored": [m["pass_rate_scored"] for m in rates]},
            schema={"metric": pl.String, "pass_rate_scored": pl.Float64},
        )
        scored = macro_f1_scored_of(summary, dimension_of=dimension_of)
    safety_ids = [m for m in order if dimension_of[m] == "safety"]
    errored = int(row["errored_executions"] or 0)
    safety: dict[str, Any] | None = None
    if safety_ids:
        failed = int(row["safety_failed_executions"] or 0)
        safety = {
            "metrics": safety_ids,
            "executions": int(row["safety_executions"] or 0),
            "failed_executions": failed,
            "errored_executions": int(row["safety_errored_executions"] or 0),
            "passed": failed == 0,
        }
    return {
        "executions": int(row["executions"] or 0),
        "errored_executions": errored,
        "incomplete": errored > 0,
        "quality_metrics": quality,
        "macro_f1": macro,
        "macro_f1_scored": scored,
        "safety": safety,
    }


def with_status(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with its ``status_select`` columns replaced by ``status`` (the report's first
    line) and ``headline``."""
    from evalframe.core.aggregate import status_line

    head = headline(row)
    for column in STATUS_COLUMNS:
        row.pop(column, None)
    return {"run_id": row.pop("run_id"), "status": status_line(head), **row, "headline": head}


# --- runs --------------------------------------------------------------------------------


def _run_filters(q: RunQuery) -> tuple[str, dict[str, Any]]:
    clauses: list[str] = []
    params: dict[str, Any] = {}
    if q.dataset is not None:
        clauses.append("dataset = $dataset")
        params["dataset"] = q.dataset
    if q.name is not None:
        clauses.append("contains(lower(name), lower($name))")
        params["name"] = q.name
    if q.label is not None:
        pointer, value = label_pointer(q.label)
        params["label_key"] = pointer
        if value is None:
            clauses.append("json_extract(labels, $label_key) IS NOT NULL")
        else:
            clauses.append("json_extract_string(labels, $label_key) = $label_value")
            params["label_value"] = value
    if q.since is not None:
        clauses.append("created_at >= $since")
        params["since"] = q.since
    if q.until is not None:
        clauses.append("created_at < $until")
        params["until"] = q.until
    return ("WHERE " + " AND ".join(clauses)) if clauses else "", params


def runs_page(r: Reading, q: RunQuery) -> tuple[int, list[dict[str, Any]]]:
    """(matching runs, the page's runs newest first with their metrics' names, each with
    its ``status`` and ``headline`` as the JSON report gives them)."""
    where, params = _run_filters(q)
    total = int(r.sql(f"SELECT count(*) FROM runs {where}", params or None).item())
    page = r.sql(
        f"""
        WITH page AS (
            SELECT run_id, seq, name, dataset, labels, created_at, macro_f1, pass_rate,
                   n_failures, n_samples, n_executions, repetitions, source_run_id,
                   git_branch, finished_at - started_at AS duration_seconds
            FROM runs {where}
            ORDER BY created_at DESC, seq DESC LIMIT $limit OFFSET $offset
        ),
        status AS ({status_select("page")})
        SELECT p.* EXCLUDE (seq), st.* EXCLUDE (run_id)
        FROM page AS p LEFT JOIN status AS st ON st.run_id = p.run_id
        ORDER BY p.created_at DESC, p.seq DESC""",
        {**params, "limit": q.page.limit, "offset": q.page.offset},
    )
    rows = []
    for row in _records(page):  # one page
        row["labels"] = json.loads(row["labels"]) if row["labels"] else {}
        row["metrics"] = [m["name"] for m in row["metric_rates"] or []]
        rows.append(with_status(row))
    return total, rows


def datasets(r: Reading) -> list[tuple[str, int]]:
    """Every dataset with its number of runs, by name."""
    frame = r.sql("SELECT dataset, count(*) AS runs FROM runs GROUP BY dataset ORDER BY dataset")
    return [(str(d), int(n)) for d, n in frame.iter_rows()]


# --- one run -----------------------------------------------------------------------------


def resolve(r: Reading, ref: str) -> str:
    """The run id a reference in a URL names: an id, a name, latest, previous, a baseline
    or an id prefix (never SQL: a URL holds no query).

    Raises:
        RequestError: 404 when nothing matches, 400 for SQL.
    """
    from evalframe.core._errors import StoreError
    from evalframe.store._read import looks_like_sql

    if looks_like_sql(ref):
        raise RequestError(400, "A run in a URL is an id, a name or a reference, not SQL.")
    try:
        return r.resolve(ref)
    except StoreError as exc:
        raise RequestError(404, str(exc).splitlines()[0]) from None


def run_info(r: Reading, run_id: str) -> dict[str, Any]:
    """A run's record (with its ``status`` and ``headline``, as the JSON report gives them),
    its metrics with their stored aggregates, its cohorts, the baselines pointing at it and
    its labels' count."""
    info = r.sql(
        f"WITH one AS (SELECT $run AS run_id), status AS ({status_select('one')}) "
        "SELECT r.*, r.finished_at - r.started_at AS duration_seconds, "
        "st.* EXCLUDE (run_id) FROM runs AS r JOIN status AS st USING (run_id)",
        {"run": run_id},
    ).to_dicts()[0]
    info = with_status(info)
    info["labels"] = json.loads(info["labels"]) if info["labels"] else {}
    info["extra"] = json.loads(info["extra"]) if info["extra"] else {}
    info["metrics"] = _records(
        r.sql(
            "SELECT m.metric, m.name, m.threshold, m.family, m.dimension, s.n, s.n_scored, "
            "s.n_errors, s.n_passed, s.mean, s.p50, s.p95, s.pass_rate, s.pass_rate_scored "
            "FROM run_metrics AS m LEFT JOIN run_metric_stats AS s "
            "ON s.run_id = m.run_id AND s.metric = m.metric "
            "WHERE m.run_id = ? ORDER BY m.ordinal",
            [run_id],
        )
    )
    info["cohorts"] = _records(
        r.sql(
            "SELECT label, cohort, is_untagged, sample_count, metric, n_scored, n_errors, mean, "
            "pass_rate, pass_rate_scored FROM run_cohort_stats WHERE run_id = ? "
            "ORDER BY is_untagged, cohort, ordinal",
            [run_id],
        )
    )
    info["baselines"] = (
        r.sql("SELECT name FROM baselines WHERE run_id = ? ORDER BY name", [run_id])
        .get_column("name")
        .to_list()
    )
    info["human_labels"] = int(
        r.sql("SELECT count(*) FROM run_labels WHERE run_id = ?", [run_id]).item()
    )
    return info


def histograms(r: Reading, run_id: str) -> dict[str, list[dict[str, Any]]]:
    """Each metric's ten score buckets, zeros included, in metric order (the buckets of
    ``score_histogram``, counted over this run's scores only)."""
    from evalframe.store._schema import histogram_bucket, histogram_edges

    counted = r.sql(
        f"SELECT metric, {histogram_bucket()} AS bucket, count(*) AS n FROM scores "
        "WHERE run_id = ? AND score IS NOT NULL GROUP BY ALL",
        [run_id],
    )
    counts = {(m, b): n for m, b, n in counted.iter_rows()}  # ten per metric
    metrics = r.sql(
        "SELECT metric FROM run_metrics WHERE run_id = ? ORDER BY ordinal", [run_id]
    ).get_column("metric")
    return {
        m: [
            {"min": lo, "max": hi, "count": counts.get((m, b), 0)}
            for b, lo, hi in histogram_edges()
        ]
        for m in metrics.to_list()
    }


def failures(r: Reading, run_id: str, limit: int = 20) -> list[dict[str, Any]]:
    """The first ``limit`` cells that could not be scored."""
    return _records(
        r.sql(
            "SELECT sample_id, repetition, metric, error FROM failures WHERE run_id = ? LIMIT ?",
            [run_id, limit],
        )
    )


def cohort_names(r: Reading, run_id: str) -> list[str]:
    """The run's cohort labels, untagged last."""
    frame = r.sql(
        "SELECT DISTINCT label, is_untagged FROM run_cohort_stats WHERE run_id = ? "
        "ORDER BY is_untagged, label",
        [run_id],
    )
    return [str(x) for x in frame.get_column("label").to_list()]


# --- the explorer ------------------------------------------------------------------------


def _status_joins(q: ExecutionQuery) -> list[str]:
    """Semi- or anti-joins on the run's scores for what ``status`` (of ``metric``, or of any
    metric) asks."""
    if q.status is None:
        return []
    metric = " AND metric = $metric" if q.metric is not None else ""
    if q.status == "error":
        kind, cells = "SEMI", "error IS NOT NULL"
    elif q.status == "fail":
        kind, cells = "SEMI", "error IS NULL AND NOT passed"
    elif q.metric is not None:
        kind, cells = "SEMI", "error IS NULL AND passed"
    else:  # passed on every metric: nothing errored or failed
        kind, cells = "ANTI", "(error IS NOT NULL OR NOT passed)"
    return [
        f"{kind} JOIN (SELECT sample_id, repetition FROM scores WHERE run_id = $run{metric} "
        f"AND {cells}) AS st ON st.sample_id = o.sample_id AND st.repetition = o.repetition"
    ]


def executions(
    r: Reading, info: Mapping[str, Any], q: ExecutionQuery
) -> tuple[int, list[dict[str, Any]]]:
    """(matching executions, the page's executions in run order), each with its tags, a
    status (pass, fail, error or unscored), its output (the first 300 characters) and every
    metric's score, pass and error."""
    params: dict[str, Any] = {"outputs": info["outputs_run_id"]}
    joins = _status_joins(q)
    clauses: list[str] = ["o.run_id = $outputs"]
    if joins:
        params["run"] = info["run_id"]
        if q.metric is not None:
            params["metric"] = q.metric
    if q.cohort is not None or q.q is not None:
        joins.append("JOIN samples AS d ON d.dataset_hash = $hash AND d.sample_id = o.sample_id")
        params["hash"] = info["dataset_hash"]
    if q.cohort is not None:
        if q.cohort == UNTAGGED:
            clauses.append("len(coalesce(d.tags, [])) = 0")
        else:
            clauses.append("list_contains(d.tags, $cohort)")
            params["cohort"] = q.cohort
    if q.q is not None:
        clauses.append(
            "(contains(lower(o.sample_id), $q) OR contains(lower(coalesce(o.actual_output, '')), "
            "$q) OR contains(lower(coalesce(d.input, '')), $q) "
            "OR contains(lower(coalesce(d.expected_output, '')), $q))"
        )
        params["q"] = q.q
    window = {"limit": q.page.limit, "offset": q.page.offset}
    if joins or len(clauses) > 1:
        # The matching positions once, then their count and the page's slice of them.
        found = r.sql(
            f"WITH m AS MATERIALIZED (SELECT o.rowid AS pos FROM outputs AS o {' '.join(joins)} "
            f"WHERE {' AND '.join(clauses)}) "
            "SELECT (SELECT count(*) FROM m) AS total, "
            "(SELECT list(pos ORDER BY pos) FROM (SELECT pos FROM m ORDER BY pos "
            "LIMIT $limit OFFSET $offset)) AS page",
            {**params, **window},
        )
        total, positions = found.row(0)
        page = r.sql(
            "SELECT sample_id, repetition, actual_output, system_error FROM outputs "
            "WHERE rowid IN (SELECT unnest($pos)) ORDER BY rowid",
            {"pos": positions or []},
        )
    else:  # the run's own order, streamed: the page costs the same at any run size
        total = int(info["n_executions"] or 0)
        page = r.sql(
            "SELECT sample_id, repetition, actual_output, system_error FROM outputs "
            "WHERE run_id = $outputs LIMIT $limit OFFSET $offset",
            {**params, **window},
        )
    return int(total), _page_rows(r, info, page)


def _page_rows(r: Reading, info: Mapping[str, Any], page: pl.DataFrame) -> list[dict[str, Any]]:
    if page.height == 0:
        return []
    keys = {
        "ids": page.get_column("sample_id").to_list(),
        "reps": page.get_column("repetition").to_list(),
    }
    scores = r.sql(
        "WITH k AS (SELECT unnest($ids) AS sample_id, unnest($reps) AS repetition) "
        "SELECT s.sample_id, s.repetition, s.metric, s.score, s.passed, s.error "
        "FROM scores AS s SEMI JOIN k ON k.sample_id = s.sample_id "
        "AND k.repetition = s.repetition WHERE s.run_id = $run",
        {**keys, "run": info["run_id"]},
    )
    tags = r.sql(
        "SELECT sample_id, tags FROM samples WHERE dataset_hash = $hash "
        "AND sample_id IN (SELECT unnest($ids))",
        {"ids": keys["ids"], "hash": info["dataset_hash"]},
    )
    tag_of = dict(tags.iter_rows())
    by_row: dict[tuple[str, int], dict[str, dict[str, Any]]] = {}
    for sid, rep, metric, score, passed, error in scores.iter_rows():  # the page's cells
        by_row.setdefault((sid, rep), {})[metric] = {
            "score": score,
            "passed": passed,
            "error": error,
        }
    rows = []
    for row in page.iter_rows(named=True):  # one page
        cells = by_row.get((row["sample_id"], row["repetition"]), {})
        actual = row["actual_output"]
        rows.append(
            {
                "sample_id": row["sample_id"],
                "repetition": row["repetition"],
                "status": status_of(cells.values()),
                "tags": list(tag_of.get(row["sample_id"]) or []),
                "actual_output": actual[:_ACTUAL_CHARS] if actual is not None else None,
                "truncated": actual is not None and len(actual) > _ACTUAL_CHARS,
                "system_error": row["system_error"],
                "scores": {m["metric"]: cells.get(m["metric"]) for m in info["metrics"]},
            }
        )
    return rows


def status_of(cells: Any) -> str:
    """An execution's verdict from its cells: error (any errored), fail (any below its
    threshold), pass (every one passed), or unscored."""
    cells = list(cells)
    if any(c["error"] is not None for c in cells):
        return "error"
    if any(c["passed"] is False for c in cells):
        return "fail"
    return "pass" if cells else "unscored"


def execution(
    r: Reading, info: Mapping[str, Any], sample_id: str, repetition: int
) -> dict[str, Any]:
    """One execution whole: input, expected and actual output, metadata, contexts and other
    output fields, its trajectory, and every metric's score, threshold and details.

    Raises:
        RequestError: 404 when the run has no such execution.
    """
    found = r.sql(
        "SELECT o.actual_output, o.system_error, o.latency_ms, o.prompt_tokens, "
        "o.completion_tokens, o.cost_usd, o.retries, o.extra, d.input, d.expected_output, "
        "d.expected_type, d.metadata, d.tags, d.row_hash FROM outputs AS o "
        "JOIN samples AS d ON d.dataset_hash = $hash AND d.sample_id = o.sample_id "
        "WHERE o.run_id = $outputs AND o.sample_id = $sid AND o.repetition = $rep",
        {
            "hash": info["dataset_hash"],
            "outputs": info["outputs_run_id"],
            "sid": sample_id,
            "rep": repetition,
        },
    )
    if found.height == 0:
        raise RequestError(
            404,
            f"Run {info['run_id']} has no execution of sample {sample_id!r} at repetition "
            f"{repetition}.",
        )
    row = found.to_dicts()[0]
    scores = r.sql(
        "SELECT s.metric, s.score, s.passed, s.error, s.details, m.threshold "
        "FROM scores AS s JOIN run_metrics AS m ON m.run_id = s.run_id AND m.metric = s.metric "
        "WHERE s.run_id = $run AND s.sample_id = $sid AND s.repetition = $rep ORDER BY m.ordinal",
        {"run": info["run_id"], "sid": sample_id, "rep": repetition},
    )
    trajectory = r.sql(
        "SELECT to_json(tool_calls) AS tool_calls, steps, finish_reason, approvals, "
        "pending_approvals FROM run_trajectories "
        "WHERE run_id = $run AND sample_id = $sid AND repetition = $rep",
        {"run": info["run_id"], "sid": sample_id, "rep": repetition},
    ).to_dicts()
    labels = r.sql(
        "SELECT metric, label, verdict, note, labelled_at FROM run_labels "
        "WHERE run_id = $run AND sample_id = $sid AND repetition = $rep ORDER BY metric",
        {"run": info["run_id"], "sid": sample_id, "rep": repetition},
    ).to_dicts()
    extra = json.loads(row["extra"]) if row["extra"] else {}
    if trajectory:
        trajectory[0]["tool_calls"] = json.loads(trajectory[0]["tool_calls"] or "[]")
    cells = [
        {**c, "details": json.loads(c["details"]) if c["details"] else None}
        for c in scores.to_dicts()
    ]
    return {
        "run_id": info["run_id"],
        "sample_id": sample_id,
        "repetition": repetition,
        "row_hash": row["row_hash"],
        "status": status_of(cells),
        "input": json.loads(row["input"]) if row["input"] else None,
        "expected_output": _expected(row["expected_output"], row["expected_type"]),
        "actual_output": row["actual_output"],
        "system_error": row["system_error"],
        "tags": list(row["tags"] or []),
        "metadata": json.loads(row["metadata"]) if row["metadata"] else {},
        "contexts": extra.pop("contexts", None),
        "output_fields": {
            **{
                k: row[k]
                for k in ("latency_ms", "prompt_tokens", "completion_tokens", "cost_usd", "retries")
                if row[k] is not None
            },
            **extra,
        },
        "trajectory": trajectory[0] if trajectory else None,
        "scores": cells,
        "human_labels": labels,
    }


def _expected(text: str | None, kind: str | None) -> Any:
    """The expected output as the dataset gave it (stored as text, or as JSON for others)."""
    if text is None or kind in (None, "string"):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text
