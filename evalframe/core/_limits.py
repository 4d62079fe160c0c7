"""The range of every number a user can give evalframe, in one table.

A number reaches evalframe four ways: a command-line option (``--rate-limit``), a profile key
(``rate_limit``), an environment variable (``EVALFRAME_RETRIES``) and a Python argument
(``ef.evaluate(concurrency=...)``). Each is checked against the one entry of ``LIMITS`` named
for it, so a value past the bound (huge, past 2**63, negative, NaN, infinite, not a number) is
an error naming where it came from and the range, never an overflow deep in a library, a
silent default or a thread pool of 10**23 workers.

Examples:
    >>> checked(4, "concurrency")
    4
    >>> checked(10**9, "concurrency")
    Traceback (most recent call last):
    ...
    ValueError: concurrency must be a whole number from 1 to 1,000; got 1000000000.
    >>> parsed(" 2.5 ", "timeout", "EVALFRAME_TIMEOUT")
    2.5
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["LIMITS", "MAX_COUNT", "MAX_REPETITIONS", "Limit", "checked", "parsed"]

MAX_COUNT: Final = 1_000_000_000
"""The largest count (rows, runs, captures, a batch) no entry of ``LIMITS`` bounds lower."""

# Work is rows x repetitions x metrics, so the count is bounded up front. The report may advise
# up to 769 repetitions (a 5-point resolution at a 50% pass rate); the limit stays above that.
MAX_REPETITIONS: Final = 1000

_DAY: Final = 86_400.0


@dataclass(frozen=True, slots=True)
class Limit:
    """The range of one number: ``low`` to ``high``; with ``above``, more than ``low``.

    Attributes:
        low, high: the bounds (``high`` is always finite).
        integer: whether the number is a whole number (a count).
        above: ``low`` itself is refused (a number of seconds must be more than 0).
        unit: what the number counts, for messages (``"seconds"``, ``"USD"``).
    """

    low: float
    high: float
    integer: bool = True
    above: bool = False
    unit: str = ""

    def describe(self) -> str:
        """The range in words, as messages and docs give it.

        Examples:
            >>> LIMITS["timeout"].describe()
            'a number of seconds more than 0, at most 86,400'
            >>> LIMITS["retries"].describe()
            'a whole number from 0 to 100'
        """
        kind = "a whole number" if self.integer else "a number"
        if self.unit:
            kind += f" of {self.unit}"
        if self.above:
            return f"{kind} more than {_show(self.low)}, at most {_show(self.high)}"
        return f"{kind} from {_show(self.low)} to {_show(self.high)}"

    def admits(self, value: float) -> bool:
        """Whether ``value`` (an int or float, however large) lies in the range; NaN and
        the infinities never do, nor a fraction where a whole number is due."""
        if isinstance(value, float) and not (
            math.isfinite(value) and (value.is_integer() or not self.integer)
        ):
            return False
        return (value > self.low if self.above else value >= self.low) and value <= self.high


def _show(x: float) -> str:
    return f"{int(x):,}" if x == int(x) else f"{x:g}"


LIMITS: Final[dict[str, Limit]] = {
    # calls and requests in flight at once
    "concurrency": Limit(1, 1_000),
    "embeddings_concurrency": Limit(1, 1_000),
    "judge_concurrency": Limit(1, 1_000),
    # provider calls
    "retries": Limit(0, 100),
    "rate_limit": Limit(1, 1_000_000),
    "rate_window_seconds": Limit(0.0, _DAY, integer=False, above=True, unit="seconds"),
    "timeout": Limit(0.0, _DAY, integer=False, above=True, unit="seconds"),
    "deadline": Limit(0.0, 30 * _DAY, integer=False, above=True, unit="seconds"),
    "budget_usd": Limit(0.0, 1e9, integer=False, above=True, unit="USD"),
    # a run's size and checkpoints
    "repetitions": Limit(1, MAX_REPETITIONS),
    "checkpoint_every": Limit(1, MAX_COUNT),
    "batch_size": Limit(1, MAX_COUNT),
    # statistics
    "bootstrap": Limit(0, 1_000_000),
    "seed": Limit(0, 2**32 - 1),
    # history and online capture
    "since": Limit(1, 36_500),
    "sampling_rate": Limit(0.0, 1.0, integer=False),
    "manifest_retain": Limit(1, 1_000_000),
    # calibration and briefs
    "suggest": Limit(1, 1_000_000),
    "budget": Limit(2_000, 100_000_000),
    "max_score": Limit(0.0, 1.0, integer=False),
}
"""Each number's range by name: the Python argument and profile key of that name, the
command-line option with ``-`` for ``_`` (``--rate-limit``) and the environment variable
that sets it (``EVALFRAME_RETRIES``). A command-line count that no entry names stops at
``MAX_COUNT``; any other number there is finite."""


def checked(value: Any, name: str, source: str | None = None) -> Any:
    """``value`` if it lies in ``LIMITS[name]``: an int for a count, else an int or float.

    Args:
        value: the number given.
        name: its entry in ``LIMITS``.
        source: what to name in the error (default: ``name``, the argument).

    Raises:
        ValueError: not a number, or outside the range; the message names ``source``, the
            range and the value.
    """
    limit = LIMITS[name]
    kind = int if limit.integer else int | float
    if isinstance(value, bool) or not isinstance(value, kind) or not limit.admits(value):
        raise ValueError(f"{source or name} must be {limit.describe()}; got {value!r}.")
    return value


def parsed(text: str, name: str, source: str) -> Any:
    """The number written in ``text`` (an environment variable's value), checked against
    ``LIMITS[name]``; whole-number texts such as ``"3"`` or ``"3.0"`` for a count.

    Raises:
        ValueError: not a number, or outside the range, naming ``source``.

    Examples:
        >>> parsed("8", "judge_concurrency", "EVALFRAME_JUDGE_CONCURRENCY")
        8
        >>> parsed("1e23", "judge_concurrency", "EVALFRAME_JUDGE_CONCURRENCY")
        Traceback (most recent call last):
        ...
        ValueError: EVALFRAME_JUDGE_CONCURRENCY must be a whole number from 1 to 1,000; got '1e23'.
    """
    limit = LIMITS[name]
    try:
        value = float(text.strip())
    except (AttributeError, ValueError):
        value = math.nan
    if not limit.admits(value):
        raise ValueError(f"{source} must be {limit.describe()}; got {text!r}.")
    return int(value) if limit.integer else value
