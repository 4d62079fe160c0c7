"""Attributes of a package that load their module on first use (PEP 562 ``__getattr__``).

The top-level package and ``evalframe.providers`` name what they export and where it lives,
and ``import evalframe`` stays as cheap as ``import polars``: NumPy, the provider clients,
the engine, the store and the views load when one of their names is first used.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, MutableMapping
from typing import Any

__all__ = ["load_attribute"]


def load_attribute(
    namespace: MutableMapping[str, Any], table: Mapping[str, str], owner: str, name: str
) -> Any:
    """Import ``table[name]``'s module, keep its ``name`` in ``namespace``, return it.

    Raises:
        AttributeError: ``name`` is not in ``table`` (the usual message for ``owner``).
    """
    module = table.get(name)
    if module is None:
        raise AttributeError(f"module {owner!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    namespace[name] = value
    return value
