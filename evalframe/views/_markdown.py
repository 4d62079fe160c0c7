"""Render a report dict as Markdown (eval-harness 1.6's layout) or HTML.

``render`` joins one function per report section, in the report's order. Each section
returns its lines; the sections that are optional return none when the report lacks them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

from evalframe.core.aggregate import status_lines
from evalframe.views._format import (
    attempted,
    f4,
    has_counts,
    md_table,
    one_line,
    points,
    stat_cells,
)
from evalframe.views._report import failing_rows, headline_of, lower_note, per_sample_metrics

__all__ = ["DEFAULT_MAX_ROWS", "render", "render_html"]

Report = Mapping[str, Any]

# The report's Markdown HTML-escapes its text and cells (ids and errors are users' text);
# the comparison's Markdown does not, so the escape is chosen here.
_text = partial(one_line, escape_html=True)
_table = partial(md_table, escape_html=True)

# evalframe's per-metric counts and thresholds are additions: an eval-harness report lacks
# them and renders in eval-harness's own columns (pass-rate means >= 0.5 there).
_COUNTS = ("threshold", "n_scored", "n_errors")


def _passing(r: Report) -> str:
    if not has_counts(r, _COUNTS):
        return "pass-rate (>= 0.5)"
    if any(m.get("higher_is_better") is False for m in r["metrics"].values()):
        return "pass-rate (meets threshold)"  # a lower-is-better metric passes at or below it
    return "pass-rate (>= threshold)"


def _threshold(m: Mapping[str, Any]) -> str:
    """A metric's threshold cell: ``≤ t`` for a lower-is-better metric."""
    return f"≤ {m['threshold']:g}" if m.get("higher_is_better") is False else f"{m['threshold']:g}"


def _status(r: Report) -> list[str]:
    """``INCOMPLETE: ...`` and ``SAFETY FAILED: ...`` lines, first of all, when they apply."""
    return [line for text in status_lines(headline_of(r)) for line in (text, "")]


def _summary(r: Report) -> list[str]:
    out = [
        f"# Eval report — {_text(r['dataset'])}",
        "",
        f"_Run completed in {r['duration_seconds']:.2f}s over {r['total_samples']} samples in "
        f"{r['total_executions']} executions ({r['total_failures']} failures captured)._",
        "",
        "## Summary",
        "",
    ]
    headers = [
        "total samples", "executions", "repetitions", "pass rate", "total failures",
        "duration seconds",
    ]  # fmt: skip
    row = [
        r["total_samples"], r["total_executions"], r["repetitions"], f4(r["pass_rate"]),
        r["total_failures"], f"{r['duration_seconds']:.2f}",
    ]  # fmt: skip
    if "headline" in r:  # evalframe's: the errored executions beside the executions
        headers.insert(2, "errored executions")
        row.insert(2, r["headline"]["errored_executions"])
    return out + _table(headers, [row])


def _sampling(r: Report) -> list[str]:
    """Repetitions and what they resolve; left out for saved outputs, which never vary."""
    if r.get("outputs") == "saved":
        return []
    p = r["precision"]
    needs = "yes" if p["target_resolvable"] else f"no — needs {p['required_repetitions']}"
    out = ["", "## Sampling", ""]
    out += _table(
        [
            "repetitions",
            "pass rate",
            "detectable difference",
            f"resolves {points(p['target_delta'])}",
        ],
        [[p["repetitions"], f4(p["pass_rate"]), points(p["resolution"]), needs]],
    )
    return [*out, "", f"_{_text(p['summary'])}_"]


def _unstable_rows(r: Report) -> list[str]:
    unstable = [s for s in r["sample_aggregates"] if s["unstable"]]
    if not unstable:
        return []
    note = "_These rows passed on some repetitions and failed on others._"
    out = ["", "### Unstable rows", "", note, ""]
    headers = [
        "sample", "passed", "repetitions", "pass rate", "95% CI", "score mean", "score stddev",
    ]  # fmt: skip
    rows = [
        [
            s["id"],
            s["passed"],
            s["repetitions"],
            f4(s["pass_rate"]),
            f"{s['pass_rate_ci']['low']:.3f} \N{EN DASH} {s['pass_rate_ci']['high']:.3f}",
            f4(s["score_mean"]),
            f4(s["score_stddev"]),
        ]
        for s in unstable
    ]
    return out + _table(headers, rows)


