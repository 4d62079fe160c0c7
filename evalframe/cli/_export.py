"""``evalframe export``: stored runs to Parquet files, or one run to MLflow (``--to mlflow``)."""

from __future__ import annotations

from pathlib import Path

import click

from evalframe.cli._options import open_store, store_option

__all__ = ["export_cmd"]

MLFLOW = "mlflow"


@click.command("export")
@click.argument("run_refs", metavar="RUN...", nargs=-1, required=True)
@click.option(
    "--to",
    "target",
    required=True,
    metavar="DIR|mlflow",
    help="A directory for the Parquet export, or `mlflow` to log the run(s) to MLflow.",
)
@click.option(
    "--tracking-uri",
    default=None,
    help="With --to mlflow: the tracking server or store, e.g. sqlite:///mlflow.db (default: "
    "$MLFLOW_TRACKING_URI, else MLflow's default).",
)
@click.option(
    "--experiment",
    default=None,
    help="With --to mlflow: the experiment, created when missing (default: the dataset name).",
)
@store_option()
def export_cmd(
    run_refs: tuple[str, ...],
    target: str,
    tracking_uri: str | None,
    experiment: str | None,
    store_path: Path | None,
) -> None:
    """Export runs as Parquet files (one per table) and a manifest into directory --to,
    or log each run to MLflow with --to mlflow."""

    store = open_store(store_path)
    if target != MLFLOW:
        if tracking_uri or experiment:
            raise click.UsageError("--tracking-uri and --experiment go with --to mlflow.")
        out = store.export(list(run_refs), Path(target))
        click.echo(f"exported {len(run_refs)} run reference(s) to {out}")
        return
    from evalframe.integrations._mlflow import to_mlflow

    for ref in run_refs:
        run = store.load(ref)
        mlflow_id = to_mlflow(run, tracking_uri=tracking_uri, experiment=experiment)
        click.echo(f"logged run {run.run_id} to MLflow as run {mlflow_id}")
