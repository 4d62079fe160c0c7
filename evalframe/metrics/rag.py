"""RAG metrics: judged faithfulness, relevancy, correctness and retrieval quality.

Every metric here is read from a few shared judge stages, declared as ``JudgeNeed`` values
and filled by the enrich layer over the whole frame:

1. ``rag.claims``: the claims of a text, once per distinct text (answers and expected
   outputs alike), so faithfulness, answer-relevancy, answer-correctness and context-recall
   share one extraction of each text.
2. ``rag.grounding``: one call per sample reads the question, the sample's distinct contexts
   and all its claims (answer claims ``A1..``, reference claims ``R1..``), and returns
   per passage whether it is relevant, and per claim the passages that support or contradict
   it and whether it addresses the question. Faithfulness, answer-relevancy, context-
   precision, context-recall, context-relevancy and hallucination are all read from it.
3. ``rag.correctness``: one call per sample compares answer and reference claims.
4. ``rag.entities``: the entities of a text, once per distinct text (expected outputs and
   each distinct context), for context-entity-recall.

Contexts are the ``contexts`` column (``List(String)``, ranked); a duplicated context is
sent once and its verdicts apply at every rank it holds. Each context is cut to
``max_context_tokens`` whitespace-separated tokens before it is sent. Details hold the
evidence (claims, verdicts, relevance per rank), never context text, so each score can be
recomputed from its details alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Final, Literal

import polars as pl

from evalframe.core import schema as C
from evalframe.core._contexts import reference_contexts
from evalframe.metrics._batched import batched, sample_error
from evalframe.metrics._fence import numbered, numbered_lines, verbatim
from evalframe.metrics._judge_engine import JudgeNeed, Prompt, parsed, reply
from evalframe.metrics._rag_prompts import CLAIMS, CORRECTNESS, ENTITIES, GROUNDING, QUESTIONS
from evalframe.metrics._rag_verdicts import (
    correctness_kernel,
    grounding_kernel,
)
from evalframe.metrics._registry import metric
from evalframe.metrics._spec import Derived, Range, Scored
from evalframe.metrics.judge import _question_expr
from evalframe.metrics.semantic import EMBEDDING, ListEmbeddings, TextEmbeddings, cosine_kernel

if TYPE_CHECKING:
    from evalframe.metrics._spec import Need

__all__ = [
    "CONTEXTS",
    "DEFAULT_MAX_CONTEXT_TOKENS",
    "REFERENCE_CONTEXTS",
    "answer_correctness",
    "answer_relevancy",
    "claims_need",
    "context_entity_recall",
    "context_precision",
    "context_recall",
    "context_relevancy",
    "faithfulness",
    "grounding_need",
    "hallucination",
]

CONTEXTS: Final = "contexts"
REFERENCE_CONTEXTS: Final = "reference_contexts"
DEFAULT_MAX_CONTEXT_TOKENS: Final = 2000
_OPTIONAL: Final = {CONTEXTS: pl.List(pl.String), REFERENCE_CONTEXTS: pl.List(pl.String)}

Tokens = Annotated[int, Range(ge=1)]


# --- the shared stages ---------------------------------------------------------------------------


def _prompt(base: Prompt, template: str | None) -> Prompt:
    return base.with_template(template) if template else base


def claims_need(template: str | None = None) -> JudgeNeed:
    """Claims of the actual output and of the (string) expected output of every row: one
    call per distinct text across both columns and the whole frame."""
    texts = pl.concat_list(pl.col(C.ACTUAL_OUTPUT), C.expected_text())
    return JudgeNeed("claims", _prompt(CLAIMS, template), {"text": texts}, each="text")


def _claims(need: JudgeNeed) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    """Answer claims, reference claims (null where the text is missing) and the error, as
    a later stage's inputs read them."""
    r = parsed(need)
    value = r.struct.field("value")
    a = value.list.get(0, null_on_oob=True).struct.field("claims")
    ref = value.list.get(1, null_on_oob=True).struct.field("claims")
    error = pl.format(
        "{} ({}): {}", pl.lit(need.name), pl.lit(need.prompt.key), r.struct.field("error")
    )
    return a, ref, error


def _cap(items: pl.Expr, max_tokens: int) -> pl.Expr:
    """Each item cut to its first ``max_tokens`` space-separated tokens."""
    return items.list.eval(pl.element().str.split(" ").list.head(max_tokens).list.join(" "))


def _contexts() -> pl.Expr:
    """The contexts, as the judge needs read them (absent: null)."""
    return pl.col(CONTEXTS).cast(pl.List(pl.String))


def _contexts_of(frame: pl.DataFrame) -> pl.Series:
    """The frame's contexts (nulls when it has none)."""
    if CONTEXTS in frame.columns:
        return frame.get_column(CONTEXTS).cast(pl.List(pl.String))
    return pl.Series(CONTEXTS, [None] * frame.height, dtype=pl.List(pl.String))


def _stage_error(need: JudgeNeed, error: pl.Series) -> pl.Series:
    """A stage's row errors, named by the stage and its prompt key."""
    return pl.select(
        pl.format("{} ({}): {}", pl.lit(need.name), pl.lit(need.prompt.key), pl.lit(error))
    ).to_series()


def _suffix(**params: object) -> str:
    shown = [f"{k}={v}" for k, v in params.items() if v is not None]
    return f"({','.join(shown)})" if shown else ""


