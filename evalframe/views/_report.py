"""The report document: ``Report`` (the ``evalframe.report.v1`` JSON as a ``dict``) and what
every view reads from it.

``Report`` holds the JSON document, with ``to_json``, ``to_markdown``, ``to_html`` and the
Jupyter representations; the renderers (``_markdown``, ``_html``, ``_report_json``) import this
module, never the reverse: its rendering methods reach them through the lazy seam
(``core/_seam.py``), which ``evalframe.views`` fills when it is imported. The accessors
(``failing_samples``, ``headline_of``, ...) read a document, built here or read back from a
JSON file, eval-harness's included. The document is built from a run by ``_report_build``.

Keys keep eval-harness's names, order and meaning (its per-metric ``pass_rate`` and its
``macro_f1`` count scored executions only; statistics over no scored execution are null); the
additions are ``status`` (first: ``INCOMPLETE: ...``, ``SAFETY FAILED: ...`` or ``COMPLETE:
...``), ``run_id``, ``run_name``, ``evalframe_version``, ``metric_ids``, ``headline`` (after
``macro_f1``: errored executions, macro-F1 over attempted executions of the quality metrics,
the safety verdict) and, per metric and cohort, ``n``, ``n_scored``, ``n_errors``,
``n_passed``, ``pass_rate_attempted``, ``threshold``, ``family`` and ``dimension``; and, last,
``dimensions`` (per-dimension roll-ups), ``safety_failures`` (every failing or errored
execution of a safety-dimension metric) and ``outputs``: ``"saved"`` when the outputs were
read from a file or a mapping, ``"system"`` when a system under test produced them (so
repetitions can differ), null when not recorded. Asked for, ``evidence`` comes last: the
retrieved contexts of each execution (``views/_evidence.py``). Citation evidence text,
retrieved context text (unless asked for) and API keys never reach a report: metrics keep
them out of their details and providers never record keys.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from evalframe.core import _seam
from evalframe.views._format import python_floats
from evalframe.views._pending import PendingSections

if TYPE_CHECKING:
    from evalframe.core._run import Run

__all__ = [
    "REPORT_SCHEMA_VERSION",
    "Report",
    "ReportDoc",
    "errored_samples",
    "failing_rows",
    "failing_samples",
    "headline_of",
    "lower_note",
    "per_sample_metrics",
]

ReportDoc = Mapping[str, Any]
Failed = list[tuple[str, float, float]]
Errored = list[tuple[str, str]]

REPORT_SCHEMA_VERSION = "evalframe.report.v1"


class Report(PendingSections):
    """A run's report as a JSON-ready dict, renderable as JSON, Markdown or HTML.

    A run's ``samples`` and ``sample_aggregates`` are built when first read; until then
    ``to_json`` writes them from the run's frames (see ``views/_pending.py``).
    """

    _run: Run | None = None

    def to_json(self, *, indent: int | None = 2) -> str:
        """Pretty JSON with unescaped Unicode and slashes, ending in a newline."""
        if indent == 2 and self._run is not None and self.pending():
            return _seam.report_json_text.call(self._run, head=self)
        return self.to_json_bytes(indent=indent).decode("utf-8")

    def to_json_bytes(self, *, indent: int | None = 2) -> bytes:
        """``to_json`` as UTF-8 bytes, what a file receives.

        The default two-space indent is written by orjson (a large run's report is mostly
        its samples, and ``json`` takes seconds over them), then floats are put in Python's
        spelling, so the bytes are those of ``json.dumps(report, indent=2,
        ensure_ascii=False)``. Other indents go through ``json``.
        """
        if indent != 2:
            text = json.dumps(self, indent=indent, ensure_ascii=False, allow_nan=False)
            return (text + "\n").encode("utf-8")
        if self._run is not None and self.pending():
            return b"".join(_seam.report_json_parts.call(self._run, head=self))
        import orjson

        data = orjson.dumps(self, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
        return python_floats(data)

    def to_markdown(self, *, max_rows: int = 20) -> str:
        """Markdown in eval-harness's 1.6 layout, listing at most ``max_rows`` failing samples."""
        return _seam.report_markdown.call(self, max_rows=max_rows)

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def _repr_html_(self) -> str:
        return _seam.report_html.call(self)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self) if cycle else _seam.report_text.call(self))

    def to_html(self, *, charts: Literal["auto", "vega", "svg", "none"] = "auto") -> str:
        """One self-contained HTML page: the tables and charts, no network requests.

        ``charts="auto"`` embeds interactive charts when the ``viz`` extra is installed.
        """
        return _seam.report_page.call(self, charts=charts)

    def __repr__(self) -> str:
        return (
            f"Report(dataset={self.get('dataset')!r}, run_id={self.get('run_id')!r}, "
            f"macro_f1={self.get('macro_f1')!r})"
        )


