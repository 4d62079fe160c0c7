"""The sample explorer: every execution of a run in one searchable, sortable, filterable table.

The data ships once, as compact columnar JSON inside the page (one array per field, never a
row of HTML per execution); the page's script renders only the rows in view, so a run of
100,000 executions opens as fast as a run of ten. Clicking a row shows its input, expected
and actual output (the two outputs word-diffed in the page, for the one row shown), each
metric's score, threshold and details, and the trajectory or retrieved contexts when the run
has them.

What leaves the run: sample id, repetition, tags, input, expected and actual output, scores,
errors and metric details, and a trajectory when one is recorded. What stays out unless
``include_evidence=True`` (``--include-evidence``): the sample metadata (where citation
evidence lives, ``metadata.citation_evidence``) and the text of retrieved contexts (only
their number is shown). Metric details never hold evidence text: metrics keep it out.

The explorer holds at most ``EXPLORER_LIMIT`` executions; a larger run keeps its failing and
errored executions first, then the others in run order, and the page says how many it shows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import polars as pl

from evalframe.core import schema as C
from evalframe.views._html._explorer_js import EXPLORER_CSS, EXPLORER_JS
from evalframe.views._html._parts import escape, script_json

if TYPE_CHECKING:
    from evalframe.core._run import Run

__all__ = ["EXPLORER_LIMIT", "explorer_data", "explorer_html"]

EXPLORER_LIMIT = 250_000
"""Executions the explorer holds; beyond it, failing and errored executions are kept first."""

_EXEC = pl.Schema(
    {
        C.SAMPLE_ID: pl.String(),
        C.REPETITION: pl.Int64(),
        C.TAGS: pl.List(pl.String()),
        "input": pl.String(),
        "expected": pl.String(),
        "actual": pl.String(),
    }
)
_SCORES = pl.Schema(
    {
        C.SAMPLE_ID: pl.String(),
        C.REPETITION: pl.Int64(),
        C.METRIC: pl.String(),
        C.SCORE: pl.Float64(),
        C.ERROR: pl.String(),
        "details": pl.String(),
    }
)


def _json_text(expr: pl.Expr) -> pl.Expr:
    """Any column as JSON text (strings kept as they are: inputs are JSON text already)."""
    return pl.struct(expr.alias("v")).struct.json_encode().str.slice(5).str.strip_suffix("}")


def _from_run(run: Run) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, pl.Series]]:
    frame = run.frame
    execs = frame.select(
        C.SAMPLE_ID,
        C.REPETITION,
        pl.col(C.TAGS).fill_null([]),
        pl.col(C.INPUT).cast(pl.String).alias("input"),
        pl.col(C.EXPECTED_OUTPUT).cast(pl.String).alias("expected"),
        pl.col(C.ACTUAL_OUTPUT).cast(pl.String).alias("actual"),
    )
    extra: dict[str, pl.Series] = {}
    for name in ("trajectory", "contexts", C.METADATA):
        if name in frame.columns:
            col = frame.get_column(name)
            if col.dtype != pl.String:
                col = frame.select(_json_text(pl.col(name))).to_series()
            extra[name] = col
    scores = run.scores.select(C.SAMPLE_ID, C.REPETITION, C.METRIC, C.SCORE, C.ERROR, "details")
    return execs, scores, extra


def _from_doc(doc: Mapping[str, Any]) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, pl.Series]]:
    """The same frames from a report document's ``samples`` and ``failures``."""
    import orjson

    samples: Sequence[Mapping[str, Any]] = doc.get("samples") or []
    execs = pl.DataFrame(
        {
            C.SAMPLE_ID: [s["id"] for s in samples],
            C.REPETITION: [s.get("repetition", 0) for s in samples],
            C.TAGS: [s.get("tags") or [] for s in samples],
            "input": [None] * len(samples),
            "expected": [None] * len(samples),
            "actual": [s.get("actual_output") for s in samples],
        },
        schema=_EXEC,
    )
    sid, rep, metric, score, details = [], [], [], [], []
    for s in samples:
        for name, v in (s.get("scores") or {}).items():
            sid.append(s["id"])
            rep.append(s.get("repetition", 0))
            metric.append(name)
            score.append(v.get("score"))
            details.append(orjson.dumps(v.get("details") or {}).decode())
    failures = doc.get("failures") or []
    scores = pl.concat(
        [
            pl.DataFrame(
                {
                    C.SAMPLE_ID: sid,
                    C.REPETITION: rep,
                    C.METRIC: metric,
                    C.SCORE: score,
                    C.ERROR: [None] * len(sid),
                    "details": details,
                },
                schema=_SCORES,
            ),
            pl.DataFrame(
                {
                    C.SAMPLE_ID: [f["sample_id"] for f in failures],
                    C.REPETITION: [f.get("repetition", 0) for f in failures],
                    C.METRIC: [f["metric"] for f in failures],
                    C.SCORE: [None] * len(failures),
                    C.ERROR: [f["error"] for f in failures],
                    "details": [None] * len(failures),
                },
                schema=_SCORES,
            ),
        ]
    )
    extra: dict[str, pl.Series] = {}
    for name in ("trajectory", "contexts"):
        if any(name in s for s in samples):
            extra[name] = pl.Series(name, [_dumps(s.get(name)) for s in samples], dtype=pl.String)
    evidence = doc.get("evidence") or []
    if evidence and "contexts" not in extra:
        # A report written with --include-evidence: each execution's contexts, by id.
        found = pl.DataFrame(
            {
                C.SAMPLE_ID: [e["id"] for e in evidence],
                C.REPETITION: [e.get("repetition", 0) for e in evidence],
                "contexts": [_dumps(e.get("contexts")) for e in evidence],
            },
            schema={C.SAMPLE_ID: pl.String(), C.REPETITION: pl.Int64(), "contexts": pl.String()},
        )
        extra["contexts"] = (
            execs.select(C.SAMPLE_ID, C.REPETITION)
            .join(found, on=[C.SAMPLE_ID, C.REPETITION], how="left", maintain_order="left")
            .get_column("contexts")
        )
    return execs, scores, extra


