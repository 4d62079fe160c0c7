"""Reports: ``evalframe.report.v1`` JSON (a superset of eval-harness.report.v1) and Markdown.

``Report`` is a ``dict`` holding the JSON document, with ``to_json``, ``to_markdown`` and an
HTML representation for Jupyter. Keys keep eval-harness's names, order and meaning (its
per-metric ``pass_rate`` and its ``macro_f1`` count scored executions only; statistics over no
scored execution are null); the additions are ``status`` (first: ``INCOMPLETE: ...``,
``SAFETY FAILED: ...`` or ``COMPLETE: ...``), ``run_id``, ``run_name``, ``evalframe_version``,
``metric_ids``, ``headline`` (after ``macro_f1``: errored executions, macro-F1 over attempted
executions of the quality metrics, the safety verdict) and, per metric and cohort, ``n``,
``n_scored``, ``n_errors``, ``n_passed``, ``pass_rate_attempted``, ``threshold``, ``family``
and ``dimension``; and, last, ``dimensions`` (per-dimension roll-ups), ``safety_failures``
(every failing or errored execution of a safety-dimension metric) and ``outputs``:
``"saved"`` when the outputs were read from a file or a mapping, ``"system"`` when a system
under test produced them (so repetitions can differ), null when not recorded. Asked for,
``evidence`` comes last: the retrieved contexts of each execution (``views/_evidence.py``).
Citation evidence text, retrieved context text (unless asked for) and API keys never reach
a report: metrics keep them out of their details and providers never record keys.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

import polars as pl

from evalframe._version import __version__
from evalframe.core import aggregate
from evalframe.core import schema as C
from evalframe.core._gc import gc_paused
from evalframe.core._precision import precision_block
from evalframe.core._trajectory import TRAJECTORY_COLUMN
from evalframe.views._pending import Pending, PendingSections
from evalframe.views._trajectory_json import trajectory_blocks

if TYPE_CHECKING:
    from evalframe.core._run import Run

__all__ = [
    "REPORT_SCHEMA_VERSION",
    "Report",
    "build_report",
    "errored_samples",
    "failing_rows",
    "failing_samples",
    "headline_of",
    "per_sample_metrics",
]

ReportDoc = Mapping[str, Any]
Failed = list[tuple[str, float, float]]
Errored = list[tuple[str, str]]

REPORT_SCHEMA_VERSION = "evalframe.report.v1"


class Report(PendingSections):
    """A run's report as a JSON-ready dict, renderable as JSON, Markdown or HTML.

    A run's ``samples`` and ``sample_aggregates`` are built when first read; until then
    ``to_json`` writes them from the run's frames (see ``views/_pending.py``).
    """

    _run: Run | None = None

    def to_json(self, *, indent: int | None = 2) -> str:
        """Pretty JSON with unescaped Unicode and slashes, ending in a newline."""
        return self.to_json_bytes(indent=indent).decode("utf-8")

    def to_json_bytes(self, *, indent: int | None = 2) -> bytes:
        """``to_json`` as UTF-8 bytes, what a file receives.

        The default two-space indent is written by orjson (a large run's report is mostly
        its samples, and ``json`` takes seconds over them), then floats are put in Python's
        spelling, so the bytes are those of ``json.dumps(report, indent=2,
        ensure_ascii=False)``. Other indents go through ``json``.
        """
        if indent != 2:
            text = json.dumps(self, indent=indent, ensure_ascii=False, allow_nan=False)
            return (text + "\n").encode("utf-8")
        if self._run is not None and self.pending():
            from evalframe.views._report_json import report_json_parts

            return b"".join(report_json_parts(self._run, head=self))
        import orjson

        data = orjson.dumps(self, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
        return _python_floats(data)

    def to_markdown(self, *, max_rows: int = 20) -> str:
        """Markdown in eval-harness's 1.6 layout, listing at most ``max_rows`` failing samples."""
        from evalframe.views._markdown import render

        return render(self, max_rows=max_rows)

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def _repr_html_(self) -> str:
        from evalframe.views._html import report_html

        return report_html(self)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        from evalframe.views._html import report_text

        p.text(repr(self) if cycle else report_text(self))

    def to_html(self, *, charts: Literal["auto", "vega", "svg", "none"] = "auto") -> str:
        """One self-contained HTML page: the tables and charts, no network requests.

        ``charts="auto"`` embeds interactive charts when the ``viz`` extra is installed.
        """
        from evalframe.views._html import page

        return page(self, charts=charts)

    def __repr__(self) -> str:
        return (
            f"Report(dataset={self.get('dataset')!r}, run_id={self.get('run_id')!r}, "
            f"macro_f1={self.get('macro_f1')!r})"
        )


