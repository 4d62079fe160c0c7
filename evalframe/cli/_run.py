"""``evalframe run``: score saved outputs, or a system under test, and print the report."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

import evalframe as ef
from evalframe.cli._options import (
    EXIT_CODES,
    PROMOTE_HELP,
    Clearable,
    ProviderSettings,
    dask_option,
    emit,
    evidence_option,
    force_option,
    format_option,
    label_option,
    max_rows_option,
    memory_limit_option,
    open_store,
    out_option,
    own_files,
    provider_options,
    store_option,
    system_options,
)
from evalframe.cli._profiles import profile_option
from evalframe.core._errors import StoreError, StrictModeError
from evalframe.core._progress import showing
from evalframe.core.aggregate import status_lines
from evalframe.engine._evaluate import MAX_REPETITIONS

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from evalframe.core._run import Run


@click.command(epilog=EXIT_CODES)
@profile_option
@click.argument("dataset", metavar="DATASET")
@system_options(
    "Saved outputs: a JSON/YAML/JSONL/CSV/Parquet file, or a directory, glob or fsspec URL of "
    "Parquet files.",
    sources=True,
    repeatable=True,
)
@click.option(
    "-m",
    "--metric",
    "metrics",
    multiple=True,
    metavar="SPEC",
    help="A metric spec, e.g. -m exact-match -m 'rouge-l(beta=2.0)'. Repeatable; "
    "defaults to the dataset's metrics: list.",
)
@click.option(
    "--repetitions",
    type=click.IntRange(min=1, max=MAX_REPETITIONS),
    default=None,
    help=f"Score each row N times (at most {MAX_REPETITIONS}).",
)
@click.option("--name", default=None, help="The run's name (default: the dataset name).")
@click.option(
    "--strict",
    is_flag=True,
    help="Abort on the first captured error (a system under test's or a metric's) with "
    "exit 1, instead of recording it and going on; nothing is saved. Also set by "
    "EVALFRAME_STRICT=1.",
)
@click.option(
    "--checkpoint-every",
    type=Clearable(click.IntRange(min=1)),
    default=None,
    metavar="N",
    help="With --system and --store: write every N completed executions to the store as the "
    "run goes, so an interrupted run can be resumed (the run id is printed at the start).",
)
@click.option(
    "--resume",
    "resume",
    metavar="RUN_ID",
    default=None,
    help="Resume an interrupted checkpointed run: call the system only for the executions "
    "its checkpoints lack (same dataset, --repetitions and --store).",
)
@label_option
@format_option("fmt", "markdown", "json")
@max_rows_option()
@out_option()
@store_option(help="Save the run to this DuckDB run store (default: $EVALFRAME_STORE).")
@click.option(
    "--promote-failures",
    type=click.Path(dir_okay=False, path_type=Path),
    help=PROMOTE_HELP,
)
@click.option(
    "--promoted-dataset", metavar="NAME", help="Its dataset name (default: <dataset>.failures)."
)
@force_option
@evidence_option
@provider_options
@dask_option("Score on a Dask cluster, its workers reading Parquet outputs piece by piece.")
@click.option(
    "--batch-size",
    type=Clearable(click.IntRange(min=1)),
    default=None,
    metavar="N",
    help="Stream Parquet --outputs larger than memory into --store, N rows at a time: the "
    "peak memory is about the dataset, a few batches of N rows and DuckDB's --memory-limit. "
    "Prints the per-metric summary (the full report: evalframe report RUN).",
)
@memory_limit_option("With --batch-size: DuckDB's memory limit while storing and scoring.")
@click.option(
    "--otel",
    is_flag=True,
    envvar="EVALFRAME_OTEL",
    help="Send the run's spans and evaluation events over OpenTelemetry (otel extra; "
    "configured by the OTEL_EXPORTER_OTLP_* variables).",
)
def run(
    dataset: str,
    outputs: tuple[str, ...],
    system_ref: tuple[str, ...],
    concurrency: int,
    metrics: tuple[str, ...],
    repetitions: int | None,
    name: str | None,
    strict: bool,
    checkpoint_every: int | None,
    resume: str | None,
    labels: dict[str, str],
    fmt: str,
    max_rows: int,
    out: Path | None,
    store_path: Path | None,
    promote_failures: Path | None,
    promoted_dataset: str | None,
    force: bool,
    include_evidence: bool,
    provider_settings: ProviderSettings,
    dask: str | None,
    batch_size: int | None,
    memory_limit: str,
    otel: bool,
) -> None:
    """Score DATASET, print (or --out) the report, then save the run to --store.

    DATASET is a dataset file (YAML, JSON, JSONL, CSV or Parquet), or a directory, glob or
    fsspec URL of Parquet files.

    When the store cannot take the run, the run is kept as an export directory next to the
    report (or in the current directory) and the message gives the `evalframe import`
    command that loads it.

    Several --system (or --outputs) make one run per system, each labelled with its system
    and with one shared comparison label; `evalframe view` compares them side by side.
    """
    pace = ef.Concurrency(calls=concurrency)  # the rate options go to the providers
    if bool(outputs) == bool(system_ref):
        raise click.UsageError(
            "Pass either --outputs FILE (the system under test's saved outputs) or --system "
            "MODULE:FUNCTION (a system under test to call), not both."
        )
    if len(outputs) + len(system_ref) > 1:
        alone = {
            "--checkpoint-every": checkpoint_every, "--resume": resume,
            "--promote-failures": promote_failures, "--batch-size": batch_size, "--dask": dask,
            "--otel": otel or None,
        }  # fmt: skip
        given_alone = [k for k, v in alone.items() if v is not None]
        if given_alone:
            raise click.UsageError(
                f"{', '.join(given_alone)} take(s) one system: run each system on its own."
            )
        _several(
            dataset, list(outputs), list(system_ref), pace, list(metrics) or None,
            repetitions, name, strict, labels, fmt, max_rows, out, store_path,
            provider_settings, include_evidence,
        )  # fmt: skip
        return
    one_output = outputs[0] if outputs else None
    one_system = system_ref[0] if system_ref else None
    if force and promote_failures is None:
        raise click.UsageError("--force applies to --promote-failures.")
    if promote_failures is not None:  # refused before any work, not after the scoring
        from evalframe.core._promotion_file import check_target

        check_target(promote_failures, own_files("promote_failures"), force=force)
    given = click.get_current_context().get_parameter_source("memory_limit")
    if batch_size is None and given is click.core.ParameterSource.COMMANDLINE:
        raise click.UsageError("--memory-limit applies to streamed runs: add --batch-size N.")
    if batch_size is not None:
        if promote_failures is not None:
            raise click.UsageError(
                "--promote-failures needs the run in memory; a streamed run (--batch-size) "
                "is not: run without --batch-size, or read failures from the store with "
                "evalframe sql."
            )
        _streamed(
            dataset, one_output, store_path, list(metrics) or None, repetitions, name, labels,
            batch_size, memory_limit, provider_settings, dask, fmt, out,
        )  # fmt: skip
        return
    system = _load_system(one_system) if one_system is not None else None
    providers = provider_settings.build()
    checkpoint = None
    if checkpoint_every is not None or resume is not None:
        if system is None or store_path is None:
            raise click.UsageError("--checkpoint-every and --resume need --system and --store.")
        checkpoint = ef.Checkpoint(every=checkpoint_every or 100, resume=resume)
    saved = False
    try:
        result = ef.evaluate(
            dataset,
            outputs=one_output,
            system=system,
            concurrency=pace,
            metrics=list(metrics) or None,
            repetitions=repetitions,
            providers=providers,
            name=name,
            labels=labels or None,
            # Checkpointed runs are saved by the engine, which then drops their checkpoints.
            store=store_path if checkpoint is not None else None,
            checkpoint=checkpoint,
            strict=strict or None,  # unset: EVALFRAME_STRICT decides
            baselines_from=store_path,
            dask=dask,
        )
        saved = checkpoint is not None
    except StrictModeError as exc:
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(1) from None
    except StoreError as exc:
        if exc.run is None:
            raise
        result = exc.run  # scored, not saved: reported below, then kept by _save
    if otel:
        from evalframe.integrations._otel import export_run

        export_run(result)
    if fmt == "json":
        from evalframe.views._report_json import report_json_parts

        # written from the frames, piece by piece: fast at any size
        text: str | Iterator[memoryview] = report_json_parts(
            result, include_evidence=include_evidence
        )
    else:
        text = result.report(samples=False).to_markdown(
            max_rows=max_rows
        )  # Markdown never shows the samples
    # The report comes first and the store second: a store that cannot be written must not
    # cost the (possibly long and paid-for) scoring; nor must a report that cannot be.
    if out is not None:  # the report went to a file: the terminal's first lines say it
        for line in status_lines(result.headline):
            click.echo(line, err=True)
    try:
        # the report flowing onto a terminal is its own progress
        with showing(False if out is None and sys.stdout.isatty() else None):
            emit(text, out, note=f" (run {result.run_id})")
    finally:
        if store_path is not None and not saved:
            _save(result, store_path, out)
        elif saved:
            click.echo(f"saved run {result.run_id} to {store_path}", err=True)
    if promote_failures is not None:
        from evalframe.core._promote import promote_failures as promote

        promotion = promote(
            result,
            promote_failures,
            name=promoted_dataset,
            force=force,
            protected=own_files("promote_failures"),
        )
        click.echo(promotion.describe(), err=True)
    budget = result.extra.get("budget")
    if budget and budget.get("halted"):
        click.echo(f"budget exhausted: {budget['reason']}", err=True)
        raise SystemExit(1)
    failures = result.failures.height
    if failures:
        click.echo(
            errored_line(status_lines(result.headline), failures, "the report's execution errors"),
            err=True,
        )
        raise SystemExit(1)


def errored_line(status: Sequence[str], pairs: int, see: str) -> str:
    """Why a command whose run has errored executions exits 1, in its report's words: the
    run's ``INCOMPLETE`` line, then the (execution, metric) pairs that could not be scored
    and where they are listed (``see``)."""
    incomplete = next(line for line in status if line.startswith("INCOMPLETE"))
    return f"{incomplete}; {pairs} (execution, metric) pair(s) could not be scored ({see})."


COMPARISON_LABEL = "comparison"
"""The label several systems' runs of one command share (its value is the same for all)."""
SYSTEM_LABEL = "system"


