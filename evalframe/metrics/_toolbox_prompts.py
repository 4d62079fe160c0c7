"""The judge prompts of the judge toolbox (listed by ``evalframe metrics --prompts``): their
reply schemas here, their texts in ``prompts/toolbox.*.v<N>.txt``.

A prompt's version is part of the need's column and of the cache namespace, so replies to an
older text are never reused for the new one.
"""

from __future__ import annotations

from typing import Final

import polars as pl

from evalframe.metrics._judge_engine import shipped

__all__ = [
    "ALIGNMENT",
    "DAG_NODE",
    "G_EVAL",
    "G_EVAL_STEPS",
    "PAIRWISE",
    "RATING_HIGH",
    "RATING_LOW",
    "RUBRIC",
    "SUMMARY_ANSWERS",
    "SUMMARY_CHECK",
    "SUMMARY_QUESTIONS",
]

RATING_LOW: Final = 1
RATING_HIGH: Final = 5

G_EVAL_STEPS: Final = shipped(
    "toolbox.g-eval-steps",
    description="G-Eval: write the evaluation steps for a criteria (once per criteria).",
    reply=pl.Struct({"steps": pl.List(pl.String)}),
)

G_EVAL: Final = shipped(
    "toolbox.g-eval",
    description="G-Eval: rate one answer from 1 to 5 by a criteria and its steps.",
    reply=pl.Struct({"score": pl.Int64, "reason": pl.String}),
)

PAIRWISE: Final = shipped(
    "toolbox.pairwise",
    description="Pairwise: which of two responses answers the question better (or a tie).",
    reply=pl.Struct({"winner": pl.Enum(["A", "B", "tie"]), "reason": pl.String}),
)

RUBRIC: Final = shipped(
    "toolbox.rubric",
    description="Rubric: place one answer in one of the rubric's named bands.",
    reply=pl.Struct({"band": pl.String, "reason": pl.String}),
)

ALIGNMENT: Final = shipped(
    "toolbox.prompt-alignment",
    description="Prompt alignment: whether an answer follows each instruction (one call).",
    reply=pl.Struct(
        {
            "verdicts": pl.List(
                pl.Struct({"instruction": pl.Int64, "followed": pl.Boolean, "reason": pl.String})
            )
        }
    ),
)

DAG_NODE: Final = shipped(
    "toolbox.dag-node",
    description="DAG: answer one question of a decision tree about an answer.",
    reply=pl.Struct({"verdict": pl.String, "reason": pl.String}),
)

SUMMARY_QUESTIONS: Final = shipped(
    "toolbox.summary-questions",
    description="Summarization: closed questions the source answers yes (once per source).",
    reply=pl.Struct({"questions": pl.List(pl.String)}),
)

SUMMARY_ANSWERS: Final = shipped(
    "toolbox.summary-answers",
    description="Summarization: answer each coverage question from the summary alone.",
    reply=pl.Struct({"answers": pl.List(pl.Enum(["yes", "no", "idk"]))}),
)

SUMMARY_CHECK: Final = shipped(
    "toolbox.summary-check",
    description="Summarization: whether the source supports each claim of the summary.",
    reply=pl.Struct({"verdicts": pl.List(pl.Enum(["yes", "no", "idk"]))}),
)
