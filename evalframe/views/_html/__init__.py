"""Rich HTML and plain-text views of runs, reports, comparisons and store listings.

Jupyter shows the HTML fragments (``Run._repr_html_``, ``Report._repr_html_``, ...); a
terminal gets the plain-text views. Both read the report document (``evalframe.report.v1``
keys), so a run, a report built from it and a report read back from JSON look the same.
Histograms are drawn as small inline SVGs that need no JavaScript and no extra package.

``page`` turns a report into one self-contained HTML file (the ``evalframe report`` command):
the same tables plus interactive Vega-Lite charts whose JavaScript is inlined from
``vl-convert-python`` (the ``viz`` extra). A Content-Security-Policy forbids every network
request, so the file renders the same on an air-gapped CI runner as on a laptop.

Examples:
    >>> import evalframe as ef
    >>> ds = ef.Dataset.from_records(
    ...     [{"id": "q1", "input": {"q": "2+2?"}, "expected_output": "4"}], name="math")
    >>> run = ef.evaluate(ds, outputs={"q1": "4"}, metrics=["exact-match"], run_id="r1")
    >>> from evalframe.views._html import run_text
    >>> print(run_text(run))
    evalframe run r1 — math
    1 samples · 1 executions · 0 errored · 0 failures · macro-F1 1.0000
    <BLANKLINE>
    metric       mean    p50     p95     pass-rate  scored  errors
    exact-match  1.0000  1.0000  1.0000  1.0000     1       0
"""

from __future__ import annotations

from evalframe.views._html._compare import comparison_html, comparison_text
from evalframe.views._html._page import page
from evalframe.views._html._parts import CSS, MAX_FAILURES
from evalframe.views._html._run import report_html, report_text, run_document, run_html, run_text
from evalframe.views._html._runs import runs_html, runs_text

__all__ = [
    "CSS",
    "MAX_FAILURES",
    "comparison_html",
    "comparison_text",
    "page",
    "report_html",
    "report_text",
    "run_document",
    "run_html",
    "run_text",
    "runs_html",
    "runs_text",
]
