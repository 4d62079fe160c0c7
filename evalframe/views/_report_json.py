"""A run's report JSON written from its frames: ``report_json(run)``.

The bytes are those of ``build_report(run).to_json()``, but the two sections that grow with
the run (``sample_aggregates`` and ``samples``) are never turned into Python objects: each is
one string column built with Polars expressions at the indentation it has in the document,
joined and spliced into the orjson text of the rest. Strings are JSON-encoded by Polars (the
same escapes as ``json.dumps(..., ensure_ascii=False)``), numbers are cast to text with the
few below 1e-4 respelled as Python writes them, and every ``details`` document is
re-serialised by one orjson call over all of them.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

import orjson
import polars as pl

from evalframe.core import schema as C
from evalframe.core._gc import gc_paused
from evalframe.views._report import (
    _build_report,
    _executions,
    _python_floats,
    _r6,
    _sample_metric_stats,
)

if TYPE_CHECKING:
    from evalframe.core._run import Run

__all__ = ["report_json"]

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


def _boolean(expr: pl.Expr) -> pl.Expr:
    return (
        pl.when(expr.is_null())
        .then(pl.lit("null"))
        .when(expr)
        .then(pl.lit("true"))
        .otherwise(pl.lit("false"))
    )


def _fields(indent: int, fields: list[tuple[str, pl.Expr]]) -> pl.Expr:
    """An object's text: one ``"key": value`` line per field at ``indent`` spaces."""
    pad = _pad(indent)
    parts: list[pl.Expr | str] = ["{\n"]
    for i, (key, value) in enumerate(fields):
        parts += [f'{pad}"{key}": ', value, ",\n" if i < len(fields) - 1 else "\n"]
    parts.append(_pad(indent - 2) + "}")
    return pl.concat_str([pl.lit(p) if isinstance(p, str) else p for p in parts])


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


def _metric_order(scores: pl.DataFrame) -> list[str] | None:
    """The metrics in the order each row lists them, when every row lists them alike.

    ``score`` writes one block per metric, so a row's scores come in block order; a
    frame in any other order (None) takes the slower path that follows it row by row.
    """
    metric = scores.get_column(C.METRIC)
    blocks = metric.filter(metric.rle_id().diff().fill_null(1) != 0)
    return blocks.to_list() if blocks.n_unique() == blocks.len() else None


def _entries_per_row(
    rows: pl.DataFrame, entries: pl.DataFrame, key: str, order: list[str] | None
) -> pl.Series:
    """For each row, its ``_entry`` texts joined by ``",\\n"`` in ``order``; null for none.

    One left join per metric and a horizontal concatenation: no group-by over the rows.
    """
    if order is None:
        grouped = entries.group_by(key, maintain_order=True).agg(pl.col("_entry").str.join(",\n"))
        return rows.join(grouped, on=key, how="left", maintain_order="left").get_column("_entry")
    if not order:  # no metric scored any row (every execution errored)
        return pl.repeat(None, rows.height, dtype=pl.String, eager=True).alias("_entry")
    frame = rows.select(key)
    for i, name in enumerate(order):
        part = entries.filter(pl.col(C.METRIC) == name).select(key, pl.col("_entry").alias(f"_{i}"))
        frame = frame.join(part, on=key, how="left", maintain_order="left")
    joined = pl.concat_str(
        [pl.col(f"_{i}") for i in range(len(order))], separator=",\n", ignore_nulls=True
    )
    return frame.select(pl.when(joined != "").then(joined)).to_series()


def _pretty(documents: pl.Series, indent: int) -> pl.Series:
    """Each JSON document pretty-printed as the value of a key at ``indent`` spaces."""
    if documents.len() == 0:
        return pl.Series(documents.name, [], dtype=pl.String)
    values = orjson.loads("[" + documents.str.join(",").item() + "]")
    pad = _pad(indent - 2)
    text = _python_floats(orjson.dumps(values, option=orjson.OPT_INDENT_2)).decode("utf-8")
    text = text.replace("\n", "\n" + pad)[len(pad) + 4 : -(len(pad) + 2)]
    # Elements are separated by a comma and a line at exactly this indent; their own lines
    # are indented further, and strings hold no raw newline.
    parts = re.split(",\n" + pad + "  (?! )", text)
    if len(parts) != documents.len():
        raise AssertionError("details documents and their pretty texts differ in number")
    return pl.Series(documents.name, parts, dtype=pl.String)


