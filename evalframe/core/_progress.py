"""What evalframe says on stderr while it works: progress of long work, one-time notices.

``quiet()`` is the switch (``--quiet`` on the command line, ``set_quiet`` from Python).
"""

from __future__ import annotations

import threading

__all__ = ["quiet", "set_quiet"]

_STATE = threading.local()
_QUIET = [False]


def quiet() -> bool:
    """Whether nothing but results and errors may be written (``--quiet``)."""
    return _QUIET[0]


def set_quiet(value: bool) -> None:
    _QUIET[0] = value
