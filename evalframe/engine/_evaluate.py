"""``evaluate``: dataset + outputs (or a system under test) + metrics -> a ``Run``."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any, Final

import polars as pl

from evalframe.core import schema as C
from evalframe.core._dataset import Dataset, read_dataset
from evalframe.core._errors import MetricError, StoreError, StrictModeError
from evalframe.core._limits import MAX_REPETITIONS, checked
from evalframe.core._outputs import align_outputs, attach_baseline
from evalframe.core._progress import showing
from evalframe.core._rate import RateLimit
from evalframe.core._run import Run
from evalframe.core._run_options import Checkpoint, Concurrency, Limits, concurrency_of, grouped
from evalframe.core._system import System, call_system
from evalframe.engine._outputs import as_outputs
from evalframe.enrich import providers_for, score
from evalframe.metrics._judge_engine import prompt_keys
from evalframe.metrics._registry import MetricFactory, resolve
from evalframe.metrics._spec import Metric
from evalframe.providers import EmbeddingClient, JudgeClient, Providers

if TYPE_CHECKING:
    from evalframe.store import Store

__all__ = ["MAX_REPETITIONS", "evaluate"]

MetricLike = str | Metric | MetricFactory


def _as_dataset(dataset: Dataset | str | os.PathLike[str] | pl.DataFrame) -> Dataset:
    if isinstance(dataset, Dataset):
        return dataset
    if isinstance(dataset, pl.DataFrame):
        return Dataset.from_frame(dataset, name="dataset")
    return read_dataset(dataset)


STRICT_ENV: Final = "EVALFRAME_STRICT"
_ON: Final = ("1", "true", "yes", "on")
_OFF: Final = ("", "0", "false", "no", "off")


def strict_from_env(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``EVALFRAME_STRICT`` turns strict mode on.

    Raises:
        ValueError: a value that is not one of ``1/0``, ``true/false``, ``yes/no``,
            ``on/off`` (any case), naming the variable.

    Examples:
        >>> strict_from_env({"EVALFRAME_STRICT": "True"}), strict_from_env({})
        (True, False)
    """
    value = (os.environ if environ is None else environ).get(STRICT_ENV, "").strip().lower()
    if value in _ON:
        return True
    if value in _OFF:
        return False
    raise ValueError(
        f"${STRICT_ENV} must be 1 or 0 (or true/false, yes/no, on/off) to turn strict mode "
        f"on or off; got {value!r}."
    )


