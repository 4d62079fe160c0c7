"""Comparing two runs of a dataset: row verdicts, metric and cohort deltas, statistics.

Rows are joined by ``row_hash`` (the content hash of input and expected output) when both
runs have a unique hash on every row, else by ``sample_id``. Each row gets eval-harness's
verdict: deltas are after - before, on the row's pass rate over its
repetitions and on its mean score, and the first matching rule decides:

==============================  ==========  =============================
condition                       status      confident
==============================  ==========  =============================
pass-rate delta < 0             regressed   abs(pass-rate delta) > res
score delta < -res              regressed   yes
pass-rate delta > 0             improved    abs(pass-rate delta) > res
score delta > res               improved    yes
otherwise                       stable      no
==============================  ==========  =============================

where ``res`` is the run's resolution (the smallest difference its repetitions can tell from
noise, ``precision.resolution``) unless an ``epsilon`` is given. Rows only in the new run
are ``added``, rows only in the old one ``removed``; a regressed row that always passed
before and now sometimes fails is ``newly_failing``.

The same rules judge each (row, metric) pair of the rows both runs have, on that metric's
pass rate and mean score alone (``Comparison.row_metrics``): a metric that fell from pass to
fail on a row that was already failing another metric leaves the row's verdict unchanged
(its pass rate was already 0) but is a regression of that metric. ``regressions()`` lists
the regressed pairs; ``regressed_rows()`` the regressed rows.

A change is ``confident`` only beyond the noise threshold: with one execution per row no
dispersion was measured, the resolution is 1.0 (100 points) and no change is confident, as
in eval-harness.

Beyond eval-harness, each metric's mean and pass-rate delta and the macro-F1 delta get a
seeded paired bootstrap confidence interval (pass rates over every execution, an errored one
not passing; macro-F1 over the quality metrics, as ``Run.macro_f1``), and each metric
(overall and per cohort) gets McNemar's exact test on the paired pass/fail of its rows,
Holm-corrected across all of those tests. A row passes a metric when at least half of its
executions pass it.

Runs of different datasets, or with no metric in common, cannot be compared: ``compare``
raises ``ComparisonError`` saying what differs.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

import polars as pl

from evalframe.core import _seam
from evalframe.core import schema as C
from evalframe.core._compare_tables import (
    cohort_mcnemar,
    cohort_table,
    finite_or_none,
    join_key,
    mcnemar_tests,
    metric_table,
    metric_verdicts,
    paired_counts,
    per_key_counts,
    row_verdicts,
)
from evalframe.core._errors import ComparisonError
from evalframe.core._limits import checked
from evalframe.core._precision import precision_block, round6
from evalframe.core._stats import bootstrap_deltas, holm

if TYPE_CHECKING:
    from evalframe.core._run import Run
    from evalframe.views.plot import ComparisonPlot

__all__ = ["COMPARISON_SCHEMA_VERSION", "Comparison", "ComparisonError", "compare"]

COMPARISON_SCHEMA_VERSION: Final = "evalframe.comparison.v1"
_ROW_STATS: Final = ("pass_rate", "score_mean", "score_stddev", "repetitions")


@dataclass(frozen=True, eq=False)
class Comparison:
    """The difference between two runs of one dataset.

    Attributes:
        before, after: the runs (after is the one being judged).
        label: how the reference (before) was named, e.g. ``baseline`` or a run id.
        join_key: ``row_hash`` or ``sample_id``.
        resolution: the noise threshold used for row verdicts.
        resolution_is_statistical: False when it was given as ``epsilon``.
        rows: one row per joined key: key, sample_id, status, confident, newly_failing,
            pass_rate_delta, score_delta, and before_*/after_* pass_rate, score_mean,
            score_stddev and repetitions.
        row_metrics: one row per (paired row, metric) scored in both runs: key, sample_id,
            metric, status, confident, newly_failing, deltas, and before/after pass_rate
            and score_mean of that metric on that row.
        metrics: one row per metric: before/after mean and pass rate, deltas, paired
            bootstrap intervals, McNemar counts and p-values (raw and Holm-adjusted), and
            ``ci_reason`` where an interval is missing (fewer than two paired rows have no
            spread to resample: no interval, never one of zero width).
        cohorts: the same per (cohort, metric), without bootstrap intervals.
        macro_f1: before, after, delta and the paired interval (``ci_reason`` when missing).
        seed, n_bootstrap, confidence: the statistics' settings.
    """

    before: Run
    after: Run
    label: str
    join_key: Literal["row_hash", "sample_id"]
    resolution: float
    resolution_is_statistical: bool
    rows: pl.DataFrame
    row_metrics: pl.DataFrame
    metrics: pl.DataFrame
    cohorts: pl.DataFrame
    macro_f1: dict[str, Any]
    pass_rate: dict[str, float]
    seed: int
    n_bootstrap: int
    confidence: float

    @property
    def counts(self) -> dict[str, int]:
        """Rows per verdict (regressed, regressed_confident, newly_failing, improved, ...)
        and regressed (row, metric) pairs (regressed_pairs, regressed_pairs_confident)."""
        status = self.rows.get_column("status")
        regressed = self.rows.filter(status == "regressed")
        pairs = self.row_metrics.filter(pl.col("status") == "regressed")
        return {
            "regressed": regressed.height,
            "regressed_confident": int(regressed.get_column("confident").sum()),
            "newly_failing": int(regressed.get_column("newly_failing").sum()),
            "improved": int((status == "improved").sum()),
            "stable": int((status == "stable").sum()),
            "added": int((status == "added").sum()),
            "removed": int((status == "removed").sum()),
            "compared": int(status.is_in(["regressed", "improved", "stable"]).sum()),
            "regressed_pairs": pairs.height,
            "regressed_pairs_confident": int(pairs.get_column("confident").sum()),
        }

    def regressions(self, *, confident_only: bool = False) -> pl.DataFrame:
        """Regressed (row, metric) pairs, worst first (largest pass-rate drop, then score drop).

        Columns: key, sample_id, metric, status, confident, newly_failing, pass_rate_delta,
        score_delta, before/after pass_rate and score_mean (of that metric on that row).
        """
        out = self.row_metrics.filter(pl.col("status") == "regressed")
        if confident_only:
            out = out.filter(pl.col("confident"))
        return out.sort(["pass_rate_delta", "score_delta", C.SAMPLE_ID, C.METRIC], nulls_last=True)

    def regressed_rows(self, *, confident_only: bool = False) -> pl.DataFrame:
        """Regressed rows by eval-harness's row verdict, worst first."""
        out = self.rows.filter(pl.col("status") == "regressed")
        if confident_only:
            out = out.filter(pl.col("confident"))
        return out.sort(["pass_rate_delta", "score_delta"], nulls_last=True)

    def to_dict(self) -> dict[str, Any]:
        """The ``evalframe.comparison.v1`` document (a superset of eval-harness's)."""
        return {
            "schema_version": COMPARISON_SCHEMA_VERSION,
            "dataset": self.after.dataset.name,
            "run": _run_ref(self.after),
            "reference": {**_run_ref(self.before), "label": self.label},
            "comparable": True,
            "join_key": self.join_key,
            "incomparable_reason": None,
            "resolution": round6(self.resolution),
            "resolution_is_statistical": self.resolution_is_statistical,
            "macro_f1_delta": _r6(self.macro_f1["delta"]),
            "pass_rate_delta": _r6(self.pass_rate["delta"]),
            "counts": self.counts,
            "macro_f1": {k: _r6(v) if k != "ci_reason" else v for k, v in self.macro_f1.items()},
            "pass_rate": {k: _r6(v) for k, v in self.pass_rate.items()},
            "statistics": {
                "bootstrap": "paired, percentile interval",
                "n_bootstrap": self.n_bootstrap,
                "seed": self.seed,
                "confidence": self.confidence,
                "test": "mcnemar-exact",
                "correction": "holm",
                "row_passes_metric": "at least half of its scored repetitions pass",
            },
            "metrics": [_rounded(r) for r in self.metrics.iter_rows(named=True)],
            "cohorts": [_rounded(r) for r in self.cohorts.iter_rows(named=True)],
            "rows": [_row_payload(r, self.resolution) for r in self.rows.iter_rows(named=True)],
            "regressions": [
                _rounded({k: v for k, v in r.items() if k != "key"})
                for r in self.regressions().iter_rows(named=True)
            ],
        }

    def to_json(self, *, indent: int | None = 2) -> str:
        """The comparison document as JSON."""
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False) + "\n"

    def to_markdown(self, *, max_rows: int = 20) -> str:
        """A Markdown summary: counts, metric deltas, cohorts that moved, regressed rows."""
        return _seam.comparison_markdown.call(self, max_rows=max_rows)

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def _repr_html_(self) -> str:
        return _seam.comparison_html.call(self)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self) if cycle else _seam.comparison_text.call(self))

    @property
    def plot(self) -> ComparisonPlot:
        """Charts of this comparison: ``comparison.plot.deltas()`` (``viz`` extra)."""
        return _seam.comparison_plot.call(self)

    def __repr__(self) -> str:
        c = self.counts
        delta = self.macro_f1["delta"]
        return (
            f"Comparison({self.before.run_id} -> {self.after.run_id}: "
            f"{c['regressed']} regressed, {c['improved']} improved, {c['stable']} stable, "
            f"{c['added']} added, {c['removed']} removed; macro-F1 delta "
            f"{'n/a' if delta is None else format(delta, '+.4f')})"
        )


