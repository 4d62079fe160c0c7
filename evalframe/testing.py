"""Helpers for ordinary tests: ``ef.testing.assert_passes``, and ``ScriptedJudge``, a judge
that answers from a function of the prompt (offline tests of judged metrics).

Examples:
    >>> import evalframe as ef
    >>> ds = ef.Dataset.from_records(
    ...     [{"id": "q1", "input": {"question": "2+2?"}, "expected_output": "4"},
    ...      {"id": "q2", "input": {"question": "3+3?"}, "expected_output": "6"}], name="math")
    >>> run = ef.evaluate(ds, outputs={"q1": "4", "q2": "7"}, metrics=["exact-match"])
    >>> ef.testing.assert_passes(run, min_macro_f1=0.5)
    >>> ef.testing.assert_passes(run, metrics={"exact-match": 0.9})
    Traceback (most recent call last):
    ...
    AssertionError: run ... of 'math' did not pass:
      exact-match pass-rate 0.5000 is below 0.9000
    failing rows (1):
      q2  exact-match  score 0.0000  threshold 0.5000
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from evalframe.core._run import Run

if TYPE_CHECKING:
    from evalframe.providers import Ledger, Reply

__all__ = ["ScriptedJudge", "assert_passes"]

_LISTED: Final = 20


def _from_run(run: Run) -> tuple[str, dict[str, float], float | None, int, list[str]]:
    rates = dict(run.summary.select("metric", "pass_rate").fill_null(0.0).iter_rows())
    failing = run.failing()
    rows = []
    for sample_id, repetition, metric, score, threshold, error in failing.head(_LISTED).iter_rows():
        rep = f" (repetition {repetition})" if run.repetitions > 1 else ""
        what = f"error: {error}" if error is not None else f"score {score:.4f}"
        rows.append(f"  {sample_id}{rep}  {metric}  {what}  threshold {threshold:.4f}")
    if failing.height > _LISTED:
        rows.append(f"  ... and {failing.height - _LISTED} more (run.failing() lists them all)")
    label = f"run {run.run_id} of {run.dataset.name!r}"
    return (
        label,
        rates,
        run.macro_f1,
        run.failures.height,
        [f"failing rows ({failing.height}):", *rows],
    )


def _from_report(
    report: Mapping[str, Any],
) -> tuple[str, dict[str, float], float | None, int, list[str]]:
    from evalframe.views._format import attempted
    from evalframe.views._report import failing_samples, headline_of

    rates = {name: float(attempted(m) or 0.0) for name, m in report["metrics"].items()}
    errors = list(report.get("failures") or [])
    found = failing_samples(report)
    rows = [
        f"  {sid}  {metric}  score {score:.4f}  threshold {threshold:.4f}"
        for sid, failed in found
        for metric, score, threshold in failed
    ]
    rows += [f"  {e['sample_id']}  {e['metric']}  error: {e['error']}" for e in errors]
    listed = rows[:_LISTED]
    if len(rows) > _LISTED:
        listed.append(f"  ... and {len(rows) - _LISTED} more")
    label = f"run {report.get('run_id')} of {report.get('dataset')!r}"
    return (
        label,
        rates,
        headline_of(report)["macro_f1"],
        len(errors),
        [f"failing rows ({len(rows)}):", *listed],
    )


def assert_passes(
    run_or_report: Run | Mapping[str, Any],
    *,
    min_macro_f1: float | None = None,
    metrics: Mapping[str, float] | None = None,
    no_failures: bool = False,
) -> None:
    """Fail a test when a run (or its report) misses the bars set for it.

    Args:
        run_or_report: a ``Run``, or its report (``run.report()`` or the report JSON read
            back as a dict).
        min_macro_f1: the lowest acceptable macro-F1 (the mean pass-rate of the quality
            metrics; an errored execution did not pass). A run without a quality metric has
            none and misses any bar.
        metrics: the lowest acceptable pass-rate per metric id, e.g. ``{"rouge-l": 0.8}``,
            over every attempted execution.
        no_failures: also fail when any (execution, metric) pair could not be scored (an error,
            the run's ``failures``).

    Raises:
        AssertionError: a bar is missed. The message names each missed bar, then lists the
            failing rows (scored below the metric's threshold, or not scored), worst first.
        ValueError: ``metrics`` names a metric the run did not score.
    """
    if isinstance(run_or_report, Run):
        label, rates, macro, errors, failing = _from_run(run_or_report)
    else:
        label, rates, macro, errors, failing = _from_report(run_or_report)
    missed: list[str] = []
    if min_macro_f1 is not None and (macro is None or macro < min_macro_f1):
        shown = "n/a (no quality metric)" if macro is None else f"{macro:.4f}"
        missed.append(f"  macro-F1 {shown} is below {min_macro_f1:.4f}")
    for metric, bar in (metrics or {}).items():
        if metric not in rates:
            raise ValueError(
                f"assert_passes(metrics=...) names {metric!r}, which this run did not score; "
                f"it scored: {', '.join(rates) or 'no metric'}."
            )
        if rates[metric] < bar:
            missed.append(f"  {metric} pass-rate {rates[metric]:.4f} is below {bar:.4f}")
    if no_failures and errors:
        missed.append(f"  {errors} (execution, metric) pair(s) could not be scored")
    if missed:
        raise AssertionError("\n".join([f"{label} did not pass:", *missed, *failing]))


class ScriptedJudge:
    """A judge client whose replies come from ``answer(prompt)``: no model, no network.

    ``answer`` returns the reply: a string as it is, anything else as JSON. Use it with
    ``ef.Providers(judge=ScriptedJudge(...))`` to run judged metrics offline in tests and
    examples; each prompt is recorded in ``prompts`` and each call in the run's usage (free).

    Examples:
        >>> import evalframe as ef
        >>> judge = ef.testing.ScriptedJudge(lambda prompt: {"score": 1.0, "reason": "ok"})
        >>> ds = ef.Dataset.from_records(
        ...     [{"id": "q1", "input": {"question": "2+2?"}, "expected_output": "4"}], name="m")
        >>> run = ef.evaluate(ds, outputs={"q1": "4"}, metrics=["llm-as-judge"],
        ...                   providers=ef.Providers(judge=judge, cache=False))
        >>> run.scores.select("score").item(), len(judge.prompts)
        (1.0, 1)
    """

    structured = False

    def __init__(self, answer: Callable[[str], Any], *, name: str = "scripted") -> None:
        self.answer = answer
        self.name = name
        self.prompts: list[str] = []

    @property
    def id(self) -> str:
        return f"scripted:{self.name}"

    @property
    def model(self) -> str:
        return self.name

    def request(self, prompt: str, **options: Any) -> dict[str, object]:
        """The prompt and options; it keys the response cache."""
        digest = hashlib.sha256(repr(self.answer).encode()).hexdigest()[:8]
        return {"model": f"{self.name}-{digest}", "prompt": prompt, **options}

    def complete(self, prompts: Sequence[str], ledger: Ledger, **options: Any) -> list[Reply]:
        """One reply per prompt, from ``answer``."""
        from evalframe.providers import Call, Reply

        out: list[Reply] = []
        for prompt in prompts:  # the distinct prompts of a run, as a judge endpoint gets them
            self.prompts.append(prompt)
            got = self.answer(prompt)
            out.append(Reply(got if isinstance(got, str) else json.dumps(got)))
        ledger.record(
            Call(kind="judge", provider="local", model=self.name, items=len(prompts), free=True)
        )
        return out
