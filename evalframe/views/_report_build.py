"""Building the report document from a run: its sections, from the run's frames.

``build_report`` assembles the ``evalframe.report.v1`` document (``_report.Report``) for a
``Run``; a large run's per-row sections (``samples``, ``sample_aggregates``) are built when
first read (``views/_pending.py``), and ``_report_json`` streams them to JSON a slice of rows
at a time from the same helpers (``execution_rows``, ``sample_metric_stats``, ``round6``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import polars as pl

from evalframe._version import __version__
from evalframe.core import aggregate
from evalframe.core import schema as C
from evalframe.core._gc import gc_paused
from evalframe.core._precision import precision_block
from evalframe.core._trajectory import TRAJECTORY_COLUMN
from evalframe.views._pending import Pending
from evalframe.views._report import REPORT_SCHEMA_VERSION, Report
from evalframe.views._trajectory_json import trajectory_blocks

if TYPE_CHECKING:
    from evalframe.core._run import Run

__all__ = [
    "adversarial_of",
    "adversarial_rows",
    "assemble_report",
    "build_report",
    "execution_rows",
    "metric_block",
    "metric_sections",
    "round6",
    "sample_metric_stats",
]


def _value(x: Any) -> float | None:
    """A statistic as a float, or None where it is undefined (nothing scored)."""
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def metric_block(row: dict[str, Any]) -> dict[str, Any]:
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
    block = (
        frame.filter(_may_be_adversarial(pl.col(C.METADATA)))
        .select(
            C.SAMPLE_ID,
            C.REPETITION,
            pl.col(C.METADATA).str.json_path_match("$.adversarial").alias("a"),
        )
        .filter(pl.col("a").is_not_null())
    )
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
        cat["metrics"] = {r["metric"]: metric_block(r) for r in summary.iter_rows(named=True)}
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
    adversarial = adversarial_of(rows.get_column(C.METADATA))
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


def adversarial_of(metadata: pl.Series) -> list[dict[str, Any] | None]:
    """Each row's normalised adversarial block, or None; only adversarial rows are parsed."""
    out: list[dict[str, Any] | None] = [None] * metadata.len()
    for i, block in adversarial_rows(metadata):
        out[i] = block
    return out


def _may_be_adversarial(metadata: pl.Expr) -> pl.Expr:
    """Whether a metadata text may hold an ``adversarial`` key: it names it, or holds a
    ``\\u`` escape (the only way JSON can spell it otherwise). Parsing only those rows
    skips the JSON parse of every other row's metadata."""
    return metadata.str.contains("adversarial", literal=True) | metadata.str.contains(
        "\\u", literal=True
    )


def adversarial_rows(metadata: pl.Series) -> list[tuple[int, dict[str, Any]]]:
    """The rows with a valid adversarial block, and each one's block normalised."""
    candidates = metadata.to_frame("m").select(_may_be_adversarial(pl.col("m"))).to_series()
    at = candidates.arg_true()
    blocks = metadata.gather(at).str.json_path_match("$.adversarial")
    found = blocks.is_not_null()
    hits = at.filter(found).to_list()
    normalised = map(_normalise_adversarial, blocks.filter(found).to_list())
    return [(i, block) for i, block in zip(hits, normalised, strict=True) if block is not None]


def round6(expr: pl.Expr) -> pl.Expr:
    """Six places, half away from zero (PHP ``round``), over a whole column."""
    return expr.round(6, mode="half_away_from_zero")


def _columns(frame: pl.DataFrame) -> list[list[Any]]:
    return [frame.get_column(c).to_list() for c in frame.columns]


def sample_metric_stats(run: Run, scores: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per sample and metric: the scores' mean, stddev, min, max and count, where scored.

    ``scores``: the run's score rows of some of its samples (every row of each), or all.
    """
    score = pl.col(C.SCORE)
    scores = run.scores if scores is None else scores
    if run.repetitions == 1:  # one score per sample and metric: no grouping to do
        return scores.filter(score.is_not_null()).select(
            C.SAMPLE_ID,
            C.METRIC,
            round6(score).alias("mean"),
            pl.lit(0.0).alias("stddev"),
            round6(score).alias("min"),
            round6(score).alias("max"),
            pl.lit(1, pl.UInt32).alias("observations"),
        )
    return (
        scores.group_by(C.SAMPLE_ID, C.METRIC)
        .agg(
            round6(score.mean()).alias("mean"),
            round6(score.std(ddof=0).fill_null(0.0)).alias("stddev"),
            round6(score.min()).alias("min"),
            round6(score.max()).alias("max"),
            score.count().alias("observations"),
        )
        .filter(pl.col("observations") > 0)
    )


def _sample_aggregates(run: Run, rows: pl.DataFrame) -> list[dict[str, Any]]:
    per_metric = sample_metric_stats(run).sort(C.METRIC)
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
        round6(pl.col("pass_rate")),
        round6(pl.col("pass_rate_low")),
        round6(pl.col("pass_rate_high")),
        "unstable",
        round6(pl.col("score_mean")),
        round6(pl.col("score_stddev")),
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
        return assemble_report(
            run, samples=samples, include_evidence=include_evidence, pending=True
        )


def assemble_report(
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
    metrics, distributions, cohorts = metric_sections(run, metric_block)
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
    if run.extra.get("prompts"):  # which judge prompt versions produced the scores
        report["prompts"] = run.extra["prompts"]
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
            **metric_block(r),
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