def _samples_text(run: Run) -> str:
    rows, scored = _executions(run)
    if rows.height == 0:
        return "[]"
    scored = _spelled(scored, [C.SCORE]).with_columns(
        _pretty(scored.get_column("details"), 10).alias("details")
    )
    scored = scored.with_columns(
        pl.concat_str(
            _member(scored.get_column(C.METRIC), 8),
            _fields(10, [("score", pl.col(C.SCORE)), ("details", pl.col("details"))]),
        ).alias("_entry")
    )
    scores = _entries_per_row(rows.select("_pos"), scored, "_pos", _metric_order(run.scores))
    tags = (
        rows.select("_pos", C.TAGS)
        .explode(C.TAGS)
        .filter(pl.col(C.TAGS).is_not_null())
        .group_by("_pos", maintain_order=True)
        .agg(pl.concat_str(pl.lit(_pad(8)), _string(pl.col(C.TAGS))).str.join(",\n").alias("_tags"))
    )
    adversarial = _adversarial_texts(rows.get_column(C.METADATA))
    rows = (
        rows.with_columns(scores.alias("_scores"))
        .join(tags, on="_pos", how="left", maintain_order="left")
        .with_columns(adversarial.alias("_adversarial"))
    )
    text = rows.select(
        pl.concat_str(
            pl.lit(_pad(4)),
            _fields(
                6,
                [
                    ("id", _string(pl.col(C.SAMPLE_ID))),
                    ("row_hash", _string(pl.col(C.ROW_HASH))),
                    ("repetition", pl.col(C.REPETITION).cast(pl.String)),
                    ("tags", _container(pl.col("_tags"), 8, "[]")),
                    ("adversarial", pl.col("_adversarial")),
                    ("actual_output", _string(pl.col(C.ACTUAL_OUTPUT))),
                    ("scores", _container(pl.col("_scores"), 8, "{}")),
                ],
            ),
        ).str.join(",\n")
    ).item()
    return "[\n" + str(text) + "\n  ]"


def _adversarial_texts(metadata: pl.Series) -> pl.Series:
    """Each row's normalised adversarial block as text at its depth, or ``null``."""
    from evalframe.views._report import _adversarial_of

    out = ["null"] * metadata.len()
    for i, block in enumerate(_adversarial_of(metadata)):
        if block is not None:
            dumped = orjson.dumps(block, option=orjson.OPT_INDENT_2).decode("utf-8")
            out[i] = dumped.replace("\n", "\n" + _pad(6))
    return pl.Series(out, dtype=pl.String)


def _aggregates_text(run: Run) -> str:
    rows = run.sample_aggregates
    if rows.height == 0:
        return "[]"
    floats = ["pass_rate", "pass_rate_low", "pass_rate_high", "score_mean", "score_stddev"]
    rows = _spelled(
        rows.with_columns(_r6(pl.col(f)) for f in floats),
        [*floats, "repetitions", "passed", "errored"],
    )
    per_metric = _sample_metric_stats(run)
    stats = ["mean", "stddev", "min", "max", "observations"]
    per_metric = _spelled(per_metric, stats).with_columns(
        pl.concat_str(
            _member(per_metric.get_column(C.METRIC), 8),
            _fields(10, [(k, pl.col(k)) for k in stats]),
        ).alias("_entry")
    )
    names = sorted(per_metric.get_column(C.METRIC).unique().to_list())
    metrics = _entries_per_row(rows.select(C.SAMPLE_ID), per_metric, C.SAMPLE_ID, names)
    ci = _fields(
        8,
        [
            ("low", pl.col("pass_rate_low")),
            ("high", pl.col("pass_rate_high")),
            ("confidence", pl.lit("0.95")),
        ],
    )
    text = (
        rows.with_columns(metrics.alias("_metrics"))
        .select(
            pl.concat_str(
                pl.lit(_pad(4)),
                _fields(
                    6,
                    [
                        ("id", _string(pl.col(C.SAMPLE_ID))),
                        ("row_hash", _string(pl.col(C.ROW_HASH))),
                        ("repetitions", pl.col("repetitions")),
                        ("passed", pl.col("passed")),
                        ("errored", pl.col("errored")),
                        ("pass_rate", pl.col("pass_rate")),
                        ("pass_rate_ci", ci),
                        ("unstable", _boolean(pl.col("unstable"))),
                        ("score_mean", pl.col("score_mean")),
                        ("score_stddev", pl.col("score_stddev")),
                        ("metrics", _container(pl.col("_metrics"), 8, "{}")),
                    ],
                ),
            ).str.join(",\n")
        )
        .item()
    )
    return "[\n" + str(text) + "\n  ]"


def report_json(run: Run, *, include_evidence: bool = False) -> bytes:
    """The run's report JSON, byte for byte ``build_report(run).to_json()``, as UTF-8.

    The per-row sections are written from the frames, so a run of 100,000 samples takes
    about as long to report as to score instead of many times longer.
    """
    with gc_paused():
        doc = _build_report(run, samples=False, aggregates=False, include_evidence=include_evidence)
        # Markers stand in for the large sections while the rest is written and its floats
        # are respelled; the sections' numbers are spelled right already.
        doc["sample_aggregates"] = orjson.Fragment(_AGGREGATES)
        doc["samples"] = orjson.Fragment(_SAMPLES)
        head = orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
        head = _python_floats(head)
        first, rest = head.split(_AGGREGATES)
        middle, last = rest.split(_SAMPLES)
        return b"".join(
            [
                first,
                _aggregates_text(run).encode("utf-8"),
                middle,
                _samples_text(run).encode("utf-8"),
                last,
            ]
        )
