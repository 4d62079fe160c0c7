"""More judge-backed conversation and agent metrics on the shared judge engine: harness-evals'
coherence, resolution, topic-adherence, tool-use, conversational-g-eval and the turn-level
contextual metrics, and the judged variants of argument-correctness and step-efficiency.

As in ``_dialogue_judged``, every metric makes one judge call per distinct rendered prompt
and asks for closed answers, and its score is a fixed function of them, kept in the details:

* ``coherence``: the share of assistant turns coherent with the turns before them;
* ``resolution``: resolved 1.0, partial 0.5, unresolved 0.0;
* ``topic-adherence``: precision, recall or F1 of answering on-topic questions (answered
  on-topic: a true positive; answered off-topic: a false positive; declined on-topic: a
  false negative);
* ``tool-use``: ``min(selection, arguments)``: the calls with the right tool over the calls
  plus the tools the judge says were missing, and the calls with the right arguments over
  the calls;
* ``turn-contextual-precision`` / ``-relevancy``: per assistant turn, the rank-weighted
  precision of the passages useful to it / the share relevant to it, averaged over the
  turns (one call serves both);
* ``turn-contextual-recall``: the share of the expected outcome's statements the passages
  support;
* ``argument-correctness(judge=true)`` / ``step-efficiency(judge=true)``: the share of tool
  calls with correct arguments / that were necessary.

The retrieved passages are the row's ``contexts`` (every assistant turn of a conversation is
judged against them); the expected outcome is ``metadata.expected_outcome``, else the
sample's expected output when it is a string.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from typing import Final, Literal

import polars as pl

from evalframe.core import schema as C
from evalframe.core._contexts import CONTEXTS
from evalframe.metrics._batched import sample_error
from evalframe.metrics._dialogue_judged import (
    _OPTIONAL,
    MAX_ITEMS,
    _assistant_turns,
    _cut,
    _trajectory_expr,
    _turns_expr,
    conversation_text,
    trajectory_text,
)
from evalframe.metrics._fence import Verbatim, fenced, json_object, labelled, numbered, verbatim
from evalframe.metrics._judge_engine import JudgeNeed, parsed, reply, shipped
from evalframe.metrics._spec import Scored
from evalframe.metrics.judge import _question_expr

__all__ = [
    "JudgeNeed",
    "agent_judged",
    "agent_judged_needs",
    "coherence",
    "conversation_needs",
    "g_eval_need",
    "needs_turns",
    "parsed",
    "resolution",
    "tool_use",
    "topic_adherence",
    "turn_contexts",
    "turn_recall",
]

_VERDICT: Final = pl.Struct({"turn": pl.Int64, "ok": pl.Boolean, "reason": pl.String})
_CALL_VERDICT: Final = pl.Struct({"call": pl.Int64, "ok": pl.Boolean, "reason": pl.String})

COHERENCE: Final = shipped(
    "conversation.coherence",
    description="Is each assistant turn coherent with the turns before it?",
    reply=pl.Struct({"verdicts": pl.List(_VERDICT)}),
)

RESOLUTION: Final = shipped(
    "conversation.resolution",
    description="Did the conversation end with the user's need met (or its expected outcome)?",
    reply=pl.Struct(
        {
            "open": pl.List(pl.String),
            "verdict": pl.Enum(["resolved", "partial", "unresolved"]),
            "reason": pl.String,
        }
    ),
)

TOPICS: Final = shipped(
    "conversation.topic-adherence",
    description="Which user questions are on the allowed topics, and which were answered?",
    reply=pl.Struct(
        {
            "questions": pl.List(
                pl.Struct({"question": pl.String, "on_topic": pl.Boolean, "answered": pl.Boolean})
            ),
            "reason": pl.String,
        }
    ),
)

TOOL_USE: Final = shipped(
    "conversation.tool-use",
    description="Was each tool call of a conversation the right tool, with the right arguments?",
    reply=pl.Struct(
        {
            "calls": pl.List(
                pl.Struct(
                    {
                        "call": pl.Int64,
                        "right_tool": pl.Boolean,
                        "right_arguments": pl.Boolean,
                        "reason": pl.String,
                    }
                )
            ),
            "missing": pl.List(pl.String),
            "reason": pl.String,
        }
    ),
)

CONVERSATIONAL_G_EVAL: Final = shipped(
    "conversation.g-eval",
    description="Conversational G-Eval: rate a whole conversation from 1 to 5 by a criteria.",
    reply=pl.Struct({"score": pl.Int64, "reason": pl.String}),
)

TURN_CONTEXTS: Final = shipped(
    "conversation.turn-contexts",
    description="Per assistant turn, is each retrieved passage relevant, and useful?",
    reply=pl.Struct(
        {
            "turns": pl.List(
                pl.Struct(
                    {
                        "turn": pl.Int64,
                        "contexts": pl.List(
                            pl.Struct(
                                {"context": pl.Int64, "relevant": pl.Boolean, "useful": pl.Boolean}
                            )
                        ),
                    }
                )
            )
        }
    ),
)

TURN_RECALL: Final = shipped(
    "conversation.turn-recall",
    description="Which statements of the expected outcome do the retrieved passages support?",
    reply=pl.Struct(
        {
            "statements": pl.List(pl.Struct({"statement": pl.String, "attributable": pl.Boolean})),
            "reason": pl.String,
        }
    ),
)

ARGUMENT_CORRECTNESS: Final = shipped(
    "agent.argument-correctness",
    description="Are the arguments of each of the agent's tool calls correct for the task?",
    reply=pl.Struct({"verdicts": pl.List(_CALL_VERDICT)}),
)

STEP_EFFICIENCY: Final = shipped(
    "agent.step-efficiency",
    description="Was each of the agent's tool calls necessary for the task?",
    reply=pl.Struct({"verdicts": pl.List(_CALL_VERDICT)}),
)


# --- what the judge sees -----------------------------------------------------------------------


def _contexts() -> pl.Expr:
    return pl.coalesce(pl.col(f"^{CONTEXTS}$"), pl.lit(None, pl.List(pl.String)))


def _contexts_text() -> pl.Expr:
    """The row's passages, fenced, one per line behind ``C1.``, ``C2.``; null without any."""
    found = _contexts()
    return pl.when(found.list.len() > 0).then(
        numbered(found.list.eval(_cut(pl.element())), prefix="C")
    )


