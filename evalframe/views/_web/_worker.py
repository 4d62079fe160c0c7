"""The viewer's one door to the store: a single thread that holds a read-only connection
while requests come, and lets go when they stop.

DuckDB lets one process write a file, and while any process holds it open no other process
can write it. Opening the file costs tens of milliseconds on a large store, so reopening it
for every request would cost more than most queries; holding it open for good would lock
out a concurrent ``evalframe run --store`` until it gave up. So every store operation runs
on one thread (in order, one at a time), which keeps a sandboxed read-only connection open
between requests and closes it after ``idle`` seconds without one, and also once it has
been open for ``hold`` seconds, pausing ``grace`` seconds before the next open so that a
waiting writer (which retries with backoff) gets its turn. Operations that need their own
connection (loading a whole run, writing labels) close the held one first.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Final, TypeVar

if TYPE_CHECKING:
    import duckdb

    from evalframe.store import Store
    from evalframe.store._read import Reading

__all__ = ["StoreWorker"]

T = TypeVar("T")

IDLE: Final = 1.0
HOLD: Final = 5.0
GRACE: Final = 0.6


class StoreWorker:
    """Runs store operations on one thread; see the module docstring.

    Args:
        store: the store (its file is opened and closed here).
        idle: seconds without a request after which the connection closes.
        hold: seconds after which an open connection is closed between two operations.
        grace: seconds to wait before reopening after such a close.
    """

    def __init__(
        self, store: Store, *, idle: float = IDLE, hold: float = HOLD, grace: float = GRACE
    ) -> None:
        self.store = store
        self.idle, self.hold, self.grace = idle, hold, grace
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="evalframe-view-store")
        self._held: AbstractContextManager[duckdb.DuckDBPyConnection] | None = None
        self._reading: Reading | None = None
        self._opened = 0.0
        self._last = 0.0
        self._closed_for_writers = 0.0
        self._timer: asyncio.TimerHandle | None = None

    # --- on the worker thread ----------------------------------------------------------------

    def _open(self) -> Reading:
        from evalframe.store._read import Reading

        if self._reading is None:
            wait = self._closed_for_writers + self.grace - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            held = self.store._connector.connect(write=False, sandbox=True)
            con = held.__enter__()
            self._held, self._reading = held, Reading(con)
            self._opened = time.monotonic()
        return self._reading

    def _close(self) -> None:
        held, self._held, self._reading = self._held, None, None
        if held is not None:
            held.__exit__(None, None, None)

    def _run_read(self, fn: Callable[[Reading], T]) -> T:
        try:
            return fn(self._open())
        finally:
            self._last = time.monotonic()
            if self._reading is not None and self._last - self._opened >= self.hold:
                self._close()
                self._closed_for_writers = self._last

    def _run_store(self, fn: Callable[[Store], T]) -> T:
        self._close()
        try:
            return fn(self.store)
        finally:
            self._last = time.monotonic()

    def _close_if_idle(self) -> None:
        if self._reading is not None and time.monotonic() - self._last >= self.idle:
            self._close()

    # --- from the event loop -----------------------------------------------------------------

    async def read(self, fn: Callable[[Reading], T]) -> T:
        """``fn(reading)`` on the worker thread, with the held read-only connection."""
        return await self._submit(self._run_read, fn)

    async def call(self, fn: Callable[[Store], T]) -> T:
        """``fn(store)`` on the worker thread, the held connection closed first (for
        operations that open their own: loading runs, writing labels)."""
        return await self._submit(self._run_store, fn)

    async def _submit(self, runner: Callable[[Callable[..., T]], T], fn: Callable[..., T]) -> T:
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._pool, runner, fn)
        finally:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = loop.call_later(self.idle, self._idle_check)

    def _idle_check(self) -> None:
        self._timer = None
        self._pool.submit(self._close_if_idle)

    def run_sync(self, fn: Callable[[Reading], Any]) -> Any:
        """``fn(reading)`` on the worker thread, waited for (startup checks)."""
        return self._pool.submit(self._run_read, fn).result()

    def shutdown(self) -> None:
        """Close the connection and stop the thread (waits for the operation under way)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._pool.submit(self._close).result()
        self._pool.shutdown(wait=True)
