"""A run's report JSON written from its frames: ``report_json(run)``.

The bytes are those of ``build_report(run).to_json()``, but the two sections that grow with
the run (``sample_aggregates`` and ``samples``) are never turned into Python objects. A
compiled pass (``_layout.rows``) sizes every row, then writes it: its fixed members and each
entry's opening from typed columns (``_records``' field writer: numbers rounded to six
places spelled as Python spells them), its entries and their re-indented ``details``
documents, straight into the output between the pieces of the orjson text of the rest. The
output is the file's next slice (``report_json_parts``, which streams) or, from Python, the
``str`` itself (``report_json_text``: every slice sized first, then written in place).
Strings are JSON-encoded with the escapes of ``json.dumps(..., ensure_ascii=False)``, and
scores are cast to text with the few below 1e-4 respelled as Python writes them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

import numpy as np
import numpy.typing as npt
import orjson
import polars as pl

from evalframe.core import schema as C
from evalframe.core._gc import gc_paused
from evalframe.core._njit import compiling, worth_compiling
from evalframe.core._progress import Advance, track
from evalframe.views import _layout
from evalframe.views._ascii_text import ascii_text
from evalframe.views._format import python_floats
from evalframe.views._layout import Entries, Rows
from evalframe.views._layout import rows as rows_of
from evalframe.views._pending import Pending
from evalframe.views._records import Template
from evalframe.views._report import Report
from evalframe.views._report_build import (
    adversarial_rows,
    assemble_report,
    execution_rows,
    round6,
    sample_metric_stats,
)
from evalframe.views._trajectory_json import trajectory_suffixes

if TYPE_CHECKING:
    from evalframe.core._run import Run

__all__ = ["report_json", "report_json_parts", "report_json_text"]

# Not JSON, so no value of the document can contain them.
_AGGREGATES = b"\x00sample_aggregates\x00"
_SAMPLES = b"\x00samples\x00"


def _pad(n: int) -> str:
    return " " * n


def _string(expr: pl.Expr) -> pl.Expr:
    """A JSON string literal (or ``null``), encoded by Polars."""
    encoded = pl.struct(expr.alias("v")).struct.json_encode()
    return encoded.str.strip_prefix('{"v":').str.strip_suffix("}")


def _spelled(frame: pl.DataFrame, columns: list[str]) -> pl.DataFrame:
    """Numeric ``columns`` as text in Python's spelling (``repr``), nulls as ``null``.

    Polars and Python both print the shortest digits that round-trip; only below 1e-4 do
    they differ (Python writes ``3e-05`` and ``2.5e-07``, Polars ``0.00003`` and
    ``2.5e-7``), so those few values are spelled by Python.
    """
    out = []
    for name in columns:
        col = frame.get_column(name)
        text = col.cast(pl.String)
        if col.dtype.is_float():
            odd = (
                text.str.contains("0.0000", literal=True) | text.str.contains("e-", literal=True)
            ).arg_true()
            if odd.len():
                text = text.scatter(odd, [repr(v) for v in col.gather(odd).to_list()])
        out.append(text.fill_null("null"))
    return frame.with_columns(out)


def _container(joined: pl.Expr, indent: int, brackets: str) -> pl.Expr:
    """``joined`` entries (at ``indent`` spaces) wrapped in brackets; empty when null."""
    opening, closing = brackets[0], brackets[1]
    return (
        pl.when(joined.is_null())
        .then(pl.lit(opening + closing))
        .otherwise(
            pl.concat_str(pl.lit(opening + "\n"), joined, pl.lit("\n" + _pad(indent - 2) + closing))
        )
    )


def _member(names: pl.Series, indent: int) -> pl.Series:
    """``"name": `` at ``indent`` spaces, for a column of a few distinct names."""
    keys = names.unique().to_list()
    mapping = {k: _pad(indent) + json.dumps(k, ensure_ascii=False) + ": " for k in keys}
    return names.replace_strict(mapping, return_dtype=pl.String)


def _bounds(positions: pl.Series, rows: int) -> npt.NDArray[np.int64]:
    """Offsets of each row's entries, given the entries' row positions in ascending order."""
    counts = np.bincount(positions.to_numpy(), minlength=rows)
    bounds = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(counts, out=bounds[1:])
    return bounds


Piece = bytes | npt.NDArray[np.uint8]
_P = TypeVar("_P")

# Scored rows plus executions up to which the report is written from Python objects.
_OBJECTS_UP_TO = 20_000
# Rows laid out at a time: the sections stream to the file a slice at a time, so memory
# holds a few slices' text (about 3 KB a row) instead of the whole report.
_SLICE_ROWS = 32_768

# Separator, empty object, opening, closing (at 6 spaces) and row end (at 4) of both sections.
_ROWS = (",\n", "{}", "{\n", "\n" + _pad(6) + "}", "\n" + _pad(4) + "}")


def _array(rows: int, slices: Iterator[Rows], written: bool) -> Iterator[Piece | Rows]:
    """A JSON array at the report's second level, its ``rows`` laid out slice by slice
    (``written``: each slice's bytes, else its rows sized for writing in place)."""
    if rows == 0:
        yield b"[]"
        return
    yield b"[\n"
    for k, text in enumerate(slices):
        if k:
            yield _ROWS[0].encode()
        yield text.written() if written else text
    yield b"\n  ]"


def _cuts(rows: int) -> list[tuple[int, int]]:
    return [(a, min(a + _SLICE_ROWS, rows)) for a in range(0, rows, _SLICE_ROWS)]


def _entries_of(frame: pl.DataFrame, rows: pl.DataFrame, keys: list[str]) -> tuple[
    npt.NDArray[np.int64], npt.NDArray[np.int64]
]:  # fmt: skip
    """Which of ``frame``'s rows belong to each of ``rows`` (by ``keys``; ``rows`` numbered
    by ``_pos``): their indices grouped by row, in ``frame``'s order within a row, and each
    row's offsets into them."""
    index = (
        frame.select(keys)
        .with_row_index("_i")
        .join(rows.select(*keys, "_pos"), on=keys, how="inner", maintain_order="left")
        .sort("_pos", maintain_order=True)
    )
    return index.get_column("_i").to_numpy(), _bounds(index.get_column("_pos"), rows.height)


def _samples_text(run: Run, advance: Advance) -> Iterator[Rows]:
    rows = execution_rows(run)
    scored = run.scores.filter(pl.col(C.ERROR).is_null())
    order, bounds = _entries_of(scored, rows, [C.SAMPLE_ID, C.REPETITION])
    scored = scored.select(C.METRIC, C.SCORE, pl.col("details").fill_null("{}"))
    for a, b in _cuts(rows.height):
        yield _samples_slice(rows.slice(a, b - a), scored.gather(order[bounds[a] : bounds[b]]),
                             bounds[a : b + 1] - bounds[a])  # fmt: skip
        advance(b - a)


def _samples_slice(rows: pl.DataFrame, scored: pl.DataFrame, bounds: npt.NDArray[np.int64]) -> Rows:
    """The ``samples`` rows of these executions, with their scored rows in order."""
    scored = _spelled(scored, [C.SCORE])
    at10 = "\n" + _pad(10)
    prefix = (
        Template()
        .text("", _member(scored.get_column(C.METRIC), 8))
        .text("{" + at10 + '"score": ', scored.get_column(C.SCORE))
        .end("," + at10 + '"details": ')
    )
    # ``scored`` comes in execution order, each execution's scores in the run's metric order.
    entries = Entries(
        bounds=bounds,
        prefixes=prefix,
        documents=scored.get_column("details"),
        indent=10,
        suffix="\n" + _pad(8) + "}",
    )
    rows = rows.with_columns(pl.int_range(pl.len(), dtype=pl.UInt32).alias("_pos"))
    tags = (
        rows.select("_pos", C.TAGS)
        .explode(C.TAGS)
        .filter(pl.col(C.TAGS).is_not_null())
        .group_by("_pos", maintain_order=True)
        .agg(pl.concat_str(pl.lit(_pad(8)), _string(pl.col(C.TAGS))).str.join(",\n").alias("_tags"))
    )
    tags_text = (
        rows.join(tags, on="_pos", how="left", maintain_order="left")
        .select(_container(pl.col("_tags"), 8, "[]"))
        .to_series()
    )
    at6 = "\n" + _pad(6)
    head = (
        Template()
        .string(_pad(4) + "{" + at6 + '"id": ', rows.get_column(C.SAMPLE_ID))
        .string("," + at6 + '"row_hash": ', rows.get_column(C.ROW_HASH))
        .integer("," + at6 + '"repetition": ', rows.get_column(C.REPETITION))
        .text("," + at6 + '"tags": ', tags_text)
        .text("," + at6 + '"adversarial": ', _adversarial_texts(rows.get_column(C.METADATA)))
        .string("," + at6 + '"actual_output": ', rows.get_column(C.ACTUAL_OUTPUT))
        # a trajectory only where one was recorded: it trails actual_output
        .text("", trajectory_suffixes(rows, 6))
        .end("," + at6 + '"scores": ')
    )
    return rows_of(head, entries, _ROWS)


def _adversarial_texts(metadata: pl.Series) -> pl.Series:
    """Each row's normalised adversarial block as text at its depth, or ``null``."""
    out = pl.repeat("null", metadata.len(), dtype=pl.String, eager=True)
    rows = adversarial_rows(metadata)  # only those rows: no loop over the others
    if rows:
        texts = [
            orjson.dumps(block, option=orjson.OPT_INDENT_2)
            .decode("utf-8")
            .replace("\n", "\n" + _pad(6))
            for _, block in rows
        ]
        out = out.scatter([i for i, _ in rows], texts)
    return out


_FLOATS = ["pass_rate", "pass_rate_low", "pass_rate_high", "score_mean", "score_stddev"]


def _aggregates_text(run: Run, advance: Advance) -> Iterator[Rows]:
    rows = run.sample_aggregates.with_columns(round6(pl.col(f)) for f in _FLOATS)
    rows = rows.with_row_index("_pos")
    order, bounds = _entries_of(run.scores, rows, [C.SAMPLE_ID])
    # What the per-metric statistics read: gathering the details too would copy them.
    stats = run.scores.select(C.SAMPLE_ID, C.METRIC, C.SCORE)
    for a, b in _cuts(rows.height):
        scores = stats.gather(order[bounds[a] : bounds[b]])
        yield _aggregates_slice(run, rows.slice(a, b - a), scores)
        advance(b - a)


def _aggregates_slice(run: Run, rows: pl.DataFrame, scores: pl.DataFrame) -> Rows:
    """The ``sample_aggregates`` rows of these samples, from every score row of theirs."""
    rows = rows.with_columns(pl.int_range(pl.len(), dtype=pl.UInt32).alias("_pos"))
    per_metric = (
        sample_metric_stats(run, scores)
        .join(rows.select(C.SAMPLE_ID, "_pos"), on=C.SAMPLE_ID, how="inner")
        .sort("_pos", C.METRIC)
    )
    pad = "\n" + _pad(10)
    entry = Template().text("", _member(per_metric.get_column(C.METRIC), 8))
    for i, stat in enumerate(("mean", "stddev", "min", "max")):
        entry.number(("{" if i == 0 else ",") + f'{pad}"{stat}": ', per_metric.get_column(stat))
    entry.integer(f',{pad}"observations": ', per_metric.get_column("observations"))
    entry.end("\n" + _pad(8) + "}")
    entries = Entries(
        bounds=_bounds(per_metric.get_column("_pos"), rows.height),
        prefixes=entry,
    )
    at6, at8 = "\n" + _pad(6), "\n" + _pad(8)
    head = (
        Template()
        .string(_pad(4) + "{" + at6 + '"id": ', rows.get_column(C.SAMPLE_ID))
        .string("," + at6 + '"row_hash": ', rows.get_column(C.ROW_HASH))
        .integer("," + at6 + '"repetitions": ', rows.get_column("repetitions"))
        .integer("," + at6 + '"passed": ', rows.get_column("passed"))
        .integer("," + at6 + '"errored": ', rows.get_column("errored"))
        .number("," + at6 + '"pass_rate": ', rows.get_column("pass_rate"))
        .number("," + at6 + '"pass_rate_ci": {' + at8 + '"low": ', rows.get_column("pass_rate_low"))
        .number("," + at8 + '"high": ', rows.get_column("pass_rate_high"))
        .boolean(
            "," + at8 + '"confidence": 0.95' + at6 + "}," + at6 + '"unstable": ',
            rows.get_column("unstable"),
        )
        .number("," + at6 + '"score_mean": ', rows.get_column("score_mean"))
        .number("," + at6 + '"score_stddev": ', rows.get_column("score_stddev"))
        .end("," + at6 + '"metrics": ')
    )
    return rows_of(head, entries, _ROWS)


def _ahead(pieces: Iterator[_P], pool: ThreadPoolExecutor) -> Iterator[_P]:
    """``pieces``, each computed on ``pool`` while the one before it is being written; the
    first from now on."""
    done = object()
    pending = pool.submit(next, pieces, done)

    def drain() -> Iterator[_P]:
        nonlocal pending
        while (piece := pending.result()) is not done:
            pending = pool.submit(next, pieces, done)
            yield piece  # type: ignore[misc]

    return drain()


def _all_ahead(pieces: Iterator[_P], pool: ThreadPoolExecutor) -> Iterator[_P]:
    """``pieces``, all computed on ``pool`` from now on (none is written before the last)."""
    every = pool.submit(list, pieces)

    def drain() -> Iterator[_P]:
        yield from every.result()

    return drain()


def _small(run: Run, include_evidence: bool, head: Report | None) -> bytes | None:
    """A small run's report JSON, from its Python objects; None for a large run.

    Writing a small run's objects with orjson (the same bytes) takes a few milliseconds,
    compiling the layout passes tens of seconds once per environment.
    """
    if worth_compiling(run.scores.height + run.frame.height, _OBJECTS_UP_TO):
        return None
    with gc_paused():
        if head is None:
            report = assemble_report(run, samples=True, include_evidence=include_evidence)
        else:  # its pending sections built for this once (the report stays as it was)
            report = Report(
                {k: v.build() if isinstance(v, Pending) else v for k, v in dict.items(head)}
            )
    return report.to_json_bytes()


@contextmanager
def _laid_out(
    run: Run, include_evidence: bool, head: Report | None, *, written: bool
) -> Iterator[list[bytes | Iterator[Piece | Rows]]]:
    """The report JSON's pieces in order: the text around the per-row sections (``bytes``)
    and each section's pieces as they are laid out, on a thread of its own."""
    compiling("the JSON report writer", _layout._row_sizes, _layout._write_rows, _layout._lengths)
    rows = run.sample_aggregates.height + run.frame.height
    with (
        track("writing the report", rows, unit="rows") as advance,
        gc_paused(),
        ThreadPoolExecutor(1) as first,
        ThreadPoolExecutor(1) as second,
    ):
        sections: dict[str, tuple[bytes, Callable[[], Iterator[Piece | Rows]]]] = {
            "sample_aggregates": (
                _AGGREGATES,
                lambda: _array(
                    run.sample_aggregates.height, _aggregates_text(run, advance), written
                ),
            ),
            "samples": (
                _SAMPLES,
                lambda: _array(run.frame.height, _samples_text(run, advance), written),
            ),
        }
        # Polars and the layout kernels release the GIL: each section's first slice is laid
        # out, on a thread of its own, while the head is built and written.
        if head is None:
            streamed = list(sections)
            started = _start(sections, streamed, first, second, written=written)
            doc = dict(
                assemble_report(
                    run, samples=False, aggregates=False, include_evidence=include_evidence
                )
            )
        else:
            doc = dict(dict.items(head))
            streamed = [k for k, v in doc.items() if k in sections and isinstance(v, Pending)]
            started = _start(sections, streamed, first, second, written=written)
        # Markers stand in for the large sections while the rest is written and its floats
        # are respelled; the sections' numbers are spelled right already.
        for key in streamed:
            doc[key] = orjson.Fragment(sections[key][0])
        text = orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
        text = python_floats(text)
        del doc
        pieces: list[bytes | Iterator[Piece | Rows]] = []
        for key in streamed:  # in the document's order
            before, text = text.split(sections[key][0])
            pieces += [before, started[key]]
        pieces.append(text)
        yield pieces


def _flat(pieces: list[bytes | Iterator[_P]]) -> Iterator[bytes | _P]:
    for piece in pieces:
        if isinstance(piece, bytes):
            yield piece
        else:
            yield from piece


def report_json_parts(
    run: Run, *, include_evidence: bool = False, head: Report | None = None
) -> Iterator[memoryview]:
    """The run's report JSON as UTF-8 pieces to write in order (see :func:`report_json`).

    The per-row sections are laid out a slice of rows at a time, the next slice while the
    previous one is written, so a report larger than memory can be written; joining the
    pieces gives the same bytes as writing them. ``head``: a report of ``run`` to write
    (``Report.to_json``), its pending sections laid out from the frames.
    """
    small = _small(run, include_evidence, head)
    if small is not None:
        yield memoryview(small)
        return
    with _laid_out(run, include_evidence, head, written=True) as pieces:
        for part in _flat(pieces):  # each section's slices written on its pool already
            written = part.written() if isinstance(part, Rows) else part
            yield memoryview(written) if isinstance(written, bytes) else written.data


def report_json_text(
    run: Run, *, include_evidence: bool = False, head: Report | None = None
) -> str:
    """The run's report JSON as ``str`` (see :func:`report_json`), written in place.

    Every section is laid out and sized first, then written straight into the string when
    the text is ASCII (else into one buffer, then decoded): no piece is joined or copied
    on its way to the string.
    """
    small = _small(run, include_evidence, head)
    if small is not None:
        return small.decode("utf-8")
    with _laid_out(run, include_evidence, head, written=False) as laid:
        pieces = list(_flat(laid))
    sizes = [p.size if isinstance(p, Rows) else len(p) for p in pieces]
    ends = np.cumsum([0, *sizes]).tolist()
    ascii = all(p.ascii() if isinstance(p, Rows) else bytes(p).isascii() for p in pieces)
    text, out = ascii_text(ends[-1]) if ascii else ("", np.empty(ends[-1], dtype=np.uint8))
    for piece, a, b in zip(pieces, ends, ends[1:], strict=False):
        if isinstance(piece, Rows):
            piece.write_into(out[a:b])
        else:
            out[a:b] = np.frombuffer(piece, dtype=np.uint8)
    return text if ascii else str(out.data, "utf-8")


def _start(
    sections: dict[str, tuple[bytes, Callable[[], Iterator[_P]]]],
    keys: list[str],
    *pools: ThreadPoolExecutor,
    written: bool,
) -> dict[str, Iterator[_P]]:
    """Each of ``keys``' section pieces, computed ahead on a pool of its own: one at a time
    while the previous is written (``written``), else all of them."""
    ahead = _ahead if written else _all_ahead
    return {key: ahead(sections[key][1](), pool) for key, pool in zip(keys, pools, strict=False)}


def report_json(run: Run, *, include_evidence: bool = False) -> bytes:
    """The run's report JSON, byte for byte ``build_report(run).to_json()``, as UTF-8.

    The per-row sections are written from the frames, so a run of 100,000 samples takes
    about as long to report as to score instead of many times longer.
    """
    return b"".join(report_json_parts(run, include_evidence=include_evidence))
