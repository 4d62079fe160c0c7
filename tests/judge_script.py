"""Scripted judge replies for tests: route each prompt the stub receives to a function of
its placeholder values.

``script({CLAIMS: fn, GROUNDING: fn2})`` gives a ``verdict`` for ``StubOpenAI``: the prompt
is matched against each template (literal pieces exact, placeholders anything), ``fn``
receives the placeholder values as a dict and returns the reply (a dict or list is sent as
JSON, a string as it is). A prompt no route matches fails the test loudly.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from evalframe.metrics._judge_engine import Prompt

__all__ = ["fields", "script"]

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


def fields(text: str, prompt: Prompt) -> dict[str, str] | None:
    """The placeholder values ``text`` was rendered with from ``prompt``, or ``None``."""
    m = _pattern(prompt.template).fullmatch(text)
    return m.groupdict() if m else None


def script(routes: Mapping[Prompt, Callable[[dict[str, str]], Any]]) -> Callable[[str], str]:
    """A stub ``verdict``: the reply of the route whose template the prompt matches."""
    compiled = [(_pattern(p.template), fn) for p, fn in routes.items()]

    def verdict(text: str) -> str:
        for pattern, fn in compiled:
            m = pattern.fullmatch(text)
            if m:
                out = fn(m.groupdict())
                return out if isinstance(out, str) else json.dumps(out)
        raise AssertionError(f"no scripted reply for prompt:\n{text[:300]}")

    return verdict
