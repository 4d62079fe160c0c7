"""``evalframe run``: score a dataset's saved outputs and print the report."""

from __future__ import annotations

from pathlib import Path

import click

import evalframe as ef


@click.command()
@click.argument("dataset", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--outputs",
    "outputs",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Saved outputs (JSON/YAML/JSONL/CSV/Parquet).",
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
    "--repetitions", type=click.IntRange(min=1), default=None, help="Score each row N times."
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["markdown", "json"]),
    default="markdown",
    show_default=True,
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the report here instead of stdout.",
)
@click.option(
    "--store",
    "store",
    envvar="EVALFRAME_STORE",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Save the run to this DuckDB run store (default: $EVALFRAME_STORE).",
)
def run(
    dataset: Path,
    outputs: Path | None,
    metrics: tuple[str, ...],
    repetitions: int | None,
    fmt: str,
    out: Path | None,
    store: Path | None,
) -> None:
    """Score DATASET and print the report. Exit 1 when any sample failed a metric."""
    if outputs is None:
        raise click.UsageError(
            "Pass --outputs FILE with the system's saved outputs (a system under test is "
            "scored from Python with ef.evaluate(dataset, system=fn))."
        )
    result = ef.evaluate(
        dataset,
        outputs=outputs,
        metrics=list(metrics) or None,
        repetitions=repetitions,
        store=store,
    )
    report = result.report()
    text = report.to_json() if fmt == "json" else report.to_markdown()
    if out is None:
        click.echo(text, nl=False)
    else:
        out.write_text(text, encoding="utf-8")
        click.echo(f"wrote {out} (run {result.run_id})", err=True)
    if store is not None:
        click.echo(f"saved run {result.run_id} to {store}", err=True)
    failures = report["total_failures"]
    if failures:
        click.echo(f"{failures} (sample, metric) failure(s); see the report's failures.", err=True)
        raise SystemExit(1)