def _doc_trajectories(doc: Mapping[str, Any], execs: pl.DataFrame) -> pl.Series | None:
    """The report's ``samples[].trajectory``, aligned with the run's executions."""
    samples = doc.get("samples") or []
    if not any("trajectory" in s for s in samples):
        return None
    found = pl.DataFrame(
        {
            C.SAMPLE_ID: [s["id"] for s in samples],
            C.REPETITION: [s.get("repetition", 0) for s in samples],
            "trajectory": [_dumps(s.get("trajectory")) for s in samples],
        },
        schema={C.SAMPLE_ID: pl.String(), C.REPETITION: pl.Int64(), "trajectory": pl.String()},
    )
    aligned = execs.select(C.SAMPLE_ID, C.REPETITION).join(
        found, on=[C.SAMPLE_ID, C.REPETITION], how="left", maintain_order="left"
    )
    return aligned.get_column("trajectory")


def _dumps(value: Any) -> str | None:
    import orjson

    return None if value is None else orjson.dumps(value).decode()


def _codes(col: pl.Series) -> tuple[list[int | None], list[str]]:
    """Dictionary-encode a string column: each row's index into the sorted distinct values."""
    values = col.drop_nulls().unique().sort()
    codes = col.rank("dense") - 1
    return codes.cast(pl.Int64).to_list(), values.to_list()


def _metric_info(doc: Mapping[str, Any], run: Run | None) -> tuple[list[str], list[float]]:
    if run is not None:
        return run.metric_ids, [float(m.threshold) for m in run.metrics]
    names = list(doc.get("metrics") or {})
    thresholds = [
        float(doc["metrics"][n]["threshold"])
        if doc["metrics"][n].get("threshold") is not None
        else 0.5
        for n in names
    ]
    return names, thresholds


