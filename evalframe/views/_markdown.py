"""Render a report dict as Markdown (eval-harness 1.6's layout) or HTML."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["render", "render_html"]


def _text(value: Any) -> str:
    """One line, whitespace collapsed, HTML-escaped."""
    return html.escape(" ".join(str(value).split()), quote=False)


def _cell(value: Any) -> str:
    return _text(value).replace("\\", "\\\\").replace("|", "\\|").replace("`", "\\`")


def _f4(x: Any) -> str:
    return "n/a" if x is None else f"{float(x):.4f}"


def _stat_cells(m: Mapping[str, Any]) -> list[str]:
    """A metric block's mean, p50, p95 and pass-rate cells."""
    return [_f4(m[k]) for k in ("mean", "p50", "p95", "pass_rate")]


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def _points(x: float) -> str:
    return f"{x * 100:.1f}".rstrip("0").rstrip(".") + " pts"


def _dimension_sections(r: Mapping[str, Any]) -> list[str]:
    """Per-dimension roll-ups (when the metrics span 2+ dimensions) and safety failures.

    With a single dimension the roll-up repeats the macro-F1, so it is left out. The safety
    section appears whenever a safety-dimension metric ran, and lists every failure.
    """
    dims: Mapping[str, Any] = r.get("dimensions") or {}
    out: list[str] = []
    if len(dims) > 1:
        out += ["## Per-dimension aggregates", ""]
        out += _table(
            [
                "dimension",
                "metrics",
                "mean",
                "p50",
                "p95",
                "pass-rate",
                "macro mean",
                "macro pass-rate",
            ],
            [
                [
                    name,
                    ", ".join(d["metrics"]),
                    _f4(d["mean"]),
                    _f4(d["p50"]),
                    _f4(d["p95"]),
                    _f4(d["pass_rate"]),
                    _f4(d["macro_mean"]),
                    _f4(d["macro_pass_rate"]),
                ]
                for name, d in dims.items()
            ],
        )
        out.append("")
    if "safety" in dims:
        failures = r.get("safety_failures") or []
        out += ["## Safety failures", ""]
        if failures:
            out += [
                f"_{len(failures)} failing execution(s) of safety metrics; safety metrics are "
                "hard constraints, so every one is listed._",
                "",
            ]
            out += _table(
                ["sample", "repetition", "metric", "score", "error"],
                [
                    [
                        f["sample_id"],
                        f["repetition"],
                        f["metric"],
                        _f4(f["score"]),
                        f["error"] or "",
                    ]
                    for f in failures
                ],
            )
        else:
            out.append("_None._")
        out.append("")
    return out


def _has_counts(r: Mapping[str, Any]) -> bool:
    """Whether every metric block carries evalframe's threshold and scored/error counts."""
    keys = ("threshold", "n_scored", "n_errors")
    return all(all(k in m for k in keys) for m in r["metrics"].values())


