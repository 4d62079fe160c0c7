"""The house's shape: layers import only downward, one error tree, a pinned public surface."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import pkgutil
import subprocess
import sys
import textwrap
from pathlib import Path

import evalframe as ef

ROOT = Path(__file__).resolve().parents[1]


def lint_imports(cwd: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "from importlinter.cli import lint_imports_command; lint_imports_command()",
            *extra,
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env={"PYTHONPATH": str(cwd), "PATH": "/usr/bin:/bin"},
    )


def test_layers_import_only_downward() -> None:
    done = lint_imports(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 4 kept, 0 broken." in done.stdout


def test_the_layer_contract_fails_on_an_upward_import(tmp_path: Path) -> None:
    """Control: the same contract type breaks when a low layer reaches up, even inside a
    function, so a green contract above means something."""
    pkg = tmp_path / "house"
    for layer in ("core", "views"):
        (pkg / layer).mkdir(parents=True)
        (pkg / layer / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "views" / "render.py").write_text("X = 1\n", encoding="utf-8")
    (pkg / "core" / "run.py").write_text(
        "def report():\n    from house.views import render\n    return render.X\n",
        encoding="utf-8",
    )
    (tmp_path / ".importlinter").write_text(
        textwrap.dedent(
            """
            [importlinter]
            root_package = house

            [importlinter:contract:layers]
            name = layers
            type = layers
            layers =
                house.views
                house.core
            """
        ),
        encoding="utf-8",
    )
    done = lint_imports(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "house.core.run -> house.views.render" in done.stdout


def _evalframe_modules() -> list[str]:
    return [
        m.name
        for m in pkgutil.walk_packages(ef.__path__, prefix="evalframe.")
        if m.name != "evalframe.__main__"
    ]


def test_every_exception_evalframe_defines_derives_from_evalframe_error() -> None:
    defined = []
    for name in _evalframe_modules():
        module = importlib.import_module(name)
        for obj in vars(module).values():
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseException)
                and obj.__module__ == name
                and not obj.__name__.startswith("_")
            ):
                defined.append(obj)
    assert defined, "no exception class found: the scan is broken"
    assert {e.__module__ for e in defined} == {"evalframe.core._errors"}
    assert all(issubclass(e, ef.EvalframeError) for e in defined), defined


def test_no_function_shadows_a_module() -> None:
    functions = [n for n in ef.__all__ if inspect.isfunction(getattr(ef, n))]
    assert {"compare", "evaluate", "gate", "score"} <= set(functions)
    for name in functions:
        assert importlib.util.find_spec(f"evalframe.{name}") is None, name


def test_public_names_are_pinned() -> None:
    assert ef.__all__ == [
        "BudgetExhaustedError", "Calibration", "Checkpoint", "ClusterError", "Comparison",
        "ComparisonError", "Concurrency", "Dataset",
        "DatasetError", "Estimate", "EvalframeError", "ExportError", "GateResult",
        "HashingEmbedder", "Limits",
        "MetricError", "OnnxEmbedder", "OpenAIEmbeddings", "OpenAIJudge", "ProviderError",
        "Providers", "Report", "Run", "Store", "StoreBusyError", "StoreError", "Webhook",
        "__version__",
        "adversarial", "aggregate", "calibrate", "compare", "estimate", "evaluate", "gate",
        "io", "metrics", "online", "plot", "providers", "read_dataset", "read_outputs",
        "schema", "score", "synthesize", "testing", "trajectory",
    ]  # fmt: skip
    assert ef.metrics.__all__ == [
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
    ]  # fmt: skip
    assert ef.providers.__all__ == [
        "ENV", "BudgetExhaustedError", "Call", "Embedded", "EmbeddingClient", "HashingEmbedder",
        "JudgeClient", "Ledger", "OnnxEmbedder", "OpenAIEmbeddings", "OpenAIJudge", "Providers",
        "Reply", "ResponseCache", "RetryPolicy", "Secret", "TokenEmbeddingClient", "Webhook",
        "default_cache_path",
    ]  # fmt: skip
    assert ef.schema.__all__ == [
        "ACTUAL_OUTPUT", "DATASET_SCHEMA", "ERROR", "EXPECTED_OUTPUT", "EXPECTED_TYPE", "INPUT",
        "METADATA", "METRIC", "OPERATIONAL_COLUMNS", "REPETITION", "ROW_HASH", "RUN_ID",
        "SAMPLE_ID", "SCORE", "SCORES_SCHEMA", "SYSTEM_ERROR", "TAGS", "USAGE_SCHEMA",
        "ExpectedType", "expected_text", "metadata_field",
    ]  # fmt: skip
    assert ef.aggregate.__all__ == [
        "AGGREGATES", "UNTAGGED", "cohorts", "dimensions", "headline", "histograms", "macro_f1",
        "mean", "n", "n_errors", "n_passed", "n_scored", "p50", "p95", "pass_rate",
        "pass_rate_scored", "safety_failures", "status_line", "summarize",
    ]  # fmt: skip
    assert ef.plot.__all__ == [
        "ComparisonPlot", "RunPlot", "StorePlot", "delta_bins", "deltas", "heatmap",
        "histograms", "paired_scores", "to_png", "to_svg", "trend", "trend_frame",
    ]  # fmt: skip


def test_private_modules_hold_the_implementation() -> None:
    """Only packages and documented namespaces have public module names."""
    public = {
        m.split(".")[-1] for m in _evalframe_modules() if not m.split(".")[-1].startswith("_")
    }
    assert public == {
        "aggregate", "cli", "cluster", "core", "engine", "enrich", "metrics", "online", "plot",
        "providers", "schema", "store", "trajectory", "views",
        # integrations and their documented namespaces (ef.io, ef.testing)
        "integrations", "io", "testing",
        # metric families: one module per family, documented in the catalogue
        "citation", "deterministic", "judge", "lexical", "operational", "ordinal",
        "rag", "reliability", "retrieval", "safety", "semantic", "similarity", "structural",
        "judge_toolbox",
        "agent", "conversation", "mcp",  # and trajectory (also the ef.trajectory namespace)
    }  # fmt: skip


def test_import_loads_no_compiler_store_or_view_and_the_seam_loads_them_on_use() -> None:
    code = textwrap.dedent(
        """
        import sys
        import evalframe as ef
        from evalframe.core import _seam

        heavy = ("numpy", "numba", "duckdb", "pyarrow", "evalframe.views", "evalframe.store")
        print(sorted(m for m in heavy if m in sys.modules))
        ds = ef.Dataset.from_records([{"id": "a", "input": {}, "expected_output": "b"}], name="d")
        run = ef.evaluate(ds, outputs={"a": "b"}, metrics=["exact-match"])
        print(type(run.report()).__name__, "evalframe.views" in sys.modules)
        print(_seam.provided() == _seam.names())
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:3] == ["[]", "Report True", "True"], out.stdout + out.stderr
