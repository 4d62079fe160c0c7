"""Rescoring stored outputs: new or changed metrics, no call to the system under test.

Memory stays bounded whatever the run's size: the source's outputs stream out of DuckDB as
Arrow record batches, are cut into chunks of whole samples (every repetition of a sample in
the same chunk, which reliability metrics need) and scored with the one runner,
``evalframe.core._score``; each chunk's scores are appended before the next is read. Metrics the
source already scored (same canonical id) are copied in SQL, never recomputed. Per-sample
statistics come chunk by chunk from ``precision.row_aggregates`` too: from the scored chunks
when every metric was computed, else from the new run's scores read back sorted by sample
(DuckDB sorts out of core); they are staged in a temporary Parquet file. The new run shares
the source's outputs (``outputs_run_id``) instead of copying them. Everything happens in one
transaction: a crash leaves no partial run.
"""

from __future__ import annotations

import json
import tempfile
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import duckdb
import polars as pl

from evalframe.core import schema as C
from evalframe.core._errors import StoreError
from evalframe.core._limits import checked
from evalframe.core._precision import precision_from_counts, row_aggregates
from evalframe.core._progress import track
from evalframe.enrich import providers_for, score
from evalframe.metrics._judge_engine import prompt_keys
from evalframe.providers import EmbeddingClient, JudgeClient, Providers
from evalframe.store import _read
from evalframe.store._agent import trajectory_join, typed_agent_columns
from evalframe.store._connect import Connector, execute, fetch, query, store_error
from evalframe.store._files import (
    IN_PLACE,
    SAMPLE_STATS_TABLE,
    SCORES_TABLE,
    check_run,
    discard,
    in_a_file,
    register,
)
from evalframe.store._rescore_dask import parts_folder, remove_parts, score_parts
from evalframe.store._sandbox import user_query
from evalframe.store._schema import fill_stats
from evalframe.store._write import (
    OUTPUT_COLUMNS,
    insert,
    insert_run_record,
    metrics_frame,
    transaction,
    usage_frame,
)

if TYPE_CHECKING:
    import pyarrow as pa

    from evalframe.metrics._registry import MetricFactory
    from evalframe.metrics._spec import Metric

__all__ = [
    "dataset_rows",
    "dataset_statement",
    "evaluation_chunk",
    "outputs_statement",
    "rescore_runs",
    "sample_statistics",
    "score_into_run",
    "scoring_connection",
    "whole_samples",
    "with_extra",
]

_STAT_COLUMNS: Final = (
    C.SAMPLE_ID,
    "repetitions",
    "passed",
    "errored",
    "pass_rate",
    "pass_rate_low",
    "pass_rate_high",
    "unstable",
    "score_mean",
    "score_stddev",
)


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


def rescore_runs(
    connector: Connector,
    metrics: Sequence[str | Metric | MetricFactory],
    *,
    runs: str | Sequence[str] | None,
    keep: bool,
    force: bool,
    name: str | None,
    batch_size: int,
    memory_limit: str | None,
    providers: Providers | EmbeddingClient | JudgeClient | None,
    dask: Any = None,
) -> list[str]:
    """Rescore each source run into a new run; returns the new run ids.

    With ``dask`` (a client, a scheduler address or ``local:N``), workers score the source
    in parts (``_rescore_dask``); the one writer here registers them.
    """
    from evalframe.metrics._registry import resolve

    checked(batch_size, "batch_size")
    requested = resolve(metrics)
    if not requested:
        raise StoreError("Rescoring needs at least one metric (-m SPEC).")
    context = providers_for(requested, providers)
    refs = [runs] if isinstance(runs, str) else list(runs or [])
    sandbox = any(_read.looks_like_sql(r) for r in refs)  # a query from the user
    with connector.connect(write=False, sandbox=sandbox) as con:
        sources = list(dict.fromkeys(_sources(con, runs)))
    with ExitStack() as stack:
        client = None
        if dask is not None:
            from evalframe import cluster

            client = stack.enter_context(cluster.dask_client(dask))
        return [
            _rescore_one(
                connector,
                source,
                requested,
                keep=keep,
                force=force,
                name=name,
                batch_size=batch_size,
                memory_limit=memory_limit,
                providers=context,
                client=client,
            )
            for source in sources
        ]


