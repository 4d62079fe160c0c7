"""The documents ``evalframe synthesize`` reads: finding them and reading their text.

DOCS are files, folders (searched recursively, hidden files and folders left out) or glob
patterns of Markdown (``.md``, ``.markdown``), plain text (``.txt``, ``.text``, ``.rst``), PDF
(``.pdf``, with the ``pdf`` extra) and passages files (``.jsonl`` or ``.parquet``, one passage
a line or row with a ``text`` field). A file named on its own must be readable and hold text;
files a folder or a pattern finds are read the same way, except that those of other kinds,
and empty ones, are left out (and named). Every problem is a ``DocumentError`` naming the
file (and the line or row of a passages file) and what was expected.
"""

from __future__ import annotations

import glob
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from evalframe.core._errors import DocumentError, type_name

__all__ = [
    "EXPECTED",
    "KINDS",
    "MAX_DOCUMENT_BYTES",
    "Document",
    "Found",
    "Passage",
    "find_documents",
    "read_documents",
]

Kind = Literal["markdown", "text", "pdf", "passages"]

KINDS: Final[dict[str, Kind]] = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".txt": "text",
    ".text": "text",
    ".rst": "text",
    ".pdf": "pdf",
    ".jsonl": "passages",
    ".parquet": "passages",
}
"""The document kinds, by file extension (lower case)."""

EXPECTED: Final = (
    "Markdown (.md, .markdown), text (.txt, .text, .rst), PDF (.pdf) or passages "
    "(.jsonl, .parquet with a 'text' field)"
)

MAX_DOCUMENT_BYTES: Final = 64 * 2**20
"""The largest document file read (64 MiB)."""
TEXT_FIELDS: Final = ("text", "content", "passage")
"""The fields a passage's text is read from, the first present."""
SOURCE_FIELDS: Final = ("source", "document", "doc_id")
"""The fields a passage's document name is read from, the first present (else the file's)."""


@dataclass(frozen=True, slots=True)
class Passage:
    """A piece of text as a document gives it: a whole text file, or one passage."""

    text: str
    id: str | None = None
    source: str | None = None


@dataclass(frozen=True, slots=True)
class Document:
    """A document read: its path, the name its chunks are tagged with, its kind, its text."""

    path: str
    name: str
    kind: Kind
    passages: tuple[Passage, ...]


# --- finding -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Found:
    """A document file to read, and whether it was named on its own (not found in a folder
    or by a pattern): such a file must hold text."""

    path: Path
    named: bool


def _is_pattern(spec: str) -> bool:
    return any(c in spec for c in "*?[")


def find_documents(
    specs: Sequence[str | os.PathLike[str]], notes: list[str] | None = None
) -> list[Found]:
    """The files ``specs`` name, in order, each once (a folder's and a pattern's sorted).
    Files of other kinds that a folder or pattern finds are left out, and ``notes`` says so.

    Raises:
        DocumentError: no spec at all; a missing file; a named file of another kind; a
            pattern that matches nothing; a folder or pattern with no document in it.
    """
    if not specs:
        raise DocumentError(f"No documents given; expected {EXPECTED} files, folders or globs.")
    found: list[Found] = []
    for raw in specs:  # the arguments, a handful
        spec = os.fspath(raw)
        path = Path(spec)
        if path.is_file():
            _check_kind(path)
            found.append(Found(path, named=True))
        elif path.is_dir():
            files = sorted(
                p
                for p in path.rglob("*")
                if p.is_file()
                and not any(part.startswith(".") for part in p.relative_to(path).parts)
            )  # hidden files and folders (.git, a journal) are not documents
            found.extend(Found(p, named=False) for p in _known(spec, files, notes, "folder"))
        elif _is_pattern(spec):
            files = sorted(Path(p) for p in glob.glob(spec, recursive=True) if Path(p).is_file())
            if not files:
                raise DocumentError(f"{spec}: the pattern matches no file; expected {EXPECTED}.")
            found.extend(Found(p, named=False) for p in _known(spec, files, notes, "pattern"))
        else:
            raise DocumentError(
                f"{spec}: no such file or folder; expected {EXPECTED} files, folders or globs."
            )
    unique: dict[Path, Found] = {}
    for item in found:
        key = item.path.resolve()
        if key not in unique or item.named:
            unique[key] = Found(unique[key].path if key in unique else item.path, item.named)
    return list(unique.values())