def _interval_reason(paired: int, n_bootstrap: int) -> str:
    """Why a bootstrap interval is missing."""
    if n_bootstrap == 0:
        return "not computed: n_bootstrap is 0"
    if paired < 2:
        return f"undefined: {paired} paired row(s), no spread to resample"
    return "undefined: no paired row scored on both sides"


def _rows(run: Run) -> str:
    n = run.dataset.height
    return f"{n} row" if n == 1 else f"{n} rows"


def _metrics_text(run: Run) -> str:
    return ", ".join(run.metric_ids) or "none"


def _comparable(before: Run, after: Run, *, allow_other_dataset: bool) -> None:
    """Raise ``ComparisonError``, in one paragraph naming what differs, for runs of different
    datasets (unless allowed) or with no metric in common."""
    other = before.dataset.name != after.dataset.name
    if other and not allow_other_dataset:
        raise ComparisonError(
            f"Cannot compare run {after.run_id} with the reference {before.run_id}: they are "
            f"runs of different datasets: the run is of dataset '{after.dataset.name}' "
            f"({_rows(after)}), the reference of dataset '{before.dataset.name}' "
            f"({_rows(before)}), so their rows and numbers do not correspond. Compare runs of "
            "one dataset (or pass allow_other_dataset=True when the dataset was only renamed)."
        )
    if not set(after.metric_ids) & set(before.metric_ids):
        raise ComparisonError(
            f"Cannot compare run {after.run_id} with the reference {before.run_id}: they share "
            f"no metric (the run scored {_metrics_text(after)}; the reference scored "
            f"{_metrics_text(before)}), so there is no score to compare. Rescore one with the "
            "other's metrics (evalframe rescore -m METRIC), or compare runs of the same metrics."
        )