def evaluate(
    dataset: Dataset | str | os.PathLike[str] | pl.DataFrame,
    *,
    outputs: str | os.PathLike[str] | pl.DataFrame | Mapping[str, str] | None = None,
    system: System | None = None,
    metrics: Sequence[MetricLike] | None = None,
    repetitions: int | None = None,
    concurrency: int | Concurrency = 8,
    progress: bool | None = None,
    name: str | None = None,
    labels: Mapping[str, str] | None = None,
    providers: Providers | EmbeddingClient | JudgeClient | None = None,
    run_id: str | None = None,
    store: Store | str | os.PathLike[str] | None = None,
    checkpoint_every: int | None = None,
    resume: str | None = None,
    strict: bool | None = None,
    rate_limit: int | None = None,
    rate_window_seconds: float | None = None,
    baselines_from: Store | str | os.PathLike[str] | None = None,
    dask: Any = None,
    checkpoint: Checkpoint | None = None,
    limits: Limits | None = None,
) -> Run:
    """Score a dataset's outputs, or a system under test, with metrics.

    Args:
        dataset: a ``Dataset``, a path to one, or a frame with the canonical columns.
        outputs: saved outputs: a path (a file; or a directory, glob or fsspec URL of
            Parquet files), a frame (sample_id, actual_output) or a mapping of sample id to
            output. Exclusive with ``system``.
        system: a callable receiving a sample's ``input`` map and returning a string.
        metrics: spec strings, metric values or factories; defaults to the dataset's
            ``metrics:`` list.
        repetitions: executions per row (default: the dataset's ``repetitions``, else 1),
            from 1 to ``MAX_REPETITIONS`` (1000).
        concurrency: system calls in flight at once (default 8), or an ``ef.Concurrency``
            with the rate limit too (then without ``rate_limit`` and
            ``rate_window_seconds``, its shortcuts).
        progress: show the progress of long work (system calls, embedding, judge calls,
            scoring) on stderr: default when stderr is a terminal or in Jupyter, and not
            quiet; ``False`` never, ``True`` always.
        name: the run's name (default: the dataset name).
        labels: free-form labels stored with the run.
        providers: embeddings/judge providers for model-backed metrics (default: built
            from the environment when a metric needs one).
        limits: the budget, deadline, timeout and retries of the providers built from the
            environment (an ``ef.Limits``; with ``providers=``, set them there instead).
        run_id: the run's id (default: a random 16-hex-digit id).
        store: a ``Store`` or DuckDB file path to save the run to (in one transaction).
            If saving fails, the ``StoreError`` carries the run as ``error.run``, so it
            can be saved again (``error.run.save(store)``).
        checkpoint: with a system and a store, checkpoint the run (an ``ef.Checkpoint``:
            how often, and which interrupted run to resume); ``checkpoint_every`` and
            ``resume`` are its shortcuts.
        checkpoint_every: with a system and a store, write every N completed executions
            to the store as they finish, so an interrupted run can be resumed.
        resume: the id of an interrupted checkpointed run: call the system only for the
            executions its checkpoints lack, and save the run under that id.
        rate_limit: at most this many calls start in any ``rate_window_seconds`` window, the
            system under test's and the providers' together (each HTTP attempt counts). It
            becomes the providers' rate limit: a ``Providers`` passed in keeps it for later
            runs. Without it, the providers' own ``rate_limit`` (if any) spans the run.
        rate_window_seconds: the sliding window of ``rate_limit``, in seconds (default 60).
        baselines_from: the store whose runs ``pairwise(baseline=run:REF)`` compares with
            (default: ``store``).
        dask: score on a Dask cluster: a ``distributed.Client``, a scheduler address
            (``"tcp://host:8786"``) or ``"local:N"`` (N worker processes started and stopped
            here). Parquet ``outputs`` (a file, directory, glob or fsspec URL) are read by the
            workers piece by piece; the scores equal the in-process ones row for row. Needs
            ``outputs=`` and the dask extra; see docs/scaling-out.md.
        strict: abort on the first captured error (a system under test's, then a metric's,
            in dataset order) with ``StrictModeError`` instead of recording it; nothing is
            saved. Default: the ``EVALFRAME_STRICT`` environment variable (``1``, ``true``,
            ``yes`` or ``on`` turn it on; ``0``, ``false``, ``no``, ``off`` or unset leave it
            off), as eval-harness's ``EVAL_HARNESS_RAISE_EXCEPTIONS``.

    Returns:
        The ``Run``. A metric that cannot score a row records that row's error; a failure
        of the system under test on a row becomes that row's error for every metric.

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records(
        ...     [{"id": "q1", "input": {"question": "Capital of France?"},
        ...       "expected_output": "Paris"}], name="geo")
        >>> run = ef.evaluate(ds, outputs={"q1": "Paris"}, metrics=["exact-match"])
        >>> run.macro_f1
        1.0
    """
    if strict is None:
        strict = strict_from_env()
    ds = _as_dataset(dataset)
    specs = list(metrics) if metrics is not None else list(ds.metrics)
    if not specs:
        raise MetricError(
            f"No metrics for dataset '{ds.name}': pass metrics=[...] (or -m on the CLI), "
            "or list them under 'metrics:' in the dataset file."
        )
    resolved = resolve(specs)
    reps = repetitions if repetitions is not None else (ds.repetitions or 1)
    source = "repetitions" if repetitions is not None else f"Dataset '{ds.name}' repetitions"
    checked(reps, "repetitions", source)
    pace = concurrency_of(concurrency, rate_limit, rate_window_seconds)
    plan: Checkpoint | None = None
    if checkpoint is not None or checkpoint_every is not None or resume is not None:
        plan = grouped(
            Checkpoint, checkpoint, "checkpoint", checkpoint_every=checkpoint_every, resume=resume
        )
    if (outputs is None) == (system is None):
        raise ValueError("Pass exactly one of outputs= (saved outputs) or system= (a callable).")
    if dask is not None and system is not None:
        raise ValueError(
            "dask= scores saved outputs on a cluster; a system under test is called in-process "
            "(pass outputs=, or drop dask=)."
        )
    # a missing judge fails before any work
    context = providers_for(resolved, providers, limits=limits)
    rate = context.ledger.rate if context is not None else None
    if pace.rate_limit is not None:
        rate = RateLimit(pace.rate_limit, pace.rate_window_seconds)
        if context is not None:
            context.ledger.rate = rate  # one window for the system's calls and the providers'
    started = time.time()
    base = ds.select(C.DATASET_SCHEMA.names())
    if plan is not None and (system is None or store is None):
        raise ValueError("checkpoint=, checkpoint_every= and resume= need system= and store=.")
    resume = plan.resume if plan is not None else None
    run_id = resume or run_id or uuid.uuid4().hex[:16]
    with ExitStack() as held:  # a checkpointed run holds its lock until it is saved
        with showing(progress):  # every progress display of the evaluation
            produced: pl.DataFrame | None
            if system is not None and plan is not None:
                from evalframe.engine._checkpoint import call_with_checkpoints, hold_run
                from evalframe.store import as_store

                checkpoints = as_store(store)  # type: ignore[arg-type]
                lock = held.enter_context(hold_run(checkpoints, run_id, resume=resume is not None))
                produced = call_with_checkpoints(
                    base,
                    system,
                    store=checkpoints,
                    lock=lock,
                    run_id=run_id,
                    dataset=ds.name,
                    repetitions=reps,
                    every=plan.every,
                    resume=resume is not None,
                    concurrency=pace.calls,
                    progress=progress,
                    rate=rate,
                )
            elif system is not None:
                produced = call_system(
                    base,
                    system,
                    repetitions=reps,
                    concurrency=pace.calls,
                    progress=progress,
                    rate=rate,
                )
            elif dask is not None:
                produced = None  # read by the cluster's workers below
            elif outputs is not None:
                aligned = align_outputs(ds, as_outputs(outputs))
                produced = pl.concat(
                    [
                        aligned.with_columns(pl.lit(r, pl.Int64).alias(C.REPETITION))
                        for r in range(reps)
                    ]
                )
            if context is not None:
                context.begin_run()  # usage, cost, budget and deadline are per run
            baselines = _run_baselines(resolved, baselines_from or store)
            if produced is None:
                from evalframe.engine._on_dask import evaluate_on_dask

                frame, scores = evaluate_on_dask(
                    dask,
                    ds,
                    outputs,
                    resolved,
                    repetitions=reps,
                    run_id=run_id,
                    context=context,
                    baselines=baselines,
                )
            else:
                frame = produced.join(base, on=C.SAMPLE_ID, how="left", maintain_order="left")
                if strict:
                    _abort_on_system_error(frame)
                for baseline, stored in baselines.items():
                    frame = attach_baseline(frame, baseline, stored)
                scores = score(frame, resolved, run_id=run_id, providers=context)
            if strict:
                _abort_on_metric_error(scores)
        finished = time.time()
        # Whether repetitions can differ: a system under test is called again for each one.
        extra: dict[str, Any] = {"outputs": "system" if system is not None else "saved"}
        prompts = prompt_keys(resolved)
        if prompts:
            extra["prompts"] = prompts  # the judge prompt versions behind the scores
        if context is not None:
            extra["cost"] = context.cost_summary()
            extra["budget"] = context.budget_summary(scores)
        result = Run(
            run_id=run_id,
            name=name or ds.name,
            dataset=ds,
            frame=frame,
            scores=scores,
            metrics=resolved,
            started_at=started,
            finished_at=finished,
            usage=context.usage_frame() if context is not None else pl.DataFrame(),
            labels=dict(labels or {}),
            extra=extra,
        )
        if store is not None:
            from evalframe.store import as_store  # DuckDB loads when a run is first saved

            target = checkpoints if plan is not None else as_store(store)
            try:
                target.save(result)
            except StoreError as exc:
                # Keep the (possibly expensive) evaluation: the caller can save it again.
                exc.run = result
                raise
            if plan is not None:
                from evalframe.store._checkpoints import drop_checkpoints

                drop_checkpoints(target, run_id, lock)
        return result


