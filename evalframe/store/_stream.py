"""Scoring saved outputs larger than memory straight into the store.

The outputs (Parquet: a file, directory, glob or URL) are read piece by piece, about
``batch_size`` rows at a time, checked as ``read_outputs`` checks a file, and appended to the
store's ``outputs`` table; coverage of the dataset (no sample missing, no unknown or repeated
id) is checked in SQL over what was stored. The run is then scored as a rescore scores a
stored run: streamed back from DuckDB in whole-sample chunks (or on a Dask cluster), its
scores and statistics appended chunk by chunk, and its ``runs`` row written, in one
transaction. The peak memory is about the dataset, a few pieces of ``batch_size`` rows and
DuckDB's memory limit.

The outputs are committed a row group's worth (122,880 rows) at a time, each commit followed
by a checkpoint: DuckDB keeps a transaction's uncommitted rows in its temporary files until
the commit, so one transaction over all the outputs would need their whole uncompressed size
in temporary disk space; smaller commits make each checkpoint rewrite the unfinished row
group; and without the checkpoints the temporary files grow with the table. Until the run's row
is written, a ``meta`` entry (``streaming:<run id>``) lists what it stored; a failure removes
it at once, and what a killed process left is removed by the next streamed run (the rows are
invisible to every view meanwhile: no ``runs`` row names them).
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any, Final

import duckdb
import polars as pl

from evalframe import cluster
from evalframe.core import schema as C
from evalframe.core._errors import DatasetError
from evalframe.core._limits import checked
from evalframe.core._outputs import MAX_LISTED_IDS, coverage_problem, duplicate_output
from evalframe.enrich import providers_for
from evalframe.store._connect import Connector, execute, fetch, query
from evalframe.store._rescore import score_into_run, scoring_connection
from evalframe.store._write import git_info, insert_outputs, insert_samples, transaction

if TYPE_CHECKING:
    from evalframe.core._dataset import Dataset
    from evalframe.metrics._registry import MetricFactory
    from evalframe.metrics._spec import Metric
    from evalframe.providers import Providers

__all__ = ["score_outputs"]

_PENDING: Final = "streaming:"
_ROW_GROUP: Final = 122_880  # DuckDB's rows per row group


def score_outputs(
    connector: Connector,
    dataset: Dataset,
    outputs: str,
    metrics: Sequence[str | Metric | MetricFactory],
    *,
    repetitions: int,
    name: str | None,
    labels: Mapping[str, str] | None,
    batch_size: int,
    memory_limit: str | None,
    providers: Any,
    dask: Any,
) -> str:
    """Score Parquet ``outputs`` of ``dataset`` into a new stored run; returns its id."""
    from evalframe.metrics._registry import resolve

    checked(batch_size, "batch_size")
    checked(repetitions, "repetitions")
    requested = resolve(metrics)
    context = providers_for(requested, providers)
    pieces = cluster.parquet_pieces(outputs, rows_per_piece=batch_size)
    run_id = uuid.uuid4().hex[:16]
    started = time.time()
    if context is not None:
        context.begin_run()
    with ExitStack() as stack:
        client = stack.enter_context(cluster.dask_client(dask)) if dask is not None else None
        with scoring_connection(connector, run_id, client, memory_limit) as (con, parts):
            with transaction(con):
                _remove_interrupted(con)
                digest, new_samples = insert_samples(con, dataset)
                pending = {"run_id": run_id, "dataset_hash": digest, "new_samples": new_samples}
                execute(
                    con, "INSERT INTO meta VALUES (?, ?)", [_PENDING + run_id, json.dumps(pending)]
                )
            try:
                source = _store_outputs(
                    con, dataset, digest, pieces, outputs, run_id, repetitions, name, labels
                )
                with transaction(con):
                    score_into_run(
                        con,
                        run_id,
                        source,
                        requested,
                        started=started,
                        keep=False,
                        force=True,
                        name=source["name"],
                        batch_size=batch_size,
                        providers=context,
                        client=client,
                        parts=parts,
                        record=_record(source, repetitions, batch_size, context),
                    )
                    execute(con, "DELETE FROM meta WHERE key = ?", [_PENDING + run_id])
            except BaseException:
                with transaction(con):
                    _remove_interrupted(con)
                raise
    return run_id


def _remove_interrupted(con: duckdb.DuckDBPyConnection) -> None:
    """Remove what streamed runs that did not finish stored (their outputs, trajectories,
    and the samples they added that no run uses), as listed in ``meta``."""
    for key, value in execute(
        con, "SELECT key, value FROM meta WHERE starts_with(key, ?)", [_PENDING]
    ):
        pending = json.loads(value)
        for table in ("outputs", "trajectories"):
            execute(con, f"DELETE FROM {table} WHERE run_id = ?", [pending["run_id"]])
        if pending["new_samples"]:
            execute(
                con,
                "DELETE FROM samples WHERE dataset_hash = $h "
                "AND NOT EXISTS (SELECT 1 FROM runs WHERE dataset_hash = $h)",
                {"h": pending["dataset_hash"]},
            )
        execute(con, "DELETE FROM meta WHERE key = ?", [key])


def _store_outputs(
    con: duckdb.DuckDBPyConnection,
    dataset: Dataset,
    digest: str,
    pieces: list[cluster.Piece],
    source: str,
    run_id: str,
    repetitions: int,
    name: str | None,
    labels: Mapping[str, str] | None,
) -> dict[str, Any]:
    """Append every piece's outputs, a transaction per row group's worth, and check
    coverage; returns the run's source fields."""
    for group in _commit_groups(pieces, repetitions):
        with transaction(con):
            for piece in group:
                part = cluster.load_outputs(piece)
                for r in range(repetitions):
                    rows = part.with_columns(pl.lit(r, pl.Int64).alias(C.REPETITION))
                    insert_outputs(con, rows, run_id)
        # Without it DuckDB's temporary files grew with the table (19 GB with 11 GB stored);
        # an optimization only, so a checkpoint refused (another transaction) is let be.
        with contextlib.suppress(duckdb.Error):
            con.execute("CHECKPOINT").fetchall()
    _check_coverage(con, dataset.name, digest, run_id, source)
    commit, branch = git_info()
    return {
        "run_id": run_id,
        "name": name or dataset.name,
        "dataset": dataset.name,
        "dataset_hash": digest,
        "git_commit": commit,
        "git_branch": branch,
        "models": [],
        "labels": json.dumps(dict(labels or {}), ensure_ascii=False, default=str),
        "outputs_run_id": run_id,
        "n_samples": dataset.height,
        "n_executions": dataset.height * repetitions,
        "repetitions": repetitions,
    }


