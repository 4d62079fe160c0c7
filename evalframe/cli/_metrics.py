"""``evalframe metrics``: list the registry, or the judge prompts."""

from __future__ import annotations

import json
from typing import Any

import click

from evalframe.cli._options import format_option
from evalframe.cli._table import render
from evalframe.metrics import aliases, available
from evalframe.metrics._spec import MetricDef, format_value


@click.command()
@format_option("fmt", "table", "json")
@click.option(
    "--family",
    "families",
    multiple=True,
    metavar="NAME",
    help="Only metrics of this family (lexical, retrieval, ...). Repeatable.",
)
@click.option(
    "--prompts",
    "show_prompts",
    is_flag=True,
    help="List the judge prompts instead: id, version, description (--format json adds the "
    "template and the reply's JSON schema).",
)
def metrics(fmt: str, families: tuple[str, ...], show_prompts: bool) -> None:
    """List every registered metric: name, family, dimension, threshold, parameters and a
    one-line summary (the table fits the terminal; --format json for every field), then the
    aliases (other tools' names for a metric spec)."""
    if show_prompts:
        _prompts(fmt)
        return
    rows: list[dict[str, Any]] = []
    for d in available():
        if families and d.family not in families:
            continue
        rows.append(
            {
                "name": d.name,
                "family": d.family,
                "dimension": d.dimension,
                "threshold": d.threshold,
                "parameters": _params(d),
                "summary": d.summary,
            }
        )
    for a in aliases():
        target = a.definition
        if families and target.family not in families:
            continue
        rows.append(
            {
                "name": a.name,
                "family": target.family,
                "dimension": target.dimension,
                "threshold": a.threshold,
                "parameters": _params(target),
                "summary": f"Alias of {a.target}: {a.note}.",
                "alias_of": a.target,
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


def _params(d: MetricDef) -> list[str]:
    return [f"{p.name}" + ("" if p.required else f"={format_value(p.default)}") for p in d.params]


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
    body = [(p.id, str(p.version), p.key, p.description) for p in found]
    click.echo(render(("id", "version", "key", "description"), body, wrap=("description",)))
