"""Conversation metrics over the ``turns`` column: deterministic turn-latency,
turn-token-cost and turn-efficiency, and judge-backed knowledge-retention, role-adherence,
conversation-completeness, conversation-relevancy and turn-faithfulness (prompts and scoring in
``metrics/_dialogue_judged.py``).

``turns`` (``core/_turns.py``) holds one element per turn with ``role``, ``content``,
``tool_calls``, ``latency_ms`` and ``tokens``. turn-latency and turn-token-cost grade the
assistant's turns the way the operational metrics grade one call: each turn's value v maps to
``clamp(1 - v / budget, 0, 1)`` and the score is their mean. Computed with list expressions
over the whole column. A row without turns, without an assistant turn, or with an
assistant turn missing the value is that row's error, never a silent 0 or 1. turn-efficiency
compares the number of turns with the sample's expected number.
"""

from __future__ import annotations

from typing import Annotated

import polars as pl

from evalframe.core import schema as C
from evalframe.core._turns import TURNS, TURNS_COLUMN
from evalframe.metrics import _dialogue_judged as judged
from evalframe.metrics._batched import sample_error
from evalframe.metrics._registry import metric
from evalframe.metrics._spec import Range, Scored

__all__ = [
    "conversation_completeness",
    "conversation_relevancy",
    "knowledge_retention",
    "role_adherence",
    "turn_efficiency",
    "turn_faithfulness",
    "turn_latency",
    "turn_token_cost",
]


def turns_expr() -> pl.Expr:
    """The ``turns`` column, or all-null when the frame has none."""
    return pl.coalesce(pl.col(f"^{TURNS_COLUMN}$"), pl.lit(None, TURNS))


def _per_turn(metric_name: str, field: str, budget: float, budget_name: str) -> Scored:
    turns = turns_expr()
    is_assistant = pl.element().struct.field("role") == "assistant"
    values = turns.list.eval(pl.element().filter(is_assistant).struct.field(field).cast(pl.Float64))
    gap = turns.list.eval(is_assistant & pl.element().struct.field(field).is_null())
    first_gap = gap.list.arg_max()
    n_assistant = values.list.len()
    bad = values.list.eval(pl.element().is_nan() | pl.element().is_infinite() | (pl.element() < 0))
    prefix = pl.concat_str(pl.lit("Sample '"), pl.col(C.SAMPLE_ID), pl.lit("' "))
    error = (
        pl.when(turns.is_null())
        .then(
            pl.concat_str(
                prefix,
                pl.lit(
                    f"has no turns for {metric_name} metric: the outputs did not record a "
                    "conversation (add a turns list to the saved outputs)."
                ),
            )
        )
        .when(n_assistant == 0)
        .then(pl.concat_str(prefix, pl.lit(f"has no assistant turn for {metric_name} metric.")))
        .when(gap.list.any())
        .then(
            pl.concat_str(
                prefix,
                pl.lit(f"has no {field} on turns["),
                first_gap.cast(pl.String),
                pl.lit(f"] (an assistant turn) for {metric_name} metric."),
            )
        )
        .when(bad.list.any())
        .then(
            pl.concat_str(
                prefix,
                pl.lit(f"has a {field} that is not a finite number >= 0 for {metric_name} metric."),
            )
        )
    )
    credit = values.list.eval((1.0 - pl.element() / budget).clip(0.0, 1.0)).list.mean()
    return Scored(
        score=pl.when(error.is_null()).then(credit.round(6)),
        error=error,
        details=pl.when(error.is_null()).then(
            pl.struct(
                n_assistant.cast(pl.Int64).alias("assistant_turns"),
                values.list.mean().alias(f"mean_{field}"),
                values.list.max().alias(f"worst_{field}"),
                values.list.arg_max().cast(pl.Int64).alias("worst_assistant_turn"),
                pl.lit(budget, pl.Float64).alias(f"budget_{budget_name}"),
            )
        ),
    )


@metric("turn-latency", family="conversation", dimension="performance")
def turn_latency(*, max_ms: Annotated[float, Range(gt=0)] = 10_000.0) -> Scored:
    """Each assistant turn's latency within a budget, averaged over the conversation.

    The mean over assistant turns of ``clamp(1 - latency_ms / max_ms, 0, 1)``. Details: the
    number of assistant turns, the mean and max latency, and which assistant turn was
    slowest (0-based among assistant turns).
    """
    return _per_turn("turn-latency", "latency_ms", max_ms, "max_ms")


@metric("turn-token-cost", family="conversation", dimension="performance")
def turn_token_cost(*, max_tokens: Annotated[int, Range(ge=1)] = 4096) -> Scored:
    """Each assistant turn's tokens within a budget, averaged over the conversation.

    The mean over assistant turns of ``clamp(1 - tokens / max_tokens, 0, 1)``.
    """
    return _per_turn("turn-token-cost", "tokens", float(max_tokens), "max_tokens")