def grounding_need(
    *, max_context_tokens: int = DEFAULT_MAX_CONTEXT_TOKENS, claims_template: str | None = None
) -> JudgeNeed:
    """The per-sample grounding call (see the module docstring)."""
    c_need = claims_need(claims_template)
    a, r, _ = _claims(c_need)
    r = r.fill_null(pl.lit([], pl.List(pl.String)))
    distinct = _cap(_contexts().list.unique(maintain_order=True), max_context_tokens).fill_null(
        pl.lit([], pl.List(pl.String))
    )
    passages = numbered(distinct)
    statements = pl.concat_list(
        numbered_lines(a, prefix="A"), numbered_lines(r, prefix="R")
    ).list.join("\n")
    worth = a.is_not_null() & ((a.list.len() + r.list.len() + distinct.list.len()) > 0)
    name = "grounding" + _suffix(
        max_context_tokens=max_context_tokens
        if max_context_tokens != DEFAULT_MAX_CONTEXT_TOKENS
        else None,
        claims=CLAIMS.with_template(claims_template).key if claims_template else None,
    )
    return JudgeNeed(
        name,
        GROUNDING,
        {
            "question": _question_expr(),
            "passages": verbatim(
                pl.when(worth).then(
                    pl.when(passages == "").then(pl.lit("(no passages)")).otherwise(passages)
                )
            ),
            "statements": verbatim(
                pl.when(statements == "").then(pl.lit("(no statements)")).otherwise(statements)
            ),
        },
        requires=(c_need,),
        optional=_OPTIONAL,
    )


def _grounding_needs(
    *,
    max_context_tokens: int = DEFAULT_MAX_CONTEXT_TOKENS,
    claims_template: str | None = None,
    **_: object,
) -> list[Need]:
    return [grounding_need(max_context_tokens=max_context_tokens, claims_template=claims_template)]


def _grounding_derived(*, max_context_tokens: int, claims_template: str | None) -> Derived:
    """The grounding verdicts read back onto claims and ranks, once per frame for every
    metric of the family (a derived column over the filled judge columns)."""
    need = grounding_need(max_context_tokens=max_context_tokens, claims_template=claims_template)
    c_need = need.requires[0]

    def compute(frame: pl.DataFrame) -> pl.DataFrame:
        replies = frame.select(c=reply(c_need), g=reply(need))  # each decoded once
        claims = replies.get_column("c").struct.field("value")
        grounding = replies.get_column("g")
        ctx = _contexts_of(frame)
        parts = pl.DataFrame(
            {
                "a": claims.list.get(0, null_on_oob=True).struct.field("claims"),
                "r": claims.list.get(1, null_on_oob=True).struct.field("claims"),
                "ctx": ctx,
                "value": grounding.struct.field("value"),
            }
        )
        verdicts = grounding_kernel(parts)
        return pl.concat(
            [
                parts.select("a", "r"),
                verdicts,
                pl.DataFrame(
                    {
                        "n_contexts": ctx.list.len().fill_null(0),
                        "claims_error": _stage_error(
                            c_need, replies.get_column("c").struct.field("error")
                        ),
                        "grounding_error": grounding.struct.field("error"),
                    }
                ),
            ],
            how="horizontal",
        )

    return Derived(f"rag__{need.column}", compute)


def _grounding_derived_of(
    *,
    max_context_tokens: int = DEFAULT_MAX_CONTEXT_TOKENS,
    claims_template: str | None = None,
    **_: object,
) -> list[Derived]:
    return [
        _grounding_derived(max_context_tokens=max_context_tokens, claims_template=claims_template)
    ]


def _grounded(
    *, max_context_tokens: int, claims_template: str | None
) -> tuple[dict[str, pl.Expr], pl.Expr, pl.Expr, pl.Expr, pl.Expr, pl.Expr]:
    """``prepare`` (none), the verdicts struct, answer claims, reference claims, the
    context count, and the first error of the answer-side stages."""
    d = _grounding_derived(max_context_tokens=max_context_tokens, claims_template=claims_template)
    g = pl.col(d.column)
    field = g.struct.field
    error = (
        pl.when(pl.col(C.ACTUAL_OUTPUT).is_null())
        .then(sample_error("has no actual output."))
        .when(field("claims_error").is_not_null())
        .then(field("claims_error"))
        .when(field("grounding_error").is_not_null())
        .then(field("grounding_error"))
        .when(field("problem").is_not_null())
        .then(sample_error("{}", field("problem")))
    )
    return {}, g, field("a"), field("r"), field("n_contexts"), error


def _mean(flags: pl.Expr) -> pl.Expr:
    return flags.list.eval(pl.element().cast(pl.Float64)).list.mean()


def _reference_error(r: pl.Expr, metric_name: str) -> pl.Expr:
    return (
        pl.when(C.expected_text().is_null())
        .then(sample_error(f"has no string expected output; {metric_name} needs one."))
        .when(r.list.len() == 0)
        .then(sample_error(f"expected output states no claims; {metric_name} needs some."))
    )


def _scored(
    score: pl.Expr, error: pl.Expr, details: pl.Expr, prepare: dict[str, pl.Expr]
) -> Scored:
    return Scored(
        score=pl.when(error.is_null()).then(score),
        error=error,
        details=pl.when(error.is_null()).then(details),
        prepare=prepare,
    )


# --- the metrics ---------------------------------------------------------------------------------