def outcome() -> pl.Expr:
    """The conversation's expected outcome: ``metadata.expected_outcome``, else a string
    expected output; null when neither is given."""
    return pl.coalesce(
        C.metadata_field("expected_outcome"),
        pl.when(pl.col(C.EXPECTED_TYPE) == "string").then(pl.col(C.EXPECTED_OUTPUT)),
    )


def _outcome_input() -> Verbatim:
    return verbatim(pl.coalesce(fenced(outcome()), pl.lit("(none)")))


def _usable_turns() -> pl.Expr:
    turns = _turns_expr()
    return turns.is_not_null() & (turns.list.len() <= MAX_ITEMS)


def _conversation_input() -> Verbatim:
    return verbatim(pl.when(_usable_turns()).then(conversation_text()))


def _turn_calls() -> pl.Expr:
    """Every tool call made in the conversation's turns, in order (a flat list; a turn
    without calls adds none)."""
    return (
        _turns_expr()
        .list.eval(pl.element().struct.field("tool_calls"))
        .list.eval(pl.element().explode())
        .list.drop_nulls()
    )


def _calls_text(calls: pl.Expr) -> pl.Expr:
    """Tool calls, one numbered JSON object each (every value fenced)."""
    call = pl.element().struct.field
    lines = calls.list.eval(
        json_object(
            tool=call("name"), arguments=_cut(call("arguments")), result=_cut(call("result"))
        )
    )
    return pl.when(lines.list.len() == 0).then(pl.lit("(no tool calls)")).otherwise(labelled(lines))