@metric("turn-efficiency", family="conversation", dimension="trajectory", threshold=0.7)
def turn_efficiency(*, expected_turns: Annotated[int, Range(ge=1)] | None = None) -> Scored:
    """``min(1, expected_turns / turns)``: how close the conversation came to its expected length.

    ``turns`` counts every turn of the row's ``turns`` column (all roles), as harness-evals
    counts messages; ``expected_turns`` is the sample's ``metadata.expected_turns`` (a number
    > 0), else this metric's ``expected_turns``. A conversation shorter than expected scores
    1.0 (no bonus for being faster). A row without turns, with no turn at all, or without a
    usable ``expected_turns`` is that row's error. Details: ``turns``, ``expected_turns``.

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([
        ...     {"id": "a", "input": {"n": 4}, "expected_output": "",
        ...      "metadata": {"expected_turns": 2}},
        ...     {"id": "b", "input": {"n": 2}, "expected_output": "",
        ...      "metadata": {"expected_turns": 2}}], name="demo")
        >>> def chat(sample):
        ...     turns = [{"role": "user" if i % 2 == 0 else "assistant", "content": "..."}
        ...              for i in range(sample["n"])]
        ...     return {"output": "", "turns": turns}
        >>> run = ef.evaluate(ds, system=chat, metrics=["turn-efficiency"])
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        a 0.5 {"turns":4,"expected_turns":2.0}
        b 1.0 {"turns":2,"expected_turns":2.0}
    """
    turns = turns_expr()
    n = turns.list.len().cast(pl.Int64)
    given = C.metadata_field("expected_turns")
    parsed = given.cast(pl.Float64, strict=False)
    fallback = pl.lit(expected_turns, pl.Float64)
    target = pl.coalesce(parsed, fallback) if expected_turns is not None else parsed
    unusable = given.is_not_null() & (
        parsed.is_null() | parsed.is_nan() | parsed.is_infinite() | (parsed <= 0)
    )
    prefix = "turn-efficiency metric"
    error = (
        pl.when(turns.is_null())
        .then(
            sample_error(
                f"has no turns for {prefix}: the outputs did not record a conversation (add a "
                "turns list to the saved outputs)."
            )
        )
        .when(n == 0)
        .then(sample_error(f"has an empty conversation (no turn) for {prefix}."))
        .when(unusable)
        .then(
            sample_error(
                f"metadata.expected_turns must be a number > 0 for {prefix}; got {{}}.", given
            )
        )
        .when(target.is_null())
        .then(
            sample_error(
                f"has no metadata.expected_turns for {prefix}: set it, or pass "
                "turn-efficiency(expected_turns=N)."
            )
        )
    )
    return Scored(
        score=pl.when(error.is_null()).then((target / n).clip(upper_bound=1.0).round(6)),
        error=error,
        details=pl.when(error.is_null()).then(
            pl.struct(n.alias("turns"), target.alias("expected_turns"))
        ),
    )


# --- judge-backed (the shared judge engine) ------------------------------------------------


@metric(
    "knowledge-retention",
    family="conversation",
    dimension="correctness",
    needs=lambda: judged.dialogue_needs("knowledge-retention"),
)
def knowledge_retention() -> Scored:
    """The share of assistant turns that keep every fact the user stated before them.

    One judge call per distinct conversation (prompt ``conversation.knowledge-retention``),
    one verdict per assistant turn. Details: the verdicts (turn, ok, reason), the number of
    assistant turns and the prompt key.
    """
    return judged.dialogue_scored("knowledge-retention")


@metric(
    "role-adherence",
    family="conversation",
    dimension="safety",
    needs=lambda *, role=None: judged.dialogue_needs("role-adherence", role=role),
)
def role_adherence(*, role: str | None = None) -> Scored:
    """The share of assistant turns that stay in the assigned role.

    The role is ``role=...``, else the sample's ``metadata.role`` (prompt
    ``conversation.role-adherence``). Details as for knowledge-retention.
    """
    return judged.dialogue_scored("role-adherence", role=role)


@metric(
    "conversation-completeness",
    family="conversation",
    dimension="correctness",
    needs=lambda: judged.dialogue_needs("conversation-completeness"),
)
def conversation_completeness() -> Scored:
    """The share of the user's intentions the assistant satisfied by the end (1.0 with none).

    Prompt ``conversation.completeness``. Details: each intention with ``satisfied``, the
    reason and the prompt key.
    """
    return judged.dialogue_scored("conversation-completeness")


@metric(
    "conversation-relevancy",
    family="conversation",
    dimension="correctness",
    needs=lambda *, window=3: judged.dialogue_needs("conversation-relevancy", window=window),
)
def conversation_relevancy(*, window: Annotated[int, Range(ge=1)] = 3) -> Scored:
    """The share of assistant turns relevant to the ``window`` turns just before them.

    Prompt ``conversation.relevancy``. Details as for knowledge-retention.
    """
    return judged.dialogue_scored("conversation-relevancy", window=window)


@metric(
    "turn-faithfulness",
    family="conversation",
    dimension="groundedness",
    needs=lambda: judged.dialogue_needs("turn-faithfulness"),
)
def turn_faithfulness() -> Scored:
    """The share of assistant turns whose factual claims the retrieved contexts support.

    Reads the row's ``contexts`` (prompt ``conversation.turn-faithfulness``); a row without
    contexts is that row's error. Details as for knowledge-retention.
    """
    return judged.dialogue_scored("turn-faithfulness")
