"""Calibration and estimate reports as Markdown (JSON is their ``to_dict()``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalframe.views._format import f4, fmt, md_table

if TYPE_CHECKING:
    from evalframe.core._calibration import Calibration
    from evalframe.core._estimate import Estimate

__all__ = ["calibration_markdown", "estimate_markdown"]


def _interval(low: float | None, high: float | None) -> str:
    return "n/a" if low is None or high is None else f"[{f4(low)}, {f4(high)}]"


def calibration_markdown(cal: Calibration) -> str:
    """eval-harness's bullet list and confusion table, then kappa, cohorts and disagreements.

    Examples:
        >>> from evalframe.core._calibration import CalibrationCase, CalibrationCases, agreement
        >>> cases = CalibrationCases("demo", (CalibrationCase("a", {}, "x", "x", "pass"),))
        >>> print(calibration_markdown(agreement(cases, [0.9], [None])).splitlines()[0])
        # Judge calibration: demo
    """
    c = cal.confusion
    kappa = cal.kappa
    why = cal.undefined

    def value(name: str, x: float | None) -> str:
        return f"n/a ({why[name]})" if x is None and name in why else f4(x)

    kappa_text = (
        value("cohen_kappa", None)
        if kappa.kappa is None
        else f"{f4(kappa.kappa)}, 95% interval {_interval(kappa.low, kappa.high)}"
    )
    lines = [
        f"# Judge calibration: {cal.name}",
        "",
        f"- Metric: `{cal.metric}`; judge model: `{cal.judge_model or 'n/a'}`",
        f"- Cases: {cal.case_count} ({cal.scored_count} scored)",
        f"- Verdict pass threshold: {fmt(cal.verdict_pass_threshold, 'g')}",
        f"- Agreement rate: {value('agreement_rate', cal.agreement_rate)} "
        f"(floor {fmt(cal.min_agreement, 'g')})",
        f"- Cohen's kappa: {kappa_text}",
    ]
    if cal.weighted_kappa is not None or "weighted_kappa" in why:
        lines.append(
            f"- Weighted kappa ({cal.grades} grades, quadratic): "
            f"{value('weighted_kappa', cal.weighted_kappa)}"
        )
    bias = (
        f"- Length bias (Spearman): {value('length_bias_correlation', cal.length_bias_correlation)}"
    )
    if cal.length_bias_warning:
        bias += (
            f" - warning: |rho| >= {fmt(cal.length_bias_warn, 'g')}, the judge's scores follow "
            "answer length"
        )
    lines.append(bias)
    lines.append(
        "- Self-preference violation: "
        + (
            f"yes (the judge is the model under test, `{cal.model_under_test}`)"
            if cal.self_preference_violation
            else "no"
        )
    )
    lines.append(f"- Result: **{'pass' if cal.passed else 'fail'}**")
    lines += [
        "",
        "## Confusion",
        "",
        *md_table(
            ["", "judge pass", "judge fail"],
            [["human pass", c.true_pass, c.false_fail], ["human fail", c.false_pass, c.true_fail]],
        ),
    ]
    if cal.cohorts:
        lines += [
            "",
            "## Agreement by cohort",
            "",
            *md_table(
                ["cohort", "cases", "agreement", "kappa"],
                [
                    [
                        r["cohort"],
                        r["case_count"],
                        f4(r["agreement_rate"]),
                        f4(r["cohen_kappa"])
                        if r["cohen_kappa"] is not None
                        else f"n/a ({r['cohen_kappa_reason']})",
                    ]
                    for r in cal.cohorts
                ],
            ),
        ]
    disagreements = [
        r
        for r in cal.cases
        if r["judge_verdict"] is not None and r["judge_verdict"] != r["human_verdict"]
    ]
    if disagreements:
        lines += [
            "",
            "## Disagreements",
            "",
            *md_table(
                ["case", "human", "judge", "judge score"],
                [
                    [r["id"], r["human_verdict"], r["judge_verdict"], f4(r["judge_score"])]
                    for r in disagreements
                ],
            ),
        ]
    if cal.errors:
        lines += [
            "",
            "## Cases the judge could not score",
            "",
            *md_table(["case", "error"], [[e["id"], e["error"]] for e in cal.errors]),
        ]
    return "\n".join(lines) + "\n"


def estimate_markdown(est: Estimate) -> str:
    """The three estimates of mean and pass-rate, overall then per cohort."""
    lines = [
        f"# Estimate: `{est.metric}`",
        "",
        f"Pass threshold {fmt(est.threshold, 'g')}"
        + (f"; {est.strata} judge-score strata" if est.strata > 1 else "")
        + (
            f"; {est.unmatched_labels} label(s) name no sample the judge scored"
            if est.unmatched_labels
            else ""
        )
        + ". Intervals are 95%. The prediction-powered estimate corrects the judge with the "
        "human labels and stays valid when the judge is biased; the judge-only figure "
        "carries the judge's bias; the human-only one uses the labelled rows alone.",
        "",
    ]
    rows = [
        [
            "all" if r["cohort"] is None else r["cohort"],
            r["quantity"],
            r["method"],
            f4(r["estimate"]),
            _interval(r["low"], r["high"]) + (f" ({r['reason']})" if r["reason"] else ""),
            r["n_judged"],
            r["n_labelled"],
        ]
        for r in est.frame.iter_rows(named=True)  # a few rows per cohort
    ]
    lines += md_table(
        ["cohort", "quantity", "method", "estimate", "95% interval", "judged", "labelled"], rows
    )
    return "\n".join(lines) + "\n"
