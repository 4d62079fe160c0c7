"""The one lazy seam: conveniences on lower-layer values that a higher layer provides.

Some methods read naturally on a core or store value but belong to a higher layer:
``Run.report()``, ``Run.plot``, ``Run.save()`` and the notebook reprs; ``Comparison``'s
Markdown, HTML and charts; ``GateResult``'s text; ``Store.plot`` and its HTML listing;
``Store.rescore`` and ``Store.score_outputs`` (scoring is the engine's); and, within the views,
``Report``'s renderings (the renderers import the report document, never the reverse).
Instead of importing upward, those methods ask a *slot* of this module, and the higher
layer fills it when it is imported (``evalframe.views`` calls ``run_html.provide(...)`` in its
``__init__``). So that ``import evalframe`` stays cheap, the top-level package registers a
*loader* that imports the higher layers on the first call that finds its slot empty;
nothing here imports anything at run time.

Each slot is typed with the Protocol of what crosses it, so mypy checks both sides: the
implementation a layer provides and every call (``_seam.run_html.call(run)`` is a ``str``).

Examples:
    >>> import evalframe as ef
    >>> from evalframe.core import _seam
    >>> "run_html" in _seam.names()
    True
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeAlias, TypeVar

if TYPE_CHECKING:  # annotations only: these layers sit above core
    import polars as pl

    from evalframe.core._compare import Comparison
    from evalframe.core._dataset import Dataset
    from evalframe.core._gate import GateResult
    from evalframe.core._run import Run
    from evalframe.core._run_options import Limits
    from evalframe.metrics._registry import MetricFactory
    from evalframe.metrics._spec import Metric
    from evalframe.providers import EmbeddingClient, JudgeClient, Providers
    from evalframe.store import Store
    from evalframe.views._report import Report
    from evalframe.views.plot import ComparisonPlot, RunPlot, StorePlot

    MetricLike: TypeAlias = str | Metric | MetricFactory

__all__ = [
    "Slot",
    "build_report",
    "comparison_html",
    "comparison_markdown",
    "comparison_plot",
    "comparison_text",
    "gate_text",
    "names",
    "on_demand",
    "provided",
    "report_html",
    "report_json_parts",
    "report_json_text",
    "report_markdown",
    "report_page",
    "report_text",
    "rescore",
    "run_html",
    "run_mlflow",
    "run_plot",
    "run_text",
    "runs_html",
    "save_run",
    "score_outputs",
    "store_plot",
]

T = TypeVar("T")

_SLOTS: dict[str, Slot[Any]] = {}
_LOADERS: list[Callable[[], None]] = []


class Slot(Generic[T]):
    """One convenience a higher layer provides, typed ``T`` (its Protocol)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._implementation: T | None = None
        _SLOTS[name] = self

    def provide(self, implementation: T) -> None:
        """Register the higher layer's ``implementation`` (called at its import)."""
        self._implementation = implementation

    @property
    def call(self) -> T:
        """The implementation, the higher layers loaded first if none is registered yet.

        Raises:
            RuntimeError: the layer that provides it was never imported (only possible
                when evalframe's modules are loaded piecemeal, bypassing ``import evalframe``).
        """
        if self._implementation is None:
            for load in _LOADERS:
                load()
        if self._implementation is None:
            raise RuntimeError(
                f"{self.name!r} is provided by a higher evalframe layer that is not loaded; "
                "`import evalframe` loads every layer."
            )
        return self._implementation


def on_demand(loader: Callable[[], None]) -> None:
    """Register a ``loader`` that imports higher layers when a slot is not yet provided."""
    _LOADERS.append(loader)


def provided() -> frozenset[str]:
    """The names of the slots provided so far."""
    return frozenset(name for name, slot in _SLOTS.items() if slot._implementation is not None)


def names() -> frozenset[str]:
    """Every slot's name."""
    return frozenset(_SLOTS)


# --- what crosses each slot ------------------------------------------------------------------


