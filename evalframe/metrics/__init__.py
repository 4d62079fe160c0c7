"""Metrics: the registry, the ``@metric`` contract and the built-in families.

Every metric is a value with a canonical id (``rouge-l(beta=2.0)``) whose computation is a
set of Polars expressions over whole columns. A metric may read *derived* columns (pure,
computed once per frame) and declare *needs*: provider-filled columns, as plain values
(``TextEmbeddings()``, ``TokenEmbeddings(...)``, ``JudgeReplies(...)``) that the enrich layer
fills before scoring. Resolve spec strings with ``get``; build from Python with the
snake_case factories (``rouge_l(beta=2.0)``). The built-in families load on first use of the
registry or of a factory, not at ``import evalframe``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from evalframe.metrics._registry import (
    BUILTIN_FAMILIES,
    Alias,
    MetricFactory,
    alias,
    aliases,
    available,
    definition,
    get,
    load_builtins,
    metric,
    register,
    resolve,
)
from evalframe.metrics._rowwise import MetricScore, Sample, from_object, rowwise
from evalframe.metrics._spec import Derived, Metric, MetricDef, Need, Range, Scored, parse_spec

if TYPE_CHECKING:  # the families load with the registry, not at import
    from evalframe.metrics.agent import (
        argument_correctness,
        goal_accuracy,
        plan_adherence,
        plan_quality,
        step_efficiency,
        task_completion,
        tool_correctness,
        tool_error_rate,
        trajectory_match,
    )
    from evalframe.metrics.citation import citation_groundedness
    from evalframe.metrics.conversation import (
        coherence,
        conversation_completeness,
        conversation_relevancy,
        conversational_g_eval,
        knowledge_retention,
        resolution,
        role_adherence,
        tool_use,
        topic_adherence,
        turn_contextual_precision,
        turn_contextual_recall,
        turn_contextual_relevancy,
        turn_efficiency,
        turn_faithfulness,
        turn_latency,
        turn_token_cost,
    )
    from evalframe.metrics.deterministic import list_contains, numeric_diff, webhook
    from evalframe.metrics.judge import JudgeReplies, llm_as_judge, refusal_quality
    from evalframe.metrics.judge_toolbox import (
        dag,
        g_eval,
        pairwise,
        prompt_alignment,
        rubric,
        summarization,
    )
    from evalframe.metrics.lexical import (
        contains,
        exact_match,
        regex,
        rouge_1,
        rouge_2,
        rouge_l,
        rouge_lsum,
    )
    from evalframe.metrics.mcp import (
        mcp_arguments_valid,
        mcp_tool_selection,
        trace_completeness,
    )
    from evalframe.metrics.operational import cost, latency, retry_count, token_cost
    from evalframe.metrics.ordinal import ordinal_distance
    from evalframe.metrics.rag import (
        answer_correctness,
        answer_relevancy,
        context_entity_recall,
        context_precision,
        context_recall,
        context_relevancy,
        faithfulness,
        hallucination,
    )
    from evalframe.metrics.reliability import (
        brier_score,
        calibration_error,
        discrimination,
        environment_robustness,
        fault_robustness,
        outcome_consistency,
        output_consistency,
        prompt_robustness,
        resource_consistency,
        score_consistency,
        trajectory_consistency,
    )
    from evalframe.metrics.retrieval import (
        answer_containment_at_k,
        retrieval_hit_at_k,
        retrieval_mrr,
        retrieval_ndcg_at_k,
        retrieval_recall_at_k,
    )
    from evalframe.metrics.safety import (
        ascii_smuggling,
        bias,
        compliance,
        harm_severity,
        harmful_advice,
        misuse_detection,
        pii_leak,
        prompt_injection,
        response_disclosure,
        role_violation,
        toxicity,
    )
    from evalframe.metrics.semantic import (
        TextEmbeddings,
        TokenEmbeddings,
        bertscore_like,
        cosine_embedding,
    )
    from evalframe.metrics.similarity import bleu, levenshtein
    from evalframe.metrics.structural import (
        composite,
        json_diff,
        json_schema,
        json_valid,
        structural_similarity,
    )
    from evalframe.metrics.trajectory import (
        approval_gated,
        no_pending_approvals,
        steps_below,
        tool_call_order,
        tool_called,
        tool_called_with,
        tool_not_called,
    )

__all__ = [
    "Alias",
    "Derived",
    "JudgeReplies",
    "Metric",
    "MetricDef",
    "MetricFactory",
    "MetricScore",
    "Need",
    "Range",
    "Sample",
    "Scored",
    "TextEmbeddings",
    "TokenEmbeddings",
    "alias",
    "aliases",
    "answer_containment_at_k",
    "answer_correctness",
    "answer_relevancy",
    "approval_gated",
    "argument_correctness",
    "ascii_smuggling",
    "available",
    "bertscore_like",
    "bias",
    "bleu",
    "brier_score",
    "calibration_error",
    "citation_groundedness",
    "coherence",
    "compliance",
    "composite",
    "contains",
    "context_entity_recall",
    "context_precision",
    "context_recall",
    "context_relevancy",
    "conversation_completeness",
    "conversation_relevancy",
    "conversational_g_eval",
    "cosine_embedding",
    "cost",
    "dag",
    "definition",
    "discrimination",
    "environment_robustness",
    "exact_match",
    "faithfulness",
    "fault_robustness",
    "from_object",
    "g_eval",
    "get",
    "goal_accuracy",
    "hallucination",
    "harm_severity",
    "harmful_advice",
    "json_diff",
    "json_schema",
    "json_valid",
    "knowledge_retention",
    "latency",
    "levenshtein",
    "list_contains",
    "llm_as_judge",
    "mcp_arguments_valid",
    "mcp_tool_selection",
    "metric",
    "misuse_detection",
    "no_pending_approvals",
    "numeric_diff",
    "ordinal_distance",
    "outcome_consistency",
    "output_consistency",
    "pairwise",
    "parse_spec",
    "pii_leak",
    "plan_adherence",
    "plan_quality",
    "prompt_alignment",
    "prompt_injection",
    "prompt_robustness",
    "refusal_quality",
    "regex",
    "register",
    "resolution",
    "resolve",
    "resource_consistency",
    "response_disclosure",
    "retrieval_hit_at_k",
    "retrieval_mrr",
    "retrieval_ndcg_at_k",
    "retrieval_recall_at_k",
    "retry_count",
    "role_adherence",
    "role_violation",
    "rouge_1",
    "rouge_2",
    "rouge_l",
    "rouge_lsum",
    "rowwise",
    "rubric",
    "score_consistency",
    "step_efficiency",
    "steps_below",
    "structural_similarity",
    "summarization",
    "task_completion",
    "token_cost",
    "tool_call_order",
    "tool_called",
    "tool_called_with",
    "tool_correctness",
    "tool_error_rate",
    "tool_not_called",
    "tool_use",
    "topic_adherence",
    "toxicity",
    "trace_completeness",
    "trajectory_consistency",
    "trajectory_match",
    "turn_contextual_precision",
    "turn_contextual_recall",
    "turn_contextual_relevancy",
    "turn_efficiency",
    "turn_faithfulness",
    "turn_latency",
    "turn_token_cost",
    "webhook",
]


def __getattr__(name: str) -> Any:
    # A built-in factory or need type: load the families (in their fixed order), then look
    # the name up in the family that defines it.
    if not name.startswith("_"):
        load_builtins()
        for family in BUILTIN_FAMILIES:
            module = importlib.import_module(f"evalframe.metrics.{family}")
            if name in getattr(module, "__all__", ()):
                value = getattr(module, name)
                globals()[name] = value
                return value
    raise AttributeError(f"module 'evalframe.metrics' has no attribute {name!r}")
