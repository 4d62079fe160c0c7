"""A metric over time: the runs of a dataset (or of a label), oldest first, from the
aggregates the store keeps per run (``run_metric_stats``), with baseline runs and the
metric's pass threshold marked, drawn as an SVG whose points link to their runs. A point
of a run with errored executions is drawn hollow and says so (``INCOMPLETE: ...``), as
every view of the run does."""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from evalframe.core.aggregate import status_line
from evalframe.views._web._filters import TrendQuery, label_pointer
from evalframe.views._web._layout import run_url
from evalframe.views._web._queries import STATUS_COLUMNS, headline, status_select

if TYPE_CHECKING:
    from evalframe.store._read import Reading

__all__ = ["trend", "trend_svg"]

_COLOURS: Final = ("#0969da", "#cf222e", "#1a7f37", "#8250df", "#bc4c00", "#1b7c83", "#6e7781")


def trend(r: Reading, q: TrendQuery) -> dict[str, Any]:
    """The points (one per run and metric, each with its run's ``status`` line and whether
    it is ``incomplete``), the metrics found, and the baselines among the runs:
    ``{"points": [...], "metrics": [...], "baselines": [...]}``."""
    params: dict[str, Any] = {"last": q.last}
    if q.dataset is not None:
        where = "dataset = $dataset"
        params["dataset"] = q.dataset
    else:
        pointer, value = label_pointer(str(q.label))
        params["label_key"] = pointer
        if value is None:
            where = "json_extract(labels, $label_key) IS NOT NULL"
        else:
            where = "json_extract_string(labels, $label_key) = $label_value"
            params["label_value"] = value
    chosen = "AND s.metric = $metric" if q.metric is not None else ""
    if q.metric is not None:
        params["metric"] = q.metric
    frame = r.sql(
        f"""
        WITH picked AS (
            SELECT run_id FROM runs WHERE {where}
            ORDER BY created_at DESC, seq DESC LIMIT $last
        ),
        status AS ({status_select("picked")})
        SELECT r.run_id, r.name, r.dataset, r.created_at, s.metric, s.mean, s.p50, s.p95,
               s.pass_rate, s.threshold, st.* EXCLUDE (run_id)
        FROM run_metric_stats AS s JOIN runs AS r USING (run_id)
        JOIN status AS st ON st.run_id = r.run_id
        WHERE r.run_id IN (SELECT run_id FROM picked) {chosen}
        ORDER BY r.created_at, r.seq, s.ordinal""",
        params,
    )
    points = []
    heads: dict[str, dict[str, Any]] = {}
    for point in frame.to_dicts():  # a point per run and metric
        if point["run_id"] not in heads:
            heads[point["run_id"]] = headline(point)
        head = heads[point["run_id"]]
        for column in STATUS_COLUMNS:
            point.pop(column)
        points.append({**point, "status": status_line(head), "incomplete": head["incomplete"]})
    metrics = (
        r.sql(
            "SELECT DISTINCT metric FROM run_metrics "
            f"WHERE run_id IN (SELECT run_id FROM runs WHERE {where}) ORDER BY metric",
            {k: v for k, v in params.items() if k not in ("last", "metric")},
        )
        .get_column("metric")
        .to_list()
    )
    ids = frame.get_column("run_id").unique().to_list()
    baselines = r.sql(
        "SELECT name, run_id, promoted_at FROM baselines WHERE list_contains($ids, run_id) "
        "ORDER BY name",
        {"ids": ids},
    ).to_dicts()
    return {"points": points, "metrics": metrics, "baselines": baselines}


def _rule(x1: float, x2: float, y: float, colour: str, dash: str = "") -> str:
    dashes = f' stroke-dasharray="{dash}"' if dash else ""
    return f'<line x1="{x1}" y1="{y:.1f}" x2="{x2}" y2="{y:.1f}" stroke="{colour}"{dashes}/>'