@metric(
    "faithfulness",
    family="rag",
    dimension="groundedness",
    derived=_grounding_derived_of,
    needs=_grounding_needs,
)
def faithfulness(
    *, max_context_tokens: Tokens = DEFAULT_MAX_CONTEXT_TOKENS, claims_template: str | None = None
) -> Scored:
    """Share of the answer's claims that the retrieved contexts support.

    ``supported / claims``, where a claim is supported when the judge names at least one
    context that it follows from. An answer with no claims scores 1.0 (it asserts nothing
    unsupported); with no contexts every claim is unsupported (0.0). Null (an error)
    without an actual output, when a judge call fails, or when the reply leaves a claim
    without a verdict or cites a passage that does not exist.

    Examples:
        >>> import evalframe as ef
        >>> def judge(prompt):  # the judge's replies, written out: claims, then one grounding verdict
        ...     if "Split the TEXT" in prompt:
        ...         if "free" in prompt:
        ...             return {"claims": ["Returns take 30 days.", "Shipping is free."]}
        ...         return {"claims": ["Returns take 30 days."]}
        ...     return {"passages": [{"passage": 1, "relevant": True}, {"passage": 2, "relevant": False}],
        ...             "statements": [
        ...                 {"statement": "A1", "supported_by": [1], "contradicted_by": [],
        ...                  "addresses_question": True},
        ...                 {"statement": "A2", "supported_by": [], "contradicted_by": [2],
        ...                  "addresses_question": False},
        ...                 {"statement": "R1", "supported_by": [1], "contradicted_by": [],
        ...                  "addresses_question": True}]}
        >>> ds = ef.Dataset.from_records([{"id": "q1", "input": {"question": "How long do returns take?"},
        ...                                "expected_output": "Returns take 30 days."}], name="demo")
        >>> def rag(sample):
        ...     return {"output": "Returns take 30 days. Shipping is free.",
        ...             "contexts": ["Returns are accepted within 30 days.", "Shipping costs 5 euros."]}
        >>> providers = ef.Providers(judge=ef.testing.ScriptedJudge(judge), cache=False)
        >>> run = ef.evaluate(ds, system=rag, metrics=["faithfulness"], providers=providers)
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        q1 0.5 {"claims":["Returns take 30 days.","Shipping is free."],"supported":[true,false],"n_claims":2,"n_contexts":2,"prompt":"rag.grounding@v2"}
    """  # noqa: E501
    prepare, g, a, _, n_ctx, error = _grounded(
        max_context_tokens=max_context_tokens, claims_template=claims_template
    )
    verdicts = g.struct.field("answer_supported")
    score = pl.when(a.list.len() == 0).then(1.0).otherwise(_mean(verdicts))
    details = pl.struct(
        claims=a,
        supported=verdicts,
        n_claims=a.list.len(),
        n_contexts=n_ctx,
        prompt=pl.lit(GROUNDING.key),
    )
    return _scored(score, error, details, prepare)


def _questions_need(questions: int) -> ListEmbeddings:
    """The judge's questions from the answer, then the input's and their vectors."""
    asked = JudgeNeed(
        f"relevancy-questions(n={questions})",
        QUESTIONS,
        {"answer": pl.col(C.ACTUAL_OUTPUT), "n": verbatim(pl.lit(str(questions)))},
    )
    generated = reply(asked).struct.field("value").struct.field("questions")
    return ListEmbeddings(
        f"relevancy-questions(n={questions})@{QUESTIONS.key}",
        anchor=pl.when(pl.col(C.ACTUAL_OUTPUT).is_not_null()).then(_question_expr()),
        items=generated,
        requires=(asked,),
    )


def _relevancy_needs(*, mode: str = "direct", questions: int = 3, **params: Any) -> list[Need]:
    return [_questions_need(questions)] if mode == "questions" else _grounding_needs(**params)


def _relevancy_derived(*, mode: str = "direct", **params: Any) -> list[Derived]:
    return [] if mode == "questions" else _grounding_derived_of(**params)


@metric(
    "answer-relevancy",
    family="rag",
    dimension="correctness",
    derived=_relevancy_derived,
    needs=_relevancy_needs,
)
def answer_relevancy(
    *,
    mode: Literal["direct", "questions"] = "direct",
    questions: Annotated[int, Range(ge=1, le=10)] = 3,
    max_context_tokens: Tokens = DEFAULT_MAX_CONTEXT_TOKENS,
    claims_template: str | None = None,
) -> Scored:
    """How directly the answer addresses the question.

    ``mode="direct"`` (the default): the share of the answer's claims that address the
    question, ``addressing / claims``; an answer with no claims (a refusal, a noncommittal
    reply) scores 0.0. The verdicts come from the same per-sample grounding call as
    faithfulness, so with other RAG metrics this metric costs no extra call.

    ``mode="questions"``: the judge writes ``questions`` questions the answer would answer and
    says whether it is noncommittal; the score is the mean cosine similarity between the
    input's question and each generated one (the configured embedder), clipped to [0, 1], and
    0.0 for a noncommittal answer. One judge call per distinct answer, plus embeddings.

    Null (an error) without an actual output or when a call fails.

    Examples:
        >>> import evalframe as ef
        >>> def judge(prompt):  # the judge's replies, written out: claims, then one grounding verdict
        ...     if "Split the TEXT" in prompt:
        ...         if "free" in prompt:
        ...             return {"claims": ["Returns take 30 days.", "Shipping is free."]}
        ...         return {"claims": ["Returns take 30 days."]}
        ...     return {"passages": [{"passage": 1, "relevant": True}, {"passage": 2, "relevant": False}],
        ...             "statements": [
        ...                 {"statement": "A1", "supported_by": [1], "contradicted_by": [],
        ...                  "addresses_question": True},
        ...                 {"statement": "A2", "supported_by": [], "contradicted_by": [2],
        ...                  "addresses_question": False},
        ...                 {"statement": "R1", "supported_by": [1], "contradicted_by": [],
        ...                  "addresses_question": True}]}
        >>> ds = ef.Dataset.from_records([{"id": "q1", "input": {"question": "How long do returns take?"},
        ...                                "expected_output": "Returns take 30 days."}], name="demo")
        >>> def rag(sample):
        ...     return {"output": "Returns take 30 days. Shipping is free.",
        ...             "contexts": ["Returns are accepted within 30 days.", "Shipping costs 5 euros."]}
        >>> providers = ef.Providers(judge=ef.testing.ScriptedJudge(judge), cache=False)
        >>> run = ef.evaluate(ds, system=rag, metrics=["answer-relevancy"], providers=providers)
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        q1 0.5 {"claims":["Returns take 30 days.","Shipping is free."],"addresses_question":[true,false],"n_claims":2,"prompt":"rag.grounding@v2"}
    """  # noqa: E501
    if mode == "questions":
        return _questions_scored(questions)
    prepare, g, a, _, n_ctx, error = _grounded(
        max_context_tokens=max_context_tokens, claims_template=claims_template
    )
    verdicts = g.struct.field("answer_addresses")
    score = pl.when(a.list.len() == 0).then(0.0).otherwise(_mean(verdicts))
    details = pl.struct(
        claims=a, addresses_question=verdicts, n_claims=a.list.len(), prompt=pl.lit(GROUNDING.key)
    )
    del n_ctx
    return _scored(score, error, details, prepare)


