"""A content-addressed cache of provider results in a DuckDB file.

Two tables: ``vectors`` (an embedding, or a text's token vectors, keyed by the embedder's id
and the text) and ``replies`` (a judge's reply content keyed by the endpoint and the full
request body: model, prompt, temperature, seed, response format). Keys are SHA-256 hex
digests of canonical JSON, so equal requests hit the same row in every process. Request
headers are never stored, so no API key reaches the file; prompts and outputs do, so keep
the file where those may live.

The file is opened for each lookup or write and closed again, so several processes can
share it one after another. A cache that cannot be opened or read (a lock held by another
writer, a damaged file) is skipped with a log message: it never fails a run.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

import numpy as np

from evalframe.providers._base import Vector

__all__ = ["ResponseCache", "default_cache_path", "request_key"]

log = logging.getLogger("evalframe.providers")

SCHEMA_VERSION: Final = "evalframe.cache.v1"

_DDL: Final = (
    "CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR)",
    "INSERT INTO meta VALUES ('schema_version', ?) ON CONFLICT DO NOTHING",
    "CREATE TABLE IF NOT EXISTS vectors (key VARCHAR PRIMARY KEY, namespace VARCHAR, "
    "rows INTEGER, dim INTEGER, data FLOAT[], created_at TIMESTAMP DEFAULT current_timestamp)",
    "CREATE TABLE IF NOT EXISTS replies (key VARCHAR PRIMARY KEY, namespace VARCHAR, "
    "request VARCHAR, content VARCHAR, created_at TIMESTAMP DEFAULT current_timestamp)",
)


def default_cache_path() -> Path:
    """``$XDG_CACHE_HOME/evalframe/cache.duckdb`` (``~/.cache/evalframe/cache.duckdb``)."""
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(root) / "evalframe" / "cache.duckdb"


def request_key(namespace: str, payload: Any) -> str:
    """SHA-256 of the canonical JSON of ``[namespace, payload]``."""
    canonical = json.dumps(
        [namespace, payload], sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class ResponseCache:
    """Provider results on disk, keyed by content.

    Args:
        path: the DuckDB file (created with its folder when missing).

    Attributes:
        hits, misses: lookups answered and not answered, since creation.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).expanduser()
        self.hits = 0
        self.misses = 0
        self._ready = False
        self._broken = False

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.path)!r})"

    @contextmanager
    def _connect(self) -> Iterator[Any]:
        import duckdb

        self.path.parent.mkdir(parents=True, exist_ok=True)
        con = duckdb.connect(str(self.path))
        try:
            if not self._ready:
                for statement in _DDL:
                    if "?" in statement:
                        con.execute(statement, [SCHEMA_VERSION]).fetchall()
                    else:
                        con.execute(statement).fetchall()
                self._ready = True
            yield con
        finally:
            con.close()

    def _guard(self, what: str, exc: Exception) -> None:
        if not self._broken:
            log.warning("Provider cache %s skipped (%s): %s", self.path, what, exc)
        self._broken = True

    def _lookup(self, namespace: str, payloads: Sequence[Any], select: str) -> Any | None:
        """Rows of ``select`` over ``wanted`` (``key`` and position ``i`` of each payload).

        Counts hits and misses; ``None`` when the cache cannot be read.
        """
        import pyarrow as pa

        keys = [request_key(namespace, p) for p in payloads]
        wanted = pa.table({"key": keys, "i": pa.array(np.arange(len(keys), dtype=np.int64))})
        try:
            with self._connect() as con:
                con.register("wanted", wanted)
                found = con.sql(select).to_arrow_table()
        except Exception as exc:  # a cache problem must never fail the run
            self._guard("lookup", exc)
            self.misses += len(payloads)
            return None
        self.hits += found.num_rows
        self.misses += len(payloads) - found.num_rows
        return found

    def _insert(self, name: str, table: Any) -> None:
        """Add the rows of ``table`` to table ``name``, keeping rows already stored."""
        columns = ", ".join(table.column_names)
        try:
            with self._connect() as con:
                con.register("incoming", table)
                con.execute(
                    f"INSERT INTO {name} ({columns}) "
                    f"SELECT DISTINCT ON (key) {columns} FROM incoming "
                    "ON CONFLICT DO NOTHING"
                ).fetchall()
        except Exception as exc:  # a cache problem must never fail the run
            self._guard("write", exc)

    # -- vectors ---------------------------------------------------------------------------

    def get_vectors(self, namespace: str, payloads: Sequence[Any]) -> list[Vector | None]:
        """Cached arrays for ``payloads`` (texts; ``None`` where missing), as stored."""
        out: list[Vector | None] = [None] * len(payloads)
        if not payloads:
            return out
        found = self._lookup(
            namespace,
            payloads,
            "SELECT w.i, v.rows, v.dim, v.data FROM wanted w JOIN vectors v USING (key)",
        )
        if found is not None and found.num_rows:
            idx = found.column("i").to_numpy()
            rows = found.column("rows").to_numpy()
            dims = found.column("dim").to_numpy()
            data = found.column("data").combine_chunks()
            flat = data.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
            offsets = np.asarray(data.offsets)
            for j in range(found.num_rows):  # one stored array per hit
                arr = flat[offsets[j] : offsets[j + 1]]
                out[int(idx[j])] = arr.reshape(-1, int(dims[j])) if rows[j] >= 0 else arr
        return out

    def put_vectors(
        self, namespace: str, payloads: Sequence[Any], arrays: Sequence[Vector]
    ) -> None:
        """Store arrays (``(d,)`` vectors, or ``(n, d)`` token matrices) for ``payloads``."""
        if not payloads:
            return
        import pyarrow as pa

        shapes = [a.shape for a in arrays]
        lengths = np.array([int(np.prod(s)) for s in shapes], dtype=np.int64)
        offsets = np.zeros(len(arrays) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        values = (
            np.concatenate([a.reshape(-1) for a in arrays]).astype(np.float32)
            if len(arrays)
            else np.zeros(0, np.float32)
        )
        table = pa.table(
            {
                "key": [request_key(namespace, t) for t in payloads],
                "namespace": [namespace] * len(payloads),
                # rows = -1 marks a single vector; >= 0 a (rows, dim) matrix.
                "rows": pa.array([s[0] if len(s) == 2 else -1 for s in shapes], pa.int32()),
                "dim": pa.array([s[-1] if len(s) else 0 for s in shapes], pa.int32()),
                "data": pa.LargeListArray.from_arrays(pa.array(offsets), pa.array(values)),
            }
        )
        self._insert("vectors", table)

    # -- judge replies ---------------------------------------------------------------------

    def get_replies(self, namespace: str, requests: Sequence[Any]) -> list[str | None]:
        """Cached reply contents for request bodies (``None`` where missing)."""
        out: list[str | None] = [None] * len(requests)
        if not requests:
            return out
        found = self._lookup(
            namespace, requests, "SELECT w.i, r.content FROM wanted w JOIN replies r USING (key)"
        )
        if found is not None:
            for i, content in zip(
                found.column("i").to_pylist(), found.column("content").to_pylist(), strict=True
            ):
                out[int(i)] = content
        return out

    def put_replies(self, namespace: str, requests: Sequence[Any], contents: Sequence[str]) -> None:
        """Store reply contents with their (header-free) request bodies."""
        if not requests:
            return
        import pyarrow as pa

        table = pa.table(
            {
                "key": [request_key(namespace, r) for r in requests],
                "namespace": [namespace] * len(requests),
                "request": [
                    json.dumps(r, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
                    for r in requests
                ],
                "content": list(contents),
            }
        )
        self._insert("replies", table)