# orjson spells floats below 1e-4 differently from Python's repr: 0.00003 and 2.5e-7 where
# json writes 3e-05 and 2.5e-07. In indented output a number is preceded by a space and
# followed by a newline (or a comma and a newline), which never happens inside a string.
_FIXED = re.compile(rb"0\.0000\d+(?=,?\n)")
_EXPONENT = re.compile(rb"e-\d+(?=,?\n)")
_NUMBER_START = re.compile(rb"-?[\d.]*$")


def _python_floats(data: bytes) -> bytes:
    """Rewrite orjson's spelling of floats below 1e-4 as Python's ``repr``."""
    edits: dict[int, tuple[int, bytes]] = {}
    for pattern in (_FIXED, _EXPONENT):
        for m in pattern.finditer(data):
            head = _NUMBER_START.search(data, max(0, m.start() - 32), m.start())
            start = head.start() if head is not None else m.start()
            if start == 0 or data[start - 1] != 0x20:  # not a whole value: part of a string
                continue
            if pattern is _EXPONENT and not data[start : m.start()].strip(b"-"):
                continue  # "e-5" with no mantissa is no number
            edits[start] = (m.end(), repr(float(data[start : m.end()])).encode("ascii"))
    if not edits:
        return data
    out: list[bytes] = []
    last = 0
    for start in sorted(edits):
        end, text = edits[start]
        out += [data[last:start], text]
        last = end
    out.append(data[last:])
    return b"".join(out)


def _value(x: Any) -> float | None:
    """A statistic as a float, or None where it is undefined (nothing scored)."""
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def _metric_block(row: dict[str, Any]) -> dict[str, Any]:
    """A metric's aggregates: eval-harness's ``mean``, ``p50``, ``p95`` and ``pass_rate``
    (over scored executions, as eval-harness counts it), then evalframe's counts and
    ``pass_rate_attempted`` (errored executions count as not passed). Null where nothing
    was scored."""
    return {
        "mean": _value(row["mean"]),
        "p50": _value(row["p50"]),
        "p95": _value(row["p95"]),
        "pass_rate": _value(row["pass_rate_scored"]),
        "n": row["n"],
        "n_scored": row["n_scored"],
        "n_errors": row["n_errors"],
        "n_passed": row["n_passed"],
        "pass_rate_attempted": _value(row["pass_rate"]),
    }


def _usage_block(usage: pl.DataFrame) -> dict[str, Any]:
    fields = ("prompt_tokens", "completion_tokens", "total_tokens", "cost_usd")
    # ``reported`` counts figures the provider's reply carried; ``derived`` those evalframe
    # computed (a cost from the price table, the latency it measured), named per call in
    # the usage frame's ``derived`` list.
    reported = dict.fromkeys((*fields, "latency_ms"), 0)
    derived = dict.fromkeys(("cost_usd", "latency_ms"), 0)
    totals: dict[str, Any] = dict.fromkeys(fields, 0)
    totals["cost_usd"] = 0.0
    latency = {"count": 0, "total": 0.0, "mean": 0.0, "max": 0.0}
    observations = 0
    if usage.height:
        present = [f for f in (*fields, "latency_ms") if f in usage.columns]
        if present:
            observations = usage.filter(pl.any_horizontal(pl.col(present).is_not_null())).height
        marks = (
            usage.get_column("derived")
            if "derived" in usage.columns
            else pl.Series([[]] * usage.height, dtype=pl.List(pl.String))
        )
        for f in present:
            col = usage.get_column(f).drop_nulls()
            computed = int((usage.get_column(f).is_not_null() & marks.list.contains(f)).sum())
            reported[f] = col.len() - computed
            if f in derived:
                derived[f] = computed
            if f == "latency_ms":
                if col.len():
                    total, peak = (
                        col.to_frame()
                        .select(pl.all().sum().alias("total"), pl.all().max().alias("peak"))
                        .row(0)
                    )
                    latency = {
                        "count": col.len(),
                        "total": float(total),
                        "mean": float(total) / col.len(),
                        "max": float(peak),
                    }
            elif f == "cost_usd":
                totals[f] = float(col.sum()) if col.len() else 0.0
            else:
                totals[f] = int(col.sum()) if col.len() else 0
    return {
        "observations": observations,
        **totals,
        "reported": reported,
        "derived": derived,
        "latency_ms": latency,
    }


