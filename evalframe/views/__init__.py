"""Views: the report JSON, Markdown, HTML, charts and comparison rendering.

Importing this package registers the views that core values reach through the lazy seam
(``Run.report()``, ``Run.plot``, reprs, ``Comparison.to_markdown()``, ``GateResult.to_text()``,
``Store.plot``), and the renderings the report document's methods reach the same way
(``Report.to_markdown()``, ``to_html()``, its reprs and its streamed JSON), since the renderers
import the document and never the reverse; see ``evalframe.core._seam``. ``plot`` is the public
chart namespace.
"""

from __future__ import annotations

from evalframe.core import _seam
from evalframe.views import _compare_render, _html, _markdown, _report_build, _report_json, plot

__all__ = ["plot"]

_seam.provide("build_report", _report_build.build_report)
_seam.provide("comparison_html", _html.comparison_html)
_seam.provide("comparison_markdown", _compare_render.render)
_seam.provide("comparison_plot", plot.ComparisonPlot)
_seam.provide("comparison_text", _html.comparison_text)
_seam.provide("gate_text", _compare_render.gate_text)
_seam.provide("report_html", _html.report_html)
_seam.provide("report_json_parts", _report_json.report_json_parts)
_seam.provide("report_markdown", _markdown.render)
_seam.provide("report_page", _html.page)
_seam.provide("report_text", _html.report_text)
_seam.provide("run_html", _html.run_html)
_seam.provide("run_plot", plot.RunPlot)
_seam.provide("run_text", _html.run_text)
_seam.provide("runs_html", _html.runs_html)
_seam.provide("store_plot", plot.StorePlot)
