"""The judge prompts' texts: package data files, one per prompt, read by one function.

Each shipped prompt is the UTF-8 file ``evalframe/metrics/prompts/<id>.v<N>.txt``: the file
name holds the prompt's id and version, the file its text (its final newline is not part of
the text). Only the current version of a prompt is shipped; a change of text is a new file
name, so replies cached for an older text are never reused for the new one.
"""

from __future__ import annotations

import functools
import re
from importlib.resources import files
from typing import Final, NamedTuple

from evalframe.core._errors import MetricError

__all__ = ["PromptText", "prompt_text"]

_PACKAGE: Final = "evalframe.metrics"
_FOLDER: Final = "prompts"
_NAME: Final = re.compile(r"(?P<id>[a-z][a-z0-9.\-]*)\.v(?P<version>[1-9][0-9]*)\.txt")


class PromptText(NamedTuple):
    """A shipped prompt's text and version."""

    text: str
    version: int


@functools.cache
def _index() -> dict[str, tuple[int, str]]:
    """Every shipped prompt's id -> (version, file name)."""
    found: dict[str, tuple[int, str]] = {}
    for entry in files(_PACKAGE).joinpath(_FOLDER).iterdir():
        match = _NAME.fullmatch(entry.name)
        if match is None:
            raise MetricError(
                f"Prompt file {_FOLDER}/{entry.name} is not named <id>.v<version>.txt."
            )
        id_, version = match["id"], int(match["version"])
        if id_ in found:
            raise MetricError(f"Prompt {id_!r} is shipped in two versions; keep only the current.")
        found[id_] = (version, entry.name)
    return found


@functools.cache
def prompt_text(id: str) -> PromptText:
    """The text and version of the shipped prompt ``id`` (read once per process).

    Raises:
        MetricError: no prompt file has this id.

    Examples:
        >>> found = prompt_text("rag.claims")
        >>> found.version >= 1, "{text}" in found.text
        (True, True)
    """
    index = _index()
    if id not in index:
        raise MetricError(f"No prompt file for {id!r}; shipped: {sorted(index)}.")
    version, name = index[id]
    text = files(_PACKAGE).joinpath(_FOLDER).joinpath(name).read_text(encoding="utf-8")
    return PromptText(text.removesuffix("\n"), version)