def _adversarial(
    frame: pl.DataFrame, scores: pl.DataFrame, metric_ids: list[str]
) -> dict[str, Any]:
    """The adversarial coverage block, from ``metadata.adversarial``."""
    empty: dict[str, Any] = {"total_samples": 0, "categories": [], "compliance_frameworks": []}
    block = frame.select(
        C.SAMPLE_ID,
        C.REPETITION,
        pl.col(C.METADATA).str.json_path_match("$.adversarial").alias("a"),
    ).filter(pl.col("a").is_not_null())
    if block.height == 0:
        return empty
    rank = {"low": 1, "medium": 2, "high": 3, "critical": 4}
    categories: dict[str, dict[str, Any]] = {}
    frameworks: dict[str, dict[str, Any]] = {}
    members: dict[str, set[tuple[str, int]]] = {}
    for sid, rep, raw in block.iter_rows():  # only adversarial rows, a handful per dataset
        info = _normalise_adversarial(raw)
        if info is None:
            continue
        cat = categories.setdefault(
            info["category"],
            {
                "category": info["category"],
                "label": info["label"],
                "severity": info["severity"],
                "sample_count": 0,
                "compliance_frameworks": set(),
            },
        )
        cat["sample_count"] += 1
        sev = info["severity"]
        if sev is not None:
            cur = cat["severity"]
            if cur is None or (rank.get(sev.lower(), 0), cur) > (rank.get(cur.lower(), 0), sev):
                cat["severity"] = sev
        for fw in info["compliance_frameworks"]:
            cat["compliance_frameworks"].add(fw)
            entry = frameworks.setdefault(
                fw, {"framework": fw, "sample_count": 0, "categories": set()}
            )
            entry["sample_count"] += 1
            entry["categories"].add(info["category"])
        members.setdefault(info["category"], set()).add((sid, rep))
    out_categories = []
    for key in sorted(categories):
        cat = categories[key]
        keys = pl.DataFrame(list(members[key]), schema=[C.SAMPLE_ID, C.REPETITION], orient="row")
        subset = scores.join(keys, on=[C.SAMPLE_ID, C.REPETITION], how="semi")
        summary = aggregate.summarize(subset, metrics=metric_ids)
        cat["compliance_frameworks"] = sorted(cat["compliance_frameworks"])
        cat["metrics"] = {r["metric"]: _metric_block(r) for r in summary.iter_rows(named=True)}
        out_categories.append(cat)
    out_frameworks = [
        {**frameworks[k], "categories": sorted(frameworks[k]["categories"])}
        for k in sorted(frameworks)
    ]
    total = sum(c["sample_count"] for c in out_categories)
    return {
        "total_samples": total,
        "categories": out_categories,
        "compliance_frameworks": out_frameworks,
    }


def _normalise_adversarial(raw: str) -> dict[str, Any] | None:
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("category"), str):
        return None
    category = value["category"].strip(" \t\n\r\0\x0b")
    if not category:
        return None
    label = value.get("label")
    severity = value.get("severity")
    fws = value.get("compliance_frameworks")
    return {
        "category": category,
        "label": label if isinstance(label, str) and label.strip() else category,
        "severity": severity if isinstance(severity, str) and severity.strip() else None,
        "compliance_frameworks": sorted({f for f in fws if isinstance(f, str) and f})
        if isinstance(fws, list)
        else [],
    }


def _parse_many(texts: pl.Series) -> list[Any]:
    """Parse a column of JSON documents with one call, not one per row."""
    import orjson

    joined = texts.str.join(",").item() if texts.len() else ""
    parsed: list[Any] = orjson.loads("[" + (joined or "") + "]")
    return parsed


