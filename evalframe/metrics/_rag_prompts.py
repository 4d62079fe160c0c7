"""The versioned judge prompts of the RAG family (listed by ``evalframe metrics --prompts``).

Bump a prompt's version whenever its text or reply schema changes meaning: the version is
part of the need's column and of the cache namespace, so replies to an older text are never
reused for the new one.
"""

from __future__ import annotations

from typing import Final

import polars as pl

from evalframe.metrics._judge_engine import Prompt, register_prompt

__all__ = ["CLAIMS", "CORRECTNESS", "ENTITIES", "GROUNDING", "QUESTIONS"]

CLAIMS: Final = register_prompt(
    Prompt(
        id="rag.claims",
        version=1,
        description="Split a text into short self-contained factual claims (once per text).",
        reply=pl.Struct({"claims": pl.List(pl.String)}),
        template="""\
Split the TEXT below into claims: short factual statements that each stand on their own \
(write names instead of pronouns), together saying everything the text asserts and nothing \
more. A text that asserts nothing (a greeting, a question, a refusal with no facts) has no \
claims.

TEXT:
{text}

Reply with only a JSON object: {"claims": ["<claim>", ...]}""",
    )
)

GROUNDING: Final = register_prompt(
    Prompt(
        id="rag.grounding",
        version=1,
        description=(
            "One call per sample: relevance of each passage to the question, and for each "
            "statement the passages that support or contradict it."
        ),
        reply=pl.Struct(
            {
                "passages": pl.List(pl.Struct({"passage": pl.Int64, "relevant": pl.Boolean})),
                "statements": pl.List(
                    pl.Struct(
                        {
                            "statement": pl.String,
                            "supported_by": pl.List(pl.Int64),
                            "contradicted_by": pl.List(pl.Int64),
                            "addresses_question": pl.Boolean,
                        }
                    )
                ),
            }
        ),
        template="""\
You check statements against retrieved passages. Judge only from the passages' text, not \
from what you know.

QUESTION:
{question}

PASSAGES:
{passages}

STATEMENTS:
{statements}

1. For every passage, say whether it is relevant: it holds information that helps answer \
the QUESTION.
2. For every statement, list the passages that support it (the statement follows from the \
passage), the passages that contradict it, and whether the statement addresses the QUESTION.

Reply with only a JSON object:
{"passages": [{"passage": <number>, "relevant": true|false}, ...],
 "statements": [{"statement": "<id, e.g. A1>", "supported_by": [<passage numbers>], \
"contradicted_by": [<passage numbers>], "addresses_question": true|false}, ...]}""",
    )
)

CORRECTNESS: Final = register_prompt(
    Prompt(
        id="rag.correctness",
        version=1,
        description=(
            "One call per sample: which answer claims the reference states, and which "
            "reference claims the answer states."
        ),
        reply=pl.Struct(
            {
                "answer": pl.List(pl.Struct({"statement": pl.String, "in_reference": pl.Boolean})),
                "reference": pl.List(pl.Struct({"statement": pl.String, "in_answer": pl.Boolean})),
            }
        ),
        template="""\
Compare an ANSWER with a REFERENCE answer to the QUESTION, claim by claim.

QUESTION:
{question}

ANSWER CLAIMS:
{answer}

REFERENCE CLAIMS:
{reference}

For every answer claim, say whether the reference claims state it (same fact, any wording). \
For every reference claim, say whether the answer claims state it.

Reply with only a JSON object:
{"answer": [{"statement": "<id, e.g. A1>", "in_reference": true|false}, ...],
 "reference": [{"statement": "<id, e.g. R1>", "in_answer": true|false}, ...]}""",
    )
)

ENTITIES: Final = register_prompt(
    Prompt(
        id="rag.entities",
        version=1,
        description="List the named entities of a text (once per text).",
        reply=pl.Struct({"entities": pl.List(pl.String)}),
        template="""\
List the named entities in the TEXT below: people, places, organisations, products, dates, \
numbers with their units, and other proper names, each written as in the text, once.

TEXT:
{text}

Reply with only a JSON object: {"entities": ["<entity>", ...]}""",
    )
)

QUESTIONS: Final = register_prompt(
    Prompt(
        id="rag.relevancy-questions",
        version=1,
        description="Questions an answer would answer, and whether it is noncommittal.",
        reply=pl.Struct({"questions": pl.List(pl.String), "noncommittal": pl.Boolean}),
        template="""\
Read the ANSWER below and write {n} different questions that it answers directly: the \
questions someone must have asked to get exactly this answer. Then say whether the answer is \
noncommittal: evasive, vague or declining to answer ("I don't know", "it depends", "I cannot \
say").

ANSWER:
{answer}

Reply with only a JSON object: {"questions": ["<question>", ...], "noncommittal": false}""",
    )
)
