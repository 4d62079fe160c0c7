"""``evalframe convert``: another tool's evaluation data as a dataset and saved outputs."""

from __future__ import annotations

import click

__all__ = ["convert"]


@click.command()
def convert() -> None:
    """Convert another tool's evaluation data (filled in below)."""
