"""Parquet named by more than one file's path: a directory, a glob or an fsspec URL.

A directory is searched recursively for ``*.parquet``; a glob (``*``, ``?``, ``[``) is
expanded, ``**`` recursively. A path that exists is taken as written, and so is the part of
a glob naming existing folders: ``exp [v2]/*.parquet`` reads the folder ``exp [v2]``. A URL
(``s3://bucket/runs/*.parquet``) needs fsspec and the filesystem's package (``s3fs``), which
the user installs. Files are listed in sorted order, so rows keep one order from run to run.
``file://`` URLs are local paths.
"""

from __future__ import annotations

import glob
import os
from pathlib import Path
from typing import Any, Final

from evalframe.core._errors import DatasetError

__all__ = ["is_parquet_source", "is_url", "open_source", "parquet_files", "source_stem"]

_GLOB: Final = ("*", "?", "[")


def is_url(source: str) -> bool:
    """Whether ``source`` is a remote URL (``file://`` is a local path)."""
    return "://" in source and not source.startswith("file://")


def is_parquet_source(source: str | os.PathLike[str]) -> bool:
    """Whether ``source`` names Parquet by more than one file's path: a directory, a glob or
    a URL (a single local ``.parquet`` file reads in-process as saved outputs always have,
    whatever characters its name holds)."""
    text = os.fspath(source)
    if "://" in text:
        return True
    if Path(text).exists():
        return Path(text).is_dir()
    return any(c in text for c in _GLOB)


def _local_glob(pattern: str) -> list[str]:
    """The files a local glob matches, its longest prefix of existing folders taken
    literally (a folder named ``exp [v2]`` is not a character class)."""
    parts = Path(pattern).parts
    for i in range(len(parts) - 1, 0, -1):
        head = Path(*parts[:i])
        if head.is_dir():
            return glob.glob(os.path.join(glob.escape(str(head)), *parts[i:]), recursive=True)
    return glob.glob(pattern, recursive=True)


def source_stem(source: str) -> str:
    """The name a source suggests: the last part of its path before any glob, without its
    extension (``golden`` for ``s3://bucket/golden/*.parquet``)."""
    plain = source.split("://", 1)[-1]
    if "://" not in source and Path(plain).exists():
        return Path(plain.rstrip("/")).stem or "dataset"
    for mark in _GLOB:
        plain = plain.split(mark, 1)[0]
    return Path(plain.rstrip("/-_.")).stem or "dataset"


def _filesystem(source: str) -> tuple[Any, str]:
    try:
        from fsspec.core import url_to_fs
    except ImportError as exc:
        raise DatasetError(
            f"{source}: reading a URL needs fsspec and the filesystem's package (for s3:// "
            'pip install s3fs); pip install ".[dask]" in a clone of evalframe installs fsspec.'
        ) from exc
    try:
        return url_to_fs(source)  # type: ignore[no-any-return]
    except (ImportError, ValueError) as exc:
        raise DatasetError(f"{source}: {exc}") from exc


def parquet_files(source: str) -> list[str]:
    """The Parquet files ``source`` names, sorted (its path or URL when it names one file)."""
    if is_url(source):
        fs, path = _filesystem(source)
        if any(c in path for c in _GLOB):
            found = fs.glob(path)
        elif fs.isdir(path):
            found = fs.glob(path.rstrip("/") + "/**/*.parquet")
        else:
            found = [path]
        return sorted(fs.unstrip_protocol(p) for p in found)
    local = source.removeprefix("file://")
    if Path(local).is_dir():
        return sorted(str(p) for p in Path(local).rglob("*.parquet"))
    if Path(local).exists() or not any(c in local for c in _GLOB):
        return [local]
    return sorted(_local_glob(local))


def open_source(url: str) -> Any:
    """A binary file object of one file of ``parquet_files``."""
    if is_url(url):
        fs, path = _filesystem(url)
        return fs.open(path, "rb")
    return open(url, "rb")
