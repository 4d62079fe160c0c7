"""A stored run read back for scoring: its outputs as evaluation frames of whole samples.

The outputs stream out of DuckDB as Arrow record batches and are cut into chunks of whole
samples (every repetition of a sample in the same chunk, which reliability metrics need);
each chunk is joined with its dataset rows here, not in DuckDB (its hash join may be built on
the outputs, whose long texts then pass its memory limit), its ``extra`` JSON unpacked and a
column added per stored baseline a ``pairwise(baseline=run:REF)`` metric reads. The same
statements feed a cluster's Parquet parts (``outputs_statement``, ``dataset_statement``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import duckdb
import polars as pl

from evalframe.core import schema as C
from evalframe.core._errors import StoreError
from evalframe.core._outputs import attach_baseline
from evalframe.store import _read
from evalframe.store._agent import trajectory_join, typed_agent_columns
from evalframe.store._connect import fetch, query, store_error
from evalframe.store._sandbox import user_query
from evalframe.store._write import OUTPUT_COLUMNS

if TYPE_CHECKING:
    import pyarrow as pa

    from evalframe.metrics._spec import Metric
    from evalframe.store._store import Store

__all__ = [
    "dataset_rows",
    "dataset_statement",
    "evaluation_chunk",
    "evaluation_chunks",
    "output_rows",
    "outputs_statement",
    "source_runs",
    "stored_baselines",
    "whole_samples",
    "with_extra",
]


def whole_samples(batches: Iterable[pa.RecordBatch], min_rows: int) -> Iterator[pl.DataFrame]:
    """Regroup record batches into frames of whole samples, about ``min_rows`` rows each.

    Once ``min_rows`` rows are pending, everything before the last (possibly incomplete)
    sample is yielded. The batches must keep each sample's rows together (sorted by
    ``sample_id``, or one row per sample), so a frame never ends in the middle of a sample.
    """
    pending: list[pl.DataFrame] = []
    rows = 0
    for batch in batches:
        if batch.num_rows == 0:
            continue
        part = pl.from_arrow(batch)
        assert isinstance(part, pl.DataFrame)
        pending.append(part)
        rows += part.height
        if rows < min_rows:
            continue
        frame = pl.concat(pending, how="vertical_relaxed")
        ids = frame.get_column(C.SAMPLE_ID)
        tail_start = int((ids == ids[-1]).arg_true()[0])
        if tail_start == 0:  # one sample so far: keep reading
            pending, rows = [frame], frame.height
            continue
        yield frame.slice(0, tail_start)
        pending = [frame.slice(tail_start)]
        rows = pending[0].height
    if pending:
        yield pl.concat(pending, how="vertical_relaxed")


def source_runs(store: Store, runs: str | Sequence[str] | None) -> list[str]:
    """The run ids ``runs`` names, each once: a reference, a list of them, a SQL query
    selecting a ``run_id`` column (run on a sandboxed connection), or ``None`` for the
    latest run."""
    refs = [runs] if isinstance(runs, str) else list(runs or [])
    sandbox = any(_read.looks_like_sql(r) for r in refs)  # a query from the user
    with store._connector.connect(write=False, sandbox=sandbox) as con:
        return list(dict.fromkeys(_sources(con, runs)))


def _sources(con: duckdb.DuckDBPyConnection, runs: str | Sequence[str] | None) -> list[str]:
    if runs is None:
        return [_read.resolve(con, "latest")]
    if isinstance(runs, str):
        if _read.looks_like_sql(runs):
            found = user_query(con, runs)
            column = "run_id" if "run_id" in found.columns else found.columns[0]
            ids = [str(v) for v in found.get_column(column).to_list()]
            if not ids:
                raise StoreError(f"The --runs query selected no run.\nquery: {runs}")
            return [_read.resolve(con, i) for i in ids]
        return [_read.resolve(con, runs)]
    return [_read.resolve(con, r) for r in runs]


def stored_baselines(
    con: duckdb.DuckDBPyConnection, metrics: Sequence[Metric]
) -> dict[str, pl.DataFrame]:
    """The stored outputs each ``pairwise(baseline=run:REF)`` reads (loaded once)."""
    from evalframe.metrics.judge_toolbox import RUN_BASELINE, run_baselines

    return {
        b: query(
            con,
            "SELECT sample_id, repetition, actual_output FROM run_outputs WHERE run_id = ?",
            [_read.resolve(con, b[len(RUN_BASELINE) :])],
        )
        for b in run_baselines(list(metrics))
    }


def output_rows(con: duckdb.DuckDBPyConnection, outputs_run_id: str) -> int:
    """How many output rows run ``outputs_run_id`` stored."""
    return int(fetch(con, "SELECT count(*) FROM outputs WHERE run_id = ?", [outputs_run_id]) or 0)


def outputs_statement(con: duckdb.DuckDBPyConnection, outputs_run_id: str, order: str = "") -> str:
    """The stored outputs of one run, ``extra`` as ``__extra``, with the ``trajectory``
    column when the run recorded any (parameter: the outputs' run id). They are joined with
    their dataset rows chunk by chunk (``evaluation_chunk``), not in DuckDB: its hash join
    may be built on the outputs, whose long texts then pass its memory limit."""
    outputs = ", ".join(f"o.{c}" for c in OUTPUT_COLUMNS)
    trajectory, join = trajectory_join(con, outputs_run_id)
    return (
        f"SELECT o.sample_id, o.repetition, {outputs}, o.extra AS __extra{trajectory} "
        f"FROM outputs AS o {join} WHERE o.run_id = ?{order}"
    )


def dataset_statement() -> str:
    """The stored dataset's rows: ``sample_id`` and the other dataset columns (parameter: the
    dataset hash)."""
    columns = ", ".join(c for c in C.DATASET_SCHEMA.names() if c != C.SAMPLE_ID)
    return f"SELECT sample_id, {columns} FROM samples WHERE dataset_hash = ?"


def dataset_rows(con: duckdb.DuckDBPyConnection, digest: str) -> pl.DataFrame:
    """The stored dataset's rows (``dataset_statement``)."""
    return query(con, dataset_statement(), [digest])


