"""``evalframe metrics``: list the registry."""

from __future__ import annotations

import json
from typing import Any

import click

from evalframe.cli._options import format_option
from evalframe.metrics import available
from evalframe.metrics._spec import format_value


@click.command()
@format_option("fmt", "table", "json")
@click.option(
    "--prompts",
    "show_prompts",
    is_flag=True,
    help="List the judge prompts instead: id, version, description (--format json adds the "
    "template and the reply's JSON schema).",
)
def metrics(fmt: str, show_prompts: bool) -> None:
    """List every registered metric: name, family, dimension, threshold, parameters."""
    if show_prompts:
        _prompts(fmt)
        return
    rows: list[dict[str, Any]] = []
    for d in available():
        params = [
            f"{p.name}" + ("" if p.required else f"={format_value(p.default)}") for p in d.params
        ]
        rows.append(
            {
                "name": d.name,
                "family": d.family,
                "dimension": d.dimension,
                "threshold": d.threshold,
                "parameters": params,
                "summary": d.summary,
            }
        )
    if fmt == "json":
        click.echo(json.dumps(rows, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table("name", "family", "dimension", "threshold", "parameters", "summary")
    for r in rows:
        table.add_row(
            r["name"],
            r["family"],
            r["dimension"],
            f"{r['threshold']:g}",
            ", ".join(r["parameters"]) or "-",
            r["summary"],
        )
    Console(width=160).print(table)


def _prompts(fmt: str) -> None:
    """The judge prompts shipped with the metric families, by id."""
    from evalframe.metrics._judge_engine import PROMPTS

    available()  # loads the built-in families, which register their prompts
    found = [PROMPTS[k] for k in sorted(PROMPTS)]
    if fmt == "json":
        rows = [
            {
                "id": p.id,
                "version": p.version,
                "key": p.key,
                "description": p.description,
                "template": p.template,
                "reply_schema": p.json_schema(),
            }
            for p in found
        ]
        click.echo(json.dumps(rows, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table("id", "version", "key", "description")
    for p in found:
        table.add_row(p.id, str(p.version), p.key, p.description)
    Console(width=160).print(table)
