"""``evalframe run``: score saved outputs, or a system under test, and print the report."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import click

import evalframe as ef
from evalframe.cli._options import (
    ProviderSettings,
    emit,
    format_option,
    out_option,
    provider_options,
    store_option,
)
from evalframe.engine._evaluate import MAX_REPETITIONS


@click.command()
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
@format_option("fmt", "markdown", "json")
@out_option()
@store_option(help="Save the run to this DuckDB run store (default: $EVALFRAME_STORE).")
@provider_options
def run(
    dataset: Path,
    outputs: Path | None,
    system_ref: str | None,
    concurrency: int,
    metrics: tuple[str, ...],
    repetitions: int | None,
    fmt: str,
    out: Path | None,
    store_path: Path | None,
    provider_settings: ProviderSettings,
) -> None:
    """Score DATASET and print the report. Exit 1 when any sample failed a metric."""
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
        store=store_path,
        providers=providers,
    )
    report = result.report(samples=fmt == "json")  # Markdown never shows the samples
    text = report.to_json() if fmt == "json" else report.to_markdown()
    emit(text, out, note=f" (run {result.run_id})")
    if store_path is not None:
        click.echo(f"saved run {result.run_id} to {store_path}", err=True)
    budget = report.get("budget")
    if budget and budget.get("halted"):
        click.echo(f"budget exhausted: {budget['reason']}", err=True)
        raise SystemExit(1)
    failures = report["total_failures"]
    if failures:
        click.echo(f"{failures} (sample, metric) failure(s); see the report's failures.", err=True)
        raise SystemExit(1)


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
