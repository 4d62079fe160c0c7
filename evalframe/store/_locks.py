"""Locks in the store: one process at a time works on a checkpointed run or an eval set.

A lock is a row of ``locks``, taken and released in the store's own transactions (DuckDB
admits one writer at a time, so two processes can never both take it). It names its holder:
process id, host, the process's start (so that a reused process id is not mistaken for the
holder) and since when. A lock whose holder is gone (killed with SIGKILL, the machine
restarted) is detected on the holder's host and taken over; one held from another host is
refused, naming it, since its process cannot be checked from here (``evalframe store unlock``
removes it once you know that process is gone).

Every checkpoint a holder writes first checks, in the same transaction, that the lock is
still its own: a process that lost its lock stops instead of writing next to the new holder.
"""

from __future__ import annotations

import datetime as dt
import os
import socket
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import duckdb

from evalframe.core._errors import StoreError
from evalframe.store._connect import execute
from evalframe.store._write import transaction

if TYPE_CHECKING:
    from evalframe.store._store import Store

__all__ = ["Lock", "acquire", "holds", "release", "unlock"]

_PROC: Final = Path("/proc")


@dataclass(frozen=True)
class Lock:
    """A lock this process holds: its name (``run:<id>``, ``eval_set:<name>``) and token."""

    name: str
    token: str


def _process(pid: int) -> str | None:
    """What identifies process ``pid`` beyond its id: the boot and its start time (Linux);
    '' where the system does not tell; None when no such process runs (a zombie counts as
    gone)."""
    stat = _PROC / str(pid) / "stat"
    try:
        fields = stat.read_text(encoding="ascii", errors="replace").rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return None
    except (OSError, IndexError):
        return "" if _exists(pid) else None
    if fields[0] in ("Z", "X"):  # exited, not yet reaped
        return None
    try:
        boot = (_PROC / "sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
    except OSError:
        boot = ""
    return f"{boot}:{fields[19]}"  # field 22 of /proc/PID/stat: start time, in clock ticks


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _alive(pid: int, process: str) -> bool:
    """Whether the process that took a lock (on this host) still runs."""
    if not _PROC.is_dir():
        return _exists(pid)
    now = _process(pid)
    return now is not None and (not process or not now or now == process)


def _since(when: dt.datetime) -> str:
    return when.strftime("%Y-%m-%d %H:%M:%S UTC")


def acquire(store: Store, name: str, purpose: str, what: str) -> Lock:
    """Take the lock ``name`` for ``purpose`` (what the holder is doing, shown to others),
    taking over one whose holder on this host no longer runs.

    Args:
        what: the thing locked, for messages ("run 1f3c...").

    Raises:
        StoreError: another live process holds it, or a process on another host does (the
            message names it: pid, host, since when and what it does).
    """
    pid, host = os.getpid(), socket.gethostname()
    lock = Lock(name, uuid.uuid4().hex)
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    with store._connector.connect(write=True) as con, transaction(con):
        rows = execute(
            con, "SELECT pid, host, process, purpose, acquired_at FROM locks WHERE name = ?", [name]
        )
        if rows:
            held_pid, held_host, process, held_for, since = rows[0]
            holder = f"process {held_pid} on host {held_host}, since {_since(since)} ({held_for})"
            if held_host != host:
                raise StoreError(
                    f"{what[0].upper()}{what[1:]} is held by {holder}; one process at a time "
                    "works on it. That process runs on another host, so evalframe cannot tell "
                    "whether it is still running: wait for it, or once you know it is gone, "
                    f"remove its lock with `evalframe store unlock {name} --store "
                    f"{store.path}`."
                )
            if _alive(int(held_pid), str(process)):
                raise StoreError(
                    f"{what[0].upper()}{what[1:]} is held by {holder}; one process at a time "
                    "works on it, so that nothing is done or recorded twice. Wait for that "
                    f"process to finish, or stop it (its lock is then taken over)."
                )
            print(
                f"{what}: took over the lock of {holder}, which no longer runs.",
                file=sys.stderr,
            )
            execute(con, "DELETE FROM locks WHERE name = ?", [name])
        execute(
            con,
            "INSERT INTO locks VALUES (?, ?, ?, ?, ?, ?, ?)",
            [name, pid, host, _process(pid) or "", lock.token, purpose, now],
        )
    return lock


def holds(con: duckdb.DuckDBPyConnection, lock: Lock, what: str) -> None:
    """Check, inside a transaction about to write for the lock, that it is still held.

    Raises:
        StoreError: the lock was removed or taken over (nothing more is written).
    """
    rows = execute(con, "SELECT token, pid, host FROM locks WHERE name = ?", [lock.name])
    if not rows or rows[0][0] != lock.token:
        holder = f" by process {rows[0][1]} on host {rows[0][2]}" if rows else ""
        raise StoreError(
            f"{what[0].upper()}{what[1:]}: this process no longer holds its lock (it was "
            f"removed, or taken over{holder}); it stops here, writing nothing more."
        )


def release(store: Store, lock: Lock) -> None:
    """Release a lock this process holds (a lock taken over since is left alone)."""
    with store._connector.connect(write=True) as con:
        execute(con, "DELETE FROM locks WHERE name = ? AND token = ?", [lock.name, lock.token])


def unlock(store: Store, name: str) -> dict[str, Any] | None:
    """Remove the lock ``name`` whoever holds it; returns what it held (None: no lock)."""
    with store._connector.connect(write=True) as con, transaction(con):
        rows = execute(
            con, "SELECT pid, host, purpose, acquired_at FROM locks WHERE name = ?", [name]
        )
        execute(con, "DELETE FROM locks WHERE name = ?", [name])
    if not rows:
        return None
    pid, host, purpose, since = rows[0]
    return {"pid": pid, "host": host, "purpose": purpose, "since": _since(since)}
