"""Conversation metrics over the ``turns`` column: deterministic turn-latency,
turn-token-cost and turn-efficiency, and judge-backed knowledge-retention, role-adherence,
conversation-completeness, conversation-relevancy and turn-faithfulness (prompts and scoring in
``metrics/_dialogue_judged.py``), coherence, resolution, topic-adherence, tool-use,
conversational-g-eval and turn-contextual-precision, -recall and -relevancy (in
``metrics/_conversation_judged.py``).

``turns`` (``core/_turns.py``) holds one element per turn with ``role``, ``content``,
``tool_calls``, ``latency_ms`` and ``tokens``. turn-latency and turn-token-cost grade the
assistant's turns the way the operational metrics grade one call: each turn's value v maps to
``clamp(1 - v / budget, 0, 1)`` and the score is their mean. Computed with list expressions
over the whole column. A row without turns, without an assistant turn, or with an
assistant turn missing the value is that row's error, never a silent 0 or 1. turn-efficiency
compares the number of turns with the sample's expected number.
"""

from __future__ import annotations

from typing import Annotated, Literal

import polars as pl

from evalframe.core import schema as C
from evalframe.core._errors import MetricError
from evalframe.core._turns import TURNS, TURNS_COLUMN
from evalframe.metrics import _conversation_judged as more
from evalframe.metrics import _dialogue_judged as judged
from evalframe.metrics._batched import sample_error
from evalframe.metrics._registry import metric
from evalframe.metrics._spec import Range, Scored