def render(r: Mapping[str, Any]) -> str:
    """The report as Markdown, ending in a single newline.

    Only eval-harness.report.v1 keys are required; evalframe's additions (per-metric
    thresholds and counts, dimensions, safety failures) add their columns and sections when
    present, so an eval-harness report renders in eval-harness's layout.
    """
    out: list[str] = [f"# Eval report — {_text(r['dataset'])}", ""]
    out += [
        f"_Run completed in {r['duration_seconds']:.2f}s over {r['total_samples']} samples in "
        f"{r['total_executions']} executions ({r['total_failures']} failures captured)._",
        "",
        "## Summary",
        "",
    ]
    out += _table(
        [
            "total samples",
            "executions",
            "repetitions",
            "pass rate",
            "total failures",
            "duration seconds",
        ],
        [
            [
                r["total_samples"],
                r["total_executions"],
                r["repetitions"],
                _f4(r["pass_rate"]),
                r["total_failures"],
                f"{r['duration_seconds']:.2f}",
            ]
        ],
    )
    p = r["precision"]
    needs = "yes" if p["target_resolvable"] else f"no — needs {p['required_repetitions']}"
    out += ["", "## Sampling", ""]
    out += _table(
        [
            "repetitions",
            "pass rate",
            "detectable difference",
            f"resolves {_points(p['target_delta'])}",
        ],
        [[p["repetitions"], _f4(p["pass_rate"]), _points(p["resolution"]), needs]],
    )
    out += ["", f"_{_text(p['summary'])}_"]
    unstable = [s for s in r["sample_aggregates"] if s["unstable"]]
    if unstable:
        out += [
            "",
            "### Unstable rows",
            "",
            "_These rows passed on some repetitions and failed on others._",
            "",
        ]
        out += _table(
            [
                "sample",
                "passed",
                "repetitions",
                "pass rate",
                "95% CI",
                "score mean",
                "score stddev",
            ],
            [
                [
                    s["id"],
                    s["passed"],
                    s["repetitions"],
                    _f4(s["pass_rate"]),
                    f"{s['pass_rate_ci']['low']:.3f} \N{EN DASH} {s['pass_rate_ci']['high']:.3f}",
                    _f4(s["score_mean"]),
                    _f4(s["score_stddev"]),
                ]
                for s in unstable
            ],
        )
    # evalframe's per-metric counts and thresholds are additions: an eval-harness report
    # lacks them and renders in eval-harness's own columns (pass-rate means >= 0.5 there).
    extended = _has_counts(r)
    passing = "pass-rate (>= threshold)" if extended else "pass-rate (>= 0.5)"
    out += ["", "## Per-metric aggregates", ""]
    if extended:
        out += _table(
            ["metric", "mean", "p50", "p95", passing, "threshold", "scored", "errors"],
            [
                [name, *_stat_cells(m), f"{m['threshold']:g}", m["n_scored"], m["n_errors"]]
                for name, m in r["metrics"].items()
            ],
        )
    else:
        out += _table(
            ["metric", "mean", "p50", "p95", passing],
            [[name, *_stat_cells(m)] for name, m in r["metrics"].items()],
        )
    out += ["", f"## Macro-F1 (avg pass-rate across all metrics): {r['macro_f1']:.4f}", ""]
    out += _dimension_sections(r)
    u = r["usage"]
    if u["observations"] > 0:
        rep, derived = u["reported"], u.get("derived", {})
        lat = u["latency_ms"]

        def field(name: str, text: str) -> str:
            return text if rep.get(name, 0) or derived.get(name, 0) else "n/a"

        out += ["## Usage summary", ""]
        out += _table(
            [
                "observations",
                "prompt tokens",
                "completion tokens",
                "total tokens",
                "cost USD",
                "mean latency ms",
                "max latency ms",
            ],
            [
                [
                    u["observations"],
                    field("prompt_tokens", str(u["prompt_tokens"])),
                    field("completion_tokens", str(u["completion_tokens"])),
                    field("total_tokens", str(u["total_tokens"])),
                    field("cost_usd", f"{u['cost_usd']:.6f}"),
                    field("latency_ms", f"{lat['mean']:.2f}"),
                    field("latency_ms", f"{lat['max']:.2f}"),
                ]
            ],
        )
        out.append("")
    cost = r.get("cost")
    if cost and cost.get("calls", 0) > 0:
        out += [
            "## Cost",
            "",
            f"Total ${cost['total_usd']:.4f} over {cost['calls']} calls "
            f"({cost['total_tokens']} tokens).",
            "",
        ]
        if not cost.get("complete", True):
            out += ["_Some calls had no price: this total is a floor, not a figure._", ""]
        out += _table(
            ["model", "calls", "prompt tokens", "completion tokens", "cost USD"],
            [
                [
                    m["model"],
                    m["calls"],
                    m["prompt_tokens"],
                    m["completion_tokens"],
                    f"{m['cost_usd']:.6f}" if m["priced"] else "unpriced",
                ]
                for m in cost["models"]
            ],
        )
        budget = r.get("budget")
        if budget:
            line = (
                f"**Budget halted:** {_text(budget['reason'])}"
                if budget["halted"]
                else f"Budget: ${budget['spent_usd']:.4f} of ${budget['limit_usd']:.4f} spent."
            )
            out += ["", line]
        out.append("")
    out += ["## Cohorts by metadata.tags", ""]
    out += _table(
        ["cohort", "samples", "metric", "mean", "p50", "p95", passing],
        [
            [
                c["label"],
                c["sample_count"],
                name,
                *_stat_cells(m),
            ]
            for c in r["cohorts"]
            for name, m in c["metrics"].items()
        ],
    )
    adv = r["adversarial"]
    if adv["total_samples"] > 0:
        out += ["", "## Adversarial coverage", ""]
        out += _table(
            [
                "category",
                "label",
                "severity",
                "samples",
                "frameworks",
                "metric",
                "mean",
                "p50",
                "p95",
                "pass-rate",
            ],
            [
                [
                    c["category"],
                    c["label"],
                    c["severity"] or "n/a",
                    c["sample_count"],
                    ", ".join(c["compliance_frameworks"]) or "n/a",
                    name,
                    *_stat_cells(m),
                ]
                for c in adv["categories"]
                for name, m in c["metrics"].items()
            ],
        )
        out += ["", "### Compliance frameworks", ""]
        out += _table(
            ["framework", "samples", "categories"],
            [
                [f["framework"], f["sample_count"], ", ".join(f["categories"])]
                for f in adv["compliance_frameworks"]
            ],
        )
    out += ["", "## Score histograms"]
    for name, buckets in r["metric_distributions"].items():
        out += ["", f"### {_text(name)}", ""]
        out += _table(
            ["score range", "count"],
            [
                [
                    f"{b['min']:.1f}-{b['max']:.1f}" + (" inclusive" if b["max"] >= 1.0 else ""),
                    b["count"],
                ]
                for b in buckets
            ],
        )
    out += ["", "## Failures", ""]
    if r["failures"]:
        out += [
            f"- **sample <code>{_text(f['sample_id'])}</code> / metric "
            f"<code>{_text(f['metric'])}</code>** - {_text(f['error'])}"
            for f in r["failures"]
        ]
    else:
        out.append("_None._")
    return "\n".join(out).rstrip("\n") + "\n"


def render_html(r: Mapping[str, Any]) -> str:
    """The rich HTML fragment for Jupyter (``evalframe.views._html.report_html``)."""
    from evalframe.views._html import report_html

    return report_html(r)
