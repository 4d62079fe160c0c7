"""A word diff of two texts as HTML, for views that must render without a script.

The comparison page is also a Jupyter repr, where scripts may not run, and it shows a bounded
number of cases, so its diffs are computed here, once per distinct pair of texts. The
explorer diffs in the page instead (one row at a time, for any of its executions).
"""

from __future__ import annotations

import difflib
import re

from evalframe.views._html._parts import escape

__all__ = ["word_diff"]

_TOKEN = re.compile(r"\s+|\w+|[^\s\w]")


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def word_diff(before: str | None, after: str | None) -> tuple[str, str]:
    """Both texts as escaped HTML: words only in ``before`` in ``<del>``, only in ``after``
    in ``<ins>`` (whitespace is never marked).

    Examples:
        >>> word_diff("within 30 days", "within a month")
        ('within <del>30</del> <del>days</del>', 'within <ins>a</ins> <ins>month</ins>')
    """
    a, b = _tokens(before or ""), _tokens(after or "")
    left: list[str] = []
    right: list[str] = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            text = escape("".join(a[i1:i2]))
            left.append(text)
            right.append(text)
            continue
        left += [_mark("del", t) for t in a[i1:i2]]
        right += [_mark("ins", t) for t in b[j1:j2]]
    return "".join(left), "".join(right)


def _mark(tag: str, token: str) -> str:
    return escape(token) if token.isspace() else f"<{tag}>{escape(token)}</{tag}>"
