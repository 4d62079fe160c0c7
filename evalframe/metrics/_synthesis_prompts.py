"""The judge prompts of ``evalframe synthesize`` (listed by ``evalframe metrics --prompts``):
their reply schemas here, their texts in ``prompts/synthesize.*.v<N>.txt``.

One generation prompt per evolution (``simple``, ``reasoning``, ``multi-context``,
``conditional``) asks for a question and its reference answer grounded in numbered, fenced
passages; the evolved ones also return the plain draft they rewrote. The critique prompt
checks a candidate before it is kept.
"""

from __future__ import annotations

from typing import Final

import polars as pl

from evalframe.metrics._judge_engine import Prompt, shipped

__all__ = ["CRITIQUE", "EVOLUTIONS", "GENERATE"]

_PLAIN: Final = pl.Struct({"question": pl.String, "answer": pl.String})
_EVOLVED: Final = pl.Struct({"draft": pl.String, "question": pl.String, "answer": pl.String})

EVOLUTIONS: Final = ("simple", "reasoning", "multi-context", "conditional")
"""The evolutions, in the order their shares are dealt."""

GENERATE: Final[dict[str, Prompt]] = {
    "simple": shipped(
        "synthesize.simple",
        description="synthesize: a direct question and its reference answer from one passage.",
        reply=_PLAIN,
    ),
    "reasoning": shipped(
        "synthesize.reasoning",
        description="synthesize: a draft question rewritten to need a step of inference, "
        "and its answer.",
        reply=_EVOLVED,
    ),
    "multi-context": shipped(
        "synthesize.multi-context",
        description="synthesize: a draft question rewritten to need two related passages "
        "together, and its answer.",
        reply=_EVOLVED,
    ),
    "conditional": shipped(
        "synthesize.conditional",
        description="synthesize: a draft question rewritten with a condition that narrows "
        "the answer, and its answer.",
        reply=_EVOLVED,
    ),
}
"""The generation prompt of each evolution."""

CRITIQUE: Final = shipped(
    "synthesize.critique",
    description="synthesize: whether a candidate is answerable from its passages, grounded, "
    "standalone and not trivial.",
    reply=pl.Struct(
        {
            "answerable": pl.Boolean,
            "grounded": pl.Boolean,
            "standalone": pl.Boolean,
            "non_trivial": pl.Boolean,
            "reason": pl.String,
        }
    ),
)