def _rescore_one(
    connector: Connector,
    source_id: str,
    requested: list[Metric],
    *,
    keep: bool,
    force: bool,
    name: str | None,
    batch_size: int,
    memory_limit: str | None,
    providers: Providers | None,
    client: Any,
) -> str:
    new_id = uuid.uuid4().hex[:16]
    started = time.time()
    if providers is not None:
        providers.begin_run()  # each rescored run has its own usage, cost and budget
    with (
        scoring_connection(connector, new_id, client, memory_limit) as (con, parts),
        transaction(con),
    ):
        check_run(con, source_id)
        source = query(con, "SELECT * FROM runs WHERE run_id = ?", [source_id]).row(0, named=True)
        score_into_run(
            con,
            new_id,
            source,
            requested,
            started=started,
            keep=keep,
            force=force,
            name=name,
            batch_size=batch_size,
            providers=providers,
            client=client,
            parts=parts,
        )
    return new_id


@contextmanager
def scoring_connection(
    connector: Connector, run_id: str, client: Any, memory_limit: str | None
) -> Iterator[tuple[duckdb.DuckDBPyConnection, Path | None]]:
    """A write connection for scoring run ``run_id``, and the folder of its cluster parts
    (``None`` in-process), removed on exit whatever happened."""
    with connector.connect(write=True) as con:
        # A file store's connection is this operation's own database instance; an
        # in-memory store holds all its data in memory, so a limit there would cap the store.
        if memory_limit is not None and not connector.in_memory:
            execute(con, "SET memory_limit = ?", [memory_limit])
        parts = (
            None
            if client is None
            else parts_folder(connector.path, run_id, in_memory=connector.in_memory)
        )
        try:
            yield con, parts
        except BaseException:
            if not connector.in_memory:
                discard(con, connector.path, run_id)  # moved in, but never committed
            raise
        finally:
            if parts is not None:
                remove_parts(parts)


def score_into_run(
    con: duckdb.DuckDBPyConnection,
    new_id: str,
    source: dict[str, Any],
    requested: list[Metric],
    *,
    started: float,
    keep: bool,
    force: bool,
    name: str | None,
    batch_size: int,
    providers: Providers | None,
    client: Any,
    parts: Path | None,
    record: Mapping[str, Any] | None = None,
) -> None:
    """Score the stored outputs of ``source`` (a ``runs`` row, or the same fields for outputs
    just stored) into run ``new_id``, with its statistics and record; call inside a
    transaction. ``record`` overrides fields of the new run's record."""
    source_metrics = query(
        con, "SELECT * FROM run_metrics WHERE run_id = ? ORDER BY ordinal", [source["run_id"]]
    )
    have = set(source_metrics.get_column("metric").to_list())
    wanted = {m.id for m in requested}
    carried = (
        source_metrics.filter(~pl.col("metric").is_in(list(wanted)))
        if keep
        else source_metrics.clear()
    )
    copied = [m.id for m in requested if m.id in have and not force]
    copied += carried.get_column("metric").to_list()
    computed = [m for m in requested if m.id not in copied]
    insert(con, "run_metrics", metrics_frame(new_id, requested, carried))
    if copied:
        execute(
            con,
            f"INSERT INTO {SCORES_TABLE} BY NAME SELECT * REPLACE (?::VARCHAR AS run_id) "
            "FROM scores WHERE run_id = ? AND list_contains(?::VARCHAR[], metric)",
            [new_id, source["run_id"], copied],
        )
    with tempfile.TemporaryDirectory(prefix="evalframe-rescore-") as tmp:
        stage = _StatsStage(tmp)
        # With nothing copied, each scored chunk holds every metric of its samples,
        # so the statistics come from the chunks; otherwise from a sorted read-back.
        if computed and client is not None and parts is not None:
            _score_on_cluster(
                con,
                client,
                source,
                computed,
                new_id,
                parts=parts,
                batch_size=batch_size,
                providers=providers,
                with_stats=not copied,
            )
        elif computed:
            _score_stream(
                con,
                source,
                computed,
                new_id,
                batch_size=batch_size,
                providers=providers,
                stage=None if copied else stage,
            )
        if copied:
            _sample_stats(con, new_id, stage, batch_size=batch_size)
        stage.insert(con, new_id, source["dataset_hash"])
    finished = time.time()
    _insert_run(
        con,
        source,
        new_id,
        name=name,
        started=started,
        finished=finished,
        copied=copied,
        computed=[m.id for m in computed],
        prompts=_prompts(source, copied, computed),
        usage=providers.usage_frame() if providers is not None else None,
        record=record or {},
    )
    fill_stats(con, new_id)  # after the runs row: the cohort view joins it