def _recall_needs(
    *,
    against: str = "claims",
    max_context_tokens: int = DEFAULT_MAX_CONTEXT_TOKENS,
    claims_template: str | None = None,
) -> list[Need]:
    if against == "reference_contexts":
        return []
    return _grounding_needs(max_context_tokens=max_context_tokens, claims_template=claims_template)


def _normalised_texts(items: pl.Expr) -> pl.Expr:
    return items.list.eval(pl.element().str.strip_chars().str.replace_all(r"\s+", " "))


_RETRIEVED: Final = "rag__contexts"


def _retrieved(frame: pl.DataFrame) -> pl.DataFrame:
    return _contexts_of(frame).to_frame()


def _recall_derived(*, against: str = "claims", **params: Any) -> list[Derived]:
    if against == "reference_contexts":
        return [Derived(_RETRIEVED, _retrieved)]
    return _grounding_derived_of(**params)


def _reference_context_recall() -> Scored:
    """Share of the reference contexts found, as text, among the retrieved ones."""
    retrieved = pl.col(_RETRIEVED).struct.field(CONTEXTS)
    wanted = _normalised_texts(reference_contexts()).list.unique(maintain_order=True)
    got = _normalised_texts(retrieved.fill_null(pl.lit([], pl.List(pl.String))))
    found = wanted.list.set_intersection(got)
    error = pl.when(wanted.list.len().fill_null(0) == 0).then(
        sample_error(
            "has no metadata.reference_contexts; "
            "context-recall(against=reference_contexts) needs some."
        )
    )
    score = found.list.len().cast(pl.Float64) / wanted.list.len().cast(pl.Float64)
    details = pl.struct(
        n_reference_contexts=wanted.list.len(),
        n_found=found.list.len(),
        n_contexts=retrieved.list.len().fill_null(0),
    )
    return _scored(score, error, details, {})


@metric(
    "context-recall",
    family="rag",
    dimension="groundedness",
    derived=_recall_derived,
    needs=_recall_needs,
)
def context_recall(
    *,
    against: Literal["claims", "reference_contexts"] = "claims",
    max_context_tokens: Tokens = DEFAULT_MAX_CONTEXT_TOKENS,
    claims_template: str | None = None,
) -> Scored:
    """Share of the expected output's claims that the contexts support (are attributable to).

    ``attributed / reference claims``; 0.0 with no contexts. Null (an error) when the
    expected output is not a string or states no claims, or a judge call fails.

    With ``against="reference_contexts"`` no judge is asked: the score is the share of the
    sample's reference contexts (``metadata.reference_contexts``) that were retrieved, texts
    compared after trimming and collapsing whitespace; null (an error) when the sample has
    none.

    Examples:
        >>> import evalframe as ef
        >>> def judge(prompt):  # the judge's replies, written out: claims, then one grounding verdict
        ...     if "Split the TEXT" in prompt:
        ...         if "free" in prompt:
        ...             return {"claims": ["Returns take 30 days.", "Shipping is free."]}
        ...         return {"claims": ["Returns take 30 days."]}
        ...     return {"passages": [{"passage": 1, "relevant": True}, {"passage": 2, "relevant": False}],
        ...             "statements": [
        ...                 {"statement": "A1", "supported_by": [1], "contradicted_by": [],
        ...                  "addresses_question": True},
        ...                 {"statement": "A2", "supported_by": [], "contradicted_by": [2],
        ...                  "addresses_question": False},
        ...                 {"statement": "R1", "supported_by": [1], "contradicted_by": [],
        ...                  "addresses_question": True}]}
        >>> ds = ef.Dataset.from_records([{"id": "q1", "input": {"question": "How long do returns take?"},
        ...                                "expected_output": "Returns take 30 days."}], name="demo")
        >>> def rag(sample):
        ...     return {"output": "Returns take 30 days. Shipping is free.",
        ...             "contexts": ["Returns are accepted within 30 days.", "Shipping costs 5 euros."]}
        >>> providers = ef.Providers(judge=ef.testing.ScriptedJudge(judge), cache=False)
        >>> run = ef.evaluate(ds, system=rag, metrics=["context-recall"], providers=providers)
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        q1 1.0 {"reference_claims":["Returns take 30 days."],"attributed":[true],"n_claims":1,"n_contexts":2,"prompt":"rag.grounding@v2"}
    """  # noqa: E501
    if against == "reference_contexts":
        return _reference_context_recall()
    prepare, g, _, r, n_ctx, error = _grounded(
        max_context_tokens=max_context_tokens, claims_template=claims_template
    )
    verdicts = g.struct.field("reference_supported")
    error = pl.coalesce(_reference_error(r, "context-recall"), error)
    details = pl.struct(
        reference_claims=r,
        attributed=verdicts,
        n_claims=r.list.len(),
        n_contexts=n_ctx,
        prompt=pl.lit(GROUNDING.key),
    )
    return _scored(_mean(verdicts), error, details, prepare)


def _average_precision(relevant: pl.Expr) -> pl.Expr:
    """Mean of precision@k over the ranks k of relevant contexts; 0.0 when none is."""
    hits = relevant.list.eval(pl.element().cast(pl.Float64))
    weighted = hits.list.eval(
        pl.element().cum_sum() / pl.int_range(1, pl.len() + 1, dtype=pl.Int64) * pl.element()
    ).list.sum()
    n = hits.list.sum().fill_null(0.0)
    return pl.when(n > 0).then(weighted / n).otherwise(0.0)


