"""Judge-backed agent and conversation metrics on the shared judge engine: versioned prompts
(their texts in ``prompts/agent.*`` and ``prompts/conversation.*``), how a trajectory or a
conversation is shown to the judge, and how a reply becomes a score.

Every metric makes one judge call per distinct rendered prompt (identical episodes or
conversations share it) and asks for closed answers: a label, or one boolean per plan step,
per user intention or per assistant turn. The score is a fixed function of those answers,
kept in the details, so it can be recomputed from them:

* ``task-completion``: complete 1.0, partial 0.5, incomplete 0.0;
* ``plan-adherence``: the share of plan steps followed;
* ``plan-quality``: the mean of three checks (complete, logical, efficient);
* ``conversation-completeness``: the share of the user's intentions satisfied (1.0 when the
  user expressed none);
* ``knowledge-retention``, ``role-adherence``, ``conversation-relevancy``,
  ``turn-faithfulness``: the share of assistant turns judged good. The judge must return one
  verdict per assistant turn, in order; any other count is the row's error.

What the judge sees is bounded: each turn's text, tool result and argument list is cut to
``MAX_FIELD_CHARS`` characters, and at most ``MAX_ITEMS`` turns or tool calls are shown (a
longer conversation or episode is an error for the row rather than a silently partial
judgement).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import polars as pl

from evalframe.core import schema as C
from evalframe.core._contexts import CONTEXTS
from evalframe.core._trajectory import TRAJECTORY, TRAJECTORY_COLUMN
from evalframe.core._turns import TURNS, TURNS_COLUMN
from evalframe.metrics._batched import sample_error
from evalframe.metrics._fence import Verbatim, fenced, json_object, labelled, numbered, verbatim
from evalframe.metrics._judge_engine import JudgeNeed, Prompt, reply, shipped
from evalframe.metrics._spec import Scored
from evalframe.metrics.judge import _question_expr

__all__ = [
    "DIALOGUE",
    "MAX_FIELD_CHARS",
    "MAX_ITEMS",
    "Dialogue",
    "dialogue_needs",
    "dialogue_scored",
]

MAX_FIELD_CHARS: Final = 2000
"""Characters of one turn, tool result or argument list shown to the judge."""
MAX_ITEMS: Final = 200
"""Turns or tool calls shown to the judge; more is the row's error."""

_VERDICTS: Final = pl.Struct(
    {"verdicts": pl.List(pl.Struct({"turn": pl.Int64, "ok": pl.Boolean, "reason": pl.String}))}
)

TASK_COMPLETION: Final = shipped(
    "agent.task-completion",
    description="Did the agent accomplish the task it was given?",
    reply=pl.Struct(
        {
            "task": pl.String,
            "outcome": pl.String,
            "verdict": pl.Enum(["complete", "partial", "incomplete"]),
            "reason": pl.String,
        }
    ),
)

PLAN_ADHERENCE: Final = shipped(
    "agent.plan-adherence",
    description="Did the agent's actions follow its plan, step by step?",
    reply=pl.Struct(
        {
            "plan": pl.List(pl.Struct({"step": pl.String, "followed": pl.Boolean})),
            "reason": pl.String,
        }
    ),
)

PLAN_QUALITY: Final = shipped(
    "agent.plan-quality",
    description="Is the agent's plan complete, logical and efficient for the task?",
    reply=pl.Struct(
        {
            "plan": pl.List(pl.String),
            "complete": pl.Boolean,
            "logical": pl.Boolean,
            "efficient": pl.Boolean,
            "reason": pl.String,
        }
    ),
)

COMPLETENESS: Final = shipped(
    "conversation.completeness",
    description="Were the user's intentions in the conversation satisfied?",
    reply=pl.Struct(
        {
            "intentions": pl.List(pl.Struct({"intention": pl.String, "satisfied": pl.Boolean})),
            "reason": pl.String,
        }
    ),
)

KNOWLEDGE_RETENTION: Final = shipped(
    "conversation.knowledge-retention",
    description="Does each assistant turn keep what the user said earlier?",
    reply=_VERDICTS,
)

ROLE_ADHERENCE: Final = shipped(
    "conversation.role-adherence",
    description="Does each assistant turn stay in the assigned role?",
    reply=_VERDICTS,
)

RELEVANCY: Final = shipped(
    "conversation.relevancy",
    description="Is each assistant turn relevant to the conversation just before it?",
    reply=_VERDICTS,
)

TURN_FAITHFULNESS: Final = shipped(
    "conversation.turn-faithfulness",
    description="Is each assistant turn supported by the retrieved context?",
    reply=_VERDICTS,
)


@dataclass(frozen=True, slots=True)
class Dialogue:
    """One judge-backed agent or conversation metric: its prompt and what it reads."""

    name: str
    prompt: Prompt
    reads: str  # "trajectory" or "turns"


