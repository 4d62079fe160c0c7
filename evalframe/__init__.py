"""evalframe: evaluate LLM, RAG and agent systems with dataframes.

Examples:
    >>> import evalframe as ef
    >>> ds = ef.Dataset.from_records(
    ...     [{"id": "q1", "input": {"question": "2+2?"}, "expected_output": "4"}], name="math")
    >>> run = ef.evaluate(ds, outputs={"q1": "4"}, metrics=["exact-match", "rouge-l"])
    >>> run.summary.select("metric", "mean", "pass_rate").rows()
    [('exact-match', 1.0, 1.0), ('rouge-l', 1.0, 1.0)]
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

from evalframe import metrics, providers
from evalframe._version import __version__
from evalframe.core import _seam, aggregate, schema
from evalframe.core._dataset import Dataset, read_dataset
from evalframe.core._errors import (
    BudgetExhaustedError,
    ClusterError,
    ComparisonError,
    DatasetError,
    EvalframeError,
    ExportError,
    MetricError,
    ProviderError,
    StoreBusyError,
    StoreError,
)
from evalframe.core._lazy import load_attribute
from evalframe.core._outputs import read_outputs
from evalframe.core._run import Run
from evalframe.core._run_options import Checkpoint, Concurrency, Endpoint, Limits

if TYPE_CHECKING:  # these load on first use (see __getattr__), not at import
    from evalframe import online
    from evalframe.core._calibration import Calibration
    from evalframe.core._compare import Comparison, compare
    from evalframe.core._estimate import Estimate, estimate
    from evalframe.core._gate import GateResult, gate
    from evalframe.engine import adversarial, calibrate, evaluate, synthesize
    from evalframe.enrich import score
    from evalframe.providers import (
        HashingEmbedder,
        OnnxEmbedder,
        OpenAIEmbeddings,
        OpenAIJudge,
        Providers,
        Webhook,
    )
    from evalframe.store import Store
    from evalframe.views import plot
    from evalframe.views._report import Report

__all__ = [
    "BudgetExhaustedError",
    "Calibration",
    "Checkpoint",
    "ClusterError",
    "Comparison",
    "ComparisonError",
    "Concurrency",
    "Dataset",
    "DatasetError",
    "Endpoint",
    "Estimate",
    "EvalframeError",
    "ExportError",
    "GateResult",
    "HashingEmbedder",
    "Limits",
    "MetricError",
    "OnnxEmbedder",
    "OpenAIEmbeddings",
    "OpenAIJudge",
    "ProviderError",
    "Providers",
    "Report",
    "Run",
    "Store",
    "StoreBusyError",
    "StoreError",
    "Webhook",
    "__version__",
    "adversarial",
    "aggregate",
    "calibrate",
    "compare",
    "estimate",
    "evaluate",
    "gate",
    "io",
    "metrics",
    "online",
    "plot",
    "providers",
    "read_dataset",
    "read_outputs",
    "schema",
    "score",
    "synthesize",
    "testing",
    "trajectory",
]


_LAZY: dict[str, str] = {
    "Calibration": "evalframe.core._calibration",
    "Estimate": "evalframe.core._estimate",
    "estimate": "evalframe.core._estimate",
    "calibrate": "evalframe.engine",
    "Comparison": "evalframe.core._compare",
    "compare": "evalframe.core._compare",
    "GateResult": "evalframe.core._gate",
    "gate": "evalframe.core._gate",
    "evaluate": "evalframe.engine",
    "synthesize": "evalframe.engine",
    "adversarial": "evalframe.engine",
    "score": "evalframe.enrich",
    "HashingEmbedder": "evalframe.providers",
    "OnnxEmbedder": "evalframe.providers",
    "OpenAIEmbeddings": "evalframe.providers",
    "OpenAIJudge": "evalframe.providers",
    "Providers": "evalframe.providers",
    "Webhook": "evalframe.providers",
    "Store": "evalframe.store",
    "plot": "evalframe.views",
    "Report": "evalframe.views._report",
}


_SUBMODULES = frozenset(
    {"io", "online", "testing", "trajectory"}
)  # documented namespaces, loaded on first use


def __getattr__(name: str) -> Any:
    # NumPy, DuckDB, the providers, the engine and the views load on first use, so
    # ``import evalframe`` costs little more than ``import polars``.
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    return load_attribute(globals(), _LAZY, __name__, name)


def _load_views() -> None:
    # Each import registers what the seam serves: the views, and run.to_mlflow.
    import evalframe.integrations
    import evalframe.views  # noqa: F401


def _save_run(run: Run, store: Store | str | os.PathLike[str]) -> str:
    from evalframe.store import as_store

    return as_store(store).save(run)


def _rescore(store: Store, metrics: Any, **options: Any) -> list[str]:
    from evalframe.engine._rescore import rescore

    return rescore(store, metrics, **options)


def _score_outputs(store: Store, *args: Any, **options: Any) -> str:
    from evalframe.engine._stream import score_outputs

    return score_outputs(store, *args, **options)


_seam.save_run.provide(_save_run)
_seam.rescore.provide(_rescore)
_seam.score_outputs.provide(_score_outputs)
_seam.on_demand(_load_views)