def _ranks(flags: pl.Expr) -> pl.Expr:
    """1-based ranks where ``flags`` is true."""
    return flags.list.eval(pl.int_range(1, pl.len() + 1, dtype=pl.Int64).filter(pl.element()))


@metric(
    "context-precision",
    family="rag",
    dimension="groundedness",
    derived=_grounding_derived_of,
    needs=_grounding_needs,
)
def context_precision(
    *,
    reference: bool = True,
    max_context_tokens: Tokens = DEFAULT_MAX_CONTEXT_TOKENS,
    claims_template: str | None = None,
) -> Scored:
    """Rank-weighted precision of the relevant contexts: mean of precision@k over the ranks
    k that hold a relevant context.

    With ``reference=True`` (default) a context is relevant when it supports a claim of
    the expected output; with ``reference=False``, when it supports a claim of the answer
    (for datasets without expected outputs). ``sum_k(precision@k * rel_k) / sum_k rel_k``;
    0.0 when no context is relevant or there are none. Null (an error) when a needed text
    is missing or states no claims, or a judge call fails.

    Examples:
        >>> import evalframe as ef
        >>> def judge(prompt):  # the judge's replies, written out: claims, then one grounding verdict
        ...     if "Split the TEXT" in prompt:
        ...         if "free" in prompt:
        ...             return {"claims": ["Returns take 30 days.", "Shipping is free."]}
        ...         return {"claims": ["Returns take 30 days."]}
        ...     return {"passages": [{"passage": 1, "relevant": True}, {"passage": 2, "relevant": False}],
        ...             "statements": [
        ...                 {"statement": "A1", "supported_by": [1], "contradicted_by": [],
        ...                  "addresses_question": True},
        ...                 {"statement": "A2", "supported_by": [], "contradicted_by": [2],
        ...                  "addresses_question": False},
        ...                 {"statement": "R1", "supported_by": [1], "contradicted_by": [],
        ...                  "addresses_question": True}]}
        >>> ds = ef.Dataset.from_records([{"id": "q1", "input": {"question": "How long do returns take?"},
        ...                                "expected_output": "Returns take 30 days."}], name="demo")
        >>> def rag(sample):
        ...     return {"output": "Returns take 30 days. Shipping is free.",
        ...             "contexts": ["Returns are accepted within 30 days.", "Shipping costs 5 euros."]}
        >>> providers = ef.Providers(judge=ef.testing.ScriptedJudge(judge), cache=False)
        >>> run = ef.evaluate(ds, system=rag, metrics=["context-precision"], providers=providers)
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        q1 1.0 {"relevant":[true,false],"relevant_ranks":[1],"n_contexts":2,"against":"expected_output","prompt":"rag.grounding@v2"}
    """  # noqa: E501
    prepare, g, a, r, n_ctx, error = _grounded(
        max_context_tokens=max_context_tokens, claims_template=claims_template
    )
    if reference:
        relevant = g.struct.field("supports_reference")
        error = pl.coalesce(_reference_error(r, "context-precision"), error)
    else:
        relevant = g.struct.field("supports_answer")
    del a
    details = pl.struct(
        relevant=relevant,
        relevant_ranks=_ranks(relevant),
        n_contexts=n_ctx,
        against=pl.lit("expected_output" if reference else "actual_output"),
        prompt=pl.lit(GROUNDING.key),
    )
    return _scored(_average_precision(relevant), error, details, prepare)


@metric(
    "context-relevancy",
    family="rag",
    dimension="groundedness",
    derived=_grounding_derived_of,
    needs=_grounding_needs,
)
def context_relevancy(
    *, max_context_tokens: Tokens = DEFAULT_MAX_CONTEXT_TOKENS, claims_template: str | None = None
) -> Scored:
    """Share of the retrieved contexts (by rank) that hold information relevant to the
    question; 0.0 with no contexts. Null (an error) when a judge call fails.

    Examples:
        >>> import evalframe as ef
        >>> def judge(prompt):  # the judge's replies, written out: claims, then one grounding verdict
        ...     if "Split the TEXT" in prompt:
        ...         if "free" in prompt:
        ...             return {"claims": ["Returns take 30 days.", "Shipping is free."]}
        ...         return {"claims": ["Returns take 30 days."]}
        ...     return {"passages": [{"passage": 1, "relevant": True}, {"passage": 2, "relevant": False}],
        ...             "statements": [
        ...                 {"statement": "A1", "supported_by": [1], "contradicted_by": [],
        ...                  "addresses_question": True},
        ...                 {"statement": "A2", "supported_by": [], "contradicted_by": [2],
        ...                  "addresses_question": False},
        ...                 {"statement": "R1", "supported_by": [1], "contradicted_by": [],
        ...                  "addresses_question": True}]}
        >>> ds = ef.Dataset.from_records([{"id": "q1", "input": {"question": "How long do returns take?"},
        ...                                "expected_output": "Returns take 30 days."}], name="demo")
        >>> def rag(sample):
        ...     return {"output": "Returns take 30 days. Shipping is free.",
        ...             "contexts": ["Returns are accepted within 30 days.", "Shipping costs 5 euros."]}
        >>> providers = ef.Providers(judge=ef.testing.ScriptedJudge(judge), cache=False)
        >>> run = ef.evaluate(ds, system=rag, metrics=["context-relevancy"], providers=providers)
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        q1 0.5 {"relevant":[true,false],"n_contexts":2,"prompt":"rag.grounding@v2"}
    """  # noqa: E501
    prepare, g, _, _, n_ctx, error = _grounded(
        max_context_tokens=max_context_tokens, claims_template=claims_template
    )
    relevant = g.struct.field("relevant")
    score = pl.when(n_ctx == 0).then(0.0).otherwise(_mean(relevant))
    details = pl.struct(relevant=relevant, n_contexts=n_ctx, prompt=pl.lit(GROUNDING.key))
    return _scored(score, error, details, prepare)


