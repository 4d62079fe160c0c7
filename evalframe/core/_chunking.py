"""Cutting documents into chunks: the passages questions are asked about.

Chunks keep a document's structure. Markdown is cut at headings (a heading opens a new chunk
once the current one holds ``MIN_CHUNK_CHARS``, and every chunk of a section starts with its
heading line) and between paragraphs, never inside a fenced code block; YAML front matter is
left out. Text and PDF text are cut between paragraphs. A paragraph longer than a chunk is cut
between sentences, and a sentence longer than a chunk between words (a word longer than a
chunk, between characters). Each passage of a passages file is a chunk of its own, cut the
same way when it is longer. A chunk with no word of its own (only headings) is dropped, and
identical chunk texts are kept once.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Final

from evalframe.core._documents import Document
from evalframe.core._errors import DocumentError

__all__ = ["DEFAULT_CHUNK_CHARS", "MAX_CHUNKS", "MIN_CHUNK_CHARS", "Chunk", "chunk_documents"]

DEFAULT_CHUNK_CHARS: Final = 1500
"""A chunk's default greatest length, in characters (about 300-400 tokens of English)."""
MIN_CHUNK_CHARS: Final = 300
"""A Markdown heading opens a new chunk once the current one holds this many characters."""
MAX_CHUNKS: Final = 200_000
"""The most chunks the documents of one command may give."""

_HEADING: Final = re.compile(r" {0,3}#{1,6}(?:[ \t]+.*)?")
_FENCE: Final = re.compile(r" {0,3}(`{3,}|~{3,})")
_SENTENCE_END: Final = re.compile(r"(?<=[.!?])\s+|(?<=[\u3002\uff01\uff1f])\s*")
_LINE_BREAK: Final = re.compile(r"\r\n|\r|\n")
_WORD: Final = re.compile(r"\w", flags=re.UNICODE)


@dataclass(frozen=True, slots=True)
class Chunk:
    """A piece of a document that a question is asked about.

    Attributes:
        id: ``<document name>#<n>`` (counted from 1 per document), or a passage's own id
            (``<id>#<n>`` for the second and later pieces of a long passage).
        source: the name of its document: a file name, or a passage's source.
        text: the chunk's text.
    """

    id: str
    source: str
    text: str


@dataclass(frozen=True, slots=True)
class _Block:
    text: str
    heading: bool


def _lines(text: str) -> list[str]:
    """The lines of ``text``, split at line feeds and carriage returns only: every other
    separator (U+2028, a form feed) is the text's own character and stays in it."""
    return _LINE_BREAK.split(text)


def _front_matter_end(lines: list[str]) -> int:
    """The index of the first line after a YAML front matter block (0 without one)."""
    if not lines or lines[0].strip() != "---":
        return 0
    for i in range(1, min(len(lines), 200)):  # front matter is short
        if lines[i].strip() in ("---", "..."):
            return i + 1
    return 0


def _markdown_blocks(text: str) -> Iterator[_Block]:
    """Headings and paragraphs in order; a fenced code block stays inside one paragraph."""
    lines = _lines(text)
    paragraph: list[str] = []
    fence: str | None = None

    def flush() -> Iterator[_Block]:
        if paragraph:
            yield _Block("\n".join(paragraph), heading=False)
            paragraph.clear()

    for raw in lines[_front_matter_end(lines) :]:  # lines of one document
        line = raw.rstrip()
        opened = _FENCE.match(line)
        if fence is not None:
            paragraph.append(line)
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
            continue
        if opened:
            fence = opened.group(1)
            paragraph.append(line)
        elif _HEADING.fullmatch(line):
            yield from flush()
            yield _Block(line.strip(), heading=True)
        elif not line.strip():
            yield from flush()
        else:
            paragraph.append(line)
    yield from flush()


def _text_blocks(text: str) -> Iterator[_Block]:
    for paragraph in re.split(r"\n[ \t\f\v]*\n", "\n".join(_lines(text))):  # paragraphs
        lines = [line.rstrip() for line in _lines(paragraph.strip("\n"))]
        if any(line.strip() for line in lines):
            yield _Block("\n".join(lines).strip(), heading=False)


