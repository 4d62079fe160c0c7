"""Charts of runs, stored runs and comparisons, built with Altair (the ``viz`` extra).

Each chart is one call, usually through an accessor: ``run.plot.histograms()``,
``run.plot.heatmap()``, ``store.plot.trend(metric="rouge-l")``,
``comparison.plot.deltas()``. They return ordinary Altair charts, so you can restyle,
layer and save them as you would any other; ``to_svg`` and ``to_png`` export them offline
through ``vl-convert-python`` (no browser, no network), and so does Altair's own
``chart.save("chart.png")``.

Every chart is drawn from data aggregated in Polars first (histogram bins, cohort cells,
one point per run, binned deltas), so none of them ever meets Altair's 5,000-row limit.

In a notebook without internet access, Altair's default renderer cannot fetch its
JavaScript: ``alt.renderers.enable("svg")`` (or ``"png"``) renders through vl-convert
instead.

Examples:
    >>> import evalframe as ef
    >>> ds = ef.Dataset.from_records(
    ...     [{"id": "q1", "input": {"q": "2+2?"}, "expected_output": "4"}], name="math")
    >>> run = ef.evaluate(ds, outputs={"q1": "4"}, metrics=["exact-match"])
    >>> chart = run.plot.histograms()
    >>> to_svg(chart).startswith("<svg")
    True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import polars as pl

from evalframe.core import aggregate
from evalframe.core import schema as C
from evalframe.views._format import attempted
from evalframe.views._xml import xml_text

if TYPE_CHECKING:
    import altair as alt

    from evalframe.core._compare import Comparison
    from evalframe.core._run import Run
    from evalframe.store import Store

__all__ = [
    "ComparisonPlot",
    "RunPlot",
    "StorePlot",
    "delta_bins",
    "deltas",
    "heatmap",
    "histograms",
    "paired_scores",
    "to_png",
    "to_svg",
    "trend",
    "trend_frame",
]

_HINT = (
    "{what} needs the optional 'viz' extra (altair and vl-convert-python): "
    "pip install '.[viz]' in a clone of evalframe"
)

_SCORE_AXIS = (0.0, 1.0)


def _altair(what: str = "Plotting") -> Any:
    """Import altair lazily, or say how to install it."""
    try:
        import altair
    except ImportError as exc:
        raise ModuleNotFoundError(_HINT.format(what=what)) from exc
    return altair


def _vl_convert(what: str) -> Any:
    try:
        import vl_convert
    except ImportError as exc:
        raise ModuleNotFoundError(_HINT.format(what=what)) from exc
    return vl_convert


# --- inputs ------------------------------------------------------------------------------


def _is_run(data: object) -> bool:
    from evalframe.core._run import Run

    return isinstance(data, Run)


def _histogram_frame(data: Any, buckets: int) -> pl.DataFrame:
    if _is_run(data):
        frame: pl.DataFrame = data.histograms(buckets)
        return frame
    if isinstance(data, Mapping):
        dists = data["metric_distributions"]
        return pl.DataFrame(
            [
                {C.METRIC: m, "bucket": i, "min": b["min"], "max": b["max"], "count": b["count"]}
                for m, bs in dists.items()
                for i, b in enumerate(bs)
            ],
            schema={
                C.METRIC: pl.String,
                "bucket": pl.Int64,
                "min": pl.Float64,
                "max": pl.Float64,
                "count": pl.Int64,
            },
        )
    if isinstance(data, pl.DataFrame):
        if {"min", "max", "count"} <= set(data.columns):
            return data
        if C.SCORE in data.columns:
            return aggregate.histograms(data, buckets=buckets)
    raise TypeError(
        "Expected a Run, a report, a histograms frame (metric, min, max, count) or a long "
        f"scores frame; got {type(data).__name__}."
    )


def _cohort_frame(data: Any) -> pl.DataFrame:
    if _is_run(data):
        frame: pl.DataFrame = data.cohorts
        return frame
    if isinstance(data, Mapping):
        return pl.DataFrame(
            [
                {
                    "label": c["label"],
                    "is_untagged": bool(c.get("is_untagged")),
                    "sample_count": c["sample_count"],
                    C.METRIC: name,
                    "n_scored": m.get("n_scored"),  # eval-harness reports have no counts
                    "mean": m["mean"],
                    "pass_rate": attempted(m),  # errored executions count as not passed
                }
                for c in data["cohorts"]
                for name, m in c["metrics"].items()
            ],
            schema={
                "label": pl.String,
                "is_untagged": pl.Boolean,
                "sample_count": pl.Int64,
                C.METRIC: pl.String,
                "n_scored": pl.Int64,
                "mean": pl.Float64,
                "pass_rate": pl.Float64,
            },
        )
    if isinstance(data, pl.DataFrame) and {"label", C.METRIC} <= set(data.columns):
        return data
    raise TypeError(
        f"Expected a Run, a report or a cohorts frame (label, metric, ...); "
        f"got {type(data).__name__}."
    )


# --- charts ------------------------------------------------------------------------------


def histograms(data: Any, *, buckets: int = 10, columns: int = 3) -> alt.FacetChart:
    """Score histograms, one panel per metric.

    Args:
        data: a ``Run``, a report (``run.report()`` or its JSON read back), a histograms
            frame (``run.histograms()``) or a long scores frame.
        buckets: bins over [0, 1] (ignored for reports and histogram frames).
        columns: panels per row.

    Returns:
        An Altair facet chart.
    """
    alt = _altair("histograms()")
    frame, order = _ordered(_histogram_frame(data, buckets), C.METRIC)
    frame = frame.select(_present(frame, C.METRIC, _rank(C.METRIC), "min", "max", "count"))
    base = (
        alt.Chart(frame)
        .mark_bar(color="#0969da", stroke="white", strokeWidth=0.5)
        .encode(
            x=alt.X("min:Q", bin="binned", title="score", scale=alt.Scale(domain=_SCORE_AXIS)),
            x2="max:Q",
            y=alt.Y("count:Q", title="rows"),
            tooltip=[
                alt.Tooltip(f"{C.METRIC}:N"),
                alt.Tooltip("min:Q", format=".1f", title="from"),
                alt.Tooltip("max:Q", format=".1f", title="to"),
                alt.Tooltip("count:Q"),
            ],
        )
    )
    return _per_metric(base, order, columns)


# Categories (metrics, cohorts) keep their first-seen order. Vega-Lite turns a sort given as
# a list of names into an expression, whose parser refuses U+2028 and U+2029 (line breaks to
# it): one such name and the whole chart failed to draw. Where a name holds one, the chart
# sorts by a rank column instead.
_UNPARSED = ("\u2028", "\u2029")


def _rank(column: str) -> str:
    return f"{column}__order"


def _present(frame: pl.DataFrame, *columns: str) -> list[str]:
    return [c for c in columns if c in frame.columns]


def _ordered(
    frame: pl.DataFrame, column: str, names: pl.Series | None = None
) -> tuple[pl.DataFrame, Any]:
    """``frame`` and the sort that keeps ``column``'s values in first-seen order (of
    ``names`` when given): the list of names, or, when a name holds a character Vega's
    expression parser refuses, a rank column added to ``frame`` and a sort by it."""
    seen = (frame.get_column(column) if names is None else names).unique(maintain_order=True)
    listed = seen.to_list()
    if not any(c in name for name in listed if isinstance(name, str) for c in _UNPARSED):
        return frame, listed
    rank = pl.DataFrame({column: seen, _rank(column): range(seen.len())})
    frame = frame.join(rank, on=column, how="left", nulls_equal=True, maintain_order="left")
    return frame, _altair().EncodingSortField(field=_rank(column), op="min", order="ascending")


def _per_metric(chart: Any, order: Any, columns: int) -> alt.FacetChart:
    """``chart`` as small panels, one per metric in ``order``, each with its own y scale."""
    facet = _altair().Facet(f"{C.METRIC}:N", sort=order, title=None)
    panels = chart.properties(width=200, height=110).facet(facet=facet, columns=columns)
    return panels.resolve_scale(y="independent")  # type: ignore[no-any-return]


def heatmap(data: Any, *, value: Literal["pass_rate", "mean"] = "pass_rate") -> alt.LayerChart:
    """A cohort x metric heatmap of pass-rates (or means), the value printed in each cell.

    Args:
        data: a ``Run``, a report or a cohorts frame (``run.cohorts``).
        value: ``"pass_rate"`` or ``"mean"``.

    Returns:
        An Altair layer chart (coloured cells and their labels).
    """
    alt = _altair("heatmap()")
    frame, metrics = _ordered(_cohort_frame(data), C.METRIC)
    frame, labels = _ordered(frame, "label")
    width = frame.get_column(C.METRIC).n_unique()
    height = frame.get_column("label").n_unique()
    frame = frame.select(
        _present(frame, "label", C.METRIC, "sample_count", "n_scored", "mean", "pass_rate",
                 _rank("label"), _rank(C.METRIC))
    )  # fmt: skip
    base = alt.Chart(frame).encode(
        x=alt.X(f"{C.METRIC}:N", sort=metrics, title=None, axis=alt.Axis(labelAngle=-30)),
        y=alt.Y("label:N", sort=labels, title="cohort"),
    )
    cells = base.mark_rect().encode(
        color=alt.Color(
            f"{value}:Q",
            scale=alt.Scale(domain=[0, 1], scheme="redyellowgreen"),
            title=value.replace("_", "-"),
        ),
        tooltip=[
            alt.Tooltip("label:N", title="cohort"),
            alt.Tooltip(f"{C.METRIC}:N"),
            alt.Tooltip("pass_rate:Q", format=".4f", title="pass-rate"),
            alt.Tooltip("mean:Q", format=".4f"),
            alt.Tooltip("n_scored:Q", title="scored"),
            alt.Tooltip("sample_count:Q", title="samples"),
        ],
    )
    text = base.mark_text(fontSize=11).encode(
        text=alt.Text(f"{value}:Q", format=".2f"),
        # White on the saturated ends of the scale, black in the pale middle.
        color=alt.condition(
            f"datum['{value}'] < 0.2 || datum['{value}'] > 0.8",
            alt.value("white"),
            alt.value("black"),
        ),
    )
    return (cells + text).properties(  # type: ignore[no-any-return]
        width=max(160, 70 * width), height=max(60, 22 * height)
    )


def trend(
    runs: pl.DataFrame,
    *,
    metric: str | Sequence[str] | None = None,
    value: str = "mean",
    x: str = "seq",
) -> alt.LayerChart:
    """A metric across stored runs: one line per metric, one point per run.

    Args:
        runs: one row per (run, metric) with ``run_id``, ``metric``, the ``x`` column and the
            ``value`` column (``store.plot.trend`` builds it from the store).
        metric: the metric id(s) to draw (default: every metric in ``runs``).
        value: the aggregate on the y axis (``mean``, ``pass_rate``, ``p50``, ``p95``).
        x: the ordering column: ``seq`` (the store's save order, drawn evenly spaced) or
            ``created_at`` (drawn on a time axis).

    Returns:
        An Altair layer chart (lines and points with per-run tooltips).
    """
    alt = _altair("trend()")
    wanted = [metric] if isinstance(metric, str) else metric
    frame = runs
    if wanted is not None:
        known = set(runs.get_column(C.METRIC).unique().to_list())
        missing = [m for m in wanted if m not in known]
        if missing:
            from evalframe.core._errors import MetricError

            raise MetricError(
                f"No stored run has metric {missing[0]!r}; stored metrics: "
                f"{', '.join(sorted(known)) or '(none)'}."
            )
        frame = runs.filter(pl.col(C.METRIC).is_in(list(wanted)))
    keep = [c for c in (C.RUN_ID, "name", "created_at", x, C.METRIC, value) if c in frame.columns]
    frame = frame.select(list(dict.fromkeys(keep))).sort(x)
    dtype = frame.schema[x]
    x_type = "T" if dtype.is_temporal() else ("O" if x == "seq" or not dtype.is_numeric() else "Q")
    tooltip = [alt.Tooltip(f"{c}:N") for c in (C.RUN_ID, "name") if c in frame.columns]
    if "created_at" in frame.columns:
        tooltip.append(alt.Tooltip("created_at:T", format="%Y-%m-%d %H:%M:%S"))
    tooltip += [alt.Tooltip(f"{C.METRIC}:N"), alt.Tooltip(f"{value}:Q", format=".4f")]
    base = alt.Chart(frame).encode(
        x=alt.X(
            f"{x}:{x_type}",
            title="run (save order)" if x == "seq" else x.replace("_", " "),
            axis=alt.Axis(labelAngle=0),
        ),
        y=alt.Y(f"{value}:Q", scale=alt.Scale(domain=_SCORE_AXIS), title=value.replace("_", "-")),
        color=alt.Color(f"{C.METRIC}:N", title="metric"),
    )
    chart = base.mark_line() + base.mark_point(filled=True, size=50).encode(tooltip=tooltip)
    return chart.properties(width=480, height=220)  # type: ignore[no-any-return]


def delta_bins(paired: pl.DataFrame, *, width: float = 0.1) -> pl.DataFrame:
    """Per-row deltas binned per metric: negative and positive deltas never share a bin.

    Args:
        paired: one row per compared (sample, metric) with ``metric`` and ``delta``
            (candidate minus baseline; null when either side has no score).
        width: the bin width.

    Returns:
        Columns metric, direction (``regressed``, ``unchanged``, ``improved``), lo, hi, rows.
    """
    d = pl.col("delta")
    lo = (
        pl.when(d < 0)
        .then((d / width).floor() * width)
        .when(d > 0)
        .then((d / width).ceil() * width - width)
        .otherwise(-width / 5)
    )
    return (
        paired.filter(d.is_not_null())
        .with_columns(
            pl.when(d < 0)
            .then(pl.lit("regressed"))
            .when(d > 0)
            .then(pl.lit("improved"))
            .otherwise(pl.lit("unchanged"))
            .alias("direction"),
            lo.round(6).alias("lo"),
        )
        .with_columns(
            pl.when(d == 0)
            .then(pl.lit(width / 5))
            .otherwise(pl.col("lo") + width)
            .round(6)
            .alias("hi")
        )
        .group_by(C.METRIC, "direction", "lo", "hi")
        .agg(pl.len().cast(pl.Int64).alias("rows"))
        .sort(C.METRIC, "lo")
    )


def deltas(paired: pl.DataFrame, *, width: float = 0.1, columns: int = 3) -> alt.FacetChart:
    """Per-row score changes between two runs, binned, one panel per metric.

    Args:
        paired: one row per compared (sample, metric) with ``metric`` and ``delta``
            (``comparison.plot.deltas()`` passes the comparison's rows).
        width: the bin width of the deltas.
        columns: panels per row.

    Returns:
        An Altair facet chart: regressions red, improvements green, unchanged grey.
    """
    alt = _altair("deltas()")
    frame, order = _ordered(
        delta_bins(paired, width=width), C.METRIC, names=paired.get_column(C.METRIC)
    )
    base = (
        alt.Chart(frame)
        .mark_bar(stroke="white", strokeWidth=0.5)
        .encode(
            x=alt.X(
                "lo:Q", bin="binned", title="candidate - baseline", scale=alt.Scale(domain=[-1, 1])
            ),
            x2="hi:Q",
            y=alt.Y("rows:Q", title="rows"),
            color=alt.Color(
                "direction:N",
                scale=alt.Scale(
                    domain=["regressed", "unchanged", "improved"],
                    range=["#cf222e", "#8c959f", "#1a7f37"],
                ),
                title=None,
            ),
            tooltip=[
                alt.Tooltip(f"{C.METRIC}:N"),
                alt.Tooltip("direction:N"),
                alt.Tooltip("lo:Q", format="+.2f", title="from"),
                alt.Tooltip("hi:Q", format="+.2f", title="to"),
                alt.Tooltip("rows:Q"),
            ],
        )
    )
    return _per_metric(base, order, columns)


# --- export ------------------------------------------------------------------------------


def _xml_safe(value: Any) -> Any:
    """A spec with every string (keys too) passed through ``xml_text``, without recursion
    limits beyond the spec's own depth (a few levels)."""
    if isinstance(value, str):
        return xml_text(value)
    if isinstance(value, Mapping):
        return {xml_text(str(k)): _xml_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_xml_safe(v) for v in value]
    return value


def _spec(chart: Any) -> dict[str, Any]:
    """The chart's Vega-Lite spec, its text made safe for an SVG renderer."""
    spec: dict[str, Any] = dict(chart) if isinstance(chart, Mapping) else chart.to_dict()
    safe: dict[str, Any] = _xml_safe(spec)
    return safe


def to_svg(chart: Any) -> str:
    """Render a chart (or a Vega-Lite spec dict) to SVG text, offline."""
    vlc = _vl_convert("SVG export")
    svg: str = vlc.vegalite_to_svg(_spec(chart))
    return svg


def to_png(chart: Any, *, scale: float = 2.0) -> bytes:
    """Render a chart (or a Vega-Lite spec dict) to PNG bytes, offline."""
    vlc = _vl_convert("PNG export")
    png: bytes = vlc.vegalite_to_png(_spec(chart), scale=scale)
    return png


# --- accessors ---------------------------------------------------------------------------


class RunPlot:
    """``run.plot``: charts of one run.

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records(
        ...     [{"id": "q1", "input": {"q": "?"}, "expected_output": "a",
        ...       "metadata": {"tags": ["t"]}}], name="d")
        >>> run = ef.evaluate(ds, outputs={"q1": "a"}, metrics=["exact-match"])
        >>> type(run.plot.heatmap()).__name__
        'LayerChart'
    """

    def __init__(self, run: Run) -> None:
        self._run = run

    def histograms(self, *, buckets: int = 10, columns: int = 3) -> alt.FacetChart:
        """Score histograms, one panel per metric (see ``evalframe.views.plot.histograms``)."""
        return histograms(self._run, buckets=buckets, columns=columns)

    def heatmap(self, *, value: Literal["pass_rate", "mean"] = "pass_rate") -> alt.LayerChart:
        """The cohort x metric heatmap (see ``evalframe.views.plot.heatmap``)."""
        return heatmap(self._run, value=value)

    def __repr__(self) -> str:
        return f"RunPlot(run_id={self._run.run_id!r}): .histograms(), .heatmap()"


def paired_scores(comparison: Comparison) -> pl.DataFrame:
    """Each compared row's mean score per metric in both runs, and the delta.

    Rows are joined the way the comparison joined them (``row_hash`` or ``sample_id``);
    a row's score is its mean over scored repetitions.

    Returns:
        Columns sample_id, metric, before, after, delta (after - before; null when either
        side has no score), in the after run's metric order.
    """
    key = comparison.join_key

    def side(run: Run, name: str) -> pl.DataFrame:
        per_row = run.scores.group_by(C.SAMPLE_ID, C.METRIC).agg(pl.col(C.SCORE).mean().alias(name))
        if key == C.ROW_HASH:
            hashes = run.frame.select(C.SAMPLE_ID, C.ROW_HASH).unique(C.SAMPLE_ID)
            per_row = per_row.join(hashes, on=C.SAMPLE_ID, how="left")
        return per_row

    before = side(comparison.before, "before")
    if key == C.ROW_HASH:  # keep the after run's sample ids
        before = before.drop(C.SAMPLE_ID)
    after = side(comparison.after, "after")
    common = [m for m in comparison.after.metric_ids if m in set(comparison.before.metric_ids)]
    rank = {m: i for i, m in enumerate(common)}
    return (
        after.join(before, on=[key, C.METRIC], how="inner")
        .filter(pl.col(C.METRIC).is_in(common))
        .with_columns(
            (pl.col("after") - pl.col("before")).alias("delta"),
            pl.col(C.METRIC).replace_strict(rank, return_dtype=pl.Int64).alias("_order"),
        )
        .sort("_order", C.SAMPLE_ID)
        .select(C.SAMPLE_ID, C.METRIC, "before", "after", "delta")
    )


class ComparisonPlot:
    """``comparison.plot``: charts of a comparison of two runs."""

    def __init__(self, comparison: Comparison) -> None:
        self._comparison = comparison

    def deltas(self, *, width: float = 0.1, columns: int = 3) -> alt.FacetChart:
        """Per-row score changes, binned, one panel per metric (see ``deltas``)."""
        return deltas(paired_scores(self._comparison), width=width, columns=columns)

    def __repr__(self) -> str:
        return "ComparisonPlot: .deltas()"


_TREND_SQL = """
    SELECT r.run_id, r.name, r.dataset, r.seq, r.created_at, s.metric,
           s.mean, s.p50, s.p95, s.pass_rate
    FROM metric_summary AS s JOIN runs AS r USING (run_id)
    {where}
    ORDER BY r.created_at, r.seq
"""


def trend_frame(store: Store, *, dataset: str | None = None) -> pl.DataFrame:
    """Per (stored run, metric) aggregates, oldest run first, from the store's views."""
    if dataset is None:
        return store.sql(_TREND_SQL.format(where=""))
    return store.sql(_TREND_SQL.format(where="WHERE r.dataset = $dataset"), {"dataset": dataset})


class StorePlot:
    """``store.plot``: charts across stored runs."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def trend(
        self,
        metric: str | Sequence[str] | None = None,
        *,
        value: Literal["mean", "pass_rate", "p50", "p95"] = "mean",
        dataset: str | None = None,
        last: int | None = None,
    ) -> alt.LayerChart:
        """A metric's ``value`` across stored runs, oldest first (see ``trend``).

        Args:
            metric: the metric id(s) (default: every stored metric).
            value: the per-run aggregate to draw.
            dataset: only runs of this dataset.
            last: only the newest ``last`` runs.
        """
        frame = trend_frame(self._store, dataset=dataset)
        if last is not None:
            keep = frame.get_column(C.RUN_ID).unique(maintain_order=True).tail(last)
            frame = frame.filter(pl.col(C.RUN_ID).is_in(keep.implode()))
        return trend(frame, metric=metric, value=value)

    def __repr__(self) -> str:
        return "StorePlot: .trend(metric=...)"