@metric(
    "hallucination",
    family="rag",
    dimension="groundedness",
    derived=_grounding_derived_of,
    needs=_grounding_needs,
    higher_is_better=False,
)
def hallucination(
    *, max_context_tokens: Tokens = DEFAULT_MAX_CONTEXT_TOKENS, claims_template: str | None = None
) -> Scored:
    """The share of contexts (by rank) that the answer contradicts: lower is better.

    ``contradicted contexts / contexts``, 0.0 with no contexts (nothing contradicted). A
    lower-is-better metric: a sample passes at or below the threshold (0.5 by default).
    Null (an error) without an actual output or when a judge call fails.

    Examples:
        >>> import evalframe as ef
        >>> def judge(prompt):  # the judge's replies, written out: claims, then one grounding verdict
        ...     if "Split the TEXT" in prompt:
        ...         if "free" in prompt:
        ...             return {"claims": ["Returns take 30 days.", "Shipping is free."]}
        ...         return {"claims": ["Returns take 30 days."]}
        ...     return {"passages": [{"passage": 1, "relevant": True}, {"passage": 2, "relevant": False}],
        ...             "statements": [
        ...                 {"statement": "A1", "supported_by": [1], "contradicted_by": [],
        ...                  "addresses_question": True},
        ...                 {"statement": "A2", "supported_by": [], "contradicted_by": [2],
        ...                  "addresses_question": False},
        ...                 {"statement": "R1", "supported_by": [1], "contradicted_by": [],
        ...                  "addresses_question": True}]}
        >>> ds = ef.Dataset.from_records([{"id": "q1", "input": {"question": "How long do returns take?"},
        ...                                "expected_output": "Returns take 30 days."}], name="demo")
        >>> def rag(sample):
        ...     return {"output": "Returns take 30 days. Shipping is free.",
        ...             "contexts": ["Returns are accepted within 30 days.", "Shipping costs 5 euros."]}
        >>> providers = ef.Providers(judge=ef.testing.ScriptedJudge(judge), cache=False)
        >>> run = ef.evaluate(ds, system=rag, metrics=["hallucination"], providers=providers)
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        q1 0.5 {"contradicted":[false,true],"n_contexts":2,"prompt":"rag.grounding@v2"}
    """  # noqa: E501
    prepare, g, _, _, n_ctx, error = _grounded(
        max_context_tokens=max_context_tokens, claims_template=claims_template
    )
    contradicted = g.struct.field("contradicted")
    rate = pl.when(n_ctx == 0).then(0.0).otherwise(_mean(contradicted))
    details = pl.struct(
        contradicted=contradicted,
        n_contexts=n_ctx,
        prompt=pl.lit(GROUNDING.key),
    )
    return _scored(rate, error, details, prepare)


# --- answer-correctness ---------------------------------------------------------------------------


def _correctness_need(claims_template: str | None) -> JudgeNeed:
    c_need = claims_need(claims_template)
    a, r, _ = _claims(c_need)
    worth = (a.list.len() > 0) & (r.list.len() > 0)
    name = "correctness" + _suffix(
        claims=CLAIMS.with_template(claims_template).key if claims_template else None
    )
    return JudgeNeed(
        name,
        CORRECTNESS,
        {
            "question": _question_expr(),
            "answer": verbatim(pl.when(worth).then(numbered(a, prefix="A"))),
            "reference": verbatim(numbered(r, prefix="R")),
        },
        requires=(c_need,),
    )


def _correctness_derived(*, claims_template: str | None = None, **_: object) -> list[Derived]:
    """The correctness verdicts read back onto both claim lists, once per frame."""
    need = _correctness_need(claims_template)
    c_need = need.requires[0]

    def compute(frame: pl.DataFrame) -> pl.DataFrame:
        replies = frame.select(c=reply(c_need), v=reply(need))  # each decoded once
        claims = replies.get_column("c").struct.field("value")
        verdict = replies.get_column("v")
        parts = pl.DataFrame(
            {
                "a": claims.list.get(0, null_on_oob=True).struct.field("claims"),
                "r": claims.list.get(1, null_on_oob=True).struct.field("claims"),
                "value": verdict.struct.field("value"),
            }
        )
        return pl.concat(
            [
                parts.select("a", "r"),
                correctness_kernel(parts),
                pl.DataFrame(
                    {
                        "claims_error": _stage_error(
                            c_need, replies.get_column("c").struct.field("error")
                        ),
                        "correctness_error": verdict.struct.field("error"),
                    }
                ),
            ],
            how="horizontal",
        )

    return [Derived(f"rag__{need.column}", compute)]


def _correctness_needs(
    *, similarity_weight: float = 0.0, claims_template: str | None = None
) -> list[Need]:
    needs: list[Need] = [_correctness_need(claims_template)]
    if similarity_weight > 0:
        needs.append(TextEmbeddings())
    return needs