def _prompts(
    source: Mapping[str, Any], copied: list[str], computed: list[Metric]
) -> dict[str, list[str]]:
    """The judge prompt keys of the new run's metrics: the source run's for the scores it
    copies, the current ones for those it computes."""
    extra = json.loads(source.get("extra") or "{}")
    kept = extra.get("prompts", {}) if isinstance(extra, dict) else {}
    return {
        **{m: kept[m] for m in copied if m in kept},
        **prompt_keys(computed),
    }


def _baselines(con: duckdb.DuckDBPyConnection, metrics: list[Metric]) -> dict[str, pl.DataFrame]:
    """The stored outputs each ``pairwise(baseline=run:REF)`` reads (loaded once)."""
    from evalframe.metrics.judge_toolbox import RUN_BASELINE, run_baselines

    return {
        b: query(
            con,
            "SELECT sample_id, repetition, actual_output FROM run_outputs WHERE run_id = ?",
            [_read.resolve(con, b[len(RUN_BASELINE) :])],
        )
        for b in run_baselines(metrics)
    }


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
    from evalframe.metrics.judge_toolbox import attach_baseline

    rows = chunk.join(samples, on=C.SAMPLE_ID, how="inner", maintain_order="left")
    frame = with_extra(rows)
    for baseline, stored in baselines.items():
        frame = attach_baseline(frame, baseline, stored)
    return frame


def _score_on_cluster(
    con: duckdb.DuckDBPyConnection,
    client: Any,
    source: dict[str, Any],
    metrics: list[Metric],
    new_id: str,
    *,
    parts: Path,
    batch_size: int,
    providers: Providers | None,
    with_stats: bool,
) -> None:
    """Score the source on the cluster: the workers' scores (and per-sample statistics, with
    ``with_stats``) are registered where they are for a store file's views to read, and
    inserted into an in-memory store's tables."""
    rows = fetch(con, "SELECT count(*) FROM outputs WHERE run_id = ?", [source["outputs_run_id"]])
    if not rows:
        return
    files = score_parts(
        con,
        client,
        outputs_run_id=source["outputs_run_id"],
        dataset_hash=source["dataset_hash"],
        rows=int(rows),
        metrics=metrics,
        run_id=new_id,
        folder=parts,
        batch_size=batch_size,
        providers=providers,
        baselines=_baselines(con, metrics),
        with_stats=with_stats,
    )
    if in_a_file(con):
        register(con, new_id, files)
        return
    for view, written in files.items():
        if written:
            execute(
                con,
                f"INSERT INTO {IN_PLACE[view]} BY NAME SELECT * FROM read_parquet(?)",
                [[str(p.path) for p in written]],
            )


def _score_stream(
    con: duckdb.DuckDBPyConnection,
    source: dict[str, Any],
    metrics: list[Metric],
    new_id: str,
    *,
    batch_size: int,
    providers: Providers | None,
    stage: _StatsStage | None,
) -> None:
    """Stream the source's evaluation frame in whole-sample chunks and score each chunk.

    A ``pairwise(baseline=run:REF)`` metric reads that stored run's outputs (loaded once),
    attached to each chunk as a column.
    """
    baselines = _baselines(con, metrics)
    samples = dataset_rows(con, source["dataset_hash"])
    # Repetitions of one sample must share a chunk; with one repetition every row is a
    # whole sample and the (out-of-core, but not free) sort is skipped.
    order = " ORDER BY o.sample_id, o.repetition" if (source["repetitions"] or 1) > 1 else ""
    statement = outputs_statement(con, source["outputs_run_id"], order)
    reader_con = con.cursor()
    try:
        reader = reader_con.sql(statement, params=[source["outputs_run_id"]]).to_arrow_reader(
            batch_size
        )
        total = fetch(
            con, "SELECT count(*) FROM outputs WHERE run_id = ?", [source["outputs_run_id"]]
        )
        with track("rescoring", int(total or 0), unit="rows") as advance:
            for chunk in whole_samples(reader, batch_size):
                frame = evaluation_chunk(chunk, samples, baselines)
                scores = score(frame, metrics, run_id=new_id, context=providers)
                insert(con, SCORES_TABLE, scores.select(C.SCORES_SCHEMA.names()))
                if stage is not None:
                    stage.add(scores)
                advance(frame.height)
    except duckdb.Error as exc:
        raise store_error("Could not stream the source run's outputs.", statement, exc) from exc
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


def sample_statistics(scores: pl.DataFrame) -> pl.DataFrame:
    """The per-sample statistics of the whole samples in ``scores`` (no row hash yet)."""
    order = scores.select(C.SAMPLE_ID).unique(maintain_order=True)
    return row_aggregates(
        scores, order.with_columns(pl.lit(None, pl.String).alias(C.ROW_HASH))
    ).select(_STAT_COLUMNS)


