"""The house's shape: layers import only downward, one error tree, a pinned public surface."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import pkgutil
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
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
        "DatasetError", "Endpoint", "Estimate", "EvalframeError", "ExportError", "GateResult",
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


# --- import cycles ------------------------------------------------------------------------------


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _module_files(root: Path, package: str) -> dict[str, Path]:
    found = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imported(tree: ast.Module, module: str, is_package: bool) -> Iterator[tuple[str, ...]]:
    """Each import of ``tree``, wherever it stands (inside functions too; not under ``if
    TYPE_CHECKING:``), as the names it may load, most specific first."""
    annotations: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            annotations.update(id(sub) for stmt in node.body for sub in ast.walk(stmt))
    for node in ast.walk(tree):
        if id(node) in annotations:
            continue
        if isinstance(node, ast.Import):
            yield from ((alias.name,) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")
                here = parts[: len(parts) - node.level + is_package]
                base = ".".join([*here, *([node.module] if node.module else [])])
            yield from ((f"{base}.{alias.name}", base) for alias in node.names)


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (``from P import m`` counts as importing
    the module ``P.m`` when there is one, else ``P``), read from the source with ``ast``."""
    modules = _module_files(root, package)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        targets: set[str] = set()
        for candidates in _imported(tree, name, path.name == "__init__.py"):
            for candidate in candidates:
                known = candidate
                while known and known not in modules:
                    known = known.rpartition(".")[0]
                if known:
                    targets.add(known)
                    break
        graph[name] = targets - {name}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The graph's strongly connected components of more than one module (Tarjan's
    algorithm, iterative): each is a set of modules that import each other in a circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for target in edges:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph.get(target, ())))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def _described(graph: dict[str, set[str]], cycles: list[list[str]]) -> str:
    return "\n".join(" ".join(f"{m} -> {sorted(graph[m] & set(c))};" for m in c) for c in cycles)


def test_no_module_of_evalframe_imports_itself_through_others() -> None:
    """Counting imports inside functions, no circle of imports remains in evalframe/."""
    graph = import_graph(ROOT, "evalframe")
    assert len(graph) > 200, "the scan found too few modules: it is broken"
    assert sum(len(targets) for targets in graph.values()) > 800
    assert graph["evalframe.engine._rescore"] >= {"evalframe.store._scored"}
    cycles = import_cycles(graph)
    assert not cycles, _described(graph, cycles)


def _write_package(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def test_the_cycle_scan_finds_a_circle_made_inside_a_function(tmp_path: Path) -> None:
    """Control: a circle closed by an import inside a function, or by a relative import, is
    found; one closed only under ``if TYPE_CHECKING:`` is not."""
    _write_package(
        tmp_path,
        {
            "house/__init__.py": "",
            "house/low/__init__.py": "",
            "house/low/base.py": """
                def report():
                    from house.high import render
                    return render.X
            """,
            "house/high/__init__.py": "",
            "house/high/render.py": "from house.low import base\nX = 1\n",
            "house/high/a.py": "from . import b\n",
            "house/high/b.py": "from .c import Y\n",
            "house/high/c.py": "from house.high.a import *\nY = 2\n",
            "house/high/typed.py": """
                from typing import TYPE_CHECKING
                from house.high import render
                if TYPE_CHECKING:
                    from house.high import hinted
            """,
            "house/high/hinted.py": "from house.high import typed\n",
        },
    )
    graph = import_graph(tmp_path, "house")
    assert graph["house.low.base"] == {"house.high.render"}
    assert graph["house.high.typed"] == {"house.high.render"}
    assert import_cycles(graph) == [
        ["house.high.a", "house.high.b", "house.high.c"],
        ["house.high.render", "house.low.base"],
    ]


def test_the_contracts_break_on_a_planted_upward_import(tmp_path: Path) -> None:
    """Control: evalframe's own contracts (pyproject.toml), run over a copy of the package
    with two violations planted inside functions, name both."""
    shutil.copytree(ROOT / "evalframe", tmp_path / "evalframe")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    planted = {
        "store/_chunks.py": "def _planted():\n    from evalframe.enrich import fill\n",
        "core/_stats.py": "def _planted():\n    from evalframe.views import _format\n",
    }
    for module, text in planted.items():
        with open(tmp_path / "evalframe" / module, "a", encoding="utf-8") as f:
            f.write("\n\n" + text)
    done = lint_imports(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Contracts: 2 kept, 2 broken." in done.stdout
    assert "evalframe.store._chunks -> evalframe.enrich" in done.stdout
    assert "evalframe.core._stats -> evalframe.views._format" in done.stdout
