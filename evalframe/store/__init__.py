"""The run store: every saved run in one DuckDB file, queryable with SQL.

``Store`` is the public entry point; the schema (tables, views, versions and migrations) is
documented in docs/store-schema.md and defined in ``_schema``. Modules: ``_connect`` (opening
files with DuckDB 2.0's locking, retries, error wrapping), ``_write`` (a run in one
transaction through Arrow), ``_read`` (listing, references, loading), ``_chunks``,
``_scored`` and ``_streamed`` (what rescoring reads and writes; the scoring itself is the
engine's) and ``_transfer`` (Parquet export and import).
"""

from __future__ import annotations

from evalframe.core._errors import StoreBusyError
from evalframe.store._schema import SCHEMA_VERSION
from evalframe.store._store import Store, as_store

__all__ = ["SCHEMA_VERSION", "Store", "StoreBusyError", "as_store"]