def _check_kind(path: Path) -> None:
    if path.suffix.lower() not in KINDS:
        raise DocumentError(
            f"{path}: unsupported document extension {path.suffix or '(none)'!r}; expected "
            f"{EXPECTED}."
        )


def _known(spec: str, files: list[Path], notes: list[str] | None, what: str) -> list[Path]:
    kept = [p for p in files if p.suffix.lower() in KINDS]
    if not kept:
        raise DocumentError(f"{spec}: the {what} holds no document; expected {EXPECTED}.")
    other = len(files) - len(kept)
    if other and notes is not None:
        notes.append(f"{spec}: left out {other} file(s) of other kinds")
    return kept


# --- reading -------------------------------------------------------------------------------------


def read_documents(found: Sequence[Found], notes: list[str] | None = None) -> list[Document]:
    """Each file's text (a passages file's passages). An empty file found in a folder or by
    a pattern is left out (``notes`` says so); one named on its own is an error.

    Raises:
        DocumentError: a file that cannot be read, is too large, is not UTF-8 text, is a PDF
            without the ``pdf`` extra or without text, a malformed passages file, an empty
            named file, or documents that hold no text at all.
    """
    names = _names([f.path for f in found])
    documents: list[Document] = []
    for item, name in zip(found, names, strict=True):  # one per file
        kind = KINDS[item.path.suffix.lower()]
        _check_size(item.path)
        if kind == "passages":
            passages = _read_passages(item.path)
        elif kind == "pdf":
            passages = (Passage(_read_pdf(item.path)),)
        else:
            passages = (Passage(_read_text(item.path)),)
        passages = tuple(p for p in passages if p.text.strip())
        if not passages:
            if item.named:
                raise DocumentError(
                    f"{item.path}: holds no text; expected a document with at least one sentence"
                    + (
                        " (a scanned PDF needs its text recognised first)."
                        if kind == "pdf"
                        else "."
                    )
                )
            if notes is not None:
                notes.append(f"{item.path}: left out (no text)")
            continue
        documents.append(Document(os.fspath(item.path), name, kind, passages))
    if not documents:
        shown = ", ".join(os.fspath(f.path) for f in found[:3]) + (
            ", ..." if len(found) > 3 else ""
        )
        raise DocumentError(f"The documents ({shown}) hold no text; expected {EXPECTED} with text.")
    return documents


def _names(paths: Sequence[Path]) -> list[str]:
    """Each file's name as its chunks are tagged: the file name, or the path where two
    files share a name."""
    counts: dict[str, int] = {}
    for p in paths:
        counts[p.name] = counts.get(p.name, 0) + 1
    return [p.name if counts[p.name] == 1 else p.as_posix() for p in paths]


def _check_size(path: Path) -> None:
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise DocumentError(f"{path}: cannot be read ({exc.strerror or exc}).") from None
    if size > MAX_DOCUMENT_BYTES:
        raise DocumentError(
            f"{path}: is {size / 2**20:,.1f} MiB; documents are read up to "
            f"{MAX_DOCUMENT_BYTES // 2**20} MiB each. Split it, or give its passages as a "
            ".parquet file."
        )


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise DocumentError(f"{path}: cannot be read ({exc.strerror or exc}).") from None


