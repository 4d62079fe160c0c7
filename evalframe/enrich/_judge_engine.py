"""Filling ``JudgeNeed`` columns: render, deduplicate across the frame, ask, re-gather.

Every row's prompt (or, with ``each``, every item's prompt) is rendered from the need's
input expressions in one query, each input fenced unless it is ``Verbatim``; the distinct
prompts go to ``Providers.complete`` in one batch (cache, ledger, budget, retries and
deadline apply there), and the replies are gathered back onto the rows (as a list per row
with ``each``, in the items' order). Rows whose required replies failed send nothing and
carry that error.
"""

from __future__ import annotations

import json
from typing import Any

import polars as pl

from evalframe.metrics._fence import Verbatim, fenced
from evalframe.metrics._judge_engine import JudgeNeed, render, reply, upstream_error
from evalframe.providers import Providers, Reply

__all__ = ["fill_judge_need", "judge_prompts"]


def _logprobs(r: Reply) -> str | None:
    found = getattr(r, "logprobs", None)
    return None if found is None else json.dumps(found)


def _with_optional(frame: pl.DataFrame, need: JudgeNeed) -> pl.DataFrame:
    """``frame`` with the need's optional columns it lacks (as nulls) and the decoded
    replies of the needs it requires (``parsed``), each decoded once."""
    absent = {c: t for c, t in need.optional.items() if c not in frame.columns}
    frame = frame.with_columns(pl.lit(None, t).alias(c) for c, t in absent.items())
    return frame.with_columns(reply(r).alias(r.parsed_column) for r in need.requires)


def judge_prompts(frame: pl.DataFrame, need: JudgeNeed) -> pl.DataFrame:
    """The prompts ``need`` sends for ``frame``: columns ``row`` (the row's index),
    ``prompt`` (null where none is sent), ``upstream`` (the failed required reply) and,
    with ``each``, ``n`` (the row's number of items, null for a null list).

    One row per frame row, or with ``each`` one per item (a row with an empty or null
    list keeps one row with a null prompt).
    """
    names = list(need.inputs)
    inputs = [v.expr if isinstance(v, Verbatim) else v for v in need.inputs.values()]
    values = _with_optional(frame, need).select(
        pl.int_range(pl.len(), dtype=pl.Int64).alias("row"),
        *(expr.alias(f"in_{i}") for i, expr in enumerate(inputs)),
        upstream_error(need).alias("upstream"),
    )
    items = f"in_{names.index(need.each)}" if need.each is not None else None
    if items is not None:
        values = values.with_columns(n=pl.col(items).list.len()).explode(items, empty_as_null=True)
    text = render(
        need.prompt.text,
        {
            n: pl.col(f"in_{i}") if isinstance(v, Verbatim) else fenced(pl.col(f"in_{i}"))
            for i, (n, v) in enumerate(need.inputs.items())
        },
    )
    return values.select(
        "row",
        pl.when(pl.col("upstream").is_null()).then(text).alias("prompt"),
        "upstream",
        *(["n"] if items is not None else []),
    )


def fill_judge_need(frame: pl.DataFrame, need: JudgeNeed, context: Any) -> pl.DataFrame:
    """The need's two columns for ``frame``: the raw replies and the row errors."""
    providers = Providers.coerce(context)
    providers.require_judge(f"The judge prompt {need.prompt.key}")
    asked = judge_prompts(frame, need)
    distinct = asked.get_column("prompt").drop_nulls().unique(maintain_order=True)
    replies = (
        providers.complete(
            distinct.to_list(),
            schema={
                "name": need.prompt.id.replace(".", "_"),
                "strict": True,
                "schema": need.prompt.json_schema(),
            },
            tag=need.prompt.key,
            top_logprobs=need.top_logprobs,
        )
        if distinct.len()
        else []
    )
    table = pl.DataFrame(
        {
            "prompt": distinct,
            "content": pl.Series([r.content for r in replies], dtype=pl.String),
            "error": pl.Series([r.error for r in replies], dtype=pl.String),
            "logprobs": pl.Series([_logprobs(r) for r in replies], dtype=pl.String),
        },
        schema={
            "prompt": pl.String,
            "content": pl.String,
            "error": pl.String,
            "logprobs": pl.String,
        },
    )
    extra = [need.logprobs_column] if need.top_logprobs else []
    got = asked.join(table, on="prompt", how="left", maintain_order="left").with_columns(
        error=pl.coalesce("upstream", "error")
    )
    if need.each is None:
        return got.select(
            pl.col("content").alias(need.column),
            pl.col("error").alias(need.error_column),
            *(pl.col("logprobs").alias(c) for c in extra),
        )
    lists = asked.group_by("row", maintain_order=True).agg(pl.col("n").first())
    grouped = got.group_by("row", maintain_order=True).agg(
        pl.col("content"), pl.col("logprobs"), pl.col("error").drop_nulls().first()
    )

    def per_row(name: str) -> pl.Expr:
        return (
            pl.when(pl.col("n") > 0)
            .then(pl.col(name))
            .when(pl.col("n") == 0)
            .then(pl.lit([], pl.List(pl.String)))
        )

    return grouped.with_columns(n=lists.get_column("n")).select(
        per_row("content").alias(need.column),
        pl.col("error").alias(need.error_column),
        *(per_row("logprobs").alias(c) for c in extra),
    )