class BuildReport(Protocol):
    def __call__(
        self, run: Run, /, *, samples: bool = ..., include_evidence: bool = ...
    ) -> Report: ...


class ReportJsonParts(Protocol):
    def __call__(
        self, run: Run, /, *, include_evidence: bool = ..., head: Report | None = ...
    ) -> Iterator[memoryview]: ...


class ReportJsonText(Protocol):
    def __call__(
        self, run: Run, /, *, include_evidence: bool = ..., head: Report | None = ...
    ) -> str: ...


class ReportMarkdown(Protocol):
    def __call__(self, report: Report, /, *, max_rows: int = ...) -> str: ...


class ReportPage(Protocol):
    def __call__(
        self, report: Report, /, *, charts: Literal["auto", "vega", "svg", "none"] = ...
    ) -> str: ...


class RenderComparison(Protocol):
    def __call__(self, comparison: Comparison, /, *, max_rows: int = ...) -> str: ...


class GateText(Protocol):
    def __call__(self, result: GateResult, /, *, max_rows: int = ...) -> str: ...


class RunsHtml(Protocol):
    def __call__(self, runs: pl.DataFrame, /, *, title: str = ...) -> str: ...


class RunMlflow(Protocol):
    def __call__(
        self,
        run: Run,
        /,
        *,
        tracking_uri: str | None = ...,
        experiment: str | None = ...,
        run_name: str | None = ...,
    ) -> str: ...


class Rescore(Protocol):
    def __call__(
        self,
        store: Store,
        metrics: Sequence[MetricLike],
        /,
        *,
        runs: str | Sequence[str] | None,
        keep: bool,
        force: bool,
        name: str | None,
        batch_size: int,
        memory_limit: str | None,
        providers: Providers | EmbeddingClient | JudgeClient | None,
        dask: Any,
        limits: Limits | None,
    ) -> list[str]: ...


class ScoreOutputs(Protocol):
    def __call__(
        self,
        store: Store,
        dataset: Dataset,
        outputs: str,
        metrics: Sequence[MetricLike],
        /,
        *,
        repetitions: int,
        name: str | None,
        labels: Mapping[str, str] | None,
        batch_size: int,
        memory_limit: str | None,
        providers: Providers | EmbeddingClient | JudgeClient | None,
        dask: Any,
        limits: Limits | None,
    ) -> str: ...


build_report: Slot[BuildReport] = Slot("build_report")
comparison_html: Slot[RenderComparison] = Slot("comparison_html")
comparison_markdown: Slot[RenderComparison] = Slot("comparison_markdown")
comparison_plot: Slot[Callable[[Comparison], ComparisonPlot]] = Slot("comparison_plot")
comparison_text: Slot[Callable[[Comparison], str]] = Slot("comparison_text")
gate_text: Slot[GateText] = Slot("gate_text")
report_html: Slot[Callable[[Report], str]] = Slot("report_html")
report_json_parts: Slot[ReportJsonParts] = Slot("report_json_parts")
report_json_text: Slot[ReportJsonText] = Slot("report_json_text")
report_markdown: Slot[ReportMarkdown] = Slot("report_markdown")
report_page: Slot[ReportPage] = Slot("report_page")
report_text: Slot[Callable[[Report], str]] = Slot("report_text")
rescore: Slot[Rescore] = Slot("rescore")
run_html: Slot[Callable[[Run], str]] = Slot("run_html")
run_mlflow: Slot[RunMlflow] = Slot("run_mlflow")
run_plot: Slot[Callable[[Run], RunPlot]] = Slot("run_plot")
run_text: Slot[Callable[[Run], str]] = Slot("run_text")
runs_html: Slot[RunsHtml] = Slot("runs_html")
save_run: Slot[Callable[[Run, Store | str | os.PathLike[str]], str]] = Slot("save_run")
score_outputs: Slot[ScoreOutputs] = Slot("score_outputs")
store_plot: Slot[Callable[[Store], StorePlot]] = Slot("store_plot")
