"""A run's rate limit: at most N call starts in any sliding window of W seconds.

One ``RateLimit`` is shared by every call of a run: the system under test's threads
(``RateLimit.wait``) and the providers' asynchronous HTTP requests (``RateLimit.wait_async``,
once per attempt, retries included). Each caller reserves the earliest start the window
allows, in the order callers arrive, then sleeps until it; so no two callers race for one
slot, and a burst waits in line instead of spinning. The clock is monotonic.

Examples:
    >>> now = [0.0]
    >>> limit = RateLimit(2, 10.0, clock=lambda: now[0], sleep=lambda s: None)
    >>> [limit.reserve() for _ in range(5)]
    [0.0, 0.0, 10.0, 10.0, 20.0]
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

from evalframe.core._limits import checked

__all__ = ["RateLimit"]


class RateLimit:
    """At most ``limit`` call starts in any window of ``window_seconds`` seconds.

    Args:
        limit: calls allowed per window, 1 to 1,000,000.
        window_seconds: the window's length in seconds, more than 0 and at most a day
            (default 60).
        clock: the monotonic clock (for tests).
        sleep: how a thread waits (for tests).

    Raises:
        ValueError: a limit or window outside its range (``core._limits.LIMITS``), naming
            ``rate_limit`` or ``rate_window_seconds``.
    """

    def __init__(
        self,
        limit: int,
        window_seconds: float = 60.0,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        checked(limit, "rate_limit")
        checked(window_seconds, "rate_window_seconds")
        self.limit = limit
        self.window_seconds = float(window_seconds)
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._starts: deque[float] = deque(maxlen=limit)  # the latest `limit` reserved starts

    def __repr__(self) -> str:
        return f"RateLimit({self.limit}, window_seconds={self.window_seconds:g})"

    def reserve(self) -> float:
        """Reserve the earliest start the window allows; returns that time on the clock.

        The k-th reservation starts no earlier than the (k - limit)-th plus the window, so
        any window holds at most ``limit`` starts.
        """
        with self._lock:
            start = self._clock()
            if len(self._starts) == self.limit:
                start = max(start, self._starts[0] + self.window_seconds)
            self._starts.append(start)
            return start

    def wait(self) -> None:
        """Block the calling thread until it may start a call."""
        delay = self.reserve() - self._clock()
        if delay > 0:
            self._sleep(delay)

    async def wait_async(self) -> None:
        """Wait, without blocking the event loop, until the caller may start a call."""
        import asyncio  # loaded with the first provider call, not at ``import evalframe``

        delay = self.reserve() - self._clock()
        if delay > 0:
            await asyncio.sleep(delay)