def _even(total: int, limit: int) -> int:
    """The piece length that cuts ``total`` characters into as few pieces of at most
    ``limit`` as possible, of about the same length (no short last piece)."""
    parts = -(-total // limit)
    return min(limit, -(-total // parts) + 16)


def _pieces(text: str, limit: int) -> list[str]:
    """``text`` cut into pieces of at most ``limit`` characters, of about the same length:
    after a sentence's end where one falls in reach, else at a space, else anywhere. The
    pieces are the text's own characters (only the whitespace at a cut is left out)."""
    if len(text) <= limit:
        return [text]
    target = _even(len(text), limit)
    sentences = [m.start() for m in _SENTENCE_END.finditer(text)]
    spaces = [m.start() for m in re.finditer(r"\s+", text)]
    out: list[str] = []
    start = 0
    while len(text) - start > limit:  # one cut per piece
        reach = start + target
        cut = _last(sentences, start, reach) or _last(spaces, start, reach) or start + limit
        out.append(text[start:cut].strip())
        start = cut
        while start < len(text) and text[start].isspace():
            start += 1
    out.append(text[start:].strip())
    return [p for p in out if p]


def _last(positions: list[int], start: int, reach: int) -> int | None:
    """The last position in ``(start, reach]``, or None."""
    i = bisect.bisect_right(positions, reach) - 1
    return positions[i] if i >= 0 and positions[i] > start else None


def _chunks_of(blocks: Iterator[_Block], limit: int) -> Iterator[str]:
    """Blocks packed into chunks of at most ``limit`` characters; a section's later chunks
    start with its heading lines again."""
    current: list[_Block] = []
    heading: list[str] = []  # the headings over the text being packed

    def size() -> int:
        return sum(len(b.text) + 2 for b in current)

    def flush() -> Iterator[str]:
        while current and current[-1].heading:  # a heading goes with the text under it
            current.pop()
        if any(not b.heading and _WORD.search(b.text) for b in current):
            yield "\n\n".join(b.text for b in current)
        current.clear()

    after_heading = False
    for block in blocks:  # blocks of one document
        if block.heading:
            text = block.text[: max(limit // 4, 1)]
            heading = [*heading, text] if after_heading else [text]
            heading = heading[-3:]
            if not after_heading and size() >= MIN_CHUNK_CHARS:
                yield from flush()
            current.append(_Block(text, heading=True))
            after_heading = True
            continue
        after_heading = False
        top = "\n\n".join(heading)
        room = limit - (len(top) + 2 if top else 0)
        for piece in _pieces(block.text, max(room, limit // 2)):
            if current and size() + len(piece) > limit:
                yield from flush()
            if not current and top:
                current.append(_Block(top, heading=True))
            current.append(_Block(piece, heading=False))
    yield from flush()


def chunk_documents(documents: Sequence[Document], max_chars: int) -> list[Chunk]:
    """The chunks of ``documents``, in order, each text once.

    Raises:
        DocumentError: the documents give more than ``MAX_CHUNKS`` chunks, or none with a word.

    Examples:
        >>> from evalframe.core._documents import Document, Passage
        >>> doc = Document("faq.md", "faq.md", "markdown",
        ...                (Passage("# Refunds\\n\\nWithin 30 days.\\n\\n# Shipping\\n\\nFree."),))
        >>> [(c.id, c.text) for c in chunk_documents([doc], max_chars=200)]
        [('faq.md#1', '# Refunds\\n\\nWithin 30 days.\\n\\n# Shipping\\n\\nFree.')]
    """
    out: list[Chunk] = []
    seen: set[str] = set()
    for doc in documents:  # a document at a time
        number = 0
        for passage in doc.passages:  # one for a text file, one a line for passages
            source = passage.source or doc.name
            blocks = (
                _markdown_blocks(passage.text)
                if doc.kind == "markdown"
                else _text_blocks(passage.text)
            )
            for k, text in enumerate(_chunks_of(blocks, max_chars), start=1):
                if text in seen:
                    continue
                seen.add(text)
                if passage.id is not None:
                    cid = passage.id if k == 1 else f"{passage.id}#{k}"
                else:
                    number += 1
                    cid = f"{source}#{number}"
                out.append(Chunk(cid, source, text))
                if len(out) > MAX_CHUNKS:
                    raise DocumentError(
                        f"The documents give more than {MAX_CHUNKS:,} chunks (at {doc.path}); "
                        "synthesize from fewer documents at a time, or with a larger "
                        "--chunk-size."
                    )
    if not out:
        raise DocumentError(
            "The documents hold no text to ask about: every chunk is only headings or "
            "punctuation. Expected documents with sentences."
        )
    return out