def _abort_on_system_error(frame: pl.DataFrame) -> None:
    if C.SYSTEM_ERROR not in frame.columns:
        return
    failed = frame.filter(pl.col(C.SYSTEM_ERROR).is_not_null())
    if failed.height:
        row = failed.row(0, named=True)
        raise StrictModeError(
            f"strict mode: {row[C.SYSTEM_ERROR]}",
            sample_id=row[C.SAMPLE_ID],
            metric=None,
            repetition=row[C.REPETITION],
        )


def _abort_on_metric_error(scores: pl.DataFrame) -> None:
    failed = scores.filter(pl.col(C.ERROR).is_not_null())
    if failed.height:
        row = failed.row(0, named=True)
        raise StrictModeError(
            f"strict mode: sample '{row[C.SAMPLE_ID]}' (repetition {row[C.REPETITION]}) "
            f"metric '{row[C.METRIC]}': {row[C.ERROR]}",
            sample_id=row[C.SAMPLE_ID],
            metric=row[C.METRIC],
            repetition=row[C.REPETITION],
        )


def _run_baselines(
    metrics: Sequence[Metric], store: Store | str | os.PathLike[str] | None
) -> dict[str, pl.DataFrame]:
    """The stored outputs each ``pairwise(baseline=run:REF)`` compares with, by baseline."""
    from evalframe.metrics.judge_toolbox import RUN_BASELINE, run_baselines

    wanted = run_baselines(metrics)
    if not wanted:
        return {}
    if store is None:
        raise ValueError(
            f"pairwise(baseline={wanted[0]}) compares with a stored run: pass store= or "
            "baselines_from= (--store on the command line)."
        )
    from evalframe.store import as_store

    db = as_store(store)
    return {b: db.outputs_of(b[len(RUN_BASELINE) :]) for b in wanted}
