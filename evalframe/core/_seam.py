"""The one lazy seam: conveniences on lower-layer values that a higher layer provides.

Some methods read naturally on a core or store value but belong to a higher layer:
``Run.report()``, ``Run.plot``, ``Run.save()`` and the notebook reprs; ``Comparison``'s
Markdown, HTML and charts; ``GateResult``'s text; ``Store.plot`` and its HTML listing;
``Store.rescore`` and ``Store.score_outputs`` (scoring is the engine's); and, within the views,
``Report``'s renderings (the renderers import the report document, never the reverse).
Instead of importing upward, those methods ask this registry, and the higher layer fills it
when it is imported (``evalframe.views`` calls ``provide`` in its ``__init__``). So that
``import evalframe`` stays cheap, the top-level package registers a *loader* that imports
the higher layers on the first call that finds its name missing; nothing here imports
anything.

Examples:
    >>> import evalframe as ef
    >>> from evalframe.core import _seam
    >>> "run_html" in _seam.names()
    True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, get_args

__all__ = ["Name", "call", "names", "on_demand", "provide", "provided"]

Name = Literal[
    "build_report",
    "comparison_html",
    "comparison_markdown",
    "comparison_plot",
    "comparison_text",
    "gate_text",
    "report_html",
    "report_json_parts",
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

_IMPLEMENTATIONS: dict[str, Callable[..., Any]] = {}
_LOADERS: list[Callable[[], None]] = []


def provide(name: Name, implementation: Callable[..., Any]) -> None:
    """Register the higher layer's ``implementation`` of ``name`` (called at its import)."""
    _IMPLEMENTATIONS[name] = implementation


def on_demand(loader: Callable[[], None]) -> None:
    """Register a ``loader`` that imports higher layers when a name is not yet provided."""
    _LOADERS.append(loader)


def provided() -> frozenset[str]:
    """The names registered so far."""
    return frozenset(_IMPLEMENTATIONS)


def names() -> frozenset[str]:
    """Every name the seam serves."""
    return frozenset(get_args(Name))


def call(name: Name, /, *args: Any, **kwargs: Any) -> Any:
    """Call the registered implementation of ``name``.

    Raises:
        RuntimeError: the layer that provides ``name`` was never imported (only possible
            when evalframe's modules are loaded piecemeal, bypassing ``import evalframe``).
    """
    if name not in _IMPLEMENTATIONS:
        for load in _LOADERS:
            load()
    try:
        implementation = _IMPLEMENTATIONS[name]
    except KeyError:
        raise RuntimeError(
            f"{name!r} is provided by a higher evalframe layer that is not loaded; "
            "`import evalframe` loads every layer."
        ) from None
    return implementation(*args, **kwargs)
