"""``--quiet`` (``-q``) on every command: results and errors only on stderr.

Long work shows its progress on stderr when stderr is a terminal; ``--quiet`` turns that
off, and the one-time notices too (a kernel family compiling for the first time). Added to
every command (and group) in one place, so each has it under the same name.
"""

from __future__ import annotations

import click

from evalframe.core._progress import set_quiet

__all__ = ["add_quiet"]

_HELP = "No progress display and no notices on stderr: results and errors only."


def _quiet(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        set_quiet(True)


def add_quiet(command: click.Command) -> None:
    """Give ``command`` and every command under it a ``--quiet`` flag."""
    if not any(isinstance(p, click.Option) and "--quiet" in p.opts for p in command.params):
        command.params.append(
            click.Option(
                ["--quiet", "-q"],
                is_flag=True,
                expose_value=False,
                is_eager=True,
                callback=_quiet,
                help=_HELP,
            )
        )
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            add_quiet(sub)
