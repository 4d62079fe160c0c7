"""``evalframe calibrate`` and ``evalframe estimate``: how far to trust a judge, and what the
metric would read with humans in the loop."""

from __future__ import annotations

import json
from pathlib import Path

import click

from evalframe.cli._options import (
    ProviderSettings,
    emit,
    format_option,
    open_store,
    out_option,
    provider_options,
    store_option,
)

__all__ = ["calibrate", "estimate"]

_CALIBRATE_EXIT = (
    "Exit codes: 0 when agreement reaches --min-agreement with no self-preference violation "
    "and every case scored; 1 otherwise; 2 on usage or input errors (a malformed case file)."
)


@click.command(epilog=_CALIBRATE_EXIT)
@click.argument("cases", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--min-agreement",
    type=click.FloatRange(0.0, 1.0),
    default=0.8,
    show_default=True,
    help="Fail below this share of cases where judge and human verdicts agree.",
)
@click.option(
    "--model-under-test",
    metavar="MODEL",
    help="The model that wrote the answers; judging with the same model is a "
    "self-preference violation (exit 1).",
)
@click.option(
    "--threshold",
    type=click.FloatRange(0.0, 1.0),
    default=0.5,
    show_default=True,
    help="The judge's verdict is pass at or above this score.",
)
@click.option(
    "--suggest",
    type=click.IntRange(min=1),
    metavar="N",
    help="Instead of calibrating: pick which N rows of --run to label next, to narrow "
    "`evalframe estimate`'s interval most (estimate afterwards with the same --strata).",
)
@click.option(
    "--run",
    "run_ref",
    metavar="RUN",
    help="The stored run: with --suggest, or without CASES to use the labels in the store.",
)
@click.option(
    "--metric", metavar="METRIC", help="With --run: the judged metric (e.g. llm-as-judge)."
)
@click.option(
    "--labels",
    type=click.Path(dir_okay=False, path_type=Path),
    help="With --suggest: the labels you have (CSV, JSON, JSONL or Parquet; default: the "
    "run's labels in the store).",
)
@click.option(
    "--strata",
    type=click.IntRange(1, 20),
    default=5,
    show_default=True,
    help="With --suggest: judge-score bins.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="With --suggest.")
@format_option("fmt", "markdown", "json")
@out_option()
@store_option(help="Save the calibration to this run store (and, with --suggest, read --run).")
@provider_options
def calibrate(
    cases: Path | None,
    min_agreement: float,
    model_under_test: str | None,
    threshold: float,
    suggest: int | None,
    run_ref: str | None,
    metric: str | None,
    labels: Path | None,
    strata: int,
    seed: int,
    fmt: str,
    out: Path | None,
    store_path: Path | None,
    provider_settings: ProviderSettings,
) -> None:
    """Measure a judge against human-labelled CASES (eval-harness.calibration.v1).

    Each case is judged with the file's metric (default llm-as-judge). Reported: percent
    agreement and the confusion of verdicts, Cohen's kappa with a 95% interval, weighted
    kappa when cases carry graded human_score labels, agreement per tag, length bias
    (Spearman of answer length against score; a warning at |rho| >= 0.4) and the
    self-preference check. With --store the calibration is kept, and `evalframe runs`
    shows its agreement next to runs of the same metric and judge model.

    Without CASES, --run RUN --metric METRIC --store DB calibrates the run's judge against
    the human labels kept in the store (`evalframe view`'s Label page): the run's own
    scores are the judge's, so no judge is called.
    """
    if suggest is not None:
        _suggest(suggest, run_ref, metric, labels, strata, seed, fmt, out, store_path)
        return
    from evalframe.views._calibration import calibration_markdown

    if cases is None:
        if run_ref is None or metric is None:
            raise click.UsageError(
                "Pass a CASES file, or --run RUN --metric METRIC --store DB to calibrate "
                "against the labels kept in the store (or --suggest N --run RUN --metric M)."
            )
        from evalframe.engine._calibrate import calibrate_labels

        with open_store(store_path) as store:
            result = calibrate_labels(
                store,
                run_ref,
                metric,
                threshold=threshold,
                min_agreement=min_agreement,
                model_under_test=model_under_test,
            )
    else:
        from evalframe.engine._calibrate import calibrate as run_calibration

        result = run_calibration(
            cases,
            providers=provider_settings.build(),
            threshold=threshold,
            min_agreement=min_agreement,
            model_under_test=model_under_test,
            store=store_path,
        )
    if fmt == "json":
        text = json.dumps(result.to_dict(), indent=2, ensure_ascii=False) + "\n"
    else:
        text = calibration_markdown(result)
    emit(text, out)
    if result.length_bias_warning:
        click.echo(
            f"warning: length bias {result.length_bias_correlation:+.4f} (|rho| >= "
            f"{result.length_bias_warn:g}): the judge's scores follow answer length",
            err=True,
        )
    if not result.passed:
        raise SystemExit(1)


def _suggest(
    n: int,
    run_ref: str | None,
    metric: str | None,
    labels: Path | None,
    strata: int,
    seed: int,
    fmt: str,
    out: Path | None,
    store_path: Path | None,
) -> None:
    from evalframe.core._estimate import suggest_labels
    from evalframe.engine._calibrate import stored_labels

    if run_ref is None or metric is None:
        raise click.UsageError("--suggest needs --run RUN and --metric METRIC.")
    with open_store(store_path) as store:
        run = store.load(run_ref)
        have = labels if labels is not None else stored_labels(store, run.run_id, metric)
    known = have if isinstance(have, Path) or have.height else None  # none labelled yet
    picks = suggest_labels(run, metric=metric, n=n, labels=known, strata=strata, seed=seed)
    if fmt == "json":
        text = json.dumps(
            {"metric": metric, "strata": strata, "seed": seed, "rows": picks.to_dicts()},
            indent=2,
        )
        emit(text + "\n", out)
    else:
        emit(picks.write_csv(), out)
    click.echo(
        f"label these {picks.height} rows, then: evalframe estimate {run_ref} --metric "
        f"{metric} --labels FILE --strata {strata}",
        err=True,
    )


@click.command()
@click.argument("run_ref", metavar="RUN")
@click.option(
    "--labels",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Human labels: sample_id and label (pass/fail or a score in [0, 1]); default: the "
    "run's labels in the store (`evalframe view`).",
)
@click.option("--metric", required=True, metavar="METRIC", help="The judged metric.")
@click.option(
    "--strata",
    type=click.IntRange(1, 20),
    default=1,
    show_default=True,
    help="Judge-score bins: 1 for labels drawn at random, the --strata of "
    "`calibrate --suggest` for labels it chose.",
)
@click.option("--no-cohorts", is_flag=True, help="Only the whole run, not each tag.")
@format_option("fmt", "markdown", "json")
@out_option()
@store_option()
def estimate(
    run_ref: str,
    labels: Path | None,
    metric: str,
    strata: int,
    no_cohorts: bool,
    fmt: str,
    out: Path | None,
    store_path: Path | None,
) -> None:
    """Estimate a judged metric's mean and pass-rate from a stored RUN and human labels.

    Prints the prediction-powered estimate (judge scores on every row, corrected by the
    human labels on a random subset) with its 95% interval, beside the judge-only and
    human-only figures, overall and per tag.
    """
    from evalframe.core._estimate import estimate as run_estimate
    from evalframe.engine._calibrate import stored_labels
    from evalframe.views._calibration import estimate_markdown

    with open_store(store_path) as store:
        run = store.load(run_ref)
        have = labels if labels is not None else stored_labels(store, run.run_id, metric)
    if not isinstance(have, Path) and have.height == 0:
        raise click.UsageError(
            f"Run {run.run_id} has no human label for {metric!r} in the store: label rows "
            "with `evalframe view` (its Label page), or pass --labels FILE."
        )
    result = run_estimate(run, labels=have, metric=metric, strata=strata, cohorts=not no_cohorts)
    if fmt == "json":
        emit(json.dumps(result.to_dict(), indent=2) + "\n", out)
    else:
        emit(estimate_markdown(result), out)