def _commit_groups(
    pieces: Sequence[cluster.Piece], repetitions: int
) -> Iterator[list[cluster.Piece]]:
    """Consecutive pieces holding at least one DuckDB row group of outputs each (the last may
    hold fewer). Committing less would make every checkpoint rewrite the table's unfinished
    row group: 12 GB of 30,000-character outputs committed 10,000 rows at a time wrote 71 GB
    and took 397 s; a row group at a time and a checkpoint after each, 38 GB and 220 s."""
    group: list[cluster.Piece] = []
    rows = 0
    for piece in pieces:
        group.append(piece)
        rows += piece.rows * repetitions
        if rows >= _ROW_GROUP:
            yield group
            group, rows = [], 0
    if group:
        yield group


def _check_coverage(
    con: duckdb.DuckDBPyConnection, name: str, digest: str, run_id: str, source: str
) -> None:
    """Each dataset sample has exactly one output, and no output names an unknown sample."""
    repeated = query(
        con,
        "SELECT sample_id FROM outputs WHERE run_id = ? AND repetition = 0 "
        "GROUP BY sample_id HAVING count(*) > 1 LIMIT 1",
        [run_id],
    )
    if repeated.height:
        raise duplicate_output(source, repeated.item())
    missing = _ids(
        con,
        "FROM samples AS s WHERE s.dataset_hash = ? AND NOT EXISTS (SELECT 1 FROM outputs AS o "
        "WHERE o.run_id = ? AND o.repetition = 0 AND o.sample_id = s.sample_id)",
        [digest, run_id],
        order="s.ordinal",
        column="s.sample_id",
    )
    unknown = _ids(
        con,
        "FROM outputs AS o WHERE o.run_id = ? AND o.repetition = 0 AND NOT EXISTS (SELECT 1 "
        "FROM samples AS s WHERE s.dataset_hash = ? AND s.sample_id = o.sample_id)",
        [run_id, digest],
        order="o.sample_id",
        column="o.sample_id",
    )
    problem = coverage_problem(name, missing[0], missing[1], unknown[0], unknown[1])
    if problem:
        raise DatasetError(problem)


def _ids(
    con: duckdb.DuckDBPyConnection, body: str, params: list[Any], *, order: str, column: str
) -> tuple[list[str], int]:
    """The first ids (in ``order``) a query body selects, and how many it selects."""
    total = int(fetch(con, f"SELECT count(*) {body}", params))
    if not total:
        return [], 0
    first = query(
        con, f"SELECT {column} AS id {body} ORDER BY {order} LIMIT {MAX_LISTED_IDS}", params
    )
    return [str(v) for v in first.get_column("id").to_list()], total


def _record(
    source: Mapping[str, Any], repetitions: int, batch_size: int, providers: Providers | None
) -> dict[str, Any]:
    """The fields of a streamed run's record that differ from a rescore's."""
    extra: dict[str, Any] = {"outputs": "saved", "streamed": {"batch_size": batch_size}}
    if providers is not None:
        extra["cost"] = providers.cost_summary()
    return {
        "source_run_id": None,
        "extra": json.dumps(extra, ensure_ascii=False, default=str),
        "labels": source["labels"],
    }