def _available_tools() -> pl.Expr:
    """The names of the tools the conversation could use (``metadata.mcp.tools``, checked
    when the dataset is read), numbered; ``(not given)`` otherwise."""
    text = C.metadata_field("mcp.tools")
    names = (
        pl.when(text.str.starts_with("["))
        .then(text)
        .str.json_decode(pl.List(pl.Struct({"name": pl.String})))
        .list.eval(pl.element().struct.field("name"))
    )
    return pl.when(names.list.len() > 0).then(numbered(names)).otherwise(pl.lit("(not given)"))


def _topics(topics: Sequence[str]) -> pl.Expr:
    """The allowed topics: the metric's, else ``metadata.topics`` (a list of strings)."""
    if topics:
        return pl.lit(list(topics), pl.List(pl.String))
    return C.metadata_field("topics").str.json_decode(pl.List(pl.String))


def _digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value).encode()).hexdigest()[:12]


# --- needs -------------------------------------------------------------------------------------


def _conversation_need(metric: str, topics: Sequence[str] = ()) -> JudgeNeed:
    contexts = _contexts_text()
    inputs: dict[str, pl.Expr | Verbatim]
    if metric == "coherence":
        return JudgeNeed(
            "coherence", COHERENCE, {"conversation": _conversation_input()}, optional=_OPTIONAL
        )
    if metric == "resolution":
        inputs = {"conversation": _conversation_input(), "outcome": _outcome_input()}
        return JudgeNeed("resolution", RESOLUTION, inputs, optional=_OPTIONAL)
    if metric == "topic-adherence":
        allowed = _topics(topics)
        inputs = {
            "conversation": _conversation_input(),
            "topics": verbatim(pl.when(allowed.list.len() > 0).then(numbered(allowed))),
        }
        name = f"topic-adherence(topics={_digest(list(topics))})" if topics else "topic-adherence"
        return JudgeNeed(name, TOPICS, inputs, optional=_OPTIONAL)
    if metric == "tool-use":
        calls = _turn_calls()
        inputs = {
            "conversation": _conversation_input(),
            "calls": verbatim(pl.when(calls.list.len() <= MAX_ITEMS).then(_calls_text(calls))),
            "tools": verbatim(_available_tools()),
        }
        return JudgeNeed("tool-use", TOOL_USE, inputs, optional=_OPTIONAL)
    if metric == "turn-contexts":
        inputs = {
            "conversation": _conversation_input(),
            "contexts": verbatim(contexts),
            "outcome": _outcome_input(),
        }
        return JudgeNeed("turn-contexts", TURN_CONTEXTS, inputs, optional=_OPTIONAL)
    inputs = {"outcome": outcome(), "contexts": verbatim(contexts)}
    return JudgeNeed("turn-recall", TURN_RECALL, inputs, optional=_OPTIONAL)


def conversation_needs(metric: str, topics: Sequence[str] = ()) -> list[JudgeNeed]:
    if metric in ("turn-contextual-precision", "turn-contextual-relevancy"):
        metric = "turn-contexts"
    if metric == "turn-contextual-recall":
        metric = "turn-recall"
    return [_conversation_need(metric, topics)]


def g_eval_need(
    steps_need: JudgeNeed | None, steps: Verbatim, criteria: str, name: str, top_logprobs: int
) -> JudgeNeed:
    """The conversational G-Eval rating need (steps from the user or from ``steps_need``)."""
    return JudgeNeed(
        name,
        CONVERSATIONAL_G_EVAL,
        {
            "criteria": pl.lit(criteria),
            "steps": steps,
            "conversation": _conversation_input(),
            "outcome": _outcome_input(),
        },
        requires=(steps_need,) if steps_need is not None else (),
        optional=_OPTIONAL,
        top_logprobs=top_logprobs or None,
    )