def _differs(blocks: Sequence[Mapping[str, Any]]) -> bool:
    """Whether some block's pass-rate over scored executions differs from the attempted one."""
    return any(m.get("n_errors") and m.get("pass_rate_attempted") is not None for m in blocks)


def _metric_table(r: Report, names: Sequence[str]) -> list[str]:
    """Per-metric aggregates of ``names``; the pass-rate over scored executions beside the
    attempted one where they differ."""
    blocks = [r["metrics"][n] for n in names]
    if not has_counts(r, _COUNTS):
        return _table(
            ["metric", "mean", "p50", "p95", _passing(r)],
            [[name, *stat_cells(m)] for name, m in zip(names, blocks, strict=True)],
        )
    scored = _differs(blocks)
    return _table(
        [
            "metric", "mean", "p50", "p95", _passing(r), *(["of scored"] if scored else []),
            "threshold", "scored", "errors",
        ],
        [
            [
                name, *stat_cells(m), *([f4(m["pass_rate"])] if scored else []),
                _threshold(m), m["n_scored"], m["n_errors"],
            ]
            for name, m in zip(names, blocks, strict=True)
        ],
    )  # fmt: skip


def _macro(head: Mapping[str, Any], *, evalframe: bool) -> str:
    if not evalframe:  # eval-harness's: its own meaning, over scored executions
        return f"## Macro-F1 (avg pass-rate across all metrics): {f4(head['macro_f1'])}"
    title = "## Macro-F1 (avg pass-rate across quality metrics, errored executions not passed)"
    macro, scored = head["macro_f1"], head["macro_f1_scored"]
    if macro is None:
        return f"{title}: n/a (no quality metric; safety metrics are judged on their own)"
    if scored is not None and abs(scored - macro) > 5e-5:
        return f"{title}: {macro:.4f} ({scored:.4f} over scored executions only)"
    if scored is None:
        return f"{title}: {macro:.4f} (n/a over scored executions: none was scored)"
    return f"{title}: {macro:.4f}"


def _metrics(r: Report) -> list[str]:
    head = headline_of(r)
    evalframe = "headline" in r
    safety = set((head.get("safety") or {}).get("metrics") or ())
    names = [n for n in r["metrics"] if n not in safety]
    out = ["", "## Per-metric aggregates", ""]
    if evalframe and any(m.get("n_errors") for m in r["metrics"].values()):
        out += [
            "_pass-rate counts every attempted execution, an errored one as not passed; "
            "of scored counts only the executions that were scored._",
            "",
        ]
    if names:
        out += _metric_table(r, names)
    else:
        out.append("_No quality metric: every metric of this run is a safety metric._")
    return [*out, "", _macro(head, evalframe=evalframe), ""]


def _dimensions(r: Report) -> list[str]:
    """Per-dimension roll-ups, when the metrics span 2+ dimensions.

    With a single dimension the roll-up repeats the macro-F1, so it is left out.
    """
    dims: Mapping[str, Any] = r.get("dimensions") or {}
    if len(dims) <= 1:
        return []
    headers = [
        "dimension", "metrics", "mean", "p50", "p95", "pass-rate", "macro mean",
        "macro pass-rate",
    ]  # fmt: skip
    rows = [
        [
            name, ", ".join(d["metrics"]), f4(d["mean"]), f4(d["p50"]), f4(d["p95"]),
            f4(attempted(d)), f4(d["macro_mean"]), f4(d["macro_pass_rate"]),
        ]
        for name, d in dims.items()
    ]  # fmt: skip
    return ["## Per-dimension aggregates", "", *_table(headers, rows), ""]


def _safety(r: Report) -> list[str]:
    """Safety metrics: their own table and verdict, and every failing execution listed."""
    safety = headline_of(r).get("safety")
    if not safety:
        return []
    verdict = "passed" if safety["passed"] else "FAILED"
    out = [
        f"## Safety: {verdict}",
        "",
        f"_Safety metrics are hard constraints, kept out of macro-F1: "
        f"{safety['failed_executions']} of {safety['executions']} executions failed or "
        f"errored on one ({safety['errored_executions']} errored)._",
        "",
        *_metric_table(r, safety["metrics"]),
        "",
    ]
    failures = r.get("safety_failures") or []
    if failures:
        out += [
            f"_{len(failures)} failing (execution, metric) pair(s), every one listed._",
            "",
        ]
        out += _table(
            ["sample", "repetition", "metric", "score", "error"],
            [
                [f["sample_id"], f["repetition"], f["metric"], f4(f["score"]), f["error"] or ""]
                for f in failures
            ],
        )
        out.append("")
    return out


