"""``evalframe view``: serve the web viewer over a run store until Ctrl-C."""

from __future__ import annotations

from pathlib import Path

import click

from evalframe.cli._options import STORE_ENV, store_option

__all__ = ["view"]


@click.command()
@store_option()
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="The address to listen on. Any but a loopback address needs a token (one is made "
    "and printed with the address when --token is not given).",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8765,
    show_default=True,
    help="The port (0: any free one).",
)
@click.option(
    "--token",
    envvar="EVALFRAME_VIEW_TOKEN",
    metavar="TOKEN",
    help="Require this token of every request (default: none on loopback, a new one elsewhere).",
)
@click.option("--open", "open_browser", is_flag=True, help="Open the viewer in a browser.")
def view(
    store_path: Path | None, host: str, port: int, token: str | None, open_browser: bool
) -> None:
    """Browse the run store in a web browser: runs, a run's executions, comparisons of
    several runs, trends, online monitoring, the adversarial lane, SQL, and a queue of rows
    to label for `calibrate` and `estimate`. A JSON API is served under /api/v1.

    The store is read, never written, but for the human labels the Label page adds. Serves
    until Ctrl-C.
    """
    from evalframe.views._web import serve

    if store_path is None:
        raise click.UsageError(f"Pass --store PATH or set {STORE_ENV}.")
    if not store_path.is_file():
        raise click.UsageError(f"No store at {store_path}: save a run to it first.")

    def ready(url: str) -> None:
        click.echo(f"evalframe view: serving {store_path} at {url} (Ctrl-C to stop)", err=True)
        if open_browser:
            import webbrowser

            webbrowser.open(url)

    serve(store_path, host=host, port=port, token=token, on_ready=ready)
    click.echo("evalframe view: stopped", err=True)