def _agent_need(metric: str) -> JudgeNeed:
    episode = _trajectory_expr()
    calls = episode.struct.field("tool_calls").list.len().fill_null(0)
    shown = verbatim(
        pl.when(episode.is_not_null() & (calls > 0) & (calls <= MAX_ITEMS)).then(trajectory_text())
    )
    inputs: dict[str, pl.Expr | Verbatim] = {"question": _question_expr(), "trajectory": shown}
    if metric == "step-efficiency":
        inputs["answer"] = pl.col(C.ACTUAL_OUTPUT)
        return JudgeNeed("step-efficiency(judge)", STEP_EFFICIENCY, inputs, optional=_OPTIONAL)
    return JudgeNeed(
        "argument-correctness(judge)", ARGUMENT_CORRECTNESS, inputs, optional=_OPTIONAL
    )


def agent_judged_needs(metric: str) -> list[JudgeNeed]:
    return [_agent_need(metric)]


# --- scores ------------------------------------------------------------------------------------


def _failed(metric: str, need: JudgeNeed, failure: pl.Expr) -> pl.Expr:
    return pl.when(failure.is_not_null()).then(
        sample_error(f"judge reply for {metric} ({need.prompt.key}) failed: {{}}", failure)
    )


def needs_turns(metric: str, *, assistant: bool = True) -> pl.Expr:
    """Why a row's conversation cannot be judged, or null."""
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
    if assistant:
        out = out.when(_assistant_turns() == 0).then(
            sample_error(f"has no assistant turn for {metric} metric.")
        )
    return out


def _finish(
    metric: str,
    need: JudgeNeed,
    score: pl.Expr,
    details: pl.Expr,
    missing: pl.Expr,
    bad: pl.Expr | None = None,
) -> Scored:
    column = f"_{metric}__reply"
    r = pl.col(column)
    error = pl.coalesce(
        missing,
        _failed(metric, need, r.struct.field("error")),
        bad if bad is not None else pl.lit(None, pl.String),
    )
    return Scored(
        score=pl.when(error.is_null()).then(score.cast(pl.Float64).round(6)),
        error=error,
        details=pl.when(error.is_null()).then(details),
        prepare={column: reply(need)},
    )


def _field(metric: str) -> Callable[[str], pl.Expr]:
    """The fields of ``metric``'s decoded reply (read in ``_finish``'s prepared column)."""
    value: pl.Expr = pl.col(f"_{metric}__reply").struct.field("value")
    return value.struct.field


def coherence() -> Scored:
    need = _conversation_need("coherence")
    field = _field("coherence")
    verdicts = field("verdicts")
    expected = _assistant_turns()
    return _finish(
        "coherence",
        need,
        verdicts.list.eval(pl.element().struct.field("ok")).list.mean(),
        pl.struct(
            verdicts.alias("verdicts"),
            expected.alias("assistant_turns"),
            pl.lit(need.prompt.key).alias("prompt"),
        ),
        needs_turns("coherence"),
        pl.when(verdicts.list.len() != expected).then(
            sample_error(
                "coherence: the judge gave {} verdicts for {} assistant turns.",
                verdicts.list.len(),
                expected,
            )
        ),
    )


def resolution() -> Scored:
    need = _conversation_need("resolution")
    field = _field("resolution")
    label = field("verdict").cast(pl.String)
    score = label.replace_strict(
        {"resolved": 1.0, "partial": 0.5, "unresolved": 0.0}, default=None, return_dtype=pl.Float64
    )
    return _finish(
        "resolution",
        need,
        score,
        pl.struct(
            label.alias("verdict"),
            field("open").alias("open"),
            field("reason").alias("reason"),
            outcome().alias("expected_outcome"),
            pl.lit(need.prompt.key).alias("prompt"),
        ),
        needs_turns("resolution", assistant=False),
    )