def execution_rows(run: Run) -> pl.DataFrame:
    """The executions in repetition order, ``_pos`` numbering them, with what the report
    shows of each."""
    return (
        run.frame.select(
            C.SAMPLE_ID,
            C.ROW_HASH,
            C.REPETITION,
            C.TAGS,
            C.ACTUAL_OUTPUT,
            C.METADATA,
            pl.col(f"^{TRAJECTORY_COLUMN}$"),
        )
        .sort(C.REPETITION, maintain_order=True)
        .with_row_index("_pos")
    )


def _executions(run: Run) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The executions in repetition order (``_pos`` numbers them), and their scored rows.

    The scored rows carry each execution's ``_pos`` and come in that order; missing details
    read as ``{}``.
    """
    rows = execution_rows(run)
    scored = (
        run.scores.filter(pl.col(C.ERROR).is_null())
        .select(C.SAMPLE_ID, C.REPETITION, C.METRIC, C.SCORE, pl.col("details").fill_null("{}"))
        .join(
            rows.select(C.SAMPLE_ID, C.REPETITION, "_pos"),
            on=[C.SAMPLE_ID, C.REPETITION],
            how="inner",
            maintain_order="left",
        )
        .sort("_pos", maintain_order=True)
    )
    return rows, scored


def _samples(run: Run) -> list[dict[str, Any]]:
    """One object per execution, in repetition order, its scores in the run's metric order.

    Built column-wise: a Python object per execution is what the report holds, but nothing
    is read back from Polars one row at a time.
    """
    rows, scored = _executions(run)
    scores: list[dict[str, Any]] = [{} for _ in range(rows.height)]
    details = _parse_many(scored.get_column("details"))
    for pos, name, value, detail in zip(
        scored.get_column("_pos").to_list(),
        scored.get_column(C.METRIC).to_list(),
        scored.get_column(C.SCORE).to_list(),
        details,
        strict=True,
    ):
        scores[pos][name] = {"score": value, "details": detail}
    adversarial = _adversarial_of(rows.get_column(C.METADATA))
    trajectories = trajectory_blocks(rows)  # only where one was recorded, as eval-harness
    return [
        {
            "id": sid,
            "row_hash": row_hash,
            "repetition": rep,
            "tags": tags or [],
            "adversarial": adv,
            "actual_output": actual,
            **({"trajectory": trajectory} if trajectory is not None else {}),
            "scores": sc,
        }
        for sid, row_hash, rep, tags, adv, actual, trajectory, sc in zip(
            rows.get_column(C.SAMPLE_ID).to_list(),
            rows.get_column(C.ROW_HASH).to_list(),
            rows.get_column(C.REPETITION).to_list(),
            rows.get_column(C.TAGS).to_list(),
            adversarial,
            rows.get_column(C.ACTUAL_OUTPUT).to_list(),
            trajectories,
            scores,
            strict=True,
        )
    ]


def _adversarial_of(metadata: pl.Series) -> list[dict[str, Any] | None]:
    """Each row's normalised adversarial block, or None; only adversarial rows are parsed."""
    blocks = metadata.str.json_path_match("$.adversarial")
    out: list[dict[str, Any] | None] = [None] * metadata.len()
    hits = blocks.is_not_null().arg_true().to_list()
    for i, raw in zip(hits, blocks.gather(hits).to_list(), strict=True):
        out[i] = _normalise_adversarial(raw)
    return out


def _r6(expr: pl.Expr) -> pl.Expr:
    """Six places, half away from zero (PHP ``round``), over a whole column."""
    return expr.round(6, mode="half_away_from_zero")


def _columns(frame: pl.DataFrame) -> list[list[Any]]:
    return [frame.get_column(c).to_list() for c in frame.columns]


