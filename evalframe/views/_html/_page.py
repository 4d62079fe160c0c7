"""One self-contained HTML file for a report: tables and charts, no network at all."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from evalframe.views._html._parts import escape, script_json
from evalframe.views._html._run import report_html

if TYPE_CHECKING:
    from evalframe.core._run import Run

__all__ = ["document", "page"]

_CSP = (
    "default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; "
    "style-src 'unsafe-inline'; img-src data:; font-src data:"
)


def _chart_specs(doc: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    from evalframe.views import plot

    specs = [("Score histograms", plot.histograms(doc).to_dict())]
    if doc["cohorts"]:
        specs.append(("Cohort x metric pass-rate", plot.heatmap(doc).to_dict()))
    return specs


def _svg_charts(specs: Sequence[tuple[str, dict[str, Any]]]) -> str:
    """The charts rendered to static SVG."""
    from evalframe.views.plot import to_svg

    return "\n".join(
        f'<h3>{escape(label)}</h3><div class="ef-chart" id="ef-chart-{i}">{to_svg(spec)}</div>'
        for i, (label, spec) in enumerate(specs)
    )


def _vega_charts(specs: Sequence[tuple[str, dict[str, Any]]]) -> tuple[str, str]:
    """The charts' placeholders, and the scripts that embed them with Vega-Lite inlined."""
    import vl_convert

    blocks, calls = [], []
    for i, (label, spec) in enumerate(specs):
        blocks.append(
            f'<h3>{escape(label)}</h3><div class="ef-chart vega-chart" id="ef-chart-{i}"></div>'
        )
        data = script_json(spec)
        calls.append(
            f"vegaEmbed('#ef-chart-{i}', {data}, "
            '{"actions": false, "renderer": "svg"}).catch(console.error);'
        )
    # The stub marks ``snippet`` required; at run time it defaults to the bundle that
    # defines window.vegaEmbed, which is what we want.
    bundle: str = vl_convert.javascript_bundle()  # type: ignore[call-arg]
    script = f"<script>{bundle}</script>\n<script>\n{chr(10).join(calls)}\n</script>"
    return "\n".join(blocks), script


def page(
    doc: Mapping[str, Any],
    *,
    charts: Literal["auto", "vega", "svg", "none"] = "auto",
    title: str | None = None,
    run: Run | None = None,
    include_evidence: bool = False,
    max_rows: int = 20,
    explorer: bool = True,
) -> str:
    """One self-contained HTML file for a report: tables, charts and the sample explorer.

    Args:
        doc: a report document.
        charts: ``"vega"`` embeds interactive Vega-Lite charts with their JavaScript inlined;
            ``"svg"`` renders them to static SVG; ``"none"`` keeps only the tables and inline
            histograms; ``"auto"`` is ``"vega"`` when the ``viz`` extra is installed, else
            ``"none"``.
        title: the document title (default: the run and dataset names).
        run: the run the report was built from, when at hand: the explorer then shows
            inputs and expected outputs too (a report JSON holds neither).
        include_evidence: ship sample metadata (citation evidence) and retrieved contexts'
            text in the explorer.
        max_rows: the failing samples listed in the Failing samples section (the explorer
            keeps every execution, up to ``EXPLORER_LIMIT``).
        explorer: add the sample explorer.

    Returns:
        The HTML text, starting with ``<!DOCTYPE html>``.
    """
    if charts == "auto":
        try:
            import altair  # noqa: F401  (a probe for the viz extra)
            import vl_convert  # noqa: F401  (likewise)
        except ImportError:
            charts = "none"
        else:
            charts = "vega"
    body_charts, script = "", ""
    if charts == "svg":
        body_charts = _svg_charts(_chart_specs(doc))
    elif charts == "vega":
        body_charts, script = _vega_charts(_chart_specs(doc))
    name = title or f"evalframe report — {doc.get('run_name') or doc.get('dataset')}"
    if run is not None and "failing_samples" not in doc:
        from evalframe.views._html._run import _failing_of

        # The same list failing_samples() reads from the document, from the run's frames.
        doc = {**doc, "failing_samples": _failing_of(run)}
    body = report_html(doc, charts=body_charts, max_rows=max_rows)
    if explorer:
        from evalframe.views._html._explorer import explorer_data, explorer_html

        data = explorer_data(doc, run=run, include_evidence=include_evidence)
        body += "\n" + explorer_html(data)
    return document(name, f"{body}\n{script}")


def document(title: str, body: str) -> str:
    """A self-contained HTML file around ``body``, its Content-Security-Policy forbidding
    every network request."""
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{escape(title)}</title>\n</head>\n<body>\n{body}\n</body>\n</html>\n"
    )
