"""What a store file may hold before evalframe reads it, and the views evalframe reads it by.

A store file is a DuckDB database that anyone can edit with plain DuckDB, and a file handed
over (a colleague's store, a CI artifact) can carry SQL: views, macros, types. evalframe
runs none of it:

- a file that defines macros or types is refused before anything is read: a macro can take
  the name of a built-in function (``avg``, ``error``, even ``duckdb_tables``) and would run
  in its place in every query;
- a file where one of the store's tables is a view is refused;
- the views evalframe reads are its own: every connection builds the ``scores`` and
  ``sample_stats`` views itself (``_files``), and each other view of the schema whose stored
  definition differs from the schema's is shadowed, on that connection, by a temporary view
  with the schema's definition. Views the schema does not have are never read by evalframe,
  and users' SQL reaches no file through them (``_sandbox``).

The catalog is read through ``system.main``'s functions, which a macro cannot shadow.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final

import duckdb

from evalframe.core._errors import StoreError
from evalframe.store._connect import execute, fetch
from evalframe.store._files import IN_PLACE, in_place_views, plain_view

__all__ = [
    "Catalog",
    "expected_views",
    "inspect",
    "preparer",
    "refuse_foreign",
    "schema_version",
]

_HERE: Final = "database_name = current_database() AND schema_name = 'main'"


@dataclass(frozen=True)
class Catalog:
    """What a store file holds: its base tables, its views (name -> stored SQL), and the
    macros and types it defines."""

    tables: frozenset[str]
    views: dict[str, str]
    macros: tuple[str, ...]
    types: tuple[str, ...]


def inspect(con: duckdb.DuckDBPyConnection) -> Catalog:
    """Read a store file's catalog (nothing the file defines runs)."""
    tables = frozenset(
        str(r[0])
        for r in execute(con, f"SELECT table_name FROM system.main.duckdb_tables() WHERE {_HERE}")
    )
    views = {
        str(name): str(sql)
        for name, sql in execute(
            con,
            f"SELECT view_name, sql FROM system.main.duckdb_views() WHERE {_HERE} AND NOT internal",
        )
    }
    macros = tuple(
        sorted(
            str(r[0])
            for r in execute(
                con,
                "SELECT DISTINCT function_name FROM system.main.duckdb_functions() "
                "WHERE database_name = current_database()",
            )
        )
    )
    types = tuple(
        sorted(
            str(r[0])
            for r in execute(
                con,
                "SELECT type_name FROM system.main.duckdb_types() "
                "WHERE database_name = current_database() AND NOT internal",
            )
        )
    )
    return Catalog(tables, views, macros, types)


def schema_version(con: duckdb.DuckDBPyConnection, catalog: Catalog) -> int | None:
    """The file's schema version; None for an empty database (read once the file passed
    ``refuse_foreign``).

    Raises:
        StoreError: the file is not an evalframe store, or its ``meta`` is damaged.
    """
    if "meta" in catalog.tables:
        value = fetch(con, "SELECT value FROM meta WHERE key = 'schema_version'")
        if value is None or not str(value).isdigit():
            raise StoreError("The store's meta table has no schema_version; the file is damaged.")
        return int(value)
    if catalog.tables or catalog.views:
        listed = ", ".join(sorted(catalog.tables | set(catalog.views))[:5])
        raise StoreError(
            "This DuckDB file is not an evalframe store (no meta table; it has "
            f"{listed}). Use a new file for the store."
        )
    return None


def refuse_foreign(path: str, catalog: Catalog, table_names: Iterable[str] = ()) -> None:
    """Refuse a file that defines SQL evalframe would run: macros, types, or a view in the
    place of one of the store's tables (``table_names``: those of the file's version)."""
    why = ""
    if catalog.macros:
        why = f"it defines SQL macros ({', '.join(catalog.macros[:5])})"
    elif catalog.types:
        why = f"it defines SQL types ({', '.join(catalog.types[:5])})"
    else:
        replaced = sorted(t for t in table_names if t in catalog.views)
        if replaced:
            why = f"its {', '.join(replaced[:5])} should be a table and is a view"
    if why:
        raise StoreError(
            f"Refusing to read the store {path}: {why}. evalframe writes none of these; the "
            "file was edited outside evalframe, and SQL it holds could read other files or "
            "change what the store reports. Nothing was read. Rebuild the store from an "
            "export you trust (evalframe export / import)."
        )


@functools.cache
def expected_views() -> dict[str, str]:
    """Each view of the schema (but the in-place ones) as DuckDB stores its definition."""
    from evalframe.store import _schema

    con = duckdb.connect(":memory:")
    try:
        _schema.create(con)
        return {
            str(name): str(sql)
            for name, sql in con.execute(
                "SELECT view_name, sql FROM system.main.duckdb_views() "
                "WHERE NOT internal AND schema_name = 'main'"
            ).fetchall()
            if name not in IN_PLACE
        }
    finally:
        con.close()


def preparer(
    con: duckdb.DuckDBPyConnection, catalog: Catalog
) -> Callable[[duckdb.DuckDBPyConnection], None]:
    """What every connection to the file runs first (``con`` is one to it now): the checked
    ``scores`` and ``sample_stats`` views, and the schema's definition of each view the file
    holds differently (or lacks).

    A store without part files whose two views are the schema's plain ones (over their
    tables) keeps them: its connections only check that no run has registered files since.
    """
    from evalframe.store._schema import VIEWS

    expected = expected_views()
    shadowed = [
        VIEWS[name].replace("CREATE OR REPLACE VIEW", "CREATE OR REPLACE TEMP VIEW", 1)
        for name in VIEWS
        if catalog.views.get(name) != expected.get(name)
    ]
    plain = all(catalog.views.get(view) == plain_view(con, view) for view in IN_PLACE)

    def prepare(con: duckdb.DuckDBPyConnection) -> None:
        if not plain or fetch(con, "SELECT count(*) FROM run_files"):
            in_place_views(con, temp=True)
        for ddl in shadowed:
            execute(con, ddl)

    return prepare
