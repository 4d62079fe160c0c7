"""The one runner: an evaluation frame and metrics in, the long scores frame out.

The evaluation frame is the dataset joined with the outputs: the canonical dataset columns,
``actual_output``, ``repetition`` and, when a system under test failed on a row,
``system_error``. Each metric runs as one query over the whole frame; a metric that fails
for a row records that row's error, and a metric that fails outright records an error on
every row, while every other metric still scores.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Final, Protocol

import polars as pl

from evalframe.core import schema as C
from evalframe.core._errors import DatasetError
from evalframe.core._njit import sharing_cores, threads
from evalframe.core._progress import track

__all__ = ["Scorable", "score"]

_TRACKED_ROWS = 50_000


class Scorable(Protocol):
    """What core needs of a metric (``evalframe.metrics.Metric`` is one).

    Its identity (``id``, ``name``, bound ``params``), ``family``, ``dimension`` and pass
    ``threshold``; ``expressions()`` returns the metric's column expressions (``score``, ``error``,
    ``details``, ``prepare``); ``derived()`` the pure generated columns it reads, each a
    ``column`` name and a ``compute`` function; ``needs()`` the provider-filled columns it
    reads, which must already be in the frame (the enrich layer fills them).
    """

    @property
    def id(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def family(self) -> str: ...

    @property
    def dimension(self) -> str: ...

    @property
    def params(self) -> tuple[tuple[str, Any], ...]: ...

    @property
    def threshold(self) -> float: ...

    @property
    def higher_is_better(self) -> bool: ...

    def expressions(self) -> Any: ...

    def derived(self) -> Sequence[Any]: ...

    def needs(self) -> Sequence[Any]: ...


def _derive(
    frame: pl.DataFrame, metrics: Sequence[Scorable]
) -> tuple[pl.DataFrame, dict[str, str]]:
    """Add the pure generated columns the metrics read, each computed once per frame."""
    failed: dict[str, str] = {}
    done: dict[str, str | None] = {}
    for m in metrics:
        for d in m.derived():
            if d.column not in done:
                done[d.column] = None
                if d.column not in frame.columns:
                    try:
                        frame = frame.with_columns(d.compute(frame).to_struct(d.column))
                    except Exception as exc:  # reported per row, the run goes on
                        done[d.column] = f"{type(exc).__name__}: {exc}"
            problem = done[d.column]
            if problem is not None and m.id not in failed:
                failed[m.id] = f"could not compute {d.column}: {problem}"
        missing = [n.column for n in m.needs() if n.column not in frame.columns]
        if missing and m.id not in failed:
            failed[m.id] = (
                f"needs the provider-filled column {missing[0]!r}; score through "
                "ef.evaluate or ef.score, which fill it"
            )
    return frame, failed


def passes(score: pl.Expr, m: Scorable) -> pl.Expr:
    """Whether ``score`` passes ``m``'s threshold: at or above it, or for a lower-is-better
    metric at or below it (the one pass rule)."""
    return score >= m.threshold if m.higher_is_better else score <= m.threshold


def _metric_rows(frame: pl.DataFrame, scored: Any) -> pl.DataFrame:
    details = pl.lit(None, pl.String) if scored.details is None else scored.details
    prepared = frame.with_columns(**scored.prepare) if scored.prepare else frame
    out = prepared.select(
        pl.col(C.SAMPLE_ID),
        pl.col(C.REPETITION),
        scored.score.cast(pl.Float64).alias(C.SCORE),
        (scored.error if scored.error is not None else pl.lit(None, pl.String))
        .cast(pl.String)
        .alias(C.ERROR),
        details.alias("details"),
    )
    if out.schema["details"] != pl.String:
        if isinstance(out.schema["details"], pl.Struct):
            out = out.with_columns(pl.col("details").struct.json_encode())
        else:
            out = out.with_columns(pl.col("details").cast(pl.String))
    return out


def score(
    frame: pl.DataFrame,
    metrics: Sequence[Scorable],
    *,
    run_id: str = "",
    unavailable: Mapping[str, str] | None = None,
) -> pl.DataFrame:
    """Score every row of ``frame`` with every metric; returns the long scores frame.

    Columns: run_id, sample_id, repetition, metric, score (null on error), passed (score >=
    the metric's threshold; null on error), error (null when scored), details (JSON).

    ``ef.score`` (the enrich layer's runner) fills provider-backed needs first, then calls
    this; its docstring has an example.
    """
    missing = [c for c in (C.SAMPLE_ID, C.ACTUAL_OUTPUT) if c not in frame.columns]
    if missing:
        raise DatasetError(
            f"The frame to score has no column {' or '.join(map(repr, missing))}: every row "
            "needs its sample_id and actual_output (and the columns its metrics read, such as "
            "expected_output). Found: "
            f"{', '.join(frame.columns) or '(none)'}."
        )
    if C.REPETITION not in frame.columns:
        frame = frame.with_columns(pl.lit(0, pl.Int64).alias(C.REPETITION))
    if C.SYSTEM_ERROR not in frame.columns:
        frame = frame.with_columns(pl.lit(None, pl.String).alias(C.SYSTEM_ERROR))
    frame, failed = _derive(frame, metrics)
    failed = {**failed, **(unavailable or {})}
    no_output = (
        pl.when(pl.col(C.SYSTEM_ERROR).is_not_null())
        .then(pl.col(C.SYSTEM_ERROR))
        .when(pl.col(C.ACTUAL_OUTPUT).is_null())
        .then(pl.format("Sample '{}' has no actual output.", pl.col(C.SAMPLE_ID)))
    )
    blocked = frame.select(no_output.alias("blocked")).to_series()
    parts = []
    # A large frame's scoring, metric by metric (a small one's is over in well under 1 s).
    show = None if frame.height >= _TRACKED_ROWS else False
    with (
        track("scoring", frame.height * len(metrics), unit="scores", show=show) as advance,
        _Concurrent(frame, metrics, failed) as pending,
    ):
        for m in metrics:
            try:
                rows = pending.rows(m)
            except Exception as exc:  # one broken metric must not lose the others' scores
                message = f"Metric '{m.id}' failed: {type(exc).__name__}: {exc}"
                rows = frame.select(
                    pl.col(C.SAMPLE_ID),
                    pl.col(C.REPETITION),
                    pl.lit(None, pl.Float64).alias(C.SCORE),
                    pl.lit(message).alias(C.ERROR),
                    pl.lit(None, pl.String).alias("details"),
                )
            parts.append(_finish(rows.with_columns(blocked=blocked), m, run_id))
            advance(frame.height)
    if not parts:
        return pl.DataFrame(schema=C.SCORES_SCHEMA)
    return pl.concat(parts, how="vertical")


_CONCURRENT_FROM: Final = 10_000
"""Rows from which metrics that allow it are scored on several threads at once."""


class _Concurrent:
    """Each metric's raw rows, in the runner's order. Metrics whose expressions say
    ``concurrent`` (their kernels are pure functions of the frame, shared state kept under
    locks) are scored on a pool of threads, as many as Polars' thread pool has, over a large
    frame; their compiled kernels and Polars release the GIL, so the cores share the work.
    Every other metric is scored on the calling thread when its turn comes. An exception is
    raised by :meth:`rows` for its own metric only, whichever thread met it."""

    def __init__(
        self, frame: pl.DataFrame, metrics: Sequence[Scorable], failed: Mapping[str, str]
    ) -> None:
        self._frame = frame
        self._failed = failed
        self._built: dict[int, Any] = {}
        self._jobs: dict[int, Future[pl.DataFrame]] = {}
        self._pool: ThreadPoolExecutor | None = None
        together = []
        for k, m in enumerate(metrics):
            if m.id in failed:
                continue
            try:
                self._built[k] = m.expressions()
            except Exception as exc:  # raised again in its turn
                self._built[k] = exc
                continue
            if getattr(self._built[k], "concurrent", False):
                together.append(k)
        workers = min(threads(), len(together))
        if workers >= 2 and frame.height >= _CONCURRENT_FROM:
            self._pool = ThreadPoolExecutor(workers, thread_name_prefix="evalframe-score")
            for k in together:
                self._jobs[k] = self._pool.submit(_concurrent_rows, frame, self._built[k])
        self._next = 0

    def rows(self, m: Scorable) -> pl.DataFrame:
        """The raw rows of the runner's next metric, ``m``."""
        k, self._next = self._next, self._next + 1
        if m.id in self._failed:
            raise RuntimeError(self._failed[m.id])
        if k in self._jobs:
            return self._jobs.pop(k).result()
        built = self._built[k]
        if isinstance(built, Exception):
            raise built
        return _metric_rows(self._frame, built)

    def __enter__(self) -> _Concurrent:
        return self

    def __exit__(self, *_: object) -> None:
        if self._pool is not None:
            for job in self._jobs.values():
                job.cancel()
            self._pool.shutdown(wait=True)


def _concurrent_rows(frame: pl.DataFrame, scored: Any) -> pl.DataFrame:
    """``_metric_rows`` on one of the pool's threads: its metric's passes split in halves
    only where they would leave a core idle otherwise (``in_halves(alone=True)``)."""
    with sharing_cores():
        return _metric_rows(frame, scored)


def _finish(rows: pl.DataFrame, m: Scorable, run_id: str) -> pl.DataFrame:
    """Enforce the contract on a metric's raw rows: range checks, errors, ``passed``.

    A row with an error has a null score, a null ``passed`` and null details, for every
    metric, built-in or not.
    """
    s = pl.col(C.SCORE)
    out_of_range = s.is_nan() | (s < 0.0) | (s > 1.0)
    if _all_scored(rows):  # the usual case: no row's error to write
        return rows.select(
            pl.lit(run_id, pl.String).alias(C.RUN_ID),
            pl.col(C.SAMPLE_ID),
            pl.col(C.REPETITION).cast(pl.Int64),
            pl.lit(m.id, pl.String).alias(C.METRIC),
            s.alias(C.SCORE),
            passes(s, m).alias("passed"),
            pl.lit(None, pl.String).alias(C.ERROR),
            pl.col("details"),
        )
    error = (
        pl.when(pl.col("blocked").is_not_null())
        .then(pl.col("blocked"))
        .when(pl.col(C.ERROR).is_not_null())
        .then(pl.col(C.ERROR))
        .when(s.is_not_null() & out_of_range)
        .then(pl.format("Metric score must be in [0.0, 1.0]; got {}.", s))
        .when(s.is_null())
        .then(
            pl.format("Sample '{}' {} metric produced no score.", pl.col(C.SAMPLE_ID), pl.lit(m.id))
        )
    )
    scored = error.is_null()
    return rows.select(
        pl.lit(run_id, pl.String).alias(C.RUN_ID),
        pl.col(C.SAMPLE_ID),
        pl.col(C.REPETITION).cast(pl.Int64),
        pl.lit(m.id, pl.String).alias(C.METRIC),
        pl.when(scored).then(s).alias(C.SCORE),
        pl.when(scored).then(passes(s, m)).alias("passed"),
        error.alias(C.ERROR),
        # Details describe a score; an errored row has none, whatever the metric built.
        pl.when(scored).then(pl.col("details")).alias("details"),
    )


def _all_scored(rows: pl.DataFrame) -> bool:
    """Whether every row has a score in [0, 1] and no error (``_finish`` has none to write)."""
    score = rows.get_column(C.SCORE)
    if score.null_count() or rows.get_column(C.ERROR).null_count() < rows.height:
        return False
    if rows.get_column("blocked").null_count() < rows.height:
        return False
    if rows.height == 0 or score.is_nan().any():
        return rows.height == 0
    return bool(score.min() >= 0.0 and score.max() <= 1.0)  # type: ignore[operator]
