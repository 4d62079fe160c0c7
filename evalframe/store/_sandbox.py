"""What SQL from a user may do on the store: read it, with one SELECT, and nothing else.

Two walls, so that neither alone has to be perfect. DuckDB's own parser sees the text
first: exactly one statement, of type SELECT (which covers WITH, FROM-first queries,
VALUES, DESCRIBE, SUMMARIZE and SHOW); ATTACH, COPY, EXPORT, INSTALL, LOAD, SET, PRAGMA,
CALL, writes and several statements at once are refused with one line. Then the query runs
on a connection opened read-only with ``enable_external_access = false`` (no file, glob or
URL can be read or written, no database attached, no Python variable scanned) but for the
store's own Parquet folder (``allowed_directories``, which its ``scores`` view reads), and
``lock_configuration = true`` (no setting can turn that back on).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import suppress
from typing import Any, Final

import duckdb
import polars as pl

from evalframe.core._errors import StoreError
from evalframe.store._connect import read_failure, store_error

__all__ = ["check_select", "user_query"]

_ALLOWED: Final = "one read-only SELECT query (WITH, FROM, VALUES, DESCRIBE, SUMMARIZE, SHOW)"


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def check_select(text: str) -> None:
    """Refuse anything but a single SELECT statement, as DuckDB's parser reads ``text``.

    Raises:
        StoreError: the text does not parse, holds no or several statements, or its
            statement is not a SELECT; the message is one line.
    """
    try:
        statements = duckdb.extract_statements(text)
    except duckdb.Error as exc:
        raise StoreError(f"The query does not parse: {_first_line(exc)}") from None
    if len(statements) != 1:
        raise StoreError(
            f"Refused: the store runs {_ALLOWED} at a time; this text holds "
            f"{len(statements)} statements."
        )
    kind = statements[0].type
    if kind != duckdb.StatementType.SELECT:
        raise StoreError(
            f"Refused: the store runs {_ALLOWED}; this is a statement of type {kind.name}."
        )


def user_query(
    con: duckdb.DuckDBPyConnection,
    text: str,
    params: Sequence[Any] | dict[str, Any] | None = None,
    *,
    limit: int | None = None,
) -> pl.DataFrame:
    """Check ``text`` with ``check_select`` and run it; a refused file access is one line.

    Run it on a connection from ``Connector.connect(write=False, sandbox=True)``: for a
    store file, that connection cannot reach any file but the store. With ``limit``, only
    that many rows of the result are fetched.

    Raises:
        StoreError: refused, failed, or (a bug) given a file connection without the sandbox.
    """
    check_select(text)
    open_access, path = con.execute(
        "SELECT current_setting('enable_external_access'), (SELECT path FROM "
        "system.main.duckdb_databases() WHERE database_name = current_database())"
    ).fetchall()[0]
    if open_access and path:
        raise StoreError(f"Internal error: a query from the user reached {path} unsandboxed.")
    try:
        rel = con.sql(text, params=params) if params is not None else con.sql(text)
        if rel is not None and limit is not None:
            rel = rel.limit(limit)
        frame: pl.DataFrame = rel.pl() if rel is not None else pl.DataFrame()
    except duckdb.PermissionException as exc:
        _abort(con)
        raise StoreError(
            "Refused: store queries cannot read or write files, URLs or other databases, "
            f"nor change settings ({_first_line(exc).removeprefix('Permission Error: ')})."
        ) from None
    except duckdb.Error as exc:
        _abort(con)
        failure = read_failure(con, exc)
        if failure is not None:
            raise failure from None
        raise store_error("Store query failed.", text, exc) from exc
    return frame


def _abort(con: duckdb.DuckDBPyConnection) -> None:
    with suppress(duckdb.Error):  # release a half-read result; the connection stays usable
        con.abort()