def explorer_data(
    doc: Mapping[str, Any],
    *,
    run: Run | None = None,
    include_evidence: bool = False,
    limit: int = EXPLORER_LIMIT,
) -> dict[str, Any]:
    """The explorer's columnar data: one array per field, one entry per execution.

    Args:
        doc: the report document (its ``samples`` and ``failures`` are read when ``run`` is
            not given; a report JSON holds no inputs or expected outputs).
        run: the run itself, read column by column (inputs and expected outputs included).
        include_evidence: also ship the sample metadata and the retrieved contexts' text.
        limit: the most executions kept (failing and errored ones first).

    Returns:
        A JSON-ready dict: ``metrics`` and ``thresholds``; per execution ``id``, ``rep``,
        ``tags`` (indices into ``tag_names``), ``input``, ``expected``, ``actual``; per metric
        ``score`` (null where not scored), ``error`` and ``details`` (indices into ``errors``
        and ``detail_texts``); optional ``trajectory``, ``contexts`` (text, or only
        ``context_counts`` without evidence) and ``metadata``; ``total`` and ``shown``.
    """
    execs, scores, extra = _from_run(run) if run is not None else _from_doc(doc)
    if run is not None and "trajectory" not in extra:
        found = _doc_trajectories(doc, execs)
        if found is not None:
            extra["trajectory"] = found
    metrics, thresholds = _metric_info(doc, run)
    execs = execs.with_row_index("_pos")
    keyed = scores.filter(pl.col(C.METRIC).is_in(metrics)).join(
        execs.select(C.SAMPLE_ID, C.REPETITION, "_pos"), on=[C.SAMPLE_ID, C.REPETITION]
    )
    threshold = pl.DataFrame({C.METRIC: metrics, "_t": thresholds})
    bad = (
        keyed.join(threshold, on=C.METRIC)
        .group_by("_pos")
        .agg((pl.col(C.ERROR).is_not_null() | (pl.col(C.SCORE) < pl.col("_t"))).any().alias("_bad"))
    )
    total = execs.height
    keep = execs.select("_pos")
    if total > limit:
        keep = (
            keep.join(bad, on="_pos", how="left")
            .sort(pl.col("_bad").fill_null(False), descending=True, maintain_order=True)
            .head(limit)
            .sort("_pos")
            .select("_pos")
        )
    kept = keep.get_column("_pos")
    execs = execs.filter(pl.col("_pos").is_in(kept.implode()))
    n = execs.height
    new_pos = keep.with_row_index("_row")
    keyed = keyed.join(new_pos, on="_pos")
    tag_names = execs.get_column(C.TAGS).explode().drop_nulls().unique().sort().to_list()
    index = {t: i for i, t in enumerate(tag_names)}
    tags = (
        execs.get_column(C.TAGS)
        .list.eval(pl.element().replace_strict(index, return_dtype=pl.Int64))
        .to_list()
    )
    errors_codes, errors = _codes(keyed.get_column(C.ERROR))
    keyed = _referenced(keyed, execs)
    details_codes, detail_texts = _codes(keyed.get_column("details").replace("{}", None))
    keyed = keyed.with_columns(
        pl.Series("_e", errors_codes, dtype=pl.Int64),
        pl.Series("_d", details_codes, dtype=pl.Int64),
        pl.col(C.SCORE).round(6),
    )
    score: dict[str, list[Any]] = {}
    error: dict[str, list[Any]] = {}
    detail: dict[str, list[Any]] = {}
    base = pl.DataFrame({"_row": pl.int_range(0, n, eager=True, dtype=pl.UInt32)})
    for name in metrics:  # per metric, each a whole column
        part = base.join(keyed.filter(pl.col(C.METRIC) == name), on="_row", how="left").sort("_row")
        score[name] = part.get_column(C.SCORE).to_list()
        error[name] = part.get_column("_e").to_list()
        detail[name] = part.get_column("_d").to_list()
    data: dict[str, Any] = {
        "total": total,
        "shown": n,
        "metrics": metrics,
        "thresholds": thresholds,
        "id": execs.get_column(C.SAMPLE_ID).to_list(),
        "rep": execs.get_column(C.REPETITION).to_list(),
        "tag_names": tag_names,
        "tags": tags,
        "input": execs.get_column("input").to_list(),
        "expected": execs.get_column("expected").to_list(),
        "actual": execs.get_column("actual").to_list(),
        "score": score,
        "error": error,
        "errors": errors,
        "details": detail,
        "detail_texts": detail_texts,
        "evidence": include_evidence,
    }
    rows = kept.to_list() if total > n else None
    for name, full in extra.items():
        col = full.gather(rows) if rows is not None else full
        if name == C.METADATA:
            if include_evidence:
                data["metadata"] = col.to_list()
        elif name == "contexts" and not include_evidence:
            data["context_counts"] = col.str.json_decode(pl.List(pl.String)).list.len().to_list()
        else:
            data[name] = col.to_list()
    return data