DIALOGUE: Final = {
    "task-completion": Dialogue("task-completion", TASK_COMPLETION, "trajectory"),
    "plan-adherence": Dialogue("plan-adherence", PLAN_ADHERENCE, "trajectory"),
    "plan-quality": Dialogue("plan-quality", PLAN_QUALITY, "trajectory"),
    "conversation-completeness": Dialogue("conversation-completeness", COMPLETENESS, "turns"),
    "knowledge-retention": Dialogue("knowledge-retention", KNOWLEDGE_RETENTION, "turns"),
    "role-adherence": Dialogue("role-adherence", ROLE_ADHERENCE, "turns"),
    "conversation-relevancy": Dialogue("conversation-relevancy", RELEVANCY, "turns"),
    "turn-faithfulness": Dialogue("turn-faithfulness", TURN_FAITHFULNESS, "turns"),
}

_OPTIONAL: Final = {
    TRAJECTORY_COLUMN: TRAJECTORY,
    TURNS_COLUMN: TURNS,
    CONTEXTS: pl.List(pl.String),
}


def _cut(expr: pl.Expr) -> pl.Expr:
    return expr.str.slice(0, MAX_FIELD_CHARS)


def _trajectory_expr() -> pl.Expr:
    return pl.coalesce(pl.col(f"^{TRAJECTORY_COLUMN}$"), pl.lit(None, TRAJECTORY))


def _turns_expr() -> pl.Expr:
    return pl.coalesce(pl.col(f"^{TURNS_COLUMN}$"), pl.lit(None, TURNS))


def trajectory_text() -> pl.Expr:
    """The episode's tool calls, one numbered JSON object each, every value fenced:
    ``2. {"tool": "search", "arguments": "{...}", "result": "..."}`` (``"error"`` in place of
    ``"result"`` for a call that failed)."""
    call = pl.element().struct.field
    common = {"tool": call("name"), "arguments": _cut(call("arguments"))}
    shown = (
        pl.when(call("error").is_not_null())
        .then(json_object(**common, error=_cut(call("error"))))
        .otherwise(json_object(**common, result=_cut(call("result"))))
    )
    lines = _trajectory_expr().struct.field("tool_calls").list.eval(shown)
    return pl.when(lines.list.len() == 0).then(pl.lit("(no tool calls)")).otherwise(labelled(lines))


def conversation_text() -> pl.Expr:
    """The conversation, one numbered JSON object per turn, every value fenced:
    ``3. {"role": "assistant", "content": "..."}``."""
    turn = pl.element().struct.field
    lines = _turns_expr().list.eval(json_object(role=turn("role"), content=_cut(turn("content"))))
    return pl.when(lines.list.len() == 0).then(pl.lit("(no turns)")).otherwise(labelled(lines))


def _assistant_turns() -> pl.Expr:
    return _turns_expr().list.eval(pl.element().struct.field("role") == "assistant").list.sum()


def _plan_text(plan_field: str) -> pl.Expr:
    """The plan from ``metadata.<plan_field>`` (text, or a list of steps as JSON), fenced;
    else ``(none)``."""
    given = pl.col(C.METADATA).str.json_path_match(f"$.{plan_field}")
    return pl.coalesce(fenced(given), pl.lit("(none)"))


def _need(metric: str, *, role: str | None = None, window: int = 3) -> JudgeNeed:
    spec = DIALOGUE[metric]
    inputs: dict[str, pl.Expr | Verbatim] = {}
    name = metric
    if spec.reads == "trajectory":
        episode = _trajectory_expr()
        calls = episode.struct.field("tool_calls").list.len().fill_null(0)
        usable = episode.is_not_null() & (calls <= MAX_ITEMS)
        inputs["question"] = _question_expr()
        inputs["trajectory"] = verbatim(pl.when(usable).then(trajectory_text()))
        if metric != "plan-quality":
            inputs["answer"] = pl.col(C.ACTUAL_OUTPUT)
        if metric != "task-completion":
            inputs["plan"] = verbatim(pl.when(episode.is_not_null()).then(_plan_text("plan")))
    else:
        turns = _turns_expr()
        usable = turns.is_not_null() & (turns.list.len() <= MAX_ITEMS)
        inputs["conversation"] = verbatim(pl.when(usable).then(conversation_text()))
        if metric == "role-adherence":
            inputs["role"] = (
                pl.lit(role) if role else pl.col(C.METADATA).str.json_path_match("$.role")
            )
            name += f"(role={role})" if role else ""
        if metric == "conversation-relevancy":
            inputs["window"] = verbatim(pl.lit(str(window)))
            name += f"(window={window})"
        if metric == "turn-faithfulness":
            contexts = pl.coalesce(pl.col(f"^{CONTEXTS}$"), pl.lit(None, pl.List(pl.String)))
            inputs["context"] = verbatim(
                pl.when(contexts.list.len() > 0).then(
                    numbered(contexts.list.eval(_cut(pl.element())))
                )
            )
    return JudgeNeed(name=name, prompt=spec.prompt, inputs=inputs, optional=_OPTIONAL)