class _StatsStage:
    """Per-sample statistics, chunk by chunk, staged in a temporary Parquet file."""

    def __init__(self, folder: str) -> None:
        self.path = Path(folder) / "sample_stats.parquet"
        self._writer: Any = None

    def add(self, scores: pl.DataFrame) -> None:
        """Add the statistics of the whole samples in ``scores``."""
        import pyarrow.parquet as pq

        table = sample_statistics(scores).to_arrow()
        if self._writer is None:
            self._writer = pq.ParquetWriter(self.path, table.schema)
        self._writer.write_table(table)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()

    def insert(self, con: duckdb.DuckDBPyConnection, run_id: str, digest: str) -> None:
        """Append the staged rows to ``sample_stats``, with each sample's row hash."""
        self.close()
        if self._writer is None:
            return
        insert_statistics(con, str(self.path), run_id, digest)


def insert_statistics(con: duckdb.DuckDBPyConnection, files: str, run_id: str, digest: str) -> None:
    """Append per-sample statistics from Parquet ``files`` (a path or glob) to ``sample_stats``,
    with each sample's row hash."""
    execute(
        con,
        f"INSERT INTO {SAMPLE_STATS_TABLE} BY NAME "
        "SELECT p.*, ?::VARCHAR AS run_id, d.row_hash FROM read_parquet(?) AS p "
        "JOIN samples AS d ON d.dataset_hash = ? AND d.sample_id = p.sample_id",
        [run_id, files, digest],
    )


def _sample_stats(
    con: duckdb.DuckDBPyConnection, run_id: str, stage: _StatsStage, *, batch_size: int
) -> None:
    """Stage the statistics of the new run's stored scores, read back sorted by sample."""
    statement = (
        "SELECT sample_id, repetition, score, passed, error FROM scores "
        "WHERE run_id = ? ORDER BY sample_id"
    )
    try:
        reader = con.sql(statement, params=[run_id]).to_arrow_reader(batch_size)
        for chunk in whole_samples(reader, batch_size):
            stage.add(chunk)
    except duckdb.Error as exc:
        raise store_error("Could not compute per-sample statistics.", statement, exc) from exc


def _insert_run(
    con: duckdb.DuckDBPyConnection,
    source: dict[str, Any],
    new_id: str,
    *,
    name: str | None,
    started: float,
    finished: float,
    copied: list[str],
    computed: list[str],
    prompts: dict[str, list[str]],
    usage: pl.DataFrame | None,
    record: Mapping[str, Any],
) -> None:
    n, passed, executions, variance = execute(
        con,
        "SELECT coalesce(max(repetitions), 0), coalesce(sum(passed), 0), "
        "coalesce(sum(repetitions), 0), coalesce(avg(pass_rate * (1 - pass_rate)), 0.0) "
        "FROM sample_stats WHERE run_id = ?",
        [new_id],
    )[0]
    precision = precision_from_counts(
        int(n), int(passed), int(executions), float(variance), int(source["n_executions"])
    )
    macro = fetch(con, "SELECT macro_f1 FROM run_macro_f1 WHERE run_id = ?", [new_id])
    failures = fetch(con, "SELECT count(*) FROM failures WHERE run_id = ?", [new_id])
    extra: dict[str, Any] = (
        json.loads(record["extra"])  # a streamed run's own record
        if "extra" in record
        else {
            "rescore": {"source_run_id": source["run_id"], "copied": copied, "computed": computed}
        }
    )
    if prompts:
        extra["prompts"] = prompts
    insert_run_record(
        con,
        {
            **{k: source[k] for k in ("dataset", "dataset_hash", "git_commit", "git_branch")},
            "run_id": new_id,
            # a run name never starts to mean another run: the new one says what it is
            "name": name or f"{source['name']} (rescored)",
            "models": list(source["models"] or []),
            "labels": source["labels"],
            "extra": json.dumps(extra),
            "source_run_id": source["run_id"],
            "outputs_run_id": source["outputs_run_id"],
            "n_samples": source["n_samples"],
            "n_executions": source["n_executions"],
            "repetitions": source["repetitions"],
            "n_failures": int(failures),
            "macro_f1": None if macro is None else float(macro),
            **{k: v for k, v in record.items() if k != "extra"},
        },
        started=started,
        finished=finished,
        precision=precision,
    )
    if usage is not None:
        frame = usage_frame(usage, new_id)
        if frame.height:
            insert(con, "usage", frame)
