"""Reports: ``evalframe.report.v1`` JSON (a superset of eval-harness.report.v1) and Markdown.

``Report`` is a ``dict`` holding the JSON document, with ``to_json``, ``to_markdown`` and an
HTML representation for Jupyter. Keys keep eval-harness's names, order and meaning; the
additions are ``run_id``, ``run_name``, ``evalframe_version``, ``metric_ids`` and, per
metric, ``n``, ``n_scored``, ``n_errors``, ``threshold``, ``family`` and ``dimension``; and,
last, ``dimensions`` (per-dimension roll-ups) and ``safety_failures`` (every failing or
errored execution of a safety-dimension metric).
Citation evidence text and API keys never reach a report: metrics keep them out of their
details and providers never record keys.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

import polars as pl

from evalframe._version import __version__
from evalframe.core import aggregate
from evalframe.core import schema as C
from evalframe.core._precision import precision_block

if TYPE_CHECKING:
    from evalframe.core._run import Run

__all__ = ["REPORT_SCHEMA_VERSION", "Report", "build_report"]

REPORT_SCHEMA_VERSION = "evalframe.report.v1"


class Report(dict[str, Any]):
    """A run's report as a JSON-ready dict, renderable as JSON, Markdown or HTML."""

    def to_json(self, *, indent: int | None = 2) -> str:
        """Pretty JSON with unescaped Unicode and slashes."""
        return json.dumps(self, indent=indent, ensure_ascii=False, allow_nan=False) + "\n"

    def to_markdown(self) -> str:
        """Markdown in eval-harness's 1.6 layout."""
        from evalframe.views._markdown import render

        return render(self)

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


