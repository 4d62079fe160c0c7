"""What evalframe says on stderr while it works: progress of long work, one-time notices.

Long work (system-under-test calls, embedding batches, judge calls, scoring, rescoring
chunks, Dask tasks, writing a report) runs inside ``track(what, total)``, which returns the
function to call as units complete. On a terminal (stderr a TTY, outside CI) and in
Jupyter, a progress display shows each piece of work still running with its count, rate
and time left; it appears only once the work has run for a second, so short work shows
nothing, and it is erased when the work ends. Nothing is shown on a non-terminal, or when
quiet (``--quiet`` on the command line, ``set_quiet(True)`` from Python). Everything goes
to stderr: stdout carries results only.

``progress=`` on ``ef.evaluate`` decides for the whole evaluation (``showing``).

Examples:
    >>> with track("scoring", total=3, unit="metrics", show=False) as advance:
    ...     for _ in range(3):
    ...         advance(1)
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol

__all__ = ["Advance", "note", "quiet", "set_quiet", "showing", "track", "visible"]

DELAY = 1.0
"""Seconds work runs before its progress appears."""

_QUIET = [False]
_SHOW: ContextVar[bool | None] = ContextVar("evalframe_progress", default=None)
_LOCK = threading.RLock()  # the display's state
_CREATING = threading.Lock()  # which display is current


class Advance(Protocol):
    """``advance(n)``: ``n`` more units done (one by default)."""

    def __call__(self, n: int = 1) -> None: ...


def quiet() -> bool:
    """Whether nothing but results and errors may be written (``--quiet``)."""
    return _QUIET[0]


def set_quiet(value: bool) -> None:
    """Show no progress and no notices (``True``), or show them where they can be seen."""
    _QUIET[0] = value


@contextmanager
def showing(show: bool | None) -> Iterator[None]:
    """Show (``True``) or hide (``False``) every progress display opened in the block;
    ``None`` leaves it to where stderr goes."""
    token = _SHOW.set(show)
    try:
        yield
    finally:
        _SHOW.reset(token)


def _jupyter() -> bool:
    """In a Jupyter kernel that can show a live display (rich draws it with ipywidgets)."""
    shell = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    if type(shell).__name__ != "ZMQInteractiveShell":
        return False
    import importlib.util

    return importlib.util.find_spec("ipywidgets") is not None


def visible(show: bool | None = None) -> bool:
    """Whether a progress display would be shown (``show`` overrides the default)."""
    if show is None:
        show = _SHOW.get()
    if quiet() or show is False:
        return False
    if show:
        return True
    terminal = sys.stderr.isatty() and not os.environ.get("CI")
    return terminal or _jupyter()


class _Task:
    def __init__(self, what: str, total: int | None, unit: str) -> None:
        self.what = what
        self.total = total
        self.unit = unit
        self.done = 0
        self.shown: Any = None  # its rich task id once the display shows


class _Display:
    """One live display for every piece of work running at once. Rich is imported, and the
    display drawn, only once some work has run for ``DELAY`` seconds."""

    def __init__(self) -> None:
        self.tasks: list[_Task] = []
        self.progress: Any = None
        self.timer = threading.Timer(DELAY, self._start)
        self.timer.daemon = True
        self.timer.start()

    def _start(self) -> None:
        with _LOCK:
            if not self.tasks or self.progress is not None:
                return
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
            )

            self.progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[rate]}"),
                TimeRemainingColumn(),
                console=Console(stderr=True),
                transient=True,
                redirect_stdout=False,  # stdout carries results, untouched
                redirect_stderr=False,
            )
            for task in self.tasks:
                self._show(task)
            self.progress.start()

    def _show(self, task: _Task) -> None:
        task.shown = self.progress.add_task(
            task.what, total=task.total, completed=task.done, rate=""
        )

    def add(self, task: _Task) -> None:
        with _LOCK:
            self.tasks.append(task)
            if self.progress is not None:
                self._show(task)

    def advance(self, task: _Task, n: int) -> None:
        with _LOCK:
            task.done += n
            if task.shown is None:
                return
            self.progress.update(task.shown, completed=task.done)
            speed = next(t.speed for t in self.progress.tasks if t.id == task.shown)
            if speed:
                self.progress.update(task.shown, rate=f"{speed:,.0f} {task.unit}/s")

    def remove(self, task: _Task) -> bool:
        """Forget ``task``; whether the display is now done with."""
        with _LOCK:
            self.tasks.remove(task)
            if task.shown is not None:
                self.progress.remove_task(task.shown)
            if self.tasks:
                return False
            self.timer.cancel()
            if self.progress is not None:
                self.progress.stop()
            return True


_CURRENT: list[_Display] = []


@contextmanager
def track(
    what: str, total: int | None = None, *, unit: str = "rows", show: bool | None = None
) -> Iterator[Advance]:
    """Show the progress of ``what`` (``total`` units, or unknown) while the block runs.

    Yields ``advance(n)``, safe to call from any thread. ``show`` overrides where it shows.
    """
    if not visible(show):
        yield _nothing
        return
    task = _Task(what, total, unit)
    with _CREATING:
        if not _CURRENT:
            _CURRENT.append(_Display())
        display = _CURRENT[0]
        display.add(task)

    def advance(n: int = 1) -> None:
        display.advance(task, n)

    try:
        yield advance
    finally:
        with _CREATING:
            if display.remove(task):
                _CURRENT.clear()


def _nothing(n: int = 1) -> None:
    return None


def note(text: str) -> None:
    """Write a line on stderr (unless quiet), above a progress display if one is showing."""
    if quiet():
        return
    with _LOCK:
        display = _CURRENT[0] if _CURRENT else None
        if display is not None and display.progress is not None:
            display.progress.console.print(text, markup=False, highlight=False)
            return
    sys.stderr.write(text + "\n")
    sys.stderr.flush()
