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

from evalframe import aggregate, metrics, providers, schema
from evalframe._version import __version__
from evalframe.dataset import Dataset, read_dataset
from evalframe.exceptions import (
    DatasetError,
    EvalframeError,
    MetricError,
    ProviderError,
    StoreError,
)
from evalframe.outputs import read_outputs
from evalframe.providers import (
    HashingEmbedder,
    OnnxEmbedder,
    OpenAIEmbeddings,
    OpenAIJudge,
    Providers,
)
from evalframe.report import Report
from evalframe.run import Run, evaluate
from evalframe.score import score

__all__ = [
    "Dataset",
    "DatasetError",
    "EvalframeError",
    "HashingEmbedder",
    "MetricError",
    "OnnxEmbedder",
    "OpenAIEmbeddings",
    "OpenAIJudge",
    "ProviderError",
    "Providers",
    "Report",
    "Run",
    "StoreError",
    "__version__",
    "aggregate",
    "evaluate",
    "metrics",
    "providers",
    "read_dataset",
    "read_outputs",
    "schema",
    "score",
]