def _several(
    dataset: str,
    outputs: list[str],
    systems: list[str],
    concurrency: ef.Concurrency,
    metrics: list[str] | None,
    repetitions: int | None,
    name: str | None,
    strict: bool,
    labels: dict[str, str],
    fmt: str,
    max_rows: int,
    out: Path | None,
    store_path: Path | None,
    provider_settings: ProviderSettings,
    include_evidence: bool,
) -> None:
    """One run per system (or outputs file) on the same dataset, each labelled with its
    system and with a comparison label they share; the reports in turn, then a summary."""
    import uuid

    from evalframe.core._dataset import read_dataset
    from evalframe.views._format import f4, md_table

    loaded = [(ref, _load_system(ref)) for ref in systems]  # refused before any work
    sources: list[tuple[str, Any, Any]] = [(ref, None, fn) for ref, fn in loaded]
    sources += [(path, path, None) for path in outputs]
    seen = [tag for tag, _, _ in sources]
    if len(set(seen)) != len(seen):
        raise click.UsageError("A system (or outputs file) is given twice.")
    ds = read_dataset(dataset)
    shared = uuid.uuid4().hex[:12]
    providers = provider_settings.build()
    results = []
    for tag, saved, system in sources:
        try:
            result = ef.evaluate(
                ds,
                outputs=saved,
                system=system,
                concurrency=concurrency,
                metrics=metrics,
                repetitions=repetitions,
                providers=providers,
                name=f"{name or ds.name} [{_system_name(tag)}]",
                labels={**labels, SYSTEM_LABEL: tag, COMPARISON_LABEL: shared},
                strict=strict or None,  # unset: EVALFRAME_STRICT decides
                baselines_from=store_path,
            )
        except StrictModeError as exc:
            click.echo(f"error: {tag}: {exc}", err=True)
            raise SystemExit(1) from None
        results.append((tag, result))
    if fmt == "json":
        from evalframe.views._report_json import report_json

        docs = [report_json(r, include_evidence=include_evidence) for _, r in results]
        text = b"[\n" + b",\n".join(d.rstrip(b"\n") for d in docs) + b"\n]\n"
        emit(text, out, note=f" ({len(results)} runs)")
    else:
        parts = [
            f"# {tag}\n\n" + r.report(samples=False).to_markdown(max_rows=max_rows)
            for tag, r in results
        ]
        rows = [[tag, r.run_id, f4(r.macro_f1), r.failures.height, r.status] for tag, r in results]
        headers = ["system", "run", "macro-F1", "failures", "status"]
        summary = "\n".join(md_table(headers, rows))
        parts.append(f"# Systems compared ({COMPARISON_LABEL}={shared})\n\n{summary}\n")
        emit("\n".join(parts), out, note=f" ({len(results)} runs)")
    if store_path is not None:
        for _, r in results:
            _save(r, store_path, out)
        ids = ",".join(r.run_id for _, r in results)
        click.echo(
            f"compare them: evalframe view --store {store_path}, then /compare?runs={ids} "
            f"(or the runs labelled {COMPARISON_LABEL}={shared}); evalframe compare takes two",
            err=True,
        )
    failed = [(tag, r) for tag, r in results if r.failures.height]
    for tag, r in failed:
        where = f"run {r.run_id}'s execution errors"
        click.echo(
            f"{tag}: {errored_line(status_lines(r.headline), r.failures.height, where)}",
            err=True,
        )
    if failed:
        raise SystemExit(1)


