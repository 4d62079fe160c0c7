"""``evalframe brief``: a size-bounded review document from a report or a stored run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from evalframe.cli._options import emit, open_store, out_option, store_option

__all__ = ["brief"]


def _json_file(path: Path, what: str) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise click.UsageError(f"{path}: cannot read the {what} JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise click.UsageError(f"{path}: the {what} JSON must be an object.")
    return value


@click.command()
@click.argument("source", metavar="REPORT_OR_RUN")
@click.option(
    "--dataset",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="The dataset file, to quote each failing row's input and expected answer "
    "(a stored run brings its own).",
)
@click.option(
    "--comparison",
    metavar="FILE|RUN",
    help="A comparison JSON file, or a stored reference run to compare against.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["md", "github", "json"]),
    default="md",
    show_default=True,
    help="Markdown, a GitHub <details> block, or JSON (eval-harness.brief.v1).",
)
@click.option(
    "--budget",
    type=click.IntRange(min=2_000),
    default=24_000,
    show_default=True,
    help="The most characters the brief may have; failing rows beyond it are cut, and the "
    "brief says how many it shows.",
)
@out_option("Write the brief here.")
@store_option()
def brief(
    source: str,
    dataset: Path | None,
    comparison: str | None,
    fmt: str,
    budget: int,
    out: Path | None,
    store_path: Path | None,
) -> None:
    """Brief a report JSON file or a stored run for review: an untrusted-data preamble, the
    run in one paragraph, one line per metric, failing rows worst first (each quoting its
    worst execution), the cohorts failures concentrate in, the changes against a reference,
    and the adversarial categories with their frameworks, cut to --budget characters."""
    from evalframe.views._brief import brief as make_brief

    rows: list[dict[str, Any]] = []
    comparison_doc: dict[str, Any] | None = None
    if Path(source).is_file():
        report = _json_file(Path(source), "report")
        if comparison is not None:
            if not Path(comparison).is_file():
                raise click.UsageError("With a report file, --comparison must be a JSON file.")
            comparison_doc = _json_file(Path(comparison), "comparison")
    else:
        store = open_store(store_path)
        run = store.load(source)
        report = dict(run.report())
        rows = run.dataset.select("sample_id", "row_hash", "input", "expected_output").to_dicts()
        if comparison is not None:
            if Path(comparison).is_file():
                comparison_doc = _json_file(Path(comparison), "comparison")
            else:
                comparison_doc = store.compare(comparison, source).to_dict()
    if dataset is not None:
        from evalframe.core._dataset import read_dataset

        table = read_dataset(dataset)
        rows = table.select("sample_id", "row_hash", "input", "expected_output").to_dicts()
    document = make_brief(report, dataset=rows, comparison=comparison_doc, budget=budget)
    emit(document.render(fmt), out)  # type: ignore[arg-type]