def _num(x: Any) -> float:
    """Null (no scored rows) reads as 0.0 in the eval-harness report fields."""
    return 0.0 if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def _metric_block(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "mean": _num(row["mean"]),
        "p50": _num(row["p50"]),
        "p95": _num(row["p95"]),
        "pass_rate": _num(row["pass_rate"]),
        "n": row["n"],
        "n_scored": row["n_scored"],
        "n_errors": row["n_errors"],
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


def _samples(run: Run) -> list[dict[str, Any]]:
    scored = (
        run.scores.filter(pl.col(C.ERROR).is_null())
        .group_by(C.SAMPLE_ID, C.REPETITION, maintain_order=True)
        .agg(pl.col(C.METRIC), pl.col(C.SCORE), pl.col("details").fill_null("{}"))
    )
    rows = run.frame.select(
        C.SAMPLE_ID, C.ROW_HASH, C.REPETITION, C.TAGS, C.ACTUAL_OUTPUT, C.METADATA
    ).join(scored, on=[C.SAMPLE_ID, C.REPETITION], how="left", maintain_order="left")
    rows = rows.sort(C.REPETITION, maintain_order=True)
    # One parse of every details document, not one json.loads call per (sample, metric).
    texts = rows.get_column("details").explode().drop_nulls()
    details = iter(json.loads("[" + ",".join(texts) + "]"))
    out = []
    for r in rows.iter_rows(named=True):  # report rendering: one JSON object per execution
        adversarial = None
        if '"adversarial"' in r[C.METADATA]:
            meta = json.loads(r[C.METADATA]).get("adversarial")
            adversarial = _normalise_adversarial(json.dumps(meta)) if meta is not None else None
        out.append(
            {
                "id": r[C.SAMPLE_ID],
                "row_hash": r[C.ROW_HASH],
                "repetition": r[C.REPETITION],
                "tags": r[C.TAGS] or [],
                "adversarial": adversarial,
                "actual_output": r[C.ACTUAL_OUTPUT],
                "scores": {
                    m: {"score": s, "details": next(details)}
                    for m, s in zip(r[C.METRIC] or [], r[C.SCORE] or [], strict=True)
                },
            }
        )
    return out


def _r6(expr: pl.Expr) -> pl.Expr:
    """Six places, half away from zero (PHP ``round``), over a whole column."""
    return expr.round(6, mode="half_away_from_zero")


def _sample_aggregates(run: Run, rows: pl.DataFrame) -> list[dict[str, Any]]:
    score = pl.col(C.SCORE)
    per_metric = (
        run.scores.group_by(C.SAMPLE_ID, C.METRIC)
        .agg(
            _r6(score.mean()).alias("mean"),
            _r6(score.std(ddof=0).fill_null(0.0)).alias("stddev"),
            _r6(score.min()).alias("min"),
            _r6(score.max()).alias("max"),
            score.count().alias("observations"),
        )
        .filter(pl.col("observations") > 0)
        .sort(C.METRIC)
        .group_by(C.SAMPLE_ID, maintain_order=True)
        .agg(
            pl.col(C.METRIC).alias("_names"),
            pl.struct("mean", "stddev", "min", "max", "observations").alias("_stats"),
        )
    )
    table = rows.join(per_metric, on=C.SAMPLE_ID, how="left", maintain_order="left").select(
        pl.col(C.SAMPLE_ID).alias("id"),
        C.ROW_HASH,
        "repetitions",
        "passed",
        "errored",
        _r6(pl.col("pass_rate")).alias("pass_rate"),
        pl.struct(
            _r6(pl.col("pass_rate_low")).alias("low"),
            _r6(pl.col("pass_rate_high")).alias("high"),
            pl.lit(0.95).alias("confidence"),
        ).alias("pass_rate_ci"),
        "unstable",
        _r6(pl.col("score_mean")).alias("score_mean"),
        _r6(pl.col("score_stddev")).alias("score_stddev"),
        "_names",
        "_stats",
    )
    out = table.to_dicts()
    for entry in out:
        entry["metrics"] = dict(
            zip(entry.pop("_names") or [], entry.pop("_stats") or [], strict=True)
        )
    return out


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


def build_report(run: Run, *, samples: bool = True) -> Report:
    """Assemble the ``evalframe.report.v1`` document for a run.

    ``samples=False`` leaves the per-execution ``samples`` list empty: the costly part of a
    large run's report, and one that the Markdown and HTML renderings never show.
    """
    ids = run.metric_ids
    metrics, distributions, cohorts = metric_sections(run, _metric_block)
    rows = run.sample_aggregates
    total_executions = run.frame.height
    precision = precision_block(rows, total_executions)
    failures = run.failures.sort(C.REPETITION, maintain_order=True)
    usage = _usage_block(run.usage)
    duration = max(0.0, run.finished_at - run.started_at)
    report: dict[str, Any] = {
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
        "macro_f1": run.macro_f1,
        "cost": run.extra.get("cost"),
        "budget": run.extra.get("budget"),
        "sample_aggregates": _sample_aggregates(run, rows),
        "samples": _samples(run) if samples else [],
        "failures": [
            {
                "sample_id": f[C.SAMPLE_ID],
                "metric": f[C.METRIC],
                "error": f[C.ERROR],
                "repetition": f[C.REPETITION],
            }
            for f in failures.iter_rows(named=True)
        ],
        "dimensions": _dimensions_block(run),
        "safety_failures": _safety_failures(run),
    }
    return Report(report)


def _dimension_of(run: Run) -> dict[str, str]:
    return {m.id: m.dimension for m in run.metrics}


def _dimensions_block(run: Run) -> dict[str, Any]:
    """Per-dimension roll-ups: pooled aggregates and the mean of the per-metric ones."""
    dims = aggregate.dimensions(run.scores, _dimension_of(run), metrics=run.metric_ids)
    return {
        r["dimension"]: {
            "metrics": r["metrics"],
            "n_metrics": r["n_metrics"],
            **_metric_block(r),
            "macro_mean": _num(r["macro_mean"]),
            "macro_pass_rate": _num(r["macro_pass_rate"]),
        }
        for r in dims.iter_rows(named=True)
    }


def _safety_failures(run: Run) -> list[dict[str, Any]]:
    """Every failing or errored execution of a safety-dimension metric, none left out."""
    rows = aggregate.safety_failures(run.scores, _dimension_of(run))
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