def topic_adherence(topics: Sequence[str], mode: Literal["f1", "precision", "recall"]) -> Scored:
    need = _conversation_need("topic-adherence", topics)
    field = _field("topic-adherence")
    questions = field("questions")

    def count(on_topic: bool, answered: bool) -> pl.Expr:
        q = pl.element().struct.field
        return questions.list.eval(
            (q("on_topic") == on_topic) & (q("answered") == answered)
        ).list.sum()

    tp, fp, fn = count(True, True), count(False, True), count(True, False)
    precision = pl.when(tp + fp == 0).then(1.0).otherwise(tp / (tp + fp))
    recall = pl.when(tp + fn == 0).then(1.0).otherwise(tp / (tp + fn))
    f1 = (
        pl.when(precision + recall == 0)
        .then(0.0)
        .otherwise(2 * precision * recall / (precision + recall))
    )
    score = {"f1": f1, "precision": precision, "recall": recall}[mode]
    given = _topics(topics)
    missing = pl.coalesce(
        needs_turns("topic-adherence", assistant=False),
        pl.when(given.list.len().fill_null(0) == 0).then(
            sample_error(
                "has no allowed topics for topic-adherence: pass topics=[...] or set "
                "metadata.topics."
            )
        ),
    )
    return _finish(
        "topic-adherence",
        need,
        score,
        pl.struct(
            questions.alias("questions"),
            tp.cast(pl.Int64).alias("answered_on_topic"),
            fp.cast(pl.Int64).alias("answered_off_topic"),
            fn.cast(pl.Int64).alias("declined_on_topic"),
            precision.alias("precision"),
            recall.alias("recall"),
            pl.lit(need.prompt.key).alias("prompt"),
        ),
        missing,
    )


def tool_use() -> Scored:
    need = _conversation_need("tool-use")
    field = _field("tool-use")
    calls = field("calls")
    missing_tools = field("missing")
    n = _turn_calls().list.len().cast(pl.Int64)
    c = pl.element().struct.field
    right_tool = calls.list.eval(c("right_tool")).list.sum()
    right_args = calls.list.eval(c("right_arguments")).list.sum()
    selection = (
        pl.when(n + missing_tools.list.len() == 0)
        .then(1.0)
        .otherwise(right_tool / (n + missing_tools.list.len()))
    )
    arguments = pl.when(n == 0).then(1.0).otherwise(right_args / n)
    missing = pl.coalesce(
        needs_turns("tool-use", assistant=False),
        pl.when(n > MAX_ITEMS).then(
            sample_error(
                f"has more than {MAX_ITEMS} tool calls; tool-use judges at most that many."
            )
        ),
    )
    return _finish(
        "tool-use",
        need,
        pl.min_horizontal(selection, arguments),
        pl.struct(
            calls.alias("calls"),
            missing_tools.alias("missing_tools"),
            selection.alias("selection"),
            arguments.alias("arguments"),
            pl.lit(need.prompt.key).alias("prompt"),
        ),
        missing,
        pl.when(calls.list.len() != n).then(
            sample_error(
                "tool-use: the judge gave {} verdicts for {} tool calls.", calls.list.len(), n
            )
        ),
    )


def turn_contexts(kind: Literal["precision", "relevancy"]) -> Scored:
    metric = f"turn-contextual-{kind}"
    need = _conversation_need("turn-contexts")
    field = _field(metric)
    turns = field("turns")
    n_contexts = _contexts().list.len()
    expected_turns = _assistant_turns()
    flag = "useful" if kind == "precision" else "relevant"
    flags = turns.list.eval(
        pl.element()
        .struct.field("contexts")
        .list.eval(pl.element().struct.field(flag).cast(pl.Float64))
    )
    if kind == "precision":
        u = pl.element()
        ap = (
            (u * u.cum_sum() / pl.int_range(1, pl.len() + 1, dtype=pl.Int64)).sum() / u.sum()
        ).fill_nan(0.0)
        per_turn = flags.list.eval(pl.element().list.eval(ap).list.first().fill_null(0.0))
    else:
        per_turn = flags.list.eval(pl.element().list.mean())
    sizes = turns.list.eval(pl.element().struct.field("contexts").list.len())
    wrong_sizes = (sizes.list.min() != n_contexts) | (sizes.list.max() != n_contexts)
    missing = pl.coalesce(
        needs_turns(metric),
        pl.when(n_contexts.fill_null(0) == 0).then(
            sample_error(f"has no contexts for {metric} metric.")
        ),
        pl.when(pl.lit(kind == "precision") & outcome().is_null()).then(
            sample_error(
                f"has no expected outcome for {metric}: set metadata.expected_outcome or give "
                "a string expected output."
            )
        ),
    )
    bad = (
        pl.when(turns.list.len() != expected_turns)
        .then(
            sample_error(
                f"{metric}: the judge gave {{}} turns for {{}} assistant turns.",
                turns.list.len(),
                expected_turns,
            )
        )
        .when(wrong_sizes.fill_null(False))
        .then(
            sample_error(
                f"{metric}: the judge did not give one verdict per passage ({{}}) for every turn.",
                n_contexts,
            )
        )
    )
    return _finish(
        metric,
        need,
        per_turn.list.mean(),
        pl.struct(
            turns.alias("turns"),
            per_turn.alias("turn_scores"),
            n_contexts.cast(pl.Int64).alias("contexts"),
            pl.lit(need.prompt.key).alias("prompt"),
        ),
        missing,
        bad,
    )