EXPECTED_REF = "\u0001expected"
ACTUAL_REF = "\u0001actual"


def _referenced(keyed: pl.DataFrame, execs: pl.DataFrame) -> pl.DataFrame:
    """Details whose top-level text fields repeat the row's expected or actual output name
    it instead (``EXPECTED_REF``, ``ACTUAL_REF``; the page puts the text back).

    Metrics such as exact-match echo both texts in their details: shipped as they are, a
    large run's page would carry every output two or three times. Done per metric (each has
    one details shape), over whole columns.
    """
    texts = execs.select("_pos", "expected", "actual")
    parts = []
    for _, part in keyed.join(texts, on="_pos", how="left").group_by(C.METRIC, maintain_order=True):
        parts.append(_reference_part(part))
    if not parts:
        return keyed
    return pl.concat(parts).select(keyed.columns)


def _reference_part(part: pl.DataFrame) -> pl.DataFrame:
    try:
        decoded = part.get_column("details").str.json_decode(infer_schema_length=None)
    except pl.exceptions.PolarsError:  # no common shape: left as they are
        return part
    if not isinstance(decoded.dtype, pl.Struct):
        return part
    strings = [f.name for f in decoded.dtype.fields if f.dtype == pl.String]
    if not strings:
        return part
    frame = part.with_columns(decoded.alias("_dec"))
    fields = []
    for f in decoded.dtype.fields:
        v = pl.col("_dec").struct.field(f.name)
        if f.name in strings:
            v = (
                pl.when(v == pl.col("expected"))
                .then(pl.lit(EXPECTED_REF))
                .when(v == pl.col("actual"))
                .then(pl.lit(ACTUAL_REF))
                .otherwise(v)
            )
        fields.append(v.alias(f.name))
    encoded = (
        pl.when(pl.col("details").is_null())
        .then(None)
        .otherwise(pl.struct(fields).struct.json_encode())
    )
    return frame.with_columns(encoded.alias("details")).drop("_dec")


def explorer_html(data: Mapping[str, Any]) -> str:
    """The explorer section: controls, the virtual table, the detail panel, data and script."""
    shown, total = int(data["shown"]), int(data["total"])
    note = (
        f"{shown} of {total} executions (failing and errored first, then run order)"
        if shown < total
        else f"{total} executions"
    )
    return (
        f'<section class="ef-report ef-x" id="ef-explorer"><style>{EXPLORER_CSS}</style>'
        f'<h3>Sample explorer</h3><p class="ef-muted" id="ef-x-note">{escape(note)}; click a '
        "row for its input, outputs and scores.</p>"
        '<div class="ef-x-controls">'
        '<input id="ef-x-search" type="search" placeholder="search id, input, outputs" '
        'aria-label="search">'
        '<select id="ef-x-metric" aria-label="metric"><option value="">every metric</option>'
        "</select>"
        '<select id="ef-x-cohort" aria-label="cohort"><option value="">every cohort</option>'
        "</select>"
        '<select id="ef-x-status" aria-label="pass, fail or error">'
        '<option value="">pass, fail or error</option><option value="pass">pass</option>'
        '<option value="fail">fail</option><option value="error">error</option></select>'
        '<span class="ef-muted" id="ef-x-count"></span></div>'
        '<div class="ef-x-table" id="ef-x-table"><div class="ef-x-head" id="ef-x-head"></div>'
        '<div class="ef-x-scroll" id="ef-x-scroll"><div class="ef-x-spacer" id="ef-x-spacer">'
        '</div></div></div><div class="ef-x-detail" id="ef-x-detail" hidden></div>'
        '<script type="application/json" id="ef-x-data">'
        f"{script_json(data)}</script>\n<script>{EXPLORER_JS}</script></section>"
    )
