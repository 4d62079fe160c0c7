"""``evalframe metrics``: list the registry."""

from __future__ import annotations

import json
from typing import Any

import click

from evalframe.cli._options import format_option
from evalframe.cli._table import render
from evalframe.metrics import available
from evalframe.metrics._spec import format_value


@click.command()
@format_option("fmt", "table", "json")
@click.option(
    "--family",
    "families",
    multiple=True,
    metavar="NAME",
    help="Only metrics of this family (lexical, retrieval, ...). Repeatable.",
)
def metrics(fmt: str, families: tuple[str, ...]) -> None:
    """List every registered metric: name, family, dimension, threshold, parameters and a
    one-line summary (the table fits the terminal; --format json for every field)."""
    rows: list[dict[str, Any]] = []
    for d in available():
        if families and d.family not in families:
            continue
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
    body = [
        (
            r["name"],
            r["family"],
            r["dimension"],
            f"{r['threshold']:g}",
            ", ".join(r["parameters"]) or "-",
            r["summary"].replace("``", "`"),
        )
        for r in rows
    ]
    headers = ("name", "family", "dimension", "threshold", "parameters", "summary")
    click.echo(render(headers, body, wrap=("parameters", "summary")))
