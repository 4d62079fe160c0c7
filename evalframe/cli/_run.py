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
    ProviderSettings,
    emit,
    evidence_option,
    format_option,
    label_option,
    max_rows_option,
    out_option,
    provider_options,
    store_option,
)
from evalframe.engine._evaluate import MAX_REPETITIONS

if TYPE_CHECKING:
    from evalframe.core._run import Run


@click.command(epilog=EXIT_CODES)
@click.argument("dataset", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--outputs",
    "outputs",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Saved outputs (JSON/YAML/JSONL/CSV/Parquet).",
)
@click.option(
    "--system",
    "system_ref",
    metavar="MODULE:FUNCTION",
    help="A system under test to call instead: a function taking a sample's input map and "
    "returning a string, e.g. my_app.rag:answer (the current directory is importable).",
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    help="System calls in flight at once (with --system).",
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
@label_option
@format_option("fmt", "markdown", "json")
@max_rows_option()
@out_option()
@store_option(help="Save the run to this DuckDB run store (default: $EVALFRAME_STORE).")
@evidence_option
@provider_options
def run(
    dataset: Path,
    outputs: Path | None,
    system_ref: str | None,
    concurrency: int,
    metrics: tuple[str, ...],
    repetitions: int | None,
    name: str | None,
    labels: dict[str, str],
    fmt: str,
    max_rows: int,
    out: Path | None,
    store_path: Path | None,
    include_evidence: bool,
    provider_settings: ProviderSettings,
) -> None:
    """Score DATASET, print (or --out) the report, then save the run to --store.

    When the store cannot take the run, the run is kept as an export directory next to the
    report (or in the current directory) and the message gives the `evalframe import`
    command that loads it.
    """
    if (outputs is None) == (system_ref is None):
        raise click.UsageError(
            "Pass either --outputs FILE (the system's saved outputs) or --system "
            "MODULE:FUNCTION (a system under test to call), not both."
        )
    system = _load_system(system_ref) if system_ref is not None else None
    providers = provider_settings.build()
    result = ef.evaluate(
        dataset,
        outputs=outputs,
        system=system,
        concurrency=concurrency,
        metrics=list(metrics) or None,
        repetitions=repetitions,
        providers=providers,
        name=name,
        labels=labels or None,
    )
    if fmt == "json":
        from evalframe.views._report_json import report_json

        # written from the frames: fast at any size
        text: str | bytes = report_json(result, include_evidence=include_evidence)
    else:
        text = result.report(samples=False).to_markdown(
            max_rows=max_rows
        )  # Markdown never shows the samples
    # The report comes first and the store second: a store that cannot be written must not
    # cost the (possibly long and paid-for) scoring.
    emit(text, out, note=f" (run {result.run_id})")
    if store_path is not None:
        _save(result, store_path, out)
    budget = result.extra.get("budget")
    if budget and budget.get("halted"):
        click.echo(f"budget exhausted: {budget['reason']}", err=True)
        raise SystemExit(1)
    failures = result.failures.height
    if failures:
        click.echo(f"{failures} (sample, metric) failure(s); see the report's failures.", err=True)
        raise SystemExit(1)


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
