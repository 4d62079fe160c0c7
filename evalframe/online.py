"""Production capture and monitoring: capture in the serving path, score later, watch for
drift, and promote failures into a dataset.

Examples:
    >>> import evalframe as ef
    >>> ef.online.capture("faq", "req-1", {"question": "hi"}, "hello")  # off until configured
    False
"""

from __future__ import annotations

from evalframe.core._online import DEFAULTS, OnlineStatus
from evalframe.engine._online import (
    capture,
    close,
    configure,
    flush,
    promote,
    stats,
    status,
    trend,
)
from evalframe.engine._online import score_pending as score

__all__ = [
    "DEFAULTS",
    "OnlineStatus",
    "capture",
    "close",
    "configure",
    "flush",
    "promote",
    "score",
    "stats",
    "status",
    "trend",
]
