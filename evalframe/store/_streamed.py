"""Saved outputs larger than memory, appended to the store ahead of their scoring.

The outputs are appended a DuckDB row group's worth (122,880 rows) at a time, each commit
followed by a checkpoint: DuckDB keeps a transaction's uncommitted rows in its temporary
files until the commit, so one transaction over all the outputs would need their whole
uncompressed size in temporary disk space; smaller commits make each checkpoint rewrite the
unfinished row group; and without the checkpoints the temporary files grow with the table.
Coverage of the dataset (no sample missing, no unknown or repeated id) is checked in SQL
over what was stored. Until the run's row is written, a ``meta`` entry
(``streaming:<run id>``) lists what it stored; a failure removes it at once, and what a
killed process left is removed by the next streamed run (the rows are invisible to every
view meanwhile: no ``runs`` row names them). Reading and scoring the outputs is the engine's.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar

import duckdb
import polars as pl

from evalframe.core import schema as C
from evalframe.core._errors import DatasetError
from evalframe.core._outputs import MAX_LISTED_IDS, coverage_problem, duplicate_output
from evalframe.store._connect import execute, fetch, query
from evalframe.store._write import git_info, insert_outputs, insert_samples, transaction

if TYPE_CHECKING:
    from evalframe.core._dataset import Dataset

__all__ = [
    "ROW_GROUP",
    "abandon",
    "append_outputs",
    "begin",
    "commit_groups",
    "finish",
    "stored_source",
]

_PENDING: Final = "streaming:"
ROW_GROUP: Final = 122_880  # DuckDB's rows per row group


class _Counted(Protocol):
    @property
    def rows(self) -> int: ...


_P = TypeVar("_P", bound=_Counted)


def begin(con: duckdb.DuckDBPyConnection, dataset: Dataset, run_id: str) -> str:
    """Start streamed run ``run_id``: remove what interrupted ones left, store the dataset's
    samples and mark the run pending; returns the dataset hash."""
    with transaction(con):
        _remove_interrupted(con)
        digest, new_samples = insert_samples(con, dataset)
        pending = {"run_id": run_id, "dataset_hash": digest, "new_samples": new_samples}
        execute(con, "INSERT INTO meta VALUES (?, ?)", [_PENDING + run_id, json.dumps(pending)])
    return digest


def finish(con: duckdb.DuckDBPyConnection, run_id: str) -> None:
    """Run ``run_id`` is stored: no longer pending (in the transaction writing its row)."""
    execute(con, "DELETE FROM meta WHERE key = ?", [_PENDING + run_id])


def abandon(con: duckdb.DuckDBPyConnection) -> None:
    """Remove what streamed runs that did not finish stored, this one's included."""
    with transaction(con):
        _remove_interrupted(con)


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


def commit_groups(pieces: Sequence[_P], repetitions: int) -> Iterator[list[_P]]:
    """Consecutive pieces holding at least one DuckDB row group of outputs each (the last may
    hold fewer). Committing less would make every checkpoint rewrite the table's unfinished
    row group: 12 GB of 30,000-character outputs committed 10,000 rows at a time wrote 71 GB
    and took 397 s; a row group at a time and a checkpoint after each, 38 GB and 220 s."""
    group: list[_P] = []
    rows = 0
    for piece in pieces:
        group.append(piece)
        rows += piece.rows * repetitions
        if rows >= ROW_GROUP:
            yield group
            group, rows = [], 0
    if group:
        yield group


def append_outputs(
    con: duckdb.DuckDBPyConnection, parts: Iterable[pl.DataFrame], run_id: str, repetitions: int
) -> None:
    """Append one commit group's outputs (each part once per repetition) in one transaction,
    then checkpoint."""
    with transaction(con):
        for part in parts:
            for r in range(repetitions):
                rows = part.with_columns(pl.lit(r, pl.Int64).alias(C.REPETITION))
                insert_outputs(con, rows, run_id)
    # Without it DuckDB's temporary files grew with the table (19 GB with 11 GB stored);
    # an optimization only, so a checkpoint refused (another transaction) is let be.
    with contextlib.suppress(duckdb.Error):
        con.execute("CHECKPOINT").fetchall()


def stored_source(
    con: duckdb.DuckDBPyConnection,
    dataset: Dataset,
    digest: str,
    run_id: str,
    *,
    outputs: str,
    repetitions: int,
    name: str | None,
    labels: Mapping[str, str] | None,
) -> dict[str, Any]:
    """Check that the stored outputs cover the dataset; returns the run's source fields (as
    a ``runs`` row has them) for its scoring."""
    _check_coverage(con, dataset.name, digest, run_id, outputs)
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
