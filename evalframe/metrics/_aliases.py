"""harness-evals' metric names that differ from evalframe's, registered as aliases.

Each alias stands for an evalframe metric spec with harness-evals' default threshold where
it differs from evalframe's (``embedding-similarity`` is ``cosine-embedding(threshold=0.8)``),
so a harness-evals user can type the names they know. ``evalframe metrics`` lists them; a
run records the target's canonical id. docs/metrics/harness-evals.md maps every
harness-evals metric, and says where the meanings differ.
"""

from __future__ import annotations

from typing import Final

from evalframe.metrics._registry import alias

__all__ = ["HARNESS_EVALS"]

HARNESS_EVALS: Final = {
    # alias: (the spec it stands for, harness-evals' name)
    "embedding-similarity": ("cosine-embedding(threshold=0.8)", "embedding_similarity"),
    "answer-similarity": ("cosine-embedding(threshold=0.8)", "answer_similarity"),
    "rouge": ("rouge-l", "rouge (variant rouge-l; rouge-1 and rouge-2 are their own metrics)"),
    "schema-validation": ("json-schema(threshold=1.0)", "schema_validation"),
    "cost-efficiency": ("cost", "cost_efficiency"),
    "geval": ("g-eval(threshold=0.7)", "geval"),
    "rubric-judge": ("rubric(threshold=0.6)", "rubric_judge"),
    "pii": ("pii-leak(threshold=1.0)", "pii"),
    "turn-relevancy": ("conversation-relevancy(threshold=0.7)", "turn_relevancy"),
    "calibration": ("calibration-error(threshold=0.7)", "calibration"),
    "tool-selection": ("tool-correctness(mode=multiset, threshold=0.7)", "tool_selection"),
    "tool-argument-match": ("tool-called-with", "tool_argument_match (subset pairing)"),
    "conversation-coherence": ("coherence", "conversation_coherence"),
    "conversation-resolution": ("resolution", "conversation_resolution"),
    "conversational-geval": ("conversational-g-eval", "conversational_geval"),
    "mcp-trace-completeness": ("trace-completeness", "mcp_trace_completeness"),
}
"""Alias -> (target spec, harness-evals' name)."""

for _name, (_target, _origin) in HARNESS_EVALS.items():  # the aliases, not rows
    alias(_name, _target, note=f"harness-evals' {_origin}")