def turn_recall() -> Scored:
    metric = "turn-contextual-recall"
    need = _conversation_need("turn-recall")
    field = _field(metric)
    statements = field("statements")
    supported = statements.list.eval(pl.element().struct.field("attributable"))
    missing = pl.coalesce(
        pl.when(_contexts().list.len().fill_null(0) == 0).then(
            sample_error(f"has no contexts for {metric} metric.")
        ),
        pl.when(outcome().is_null()).then(
            sample_error(
                f"has no expected outcome for {metric}: set metadata.expected_outcome or give "
                "a string expected output."
            )
        ),
    )
    return _finish(
        metric,
        need,
        pl.when(supported.list.len() == 0).then(1.0).otherwise(supported.list.mean()),
        pl.struct(
            statements.alias("statements"),
            field("reason").alias("reason"),
            pl.lit(need.prompt.key).alias("prompt"),
        ),
        missing,
    )


def agent_judged(metric: Literal["argument-correctness", "step-efficiency"]) -> Scored:
    """The judged variant of argument-correctness or step-efficiency: the share of tool
    calls the judge finds correct / necessary; no calls score 1.0 with a note."""
    need = _agent_need(metric)
    name = f"{metric}(judge)"
    column = f"_{metric}__judged"
    r = pl.col(column)
    verdicts = r.struct.field("value").struct.field("verdicts")
    episode = _trajectory_expr()
    n = episode.struct.field("tool_calls").list.len().cast(pl.Int64)
    none = n == 0
    missing = (
        pl.when(episode.is_null())
        .then(
            sample_error(
                f"has no trajectory for {metric} metric: the outputs did not record one "
                "(add a trajectory to the saved outputs, or return one from the system)."
            )
        )
        .when(n > MAX_ITEMS)
        .then(
            sample_error(f"has more than {MAX_ITEMS} tool calls; {name} judges at most that many.")
        )
    )
    failure = r.struct.field("error")
    error = pl.coalesce(
        missing,
        pl.when(~none).then(_failed(name, need, failure)),
        pl.when(~none & (verdicts.list.len() != n)).then(
            sample_error(
                f"{name}: the judge gave {{}} verdicts for {{}} tool calls.", verdicts.list.len(), n
            )
        ),
    )
    score = (
        pl.when(none)
        .then(1.0)
        .otherwise(verdicts.list.eval(pl.element().struct.field("ok")).list.mean())
    )
    return Scored(
        score=pl.when(error.is_null()).then(score.round(6)),
        error=error,
        details=pl.when(error.is_null()).then(
            pl.struct(
                verdicts=pl.when(~none).then(verdicts),
                calls=n,
                note=pl.when(none).then(pl.lit("No tool calls: nothing to judge, scored 1.0.")),
                prompt=pl.lit(need.prompt.key),
            )
        ),
        prepare={column: reply(need)},
    )
