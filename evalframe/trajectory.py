"""``ef.trajectory``: record an agent's trajectory from inside the system under test.

``record`` appends tool calls and sets the trajectory's fields for the sample being run by
``evaluate(system=...)``; the dtypes of the ``trajectory`` and ``turns`` columns are
``TRAJECTORY`` and ``TURNS``. See ``docs/metrics/agents.md``.
"""

from __future__ import annotations

from evalframe.core._trajectory import TOOL_CALL, TRAJECTORY, record
from evalframe.core._turns import TURN, TURNS

__all__ = ["TOOL_CALL", "TRAJECTORY", "TURN", "TURNS", "record"]
