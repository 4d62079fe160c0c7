"""A scripted RAG judge for tests and benchmarks: deterministic rules on the prompt's own
text, so every expected score can be worked out by hand.

* claims: the text split on ``". "`` (a trailing period dropped); ``"nothing"`` has none;
  ``"garbled"`` gets a reply that is not JSON.
* grounding: a passage supports a statement that it contains word for word (case-
  insensitive), contradicts one it contains after ``"not "``, is relevant when it contains
  ``"relevant"`` or supports a statement; a statement addresses the question when it shares a
  word of four letters or more with it.
* correctness: a claim is stated by the other side when the same claim is listed there.
* entities: the capitalised words.
"""

from __future__ import annotations

import re
from typing import Any

from judge_script import items, script

from evalframe.metrics._rag_prompts import CLAIMS, CORRECTNESS, ENTITIES, GROUNDING

__all__ = ["VERDICT", "claims_of", "items"]


def claims_of(text: str) -> list[str]:
    text = text.strip().rstrip(".")
    if not text or text == "nothing":
        return []
    return [c.strip() for c in text.split(". ") if c.strip()]


def _grounding(f: dict[str, str]) -> Any:
    passages = items(f["passages"])
    statements = items(f["statements"])
    words = {w for w in re.findall(r"\w+", f["question"].lower()) if len(w) >= 4}
    out_statements = []
    supporting: set[str] = set()
    for sid, text in statements:
        low = text.lower()
        sup = [int(n) for n, p in passages if low in p.lower() and f"not {low}" not in p.lower()]
        con = [int(n) for n, p in passages if f"not {low}" in p.lower()]
        supporting.update(str(n) for n in sup)
        out_statements.append(
            {
                "statement": sid,
                "supported_by": sup,
                "contradicted_by": con,
                "addresses_question": bool(words & set(re.findall(r"\w+", low))),
            }
        )
    return {
        "passages": [
            {"passage": int(n), "relevant": "relevant" in p.lower() or n in supporting}
            for n, p in passages
        ],
        "statements": out_statements,
    }


def _correctness(f: dict[str, str]) -> Any:
    a = items(f["answer"])
    r = items(f["reference"])
    a_texts = {t for _, t in a}
    r_texts = {t for _, t in r}
    return {
        "answer": [{"statement": i, "in_reference": t in r_texts} for i, t in a],
        "reference": [{"statement": i, "in_answer": t in a_texts} for i, t in r],
    }


VERDICT = script(
    {
        CLAIMS: lambda f: (
            "not json {" if f["text"] == "garbled" else {"claims": claims_of(f["text"])}
        ),
        GROUNDING: _grounding,
        CORRECTNESS: _correctness,
        ENTITIES: lambda f: {"entities": re.findall(r"\b[A-Z][a-z]+\b", f["text"])},
    }
)