@metric(
    "answer-correctness",
    family="rag",
    dimension="correctness",
    derived=_correctness_derived,
    needs=_correctness_needs,
)
def answer_correctness(
    *,
    similarity_weight: Annotated[float, Range(ge=0.0, le=1.0)] = 0.0,
    claims_template: str | None = None,
) -> Scored:
    """Claim-level F1 of the answer against the expected output, optionally blended with
    the embedding similarity of the two texts.

    TP = answer claims the reference states, FP = answer claims it does not, FN = reference
    claims the answer does not state; ``F1 = TP / (TP + (FP + FN) / 2)`` (0.0 when the
    answer states no claims). With ``similarity_weight = w > 0`` the score is
    ``(1 - w) * F1 + w * clamp(cosine, 0, 1)`` using the run's embedder. Null (an error)
    without an actual output, without a string expected output or when it states no
    claims, or when a judge or embedding call fails.

    Examples:
        >>> import evalframe as ef
        >>> def judge(prompt):  # the judge's replies, written out: claims, then the claim comparison
        ...     if "Split the TEXT" in prompt:
        ...         if "free" in prompt:
        ...             return {"claims": ["Returns take 30 days.", "Shipping is free."]}
        ...         return {"claims": ["Returns take 30 days.", "Refunds arrive within a week."]}
        ...     return {"answer": [{"statement": "A1", "in_reference": True},
        ...                        {"statement": "A2", "in_reference": False}],
        ...             "reference": [{"statement": "R1", "in_answer": True},
        ...                           {"statement": "R2", "in_answer": False}]}
        >>> ds = ef.Dataset.from_records([{"id": "q1", "input": {"question": "How do returns work?"},
        ...     "expected_output": "Returns take 30 days. Refunds arrive within a week."}], name="demo")
        >>> run = ef.evaluate(ds, outputs={"q1": "Returns take 30 days. Shipping is free."},
        ...                   metrics=["answer-correctness"],
        ...                   providers=ef.Providers(judge=ef.testing.ScriptedJudge(judge), cache=False))
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        q1 0.5 {"claims":["Returns take 30 days.","Shipping is free."],"in_reference":[true,false],"reference_claims":["Returns take 30 days.","Refunds arrive within a week."],"in_answer":[true,false],"tp":1,"fp":1,"fn":1,"f1":0.5,"prompt":"rag.correctness@v2"}
    """  # noqa: E501
    k = pl.col(_correctness_derived(claims_template=claims_template)[0].column)
    a, r = k.struct.field("a"), k.struct.field("r")
    in_reference, in_answer = k.struct.field("in_reference"), k.struct.field("in_answer")
    tp = in_reference.list.sum().fill_null(0).cast(pl.Float64)
    fp = a.list.len().cast(pl.Float64) - tp
    fn = in_answer.list.len().cast(pl.Float64) - in_answer.list.sum().fill_null(0).cast(pl.Float64)
    denominator = tp + 0.5 * (fp + fn)
    f1 = pl.when(denominator > 0).then(tp / denominator).otherwise(0.0)
    prepare: dict[str, pl.Expr] = {}
    error: pl.Expr = (
        pl.when(pl.col(C.ACTUAL_OUTPUT).is_null())
        .then(sample_error("has no actual output."))
        .when(k.struct.field("claims_error").is_not_null())
        .then(k.struct.field("claims_error"))
    )
    error = pl.coalesce(
        error,
        _reference_error(r, "answer-correctness"),
        k.struct.field("correctness_error"),
        pl.when(k.struct.field("problem").is_not_null()).then(
            sample_error("{}", k.struct.field("problem"))
        ),
    )
    fields: dict[str, pl.Expr] = {
        "claims": a,
        "in_reference": in_reference,
        "reference_claims": r,
        "in_answer": in_answer,
        "tp": tp.cast(pl.Int64),
        "fp": fp.cast(pl.Int64),
        "fn": fn.cast(pl.Int64),
        "f1": f1,
        "prompt": pl.lit(CORRECTNESS.key),
    }
    score: pl.Expr = f1
    if similarity_weight > 0:
        emb = pl.col("answer-correctness__cosine")
        prepare["answer-correctness__cosine"] = cosine_kernel()
        similarity = emb.struct.field("cosine").clip(0.0, 1.0)
        score = (1.0 - similarity_weight) * f1 + similarity_weight * similarity
        error = pl.coalesce(error, pl.col(EMBEDDING.error))
        fields["similarity"] = similarity
        fields["similarity_weight"] = pl.lit(similarity_weight)
    return _scored(score, error, pl.struct([v.alias(k) for k, v in fields.items()]), prepare)


# --- context-entity-recall ------------------------------------------------------------------------


def _entity_needs_of(max_context_tokens: int, template: str | None) -> tuple[JudgeNeed, JudgeNeed]:
    p = _prompt(ENTITIES, template)
    ref = JudgeNeed("entities(expected_output)", p, {"text": C.expected_text()})
    ctx = JudgeNeed(
        "entities(contexts)"
        + _suffix(
            max_context_tokens=max_context_tokens
            if max_context_tokens != DEFAULT_MAX_CONTEXT_TOKENS
            else None
        ),
        p,
        {"text": _cap(_contexts(), max_context_tokens)},
        each="text",
        optional=_OPTIONAL,
    )
    return ref, ctx


def _entity_derived(max_context_tokens: int, template: str | None) -> Derived:
    """Both sides' entities, normalised, once per frame."""
    ref_need, ctx_need = _entity_needs_of(max_context_tokens, template)

    def compute(frame: pl.DataFrame) -> pl.DataFrame:
        replies = frame.select(r=reply(ref_need), c=reply(ctx_need))  # each decoded once
        ref, ctx = replies.get_column("r"), replies.get_column("c")
        lists = pl.DataFrame(
            {
                "ref": ref.struct.field("value").struct.field("entities"),
                "ctx": ctx.struct.field("value").list.eval(pl.element().struct.field("entities")),
            }
        )
        found_all = (
            pl.col("ctx")
            .list.eval(pl.element().explode())
            .fill_null(pl.lit([], pl.List(pl.String)))
        )
        out = lists.select(wanted=_normalised(pl.col("ref")), found_all=_normalised(found_all))
        return out.with_columns(
            n_contexts=_contexts_of(frame).list.len().fill_null(0),
            reference_error=_stage_error(ref_need, ref.struct.field("error")),
            contexts_error=_stage_error(ctx_need, ctx.struct.field("error")),
        )

    return Derived(f"rag__{ctx_need.column}", compute)


def _entity_derived_of(
    *,
    max_context_tokens: int = DEFAULT_MAX_CONTEXT_TOKENS,
    entities_template: str | None = None,
) -> list[Derived]:
    return [_entity_derived(max_context_tokens, entities_template)]


