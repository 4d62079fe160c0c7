"""Views: the report JSON, Markdown, HTML, charts and comparison rendering.

Importing this package registers the views that core values reach through the lazy seam
(``Run.report()``, ``Run.plot``, reprs, ``Comparison.to_markdown()``, ``GateResult.to_text()``,
``Store.plot``), and the renderings the report document's methods reach the same way
(``Report.to_markdown()``, ``to_html()``, its reprs and its streamed JSON), since the renderers
import the document and never the reverse; see ``evalframe.core._seam``. ``plot`` is the public
chart namespace.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalframe.core import _seam
from evalframe.views import _compare_render, _html, _markdown, _report_build, plot

if TYPE_CHECKING:
    from collections.abc import Iterator

    from evalframe.core._run import Run
    from evalframe.views._report import Report

__all__ = ["plot"]


def _report_json_parts(
    run: Run, /, *, include_evidence: bool = False, head: Report | None = None
) -> Iterator[memoryview]:
    # The streaming writer (and its compiled layout) loads when a report is first written.
    from evalframe.views._report_json import report_json_parts

    return report_json_parts(run, include_evidence=include_evidence, head=head)


def _report_json_text(
    run: Run, /, *, include_evidence: bool = False, head: Report | None = None
) -> str:
    from evalframe.views._report_json import report_json_text

    return report_json_text(run, include_evidence=include_evidence, head=head)


_seam.build_report.provide(_report_build.build_report)
_seam.comparison_html.provide(_html.comparison_html)
_seam.comparison_markdown.provide(_compare_render.render)
_seam.comparison_plot.provide(plot.ComparisonPlot)
_seam.comparison_text.provide(_html.comparison_text)
_seam.gate_text.provide(_compare_render.gate_text)
_seam.report_html.provide(_html.report_html)
_seam.report_json_parts.provide(_report_json_parts)
_seam.report_json_text.provide(_report_json_text)
_seam.report_markdown.provide(_markdown.render)
_seam.report_page.provide(_html.page)
_seam.report_text.provide(_html.report_text)
_seam.run_html.provide(_html.run_html)
_seam.run_plot.provide(plot.RunPlot)
_seam.run_text.provide(_html.run_text)
_seam.runs_html.provide(_html.runs_html)
_seam.store_plot.provide(plot.StorePlot)
