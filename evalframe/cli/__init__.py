"""The ``evalframe`` command line: parse, call the library, render. No business logic here.

Exit codes: 0 on a clean run, 1 when any (execution, metric) pair could not be scored or a
gate failed, 2 on usage or input errors (a one-paragraph message on stderr, no traceback).
"""

from __future__ import annotations

import sys
from typing import Any

import click

from evalframe._version import __version__
from evalframe.core._errors import EvalframeError
from evalframe.core._progress import set_quiet

__all__ = ["cli", "main"]


class _Group(click.Group):
    """Turns evalframe's errors into a message and exit code 2, never a traceback."""

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        set_quiet(False)  # until this command line says --quiet
        return super().make_context(*args, **kwargs)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (EvalframeError, FileNotFoundError, ValueError, ModuleNotFoundError) as exc:
            click.echo(f"error: {exc}", err=True)
            raise SystemExit(2) from None
        finally:
            set_quiet(False)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="evalframe")
def cli() -> None:
    """Evaluate LLM, RAG and agent systems with dataframes."""


def _register_commands() -> None:
    from evalframe.cli import (
        _adversarial,
        _brief,
        _calibrate,
        _convert,
        _export,
        _metrics,
        _online,
        _options,
        _quiet,
        _report,
        _run,
        _run_set,
        _store,
        _synthesize,
        _view,
    )

    cli.add_command(_run.run)
    cli.add_command(_metrics.metrics)
    cli.add_command(_report.report)
    _store.register(cli)
    cli.add_command(_calibrate.calibrate)
    cli.add_command(_calibrate.estimate)
    cli.add_command(_brief.brief)
    cli.add_command(_online.online)
    cli.add_command(_online.promote_online)
    cli.add_command(_adversarial.adversarial)
    cli.add_command(_run_set.run_set)
    cli.add_command(_export.export_cmd)
    cli.add_command(_convert.convert)
    cli.add_command(_view.view)
    cli.add_command(_synthesize.synthesize)
    _options.guard_commands(cli)
    _quiet.add_quiet(cli)


_register_commands()


def main(argv: list[str] | None = None) -> None:
    """Console entry point."""
    cli.main(args=argv if argv is not None else sys.argv[1:], prog_name="evalframe")