def _system_name(tag: str) -> str:
    """A system's short name for a run name: the function, or the outputs file's stem."""
    if ":" in tag and not Path(tag).exists():
        return tag.rsplit(":", 1)[1]
    return Path(tag).name


def _streamed(
    dataset: str,
    outputs: str | None,
    store_path: Path | None,
    metrics: list[str] | None,
    repetitions: int | None,
    name: str | None,
    labels: dict[str, str],
    batch_size: int,
    memory_limit: str,
    provider_settings: ProviderSettings,
    dask: str | None,
    fmt: str,
    out: Path | None,
) -> None:
    """``run --batch-size``: Parquet outputs streamed into the store, the summary printed."""
    from evalframe.cli._table import render

    if outputs is None or store_path is None:
        raise click.UsageError("--batch-size streams saved --outputs into a --store: pass both.")
    if fmt != "markdown":
        raise click.UsageError(
            "--batch-size prints the per-metric summary; for the JSON report run "
            "evalframe report RUN --store DB --format json afterwards."
        )
    store = open_store(store_path, create=True)
    run_id = store.score_outputs(
        dataset,
        outputs,
        metrics,
        repetitions=repetitions,
        name=name,
        labels=labels or None,
        batch_size=batch_size,
        memory_limit=memory_limit,
        providers=provider_settings.build(),
        dask=dask,
    )
    summary = store.sql(
        "SELECT metric, n, n_scored, n_errors, mean, p50, p95, pass_rate, pass_rate_scored "
        "FROM metric_summary WHERE run_id = ? ORDER BY ordinal",
        [run_id],
    )
    record = store.sql("SELECT macro_f1, n_failures FROM runs WHERE run_id = ?", [run_id])
    macro, failures = record.row(0)
    body = [[_cell(v) for v in row[:-1]] for row in summary.rows()]
    head = "".join(f"{line}\n" for line in stored_status(store, run_id))
    text = (
        f"{head}run {run_id}: macro-F1 {_cell(macro)} (quality metrics, errored executions not "
        "passed)\n\n" + render(summary.columns[:-1], body) + "\n"
    )
    scored = [
        f"{r['metric']} {_cell(r['pass_rate_scored'])}"
        for r in summary.iter_rows(named=True)
        if r["n_errors"] and r["pass_rate_scored"] is not None
    ]
    if scored:  # beside the pass rates over attempted executions, labelled
        text += f"\npass_rate over scored executions only: {', '.join(scored)}\n"
    emit(text, out, note=f" (run {run_id})")
    click.echo(f"saved run {run_id} to {store_path}", err=True)
    if failures:
        where = f"evalframe report {run_id}"
        click.echo(errored_line(stored_status(store, run_id), failures, where), err=True)
        raise SystemExit(1)


