"""A report's large sections, built when first read: :class:`PendingSections`.

A run's report holds one object per execution (``samples``) and per sample
(``sample_aggregates``): for 100,000 samples, more time to build as Python objects than the
whole evaluation took, and then as much again for orjson to write them. Most reports from
Python are written (``to_json``) or rendered (Markdown, HTML) without anyone reading those
lists, so a report keeps them pending: a value that builds the list from the run the first
time the key is read through any of the dict's methods (``report["samples"]``, ``get``,
``items``, ``values``, ``copy``, ``==``, ``dict(report)``, ``json.dumps(report)``, pickling).
While a section is pending, ``to_json`` writes it from the run's frames (the writer behind
``evalframe run --format json``), which gives the same bytes. Assigning a key replaces its
pending value, so an edited report is written as edited.

Only a serializer that reads a dict's storage directly, bypassing its methods (orjson, given
the report itself), sees a pending value: it refuses it as not serializable rather than
write something else. ``report.to_json()`` is the way to write a report.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["Pending", "PendingSections"]


class Pending:
    """A section not built yet: ``build()`` returns it."""

    __slots__ = ("build",)

    def __init__(self, build: Callable[[], Any]) -> None:
        self.build = build

    def __repr__(self) -> str:
        return "<pending report section>"


class PendingSections(dict[str, Any]):
    """A dict whose ``Pending`` values are built, and stored, when first read."""

    def pending(self) -> list[str]:
        """The keys whose sections are still pending."""
        return [k for k, v in dict.items(self) if isinstance(v, Pending)]

    def settle(self) -> None:
        """Build every pending section."""
        for key in self.pending():
            self._build(key)

    def _build(self, key: str) -> Any:
        value = dict.__getitem__(self, key)
        if isinstance(value, Pending):
            value = value.build()
            dict.__setitem__(self, key, value)
        return value

    def __getitem__(self, key: str) -> Any:
        return self._build(key)

    def get(self, key: str, default: Any = None) -> Any:
        return self._build(key) if key in self else default

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key in self:
            return self._build(key)
        dict.__setitem__(self, key, default)
        return default

    def pop(self, key: str, *default: Any) -> Any:
        if key in self:
            self._build(key)
        return dict.pop(self, key, *default)

    def popitem(self) -> tuple[str, Any]:
        self.settle()
        return dict.popitem(self)

    def items(self) -> Any:
        self.settle()
        return dict.items(self)

    def values(self) -> Any:
        self.settle()
        return dict.values(self)

    def __iter__(self) -> Iterator[str]:
        # Defined here so that dict(report) and {**report} read values through __getitem__
        # instead of copying the storage (pending values included).
        return dict.__iter__(self)

    def __eq__(self, other: object) -> bool:
        self.settle()
        if isinstance(other, PendingSections):
            other.settle()
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # a dict: unhashable

    def copy(self) -> Any:
        self.settle()
        return type(self)(dict.items(self))

    def __or__(self, other: Any) -> Any:
        self.settle()
        return type(self)(dict.__or__(self, other))

    def __ror__(self, other: Any) -> Any:
        self.settle()
        return type(self)(dict.__ror__(self, other))

    def __reduce__(self) -> tuple[Any, ...]:
        self.settle()
        return (type(self), (dict(dict.items(self)),))
