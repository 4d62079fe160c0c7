"""Opening DuckDB files the way DuckDB 2.0 needs: short-lived, retried, errors wrapped.

DuckDB 2.0 lets one process hold a file read-write, and while it does no other process can
open it at all, not even read-only. So writers open, write one transaction and close;
readers open read-only (those running users' SQL without access to any other file or to
settings: see ``_sandbox``) and close; and both retry with exponential backoff while another
process holds the lock, up to a timeout, after which ``StoreBusyError`` (retryable) is
raised. A connection is never shared between threads: within a process, operations on one
file take turns (a lock per file), and in-memory stores hand each operation its own cursor
under a lock.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, Final

import duckdb
import polars as pl

from evalframe.core._errors import StoreBusyError, StoreError

__all__ = [
    "FILES_SUFFIX",
    "Connector",
    "StoreBusyError",
    "execute",
    "fetch",
    "files_root",
    "query",
    "store_error",
]

MEMORY: Final = ":memory:"
FILES_SUFFIX: Final = ".runs"
_LOCK_MARKERS: Final = ("Could not set lock", "Conflicting lock")
_FILE_LOCKS: dict[str, threading.RLock] = {}
_FILE_LOCKS_GUARD = threading.Lock()


def _file_lock(path: str) -> threading.RLock:
    """One lock per file and process: DuckDB shares a database instance per file within a
    process, and opening or closing it from two threads at once races (attach conflicts,
    "different configuration" errors), so this process's operations on a file take turns."""
    key = os.path.realpath(path)
    with _FILE_LOCKS_GUARD:
        return _FILE_LOCKS.setdefault(key, threading.RLock())


def files_root(store_path: str) -> str:
    """The folder beside a store file whose Parquet files its views read (``<store>.runs``)."""
    return os.path.abspath(store_path) + FILES_SUFFIX


def store_error(message: str, statement: str | None, exc: BaseException) -> StoreError:
    """A ``StoreError`` naming what failed, the statement and the cause."""
    text = message
    if statement is not None:
        text += f"\nstatement: {' '.join(statement.split())[:500]}"
    text += f"\ncause: {type(exc).__name__}: {exc}"
    return StoreError(text, statement=statement, cause=exc)


def execute(
    con: duckdb.DuckDBPyConnection,
    statement: str,
    params: Sequence[Any] | dict[str, Any] | None = None,
) -> list[tuple[Any, ...]]:
    """Run one statement with bound parameters and drain its result."""
    try:
        if params is None:
            return con.execute(statement).fetchall()
        return con.execute(statement, params).fetchall()
    except duckdb.Error as exc:
        _abort(con)
        raise store_error("Store statement failed.", statement, exc) from exc


def query(
    con: duckdb.DuckDBPyConnection,
    statement: str,
    params: Sequence[Any] | dict[str, Any] | None = None,
) -> pl.DataFrame:
    """Run a query with bound parameters and return its whole result as a Polars frame."""
    try:
        rel = con.sql(statement, params=params) if params is not None else con.sql(statement)
        if rel is None:  # a statement that returns nothing (DDL, INSERT)
            return pl.DataFrame()
        frame: pl.DataFrame = rel.pl()
        return frame
    except duckdb.Error as exc:
        _abort(con)
        raise store_error("Store query failed.", statement, exc) from exc


def fetch(
    con: duckdb.DuckDBPyConnection,
    statement: str,
    params: Sequence[Any] | dict[str, Any] | None = None,
) -> Any:
    """The single value of a one-row, one-column query (None when it returns no row)."""
    rows = execute(con, statement, params)
    return rows[0][0] if rows else None


def _abort(con: duckdb.DuckDBPyConnection) -> None:
    """Release a half-read result so that the connection can be used (or closed) again."""
    with suppress(duckdb.Error):
        con.abort()


def _is_foreign_instance(exc: BaseException) -> bool:
    """This process holds the file already, opened with other settings."""
    return isinstance(exc, duckdb.ConnectionException) and "different configuration" in str(exc)


def _is_lock_conflict(exc: BaseException) -> bool:
    """Another process holds the file, or another thread of this one has it open differently.

    DuckDB shares one database instance per file within a process; while a thread holds it
    read-write, a read-only open from another thread fails (and the other way round) until
    that connection closes, which is the same wait as for another process.
    """
    if isinstance(exc, duckdb.IOException):
        return any(m in str(exc) for m in _LOCK_MARKERS)
    return isinstance(exc, duckdb.ConnectionException) and "different configuration" in str(exc)