__all__ = [
    "coherence",
    "conversation_completeness",
    "conversation_relevancy",
    "conversational_g_eval",
    "knowledge_retention",
    "resolution",
    "role_adherence",
    "tool_use",
    "topic_adherence",
    "turn_contextual_precision",
    "turn_contextual_recall",
    "turn_contextual_relevancy",
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

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([{"id": "c", "input": {"chat": "c"}, "expected_output": ""}],
        ...                              name="demo")
        >>> turns = [{"role": "user", "content": "Hi"},
        ...          {"role": "assistant", "content": "Hello!", "latency_ms": 500},
        ...          {"role": "user", "content": "Refund?"},
        ...          {"role": "assistant", "content": "Done.", "latency_ms": 3000}]
        >>> run = ef.evaluate(ds, system=lambda sample: {"output": "", "turns": turns},
        ...                   metrics=["turn-latency(max_ms=5000)"])
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        c 0.65 {"assistant_turns":2,"mean_latency_ms":1750.0,"worst_latency_ms":3000.0,"worst_assistant_turn":1,"budget_max_ms":5000.0}
    """  # noqa: E501
    return _per_turn("turn-latency", "latency_ms", max_ms, "max_ms")


@metric("turn-token-cost", family="conversation", dimension="performance")
def turn_token_cost(*, max_tokens: Annotated[int, Range(ge=1)] = 4096) -> Scored:
    """Each assistant turn's tokens within a budget, averaged over the conversation.

    The mean over assistant turns of ``clamp(1 - tokens / max_tokens, 0, 1)``.

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([{"id": "c", "input": {"chat": "c"}, "expected_output": ""}],
        ...                              name="demo")
        >>> turns = [{"role": "user", "content": "Hi"},
        ...          {"role": "assistant", "content": "Hello!", "tokens": 100},
        ...          {"role": "user", "content": "Refund?"},
        ...          {"role": "assistant", "content": "Done.", "tokens": 300}]
        >>> run = ef.evaluate(ds, system=lambda sample: {"output": "", "turns": turns},
        ...                   metrics=["turn-token-cost(max_tokens=1000)"])
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        c 0.8 {"assistant_turns":2,"mean_tokens":200.0,"worst_tokens":300.0,"worst_assistant_turn":1,"budget_max_tokens":1000.0}
    """  # noqa: E501
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

    Examples:
        >>> import evalframe as ef
        >>> def judge(prompt):  # the assistant forgot the order number the user gave
        ...     return {"verdicts": [{"turn": 2, "ok": True, "reason": "r"},
        ...                          {"turn": 4, "ok": False, "reason": "Asks for the order again."}]}
        >>> ds = ef.Dataset.from_records([{"id": "c", "input": {"chat": "c"}, "expected_output": ""}],
        ...                              name="demo")
        >>> turns = [{"role": "user", "content": "My order is 41."},
        ...          {"role": "assistant", "content": "Thanks."},
        ...          {"role": "user", "content": "Where is it?"},
        ...          {"role": "assistant", "content": "Which order do you mean?"}]
        >>> run = ef.evaluate(ds, system=lambda sample: {"output": "", "turns": turns},
        ...                   metrics=["knowledge-retention"],
        ...                   providers=ef.Providers(judge=ef.testing.ScriptedJudge(judge), cache=False))
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        c 0.5 {"verdicts":[{"turn":2,"ok":true,"reason":"r"},{"turn":4,"ok":false,"reason":"Asks for the order again."}],"assistant_turns":2,"prompt":"conversation.knowledge-retention@v2"}
    """  # noqa: E501
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

    Examples:
        >>> import evalframe as ef
        >>> def judge(prompt):
        ...     return {"verdicts": [{"turn": 2, "ok": True, "reason": "r"},
        ...                          {"turn": 4, "ok": False, "reason": "Wrote a poem."}]}
        >>> ds = ef.Dataset.from_records([{"id": "c", "input": {"chat": "c"}, "expected_output": ""}],
        ...                              name="demo")
        >>> turns = [{"role": "user", "content": "Is my bill paid?"},
        ...          {"role": "assistant", "content": "Yes, on May 2."},
        ...          {"role": "user", "content": "Write me a poem."},
        ...          {"role": "assistant", "content": "Roses are red..."}]
        >>> run = ef.evaluate(ds, system=lambda sample: {"output": "", "turns": turns},
        ...                   metrics=['role-adherence(role="a billing support agent")'],
        ...                   providers=ef.Providers(judge=ef.testing.ScriptedJudge(judge), cache=False))
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        c 0.5 {"verdicts":[{"turn":2,"ok":true,"reason":"r"},{"turn":4,"ok":false,"reason":"Wrote a poem."}],"assistant_turns":2,"prompt":"conversation.role-adherence@v2"}
    """  # noqa: E501
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

    Examples:
        >>> import evalframe as ef
        >>> def judge(prompt):
        ...     return {"intentions": [{"intention": "cancel the order", "satisfied": True},
        ...                            {"intention": "get a refund", "satisfied": False}], "reason": "r"}
        >>> ds = ef.Dataset.from_records([{"id": "c", "input": {"chat": "c"}, "expected_output": ""}],
        ...                              name="demo")
        >>> turns = [{"role": "user", "content": "Cancel order 41 and refund me."},
        ...          {"role": "assistant", "content": "Order 41 is cancelled."}]
        >>> run = ef.evaluate(ds, system=lambda sample: {"output": "", "turns": turns},
        ...                   metrics=["conversation-completeness"],
        ...                   providers=ef.Providers(judge=ef.testing.ScriptedJudge(judge), cache=False))
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        c 0.5 {"intentions":[{"intention":"cancel the order","satisfied":true},{"intention":"get a refund","satisfied":false}],"reason":"r","prompt":"conversation.completeness@v2"}
    """  # noqa: E501
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

    Examples:
        >>> import evalframe as ef
        >>> def judge(prompt):
        ...     return {"verdicts": [{"turn": 2, "ok": True, "reason": "r"},
        ...                          {"turn": 4, "ok": False, "reason": "Talks about the weather."}]}
        >>> ds = ef.Dataset.from_records([{"id": "c", "input": {"chat": "c"}, "expected_output": ""}],
        ...                              name="demo")
        >>> turns = [{"role": "user", "content": "Refund order 41?"},
        ...          {"role": "assistant", "content": "Done."},
        ...          {"role": "user", "content": "When will I see it?"},
        ...          {"role": "assistant", "content": "It is sunny today."}]
        >>> run = ef.evaluate(ds, system=lambda sample: {"output": "", "turns": turns},
        ...                   metrics=["conversation-relevancy(window=2)"],
        ...                   providers=ef.Providers(judge=ef.testing.ScriptedJudge(judge), cache=False))
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        c 0.5 {"verdicts":[{"turn":2,"ok":true,"reason":"r"},{"turn":4,"ok":false,"reason":"Talks about the weather."}],"assistant_turns":2,"prompt":"conversation.relevancy@v2"}
    """  # noqa: E501
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

    Examples:
        >>> import evalframe as ef
        >>> def judge(prompt):
        ...     return {"verdicts": [{"turn": 2, "ok": True, "reason": "r"},
        ...                          {"turn": 4, "ok": False, "reason": "No context says 2 days."}]}
        >>> ds = ef.Dataset.from_records([{"id": "c", "input": {"chat": "c"}, "expected_output": ""}],
        ...                              name="demo")
        >>> turns = [{"role": "user", "content": "Refund order 41?"},
        ...          {"role": "assistant", "content": "Refunds are possible within 30 days."},
        ...          {"role": "user", "content": "How long does it take?"},
        ...          {"role": "assistant", "content": "2 days."}]
        >>> def bot(sample):
        ...     return {"output": "", "turns": turns, "contexts": ["Refunds: within 30 days of purchase."]}
        >>> run = ef.evaluate(ds, system=bot, metrics=["turn-faithfulness"],
        ...                   providers=ef.Providers(judge=ef.testing.ScriptedJudge(judge), cache=False))
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        c 0.5 {"verdicts":[{"turn":2,"ok":true,"reason":"r"},{"turn":4,"ok":false,"reason":"No context says 2 days."}],"assistant_turns":2,"prompt":"conversation.turn-faithfulness@v2"}
    """  # noqa: E501
    return judged.dialogue_scored("turn-faithfulness")


@metric(
    "coherence",
    family="conversation",
    dimension="correctness",
    threshold=0.7,
    needs=lambda: more.conversation_needs("coherence"),
)
def coherence() -> Scored:
    """The share of assistant turns coherent with the conversation before them.

    harness-evals' conversation_coherence. One judge call per distinct conversation (prompt
    ``conversation.coherence``): one verdict per assistant turn, coherent when it addresses
    what was said, keeps and does not contradict earlier turns, and changes topic naturally.
    Details: the verdicts (turn, ok, reason), the number of assistant turns, the prompt key.

    Examples:
        >>> import evalframe as ef
        >>> def judge(prompt):
        ...     ok = "refunded" in prompt
        ...     return {"verdicts": [{"turn": 2, "ok": ok, "reason": "r"}]}
        >>> chats = {
        ...     "a": [{"role": "user", "content": "Refund order 41?"},
        ...           {"role": "assistant", "content": "Done: order 41 is refunded."}],
        ...     "b": [{"role": "user", "content": "Refund order 42?"},
        ...           {"role": "assistant", "content": "Our shop opens at 9."}]}
        >>> ds = ef.Dataset.from_records([{"id": k, "input": {"chat": k}, "expected_output":
        ...     "The order is refunded."} for k in chats], name="demo")
        >>> def bot(sample):
        ...     return {"output": "", "turns": chats[sample["chat"]], "contexts": [
        ...         "Orders are refunded within 3 days.", "The shop opens at 9."]}
        >>> run = ef.evaluate(ds, system=bot, metrics=["coherence"],
        ...                   providers=ef.Providers(judge=ef.testing.ScriptedJudge(judge),
        ...                                          cache=False))
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        a 1.0 {"verdicts":[{"turn":2,"ok":true,"reason":"r"}],"assistant_turns":1,"prompt":"conversation.coherence@v1"}
        b 0.0 {"verdicts":[{"turn":2,"ok":false,"reason":"r"}],"assistant_turns":1,"prompt":"conversation.coherence@v1"}
    """  # noqa: E501
    return more.coherence()


@metric(
    "resolution",
    family="conversation",
    dimension="correctness",
    threshold=0.7,
    needs=lambda: more.conversation_needs("resolution"),
)
def resolution() -> Scored:
    """Whether the conversation ended with the user's need met: resolved 1.0, partial 0.5,
    unresolved 0.0.

    harness-evals' conversation_resolution. The judge (prompt ``conversation.resolution``)
    lists what was left open and labels the conversation, against the expected outcome when
    the sample gives one (``metadata.expected_outcome``, else a string expected output).
    Details: verdict, open items, reason, the expected outcome, the prompt key.

    Examples:
        >>> import evalframe as ef
        >>> def judge(prompt):
        ...     verdict = "resolved" if "Done" in prompt else "unresolved"
        ...     return {"open": [], "verdict": verdict, "reason": "r"}
        >>> chats = {
        ...     "a": [{"role": "user", "content": "Refund order 41?"},
        ...           {"role": "assistant", "content": "Done: order 41 is refunded."}],
        ...     "b": [{"role": "user", "content": "Refund order 42?"},
        ...           {"role": "assistant", "content": "Our shop opens at 9."}]}
        >>> ds = ef.Dataset.from_records([{"id": k, "input": {"chat": k}, "expected_output":
        ...     "The order is refunded."} for k in chats], name="demo")
        >>> def bot(sample):
        ...     return {"output": "", "turns": chats[sample["chat"]], "contexts": [
        ...         "Orders are refunded within 3 days.", "The shop opens at 9."]}
        >>> run = ef.evaluate(ds, system=bot, metrics=["resolution"],
        ...                   providers=ef.Providers(judge=ef.testing.ScriptedJudge(judge),
        ...                                          cache=False))
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        a 1.0 {"verdict":"resolved","open":[],"reason":"r","expected_outcome":"The order is refunded.","prompt":"conversation.resolution@v1"}
        b 0.0 {"verdict":"unresolved","open":[],"reason":"r","expected_outcome":"The order is refunded.","prompt":"conversation.resolution@v1"}
    """  # noqa: E501
    return more.resolution()


@metric(
    "topic-adherence",
    family="conversation",
    dimension="trajectory",
    threshold=0.7,
    needs=lambda *, topics=(), mode="f1": more.conversation_needs("topic-adherence", topics=topics),
)
def topic_adherence(
    *, topics: tuple[str, ...] = (), mode: Literal["f1", "precision", "recall"] = "f1"
) -> Scored:
    """How well the assistant answers on-topic questions and declines off-topic ones.

    The allowed topics are ``topics``, else the sample's ``metadata.topics``. The judge
    (prompt ``conversation.topic-adherence``) lists the user's questions, each on or off
    the topics and answered or declined. With TP the on-topic questions answered, FP the
    off-topic ones answered and FN the on-topic ones declined: precision TP/(TP+FP) (1.0
    when nothing was answered), recall TP/(TP+FN) (1.0 when nothing was on topic), and
    ``mode`` picks precision, recall or their F1 (the default), as Ragas' topic adherence.
    Details: the questions, the three counts, precision, recall, the prompt key.

    Examples:
        >>> import evalframe as ef
        >>> def judge(prompt):
        ...     answered = "refunded" in prompt
        ...     return {"questions": [{"question": "refund?", "on_topic": True,
        ...                            "answered": answered}], "reason": "r"}
        >>> chats = {
        ...     "a": [{"role": "user", "content": "Refund order 41?"},
        ...           {"role": "assistant", "content": "Done: order 41 is refunded."}],
        ...     "b": [{"role": "user", "content": "Refund order 42?"},
        ...           {"role": "assistant", "content": "Our shop opens at 9."}]}
        >>> ds = ef.Dataset.from_records([{"id": k, "input": {"chat": k}, "expected_output":
        ...     "The order is refunded."} for k in chats], name="demo")
        >>> def bot(sample):
        ...     return {"output": "", "turns": chats[sample["chat"]], "contexts": [
        ...         "Orders are refunded within 3 days.", "The shop opens at 9."]}
        >>> run = ef.evaluate(ds, system=bot, metrics=["topic-adherence(topics=[orders])"],
        ...                   providers=ef.Providers(judge=ef.testing.ScriptedJudge(judge),
        ...                                          cache=False))
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        a 1.0 {"questions":[{"question":"refund?","on_topic":true,"answered":true}],"answered_on_topic":1,"answered_off_topic":0,"declined_on_topic":0,"precision":1.0,"recall":1.0,"prompt":"conversation.topic-adherence@v1"}
        b 0.0 {"questions":[{"question":"refund?","on_topic":true,"answered":false}],"answered_on_topic":0,"answered_off_topic":0,"declined_on_topic":1,"precision":1.0,"recall":0.0,"prompt":"conversation.topic-adherence@v1"}
    """  # noqa: E501
    if any(not t.strip() for t in topics):
        raise MetricError("Metric 'topic-adherence' parameter 'topics' holds an empty topic.")
    return more.topic_adherence(topics, mode)


@metric(
    "tool-use",
    family="conversation",
    dimension="trajectory",
    threshold=0.7,
    needs=lambda: more.conversation_needs("tool-use"),
)
def tool_use() -> Scored:
    """How well the assistant used tools in the conversation: ``min(selection, arguments)``.

    harness-evals' tool_use. The judge (prompt ``conversation.tool-use``) sees the
    conversation, every tool call of its turns and the available tools (the names in
    ``metadata.mcp.tools``, when given), says of each call whether it was the
    right tool and had the right arguments, and names the tools that should have been
    called and were not. selection = right tools / (calls + missing tools), arguments =
    right arguments / calls (1.0 without calls). Details: the verdicts, the missing tools,
    both fractions, the prompt key.

    Examples:
        >>> import evalframe as ef
        >>> def judge(prompt):
        ...     return {"calls": [], "missing": [] if "refunded" in prompt else ["refund"],
        ...             "reason": "r"}
        >>> chats = {
        ...     "a": [{"role": "user", "content": "Refund order 41?"},
        ...           {"role": "assistant", "content": "Done: order 41 is refunded."}],
        ...     "b": [{"role": "user", "content": "Refund order 42?"},
        ...           {"role": "assistant", "content": "Our shop opens at 9."}]}
        >>> ds = ef.Dataset.from_records([{"id": k, "input": {"chat": k}, "expected_output":
        ...     "The order is refunded."} for k in chats], name="demo")
        >>> def bot(sample):
        ...     return {"output": "", "turns": chats[sample["chat"]], "contexts": [
        ...         "Orders are refunded within 3 days.", "The shop opens at 9."]}
        >>> run = ef.evaluate(ds, system=bot, metrics=["tool-use"],
        ...                   providers=ef.Providers(judge=ef.testing.ScriptedJudge(judge),
        ...                                          cache=False))
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        a 1.0 {"calls":[],"missing_tools":[],"selection":1.0,"arguments":1.0,"prompt":"conversation.tool-use@v1"}
        b 0.0 {"calls":[],"missing_tools":["refund"],"selection":0.0,"arguments":1.0,"prompt":"conversation.tool-use@v1"}
    """  # noqa: E501
    return more.tool_use()


def _conversational_g_eval_needs(
    *, criteria: str, steps: tuple[str, ...] | None = None, top_logprobs: int = 5
) -> list[more.JudgeNeed]:
    return [_g_eval_need(criteria, steps, top_logprobs)]


def _g_eval_need(criteria: str, steps: tuple[str, ...] | None, top_logprobs: int) -> more.JudgeNeed:
    from evalframe.metrics import judge_toolbox as toolbox

    given = bool(steps)
    steps_need = None if given else toolbox._steps_need(criteria)
    shown = (
        toolbox._listed(steps or ())
        if given
        else toolbox._block(
            more.parsed(toolbox._steps_need(criteria)).struct.field("value").struct.field("steps"),
            "(no steps)",
        )
    )
    name = (
        f"conversational-g-eval(criteria={toolbox._hash(criteria)},"
        f"steps={toolbox._hash(list(steps)) if steps else 'generated'}"
        f"{f',top_logprobs={top_logprobs}' if top_logprobs else ''})"
    )
    return more.g_eval_need(steps_need, shown, criteria, name, top_logprobs)


@metric(
    "conversational-g-eval",
    family="conversation",
    dimension="correctness",
    threshold=0.7,
    needs=_conversational_g_eval_needs,
)
def conversational_g_eval(
    *,
    criteria: str,
    steps: tuple[str, ...] | None = None,
    top_logprobs: Annotated[int, Range(ge=0, le=20)] = 5,
) -> Scored:
    """G-Eval over a whole conversation: a 1-5 rating by ``criteria``, mapped to [0, 1].

    As ``g-eval`` (evaluation steps generated once per criteria unless ``steps`` are given,
    shared with g-eval; the probability-weighted rating when the judge gives token logprobs),
    with the conversation and its expected outcome in place of one answer (prompt
    ``conversation.g-eval``). Details as for g-eval.

    Examples:
        >>> import evalframe as ef
        >>> def judge(prompt):
        ...     return {"score": 5 if "Done" in prompt else 2, "reason": "r"}
        >>> chats = {
        ...     "a": [{"role": "user", "content": "Refund order 41?"},
        ...           {"role": "assistant", "content": "Done: order 41 is refunded."}],
        ...     "b": [{"role": "user", "content": "Refund order 42?"},
        ...           {"role": "assistant", "content": "Our shop opens at 9."}]}
        >>> ds = ef.Dataset.from_records([{"id": k, "input": {"chat": k}, "expected_output":
        ...     "The order is refunded."} for k in chats], name="demo")
        >>> def bot(sample):
        ...     return {"output": "", "turns": chats[sample["chat"]], "contexts": [
        ...         "Orders are refunded within 3 days.", "The shop opens at 9."]}
        >>> run = ef.evaluate(ds, system=bot, metrics=['conversational-g-eval(criteria="Helpful.", steps=[Read it], top_logprobs=0)'],
        ...                   providers=ef.Providers(judge=ef.testing.ScriptedJudge(judge),
        ...                                          cache=False))
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        a 1.0 {"criteria":"Helpful.","steps":["Read it"],"rating":5,"reason":"r","probabilities":null,"expected_rating":5.0,"method":"rating","prompt":"conversation.g-eval@v1"}
        b 0.25 {"criteria":"Helpful.","steps":["Read it"],"rating":2,"reason":"r","probabilities":null,"expected_rating":2.0,"method":"rating","prompt":"conversation.g-eval@v1"}
    """  # noqa: E501
    from evalframe.metrics.judge_toolbox import rated

    if not criteria.strip():
        raise MetricError(
            "Metric 'conversational-g-eval' parameter 'criteria' must be non-empty text."
        )
    need = _g_eval_need(criteria, steps, top_logprobs)
    scored = rated("conversational-g-eval", need, criteria, steps, top_logprobs)
    missing = more.needs_turns("conversational-g-eval", assistant=False)
    error = pl.coalesce(missing, scored.error)
    return Scored(
        score=pl.when(error.is_null()).then(scored.score),
        error=error,
        details=pl.when(error.is_null()).then(scored.details),
        prepare=scored.prepare,
    )


@metric(
    "turn-contextual-precision",
    family="conversation",
    dimension="groundedness",
    threshold=0.5,
    needs=lambda: more.conversation_needs("turn-contextual-precision"),
)
def turn_contextual_precision() -> Scored:
    """Per assistant turn, the rank-weighted precision of the passages useful to it, averaged.

    For each assistant turn, the judge (prompt ``conversation.turn-contexts``, one call per
    conversation, shared with turn-contextual-relevancy) says which of the row's retrieved
    ``contexts`` are useful to reach the expected outcome for that turn. A turn's score is
    the mean of precision@k over the ranks k of the useful passages (0.0 when none is
    useful); the metric's, the mean over the assistant turns. Needs an expected outcome
    (``metadata.expected_outcome`` or a string expected output). Details: the verdicts,
    each turn's score, the number of passages, the prompt key.

    Examples:
        >>> import evalframe as ef
        >>> def judge(prompt):
        ...     first = "Done" in prompt
        ...     return {"turns": [{"turn": 2, "contexts": [
        ...         {"context": 1, "relevant": True, "useful": first},
        ...         {"context": 2, "relevant": False, "useful": not first}]}]}
        >>> chats = {
        ...     "a": [{"role": "user", "content": "Refund order 41?"},
        ...           {"role": "assistant", "content": "Done: order 41 is refunded."}],
        ...     "b": [{"role": "user", "content": "Refund order 42?"},
        ...           {"role": "assistant", "content": "Our shop opens at 9."}]}
        >>> ds = ef.Dataset.from_records([{"id": k, "input": {"chat": k}, "expected_output":
        ...     "The order is refunded."} for k in chats], name="demo")
        >>> def bot(sample):
        ...     return {"output": "", "turns": chats[sample["chat"]], "contexts": [
        ...         "Orders are refunded within 3 days.", "The shop opens at 9."]}
        >>> run = ef.evaluate(ds, system=bot, metrics=["turn-contextual-precision"],
        ...                   providers=ef.Providers(judge=ef.testing.ScriptedJudge(judge),
        ...                                          cache=False))
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        a 1.0 {"turns":[{"turn":2,"contexts":[{"context":1,"relevant":true,"useful":true},{"context":2,"relevant":false,"useful":false}]}],"turn_scores":[1.0],"contexts":2,"prompt":"conversation.turn-contexts@v1"}
        b 0.5 {"turns":[{"turn":2,"contexts":[{"context":1,"relevant":true,"useful":false},{"context":2,"relevant":false,"useful":true}]}],"turn_scores":[0.5],"contexts":2,"prompt":"conversation.turn-contexts@v1"}
    """  # noqa: E501
    return more.turn_contexts("precision")


@metric(
    "turn-contextual-recall",
    family="conversation",
    dimension="groundedness",
    threshold=0.7,
    needs=lambda: more.conversation_needs("turn-contextual-recall"),
)
def turn_contextual_recall() -> Scored:
    """The share of the expected outcome's statements the retrieved passages support.

    The judge (prompt ``conversation.turn-recall``) splits the expected outcome
    (``metadata.expected_outcome``, else a string expected output) into statements and says
    which the row's ``contexts`` support; an outcome with no statement scores 1.0. The
    passages are the conversation's, so every turn shares this value. Details: the
    statements, the reason, the prompt key.

    Examples:
        >>> import evalframe as ef
        >>> def judge(prompt):
        ...     return {"statements": [{"statement": "the order is refunded",
        ...                             "attributable": True}], "reason": "r"}
        >>> chats = {
        ...     "a": [{"role": "user", "content": "Refund order 41?"},
        ...           {"role": "assistant", "content": "Done: order 41 is refunded."}],
        ...     "b": [{"role": "user", "content": "Refund order 42?"},
        ...           {"role": "assistant", "content": "Our shop opens at 9."}]}
        >>> ds = ef.Dataset.from_records([{"id": k, "input": {"chat": k}, "expected_output":
        ...     "The order is refunded."} for k in chats], name="demo")
        >>> def bot(sample):
        ...     return {"output": "", "turns": chats[sample["chat"]], "contexts": [
        ...         "Orders are refunded within 3 days.", "The shop opens at 9."]}
        >>> run = ef.evaluate(ds, system=bot, metrics=["turn-contextual-recall"],
        ...                   providers=ef.Providers(judge=ef.testing.ScriptedJudge(judge),
        ...                                          cache=False))
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        a 1.0 {"statements":[{"statement":"the order is refunded","attributable":true}],"reason":"r","prompt":"conversation.turn-recall@v1"}
        b 1.0 {"statements":[{"statement":"the order is refunded","attributable":true}],"reason":"r","prompt":"conversation.turn-recall@v1"}
    """  # noqa: E501
    return more.turn_recall()


@metric(
    "turn-contextual-relevancy",
    family="conversation",
    dimension="groundedness",
    threshold=0.7,
    needs=lambda: more.conversation_needs("turn-contextual-relevancy"),
)
def turn_contextual_relevancy() -> Scored:
    """Per assistant turn, the share of the retrieved passages relevant to what the user
    asked just before it, averaged over the turns.

    The same judge call as turn-contextual-precision (its ``relevant`` verdicts). Details:
    the verdicts, each turn's share, the number of passages, the prompt key.

    Examples:
        >>> import evalframe as ef
        >>> def judge(prompt):
        ...     return {"turns": [{"turn": 2, "contexts": [
        ...         {"context": 1, "relevant": "Done" in prompt, "useful": True},
        ...         {"context": 2, "relevant": False, "useful": False}]}]}
        >>> chats = {
        ...     "a": [{"role": "user", "content": "Refund order 41?"},
        ...           {"role": "assistant", "content": "Done: order 41 is refunded."}],
        ...     "b": [{"role": "user", "content": "Refund order 42?"},
        ...           {"role": "assistant", "content": "Our shop opens at 9."}]}
        >>> ds = ef.Dataset.from_records([{"id": k, "input": {"chat": k}, "expected_output":
        ...     "The order is refunded."} for k in chats], name="demo")
        >>> def bot(sample):
        ...     return {"output": "", "turns": chats[sample["chat"]], "contexts": [
        ...         "Orders are refunded within 3 days.", "The shop opens at 9."]}
        >>> run = ef.evaluate(ds, system=bot, metrics=["turn-contextual-relevancy"],
        ...                   providers=ef.Providers(judge=ef.testing.ScriptedJudge(judge),
        ...                                          cache=False))
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        a 0.5 {"turns":[{"turn":2,"contexts":[{"context":1,"relevant":true,"useful":true},{"context":2,"relevant":false,"useful":false}]}],"turn_scores":[0.5],"contexts":2,"prompt":"conversation.turn-contexts@v1"}
        b 0.0 {"turns":[{"turn":2,"contexts":[{"context":1,"relevant":false,"useful":true},{"context":2,"relevant":false,"useful":false}]}],"turn_scores":[0.0],"contexts":2,"prompt":"conversation.turn-contexts@v1"}
    """  # noqa: E501
    return more.turn_contexts("relevancy")
