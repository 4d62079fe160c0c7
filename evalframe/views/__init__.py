"""Views: the report JSON, Markdown, HTML, charts and comparison rendering.

Importing this package registers the views that core values reach through the lazy seam
(``Run.report()``, ``Run.plot``, reprs, ``Comparison.to_markdown()``, ``GateResult.to_text()``,
``Store.plot``); see ``evalframe.core._seam``. ``plot`` is the public chart namespace.
"""

from __future__ import annotations

from evalframe.core import _seam
from evalframe.views import _compare_render, _html, _report, plot

__all__ = ["plot"]

_seam.provide("build_report", _report.build_report)
_seam.provide("comparison_html", _html.comparison_html)
_seam.provide("comparison_markdown", _compare_render.render)
_seam.provide("comparison_plot", plot.ComparisonPlot)
_seam.provide("comparison_text", _html.comparison_text)
_seam.provide("gate_text", _compare_render.gate_text)
_seam.provide("run_html", _html.run_html)
_seam.provide("run_plot", plot.RunPlot)
_seam.provide("run_text", _html.run_text)
_seam.provide("runs_html", _html.runs_html)
_seam.provide("store_plot", plot.StorePlot)
