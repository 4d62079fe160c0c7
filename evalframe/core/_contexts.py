"""Retrieved contexts as data: the ``contexts`` column and the ``reference_contexts`` field.

A sample's retrieved contexts are a ranked list, best first, given as strings or as
``{"id": ..., "text": ...}`` objects (the id optional, a string or an integer). They become
two columns of the evaluation frame:

* ``contexts``: ``List(String)``, the texts in rank order;
* ``context_ids``: ``List(String)``, the ids in the same order (null where an item had
  none); present only when some item gave one.

They come from saved outputs (a ``contexts`` field of list-form JSON/YAML entries and JSONL
lines, a ``contexts`` column of CSV, as JSON text, or of Parquet, as a list) or from a system
under test that returns ``{"output": ..., "contexts": [...]}`` instead of a string. A run
stores them with its outputs.

A dataset sample may hold the contexts a perfect retriever would return as
``reference_contexts`` (same shapes); they are kept in the sample's metadata, as
``metadata.reference_contexts`` (texts) and ``metadata.reference_context_ids`` (ids, when
given), so they travel with the dataset wherever its metadata does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

import polars as pl

from evalframe.core import schema as C
from evalframe.core._errors import type_name

__all__ = [
    "CONTEXTS",
    "CONTEXT_IDS",
    "REFERENCE_CONTEXTS",
    "REFERENCE_CONTEXT_IDS",
    "Parsed",
    "contexts_columns",
    "parse_contexts",
    "reference_contexts",
    "system_reply",
    "with_reference_contexts",
]

CONTEXTS: Final = "contexts"
CONTEXT_IDS: Final = "context_ids"
REFERENCE_CONTEXTS: Final = "reference_contexts"
REFERENCE_CONTEXT_IDS: Final = "reference_context_ids"

Parsed = tuple[list[str], list[str | None]]


class _BadContexts(ValueError):  # noqa: N818 - never escapes: callers raise DatasetError
    """A contexts value of the wrong shape; the caller adds the file, sample and field."""


def parse_contexts(value: object, *, from_text: bool = False) -> Parsed | None:
    """A contexts value as ``(texts, ids)``; ``None`` when absent.

    Args:
        value: a list of strings and/or ``{id, text}`` objects; with ``from_text`` also the
            JSON text of one (a CSV cell), where an empty cell is absent.

    Raises:
        _BadContexts: anything else, naming the offending item.

    Examples:
        >>> parse_contexts(["a", {"id": 7, "text": "b"}])
        (['a', 'b'], [None, '7'])
        >>> parse_contexts('["x"]', from_text=True)
        (['x'], [None])
    """
    if value is None:
        return None
    if from_text and isinstance(value, str):
        if not value.strip():
            return None
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise _BadContexts(f"is not a JSON list: {exc}") from exc
    if not isinstance(value, list | tuple):
        raise _BadContexts(
            f"must be a list of strings or of {{id, text}} objects; got {type_name(value)}"
        )
    texts: list[str] = []
    ids: list[str | None] = []
    for i, item in enumerate(value):  # the items of one sample's list
        if isinstance(item, str):
            texts.append(item)
            ids.append(None)
            continue
        if not isinstance(item, Mapping) or not isinstance(item.get("text"), str):
            raise _BadContexts(
                f"item {i} must be a string or an object with a string 'text'; "
                f"got {type_name(item if not isinstance(item, Mapping) else item.get('text'))}"
            )
        given = item.get("id")
        if given is not None and (isinstance(given, bool) or not isinstance(given, str | int)):
            raise _BadContexts(
                f"item {i} 'id' must be a string or an integer; got {type_name(given)}"
            )
        texts.append(item["text"])
        ids.append(None if given is None else str(given))
    return texts, ids


def contexts_columns(parsed: Sequence[Parsed | None]) -> dict[str, pl.Series]:
    """The ``contexts`` (and, when any id was given, ``context_ids``) columns; empty when
    no row gave contexts."""
    if all(p is None for p in parsed):
        return {}
    dtype = pl.List(pl.String)
    out = {CONTEXTS: pl.Series(CONTEXTS, [p[0] if p else None for p in parsed], dtype=dtype)}
    if any(p is not None and any(i is not None for i in p[1]) for p in parsed):
        out[CONTEXT_IDS] = pl.Series(
            CONTEXT_IDS, [p[1] if p else None for p in parsed], dtype=dtype
        )
    return out


def system_reply(result: Any) -> tuple[Any, Parsed | None]:
    """A system's return value as ``(output, contexts)``: a mapping with ``output`` gives
    its output and parsed ``contexts``; anything else is the output itself.

    Raises:
        _BadContexts: a mapping without ``output``, or with malformed ``contexts``.
    """
    if not isinstance(result, Mapping):
        return result, None
    if "output" not in result:
        raise _BadContexts(
            "returned a mapping without 'output'; return a string, or "
            "{'output': <string>, 'contexts': [...]}"
        )
    try:
        return result["output"], parse_contexts(result.get("contexts"))
    except _BadContexts as exc:
        raise _BadContexts(f"returned 'contexts' that {exc}") from exc


def with_reference_contexts(record: Mapping[Any, Any], metadata: dict[str, Any]) -> dict[str, Any]:
    """``metadata`` with the record's ``reference_contexts`` field (texts and ids) added.

    Raises:
        _BadContexts: a malformed field, or metadata that already holds different
            reference contexts.
    """
    parsed = parse_contexts(record.get(REFERENCE_CONTEXTS), from_text=True)
    if parsed is None:
        return metadata
    texts, ids = parsed
    if REFERENCE_CONTEXTS in metadata and metadata[REFERENCE_CONTEXTS] != texts:
        raise _BadContexts("disagrees with metadata.reference_contexts; give them once")
    out = {**metadata, REFERENCE_CONTEXTS: texts}
    if any(i is not None for i in ids):
        out[REFERENCE_CONTEXT_IDS] = ids
    return out


def reference_contexts() -> pl.Expr:
    """The sample's reference contexts (``List(String)``) from its metadata; null where
    absent or not a list of strings."""
    found = pl.col(C.METADATA).str.json_path_match(f"$.{REFERENCE_CONTEXTS}")
    return found.str.json_decode(pl.List(pl.String))
