"""evalframe: evaluate LLM and RAG systems with dataframes.

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
    ComparisonError,
    DatasetError,
    EvalframeError,
    MetricError,
    ProviderError,
    StoreBusyError,
    StoreError,
)
from evalframe.core._lazy import load_attribute
from evalframe.core._outputs import read_outputs
from evalframe.core._run import Run

if TYPE_CHECKING:  # these load on first use (see __getattr__), not at import
    from evalframe.core._compare import Comparison, compare
    from evalframe.core._gate import GateResult, gate
    from evalframe.engine import evaluate
    from evalframe.enrich import score
    from evalframe.providers import (
        HashingEmbedder,
        OnnxEmbedder,
        OpenAIEmbeddings,
        OpenAIJudge,
        Providers,
    )
    from evalframe.store import Store
    from evalframe.views import plot
    from evalframe.views._report import Report

__all__ = [
    "BudgetExhaustedError",
    "Comparison",
    "ComparisonError",
    "Dataset",
    "DatasetError",
    "EvalframeError",
    "GateResult",
    "HashingEmbedder",
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
    "__version__",
    "aggregate",
    "compare",
    "evaluate",
    "gate",
    "metrics",
    "plot",
    "providers",
    "read_dataset",
    "read_outputs",
    "schema",
    "score",
    "trajectory",
]


_LAZY: dict[str, str] = {
    "Comparison": "evalframe.core._compare",
    "compare": "evalframe.core._compare",
    "GateResult": "evalframe.core._gate",
    "gate": "evalframe.core._gate",
    "evaluate": "evalframe.engine",
    "score": "evalframe.enrich",
    "HashingEmbedder": "evalframe.providers",
    "OnnxEmbedder": "evalframe.providers",
    "OpenAIEmbeddings": "evalframe.providers",
    "OpenAIJudge": "evalframe.providers",
    "Providers": "evalframe.providers",
    "Store": "evalframe.store",
    "plot": "evalframe.views",
    "Report": "evalframe.views._report",
}


def __getattr__(name: str) -> Any:
    # NumPy, DuckDB, the providers, the engine and the views load on first use, so
    # ``import evalframe`` costs little more than ``import polars``.
    if name == "trajectory":  # a namespace module: ef.trajectory.record(...)
        return importlib.import_module("evalframe.trajectory")
    return load_attribute(globals(), _LAZY, __name__, name)


def _load_views() -> None:
    import evalframe.views  # noqa: F401  (registers the views the seam serves)


def _save_run(run: Run, store: Store | str | os.PathLike[str]) -> str:
    from evalframe.store import as_store

    return as_store(store).save(run)


_seam.provide("save_run", _save_run)
_seam.on_demand(_load_views)