def _read_text(path: Path) -> str:
    data = _read_bytes(path)
    if b"\x00" in data:
        raise DocumentError(
            f"{path}: looks binary (it holds NUL bytes); expected UTF-8 text or Markdown."
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DocumentError(
            f"{path}: is not UTF-8 text (byte {exc.start} cannot be decoded); expected UTF-8 "
            "text or Markdown."
        ) from None


def _read_pdf(path: Path) -> str:
    try:
        from pypdf import PdfReader
    except ImportError:
        raise DocumentError(
            f'{path}: reading the text of a PDF needs pypdf: pip install ".[pdf]" in a '
            "clone of evalframe (or give the text as a .txt or .md file)."
        ) from None
    try:
        reader = PdfReader(path)
        if reader.is_encrypted:
            raise DocumentError(
                f"{path}: is an encrypted PDF; expected one whose text can be read."
            )
        pages = [page.extract_text() or "" for page in reader.pages]  # one per page
    except DocumentError:
        raise
    except Exception as exc:  # pypdf raises many kinds for a damaged file
        raise DocumentError(
            f"{path}: is not a PDF whose text can be read ({type(exc).__name__}: {exc})."
        ) from None
    return "\n\n".join(p.strip() for p in pages if p.strip())


def _bad(path: Path, where: str, message: str) -> DocumentError:
    return DocumentError(f"{path} {where}: {message}")


def _read_passages(path: Path) -> tuple[Passage, ...]:
    if path.suffix.lower() == ".parquet":
        rows = _parquet_rows(path)
        where = "row"
    else:
        rows = _jsonl_rows(path)
        where = "line"
    passages: list[Passage] = []
    ids: dict[str, int] = {}
    for number, row in rows:  # one per passage
        at = f"{where} {number}"
        if not any(f in row for f in TEXT_FIELDS):
            raise _bad(
                path,
                at,
                f"has no 'text' field (nor 'content' or 'passage'); its fields are "
                f"{sorted(row)[:10]}. Expected the passage's text.",
            )
        text = _field(row, TEXT_FIELDS)
        if text is None:  # no text in this row: nothing to ask about
            continue
        if not isinstance(text, str):
            field = next((f for f in TEXT_FIELDS if f in row), TEXT_FIELDS[0])
            raise _bad(
                path,
                at,
                f"field {field!r} must be a string (the passage's text); got {type_name(text)}.",
            )
        pid = row.get("id")
        if pid is not None and not (isinstance(pid, str | int) and not isinstance(pid, bool)):
            raise _bad(
                path, at, f"field 'id' must be a string or an integer; got {type_name(pid)}."
            )
        source = _field(row, SOURCE_FIELDS)
        if source is not None and not isinstance(source, str):
            raise _bad(path, at, f"the passage's source must be a string; got {type_name(source)}.")
        for value, name in ((text, "text"), (source, "source"), (pid, "id")):
            if isinstance(value, str) and not _utf8(value):
                raise _bad(
                    path,
                    at,
                    f"field {name!r} holds a lone surrogate, which no UTF-8 text can hold.",
                )
        if pid is not None:
            key = str(pid)
            if key in ids:
                raise _bad(
                    path,
                    at,
                    f"id {key!r} is already the id of {where} {ids[key]}; ids must be unique.",
                )
            ids[key] = number
        passages.append(
            Passage(
                text, None if pid is None else str(pid), source.strip() or None if source else None
            )
        )
    return tuple(passages)


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _field(row: dict[str, Any], names: Sequence[str]) -> Any:
    for name in names:
        if name in row:
            return row[name]
    return None


def _jsonl_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    text = _read_text(path)
    for number, line in enumerate(text.splitlines(), start=1):  # one per passage
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (ValueError, RecursionError) as exc:
            raise _bad(
                path, f"line {number}", f"is not JSON ({exc}); expected one passage object a line."
            ) from None
        if not isinstance(row, dict):
            raise _bad(
                path,
                f"line {number}",
                f"is a JSON {type_name(row)}; expected an object with a 'text' field.",
            )
        yield number, row


def _parquet_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    import polars as pl

    try:
        frame = pl.read_parquet(path)
    except Exception as exc:  # Polars and Arrow raise several kinds for a bad file
        raise DocumentError(f"{path}: is not a Parquet file that can be read ({exc}).") from None
    text = next((c for c in TEXT_FIELDS if c in frame.columns), None)
    if text is None:
        raise DocumentError(
            f"{path}: has no 'text' column (nor 'content' or 'passage'); its columns are "
            f"{frame.columns[:20]}. Expected one passage a row with its text."
        )
    wanted = [c for c in (text, "id", *SOURCE_FIELDS) if c in frame.columns]
    yield from enumerate(frame.select(wanted).iter_rows(named=True), start=1)
