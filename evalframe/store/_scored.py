"""Writing a scored run: the one writer's connection, and what it appends and registers.

A rescore (and a streamed run, scored as a rescore scores a stored run) writes its new run in
one transaction on one write connection (``scoring_connection``): the run's metrics, the
scores the source already had (same canonical id) copied in SQL, never recomputed
(``carry_metrics``); the computed scores appended chunk by chunk (``append_scores``) or, from
a cluster, its workers' part files registered where they are (``add_parts``); per-sample
statistics, chunk by chunk from the scored chunks when every metric was computed, else from
the new run's scores read back sorted by sample (DuckDB sorts out of core), staged in a
temporary Parquet file (``StatsStage``); and last its ``runs`` row (``insert_scored_run``).
The new run shares the source's outputs (``outputs_run_id``) instead of copying them. A
crash leaves no partial run. Which metrics are computed, and how, is the engine's.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import duckdb
import polars as pl

from evalframe.core import schema as C
from evalframe.core._precision import precision_from_counts, row_aggregates
from evalframe.store._chunks import whole_samples
from evalframe.store._connect import execute, fetch, query, store_error
from evalframe.store._files import (
    IN_PLACE,
    SAMPLE_STATS_TABLE,
    SCORES_TABLE,
    Part,
    check_run,
    discard,
    in_a_file,
    register,
)
from evalframe.store._schema import fill_stats
from evalframe.store._write import insert, insert_run_record, metrics_frame, usage_frame

if TYPE_CHECKING:
    from evalframe.metrics._spec import Metric
    from evalframe.store._store import Store

__all__ = [
    "PARTS_SUFFIX",
    "StatsStage",
    "add_parts",
    "append_scores",
    "carry_metrics",
    "insert_scored_run",
    "parts_folder",
    "remove_parts",
    "sample_statistics",
    "scoring_connection",
    "source_row",
    "stage_stored_statistics",
]

PARTS_SUFFIX: Final = ".parts"

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


def parts_folder(store_path: str, run_id: str, *, in_memory: bool) -> Path:
    """Where a cluster's parts for run ``run_id`` live: beside a file store, in a temporary
    folder otherwise."""
    root = (
        Path(tempfile.gettempdir()) / "evalframe-parts"
        if in_memory
        else Path(store_path).with_name(Path(store_path).name + PARTS_SUFFIX)
    )
    return root / run_id


def remove_parts(folder: Path) -> None:
    """Remove a run's parts folder (and the root when it is left empty)."""
    shutil.rmtree(folder, ignore_errors=True)
    with contextlib.suppress(OSError):  # other runs' parts are still there
        folder.parent.rmdir()


@contextmanager
def scoring_connection(
    store: Store, run_id: str, *, on_cluster: bool, memory_limit: str | None
) -> Iterator[tuple[duckdb.DuckDBPyConnection, Path | None]]:
    """A write connection for scoring run ``run_id``, and the folder of its cluster parts
    (``None`` unless ``on_cluster``), removed on exit whatever happened."""
    connector = store._connector
    with connector.connect(write=True) as con:
        # A file store's connection is this operation's own database instance; an
        # in-memory store holds all its data in memory, so a limit there would cap the store.
        if memory_limit is not None and not connector.in_memory:
            execute(con, "SET memory_limit = ?", [memory_limit])
        parts = (
            parts_folder(connector.path, run_id, in_memory=connector.in_memory)
            if on_cluster
            else None
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


def source_row(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, Any]:
    """Run ``run_id``'s ``runs`` row, once its part files are checked."""
    check_run(con, run_id)
    return query(con, "SELECT * FROM runs WHERE run_id = ?", [run_id]).row(0, named=True)


def carry_metrics(
    con: duckdb.DuckDBPyConnection,
    new_id: str,
    source_id: str,
    requested: Sequence[Metric],
    *,
    keep: bool,
    force: bool,
) -> tuple[list[str], list[Metric]]:
    """Record run ``new_id``'s metrics and copy, in SQL, the scores of source run
    ``source_id`` it keeps: the requested metrics the source has (unless ``force``), and
    with ``keep`` the source's other metrics. Returns the copied metric ids and the
    requested metrics left to compute."""
    source_metrics = query(
        con, "SELECT * FROM run_metrics WHERE run_id = ? ORDER BY ordinal", [source_id]
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
    insert(con, "run_metrics", metrics_frame(new_id, list(requested), carried))
    if copied:
        execute(
            con,
            f"INSERT INTO {SCORES_TABLE} BY NAME SELECT * REPLACE (?::VARCHAR AS run_id) "
            "FROM scores WHERE run_id = ? AND list_contains(?::VARCHAR[], metric)",
            [new_id, source_id, copied],
        )
    return copied, [m for m in requested if m.id not in copied]


def append_scores(con: duckdb.DuckDBPyConnection, scores: pl.DataFrame) -> None:
    """Append long scores to the store's scores."""
    insert(con, SCORES_TABLE, scores.select(C.SCORES_SCHEMA.names()))


def add_parts(
    con: duckdb.DuckDBPyConnection, run_id: str, files: Mapping[str, Sequence[Part]]
) -> None:
    """Add run ``run_id``'s part files (per view): registered where they are for a store
    file's views to read, inserted into an in-memory store's tables."""
    if in_a_file(con):
        register(con, run_id, files)
        return
    for view, written in files.items():
        if written:
            execute(
                con,
                f"INSERT INTO {IN_PLACE[view]} BY NAME SELECT * FROM read_parquet(?)",
                [[str(p.path) for p in written]],
            )


def sample_statistics(scores: pl.DataFrame) -> pl.DataFrame:
    """The per-sample statistics of the whole samples in ``scores`` (no row hash yet)."""
    order = scores.select(C.SAMPLE_ID).unique(maintain_order=True)
    return row_aggregates(
        scores, order.with_columns(pl.lit(None, pl.String).alias(C.ROW_HASH))
    ).select(_STAT_COLUMNS)


class StatsStage:
    """Per-sample statistics, chunk by chunk, staged in a temporary Parquet file (removed
    on exit)."""

    def __init__(self) -> None:
        self._folder = tempfile.TemporaryDirectory(prefix="evalframe-rescore-")
        self.path = Path(self._folder.name) / "sample_stats.parquet"
        self._writer: Any = None

    def __enter__(self) -> StatsStage:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
        self._folder.cleanup()

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
        execute(
            con,
            f"INSERT INTO {SAMPLE_STATS_TABLE} BY NAME "
            "SELECT p.*, ?::VARCHAR AS run_id, d.row_hash FROM read_parquet(?) AS p "
            "JOIN samples AS d ON d.dataset_hash = ? AND d.sample_id = p.sample_id",
            [run_id, str(self.path), digest],
        )


def stage_stored_statistics(
    con: duckdb.DuckDBPyConnection, run_id: str, stage: StatsStage, *, batch_size: int
) -> None:
    """Stage the statistics of run ``run_id``'s stored scores, read back sorted by sample."""
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


def insert_scored_run(
    con: duckdb.DuckDBPyConnection,
    source: Mapping[str, Any],
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
    """Write run ``new_id``'s ``runs`` row (its statistics from its ``sample_stats``), its
    provider usage and its materialized statistics. ``record`` overrides fields of a
    rescore's record (a streamed run's own ``extra``, say)."""
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
    fill_stats(con, new_id)  # after the runs row: the cohort view joins it
