"""Options more than one command takes, and the output ``--out`` redirects."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

__all__ = [
    "EXIT_CODES",
    "STORE_ENV",
    "emit",
    "format_option",
    "out_option",
    "provider_limit_options",
    "store_option",
]

F = TypeVar("F", bound=Callable[..., Any])

STORE_ENV = "EVALFRAME_STORE"

EXIT_CODES = (
    "Exit codes: 0 on a clean run, 1 when any (sample, metric) could not be scored or a gate "
    "failed, 2 on usage or input errors, a store that cannot be read or written included (a "
    "one-paragraph message, no traceback)."
)
"""The exit-code contract, shown at the end of ``--help`` of every command it governs."""


def store_option(help: str = f"The DuckDB run store (default: ${STORE_ENV}).") -> Callable[[F], F]:
    """``--store PATH`` (the ``store_path`` argument), defaulting to ``$EVALFRAME_STORE``."""
    return click.option(
        "--store",
        "store_path",
        envvar=STORE_ENV,
        type=click.Path(dir_okay=False, path_type=Path),
        help=help,
    )


def format_option(dest: str, *choices: str) -> Callable[[F], F]:
    """``--format`` (the ``dest`` argument): one of ``choices``, the first by default."""
    return click.option(
        "--format", dest, type=click.Choice(choices), default=choices[0], show_default=True
    )


def out_option(help: str = "Write the report here instead of stdout.") -> Callable[[F], F]:
    """``--out PATH``: a file to write instead of printing."""
    return click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help=help)


def provider_limit_options(f: F) -> F:
    """``--timeout``, ``--retries`` and ``--deadline`` for provider calls (the ``timeout``,
    ``retries`` and ``deadline`` arguments).

    Their ``EVALFRAME_*`` variables are read by ``Providers.from_env``, so a bad value is an
    error naming the variable, whether or not an option was given.
    """
    seconds = click.FloatRange(min=0.0, min_open=True)
    options = (
        click.option(
            "--timeout",
            type=seconds,
            metavar="SECONDS",
            help="Seconds one provider request may take, reading the whole reply included "
            "(default: $EVALFRAME_TIMEOUT, else 30 for embeddings and 60 for the judge).",
        ),
        click.option(
            "--retries",
            type=click.IntRange(min=0),
            metavar="N",
            help="Extra attempts after a provider connection error, timeout, 429 or 5xx "
            "(default: $EVALFRAME_RETRIES, else 3).",
        ),
        click.option(
            "--deadline",
            type=seconds,
            metavar="SECONDS",
            help="Seconds for all provider calls of the run; calls after it become their "
            "rows' errors and the scores so far are kept (default: $EVALFRAME_DEADLINE, "
            "else none).",
        ),
    )
    for option in reversed(options):
        f = option(f)
    return f


def emit(text: str | bytes, out: Path | None, *, note: str = "") -> None:
    """Print ``text`` (bytes are UTF-8), or write it to ``out`` and say so on stderr (``note``
    follows the path)."""
    if out is None:
        click.echo(text, nl=False)
    else:
        if isinstance(text, bytes):
            out.write_bytes(text)
        else:
            out.write_text(text, encoding="utf-8")
        click.echo(f"wrote {out}{note}", err=True)
