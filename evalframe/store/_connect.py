"""Opening DuckDB files the way DuckDB 2.0 needs: short-lived, retried, errors wrapped.

DuckDB 2.0 lets one process hold a file read-write, and while it does no other process can
open it at all, not even read-only. So writers open, write one transaction and close;
readers open read-only, without access to any file but the store's own part files nor to
settings (``_sandbox``), and close; and both retry with exponential backoff while another
process holds the lock, up to a timeout, after which ``StoreBusyError`` (retryable) is
raised. A connection is never shared between threads: within a process, operations on one
file take turns (a lock per file), and in-memory stores hand each operation its own cursor
under a lock. A read that fails on a missing or damaged part file becomes one paragraph
naming the run and the file (``read_failure``).
"""

from __future__ import annotations

import os
import random
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Final

import duckdb
import polars as pl

from evalframe.core._errors import StoreBusyError, StoreError
from evalframe.store._part_checks import DAMAGED, FILES_SUFFIX, damaged, diagnose, files_root

__all__ = [
    "Connector",
    "StoreBusyError",
    "execute",
    "fetch",
    "query",
    "store_error",
    "store_path",
]

MEMORY: Final = ":memory:"
_LOCK_MARKERS: Final = ("Could not set lock", "Conflicting lock")
_PART: Final = re.compile(
    r"(?P<relation>scores|sample_stats)/run_id=(?P<run>[^/\s\"']+)/"
    r"(?P<file>[A-Za-z0-9][A-Za-z0-9._-]*\.parquet)"
)
_FILE_LOCKS: dict[str, threading.RLock] = {}
_FILE_LOCKS_GUARD = threading.Lock()


def _file_lock(path: str) -> threading.RLock:
    """One lock per file and process: DuckDB shares a database instance per file within a
    process, and opening or closing it from two threads at once races (attach conflicts,
    "different configuration" errors), so this process's operations on a file take turns."""
    key = os.path.realpath(path)
    with _FILE_LOCKS_GUARD:
        return _FILE_LOCKS.setdefault(key, threading.RLock())


_DIAGNOSING: ContextVar[bool] = ContextVar("evalframe_store_diagnosing", default=False)


def _question_mark(path: str) -> tuple[str, dict[str, Any]]:
    """Make a store whose path holds a ``?`` writable by DuckDB; the path and the settings
    to open it with.

    DuckDB takes the first ``?`` of a database path for the start of a query string and
    names its write-ahead log by inserting ``.wal`` there: for ``exp?/runs.duckdb`` the log is
    ``exp.wal?/runs.duckdb``, in a folder that does not exist, so nothing commits. That
    folder is made here, once, and left in place: every DuckDB process opening the store
    looks for the log there. (Spilled temporary files, named the same way, are sent to the
    store's own ``.tmp`` folder.) A ``?`` in the file name alone needs nothing: the log is
    then beside the file.
    """
    real = os.path.realpath(path)
    at = real.find("?")
    if at < 0:
        return path, {}
    log = real[:at] + ".wal" + real[at:]
    if os.path.dirname(log) != os.path.dirname(real):
        with suppress(OSError):  # a read-only place: reading needs no log
            os.makedirs(os.path.dirname(log), exist_ok=True)
    return path, {"temp_directory": real + ".tmp"}


def store_path(con: duckdb.DuckDBPyConnection) -> str | None:
    """The path of the store file ``con`` is connected to (None in memory)."""
    rows = con.execute(
        "SELECT path FROM system.main.duckdb_databases() WHERE database_name = current_database()"
    ).fetchall()
    path = rows[0][0] if rows else None
    return str(path) if path else None


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text


def _maybe_a_file(exc: BaseException) -> bool:
    """Whether a DuckDB error could come from reading a damaged file (not from the query's
    text, the catalog, a constraint or a permission)."""
    kinds = (duckdb.IOException, duckdb.InvalidInputException, duckdb.InternalException)
    return isinstance(exc, kinds) or type(exc) is duckdb.Error


