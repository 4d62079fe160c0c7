"""The versioned judge prompts of the judge toolbox (listed by ``evalframe metrics --prompts``).

Bump a prompt's version whenever its text or reply schema changes meaning: the version is
part of the need's column and of the cache namespace, so replies to an older text are never
reused for the new one.
"""

from __future__ import annotations

from typing import Final

import polars as pl

from evalframe.metrics._judge_engine import Prompt, register_prompt

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

G_EVAL_STEPS: Final = register_prompt(
    Prompt(
        id="toolbox.g-eval-steps",
        version=1,
        description="G-Eval: write the evaluation steps for a criteria (once per criteria).",
        reply=pl.Struct({"steps": pl.List(pl.String)}),
        template="""\
You will grade answers against the CRITERIA below. Before any grading, write the steps an \
evaluator should follow to judge one answer by these criteria: 3 to 6 short, concrete \
steps, in the order they should be done.

CRITERIA:
{criteria}

Reply with only a JSON object: {"steps": ["<step>", ...]}""",
    )
)

G_EVAL: Final = register_prompt(
    Prompt(
        id="toolbox.g-eval",
        version=1,
        description="G-Eval: rate one answer from 1 to 5 by a criteria and its steps.",
        reply=pl.Struct({"score": pl.Int64, "reason": pl.String}),
        template="""\
Rate the ANSWER by the CRITERIA, following the EVALUATION STEPS.

CRITERIA:
{criteria}

EVALUATION STEPS:
{steps}

QUESTION:
{question}

EXPECTED ANSWER (may be "(none)"):
{expected}

ANSWER:
{answer}

Give an integer rating from 1 (does not meet the criteria at all) to 5 (fully meets them).
Reply with only a JSON object, the rating first: {"score": <1-5>, "reason": "<one sentence>"}""",
    )
)

PAIRWISE: Final = register_prompt(
    Prompt(
        id="toolbox.pairwise",
        version=1,
        description="Pairwise: which of two responses answers the question better (or a tie).",
        reply=pl.Struct({"winner": pl.Enum(["A", "B", "tie"]), "reason": pl.String}),
        template="""\
Two responses answer the same QUESTION. Decide which one answers it better: more correct, \
more complete, and more helpful. Their order says nothing about their quality, and length \
alone is not quality. Answer "tie" when neither is better.

QUESTION:
{question}

RESPONSE A:
{first}

RESPONSE B:
{second}

Reply with only a JSON object: {"winner": "A" | "B" | "tie", "reason": "<one sentence>"}""",
    )
)

RUBRIC: Final = register_prompt(
    Prompt(
        id="toolbox.rubric",
        version=1,
        description="Rubric: place one answer in one of the rubric's named bands.",
        reply=pl.Struct({"band": pl.String, "reason": pl.String}),
        template="""\
Grade the ANSWER with the RUBRIC: choose the one band whose description fits it best.

RUBRIC (band: description):
{bands}

QUESTION:
{question}

EXPECTED ANSWER (may be "(none)"):
{expected}

ANSWER:
{answer}

Reply with only a JSON object: {"band": "<band name>", "reason": "<one sentence>"}""",
    )
)

ALIGNMENT: Final = register_prompt(
    Prompt(
        id="toolbox.prompt-alignment",
        version=1,
        description="Prompt alignment: whether an answer follows each instruction (one call).",
        reply=pl.Struct(
            {
                "verdicts": pl.List(
                    pl.Struct(
                        {"instruction": pl.Int64, "followed": pl.Boolean, "reason": pl.String}
                    )
                )
            }
        ),
        template="""\
The ANSWER was written under the INSTRUCTIONS below. For every instruction, in order, say \
whether the answer follows it. An instruction that does not apply to this input counts as \
followed.

INSTRUCTIONS:
{instructions}

INPUT:
{question}

ANSWER:
{answer}

Reply with only a JSON object, one verdict per instruction in order:
{"verdicts": [{"instruction": <number>, "followed": true|false, "reason": "<short>"}, ...]}""",
    )
)

DAG_NODE: Final = register_prompt(
    Prompt(
        id="toolbox.dag-node",
        version=1,
        description="DAG: answer one question of a decision tree about an answer.",
        reply=pl.Struct({"verdict": pl.String, "reason": pl.String}),
        template="""\
Answer a QUESTION about the ANSWER given to the INPUT below, with one of the allowed verdicts.

QUESTION:
{node_question}

ALLOWED VERDICTS: {verdicts}

INPUT:
{question}

ANSWER:
{answer}

Reply with only a JSON object: {"verdict": "<one allowed verdict>", "reason": "<one sentence>"}""",
    )
)

SUMMARY_QUESTIONS: Final = register_prompt(
    Prompt(
        id="toolbox.summary-questions",
        version=1,
        description="Summarization: closed questions the source answers yes (once per source).",
        reply=pl.Struct({"questions": pl.List(pl.String)}),
        template="""\
Write {n} closed (yes/no) questions about the most important information in the TEXT \
below. The TEXT must answer every question "yes"; each question must be answerable from the \
TEXT alone.

TEXT:
{text}

Reply with only a JSON object: {"questions": ["<question>", ...]}""",
    )
)

SUMMARY_ANSWERS: Final = register_prompt(
    Prompt(
        id="toolbox.summary-answers",
        version=1,
        description="Summarization: answer each coverage question from the summary alone.",
        reply=pl.Struct({"answers": pl.List(pl.Enum(["yes", "no", "idk"]))}),
        template="""\
Answer each QUESTION from the SUMMARY alone, not from what you know: "yes", "no", or "idk" \
when the summary does not say.

SUMMARY:
{summary}

QUESTIONS:
{questions}

Reply with only a JSON object, one answer per question in order: \
{"answers": ["yes" | "no" | "idk", ...]}""",
    )
)

SUMMARY_CHECK: Final = register_prompt(
    Prompt(
        id="toolbox.summary-check",
        version=1,
        description="Summarization: whether the source supports each claim of the summary.",
        reply=pl.Struct({"verdicts": pl.List(pl.Enum(["yes", "no", "idk"]))}),
        template="""\
Check each CLAIM of a summary against the SOURCE text it summarises: "yes" when the \
source states or implies it, "no" when the source contradicts it, "idk" when the source \
does not say.

SOURCE:
{source}

CLAIMS:
{claims}

Reply with only a JSON object, one verdict per claim in order: \
{"verdicts": ["yes" | "no" | "idk", ...]}""",
    )
)
