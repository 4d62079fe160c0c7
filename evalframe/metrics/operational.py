"""Operational metrics (performance dimension): latency, token-cost, cost and retry-count.

Each reads a typed column of the outputs (``schema.OPERATIONAL_COLUMNS``): saved-outputs
files may carry them, and ``evaluate(system=...)`` records ``latency_ms`` itself. Each maps
the raw value v to ``clamp(1 - v / budget, 0, 1)``: 1.0 for free, 0.0 at or over budget. A
missing value (no column at all, or null on that row) is that sample's error, never a
silent 0 or 1; so is a negative or non-finite value.
"""

from __future__ import annotations

from typing import Annotated, Literal

import polars as pl

from evalframe.metrics._batched import sample_error
from evalframe.metrics._registry import metric
from evalframe.metrics._spec import Range, Scored

__all__ = ["cost", "latency", "retry_count", "token_cost"]


def _column(name: str) -> pl.Expr:
    """The column as Float64, or an all-null value when the frame has no such column."""
    # A regex selector matches nothing (instead of raising) when the column is absent; the
    # coalesce then falls back to the null literal, which broadcasts to the frame's height.
    return pl.coalesce(pl.col(f"^{name}$").cast(pl.Float64), pl.lit(None, pl.Float64))


def _budget_metric(
    metric_name: str,
    value: pl.Expr,
    columns: str,
    budget: float,
    budget_name: str,
    hint: str = "add it to the saved outputs",
) -> Scored:
    """``clamp(1 - value / budget, 0, 1)`` with per-sample errors for unusable values."""
    missing = value.is_null()
    bad = value.is_nan() | value.is_infinite() | (value < 0)
    score = (1.0 - value / budget).clip(0.0, 1.0)
    return Scored(
        score=pl.when(missing | bad).then(None).otherwise(score),
        error=pl.when(missing)
        .then(
            sample_error(
                f"has no {columns} for {metric_name} metric: the outputs did not record it "
                f"({hint})."
            )
        )
        .when(bad)
        .then(
            sample_error(
                f"{columns} must be a finite number >= 0 for {metric_name} metric; got {{}}.",
                value,
            )
        ),
        details=pl.struct(value.alias("value"), pl.lit(budget, pl.Float64).alias(budget_name)),
    )


@metric("latency", family="operational", dimension="performance")
def latency(*, max_ms: Annotated[float, Range(gt=0)] = 10_000.0) -> Scored:
    """Latency within a budget: ``clamp(1 - latency_ms / max_ms, 0, 1)``.

    Reads ``latency_ms``, the wall time of the call that produced the output (recorded by
    ``evaluate(system=...)``, or given in the saved outputs). 0 ms scores 1.0; ``max_ms``
    or slower scores 0.0; with the default threshold 0.5 a call passes within half the
    budget.

    Returns:
        Float64 in [0, 1]; null (an error) when ``latency_ms`` is missing, negative or not
        finite.

    Examples:
        >>> import polars as pl
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([{"id": k, "input": {"q": k}, "expected_output": ""}
        ...                               for k in ("fast", "slow")], name="demo")
        >>> outputs = pl.DataFrame({"sample_id": ["fast", "slow"], "actual_output": ["ok", "ok"],
        ...                         "latency_ms": [800.0, 12000.0]})
        >>> run = ef.evaluate(ds, outputs=outputs, metrics=["latency(max_ms=5000)"])
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        fast 0.84 {"value":800.0,"max_ms":5000.0}
        slow 0.0 {"value":12000.0,"max_ms":5000.0}
    """
    return _budget_metric(
        "latency",
        _column("latency_ms"),
        "latency_ms",
        max_ms,
        "max_ms",
        hint="add it to the saved outputs, or evaluate with system= to measure it",
    )


@metric("token-cost", family="operational", dimension="performance")
def token_cost(
    *,
    max_tokens: Annotated[int, Range(ge=1)] = 4096,
    count: Literal["total", "prompt", "completion"] = "total",
) -> Scored:
    """Tokens within a budget: ``clamp(1 - tokens / max_tokens, 0, 1)``.

    ``tokens`` is ``prompt_tokens + completion_tokens`` (``count="total"``), or one of them
    (``"prompt"``, ``"completion"``). A total needs both columns on the row.

    Returns:
        Float64 in [0, 1]; null (an error) when a needed token count is missing, negative
        or not finite.

    Examples:
        >>> import polars as pl
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([{"id": "q1", "input": {"q": "q"}, "expected_output": ""}],
        ...                              name="demo")
        >>> outputs = pl.DataFrame({"sample_id": ["q1"], "actual_output": ["ok"],
        ...                         "prompt_tokens": [700], "completion_tokens": [300]})
        >>> run = ef.evaluate(ds, outputs=outputs, metrics=["token-cost(max_tokens=4000)"])
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        q1 0.75 {"value":1000.0,"max_tokens":4000.0}
    """
    if count == "prompt":
        value, columns = _column("prompt_tokens"), "prompt_tokens"
    elif count == "completion":
        value, columns = _column("completion_tokens"), "completion_tokens"
    else:
        value = _column("prompt_tokens") + _column("completion_tokens")
        columns = "prompt_tokens + completion_tokens"
    return _budget_metric("token-cost", value, columns, float(max_tokens), "max_tokens")


@metric("cost", family="operational", dimension="performance")
def cost(*, max_usd: Annotated[float, Range(gt=0)] = 0.01) -> Scored:
    """Money within a budget: ``clamp(1 - cost_usd / max_usd, 0, 1)``.

    Reads ``cost_usd``, the price of producing the output. The default budget is one cent
    per sample.

    Returns:
        Float64 in [0, 1]; null (an error) when ``cost_usd`` is missing, negative or not
        finite.

    Examples:
        >>> import polars as pl
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([{"id": "q1", "input": {"q": "q"}, "expected_output": ""}],
        ...                              name="demo")
        >>> outputs = pl.DataFrame({"sample_id": ["q1"], "actual_output": ["ok"], "cost_usd": [0.0025]})
        >>> run = ef.evaluate(ds, outputs=outputs, metrics=["cost"])
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        q1 0.75 {"value":0.0025,"max_usd":0.01}
    """  # noqa: E501
    return _budget_metric("cost", _column("cost_usd"), "cost_usd", max_usd, "max_usd")


@metric("retry-count", family="operational", dimension="performance")
def retry_count(*, max_retries: Annotated[int, Range(ge=1)] = 3) -> Scored:
    """Retries within a budget: ``clamp(1 - retries / max_retries, 0, 1)``.

    Reads ``retries``, how many times the call was retried before it answered: none scores
    1.0, ``max_retries`` or more 0.0.

    Returns:
        Float64 in [0, 1]; null (an error) when ``retries`` is missing or negative.

    Examples:
        >>> import polars as pl
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([{"id": "q1", "input": {"q": "q"}, "expected_output": ""}],
        ...                              name="demo")
        >>> outputs = pl.DataFrame({"sample_id": ["q1"], "actual_output": ["ok"], "retries": [1]})
        >>> run = ef.evaluate(ds, outputs=outputs, metrics=["retry-count"])
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        q1 0.6666666666666667 {"value":1.0,"max_retries":3.0}
    """
    return _budget_metric(
        "retry-count", _column("retries"), "retries", float(max_retries), "max_retries"
    )