def _run_ref(run: Run) -> dict[str, Any]:
    return {"id": run.run_id, "name": run.name, "macro_f1": run.macro_f1}


def _r6(x: float | None) -> float | None:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return None
    return round6(float(x))


def _rounded(row: dict[str, Any]) -> dict[str, Any]:
    return {k: _r6(v) if isinstance(v, float) else v for k, v in row.items()}


def _row_payload(r: dict[str, Any], resolution: float) -> dict[str, Any]:
    def side(prefix: str) -> dict[str, Any] | None:
        if r[f"{prefix}_repetitions"] is None:
            return None
        return {
            "pass_rate": _r6(r[f"{prefix}_pass_rate"]),
            "score_mean": _r6(r[f"{prefix}_score_mean"]),
            "score_stddev": _r6(r[f"{prefix}_score_stddev"]),
            "repetitions": r[f"{prefix}_repetitions"],
        }

    return {
        "row_hash": r["row_hash"],
        "sample_id": r[C.SAMPLE_ID],
        "status": r["status"],
        "confident": r["confident"],
        "newly_failing": r["newly_failing"],
        "resolution": round6(resolution),
        "pass_rate_delta": _r6(r["pass_rate_delta"]),
        "score_delta": _r6(r["score_delta"]),
        "before": side("before"),
        "after": side("after"),
    }


