"""The slow path: metrics written as a Python function of one sample and its output.

Use it for quick custom metrics. It calls your function once per row, so it runs at Python
speed; a metric that matters at scale should be a column expression (see ``@metric``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import polars as pl

from evalframe.core import schema as C
from evalframe.metrics._batched import batched
from evalframe.metrics._registry import MetricFactory, metric
from evalframe.metrics._spec import Scored

__all__ = ["MetricScore", "RowwiseMetric", "Sample", "from_object", "rowwise"]


@dataclass(frozen=True, slots=True)
class Sample:
    """One dataset row as Python values, as a row-wise metric receives it."""

    id: str
    input: dict[str, Any]
    expected_output: Any
    metadata: dict[str, Any]
    tags: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class MetricScore:
    """A row-wise metric's result: a score in [0, 1] and optional JSON-able details."""

    score: float
    details: Mapping[str, Any] = field(default_factory=dict)


ScoreFn = Callable[[Sample, str], "float | MetricScore"]


class RowwiseMetric(Protocol):
    """The seed's two-method contract: ``name()`` and ``score(sample, actual_output)``."""

    def name(self) -> str: ...

    def score(self, sample: Sample, actual_output: str) -> float | MetricScore: ...


def _kernel(fn: ScoreFn, name: str) -> Callable[[pl.DataFrame], pl.DataFrame]:
    def run(frame: pl.DataFrame) -> pl.DataFrame:
        scores: list[float | None] = []
        errors: list[str | None] = []
        details: list[str | None] = []
        for row in frame.iter_rows(named=True):  # the documented slow path: one call per row
            sample_id = row[C.SAMPLE_ID]
            try:
                expected = row[C.EXPECTED_OUTPUT]
                if row[C.EXPECTED_TYPE] != "string":
                    expected = json.loads(expected)
                sample = Sample(
                    id=sample_id,
                    input=json.loads(row[C.INPUT]),
                    expected_output=expected,
                    metadata=json.loads(row[C.METADATA]),
                    tags=tuple(row[C.TAGS] or ()),
                )
                result = fn(sample, row[C.ACTUAL_OUTPUT])
                out = result if isinstance(result, MetricScore) else MetricScore(float(result))
                value = float(out.score)
                if math.isnan(value) or not 0.0 <= value <= 1.0:
                    raise ValueError(f"Metric score must be in [0.0, 1.0]; got {value}.")
                scores.append(value)
                errors.append(None)
                details.append(json.dumps(dict(out.details), ensure_ascii=False, default=str))
            except Exception as exc:  # a failing row is that row's error, never the run's
                scores.append(None)
                errors.append(f"Sample '{sample_id}' {name} metric failed: {exc}")
                details.append(None)
        return pl.DataFrame(
            {"score": scores, "error": errors, "details": details},
            schema={"score": pl.Float64, "error": pl.String, "details": pl.String},
        )

    return run


_COLUMNS = (
    C.SAMPLE_ID,
    C.INPUT,
    C.EXPECTED_OUTPUT,
    C.EXPECTED_TYPE,
    C.METADATA,
    C.TAGS,
    C.ACTUAL_OUTPUT,
)


def rowwise(
    name: str,
    *,
    family: str = "custom",
    dimension: str = "correctness",
    threshold: float = 0.5,
    replace: bool = False,
) -> Callable[[ScoreFn], MetricFactory]:
    """Register ``fn(sample, actual_output) -> float | MetricScore`` as a metric (slow path).

    Exceptions and out-of-range scores become that sample's error.

    Examples:
        >>> import evalframe as ef
        >>> @ef.metrics.rowwise("jaccard-words", replace=True)
        ... def jaccard(sample: ef.metrics.Sample, actual: str) -> float:
        ...     expected = set(str(sample.expected_output).lower().split())
        ...     got = set(actual.lower().split())
        ...     union = expected | got
        ...     return len(expected & got) / len(union) if union else 0.0
        >>> jaccard().id
        'jaccard-words'
    """

    def decorate(fn: ScoreFn) -> MetricFactory:
        def build() -> Scored:
            k = pl.col(f"{name}__rowwise")
            return Scored(
                score=k.struct.field("score"),
                error=k.struct.field("error"),
                details=k.struct.field("details"),
                prepare={
                    f"{name}__rowwise": batched(
                        _kernel(fn, name),
                        {c: pl.col(c) for c in _COLUMNS},
                        {"score": pl.Float64, "error": pl.String, "details": pl.String},
                    )
                },
            )

        build.__doc__ = fn.__doc__ or f"Row-wise metric {name} (Python, one call per row)."
        build.__name__ = getattr(fn, "__name__", name)
        return metric(
            name, family=family, dimension=dimension, threshold=threshold, replace=replace
        )(build)

    return decorate


def from_object(obj: RowwiseMetric, *, replace: bool = True) -> MetricFactory:
    """Wrap an object with ``name()`` and ``score(sample, actual)`` (the seed's contract)."""
    return rowwise(obj.name(), replace=replace)(obj.score)
