"""``Store``: the run history in one DuckDB file."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import duckdb
import polars as pl

from evalframe.core import _seam
from evalframe.core._errors import StoreError
from evalframe.store import _calibrations, _guard, _labels, _read, _schema
from evalframe.store._adversarial import TABLE as ADVERSARIAL_TABLE
from evalframe.store._connect import MEMORY, Connector, execute, fetch
from evalframe.store._files import in_place_views, stale
from evalframe.store._read import Reading
from evalframe.store._sandbox import user_query
from evalframe.store._write import transaction, write_run

if TYPE_CHECKING:
    from evalframe.core._calibration import Calibration
    from evalframe.core._compare import Comparison
    from evalframe.core._dataset import Dataset
    from evalframe.core._run import Run
    from evalframe.core._run_options import Limits
    from evalframe.metrics._registry import MetricFactory
    from evalframe.metrics._spec import Metric
    from evalframe.providers import EmbeddingClient, JudgeClient, Providers
    from evalframe.views.plot import StorePlot

__all__ = ["Store"]


class Store:
    """Every run you save, in one DuckDB file you can query with SQL.

    Writers open the file, write one transaction and close it; readers open it read-only.
    While another process holds the file, operations retry with backoff for ``timeout``
    seconds and then raise ``StoreBusyError`` (retryable). The schema is documented in
    docs/store-schema.md and migrated forward when an older file is opened.

    Args:
        path: a DuckDB file (created on first use) or ``":memory:"``.
        timeout: seconds to wait for another process's lock before giving up.
        threads: DuckDB worker threads (default: one per core).

    Raises:
        StoreError: the file is not an evalframe store, or was written by a newer
            evalframe whose schema this one cannot read.

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records(
        ...     [{"id": "q1", "input": {"q": "2+2?"}, "expected_output": "4"}], name="math")
        >>> from evalframe.store import Store
        >>> store = Store(":memory:")
        >>> run = ef.evaluate(ds, outputs={"q1": "4"}, metrics=["exact-match"], store=store)
        >>> store.sql("SELECT dataset, macro_f1, n_samples FROM runs")
        shape: (1, 3)
        ┌─────────┬──────────┬───────────┐
        │ dataset ┆ macro_f1 ┆ n_samples │
        │ ---     ┆ ---      ┆ ---       │
        │ str     ┆ f64      ┆ i64       │
        ╞═════════╪══════════╪═══════════╡
        │ math    ┆ 1.0      ┆ 1         │
        └─────────┴──────────┴───────────┘
    """

    def __init__(
        self,
        path: str | os.PathLike[str] = MEMORY,
        *,
        timeout: float = 30.0,
        threads: int | None = None,
    ) -> None:
        self._connector = Connector(path, timeout=timeout, threads=threads)
        self.path = self._connector.path
        self._open_schema()

    # --- schema ----------------------------------------------------------------------------

    def _open_schema(self) -> None:
        if self._connector.in_memory:
            with self._connector.connect(write=True) as con, transaction(con):
                _schema.create(con)
                self._stamp(con)
            return
        if self._connector.exists:
            with self._connector.connect(write=False, prepare=False) as con:
                catalog, version = self._checked(con)
                current = version == _schema.SCHEMA_VERSION
                moved = current and stale(con)
                prepare = _guard.preparer(con, catalog) if current else None
            if version is not None and version > _schema.SCHEMA_VERSION:
                raise StoreError(
                    f"The store {self.path} has schema version {version}, written by a newer "
                    f"evalframe; this one reads versions up to {_schema.SCHEMA_VERSION}. "
                    "Upgrade evalframe."
                )
            if prepare is not None:
                self._connector.prepare = prepare
                if moved:
                    self._follow_files()
                return
            if version is not None and not _writable(self.path):
                raise StoreError(
                    f"The store {self.path} has schema version {version} and this evalframe "
                    f"reads version {_schema.SCHEMA_VERSION}: it must be migrated once, which "
                    "writes to it, and it is read-only here. Open it once where it can be "
                    "written (or copy it, with its .runs folder, to a writable place)."
                )
        with self._connector.connect(write=True, prepare=False) as con:
            with transaction(con):
                _, version = self._checked(con)
                if version is None:
                    _schema.create(con)
                elif version < _schema.SCHEMA_VERSION:
                    for v in range(version, _schema.SCHEMA_VERSION):
                        _schema.MIGRATIONS[v](con)
                    _schema.create_views(con)
                self._stamp(con)
            self._connector.prepare = _guard.preparer(con, _guard.inspect(con))

    def _checked(self, con: duckdb.DuckDBPyConnection) -> tuple[_guard.Catalog, int | None]:
        """The file's catalog and schema version, once it passed ``_guard``'s checks."""
        catalog = _guard.inspect(con)
        _guard.refuse_foreign(self.path, catalog)
        version = _guard.schema_version(con, catalog)
        if version == _schema.SCHEMA_VERSION:
            _guard.refuse_foreign(self.path, catalog, [*_schema.TABLES, ADVERSARIAL_TABLE])
        return catalog, version

    def _follow_files(self) -> None:
        """Rewrite the stored views of a moved store for other tools (evalframe reads its
        own views), when the file can be written now; a store on read-only media, or
        busy, is read as it is."""
        if not _writable(self.path):
            return
        quick = Connector(self.path, timeout=0.0, threads=self._connector.threads)
        with suppress(StoreError), quick.connect(write=True) as con, transaction(con):
            in_place_views(con)

    def _stamp(self, con: duckdb.DuckDBPyConnection) -> None:
        execute(
            con,
            "INSERT OR REPLACE INTO meta VALUES ('schema_version', ?), "
            "('duckdb_version', ?), ('evalframe_version', ?)",
            [str(_schema.SCHEMA_VERSION), duckdb.__version__, _evalframe_version()],
        )

    @property
    def schema_version(self) -> int:
        """The schema version of the file (always the current one once opened)."""
        with self._connector.connect(write=False, prepare=False) as con:
            version = _guard.schema_version(con, _guard.inspect(con))
        return version if version is not None else _schema.SCHEMA_VERSION

    # --- writing ---------------------------------------------------------------------------

    def save(self, run: Run) -> str:
        """Write ``run`` in one transaction; returns its run id.

        Raises:
            StoreError: the run is already stored, or the write failed (nothing is kept).
            StoreBusyError: another process held the file for longer than the timeout.
        """
        with self._connector.connect(write=True) as con, transaction(con):
            write_run(con, run)
        return run.run_id

    def save_calibration(self, calibration: Calibration) -> str:
        """Keep a judge calibration; ``runs()`` shows its agreement next to runs of the same
        metric and judge model. Returns its id."""
        with self._connector.connect(write=True) as con, transaction(con):
            return _calibrations.save_calibration(con, calibration)

    def calibrations(self) -> pl.DataFrame:
        """Stored judge calibrations, newest first."""
        with self._connector.connect(write=False) as con:
            return _calibrations.list_calibrations(con)

    def save_labels(self, labels: Sequence[Mapping[str, Any]]) -> list[str]:
        """Add human labels, in one transaction; returns their ids.

        Each label is a mapping with ``run_id``, ``sample_id``, ``metric`` and ``label``
        (``"pass"``, ``"fail"``, a boolean or a score in [0, 1]), and optionally
        ``repetition`` (default 0), ``note`` and ``labeller``. It is kept under the run whose
        outputs it judges, so a rescored run shares its source's labels; the newest label of
        an execution and metric is its current one (the ``run_labels`` view).
        ``calibrate`` and ``estimate`` read them when given no case or label file.

        Raises:
            StoreError: a malformed label, or one naming a run, execution or metric the
                store does not hold (nothing is added).

        Examples:
            >>> import evalframe as ef
            >>> ds = ef.Dataset.from_records(
            ...     [{"id": "q1", "input": {}, "expected_output": "Paris"}], name="geo")
            >>> with ef.Store(":memory:") as store:
            ...     run = ef.evaluate(ds, outputs={"q1": "Lyon"}, metrics=["contains"],
            ...                       store=store)
            ...     _ = store.save_labels([{"run_id": run.run_id, "sample_id": "q1",
            ...                             "metric": "contains", "label": "fail"}])
            ...     store.labels(run.run_id).select("sample_id", "label", "verdict").rows()
            [('q1', 0.0, 'fail')]
        """
        parsed = [_labels.parse_label(x, f"label {i}") for i, x in enumerate(labels)]
        with self._connector.connect(write=True) as con, transaction(con):
            return _labels.save_labels(con, parsed)

    def labels(self, ref: str, *, metric: str | None = None) -> pl.DataFrame:
        """A stored run's current human labels (of every metric, or of ``metric``), in
        dataset order: sample_id, repetition, metric, label, verdict, note, labeller,
        labelled_at, label_id."""
        run_id = self.resolve(ref)
        with self._connector.connect(write=False) as con:
            return _labels.current_labels(con, run_id, metric)

    # --- reading ---------------------------------------------------------------------------

    def sql(
        self, query_text: str, params: Sequence[Any] | Mapping[str, Any] | None = None
    ) -> pl.DataFrame:
        """Run one SELECT query on a read-only connection and return the result as a frame.

        Only a single SELECT (including WITH, FROM-first, VALUES, DESCRIBE, SUMMARIZE and
        SHOW) runs; any other statement, or several, is refused by DuckDB's parser. On a
        store file the query cannot read or write any other file, URL or database, nor
        change a setting (docs/store-schema.md, "What SQL may do").

        Args:
            query_text: the query; tables and views are listed in docs/store-schema.md.
            params: values for ``?`` or ``$name`` placeholders.

        Raises:
            StoreError: the query was refused (one line saying why) or failed.

        Examples:
            >>> import evalframe as ef
            >>> from evalframe.store import Store
            >>> Store(":memory:").sql("SELECT ? AS answer", [42]).item()
            42
        """
        with self._connector.connect(write=False, sandbox=True) as con:
            bound = dict(params) if isinstance(params, Mapping) else params
            return user_query(con, query_text, bound)

    @contextmanager
    def reading(self) -> Iterator[Reading]:
        """Several SELECT queries on one read-only connection: ``with store.reading() as r:
        r.sql(...)``. Each query runs under the rules of ``sql``. The file stays open, and so
        blocks other processes' writes (they wait, up to their timeout), until the block
        ends: keep it short.

        Examples:
            >>> import evalframe as ef
            >>> with ef.Store(":memory:") as store, store.reading() as r:
            ...     r.sql("SELECT count(*) AS n FROM runs").item()
            0
        """
        with self._connector.connect(write=False, sandbox=True) as con:
            yield Reading(con)

    def runs(self, *, dataset: str | None = None, limit: int | None = None) -> pl.DataFrame:
        """Stored runs, newest first: run_id, name, dataset, created_at, macro_f1, n_samples, ..."""
        with self._connector.connect(write=False) as con:
            return _read.list_runs(con, dataset=dataset, limit=limit)

    def resolve(self, ref: str, *, relative_to: str | None = None) -> str:
        """The run id of a reference: an id, a name, ``latest``, ``previous``, a baseline or SQL.

        With ``relative_to``, ``latest``/``previous``/``baseline`` are taken within that
        run's dataset, excluding the run itself.

        Raises:
            StoreError: nothing matches; the message lists the newest runs.
        """
        with self._connector.connect(write=False, sandbox=_read.looks_like_sql(ref)) as con:
            return _read.resolve(con, ref, relative_to=relative_to)

    def load(self, ref: str) -> Run:
        """Rebuild a stored run (dataset, frame, scores, metrics) from a reference."""
        with self._connector.connect(write=False, sandbox=_read.looks_like_sql(ref)) as con:
            return _read.load_run(con, _read.resolve(con, ref))

    # --- comparison and baselines ----------------------------------------------------------

    def outputs_of(self, ref: str) -> pl.DataFrame:
        """A stored run's outputs: ``sample_id``, ``repetition``, ``actual_output`` (a rescored
        run's are its source's).

        Examples:
            >>> import evalframe as ef
            >>> ds = ef.Dataset.from_records(
            ...     [{"id": "q1", "input": {"q": "?"}, "expected_output": "a"}], name="d")
            >>> with ef.Store(":memory:") as store:
            ...     run_id = store.save(ef.evaluate(ds, outputs={"q1": "b"}, metrics=["contains"]))
            ...     store.outputs_of(run_id).rows()
            [('q1', 0, 'b')]
        """
        run_id = self.resolve(ref)
        return self.sql(
            "SELECT sample_id, repetition, actual_output FROM run_outputs WHERE run_id = ? "
            "ORDER BY repetition, sample_id",
            [run_id],
        )

    def compare(self, before: str, after: str, **options: Any) -> Comparison:
        """Compare two stored runs; ``before`` may be relative to ``after`` (``previous``).

        Options are those of ``evalframe.core._compare.compare``.
        """
        from evalframe.core._compare import compare

        with self._connector.connect(write=False, sandbox=_any_sql(before, after)) as con:
            after_id = _read.resolve(con, after)
            before_id = _read.resolve(con, before, relative_to=after_id)
            run_b = _read.load_run(con, after_id)
            run_a = _read.load_run(con, before_id)
        options.setdefault("label", before)
        return compare(run_a, run_b, **options)

    def promote_baseline(self, ref: str, *, name: str | None = None, force: bool = False) -> str:
        """Point the baseline ``name`` (default: the run's dataset name) at a run.

        As eval-harness promotes only a clean run of the baseline's dataset, this refuses a
        run with an errored execution (it is no reference to gate against), and a run of
        another dataset than the one the baseline (or the dataset named ``name``) is of.
        ``force`` promotes it anyway.

        Returns:
            The baseline's name.

        Raises:
            StoreError: the run is refused (the message says why and how to override).
        """
        run_id = self.resolve(ref)  # on a read-only connection: a reference may be SQL
        with self._connector.connect(write=True) as con, transaction(con):
            run_id = _read.resolve(con, run_id)
            dataset = str(fetch(con, "SELECT dataset FROM runs WHERE run_id = ?", [run_id]))
            label = name or dataset
            if not force:
                _promotable(con, run_id, dataset, label)
            execute(
                con,
                "INSERT OR REPLACE INTO baselines VALUES (?, ?, ?, ?)",
                [label, run_id, dataset, dt.datetime.now(dt.UTC).replace(tzinfo=None)],
            )
        return label

    def clear_baseline(self, name: str) -> str:
        """Remove the baseline ``name``; returns the run id it pointed at (the run stays).

        Raises:
            StoreError: there is no baseline of that name (the message lists them).
        """
        with self._connector.connect(write=True) as con, transaction(con):
            rows = execute(con, "SELECT run_id FROM baselines WHERE name = ?", [name])
            if not rows:
                listed = [r[0] for r in execute(con, "SELECT name FROM baselines ORDER BY name")]
                known = f"Baselines: {', '.join(listed)}." if listed else "There is none."
                raise StoreError(f"No baseline named '{name}' to clear. {known}")
            execute(con, "DELETE FROM baselines WHERE name = ?", [name])
        return str(rows[0][0])

    def baselines(self) -> pl.DataFrame:
        """Named baselines: name, run_id, dataset, promoted_at."""
        return self.sql("SELECT * FROM baselines ORDER BY name")

    # --- rescoring and transfer -----------------------------------------------------------

    def rescore(
        self,
        metrics: Sequence[str | Metric | MetricFactory],
        *,
        runs: str | Sequence[str] | None = None,
        keep: bool = False,
        force: bool = False,
        name: str | None = None,
        batch_size: int = 100_000,
        memory_limit: str | None = "2GB",
        providers: Providers | EmbeddingClient | JudgeClient | None = None,
        dask: Any = None,
        limits: Limits | None = None,
    ) -> list[str]:
        """Score stored outputs with new or changed metrics, writing one new run per source.

        The system under test is not called. Each new run points at its source
        (``source_run_id``) and shares its outputs rather than copying them
        (``outputs_run_id``; the ``run_outputs`` view resolves it), and has exactly the
        requested metrics (plus, with ``keep``, the source's other metrics). A metric whose
        canonical id the source run already has is copied, cell by cell, not recomputed
        (unless ``force``). Outputs
        stream from DuckDB in Arrow batches of whole samples, so memory stays bounded
        whatever the run's size.

        Args:
            metrics: spec strings, metric values or factories.
            runs: the source runs: a reference, a list of references, or a SQL query
                returning a ``run_id`` column (default: the latest run).
            keep: also carry over the source's metrics that are not requested.
            force: recompute every metric, even those the source already scored.
            name: the new runs' name (default: ``"<source name> (rescored)"``, so a run
                name never starts to mean another run; ``runs()`` gives each run's lineage).
            batch_size: outputs per scoring batch.
            memory_limit: DuckDB's memory limit while rescoring a file store (None: DuckDB's
                default, 80% of RAM; ignored for in-memory stores). Joins and sorts beyond
                it spill to disk, so the process's peak memory is about this plus a few
                batches (measured in benchmarks/README.md).
            providers: what model-backed metrics ask, as for ``ef.evaluate``: an
                ``ef.Providers`` or a client (default: ``Providers.from_env()``, built only
                when a metric needs one). One set serves the whole call, so every batch and
                every source run share its cache, budget and loaded embedder; each new run
                records its own provider usage.
            dask: score on a Dask cluster: a ``distributed.Client``, a scheduler address
                (``"tcp://host:8786"``) or ``"local:N"`` (N worker processes started and
                stopped here). Workers score Parquet parts written next to the store file
                (``<store>.parts/``, which a remote cluster must reach on a shared
                filesystem), in parts of about ``batch_size`` rows; their scores move to
                ``<store>.runs/``, registered in the rescore's transaction and read in place
                by the ``scores`` view (an in-memory store inserts them). Scores equal the
                in-process ones. Needs the dask extra; see docs/scaling-out.md.
            limits: the budget, deadline, timeout and retries of the providers built from
                the environment (an ``ef.Limits``, as for ``ef.evaluate``; not with
                ``providers``).

        Returns:
            The new run ids, one per source run.

        Examples:
            >>> import evalframe as ef
            >>> ds = ef.Dataset.from_records(
            ...     [{"id": "q1", "input": {}, "expected_output": "Paris"}], name="geo")
            >>> from evalframe.store import Store
            >>> store = Store(":memory:")
            >>> run = ef.evaluate(ds, outputs={"q1": "paris"}, metrics=["exact-match"],
            ...                   store=store)
            >>> new_id, = store.rescore(["rouge-l"], runs=run.run_id)
            >>> store.sql("SELECT metric, score FROM scores WHERE run_id = ?", [new_id]).rows()
            [('rouge-l', 1.0)]
        """
        # Scoring is the engine's: the store only reads and writes (see core/_seam.py).
        return _seam.rescore.call(
            self,
            metrics,
            runs=runs,
            keep=keep,
            force=force,
            name=name,
            batch_size=batch_size,
            memory_limit=memory_limit,
            providers=providers,
            dask=dask,
            limits=limits,
        )

    def score_outputs(
        self,
        dataset: Dataset | str | os.PathLike[str],
        outputs: str | os.PathLike[str],
        metrics: Sequence[str | Metric | MetricFactory] | None = None,
        *,
        repetitions: int | None = None,
        name: str | None = None,
        labels: Mapping[str, str] | None = None,
        batch_size: int = 100_000,
        memory_limit: str | None = "2GB",
        providers: Providers | EmbeddingClient | JudgeClient | None = None,
        dask: Any = None,
        limits: Limits | None = None,
    ) -> str:
        """Score saved outputs larger than memory straight into this store; returns the run id.

        The Parquet ``outputs`` (a file, directory, glob or fsspec URL) are read and stored
        about ``batch_size`` rows at a time, then scored as ``rescore`` scores a stored run:
        streamed back in whole-sample batches (or by a Dask cluster's workers with
        ``dask=``). Peak memory is about the dataset, a few batches of ``batch_size`` rows
        and DuckDB's ``memory_limit``. One transaction: a failure stores nothing. The run
        is the one ``ef.evaluate(..., store=self)`` would save, without holding it in memory;
        read it with SQL or ``load``.

        Args:
            dataset: a ``Dataset`` or a path to one (read whole: the outputs stream).
            outputs: the Parquet outputs.
            metrics: spec strings, metric values or factories (default: the dataset's).
            repetitions: executions per row (default: the dataset's, else 1).
            name, labels: as for ``ef.evaluate``.
            batch_size: rows per read and per scoring batch.
            memory_limit: DuckDB's memory limit meanwhile (as for ``rescore``).
            providers, dask, limits: as for ``rescore``.

        Raises:
            DatasetError: the outputs do not cover the dataset (the messages of
                ``ef.read_outputs`` and ``ef.evaluate``), or a piece is unreadable.

        Examples:
            >>> import pathlib, tempfile
            >>> import polars as pl
            >>> import evalframe as ef
            >>> from evalframe.store import Store
            >>> folder = pathlib.Path(tempfile.mkdtemp())
            >>> pl.DataFrame({"sample_id": ["q1"], "actual_output": ["Paris"]}).write_parquet(
            ...     folder / "part-0.parquet")
            >>> ds = ef.Dataset.from_records(
            ...     [{"id": "q1", "input": {}, "expected_output": "Paris"}], name="geo")
            >>> store = Store(":memory:")
            >>> run_id = store.score_outputs(ds, folder, ["exact-match"], batch_size=1000)
            >>> store.sql("SELECT score FROM scores WHERE run_id = ?", [run_id]).item()
            1.0
        """
        from evalframe.core._dataset import Dataset, read_dataset

        ds = dataset if isinstance(dataset, Dataset) else read_dataset(dataset)
        specs = list(metrics) if metrics is not None else list(ds.metrics)
        reps = repetitions if repetitions is not None else (ds.repetitions or 1)
        return _seam.score_outputs.call(
            self,
            ds,
            os.fspath(outputs),
            specs,
            repetitions=reps,
            name=name,
            labels=labels,
            batch_size=batch_size,
            memory_limit=memory_limit,
            providers=providers,
            dask=dask,
            limits=limits,
        )

    def export(self, runs: str | Sequence[str], to: str | os.PathLike[str]) -> Path:
        """Write runs (references) and their rows as Parquet files in directory ``to``."""
        from evalframe.store._transfer import export_runs

        return export_runs(self._connector, [runs] if isinstance(runs, str) else list(runs), to)

    def import_runs(self, source: str | os.PathLike[str]) -> list[str]:
        """Add the runs of an export directory; returns the ids added (present ones skip)."""
        from evalframe.store._transfer import import_runs

        return import_runs(self._connector, source)

    # --- lifetime --------------------------------------------------------------------------

    def close(self) -> None:
        """Release an in-memory store's database (file stores hold nothing open)."""
        self._connector.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({self.path!r})"

    # --- presentation ----------------------------------------------------------------------

    @property
    def plot(self) -> StorePlot:
        """Charts across stored runs: ``store.plot.trend(metric=...)`` (``viz`` extra)."""
        return _seam.store_plot.call(self)

    def _repr_html_(self) -> str:
        return _seam.runs_html.call(self.runs(limit=50), title=f"Stored runs in {self.path}")

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self) if cycle else f"{self!r}\n{self.runs(limit=20)}")


def _writable(path: str) -> bool:
    """Whether this process may write the store file and create files beside it (the
    write-ahead log); false on read-only media."""
    folder = os.path.dirname(os.path.abspath(path))
    return os.access(path, os.W_OK) and os.access(folder, os.W_OK | os.X_OK)


def _promotable(con: duckdb.DuckDBPyConnection, run_id: str, dataset: str, label: str) -> None:
    """Raise ``StoreError`` when run ``run_id`` must not become baseline ``label``."""
    executions, errored = execute(
        con, "SELECT executions, errored_executions FROM run_status WHERE run_id = ?", [run_id]
    )[0]
    if errored:
        raise StoreError(
            f"Refusing to promote run {run_id} to baseline '{label}': {errored} of {executions} "
            "executions errored, so it is no reference to gate against (only a clean run is "
            "promoted, as eval-harness does). Fix the run, or pass --force (force=True) to "
            "promote it anyway."
        )
    current = execute(con, "SELECT run_id, dataset FROM baselines WHERE name = ?", [label])
    other = current[0][1] if current and current[0][1] != dataset else None
    if other is None and label != dataset:
        named = execute(con, "SELECT 1 FROM runs WHERE dataset = ? LIMIT 1", [label])
        other = label if named else None
    if other is not None:
        held = f" (it points at run {current[0][0]})" if current else ""
        raise StoreError(
            f"Refusing to point baseline '{label}' at run {run_id} of dataset '{dataset}': "
            f"the baseline is of dataset '{other}'{held}, and a baseline is compared row by "
            "row with runs of its own dataset. Promote it under another --name, clear this "
            f"one (evalframe baseline clear {label}), or pass --force (force=True)."
        )


def _any_sql(*refs: str) -> bool:
    """Whether a reference is a query, which must run on a sandboxed connection."""
    return any(_read.looks_like_sql(r) for r in refs)


def _evalframe_version() -> str:
    from evalframe._version import __version__

    return __version__


def as_store(store: Store | str | os.PathLike[str]) -> Store:
    """A ``Store`` from a store or a path."""
    return store if isinstance(store, Store) else Store(store)
