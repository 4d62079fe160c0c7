"""Any-of expected answers: a sample's ``expected_any`` field.

Some questions have several right answers (Inspect's list targets, SQuAD's ``answers.text``,
promptfoo's ``contains-any``). A sample lists them as ``expected_any``, a list of strings; it
is kept in the sample's metadata as ``metadata.expected_any``, so it travels wherever the
dataset's metadata does (saved runs, rescoring, exports). When a sample gives
``expected_any`` and no ``expected_output``, the first answer is its expected output.

The lexical metrics (exact-match, contains, rouge-l) score such a row as the best over its
acceptable answers: ``expected_output`` when it is a string, and every ``expected_any`` item.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["EXPECTED_ANY", "with_expected_any"]

EXPECTED_ANY: Final = "expected_any"


class _BadAnswers(ValueError):  # noqa: N818 - never escapes: callers raise DatasetError
    """An ``expected_any`` value of the wrong shape; the caller adds the file, sample and field."""


def _kind(value: object) -> str:
    if value is None:
        return "null"
    return {"dict": "map", "str": "string"}.get(type(value).__name__, type(value).__name__)


def _answers(value: object, *, from_text: bool) -> list[str]:
    if from_text and isinstance(value, str):  # a CSV cell: JSON list text
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise _BadAnswers(f"is not a JSON list of strings: {exc}") from exc
    if not isinstance(value, list | tuple):
        raise _BadAnswers(f"must be a list of strings (the acceptable answers); got {_kind(value)}")
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise _BadAnswers(f"item {i} must be a string; got {_kind(item)}")
    return list(value)


def with_expected_any(
    record: Mapping[Any, Any], metadata: dict[str, Any], *, from_text: bool = False
) -> tuple[list[str] | None, dict[str, Any]]:
    """The sample's acceptable answers (``None`` when it lists none) and its metadata with
    them as ``expected_any``.

    The answers come from the record's ``expected_any`` field or from
    ``metadata.expected_any``; ``from_text`` also reads JSON list text (a CSV cell, where an
    empty cell is absent).

    Raises:
        _BadAnswers: not a list of strings, or the field and the metadata disagree.

    Examples:
        >>> with_expected_any({"expected_any": ["Paris", "paris"]}, {})
        (['Paris', 'paris'], {'expected_any': ['Paris', 'paris']})
    """
    given = record.get(EXPECTED_ANY)
    if from_text and isinstance(given, str) and not given.strip():
        given = None
    if given is None:
        if EXPECTED_ANY not in metadata:
            return None, metadata
        try:
            return _answers(metadata[EXPECTED_ANY], from_text=False), metadata
        except _BadAnswers as exc:
            raise _BadAnswers(f"(metadata.{EXPECTED_ANY}) {exc}") from exc
    answers = _answers(given, from_text=from_text)
    if EXPECTED_ANY in metadata and metadata[EXPECTED_ANY] != answers:
        raise _BadAnswers(f"disagrees with metadata.{EXPECTED_ANY}; give the answers once")
    return answers, {**metadata, EXPECTED_ANY: answers}
