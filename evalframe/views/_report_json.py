"""A run's report JSON written from its frames: ``report_json(run)``.

The bytes are those of ``build_report(run).to_json()``, but the two sections that grow with
the run (``sample_aggregates`` and ``samples``) are never turned into Python objects. Each
row's fixed members and each entry's opening are written by a compiled pass over typed
columns (``_records``: numbers rounded to six places spelled as Python spells them); a second
pass (``_layout.section``) then writes every row, its entries and its re-indented ``details``
documents straight into one buffer, which is spliced into the orjson text of the rest.
Strings are JSON-encoded with the escapes of ``json.dumps(..., ensure_ascii=False)``, and
scores are cast to text with the few below 1e-4 respelled as Python writes them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
import orjson
import polars as pl

from evalframe.core import schema as C
from evalframe.core._gc import gc_paused
from evalframe.core._njit import compiling, worth_compiling
from evalframe.views import _layout, _records
from evalframe.views._layout import Entries, section
from evalframe.views._records import Template, records
from evalframe.views._report import (
    _build_report,
    _executions,
    _python_floats,
    _r6,
    _sample_metric_stats,
)
from evalframe.views._trajectory_json import trajectory_suffixes

if TYPE_CHECKING:
    from evalframe.core._run import Run

__all__ = ["report_json", "report_json_parts"]

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


def _array(rows: bytes | npt.NDArray[np.uint8]) -> list[bytes | npt.NDArray[np.uint8]]:
    """The pieces of a JSON array at the report's second level, given its joined rows."""
    return [b"[\n", rows, b"\n  ]"] if len(rows) else [b"[]"]


# Scored rows plus executions up to which the report is written from Python objects.
_OBJECTS_UP_TO = 20_000

# Separator, empty object, opening, closing (at 6 spaces) and row end (at 4) of both sections.
_ROWS = (",\n", "{}", "{\n", "\n" + _pad(6) + "}", "\n" + _pad(4) + "}")


def _samples_text(run: Run) -> list[bytes | npt.NDArray[np.uint8]]:
    rows, scored = _executions(run)
    if rows.height == 0:
        return _array(b"")
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
        bounds=_bounds(scored.get_column("_pos"), rows.height),
        prefixes=records(prefix, scored.height),
        documents=scored.get_column("details"),
        indent=10,
        suffix="\n" + _pad(8) + "}",
    )
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
    return _array(section(records(head, rows.height), entries, _ROWS))


def _adversarial_texts(metadata: pl.Series) -> pl.Series:
    """Each row's normalised adversarial block as text at its depth, or ``null``."""
    from evalframe.views._report import _adversarial_of

    out = ["null"] * metadata.len()
    for i, block in enumerate(_adversarial_of(metadata)):
        if block is not None:
            dumped = orjson.dumps(block, option=orjson.OPT_INDENT_2).decode("utf-8")
            out[i] = dumped.replace("\n", "\n" + _pad(6))
    return pl.Series(out, dtype=pl.String)


def _aggregates_text(run: Run) -> list[bytes | npt.NDArray[np.uint8]]:
    rows = run.sample_aggregates
    if rows.height == 0:
        return _array(b"")
    floats = ["pass_rate", "pass_rate_low", "pass_rate_high", "score_mean", "score_stddev"]
    rows = rows.with_columns(_r6(pl.col(f)) for f in floats).with_row_index("_pos")
    per_metric = (
        _sample_metric_stats(run)
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
        prefixes=records(entry, per_metric.height),
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
    return _array(section(records(head, rows.height), entries, _ROWS))


def report_json_parts(run: Run, *, include_evidence: bool = False) -> Iterator[memoryview]:
    """The run's report JSON as UTF-8 pieces to write in order (see :func:`report_json`).

    Writing the pieces one after another spares joining a document of hundreds of
    megabytes in memory first, and the first pieces are written while the samples are
    still being laid out.
    """
    if not worth_compiling(run.scores.height + run.frame.height, _OBJECTS_UP_TO):
        # A small run: its Python objects written by orjson (the same bytes) take a few
        # milliseconds, compiling the layout passes tens of seconds once per environment.
        with gc_paused():
            report = _build_report(run, samples=True, include_evidence=include_evidence)
        yield memoryview(report.to_json_bytes())
        return
    compiling(
        "the JSON report writer",
        _layout._row_sizes, _layout._write_rows, _layout._lengths, _records._sizes, _records._write,
    )  # fmt: skip
    with gc_paused(), ThreadPoolExecutor(2) as pool:
        # Polars and the layout kernels release the GIL: the three parts overlap.
        aggregates = pool.submit(_aggregates_text, run)
        samples = pool.submit(_samples_text, run)
        doc = _build_report(run, samples=False, aggregates=False, include_evidence=include_evidence)
        # Markers stand in for the large sections while the rest is written and its floats
        # are respelled; the sections' numbers are spelled right already.
        doc["sample_aggregates"] = orjson.Fragment(_AGGREGATES)
        doc["samples"] = orjson.Fragment(_SAMPLES)
        head = orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
        head = _python_floats(head)
        first, rest = head.split(_AGGREGATES)
        middle, last = rest.split(_SAMPLES)
        yield memoryview(first)
        # numpy arrays are buffers (numpy's stubs do not say so)
        for part in aggregates.result():
            yield memoryview(part)  # type: ignore[arg-type]
        yield memoryview(middle)
        for part in samples.result():
            yield memoryview(part)  # type: ignore[arg-type]
        yield memoryview(last)


def report_json(run: Run, *, include_evidence: bool = False) -> bytes:
    """The run's report JSON, byte for byte ``build_report(run).to_json()``, as UTF-8.

    The per-row sections are written from the frames, so a run of 100,000 samples takes
    about as long to report as to score instead of many times longer.
    """
    return b"".join(report_json_parts(run, include_evidence=include_evidence))
