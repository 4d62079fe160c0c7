"""Parquet inputs cut into pieces that workers read on their own.

A source is a Parquet file, a directory of them (searched recursively), a glob, or an fsspec
URL of any of these (``s3://bucket/outputs/*.parquet`` once the user installs ``s3fs``). The
client reads only the files' footers; each piece is a run of whole row groups of one file, so
a worker reads it without the client touching the rows.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evalframe.core._errors import DatasetError
from evalframe.core._parquet_source import is_parquet_source, open_source, parquet_files

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["Piece", "is_parquet_source", "parquet_pieces", "read_piece"]


@dataclass(frozen=True)
class Piece:
    """Whole row groups of one Parquet file.

    Attributes:
        url: the file's path or fsspec URL.
        row_groups: the row groups to read, in order.
        rows: their row count.
    """

    url: str
    row_groups: tuple[int, ...]
    rows: int

    def where(self) -> str:
        """The piece in messages: the file, and its row groups when not the whole file."""
        if not self.row_groups:
            return self.url
        return f"{self.url} (row groups {self.row_groups[0]}-{self.row_groups[-1]})"


def parquet_pieces(source: str | os.PathLike[str], *, rows_per_piece: int) -> list[Piece]:
    """The Parquet files of ``source`` cut into pieces of about ``rows_per_piece`` rows.

    Raises:
        DatasetError: no Parquet file matched, or a file is not valid Parquet (named).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    text = os.fspath(source)
    files = parquet_files(text)
    if not files:
        raise DatasetError(f"{text}: no Parquet file found there.")
    pieces: list[Piece] = []
    for url in files:
        try:
            with open_source(url) as f:
                meta = pq.ParquetFile(f).metadata
        except FileNotFoundError as exc:
            raise DatasetError(f"{url} does not exist or is not a regular file.") from exc
        except (pa.ArrowException, OSError) as exc:
            raise DatasetError(f"{url}: not a valid Parquet file: {exc}") from exc
        groups: list[int] = []
        rows = 0
        for g in range(meta.num_row_groups):
            groups.append(g)
            rows += meta.row_group(g).num_rows
            if rows >= rows_per_piece:
                pieces.append(Piece(url, tuple(groups), rows))
                groups, rows = [], 0
        if groups or not pieces or pieces[-1].url != url:
            pieces.append(Piece(url, tuple(groups), rows))
    return pieces


def read_piece(piece: Piece) -> pa.Table:
    """The piece's rows, read where this runs (a worker, or the client in-process).

    Raises:
        DatasetError: the file cannot be read (named, with its row groups).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        with open_source(piece.url) as f:
            file = pq.ParquetFile(f)
            if not piece.row_groups:
                return file.schema_arrow.empty_table()
            return file.read_row_groups(list(piece.row_groups))
    except (pa.ArrowException, OSError) as exc:
        raise DatasetError(f"{piece.where()}: could not read Parquet: {exc}") from exc