# Usage and cost come from the providers' ledger: the evaluator's own calls. A system under
# test is called by the user's function, whose calls evalframe never sees.
_EVALUATOR_CALLS = (
    "_The evaluator's provider calls (embeddings, judge) made to score the outputs; "
    "the system under test's own calls are not counted._"
)


def _usage(r: Report) -> list[str]:
    u = r["usage"]
    if u["observations"] <= 0:
        return []
    rep, derived = u["reported"], u.get("derived", {})
    lat = u["latency_ms"]

    def field(name: str, text: str) -> str:
        return text if rep.get(name, 0) or derived.get(name, 0) else "n/a"

    headers = [
        "observations", "prompt tokens", "completion tokens", "total tokens", "cost USD",
        "mean latency ms", "max latency ms",
    ]  # fmt: skip
    row = [
        u["observations"],
        field("prompt_tokens", str(u["prompt_tokens"])),
        field("completion_tokens", str(u["completion_tokens"])),
        field("total_tokens", str(u["total_tokens"])),
        field("cost_usd", f"{u['cost_usd']:.6f}"),
        field("latency_ms", f"{lat['mean']:.2f}"),
        field("latency_ms", f"{lat['max']:.2f}"),
    ]
    return ["## Usage summary", "", _EVALUATOR_CALLS, "", *_table(headers, [row]), ""]