def _sample_metric_stats(run: Run, scores: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per sample and metric: the scores' mean, stddev, min, max and count, where scored.

    ``scores``: the run's score rows of some of its samples (every row of each), or all.
    """
    score = pl.col(C.SCORE)
    scores = run.scores if scores is None else scores
    if run.repetitions == 1:  # one score per sample and metric: no grouping to do
        return scores.filter(score.is_not_null()).select(
            C.SAMPLE_ID,
            C.METRIC,
            _r6(score).alias("mean"),
            pl.lit(0.0).alias("stddev"),
            _r6(score).alias("min"),
            _r6(score).alias("max"),
            pl.lit(1, pl.UInt32).alias("observations"),
        )
    return (
        scores.group_by(C.SAMPLE_ID, C.METRIC)
        .agg(
            _r6(score.mean()).alias("mean"),
            _r6(score.std(ddof=0).fill_null(0.0)).alias("stddev"),
            _r6(score.min()).alias("min"),
            _r6(score.max()).alias("max"),
            score.count().alias("observations"),
        )
        .filter(pl.col("observations") > 0)
    )


def _sample_aggregates(run: Run, rows: pl.DataFrame) -> list[dict[str, Any]]:
    per_metric = _sample_metric_stats(run).sort(C.METRIC)
    metrics: dict[str, dict[str, Any]] = {}
    for sid, name, mean, stddev, low, high, count in zip(*_columns(per_metric), strict=True):
        metrics.setdefault(sid, {})[name] = {
            "mean": mean,
            "stddev": stddev,
            "min": low,
            "max": high,
            "observations": count,
        }
    table = rows.select(
        C.SAMPLE_ID,
        C.ROW_HASH,
        "repetitions",
        "passed",
        "errored",
        _r6(pl.col("pass_rate")),
        _r6(pl.col("pass_rate_low")),
        _r6(pl.col("pass_rate_high")),
        "unstable",
        _r6(pl.col("score_mean")),
        _r6(pl.col("score_stddev")),
    )
    return [
        {
            "id": sid,
            "row_hash": row_hash,
            "repetitions": reps,
            "passed": passed,
            "errored": errored,
            "pass_rate": rate,
            "pass_rate_ci": {"low": low, "high": high, "confidence": 0.95},
            "unstable": unstable,
            "score_mean": mean,
            "score_stddev": stddev,
            "metrics": metrics.get(sid, {}),
        }
        for sid, row_hash, reps, passed, errored, rate, low, high, unstable, mean, stddev in zip(
            *_columns(table), strict=True
        )
    ]


def metric_sections(
    run: Run, block: Callable[[dict[str, Any]], dict[str, Any]], *, buckets: int = 10
) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    """The ``metrics``, ``metric_distributions`` and ``cohorts`` parts of a run's report.

    ``block`` turns a summary row into a metric's aggregates; the histograms have
    ``buckets`` bins.
    """
    by_id = {m.id: m for m in run.metrics}
    metrics = {
        r[C.METRIC]: {
            **block(r),
            "threshold": by_id[r[C.METRIC]].threshold,
            "family": by_id[r[C.METRIC]].family,
            "dimension": by_id[r[C.METRIC]].dimension,
            # only where it is not the rule, so other reports keep eval-harness's fields
            **({} if by_id[r[C.METRIC]].higher_is_better else {"higher_is_better": False}),
        }
        for r in run.summary.iter_rows(named=True)
    }
    hist = run.histograms(buckets)
    distributions = {
        m: hist.filter(pl.col(C.METRIC) == m).select("min", "max", "count").to_dicts()
        for m in run.metric_ids
    }
    cohorts = []
    for (label,), group in run.cohorts.group_by("label", maintain_order=True):
        first = group.row(0, named=True)
        cohorts.append(
            {
                "name": first["cohort"],
                "label": label,
                "is_untagged": first["is_untagged"],
                "sample_count": first["sample_count"],
                "metrics": {r[C.METRIC]: block(r) for r in group.iter_rows(named=True)},
            }
        )
    return metrics, distributions, cohorts


def build_report(run: Run, *, samples: bool = True, include_evidence: bool = False) -> Report:
    """Assemble the ``evalframe.report.v1`` document for a run.

    ``samples=False`` leaves the per-execution ``samples`` list empty: the costly part of a
    large run's report, and one that the Markdown and HTML renderings never show.
    ``include_evidence=True`` adds the ``evidence`` section (the retrieved contexts).
    """
    with gc_paused():
        return _build_report(run, samples=samples, include_evidence=include_evidence, pending=True)


def _build_report(
    run: Run,
    *,
    samples: bool,
    aggregates: bool = True,
    include_evidence: bool = False,
    pending: bool = False,
) -> Report:
    """The report; ``pending``: its per-row sections built when first read."""

    def section(build: Callable[[], list[dict[str, Any]]]) -> Any:
        if not pending:
            return build()

        def built() -> list[dict[str, Any]]:
            with gc_paused():
                return build()

        return Pending(built)

    ids = run.metric_ids
    metrics, distributions, cohorts = metric_sections(run, _metric_block)
    rows = run.sample_aggregates
    total_executions = run.frame.height
    precision = precision_block(rows, total_executions)
    failures = run.failures.sort(C.REPETITION, maintain_order=True)
    usage = _usage_block(run.usage)
    duration = max(0.0, run.finished_at - run.started_at)
    report: dict[str, Any] = {
        "status": run.status,
        "schema_version": REPORT_SCHEMA_VERSION,
        "eval_harness_schema_version": "eval-harness.report.v1",
        "run_id": run.run_id,
        "run_name": run.name,
        "evalframe_version": __version__,
        "dataset_schema_version": run.dataset.schema_version,
        "dataset": run.dataset.name,
        "started_at": round(run.started_at, 6),
        "finished_at": round(run.finished_at, 6),
        "duration_seconds": duration,
        "total_samples": run.dataset.height,
        "total_executions": total_executions,
        "repetitions": run.repetitions,
        "total_failures": failures.height,
        "pass_rate": precision["pass_rate"],
        "precision": precision,
        "metric_ids": ids,
        "metrics": metrics,
        "metric_distributions": distributions,
        "usage": usage,
        "cohorts": cohorts,
        "adversarial": _adversarial(run.frame, run.scores, ids),
        "macro_f1": aggregate.macro_f1_scored_of(run.summary),
        "headline": run.headline,
        "cost": run.extra.get("cost"),
        "budget": run.extra.get("budget"),
        "sample_aggregates": section(lambda: _sample_aggregates(run, rows)) if aggregates else [],
        "samples": section(lambda: _samples(run)) if samples else [],
        "failures": failures.select(C.SAMPLE_ID, C.METRIC, C.ERROR, C.REPETITION).to_dicts(),
        "dimensions": _dimensions_block(run),
        "safety_failures": _safety_failures(run),
        "outputs": run.extra.get("outputs"),
    }
    if include_evidence:
        from evalframe.views._evidence import evidence_block

        report["evidence"] = evidence_block(run)
    out = Report(report)
    if pending:
        out._run = run
    return out


def _dimensions_block(run: Run) -> dict[str, Any]:
    """Per-dimension roll-ups: pooled aggregates and the mean of the per-metric ones."""
    dims = aggregate.dimensions(
        run.scores, run.dimension_of, metrics=run.metric_ids, summary=run.summary
    )
    return {
        r["dimension"]: {
            "metrics": r["metrics"],
            "n_metrics": r["n_metrics"],
            **_metric_block(r),
            "macro_mean": _value(r["macro_mean"]),
            "macro_pass_rate": _value(r["macro_pass_rate"]),
        }
        for r in dims.iter_rows(named=True)
    }


def _safety_failures(run: Run) -> list[dict[str, Any]]:
    """Every failing or errored execution of a safety-dimension metric, none left out."""
    rows = aggregate.safety_failures(run.scores, run.dimension_of)
    return [
        {
            "sample_id": r[C.SAMPLE_ID],
            "repetition": r[C.REPETITION],
            "metric": r[C.METRIC],
            "score": r[C.SCORE],
            "error": r[C.ERROR],
        }
        for r in rows.iter_rows(named=True)
    ]


def per_sample_metrics(r: ReportDoc) -> dict[str, dict[str, dict[str, float]]]:
    """Per sample id and metric: the lowest and highest score and their mean and stddev.

    Read from ``sample_aggregates`` when the report has them, else from ``samples``.
    """
    out: dict[str, dict[str, dict[str, float]]] = {}
    for s in r.get("sample_aggregates") or []:
        for name, m in (s.get("metrics") or {}).items():
            if m.get("min") is not None:
                out.setdefault(s["id"], {})[name] = m
    if out or not r.get("samples"):
        return out
    seen: dict[str, dict[str, list[float]]] = {}
    for e in r["samples"]:
        for name, v in (e.get("scores") or {}).items():
            if v.get("score") is not None:
                seen.setdefault(e["id"], {}).setdefault(name, []).append(float(v["score"]))
    for sid, metrics in seen.items():
        for name, xs in metrics.items():
            mean = sum(xs) / len(xs)
            var = sum((x - mean) ** 2 for x in xs) / len(xs)
            out.setdefault(sid, {})[name] = {
                "min": min(xs), "max": max(xs), "mean": mean, "stddev": var**0.5,
            }  # fmt: skip
    return out


def lower_note(r: ReportDoc, metric: str) -> str:
    """``", lower is better"`` for a lower-is-better metric of report ``r``, else ``""``."""
    found = r["metrics"].get(metric) or {}
    return ", lower is better" if found.get("higher_is_better") is False else ""


def failing_samples(r: ReportDoc) -> list[tuple[str, Failed]]:
    """The samples scored below a metric's threshold, worst first, from a report document.

    Each is ``(sample_id, [(metric, score, threshold), ...])``: a sample's score on a metric
    is its lowest over the repetitions (its highest for a lower-is-better metric, which fails
    above its threshold); a report without thresholds (eval-harness) uses 0.5. Worst first:
    the largest distance past a threshold, then the most metrics failed, then sample id.
    Read from ``sample_aggregates`` (or ``samples``), so a report read back
    from JSON gives the same list; a run document may carry the list as ``failing_samples``.
    """
    if "failing_samples" in r:
        return list(r["failing_samples"])
    thresholds = {
        name: float(m["threshold"]) if m.get("threshold") is not None else 0.5
        for name, m in r["metrics"].items()
    }
    lower = {name for name, m in r["metrics"].items() if m.get("higher_is_better") is False}
    found: list[tuple[float, int, str, Failed]] = []
    for sid, metrics in per_sample_metrics(r).items():
        failed = []
        margins = []
        for name, m in metrics.items():
            if name not in thresholds:
                continue
            worst = float(m["max"]) if name in lower else float(m["min"])
            margin = thresholds[name] - worst if name in lower else worst - thresholds[name]
            if margin < 0:
                failed.append((name, worst, thresholds[name]))
                margins.append(margin)
        if failed:
            order = sorted(range(len(failed)), key=lambda i: margins[i])
            failed = [failed[i] for i in order]
            found.append((margins[order[0]], -len(failed), str(sid), failed))
    found.sort(key=lambda f: f[:3])
    return [(sid, failed) for _, _, sid, failed in found]


def headline_of(r: ReportDoc) -> dict[str, Any]:
    """A report's ``headline`` (see ``aggregate.headline``); derived for an eval-harness
    report, which has none: its errored executions from its per-row aggregates (else from
    its failures), its macro-F1 as it gives it, no safety verdict."""
    if r.get("headline") is not None:
        return dict(r["headline"])
    rows = r.get("sample_aggregates") or []
    if rows:
        errored = sum(int(s.get("errored") or 0) for s in rows)
    else:
        errored = len({(f.get("sample_id"), f.get("repetition", 0)) for f in r["failures"]})
    macro = r.get("macro_f1")
    return {
        "executions": int(r.get("total_executions", r.get("total_samples")) or 0),
        "errored_executions": errored,
        "incomplete": errored > 0,
        "quality_metrics": list(r["metrics"]),
        "macro_f1": macro,
        "macro_f1_scored": macro,
        "safety": None,
    }


def errored_samples(r: ReportDoc) -> list[tuple[str, Errored]]:
    """The samples with an errored execution, in the order of the report's ``failures``, each
    with its errored metrics and the first error of each (a run document may carry the list
    as ``errored_samples``)."""
    if "errored_samples" in r:
        return list(r["errored_samples"])
    found: dict[str, dict[str, str]] = {}
    for f in r["failures"]:
        found.setdefault(str(f["sample_id"]), {}).setdefault(f["metric"], str(f["error"]))
    return [(sid, list(errors.items())) for sid, errors in found.items()]


def failing_rows(r: ReportDoc) -> list[tuple[str, Errored, Failed]]:
    """Every sample that did not pass: ``(sample_id, errored metrics with their error,
    metrics scored below their threshold)``. Samples with an errored execution come first
    (an error is the worst outcome), then the rest worst first (``failing_samples``)."""
    below = dict(failing_samples(r))
    out = [(sid, errors, below.pop(sid, [])) for sid, errors in errored_samples(r)]
    return out + [(sid, [], failed) for sid, failed in below.items()]
