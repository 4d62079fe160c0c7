"""Engines: ``evaluate`` end to end (read, call the system under test, enrich, score, save),
rescoring stored outputs (``_rescore``, behind ``Store.rescore``) and ``synthesize`` (golden
sets from documents).

The package loads its modules on first use, so importing one engine (``ef.online``, which
the serving path imports) does not load the others.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalframe.engine import _adversarial as adversarial
    from evalframe.engine._calibrate import calibrate
    from evalframe.engine._evaluate import evaluate
    from evalframe.engine._synthesize import synthesize

__all__ = ["adversarial", "calibrate", "evaluate", "synthesize"]

_WHERE = {
    "adversarial": ("evalframe.engine._adversarial", None),
    "calibrate": ("evalframe.engine._calibrate", "calibrate"),
    "evaluate": ("evalframe.engine._evaluate", "evaluate"),
    "synthesize": ("evalframe.engine._synthesize", "synthesize"),
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'evalframe.engine' has no attribute {name!r}")
    module, attribute = _WHERE[name]
    value = importlib.import_module(module)
    return value if attribute is None else getattr(value, attribute)
