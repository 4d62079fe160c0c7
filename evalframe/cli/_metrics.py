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
def metrics(fmt: str) -> None:
    """List every registered metric: name, family, dimension, threshold, parameters."""
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
