"""Several runs of one dataset side by side: each run against the first, and the row matrix.

The first run is the reference. Each other run is compared with it as ``evalframe compare``
compares two runs (paired bootstrap intervals, McNemar counts, Holm-adjusted p-values, row
verdicts), so a row's status in a column is that run's verdict against the reference. The
runs are loaded whole, as a comparison needs every row of both; the last few comparisons
are kept, so paging through a matrix does not load them again.

The paired bootstrap is nine tenths of a comparison's time (9.4 of 10.2 s for four pairs of
10,000 rows under load), and only the intervals need it: the Compare page is computed
without it (``intervals=False``: the same verdicts, counts, deltas and p-values) and fetches
the intervals after it is shown; the API computes them at once.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import polars as pl

from evalframe.core import schema as C
from evalframe.views._web._filters import CompareQuery, RequestError

if TYPE_CHECKING:
    from evalframe.core._compare import Comparison
    from evalframe.store import Store

__all__ = ["Compared", "compared", "matrix_page"]

_KEPT: Final = 4


@dataclass(frozen=True)
class Compared:
    """The runs (reference first), each other run's comparison with the reference, and the
    matrix: one row per joined row with, per run ``i``, ``output_i``, ``pass_rate_i``,
    ``score_i`` and (for ``i >= 1``) ``status_i`` (the row's verdict) and ``worse_i`` (the
    metrics that regressed on it), plus ``regressed`` (a row or one of its metrics regressed
    in some run) and ``differs`` (a verdict moved, or the outputs are not all equal)."""

    runs: list[dict[str, Any]]
    comparisons: list[Comparison]
    matrix: pl.DataFrame
    intervals: bool = True


_cache: OrderedDict[tuple[tuple[str, ...], bool], Compared] = OrderedDict()
_lock = threading.Lock()


def compared(store: Store, run_ids: tuple[str, ...], *, intervals: bool = True) -> Compared:
    """The comparison of ``run_ids`` (resolved ids, the reference first), kept for reuse;
    without ``intervals``, no bootstrap (a kept comparison with them serves too)."""
    with _lock:
        for key in ((run_ids, True), (run_ids, intervals)):
            if key in _cache:
                _cache.move_to_end(key)
                return _cache[key]
    result = _compare(store, run_ids, intervals)
    with _lock:
        _cache[(run_ids, intervals)] = result
        if intervals:  # it serves both
            _cache.pop((run_ids, False), None)
        while len(_cache) > _KEPT:
            _cache.popitem(last=False)
    return result


def _compare(store: Store, run_ids: tuple[str, ...], intervals: bool) -> Compared:
    from evalframe.core._compare import ComparisonError, compare

    runs = [store.load(rid) for rid in run_ids]
    names = {r.dataset.name for r in runs}
    if len(names) > 1:
        raise RequestError(
            400,
            "Compare runs of one dataset; these are of "
            + ", ".join(sorted(repr(n) for n in names))
            + ".",
        )
    reference = runs[0]
    try:
        settings: dict[str, Any] = {} if intervals else {"n_bootstrap": 0}
        comparisons = [compare(reference, r, label=reference.run_id, **settings) for r in runs[1:]]
    except ComparisonError as exc:
        raise RequestError(400, str(exc)) from None
    return Compared(
        runs=[
            {
                "run_id": r.run_id,
                "status": r.status,
                "name": r.name,
                "labels": dict(r.labels),
                "macro_f1": r.macro_f1,
                "n_executions": r.frame.height,
                "finished_at": r.finished_at,
                "headline": r.headline,
            }
            for r in runs
        ],
        comparisons=comparisons,
        matrix=_matrix(comparisons),
        intervals=intervals,
    )


def _outputs(comparison: Comparison, which: str) -> pl.DataFrame:
    run = comparison.before if which == "before" else comparison.after
    key = comparison.join_key
    frame = run.frame.filter(pl.col(C.REPETITION) == 0)
    return frame.select(pl.col(key).alias("key"), pl.col(C.ACTUAL_OUTPUT).alias("output")).unique(
        "key", keep="first", maintain_order=True
    )


def _matrix(comparisons: list[Comparison]) -> pl.DataFrame:
    first = comparisons[0]
    matrix = first.rows.filter(pl.col("status") != "added").select(
        "key",
        C.SAMPLE_ID,
        pl.col("before_pass_rate").alias("pass_rate_0"),
        pl.col("before_score_mean").alias("score_0"),
    )
    matrix = matrix.join(
        _outputs(first, "before").rename({"output": "output_0"}), on="key", how="left"
    )
    for i, c in enumerate(comparisons, start=1):
        side = c.rows.select(
            "key",
            pl.col(C.SAMPLE_ID).alias("_sid"),
            pl.col("status").alias(f"status_{i}"),
            pl.col("after_pass_rate").alias(f"pass_rate_{i}"),
            pl.col("after_score_mean").alias(f"score_{i}"),
        )
        matrix = (
            matrix.join(side, on="key", how="full", coalesce=True)
            .with_columns(pl.coalesce(C.SAMPLE_ID, "_sid").alias(C.SAMPLE_ID))
            .drop("_sid")
        )
        matrix = matrix.join(
            _outputs(c, "after").rename({"output": f"output_{i}"}), on="key", how="left"
        )
        worse = (
            c.row_metrics.filter(pl.col("status") == "regressed")
            .group_by("key", maintain_order=True)
            .agg(pl.col(C.METRIC).alias(f"worse_{i}"))
        )
        matrix = matrix.join(worse, on="key", how="left")
    n = len(comparisons) + 1
    statuses = [pl.col(f"status_{i}") for i in range(1, n)]
    worse_any = [pl.col(f"worse_{i}").list.len().fill_null(0) > 0 for i in range(1, n)]
    outputs = [pl.col(f"output_{i}").fill_null("\u0000missing") for i in range(n)]
    moved = pl.any_horizontal(
        [s.is_in(["regressed", "improved", "added", "removed"]) for s in statuses]
    )
    return matrix.with_columns(
        pl.any_horizontal([(s == "regressed").fill_null(False) for s in statuses] + worse_any)
        .fill_null(False)
        .alias("regressed"),
        (moved.fill_null(False) | (pl.concat_list(outputs).list.n_unique() > 1)).alias("differs"),
    )


def matrix_page(found: Compared, q: CompareQuery) -> tuple[int, list[dict[str, Any]]]:
    """(matching rows, the page of the matrix) under the ``rows`` filter."""
    rows = found.matrix
    if q.rows is not None:
        rows = rows.filter(pl.col(q.rows))
    page = rows.slice(q.page.offset, q.page.limit)
    out = []
    for row in page.iter_rows(named=True):  # one page
        out.append(
            {
                "sample_id": row[C.SAMPLE_ID],
                "regressed": row["regressed"],
                "differs": row["differs"],
                "runs": [
                    {
                        "run_id": run["run_id"],
                        "output": row.get(f"output_{i}"),
                        "pass_rate": row.get(f"pass_rate_{i}"),
                        "score_mean": row.get(f"score_{i}"),
                        "status": row.get(f"status_{i}") if i else "reference",
                        "regressed_metrics": list(row.get(f"worse_{i}") or []) if i else [],
                    }
                    for i, run in enumerate(found.runs)
                ],
            }
        )
    return rows.height, out


def metric_rows(found: Compared) -> list[dict[str, Any]]:
    """Per metric: the reference's mean and pass rate, then (under ``runs``, by run id) each
    other run's figures and paired statistics against it."""
    by_metric: dict[str, dict[str, Any]] = {}
    for c in found.comparisons:
        for r in c.metrics.iter_rows(named=True):  # one per metric
            entry = by_metric.setdefault(
                r[C.METRIC],
                {
                    "metric": r[C.METRIC],
                    "reference": {"mean": r["before_mean"], "pass_rate": r["before_pass_rate"]},
                    "runs": {},
                },
            )
            entry["runs"][c.after.run_id] = {
                "mean": r["after_mean"],
                "mean_delta": r["mean_delta"],
                "mean_ci": [r["mean_ci_low"], r["mean_ci_high"]],
                "pass_rate": r["after_pass_rate"],
                "pass_rate_delta": r["pass_rate_delta"],
                "pass_rate_ci": [r["pass_rate_ci_low"], r["pass_rate_ci_high"]],
                "pass_to_fail": r["pass_to_fail"],
                "fail_to_pass": r["fail_to_pass"],
                "p_holm": r["p_holm"],
            }
    return list(by_metric.values())
