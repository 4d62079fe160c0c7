"""``evalframe run-set``: the datasets of an eval set in order, resumable."""

from __future__ import annotations

from pathlib import Path

import click

from evalframe.cli._options import ProviderSettings, provider_options, store_option
from evalframe.cli._profiles import profile_option
from evalframe.cli._table import render
from evalframe.core._run_options import Concurrency
from evalframe.core.aggregate import status_lines

__all__ = ["run_set"]


@click.command("run-set")
@profile_option
@click.argument("eval_set", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option(
    "--system",
    "system_ref",
    metavar="MODULE:FUNCTION",
    help="The system under test for datasets the set gives no outputs file.",
)
@store_option(help="Save each dataset's run, and the manifest, to this run store.")
@click.option(
    "--manifest",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also read and write the manifest as eval-harness's JSON file (an existing file is "
    "resumed).",
)
@click.option("--repetitions", type=click.IntRange(min=1), default=None)
@click.option("--concurrency", type=click.IntRange(min=1), default=8, show_default=True)
@provider_options
def run_set(
    eval_set: Path,
    system_ref: str | None,
    store_path: Path | None,
    manifest: Path | None,
    repetitions: int | None,
    concurrency: int,
    provider_settings: ProviderSettings,
) -> None:
    """Run the datasets of EVAL_SET (eval-harness.eval-set.v1) in order, each as a run.

    Datasets the manifest has completed are skipped, so an interrupted set resumes where it
    stopped; a dataset that fails is marked failed and the set stops (a failed entry is not
    retried: remove the manifest to start afresh). Exit 1 when a dataset failed or a run
    captured errors.
    """
    from evalframe.cli._run import _load_system
    from evalframe.engine._eval_set import run_set as run_eval_set

    if store_path is None and manifest is None:
        raise click.UsageError(
            "Pass --store DB or --manifest FILE: the manifest must live somewhere."
        )
    doc, runs = run_eval_set(
        eval_set,
        system=_load_system(system_ref) if system_ref else None,
        store=store_path,
        manifest=manifest,
        providers=provider_settings.build(),
        repetitions=repetitions,
        concurrency=Concurrency(calls=concurrency),  # the rate options go to the providers
    )
    ids = {r.dataset.name: r.run_id for r in runs}
    rows = [
        (
            e["dataset"],
            e["status"],
            e.get("total_samples", ""),
            e.get("total_failures", ""),
            f"{e['duration_seconds']:.1f}" if "duration_seconds" in e else "",
            ids.get(e["dataset"], ""),
            e.get("error", ""),
        )
        for e in doc["datasets"]
    ]
    headers = ("dataset", "status", "samples", "failures", "seconds", "run (this call)", "error")
    click.echo(f"eval set {doc['eval_set']}")
    click.echo(render(headers, rows))
    made = {r.dataset.name: r for r in runs}
    for e in doc["datasets"]:  # each dataset's run as its report opens: INCOMPLETE, ...
        run = made.get(e["dataset"])
        if run is not None:
            for line in status_lines(run.headline):
                click.echo(f"{e['dataset']}: {line}", err=True)
        elif e.get("total_failures"):  # run by an earlier call, its report in the store
            click.echo(
                f"{e['dataset']}: {e['total_failures']} (execution, metric) pair(s) could not "
                "be scored in its run (an earlier call's)",
                err=True,
            )
    bad = any(e["status"] == "failed" for e in doc["datasets"]) or any(
        e.get("total_failures") for e in doc["datasets"]
    )
    if bad:
        raise SystemExit(1)