def per_sample_metrics(r: ReportDoc) -> dict[str, dict[str, dict[str, float]]]:
    """Per sample id and metric: the lowest and highest score and their mean and stddev.

    Read from ``sample_aggregates`` when the report has them, else from ``samples``.
    """
    out: dict[str, dict[str, dict[str, float]]] = {}
    for s in r.get("sample_aggregates") or []:
        for name, m in (s.get("metrics") or {}).items():
            if m.get("min") is not None:
                out.setdefault(s["id"], {})[name] = m
    if out or not r.get("samples"):
        return out
    seen: dict[str, dict[str, list[float]]] = {}
    for e in r["samples"]:
        for name, v in (e.get("scores") or {}).items():
            if v.get("score") is not None:
                seen.setdefault(e["id"], {}).setdefault(name, []).append(float(v["score"]))
    for sid, metrics in seen.items():
        for name, xs in metrics.items():
            mean = sum(xs) / len(xs)
            var = sum((x - mean) ** 2 for x in xs) / len(xs)
            out.setdefault(sid, {})[name] = {
                "min": min(xs), "max": max(xs), "mean": mean, "stddev": var**0.5,
            }  # fmt: skip
    return out


def lower_note(r: ReportDoc, metric: str) -> str:
    """``", lower is better"`` for a lower-is-better metric of report ``r``, else ``""``."""
    found = r["metrics"].get(metric) or {}
    return ", lower is better" if found.get("higher_is_better") is False else ""


def failing_samples(r: ReportDoc) -> list[tuple[str, Failed]]:
    """The samples scored below a metric's threshold, worst first, from a report document.

    Each is ``(sample_id, [(metric, score, threshold), ...])``: a sample's score on a metric
    is its lowest over the repetitions (its highest for a lower-is-better metric, which fails
    above its threshold); a report without thresholds (eval-harness) uses 0.5. Worst first:
    the largest distance past a threshold, then the most metrics failed, then sample id.
    Read from ``sample_aggregates`` (or ``samples``), so a report read back
    from JSON gives the same list; a run document may carry the list as ``failing_samples``.
    """
    if "failing_samples" in r:
        return list(r["failing_samples"])
    thresholds = {
        name: float(m["threshold"]) if m.get("threshold") is not None else 0.5
        for name, m in r["metrics"].items()
    }
    lower = {name for name, m in r["metrics"].items() if m.get("higher_is_better") is False}
    found: list[tuple[float, int, str, Failed]] = []
    for sid, metrics in per_sample_metrics(r).items():
        failed = []
        margins = []
        for name, m in metrics.items():
            if name not in thresholds:
                continue
            worst = float(m["max"]) if name in lower else float(m["min"])
            margin = thresholds[name] - worst if name in lower else worst - thresholds[name]
            if margin < 0:
                failed.append((name, worst, thresholds[name]))
                margins.append(margin)
        if failed:
            order = sorted(range(len(failed)), key=lambda i: margins[i])
            failed = [failed[i] for i in order]
            found.append((margins[order[0]], -len(failed), str(sid), failed))
    found.sort(key=lambda f: f[:3])
    return [(sid, failed) for _, _, sid, failed in found]


def headline_of(r: ReportDoc) -> dict[str, Any]:
    """A report's ``headline`` (see ``aggregate.headline``); derived for an eval-harness
    report, which has none: its errored executions from its per-row aggregates (else from
    its failures), its macro-F1 as it gives it, no safety verdict."""
    if r.get("headline") is not None:
        return dict(r["headline"])
    rows = r.get("sample_aggregates") or []
    if rows:
        errored = sum(int(s.get("errored") or 0) for s in rows)
    else:
        errored = len({(f.get("sample_id"), f.get("repetition", 0)) for f in r["failures"]})
    macro = r.get("macro_f1")
    return {
        "executions": int(r.get("total_executions", r.get("total_samples")) or 0),
        "errored_executions": errored,
        "incomplete": errored > 0,
        "quality_metrics": list(r["metrics"]),
        "macro_f1": macro,
        "macro_f1_scored": macro,
        "safety": None,
    }


def errored_samples(r: ReportDoc) -> list[tuple[str, Errored]]:
    """The samples with an errored execution, in the order of the report's ``failures``, each
    with its errored metrics and the first error of each (a run document may carry the list
    as ``errored_samples``)."""
    if "errored_samples" in r:
        return list(r["errored_samples"])
    found: dict[str, dict[str, str]] = {}
    for f in r["failures"]:
        found.setdefault(str(f["sample_id"]), {}).setdefault(f["metric"], str(f["error"]))
    return [(sid, list(errors.items())) for sid, errors in found.items()]


def failing_rows(r: ReportDoc) -> list[tuple[str, Errored, Failed]]:
    """Every sample that did not pass: ``(sample_id, errored metrics with their error,
    metrics scored below their threshold)``. Samples with an errored execution come first
    (an error is the worst outcome), then the rest worst first (``failing_samples``)."""
    below = dict(failing_samples(r))
    out = [(sid, errors, below.pop(sid, [])) for sid, errors in errored_samples(r)]
    return out + [(sid, [], failed) for sid, failed in below.items()]