def read_failure(con: duckdb.DuckDBPyConnection, exc: BaseException) -> StoreError | None:
    """A failed read that a missing or damaged part file explains, as one paragraph naming
    the run and file (None for any other failure)."""
    text = str(exc)
    at = text.find(DAMAGED)
    if at >= 0:  # a run's view branch raised the message its check wrote
        return StoreError(_first_line(text[at:]))
    if not _maybe_a_file(exc):
        return None
    path = None
    with suppress(duckdb.Error):
        path = store_path(con)
    if not path:
        return None
    found = _PART.search(text)
    if found is not None and FILES_SUFFIX in text:
        where = f"{found['relation']}/run_id={found['run']}/{found['file']}"
        detail = _first_line(text).replace(str(files_root(path)) + os.sep, "")
        return StoreError(damaged(path, found["run"], where, f"is unreadable ({detail})"))
    # DuckDB does not always name the file it failed to read: look for a damaged part file
    # (sizes and footers; only now, on the failure path of a read, and not for its own).
    if _DIAGNOSING.get():
        return None
    token = _DIAGNOSING.set(True)
    try:
        return diagnose(con, str(path))
    except (duckdb.Error, StoreError):
        return None
    finally:
        _DIAGNOSING.reset(token)


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
        failure = read_failure(con, exc)
        if failure is not None:
            raise failure from None
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
        failure = read_failure(con, exc)
        if failure is not None:
            raise failure from None
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

    Attributes:
        prepare: what every connection to the file runs before it is handed out (the
            store's checked views, ``_guard``), once ``Store`` has checked the file.
    """

    def __init__(self, path: str | os.PathLike[str], *, timeout: float, threads: int | None):
        self.path = os.fspath(path)
        self.timeout = timeout
        self.threads = threads
        self.prepare: Callable[[duckdb.DuckDBPyConnection], None] | None = None
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
    def connect(
        self, *, write: bool, sandbox: bool = False, prepare: bool = True
    ) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection for one operation, closed (or, in memory, released) afterwards.

        A file store's read-only connection has no access to other files than the store's
        own folder, and a locked configuration (``_seal``). DuckDB opens a file once per
        process, with one configuration, so while a connection the caller opened to the
        file is open in this process, reads go through it instead, unsealed, unless
        ``sandbox`` (users' SQL, which is then refused). ``prepare`` runs ``self.prepare``
        on it first (every operation but those checking or migrating the file).
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
            con, sealed = self._open(write=write, sandbox=sandbox)
            try:
                # Part files' footers are read once per connection, not at each bind of
                # the views that read them.
                con.execute("SET parquet_metadata_cache = true")
                if sealed:
                    _seal(con, self.path)
                if prepare and self.prepare is not None:
                    self.prepare(con)
                yield con
            finally:
                con.close()

    def _open(self, *, write: bool, sandbox: bool) -> tuple[duckdb.DuckDBPyConnection, bool]:
        """A connection, and whether it is to be sealed (a read-only one of its own)."""
        if not write and not Path(self.path).exists():
            raise StoreError(
                f"No store at {self.path}: save a run to it first "
                "(ef.evaluate(..., store=path) or evalframe run --store PATH)."
            )
        deadline = time.monotonic() + self.timeout
        delay = 0.02
        sealed = not write
        while True:
            try:
                path, extra = _question_mark(self.path) if write else (self.path, {})
                con = duckdb.connect(
                    path, read_only=not write, config=self._config(sandbox=sealed) | extra
                )
                return con, sealed
            except duckdb.Error as exc:
                if sealed and _is_foreign_instance(exc):
                    # evalframe's own operations on a file take turns (``_file_lock``), so
                    # the other configuration is a connection the caller opened.
                    if sandbox:
                        raise StoreError(
                            f"The store {self.path} is open in this process through a "
                            "connection evalframe did not make (for example duckdb.connect("
                            "path, read_only=True)), and DuckDB opens a file once per process "
                            "with one set of settings; a SQL query on the store needs its own "
                            "(no access to other files). Close that connection, or run the "
                            "query through it."
                        ) from None
                    sealed = False
                    continue
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