def dialogue_needs(metric: str, **params: object) -> list[JudgeNeed]:
    return [_need(metric, **params)]  # type: ignore[arg-type]


def _missing(metric: str, reads: str, *, role: str | None) -> pl.Expr:
    """Why a row cannot be judged (before any call), or null."""
    if reads == "trajectory":
        episode = _trajectory_expr()
        calls = episode.struct.field("tool_calls").list.len().fill_null(0)
        return (
            pl.when(episode.is_null())
            .then(
                sample_error(
                    f"has no trajectory for {metric} metric: the outputs did not record one "
                    "(add a trajectory to the saved outputs, or return one from the system)."
                )
            )
            .when(calls > MAX_ITEMS)
            .then(
                sample_error(
                    f"has more than {MAX_ITEMS} tool calls; {metric} judges at most that many."
                )
            )
        )
    turns = _turns_expr()
    out = (
        pl.when(turns.is_null())
        .then(
            sample_error(
                f"has no turns for {metric} metric: the outputs did not record a conversation "
                "(add a turns list to the saved outputs)."
            )
        )
        .when(turns.list.len() > MAX_ITEMS)
        .then(sample_error(f"has more than {MAX_ITEMS} turns; {metric} judges at most that many."))
    )
    if metric != "conversation-completeness":
        out = out.when(_assistant_turns() == 0).then(
            sample_error(f"has no assistant turn for {metric} metric.")
        )
    if metric == "role-adherence" and not role:
        out = out.when(pl.col(C.METADATA).str.json_path_match("$.role").is_null()).then(
            sample_error("has no role for role-adherence: pass role=... or set metadata.role.")
        )
    if metric == "turn-faithfulness":
        contexts = pl.coalesce(pl.col(f"^{CONTEXTS}$"), pl.lit(None, pl.List(pl.String)))
        out = out.when(contexts.list.len().fill_null(0) == 0).then(
            sample_error("has no contexts for turn-faithfulness metric.")
        )
    return out


def dialogue_scored(metric: str, *, role: str | None = None, window: int = 3) -> Scored:
    """Score, error and details of one judge-backed agent or conversation metric."""
    spec = DIALOGUE[metric]
    need = _need(metric, role=role, window=window)
    column = f"_{metric}__reply"
    r = pl.col(column)
    value, failure = r.struct.field("value"), r.struct.field("error")
    field = value.struct.field
    key = pl.lit(need.prompt.key).alias("prompt")
    if metric == "task-completion":
        label = field("verdict").cast(pl.String)
        score = label.replace_strict(
            {"complete": 1.0, "partial": 0.5, "incomplete": 0.0},
            default=None,
            return_dtype=pl.Float64,
        )
        details = pl.struct(
            field("task"), field("outcome"), label.alias("verdict"), field("reason"), key
        )
        bad = pl.lit(None, pl.String)
    elif metric == "plan-adherence":
        followed = field("plan").list.eval(pl.element().struct.field("followed"))
        score = followed.list.mean()
        details = pl.struct(field("plan"), field("reason"), key)
        bad = pl.when(field("plan").list.len() == 0).then(
            sample_error("plan-adherence: the judge found no plan to check.")
        )
    elif metric == "plan-quality":
        checks = pl.concat_list(field("complete"), field("logical"), field("efficient"))
        score = checks.list.eval(pl.element().cast(pl.Float64)).list.mean()
        details = pl.struct(
            field("plan"),
            field("complete"),
            field("logical"),
            field("efficient"),
            field("reason"),
            key,
        )
        bad = pl.lit(None, pl.String)
    elif metric == "conversation-completeness":
        satisfied = field("intentions").list.eval(pl.element().struct.field("satisfied"))
        score = pl.when(satisfied.list.len() == 0).then(1.0).otherwise(satisfied.list.mean())
        details = pl.struct(field("intentions"), field("reason"), key)
        bad = pl.lit(None, pl.String)
    else:
        verdicts = field("verdicts")
        ok = verdicts.list.eval(pl.element().struct.field("ok"))
        score = ok.list.mean()
        expected = _assistant_turns()
        details = pl.struct(verdicts.alias("verdicts"), expected.alias("assistant_turns"), key)
        bad = pl.when(verdicts.list.len() != expected).then(
            sample_error(
                f"{metric}: the judge gave {{}} verdicts for {{}} assistant turns.",
                verdicts.list.len(),
                expected,
            )
        )
    missing = _missing(metric, spec.reads, role=role)
    failed = pl.when(failure.is_not_null()).then(
        sample_error(f"judge reply for {metric} ({need.prompt.key}) failed: {{}}", failure)
    )
    error = pl.coalesce(missing, failed, bad)
    return Scored(
        score=pl.when(error.is_null()).then(score.cast(pl.Float64).round(6)),
        error=error,
        details=pl.when(error.is_null()).then(details),
        prepare={column: reply(need)},
    )