def _entity_needs(
    *, max_context_tokens: int = DEFAULT_MAX_CONTEXT_TOKENS, entities_template: str | None = None
) -> list[Need]:
    return list(_entity_needs_of(max_context_tokens, entities_template))


def _normalised(entities: pl.Expr) -> pl.Expr:
    return entities.list.eval(
        pl.element().str.strip_chars().str.to_lowercase().str.replace_all(r"\s+", " ")
    ).list.unique(maintain_order=True)


@metric(
    "context-entity-recall",
    family="rag",
    dimension="groundedness",
    derived=_entity_derived_of,
    needs=_entity_needs,
)
def context_entity_recall(
    *, max_context_tokens: Tokens = DEFAULT_MAX_CONTEXT_TOKENS, entities_template: str | None = None
) -> Scored:
    """Share of the expected output's entities that appear among the contexts' entities.

    Entities are listed by the judge once per distinct text (the expected output, and each
    distinct context across the frame), compared case- and space-insensitively:
    ``|E(reference) ∩ E(contexts)| / |E(reference)|``; 0.0 with no contexts. Null (an
    error) without a string expected output, when it names no entity, or when a judge call
    fails.

    Examples:
        >>> import evalframe as ef
        >>> def judge(prompt):  # the judge lists each text's entities
        ...     entities = [e for e in ("Oslo", "Norway", "1624", "Bergen") if e in prompt]
        ...     return {"entities": entities}
        >>> ds = ef.Dataset.from_records([{"id": "q1", "input": {"question": "Tell me about Oslo."},
        ...     "expected_output": "Oslo, the capital of Norway, was rebuilt in 1624."}], name="demo")
        >>> def rag(sample):
        ...     return {"output": "...", "contexts": ["Oslo is the capital of Norway.", "Bergen is rainy."]}
        >>> run = ef.evaluate(ds, system=rag, metrics=["context-entity-recall"],
        ...                   providers=ef.Providers(judge=ef.testing.ScriptedJudge(judge), cache=False))
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        q1 0.6666666666666666 {"reference_entities":["oslo","norway","1624"],"found":["oslo","norway"],"n_contexts":2,"prompt":"rag.entities@v2"}
    """  # noqa: E501
    k = pl.col(_entity_derived(max_context_tokens, entities_template).column)
    wanted = k.struct.field("wanted")
    found_all = k.struct.field("found_all")
    found = wanted.list.set_intersection(found_all)
    score = found.list.len().cast(pl.Float64) / wanted.list.len().cast(pl.Float64)
    error = pl.coalesce(
        pl.when(C.expected_text().is_null()).then(
            sample_error("has no string expected output; context-entity-recall needs one.")
        ),
        k.struct.field("reference_error"),
        k.struct.field("contexts_error"),
        pl.when(wanted.list.len() == 0).then(
            sample_error("expected output names no entities; context-entity-recall needs some.")
        ),
    )
    details = pl.struct(
        reference_entities=wanted,
        found=found,
        n_contexts=k.struct.field("n_contexts"),
        prompt=pl.lit(ENTITIES.key),
    )
    return _scored(score, error, details, {})


def _question_similarity(f: pl.DataFrame) -> pl.DataFrame:
    """Per row: the cosine of the anchor vector with each item vector (numpy, no row loop)."""
    from evalframe.metrics.semantic import cosine_rows

    vectors = f.get_column("v")
    anchor = vectors.struct.field("anchor")
    items = vectors.struct.field("items")
    n = items.list.len().fill_null(0)
    rows = pl.int_range(f.height, eager=True).repeat_by(n).explode().drop_nulls()
    flat_items = items.explode(empty_as_null=False, keep_nulls=False)
    repeated = anchor.gather(rows)
    cos = cosine_rows(repeated, flat_items).get_column("cosine")
    per_row = (
        pl.DataFrame({"row": rows, "c": cos.round(6)})
        .group_by("row", maintain_order=True)
        .agg(pl.col("c"))
    )
    table = pl.DataFrame({"row": pl.int_range(f.height, eager=True)}).join(
        per_row, on="row", how="left", maintain_order="left"
    )
    return table.select(cosines=pl.col("c"))


def _questions_scored(questions: int) -> Scored:
    need = _questions_need(questions)
    (asked,) = need.requires
    r = pl.col("__q_reply")
    value, failure = r.struct.field("value"), r.struct.field("error")
    generated = value.struct.field("questions")
    noncommittal = value.struct.field("noncommittal")
    cosines = pl.col("__q_cos").struct.field("cosines")
    mean = cosines.list.mean().clip(0.0, 1.0)
    score = pl.when(noncommittal).then(0.0).otherwise(mean)
    error = (
        pl.when(pl.col(C.ACTUAL_OUTPUT).is_null())
        .then(sample_error("has no actual output for answer-relevancy metric."))
        .when(failure.is_not_null())
        .then(sample_error("answer-relevancy judge failed: {}", failure))
        .when(generated.list.len().fill_null(0) == 0)
        .then(sample_error("answer-relevancy: the judge wrote no question."))
        .when(pl.col(f"{need.column}__error").is_not_null())
        .then(
            sample_error("answer-relevancy embeddings failed: {}", pl.col(f"{need.column}__error"))
        )
        .when(cosines.is_null() | (cosines.list.len() != generated.list.len()))
        .then(sample_error("answer-relevancy: the questions could not be embedded."))
    )
    details = pl.struct(
        questions=generated,
        cosines=cosines,
        noncommittal=noncommittal,
        prompt=pl.lit(QUESTIONS.key),
    )
    return Scored(
        score=pl.when(error.is_null()).then(score.round(6)),
        error=error,
        details=pl.when(error.is_null()).then(details),
        prepare={
            "__q_reply": reply(asked),
            "__q_cos": batched(
                _question_similarity, {"v": pl.col(need.column)}, {"cosines": pl.List(pl.Float64)}
            ),
        },
    )
