"""Scripted judge replies for tests: route each prompt the stub receives to a function of
its placeholder values.

``script({CLAIMS: fn, GROUNDING: fn2})`` gives a ``verdict`` for ``StubOpenAI``: the prompt
is matched against each prompt's text (literal pieces exact, placeholders anything), ``fn``
receives the placeholder values as a dict and returns the reply (a dict or list is sent as
JSON, a string as it is). A prompt no route matches fails the test loudly.

A value fenced as one JSON string is given decoded (``"a\\nb"`` -> ``a\nb``); a block of
numbered lines as written, which ``items`` reads into (label, value) pairs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from evalframe.metrics._judge_engine import Prompt

__all__ = ["actual_of", "fields", "items", "script"]

_PLACEHOLDER = re.compile(r"\{([a-z][a-z0-9_]*)\}")


def _pattern(template: str) -> re.Pattern[str]:
    parts: list[str] = []
    pos = 0
    seen: set[str] = set()
    for m in _PLACEHOLDER.finditer(template):
        parts.append(re.escape(template[pos : m.start()]))
        name = m.group(1)
        parts.append(f"(?P={name})" if name in seen else f"(?P<{name}>.*?)")
        seen.add(name)
        pos = m.end()
    parts.append(re.escape(template[pos:]))
    return re.compile("".join(parts), flags=re.DOTALL)


_ITEM = re.compile(r"([AR]?\d+)\. (.*)")


def _decoded(raw: str) -> str:
    """A value fenced as one JSON string, decoded; anything else (a block) as it is."""
    if raw.startswith('"'):
        try:
            value, end = json.JSONDecoder().raw_decode(raw)
        except ValueError:
            return raw
        if end == len(raw) and isinstance(value, str):
            return value
    return raw


def items(block: str) -> list[tuple[str, Any]]:
    """``[(label, value)]`` of a block of numbered lines (``1. "x"``, ``A2. {...}``)."""
    out = []
    for line in block.splitlines():
        m = _ITEM.fullmatch(line)
        if m:
            out.append((m.group(1), json.loads(m.group(2))))
    return out


def fields(text: str, prompt: Prompt) -> dict[str, str] | None:
    """The placeholder values ``text`` was rendered with from ``prompt``, or ``None``."""
    m = _pattern(prompt.text).fullmatch(text)
    return {k: _decoded(v) for k, v in m.groupdict().items()} if m else None


def script(routes: Mapping[Prompt, Callable[[dict[str, str]], Any]]) -> Callable[[str], str]:
    """A stub ``verdict``: the reply of the route whose text the prompt matches."""
    compiled = [(_pattern(p.text), fn) for p, fn in routes.items()]

    def verdict(text: str) -> str:
        for pattern, fn in compiled:
            m = pattern.fullmatch(text)
            if m:
                out = fn({k: _decoded(v) for k, v in m.groupdict().items()})
                return out if isinstance(out, str) else json.dumps(out)
        raise AssertionError(f"no scripted reply for prompt:\n{text[:300]}")

    return verdict


def actual_of(prompt: str) -> str:
    """The answer an llm-as-judge or refusal-quality prompt judges (its ``ACTUAL:`` value)."""
    return str(json.JSONDecoder().raw_decode(prompt.rsplit("\nACTUAL: ", 1)[1])[0])