def stored_status(store: Any, run_id: str) -> list[str]:
    """A stored run's ``INCOMPLETE`` and ``SAFETY FAILED`` lines, from the ``run_status``
    view, as every view of the run words them."""
    from evalframe.core.aggregate import status_lines

    row = store.sql("SELECT * FROM run_status WHERE run_id = ?", [run_id]).row(0, named=True)
    safety = store.sql(
        "SELECT metric FROM run_metrics WHERE run_id = ? AND dimension = 'safety' ORDER BY ordinal",
        [run_id],
    ).get_column("metric")
    head = {
        "executions": row["executions"],
        "errored_executions": row["errored_executions"],
        "safety": None
        if row["safety_passed"] is None
        else {
            "metrics": safety.to_list(),
            "executions": row["safety_executions"],
            "failed_executions": row["safety_failed_executions"],
            "passed": row["safety_passed"],
        },
    }
    return status_lines(head)


def _cell(value: object) -> str:
    from evalframe.views._format import fmt

    return fmt(value) if isinstance(value, float) else str(value)


RECOVERY_PREFIX = "evalframe-recovery-"


def _save(result: Run, store_path: Path, out: Path | None) -> None:
    """Save the run; when the store refuses it, keep the run as an export and exit 2.

    The export (``evalframe export``'s Parquet format) goes next to ``--out``, or into the
    current directory when the report went to stdout, and the message gives the command
    that loads it once the store is usable again.
    """
    from evalframe.store import Store

    try:
        with Store(store_path) as store:
            store.save(result)
    except Exception as exc:  # any failure at all: the scored run must be kept
        # One paragraph: the message and its cause, without the SQL statement.
        lines = [ln for ln in str(exc).splitlines() if not ln.startswith("statement:")]
        cause = " ".join(" ".join(lines).split()) or type(exc).__name__
        home = (out.parent if out is not None else Path.cwd()).resolve()
        folder = home / (RECOVERY_PREFIX + result.run_id)
        try:
            with Store(":memory:") as scratch:
                scratch.save(result)
                scratch.export(result.run_id, folder)
        except Exception as again:  # say both what failed and why
            click.echo(
                f"error: could not save run {result.run_id} to the store {store_path} "
                f"({cause}), nor keep it in {folder} ({again}). The report is all "
                "that is left of this run.",
                err=True,
            )
            raise SystemExit(2) from None
        click.echo(
            f"error: could not save run {result.run_id} to the store {store_path}: "
            f"{cause.rstrip('.')}. "
            f"The run is kept in {folder}; once the store is usable, load it with: "
            f"evalframe import {folder} --store {store_path}",
            err=True,
        )
        raise SystemExit(2) from None
    click.echo(f"saved run {result.run_id} to {store_path}", err=True)


def _load_system(ref: str) -> Any:
    """Import ``module:function`` (the current directory first on the path)."""
    module_name, sep, attr = ref.partition(":")
    if not sep or not module_name or not attr:
        raise click.BadParameter(
            "expected MODULE:FUNCTION, e.g. my_app.rag:answer", param_hint="--system"
        )
    if "" not in sys.path:
        sys.path.insert(0, "")
    try:
        target: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        raise click.BadParameter(f"cannot load {ref}: {exc}", param_hint="--system") from exc
    if not callable(target):
        raise click.BadParameter(f"{ref} is not callable", param_hint="--system")
    return target