def _seal(con: duckdb.DuckDBPyConnection, store_path: str) -> None:
    """Sandbox a connection for users' SQL (see ``_sandbox``) before it runs anything: the
    store's files folder stays readable and nothing else, and no setting can change that
    back. DuckDB takes ``allowed_directories`` only once the database has started and no
    longer once external access is off, hence the order."""
    folder = (files_root(store_path) + os.sep).replace("'", "''")
    con.execute(f"SET allowed_directories = ['{folder}']")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


class Connector:
    """Opens connections to one store: a file (per operation) or an in-memory database.

    Args:
        path: a DuckDB file, or ``":memory:"``.
        timeout: seconds to keep retrying while another process holds the file.
        threads: DuckDB worker threads (default: DuckDB's own, the number of cores).
    """

    def __init__(self, path: str | os.PathLike[str], *, timeout: float, threads: int | None):
        self.path = os.fspath(path)
        self.timeout = timeout
        self.threads = threads
        self._memory: duckdb.DuckDBPyConnection | None = None
        self._lock = threading.RLock()
        if self.path == MEMORY:
            self._memory = duckdb.connect(MEMORY, config=self._config())

    @property
    def in_memory(self) -> bool:
        return self._memory is not None

    @property
    def exists(self) -> bool:
        return self.in_memory or Path(self.path).exists()

    def _config(self, *, sandbox: bool = False) -> dict[str, Any]:
        config: dict[str, Any] = {"threads": self.threads} if self.threads else {}
        # Stated explicitly, so that DuckDB sees another configuration than a plain
        # connection's and will not hand the sandbox a database instance the caller opened.
        return config | {"lock_configuration": False} if sandbox else config

    @contextmanager
    def connect(self, *, write: bool, sandbox: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection for one operation, closed (or, in memory, released) afterwards.

        With ``sandbox`` (for users' SQL), a file store's read-only connection has no
        access to other files and a locked configuration. Only such reads take it: DuckDB
        opens a file once per process, with one configuration, so a plain read-only
        connection of the user's own would otherwise block every evalframe read.
        """
        if self._memory is not None:
            with self._lock:
                cursor = self._memory.cursor()
                try:
                    yield cursor
                finally:
                    cursor.close()
            return
        with _file_lock(self.path):
            con = self._open(write=write, sandbox=sandbox and not write)
            try:
                if sandbox and not write:
                    _seal(con, self.path)
                yield con
            finally:
                con.close()

    def _open(self, *, write: bool, sandbox: bool) -> duckdb.DuckDBPyConnection:
        if not write and not Path(self.path).exists():
            raise StoreError(
                f"No store at {self.path}: save a run to it first "
                "(ef.evaluate(..., store=path) or evalframe run --store PATH)."
            )
        deadline = time.monotonic() + self.timeout
        delay = 0.02
        while True:
            try:
                return duckdb.connect(
                    self.path, read_only=not write, config=self._config(sandbox=sandbox)
                )
            except duckdb.Error as exc:
                if sandbox and _is_foreign_instance(exc):
                    # evalframe's own operations on a file take turns (``_file_lock``), so
                    # the other configuration is a connection the caller opened.
                    raise StoreError(
                        f"The store {self.path} is open in this process through a connection "
                        "evalframe did not make (for example duckdb.connect(path, "
                        "read_only=True)), and DuckDB opens a file once per process with one "
                        "set of settings; a SQL query on the store needs its own (no access "
                        "to other files). Close that connection, or run the query through it."
                    ) from None
                if not _is_lock_conflict(exc):
                    raise store_error(
                        f"Could not open the store {self.path}"
                        + ("" if write else " read-only")
                        + ".",
                        None,
                        exc,
                    ) from exc
                if time.monotonic() >= deadline:
                    raise StoreBusyError(
                        f"The store {self.path} is locked by another process (DuckDB allows "
                        f"one writer per file, and no reader while it writes); gave up after "
                        f"{self.timeout:g} s. This is retryable: try again when the other "
                        f"process has finished, or raise the timeout.\ncause: {exc}"
                    ) from exc
            time.sleep(delay * (0.5 + random.random()))  # jitter: two waiters don't collide
            delay = min(delay * 2, 0.5)

    def close(self) -> None:
        if self._memory is not None:
            self._memory.close()
            self._memory = None
