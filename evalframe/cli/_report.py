"""``evalframe report``: render a stored run or a report JSON file as HTML, Markdown or JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from evalframe.core._compare import Comparison
    from evalframe.core._run import Run

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


def _load(
    ref: str, store: Path | None, *, include_evidence: bool = False
) -> tuple[Report, Run | None]:
    """The report RUN names, and the run itself when it is a stored run."""
    path = Path(ref)
    if path.is_file():
        return _read_report_file(path), None
    if path.suffix.lower() == ".json":
        raise EvalframeError(f"No such report file: {path}")
    from evalframe.store import Store

    with Store(_store_of(ref, store)) as db:
        loaded = db.load(ref)
    return loaded.report(include_evidence=include_evidence), loaded


def _store_of(ref: str, store: Path | None) -> Path:
    if not store:
        raise click.UsageError(
            f"{ref!r} is not a report JSON file, so it names a stored run: pass --store PATH "
            "(or set EVALFRAME_STORE) to say which store to look in."
        )
    if not store.is_file():
        raise EvalframeError(f"No such store file: {store}")
    return store


def is_report_file(ref: str) -> bool:
    """Whether a run reference names a report JSON file rather than a stored run."""
    return Path(ref).is_file() or Path(ref).suffix.lower() == ".json"


def comparison_of(run: str, reference: str, store: Path | None, **options: Any) -> Comparison:
    """RUN compared with the reference (deltas are RUN - reference); either may be a stored
    run or a report JSON file (eval-harness's included). ``options`` are ``compare``'s."""
    from evalframe.core._compare import compare

    options.setdefault("label", reference)
    if not (is_report_file(run) or is_report_file(reference)):
        # both stored: the store resolves `previous` relative to RUN
        from evalframe.store import Store

        with Store(_store_of(run, store)) as db:
            return db.compare(reference, run, **options)
    before = _run_of(reference, store)
    after = _run_of(run, store)
    return compare(before, after, **options)


def _run_of(ref: str, store: Path | None) -> Run:
    doc, loaded = _load(ref, store)
    if loaded is not None:
        return loaded
    from evalframe.views._html._report_run import run_from_report

    return run_from_report(doc, source=ref)


def run_of_report_file(path: Path) -> Run:
    """The run a report file describes, to store: eval-harness reports get a run id from the
    file's bytes (``eh-<16 hex>``) and labels naming where they came from."""
    import hashlib

    from evalframe.views._html._report_run import run_from_report

    doc = _read_report_file(path)
    version = str(doc.get("schema_version"))
    run_id = None
    if not doc.get("run_id"):
        run_id = "eh-" + hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    labels = {"imported_from": path.name, "report_schema": version}
    return run_from_report(doc, source=str(path), run_id=run_id, labels=labels)


@click.command(epilog=EXIT_CODES)
@click.argument("run", metavar="RUN")
@store_option()
@format_option("fmt", "html", "markdown", "json")
@click.option(
    "--compare",
    "reference",
    metavar="REF",
    default=None,
    help="Render the comparison of RUN with the reference REF instead (a report JSON file "
    "or a stored run, e.g. baseline or previous): metric deltas with intervals, then the "
    "rows that regressed and improved with both outputs side by side.",
)
@click.option(
    "--charts",
    type=click.Choice(["auto", "vega", "svg", "none"]),
    default="auto",
    show_default=True,
    help="HTML charts: interactive (vega), static SVG, none; auto = vega when the viz "
    "extra is installed.",
)
@max_rows_option()
@evidence_option
@out_option()
def report(
    run: str,
    store_path: Path | None,
    fmt: str,
    reference: str | None,
    charts: str,
    max_rows: int,
    include_evidence: bool,
    out: Path | None,
) -> None:
    """Render RUN's report: one self-contained HTML file (no network), Markdown or JSON.

    RUN is a report JSON file (from `evalframe run --format json`) or a stored run: an id,
    a name, latest, previous, a baseline name or a SQL query returning one run id. The HTML
    page ends with a sample explorer of every execution (inputs and expected outputs shown
    for stored runs; a report file holds neither). With --compare REF it renders the
    comparison of RUN with REF instead.
    """
    if reference is not None:
        comparison = comparison_of(run, reference, store_path)
        if fmt == "html":
            from evalframe.views._html._compare import comparison_page

            text = comparison_page(comparison, max_rows=max_rows)
        elif fmt == "markdown":
            text = comparison.to_markdown(max_rows=max_rows)
        else:
            text = comparison.to_json()
        emit(text, out, note=f" (comparison with {reference})")
        return
    if fmt == "json" and not is_report_file(run):
        from evalframe.store import Store
        from evalframe.views._report_json import report_json_parts

        with Store(_store_of(run, store_path)) as db:
            stored = db.load(run)
        # written from the frames, piece by piece: fast at any size
        parts = report_json_parts(stored, include_evidence=include_evidence)
        emit(parts, out, note=f" (run {stored.run_id})")
        return
    doc, loaded = _load(run, store_path, include_evidence=include_evidence)
    if fmt == "html":
        from evalframe.views._html import page

        text = page(
            doc,
            charts=charts,  # type: ignore[arg-type]  # click.Choice checked it
            run=loaded,
            include_evidence=include_evidence,
            max_rows=max_rows,
        )
    elif fmt == "markdown":
        text = doc.to_markdown(max_rows=max_rows)
    else:
        text = doc.to_json()
    emit(text, out, note=f" (run {doc.get('run_id') or doc.get('dataset')})")
