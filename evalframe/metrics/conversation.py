"""Conversation metrics over the ``turns`` column: deterministic turn-latency and
turn-token-cost, and judge-backed knowledge-retention, role-adherence,
conversation-completeness, conversation-relevancy and turn-faithfulness (prompts and scoring in
``metrics/_dialogue_judged.py``).

``turns`` (``core/_turns.py``) holds one element per turn with ``role``, ``content``,
``tool_calls``, ``latency_ms`` and ``tokens``. Both metrics grade the assistant's turns the
way the operational metrics grade one call: each turn's value v maps to
``clamp(1 - v / budget, 0, 1)`` and the score is their mean. Computed with list expressions
over the whole column. A row without turns, without an assistant turn, or with an
assistant turn missing the value is that row's error, never a silent 0 or 1.
"""

from __future__ import annotations

from typing import Annotated

import polars as pl

from evalframe.core import schema as C
from evalframe.core._turns import TURNS, TURNS_COLUMN
from evalframe.metrics import _dialogue_judged as judged
from evalframe.metrics._registry import metric
from evalframe.metrics._spec import Range, Scored

__all__ = [
    "conversation_completeness",
    "conversation_relevancy",
    "knowledge_retention",
    "role_adherence",
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
