"""The one lazy seam: conveniences on lower-layer values that a higher layer provides.

Some methods read naturally on a core or store value but belong to a higher layer:
``Run.report()``, ``Run.plot``, ``Run.save()`` and the notebook reprs; ``Comparison``'s
Markdown, HTML and charts; ``GateResult``'s text; ``Store.plot`` and its HTML listing.
Instead of importing upward, those methods ask this registry, and the higher layer fills it
when it is imported (``evalframe.views`` and ``evalframe.store`` call ``provide`` in their
``__init__``). ``import evalframe`` imports every layer, so by the time user code holds a
``Run`` every entry is there; nothing here imports anything.

Examples:
    >>> from evalframe.core import _seam
    >>> sorted(_seam.provided())[:3]
    ['build_report', 'comparison_html', 'comparison_markdown']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

__all__ = ["Name", "call", "provide", "provided"]

Name = Literal[
    "build_report",
    "comparison_html",
    "comparison_markdown",
    "comparison_plot",
    "comparison_text",
    "gate_text",
    "run_html",
    "run_plot",
    "run_text",
    "runs_html",
    "save_run",
    "store_plot",
]

_IMPLEMENTATIONS: dict[str, Callable[..., Any]] = {}


def provide(name: Name, implementation: Callable[..., Any]) -> None:
    """Register the higher layer's ``implementation`` of ``name`` (called at its import)."""
    _IMPLEMENTATIONS[name] = implementation


def provided() -> frozenset[str]:
    """The names registered so far."""
    return frozenset(_IMPLEMENTATIONS)


def call(name: Name, *args: Any, **kwargs: Any) -> Any:
    """Call the registered implementation of ``name``.

    Raises:
        RuntimeError: the layer that provides ``name`` was never imported (only possible
            when evalframe's modules are loaded piecemeal, bypassing ``import evalframe``).
    """
    try:
        implementation = _IMPLEMENTATIONS[name]
    except KeyError:
        raise RuntimeError(
            f"{name!r} is provided by a higher evalframe layer that is not loaded; "
            "`import evalframe` loads every layer."
        ) from None
    return implementation(*args, **kwargs)
