"""The evalframe error tree: every exception evalframe raises on purpose derives from
``EvalframeError``.

```
EvalframeError
├── DatasetError            bad dataset or outputs file: names file, sample index and id, field
│   ├── UnsupportedValueError   a value JSON cannot carry (path and reason)
│   ├── YamlLimitError          YAML nested too deeply or aliases expanded too far
│   └── DocumentError           a document synthesize cannot read: the file, what was expected
├── MetricError             unknown metric (suggests close names), bad parameters, bad spec
├── ComparisonError         two runs cannot be compared (different datasets, bad option)
├── StrictModeError         strict mode: the first captured error aborted the run
├── ProviderError           a provider call failed: provider, model, status; never the API key
│   ├── RequestFailedError      a request that failed for good (status, attempts, latency)
│   └── StopCallsError          the run must stop calling providers:
│       ├── BudgetExhaustedError    its budget is spent
│       └── DeadlineExceededError   its deadline has passed
├── StoreError              a run store operation failed: the statement and the cause
│   ├── ImportRefusedError      an export failed its checks; nothing was imported
│   └── StoreBusyError          another process held the store file too long (retryable)
├── ClusterError            a Dask cluster could not be reached or failed mid-run
└── ExportError             an export to another tool (MLflow) failed: the tool, what was left
```

Per-sample scoring problems are not exceptions: they are data, an ``error`` value on that
sample's row of the scores frame.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from evalframe.core._run import Run

__all__ = [
    "BudgetExhaustedError",
    "ClusterError",
    "ComparisonError",
    "DatasetError",
    "DeadlineExceededError",
    "DocumentError",
    "EvalframeError",
    "ExportError",
    "ImportRefusedError",
    "LabelTargetError",
    "MetricError",
    "PromotionTargetError",
    "ProviderError",
    "RequestFailedError",
    "StopCallsError",
    "StoreBusyError",
    "StoreError",
    "StrictModeError",
    "UnsupportedValueError",
    "ViewRequestError",
    "YamlLimitError",
    "type_name",
]


class EvalframeError(Exception):
    """Base class of every error evalframe raises on purpose."""


class DatasetError(EvalframeError, ValueError):
    """A dataset or saved-outputs file is missing, unreadable or invalid."""


class UnsupportedValueError(DatasetError):
    """A value that JSON cannot carry.

    Attributes:
        path: where it sits inside the field, e.g. ``".gains.d1"`` or ``"[2]"``; ``""`` for
            the field itself.
        reason: what is wrong, phrased to follow the field name.
    """

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"value{path} {reason}")
        self.path = path
        self.reason = reason


class YamlLimitError(DatasetError):
    """A YAML document nests too deeply or expands its aliases too far.

    Attributes:
        problem: what exceeds which limit, phrased to follow the file's subject.
        line: the 1-based line where the limit was crossed.
    """

    def __init__(self, problem: str, line: int) -> None:
        super().__init__(f"{problem} (line {line})")
        self.problem = problem
        self.line = line


class DocumentError(DatasetError):
    """A document to synthesize questions from is missing, unreadable, empty or of a kind
    evalframe does not read; the message names the file and what was expected."""


class PromotionTargetError(DatasetError):
    """A promotion would write over a file it must not: one the command reads, or an existing
    file evalframe did not write for promotions (``--force`` replaces the latter)."""


class MetricError(EvalframeError, ValueError):
    """An unknown metric, a bad metric parameter or an unparsable metric spec."""


class ComparisonError(EvalframeError, ValueError):
    """Two runs cannot be compared (different datasets, say), or an option is out of range."""


class StrictModeError(EvalframeError):
    """Strict mode: a captured error (a system under test's or a metric's) aborted the run.

    Attributes:
        sample_id, metric, repetition: where the first error was (``metric`` is None for a
            system under test's error).
    """

    def __init__(
        self, message: str, *, sample_id: str, metric: str | None, repetition: int
    ) -> None:
        super().__init__(message)
        self.sample_id = sample_id
        self.metric = metric
        self.repetition = repetition


class ProviderError(EvalframeError):
    """An embeddings or judge provider call failed after its retries."""


class RequestFailedError(ProviderError):
    """A provider request that failed for good (after its retries, or at once).

    Attributes:
        status: the HTTP status of the last response, ``None`` when none came back.
        attempts: requests made.
        latency_ms: wall time of every attempt and wait.
    """

    def __init__(
        self, message: str, *, status: int | None, attempts: int, latency_ms: float
    ) -> None:
        super().__init__(message)
        self.status = status
        self.attempts = attempts
        self.latency_ms = latency_ms


class StopCallsError(ProviderError):
    """Raised instead of making a call once the run must stop calling providers."""


class BudgetExhaustedError(StopCallsError):
    """Raised instead of making a call once the budget is spent; its message is the row error."""


class DeadlineExceededError(StopCallsError):
    """Raised instead of making a call once the run's deadline has passed."""


class StoreError(EvalframeError):
    """A run store could not be opened, read or written.

    Attributes:
        statement: the SQL statement that failed, if any.
        cause: the underlying exception, if any.
        run: the evaluated run a failed save was for, so it can be saved again
            (``error.run.save(store)``); ``None`` otherwise.
    """

    def __init__(
        self,
        message: str,
        *,
        statement: str | None = None,
        cause: BaseException | None = None,
        run: Run | None = None,
    ) -> None:
        super().__init__(message)
        self.statement = statement
        self.cause = cause
        self.run = run


class ImportRefusedError(StoreError):
    """An export failed a check before its import; the message names the file and the finding."""


class StoreBusyError(StoreError):
    """Another process held the store file for longer than the timeout; retry later.

    Attributes:
        retryable: always True.
    """

    retryable: ClassVar[bool] = True


class LabelTargetError(StoreError):
    """A human label names a run, an execution or a metric the store does not hold.

    Attributes:
        missing: ``"run"``, ``"execution"`` or ``"metric"``.
    """

    def __init__(self, missing: str, message: str) -> None:
        super().__init__(message)
        self.missing = missing


class ViewRequestError(EvalframeError):
    """A request ``evalframe view`` cannot answer: a bad filter, an unknown run or page.

    Attributes:
        status: the HTTP status that fits (400, 404, 413, ...).
        message: what is wrong, in one paragraph.
    """

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class ClusterError(EvalframeError):
    """A Dask cluster could not be reached, or failed during a run (its scheduler lost, a task
    failing for good, Dask not installed); nothing was saved."""


class ExportError(EvalframeError):
    """An export to another tool failed; the message names the tool, the cause and what was
    left there (nothing, or a run ended as failed)."""


def type_name(value: object) -> str:
    """A value's type as error messages name it: ``null``, ``map`` for any mapping (one
    read from a file is a dict), else the Python type's name (``list``, ``str``, ``int``,
    ...)."""
    if value is None:
        return "null"
    if isinstance(value, Mapping):
        return "map"
    return type(value).__name__
