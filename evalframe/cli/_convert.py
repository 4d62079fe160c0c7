"""``evalframe convert``: another tool's evaluation data as a dataset and saved outputs."""

from __future__ import annotations

from pathlib import Path

import click

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
def convert(
    source: str,
    file: Path,
    to: Path,
    outputs: Path | None,
    pairs: tuple[str, ...],
    name: str | None,
) -> None:
    """Convert FILE (Ragas, DeepEval, Inspect, promptfoo or Hugging Face data) to an
    evalframe dataset (--to) and saved outputs (--outputs)."""
    from evalframe.io._importers import SOURCES, parse_mapping

    imported = SOURCES[source](
        file, to=to, outputs=outputs, mapping=parse_mapping(pairs), name=name
    )
    wrote = f"wrote {imported.dataset.height} sample(s) to {to}"
    if outputs is not None and imported.outputs is not None:
        wrote += f" and {imported.outputs.height} output(s) to {outputs}"
    click.echo(wrote)
    if len(imported.variant_files) > 1:  # epochs, or prompt and provider pairs
        click.echo(f"{len(imported.variant_files)} sets of outputs, one file each:")
        for label, path in imported.variant_files.items():
            click.echo(f"  {label}: {path}")