def trend_svg(data: Mapping[str, Any], value: str, floor: float | None) -> str:
    """The trend as an SVG: one line per metric over the runs in order, each point a link
    to its run; dashed lines for the metrics' thresholds (on score values) and the gate
    floor; baseline runs marked by a vertical line and their name."""
    points = data["points"]
    runs = list(dict.fromkeys(p["run_id"] for p in points))
    if not runs:
        return ""
    width, height, left, right, top, bottom = 760, 280, 44, 16, 16, 40
    step = (width - left - right) / max(1, len(runs) - 1)

    def x(i: int) -> float:
        return left + (step * i if len(runs) > 1 else (width - left - right) / 2)

    def y(v: float) -> float:
        return top + (height - top - bottom) * (1 - min(1.0, max(0.0, v)))

    where = {rid: i for i, rid in enumerate(runs)}
    parts = [
        f'<svg class="ef-trend" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" role="img" aria-label="trend of {html.escape(value)}">',
        _rule(left, width - right, y(0), "#8c959f"),
        _rule(left, width - right, y(1), "#d8dee4"),
        f'<text x="4" y="{y(1) + 4:.1f}" font-size="11">1.0</text>',
        f'<text x="4" y="{y(0) + 4:.1f}" font-size="11">0.0</text>',
    ]
    by_run = {b["run_id"]: b["name"] for b in data["baselines"]}
    for rid, name in by_run.items():
        if rid in where:
            xx = x(where[rid])
            parts.append(
                f'<g class="ef-baseline"><line x1="{xx:.1f}" y1="{top}" x2="{xx:.1f}" '
                f'y2="{y(0):.1f}" stroke="#9a6700" stroke-dasharray="2 3"/>'
                f'<text x="{xx + 3:.1f}" y="{top + 10}" font-size="11" fill="#9a6700">'
                f"baseline {html.escape(str(name))}</text></g>"
            )
    metrics = list(dict.fromkeys(p["metric"] for p in points))
    if value != "pass_rate":
        thresholds = {p["threshold"] for p in points if p["threshold"] is not None}
        for t in sorted(thresholds):
            parts.append(
                f'<g class="ef-threshold"><line x1="{left}" y1="{y(t):.1f}" x2="{width - right}" '
                f'y2="{y(t):.1f}" stroke="#57606a" stroke-dasharray="5 4"/>'
                f'<text x="{width - right - 4}" y="{y(t) - 3:.1f}" font-size="11" '
                f'text-anchor="end" fill="#57606a">threshold {t:g}</text></g>'
            )
    if floor is not None:
        parts.append(
            f'<g class="ef-floor"><line x1="{left}" y1="{y(floor):.1f}" x2="{width - right}" '
            f'y2="{y(floor):.1f}" stroke="#cf222e" stroke-dasharray="6 3"/>'
            f'<text x="{left + 4}" y="{y(floor) - 3:.1f}" font-size="11" fill="#cf222e">'
            f"gate floor {floor:g}</text></g>"
        )
    for k, metric in enumerate(metrics):
        colour = _COLOURS[k % len(_COLOURS)]
        mine = [p for p in points if p["metric"] == metric and p[value] is not None]
        line = " ".join(f"{x(where[p['run_id']]):.1f},{y(p[value]):.1f}" for p in mine)
        parts.append(f'<polyline points="{line}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for p in mine:
            tip = (
                f"{p['name']} ({p['run_id']}), {p['created_at']:%Y-%m-%d %H:%M}: "
                f"{metric} {value} {p[value]:.4f}"
            )
            cx, cy = f"{x(where[p['run_id']]):.1f}", f"{y(p[value]):.1f}"
            if p["incomplete"]:  # hollow, ringed in red: errored executions count as failed
                tip = f"{p['status']}. {tip}"
                mark = (
                    f'<circle cx="{cx}" cy="{cy}" r="6" fill="#fff" stroke="#cf222e" '
                    f'stroke-width="2.5"><title>{html.escape(tip)}</title></circle>'
                )
            else:
                mark = (
                    f'<circle cx="{cx}" cy="{cy}" r="5" fill="{colour}">'
                    f"<title>{html.escape(tip)}</title></circle>"
                )
            cls = "ef-point ef-incomplete" if p["incomplete"] else "ef-point"
            parts.append(
                f'<a class="{cls}" href="{run_url(p["run_id"])}" data-run="'
                f'{html.escape(p["run_id"])}">{mark}</a>'
            )
        parts.append(
            f'<text x="{left + 8 + 150 * k}" y="{height - 8}" font-size="12" fill="{colour}">'
            f"● {html.escape(metric)}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)
