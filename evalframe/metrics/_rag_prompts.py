"""The judge prompts of the RAG family (listed by ``evalframe metrics --prompts``): their
reply schemas here, their texts in ``prompts/rag.*.v<N>.txt``.

A prompt's version is part of the need's column and of the cache namespace, so replies to an
older text are never reused for the new one.
"""

from __future__ import annotations

from typing import Final

import polars as pl

from evalframe.metrics._judge_engine import shipped

__all__ = ["CLAIMS", "CORRECTNESS", "ENTITIES", "GROUNDING", "QUESTIONS"]

CLAIMS: Final = shipped(
    "rag.claims",
    description="Split a text into short self-contained factual claims (once per text).",
    reply=pl.Struct({"claims": pl.List(pl.String)}),
)

GROUNDING: Final = shipped(
    "rag.grounding",
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
)

CORRECTNESS: Final = shipped(
    "rag.correctness",
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
)

ENTITIES: Final = shipped(
    "rag.entities",
    description="List the named entities of a text (once per text).",
    reply=pl.Struct({"entities": pl.List(pl.String)}),
)

QUESTIONS: Final = shipped(
    "rag.relevancy-questions",
    description="Questions an answer would answer, and whether it is noncommittal.",
    reply=pl.Struct({"questions": pl.List(pl.String), "noncommittal": pl.Boolean}),
)