def evaluation_chunk(
    chunk: pl.DataFrame, samples: pl.DataFrame, baselines: Mapping[str, pl.DataFrame]
) -> pl.DataFrame:
    """A chunk of ``outputs_statement`` rows as an evaluation frame: joined with their dataset
    rows, ``extra`` unpacked, and a column per stored baseline."""
    rows = chunk.join(samples, on=C.SAMPLE_ID, how="inner", maintain_order="left")
    frame = with_extra(rows)
    for baseline, stored in baselines.items():
        frame = attach_baseline(frame, baseline, stored)
    return frame


@contextmanager
def evaluation_chunks(
    con: duckdb.DuckDBPyConnection,
    source: Mapping[str, Any],
    *,
    batch_size: int,
    baselines: Mapping[str, pl.DataFrame],
) -> Iterator[Iterator[pl.DataFrame]]:
    """The evaluation frames of ``source``'s stored outputs (``source``: a ``runs`` row), in
    chunks of whole samples of about ``batch_size`` rows, read on a cursor of ``con`` that is
    closed on exit."""
    samples = dataset_rows(con, source["dataset_hash"])
    # Repetitions of one sample must share a chunk; with one repetition every row is a
    # whole sample and the (out-of-core, but not free) sort is skipped.
    order = " ORDER BY o.sample_id, o.repetition" if (source["repetitions"] or 1) > 1 else ""
    statement = outputs_statement(con, source["outputs_run_id"], order)
    reader_con = con.cursor()

    def chunks() -> Iterator[pl.DataFrame]:
        try:
            reader = reader_con.sql(statement, params=[source["outputs_run_id"]])
            for chunk in whole_samples(reader.to_arrow_reader(batch_size), batch_size):
                yield evaluation_chunk(chunk, samples, baselines)
        except duckdb.Error as exc:
            raise store_error("Could not stream the source run's outputs.", statement, exc) from exc

    try:
        yield chunks()
    finally:
        reader_con.close()


def with_extra(chunk: pl.DataFrame) -> pl.DataFrame:
    """Unpack the ``extra`` output columns (stored as JSON) beside the typed ones."""
    extra = chunk.get_column("__extra")
    frame = chunk.drop("__extra").with_columns(pl.col(C.REPETITION).cast(pl.Int64))
    if extra.null_count() == extra.len():
        return frame
    decoded = extra.str.json_decode(infer_schema_length=None)
    if not isinstance(decoded.dtype, pl.Struct):
        return frame
    unpacked = decoded.struct.unnest()
    fresh = [c for c in unpacked.columns if c not in frame.columns]
    frame = pl.concat([frame, unpacked.select(fresh)], how="horizontal")
    return typed_agent_columns(frame, extra)
