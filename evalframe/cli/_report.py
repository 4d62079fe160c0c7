"""``evalframe report``: render a stored run or a report JSON file as HTML, Markdown or JSON."""

from __future__ import annotations

import json
from pathlib import Path

import click

from evalframe.cli._options import (
    EXIT_CODES,
    emit,
    evidence_option,
    format_option,
    max_rows_option,
    out_option,
    store_option,
)
from evalframe.core._errors import EvalframeError
from evalframe.views._report import Report

_REPORT_SCHEMAS = ("evalframe.report.", "eval-harness.report.")


def _read_report_file(path: Path) -> Report:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EvalframeError(f"Cannot read the report file {path}: {exc}") from exc
    version = doc.get("schema_version") if isinstance(doc, dict) else None
    if not isinstance(version, str) or not version.startswith(_REPORT_SCHEMAS):
        raise EvalframeError(
            f"{path} is not a report: expected a JSON object whose schema_version is "
            f"'evalframe.report.v1' or 'eval-harness.report.v1'; got {version!r}."
        )
    return Report(doc)


def _load(ref: str, store: Path | None, *, include_evidence: bool = False) -> Report:
    path = Path(ref)
    if path.is_file():
        return _read_report_file(path)
    if path.suffix.lower() == ".json":
        raise EvalframeError(f"No such report file: {path}")
    if not store:
        raise click.UsageError(
            f"{ref!r} is not a report JSON file, so it names a stored run: pass --store PATH "
            "(or set EVALFRAME_STORE) to say which store to look in."
        )
    if not store.is_file():
        raise EvalframeError(f"No such store file: {store}")
    from evalframe.store import Store

    with Store(store) as db:
        return db.load(ref).report(include_evidence=include_evidence)


@click.command(epilog=EXIT_CODES)
@click.argument("run", metavar="RUN")
@store_option()
@format_option("fmt", "html", "markdown", "json")
@click.option(
    "--charts",
    type=click.Choice(["auto", "vega", "svg", "none"]),
    default="auto",
    show_default=True,
    help="HTML charts: interactive (vega), static SVG, none; auto = vega when the viz "
    "extra is installed.",
)
@max_rows_option()
@out_option()
@evidence_option
def report(
    run: str,
    store_path: Path | None,
    fmt: str,
    charts: str,
    max_rows: int,
    out: Path | None,
    include_evidence: bool,
) -> None:
    """Render RUN's report: one self-contained HTML file (no network), Markdown or JSON.

    RUN is a report JSON file (from `evalframe run --format json`) or a stored run: an id,
    a name, latest, previous, a baseline name or a SQL query returning one run id.
    """
    doc = _load(run, store_path, include_evidence=include_evidence)
    if fmt == "html":
        text = doc.to_html(charts=charts)  # type: ignore[arg-type]  # click.Choice checked it
    elif fmt == "markdown":
        text = doc.to_markdown(max_rows=max_rows)
    else:
        text = doc.to_json()
    emit(text, out, note=f" (run {doc.get('run_id') or doc.get('dataset')})")
