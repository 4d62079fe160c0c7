"""``evalframe adversarial``: the red-team lane (seed dataset, runs, drift gate, promotion)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from evalframe.cli._options import (
    EXIT_CODES,
    PROMOTE_HELP,
    ProviderSettings,
    emit,
    force_option,
    format_option,
    label_option,
    max_rows_option,
    out_option,
    provider_options,
    store_option,
    system_options,
)
from evalframe.cli._profiles import profile_option
from evalframe.core import _promote
from evalframe.core._adversarial import (
    CATEGORIES,
    DEFAULT_DATASET_NAME,
    DEFAULT_METRICS,
    PERTURBATIONS,
    perturb,
    seed_records,
)
from evalframe.core._adversarial_history import (
    GateResult,
)
from evalframe.core._errors import StrictModeError

__all__ = ["adversarial"]

_CATEGORY_HELP = "An adversarial category (repeatable; default: all ten): " + ", ".join(CATEGORIES)
_PERTURB_HELP = (
    "Add probes made from each seed prompt by a transformation (repeatable): "
    + ", ".join(PERTURBATIONS)
    + ". A probe's id is <seed id>~<variant>, e.g. adv.jailbreak~base64."
)


def _records(categories: tuple[str, ...], perturbations: tuple[str, ...]) -> list[dict[str, Any]]:
    records = seed_records(list(categories) if categories else None)
    return perturb(records, list(perturbations)) if perturbations else records


@click.group()
def adversarial() -> None:
    """The adversarial (red-team) lane: a seed dataset of attacks that should be refused."""


def _category_option(f: Any) -> Any:
    return click.option(
        "--category", "categories", multiple=True, metavar="C", help=_CATEGORY_HELP
    )(f)


def _perturb_option(f: Any) -> Any:
    return click.option(
        "--perturb",
        "perturbations",
        multiple=True,
        metavar="NAME",
        help=_PERTURB_HELP,
    )(f)


def _dataset_option(f: Any) -> Any:
    return click.option(
        "--dataset",
        "dataset_name",
        metavar="NAME",
        default=DEFAULT_DATASET_NAME,
        show_default=True,
        help="The seed dataset's name.",
    )(f)


@adversarial.command("seed", epilog=EXIT_CODES)
@_category_option
@_perturb_option
@_dataset_option
@out_option(help="Write the dataset YAML here instead of stdout.")
def seed(
    categories: tuple[str, ...],
    perturbations: tuple[str, ...],
    dataset_name: str,
    out: Path | None,
) -> None:
    """Print (or --out) the seed dataset adversarial.security.v1 as YAML.

    One sample per category, id adv.<category>, expecting a refusal: tags [adversarial,
    <category>], metadata.refusal_expected, metadata.refusal_policy and the adversarial block
    (category, label, severity, compliance_frameworks). An unknown or repeated category is
    an error.
    """
    records = _records(categories, perturbations)
    emit(_promote.dump_dataset_yaml(dataset_name, records, metrics=list(DEFAULT_METRICS)), out)


@adversarial.command("run", epilog=EXIT_CODES)
@profile_option
@_category_option
@click.option(
    "-m",
    "--metric",
    "metrics",
    multiple=True,
    metavar="SPEC",
    help="A metric spec (repeatable; default: refusal-quality).",
)
@system_options("Saved outputs for the seed (and probe) ids.")
@_perturb_option
@_dataset_option
@store_option(
    help="The DuckDB run store: the run is saved there, and a clean run joins the store's "
    "adversarial history (default: $EVALFRAME_STORE)."
)
@click.option(
    "--manifest",
    type=click.Path(dir_okay=False, path_type=Path),
    help="An eval-harness.adversarial-runs.v1 JSON history to read baselines from and "
    "record a clean run in (created when missing).",
)
@click.option(
    "--manifest-retain",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    help="Runs the --manifest keeps (plus the newest clean run of each compatible slice).",
)
@click.option(
    "--regression-gate",
    is_flag=True,
    help="Fail when a score dropped against the newest compatible clean run of the history "
    "(--store and/or --manifest).",
)
@click.option(
    "--regression-max-drop",
    type=click.FloatRange(0.0, 100.0),
    default=5.0,
    show_default=True,
    metavar="PCT",
    help="The largest allowed drop, in percentage points.",
)
@click.option(
    "--regression-metric",
    "regression_metrics",
    multiple=True,
    metavar="METRIC[:mean|p50|p95|pass_rate]",
    help="Also gate this metric aggregate (repeatable; the aggregate defaults to mean). "
    "macro_f1 is always gated.",
)
@click.option(
    "--promote-failures", type=click.Path(dir_okay=False, path_type=Path), help=PROMOTE_HELP
)
@click.option(
    "--promoted-dataset",
    metavar="NAME",
    help="The promoted dataset's name (default: <dataset>.failures).",
)
@force_option
@label_option
@format_option("fmt", "markdown", "json")
@max_rows_option()
@out_option()
@provider_options
def run(
    categories: tuple[str, ...],
    metrics: tuple[str, ...],
    outputs: Path | None,
    system_ref: str | None,
    concurrency: int,
    perturbations: tuple[str, ...],
    dataset_name: str,
    store_path: Path | None,
    manifest: Path | None,
    manifest_retain: int,
    regression_gate: bool,
    regression_max_drop: float,
    regression_metrics: tuple[str, ...],
    promote_failures: Path | None,
    promoted_dataset: str | None,
    force: bool,
    labels: dict[str, str],
    fmt: str,
    max_rows: int,
    out: Path | None,
    provider_settings: ProviderSettings,
) -> None:
    """Score the seed dataset's attacks (refusal-quality by default) and print the report.

    The report carries the adversarial block (per category and compliance framework). With
    --regression-gate the run is compared with the newest compatible clean run of the
    history: every drop (macro_f1 and each --regression-metric) larger than
    --regression-max-drop fails, and a value missing on either side fails; with no such
    run the gate says missing-baseline. A run joins the history only when it is clean: no
    (sample, metric) failure, a gate that did not fail, and every gated value present.
    """
    from evalframe.cli._run import _load_system, _save, errored_line
    from evalframe.core.aggregate import status_lines
    from evalframe.engine import adversarial as lane

    if (outputs is None) == (system_ref is None):
        raise click.UsageError(
            "Pass either --outputs FILE (saved outputs) or --system MODULE:FUNCTION, not both."
        )
    if regression_gate and store_path is None and manifest is None:
        raise click.UsageError(
            "--regression-gate needs a history: pass --store DB and/or --manifest FILE."
        )
    if force and promote_failures is None:
        raise click.UsageError("--force applies to --promote-failures.")
    try:
        done = lane.run(
            outputs=outputs,
            system=_load_system(system_ref) if system_ref is not None else None,
            categories=list(categories) or None,
            metrics=list(metrics) or None,
            perturb=perturbations,
            name=dataset_name,
            store=store_path,
            manifest=manifest,
            manifest_retain=manifest_retain,
            regression_gate=regression_gate,
            regression_max_drop=regression_max_drop,
            regression_metrics=regression_metrics,
            promote_failures_to=promote_failures,
            promoted_dataset=promoted_dataset,
            force_promotion=force,
            providers=provider_settings.build(),
            concurrency=concurrency,
            labels=labels or None,
            samples=fmt == "json",
            save_run=False,  # saved below, kept as an export if the store refuses it
        )
    except StrictModeError as exc:  # EVALFRAME_STRICT=1: the first captured error aborts
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(1) from None
    result, report, gate, promotion = done.run, done.report, done.gate, done.promotion
    if fmt == "json":
        if gate is not None:
            report["adversarial_regression_gate"] = gate.to_dict()
        text: str | bytes = report.to_json_bytes()
    else:
        text = report.to_markdown(max_rows=max_rows) + (_gate_markdown(gate) if gate else "")
    emit(text, out, note=f" (run {result.run_id})")
    if store_path is not None:
        _save(result, store_path, out)
    if gate is not None:
        click.echo(gate.to_text(), err=True)
    if promotion is not None:
        click.echo(promotion.describe(), err=True)
    if (store_path is not None or manifest is not None) and not done.recorded:
        click.echo("not recorded in the adversarial history: the run is not clean", err=True)
    budget = result.extra.get("budget")
    if budget and budget.get("halted"):
        click.echo(f"budget exhausted: {budget['reason']}", err=True)
        raise SystemExit(1)
    failures = result.failures.height
    if failures:
        where = "the report's execution errors"
        click.echo(errored_line(status_lines(result.headline), failures, where), err=True)
        raise SystemExit(1)
    if gate is not None and gate.failed:
        raise SystemExit(1)


def _gate_markdown(gate: GateResult) -> str:
    lines = [
        "",
        "## Adversarial regression gate",
        "",
        f"Status: **{gate.status}**; baseline run: {gate.baseline_run_id or 'none'}; "
        f"recorded: {'yes' if gate.recorded else 'no'}.",
        "",
    ]
    if gate.checks:
        lines += [
            "| target | baseline | current | drop | max drop | status |",
            "|---|---|---|---|---|---|",
        ]
        for c in gate.checks:
            cells = [
                "n/a" if v is None else f"{v:.4f}"
                for v in (c.baseline_score, c.current_score, c.drop)
            ]
            lines.append(f"| {c.target} | {' | '.join(cells)} | {c.max_drop:.4f} | {c.status} |")
        lines.append("")
    return "\n".join(lines)