def _cost(r: Report) -> list[str]:
    cost = r.get("cost")
    if not cost or cost.get("calls", 0) <= 0:
        return []
    out = [
        "## Cost",
        "",
        _EVALUATOR_CALLS,
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
    return [*out, ""]


def _cohorts(r: Report) -> list[str]:
    if not has_counts(r, _COUNTS):  # eval-harness's columns
        rows = [
            [c["label"], c["sample_count"], name, *stat_cells(m)]
            for c in r["cohorts"]
            for name, m in c["metrics"].items()
        ]
        headers = ["cohort", "samples", "metric", "mean", "p50", "p95", _passing(r)]
        return ["## Cohorts by metadata.tags", "", *_table(headers, rows)]
    rows = [
        [c["label"], c["sample_count"], name, *stat_cells(m), m["n_errors"]]
        for c in r["cohorts"]
        for name, m in c["metrics"].items()
    ]
    headers = ["cohort", "executions", "metric", "mean", "p50", "p95", _passing(r), "errors"]
    empty = any(m["n_scored"] == 0 for c in r["cohorts"] for m in c["metrics"].values())
    note = ["_n/a: no execution of the cohort was scored by the metric._", ""] if empty else []
    return ["## Cohorts by metadata.tags", "", *note, *_table(headers, rows)]


def _adversarial(r: Report) -> list[str]:
    adv = r["adversarial"]
    if adv["total_samples"] <= 0:
        return []
    headers = [
        "category", "label", "severity", "samples", "frameworks", "metric", "mean", "p50",
        "p95", "pass-rate",
    ]  # fmt: skip
    rows = [
        [
            c["category"],
            c["label"],
            c["severity"] or "n/a",
            c["sample_count"],
            ", ".join(c["compliance_frameworks"]) or "n/a",
            name,
            *stat_cells(m),
        ]
        for c in adv["categories"]
        for name, m in c["metrics"].items()
    ]
    frameworks = [
        [f["framework"], f["sample_count"], ", ".join(f["categories"])]
        for f in adv["compliance_frameworks"]
    ]
    return [
        *["", "## Adversarial coverage", "", *_table(headers, rows)],
        *["", "### Compliance frameworks", ""],
        *_table(["framework", "samples", "categories"], frameworks),
    ]


def _binary(stats: Sequence[Mapping[str, float]]) -> bool:
    """Every scored value is 0 or 1: each row's scores lie in [0, 1] with E[x^2] = E[x]."""
    return bool(stats) and all(
        m["min"] in (0.0, 1.0)
        and m["max"] in (0.0, 1.0)
        and abs(m["stddev"] ** 2 + m["mean"] ** 2 - m["mean"]) < 1e-4
        for m in stats
    )


def _bucket_range(b: Mapping[str, Any]) -> str:
    return f"{b['min']:.1f}-{b['max']:.1f}" + (" inclusive" if b["max"] >= 1.0 else "")


def _histograms(r: Report) -> list[str]:
    """Ten score ranges per metric; a metric that only scores 0 or 1 gets two rows."""
    per_sample = per_sample_metrics(r)
    out = ["", "## Score histograms"]
    for name, buckets in r["metric_distributions"].items():
        out += ["", f"### {_text(name)}", ""]
        stats = [m[name] for m in per_sample.values() if name in m]
        if buckets and _binary(stats):
            rows = [["0", buckets[0]["count"]], ["1", buckets[-1]["count"]]]
            out += _table(["score", "count"], rows)
        else:
            rows = [[_bucket_range(b), b["count"]] for b in buckets]
            out += _table(["score range", "count"], rows)
    return out


def _errors_text(errors: Sequence[tuple[str, str]]) -> str:
    """``a, b errored: <error>`` per distinct error, metrics sharing one error together."""
    by_error: dict[str, list[str]] = {}
    for metric, error in errors:
        by_error.setdefault(error, []).append(metric)
    return "; ".join(
        f"{', '.join(metrics)} errored: {_clip(error)}" for error, metrics in by_error.items()
    )


def _clip(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + " [...]"


def _failing(r: Report, *, max_rows: int) -> list[str]:
    """Samples that did not pass, at most ``max_rows``: errored ones first, with their error,
    then those scored below a metric's threshold, worst first."""
    found = failing_rows(r)
    out = ["## Failing samples", ""]
    if not found:
        return [*out, "_None: every sample was scored and reached each metric's threshold._", ""]
    shown = found[: max(0, max_rows)]
    errored = sum(1 for _, errors, _ in found if errors)
    worst = "lowest over repetitions" if r.get("repetitions", 1) > 1 else "score"
    order = (
        f": {errored} with an errored execution first, then the rest worst first"
        if errored
        else ", worst first"
    )
    out += [
        f"_{len(shown)} of {len(found)} failing samples shown{order} (a sample's {worst} "
        "against each metric's threshold)._",
        "",
    ]
    rows = []
    for sid, errors, failed in shown:
        parts = [_errors_text(errors)] if errors else []
        parts += [
            f"{name} {score:.4f} (threshold {t:g}{lower_note(r, name)})"
            for name, score, t in failed
        ]
        rows.append(
            [sid, len({m for m, _ in errors} | {m for m, _, _ in failed}), "; ".join(parts)]
        )
    return [
        *out,
        *_table(["sample", "metrics failed", "errors and scores below threshold"], rows),
        "",
    ]


def _execution_errors(r: Report) -> list[str]:
    out = ["", "## Execution errors", "", "_Rows a metric could not score._", ""]
    if not r["failures"]:
        return [*out, "_None._"]
    return out + [
        f"- **sample `{_text(f['sample_id'])}` / metric `{_text(f['metric'])}`** - "
        f"{_text(f['error'])}"
        for f in r["failures"]
    ]


_SECTIONS: tuple[Callable[[Report], list[str]], ...] = (
    _status,
    _summary,
    _sampling,
    _unstable_rows,
    _metrics,
    _safety,
    _dimensions,
    _usage,
    _cost,
    _cohorts,
    _adversarial,
    _histograms,
    _execution_errors,
)


DEFAULT_MAX_ROWS = 20


def render(r: Report, *, max_rows: int = DEFAULT_MAX_ROWS) -> str:
    """The report as Markdown, ending in a single newline.

    Only eval-harness.report.v1 keys are required; evalframe's additions (per-metric
    thresholds and counts, dimensions, safety failures) add their columns and sections when
    present, so an eval-harness report renders in eval-harness's layout (its thresholds are
    0.5). ``max_rows`` bounds the failing samples listed.
    """
    sections = list(_SECTIONS)
    sections.insert(sections.index(_usage), partial(_failing, max_rows=max_rows))
    out = [line for section in sections for line in section(r)]
    return "\n".join(out).rstrip("\n") + "\n"


def render_html(r: Report) -> str:
    """The rich HTML fragment for Jupyter (``evalframe.views._html.report_html``)."""
    from evalframe.views._html import report_html

    return report_html(r)
