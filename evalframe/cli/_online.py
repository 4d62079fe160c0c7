"""``evalframe online score|status`` and ``evalframe promote-online``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from evalframe.cli._options import (
    ProviderSettings,
    emit,
    format_option,
    open_store,
    out_option,
    own_files,
    provider_options,
    store_option,
)
from evalframe.core._online import DEFAULTS

__all__ = ["online", "promote_online"]


@click.group()
def online() -> None:
    """Score production captures (ef.online.capture) and watch their pass rate."""


@online.command("score")
@store_option()
@click.option("--dataset", help="Only this dataset's captures.")
@click.option(
    "-m",
    "--metric",
    default=DEFAULTS["metric"],
    show_default=True,
    metavar="SPEC",
    help="The metric captures are scored with.",
)
@click.option(
    "--pass-threshold",
    type=click.FloatRange(0.0, 1.0),
    default=DEFAULTS["pass_threshold"],
    show_default=True,
    help="A capture passes at or above this score.",
)
@click.option("--limit", type=click.IntRange(min=1), help="At most N captures, oldest first.")
@provider_options
def score_cmd(
    store_path: Path | None,
    dataset: str | None,
    metric: str,
    pass_threshold: float,
    limit: int | None,
    provider_settings: ProviderSettings,
) -> None:
    """Score the captures not scored yet; text not retained is dropped once scored."""
    from evalframe.engine._online import score_pending

    scored = score_pending(
        open_store(store_path),
        dataset=dataset,
        metric=metric,
        pass_threshold=pass_threshold,
        limit=limit,
        providers=provider_settings.build(),
    )
    errors = scored.get_column("error").is_not_null().sum()
    passed = scored.get_column("passed").sum()
    click.echo(f"scored {scored.height} captures: {passed} passed, {errors} could not be scored")


@online.command("status")
@click.argument("dataset")
@store_option()
@click.option("--window", type=click.IntRange(min=1), default=DEFAULTS["window"], show_default=True,
              help="The latest N scores the pass rate is taken over.")  # fmt: skip
@click.option("--min-samples", type=click.IntRange(min=1), default=DEFAULTS["min_samples"],
              show_default=True, help="No alert with fewer scores in the window.")  # fmt: skip
@click.option("--threshold", type=click.FloatRange(0.0, 1.0), default=DEFAULTS["alert_threshold"],
              show_default=True, help="Alert when the pass rate falls below this.")  # fmt: skip
@click.option("--days", type=click.IntRange(1, 365), default=30, show_default=True,
              help="Days of daily trend.")  # fmt: skip
@click.option("--chart", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the daily pass rate as an SVG chart here.")  # fmt: skip
@format_option("fmt", "text", "json")
@out_option()
def status_cmd(
    dataset: str,
    store_path: Path | None,
    window: int,
    min_samples: int,
    threshold: float,
    days: int,
    chart: Path | None,
    fmt: str,
    out: Path | None,
) -> None:
    """Exit 1 when DATASET's online pass rate dropped below --threshold over the latest
    --window scores (with at least --min-samples of them); print the daily trend."""
    from evalframe.engine._online import status, trend
    from evalframe.views._online import status_text, trend_svg

    path = open_store(store_path)
    result = status(path, dataset, window=window, min_samples=min_samples, threshold=threshold)
    daily = trend(path, dataset, days=days)
    if fmt == "json":
        doc = {**result.to_dict(), "trend": [
            {**r, "date": str(r["date"])} for r in daily.to_dicts()
        ]}  # fmt: skip
        emit(json.dumps(doc, indent=2) + "\n", out)
    else:
        emit(status_text(result, daily), out)
    if chart is not None:
        chart.write_text(trend_svg(dataset, daily, threshold), encoding="utf-8")
        click.echo(f"wrote {chart}", err=True)
    if result.dropped:
        raise SystemExit(1)


@click.command("promote-online")
@click.argument("dataset")
@store_option()
@click.option("--all", "all_rows", is_flag=True, help="Passing captures too, not only failing.")
@click.option("--max-score", type=float, help="Only captures scored at or below this.")
@click.option("--since", "since_days", type=click.IntRange(min=1), help="Only the last N days.")
@click.option("--limit", type=click.IntRange(min=1), default=DEFAULTS["limit"], show_default=True)
@click.option("--merge", type=click.Path(dir_okay=False, path_type=Path),
              help="A dataset to extend (YAML or JSONL): its samples come first and stay as "
              "written (new ones are added after its last sample); captures already in it (by "
              "row hash) are skipped.")  # fmt: skip
@click.option("--metrics", help="Comma-separated metrics for a new file's metrics: list.")
@click.option(
    "--name", help="A new file's dataset name (default: the merge target's, else DATASET.online)."
)
@click.option("--allow-unredacted", is_flag=True,
              help="Promote captures kept without a redactor.")  # fmt: skip
@out_option("Write the dataset YAML here (default: --merge, else stdout): a new file, or a "
            "promotion file evalframe wrote, which keeps its samples.")  # fmt: skip
@click.option("--force", is_flag=True,
              help="Rewrite the file written (--out, else --merge) as one YAML document of its "
              "samples and the promoted ones, even a file evalframe did not write; never the "
              "store.")  # fmt: skip
def promote_online(
    dataset: str,
    store_path: Path | None,
    all_rows: bool,
    max_score: float | None,
    since_days: int | None,
    limit: int,
    merge: Path | None,
    metrics: str | None,
    name: str | None,
    allow_unredacted: bool,
    out: Path | None,
    force: bool,
) -> None:
    """Turn DATASET's failing production captures into dataset samples, worst first.

    Only captures kept with retention on can be promoted (and only redacted ones, unless
    --allow-unredacted); each becomes online-<hash> with metadata naming its capture, score,
    metric, judge model and time. A capture the dataset reader would refuse (nested past its
    depth limit, say) is skipped and named, and the file written is read back before it
    replaces the old one: it always loads.
    """
    from evalframe.core._promotion_file import check_target
    from evalframe.core._safe_write import real_target, same_file

    target = out or merge
    in_place = target is not None and merge is not None and same_file(target, merge)
    protected = own_files("out", "merge")
    if target is not None:  # refused before reading the store, not after
        check_target(target, protected, force=force, any_dataset=in_place)
    from evalframe.engine._online import candidates

    found = candidates(
        open_store(store_path),
        dataset,
        all_rows=all_rows,
        max_score=max_score,
        since_days=since_days,
        limit=limit,
        merge=merge,
        name=name,
        metrics=[m.strip() for m in metrics.split(",") if m.strip()] if metrics else None,
        allow_unredacted=allow_unredacted,
    )
    skipped = ", ".join(
        f"{v} {k.replace('_', ' ')}" for k, v in found.counts.items() if k != "promoted"
    )
    summary = f"promoted {found.counts['promoted']} captures (skipped: {skipped})"
    if target is None:
        from evalframe.core._yaml import dump_yaml

        emit(dump_yaml(found.document), None)
    else:
        summary += _write_promoted(found, real_target(target), protected, in_place, force)
    click.echo(summary, err=True)
    for skip in found.unloadable:
        click.echo(f"skipped {skip.sample_id}: it would not load: {skip.reason}", err=True)


def _write_promoted(
    found: Any, target: Path, protected: dict[str, str], in_place: bool, force: bool
) -> str:
    """Write the promoted samples to ``target`` (under its lock); what was done, to end the
    summary line."""
    from evalframe.core._promotion_file import check_target, promotion_error, write_samples
    from evalframe.core._safe_write import locked

    samples = found.promoted if in_place and not force else found.existing + found.promoted
    try:
        with locked(target, "Promotion file"):
            check_target(target, protected, force=force, any_dataset=in_place)
            written = write_samples(
                target, samples, kind="online", name=found.name, metrics=found.metrics or (),
                force=force, any_dataset=in_place,
            )  # fmt: skip
    except OSError as exc:
        raise promotion_error(exc, target) from exc
    held = f" ({len(written.skipped)} already in it)" if written.skipped else ""
    if not written.added:
        return f"; {target} not written: nothing to add{held}"
    extra = f" after its {written.kept} sample(s)" if written.kept else ""
    return f"; wrote {written.added} sample(s) to {target}{extra}{held}"