# --- the comparison ------------------------------------------------------------------------


def compare(
    before: Run,
    after: Run,
    *,
    epsilon: float | None = None,
    seed: int = 0,
    n_bootstrap: int = 2000,
    confidence: float = 0.95,
    label: str | None = None,
    allow_other_dataset: bool = False,
) -> Comparison:
    """Compare run ``after`` against the reference run ``before``.

    Args:
        before: the reference (a baseline, the previous run).
        after: the run being judged.
        epsilon: a fixed noise threshold in [0, 1] for row verdicts; default: the resolution
            of ``after``'s repetitions.
        seed: seed of the bootstrap's generator, 0 to 2**32 - 1 (results are reproducible).
        n_bootstrap: bootstrap resamples, 0 (no intervals) to 1,000,000.
        confidence: the intervals' confidence level.
        label: how to name the reference in messages (default: its run id).
        allow_other_dataset: compare runs whose datasets have different names.

    Returns:
        The ``Comparison``.

    Raises:
        ComparisonError: the runs are of different datasets, or an option is out of range.

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records(
        ...     [{"id": f"q{i}", "input": {"q": i}, "expected_output": "yes"} for i in range(3)],
        ...     name="yn")
        >>> old = ef.evaluate(ds, outputs={"q0": "yes", "q1": "yes", "q2": "no"},
        ...                   metrics=["exact-match"])
        >>> new = ef.evaluate(ds, outputs={"q0": "yes", "q1": "no", "q2": "yes"},
        ...                   metrics=["exact-match"])
        >>> from evalframe.core._compare import compare
        >>> c = compare(old, new)
        >>> c.rows.select("sample_id", "status", "newly_failing").sort("sample_id")
        shape: (3, 3)
        ┌───────────┬───────────┬───────────────┐
        │ sample_id ┆ status    ┆ newly_failing │
        │ ---       ┆ ---       ┆ ---           │
        │ str       ┆ str       ┆ bool          │
        ╞═══════════╪═══════════╪═══════════════╡
        │ q0        ┆ stable    ┆ false         │
        │ q1        ┆ regressed ┆ true          │
        │ q2        ┆ improved  ┆ false         │
        └───────────┴───────────┴───────────────┘
    """
    _comparable(before, after, allow_other_dataset=allow_other_dataset)
    if epsilon is not None and not 0.0 <= epsilon <= 1.0:
        raise ComparisonError(f"epsilon must be in [0, 1]; got {epsilon}.")
    if not 0.0 < confidence < 1.0:
        raise ComparisonError(f"confidence must be in (0, 1); got {confidence}.")
    try:
        checked(n_bootstrap, "bootstrap", "n_bootstrap")
        checked(seed, "seed")
    except ValueError as exc:
        raise ComparisonError(str(exc)) from None
    rows_a, rows_b = before.sample_aggregates, after.sample_aggregates
    key = join_key(rows_a, rows_b)
    block_a = precision_block(rows_a, before.frame.height)
    block_b = precision_block(rows_b, after.frame.height)
    res = float(epsilon) if epsilon is not None else float(block_b["resolution"])

    def side(rows: pl.DataFrame, prefix: str) -> pl.DataFrame:
        return rows.select(
            pl.col(key).alias("key"),
            pl.col(C.SAMPLE_ID).alias(f"{prefix}_sample_id"),
            pl.col(C.ROW_HASH).alias(f"{prefix}_row_hash"),
            *[pl.col(s).alias(f"{prefix}_{s}") for s in _ROW_STATS],
        )

    joined = side(rows_b, "after").join(
        side(rows_a, "before"), on="key", how="full", coalesce=True, maintain_order="left_right"
    )
    verdicts = row_verdicts(joined, res).select(
        "key",
        pl.coalesce("after_sample_id", "before_sample_id").alias(C.SAMPLE_ID),
        pl.coalesce("after_row_hash", "before_row_hash").alias(C.ROW_HASH),
        "status",
        "confident",
        "newly_failing",
        "pass_rate_delta",
        "score_delta",
        *[f"{p}_{s}" for p in ("before", "after") for s in _ROW_STATS],
    )

    # Paired statistics, over rows present on both sides.
    keys_a = rows_a.select(C.SAMPLE_ID, pl.col(key).alias("key"))
    keys_b = rows_b.select(C.SAMPLE_ID, pl.col(key).alias("key"))
    paired = verdicts.filter(pl.col("status").is_in(["regressed", "improved", "stable"]))
    paired_keys = paired.get_column("key")
    ids_a, ids_b = before.metric_ids, after.metric_ids
    common = [m for m in ids_b if m in ids_a]
    per_key_a, per_key_b = per_key_counts(before, keys_a), per_key_counts(after, keys_b)
    counts = paired_counts(per_key_a, per_key_b, paired_keys, common)
    pair_verdicts = metric_verdicts(
        paired.select("key", C.SAMPLE_ID),
        counts,
        common,
        res,
    )
    quality = [after.dimension_of.get(m) != "safety" for m in common]
    boot = bootstrap_deltas(
        counts, quality, n_resamples=n_bootstrap, seed=seed, confidence=confidence
    )
    tests = mcnemar_tests(counts)
    cohort_tests = cohort_mcnemar(before, after, key, paired_keys, counts, common)

    adjusted = holm([t["p_value"] for t in tests] + [t["p_value"] for t in cohort_tests])
    for t, p in zip(tests + cohort_tests, adjusted, strict=True):
        t["p_holm"] = p

    why = _interval_reason(paired_keys.len(), n_bootstrap)
    metrics = metric_table(before, after, common, boot, tests).with_columns(
        pl.when(pl.col("mean_ci_low").is_null() | pl.col("pass_rate_ci_low").is_null())
        .then(pl.lit(why))
        .alias("ci_reason")
    )
    cohorts = cohort_table(before, after, cohort_tests)
    m = len(common)
    macro_a, macro_b = before.macro_f1, after.macro_f1
    macro: dict[str, Any] = {
        "before": macro_a,
        "after": macro_b,
        "delta": None if macro_a is None or macro_b is None else macro_b - macro_a,
        "paired_delta": finite_or_none(boot["point"][2 * m]),
        "ci_low": finite_or_none(boot["low"][2 * m]),
        "ci_high": finite_or_none(boot["high"][2 * m]),
    }
    macro["ci_reason"] = why if macro["ci_low"] is None else None
    return Comparison(
        before=before,
        after=after,
        label=label or before.run_id,
        join_key=key,
        resolution=res,
        resolution_is_statistical=epsilon is None,
        rows=verdicts,
        row_metrics=pair_verdicts,
        metrics=metrics,
        cohorts=cohorts,
        macro_f1=macro,
        pass_rate={
            "before": float(block_a["pass_rate"]),
            "after": float(block_b["pass_rate"]),
            "delta": float(block_b["pass_rate"]) - float(block_a["pass_rate"]),
        },
        seed=seed,
        n_bootstrap=n_bootstrap,
        confidence=confidence,
    )
