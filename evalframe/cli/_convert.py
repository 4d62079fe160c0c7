"""``evalframe convert``: another tool's evaluation data as a dataset and saved outputs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from evalframe.core._errors import DatasetError

__all__ = ["convert"]


@click.command()
@click.option(
    "--from",
    "source",
    required=True,
    type=click.Choice(["ragas", "deepeval", "inspect", "promptfoo", "hf"]),
    help="The tool that wrote FILE.",
)
@click.argument("file", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--to",
    "to",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The dataset YAML to write.",
)
@click.option(
    "--outputs",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the source's outputs as saved outputs JSON here (several sets, such as "
    "Inspect epochs or promptfoo prompt/provider pairs: the first here, each other beside it "
    "as <stem>.<label>.json).",
)
@click.option(
    "--map",
    "pairs",
    multiple=True,
    metavar="COLUMN=FIELD",
    help="Map a source column to a field (id, expected_output, tags, actual_output, contexts, "
    "input.KEY, metadata.KEY, trajectory.KEY, outputs.COLUMN). Repeatable.",
)
@click.option("--name", default=None, help="The dataset's name (default: from the source).")
@click.option(
    "--split",
    default=None,
    help="hf: the split of a DatasetDict or of a folder of exported files (default: test if "
    "there is one, else the first).",
)
def convert(
    source: str,
    file: Path,
    to: Path,
    outputs: Path | None,
    pairs: tuple[str, ...],
    name: str | None,
    split: str | None,
) -> None:
    """Convert FILE (Ragas, DeepEval, Inspect, promptfoo or Hugging Face data) to an
    evalframe dataset (--to) and saved outputs (--outputs)."""
    from evalframe.io._importers import SOURCES, parse_mapping

    options: dict[str, Any] = {"split": split} if split is not None else {}
    if split is not None and source != "hf":
        raise click.UsageError("--split applies to --from hf only.")
    try:
        imported = SOURCES[source](
            file, to=to, outputs=outputs, mapping=parse_mapping(pairs), name=name, **options
        )
    except (AttributeError, TypeError, KeyError, IndexError) as exc:  # a shape no check named
        raise DatasetError(
            f"{file}: not a {source} file evalframe can read ({type(exc).__name__}: {exc})."
        ) from exc
    except RecursionError as exc:
        raise DatasetError(f"{file}: nested too deeply to read.") from exc
    wrote = f"wrote {imported.dataset.height} sample(s) to {to}"
    if outputs is not None and imported.outputs is not None:
        wrote += f" and {imported.outputs.height} output(s) to {outputs}"
    click.echo(wrote)
    if imported.unanswered is not None:
        click.echo(
            f"{imported.unanswered.height} sample(s) without an output (goldens) went to "
            f"{imported.unanswered_file}: run them with --system; the samples in {to} are the "
            "ones the outputs answer."
        )
    if outputs is None and imported.outputs is not None:
        click.echo(
            f"the source holds {imported.outputs.height} output(s): pass --outputs FILE to "
            "write them."
        )
    if len(imported.variant_files) > 1:  # epochs, or prompt and provider pairs
        click.echo(f"{len(imported.variant_files)} sets of outputs, one file each:")
        for label, path in imported.variant_files.items():
            click.echo(f"  {label}: {path}")
    for note in imported.notes:
        click.echo(f"note: {note}", err=True)
