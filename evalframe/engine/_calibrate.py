"""``calibrate``: score human-labelled cases with a judge-backed metric and measure agreement."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from evalframe.core import schema as C
from evalframe.core._calibration import Calibration, CalibrationCases, agreement, read_cases
from evalframe.core._dataset import Dataset
from evalframe.core._errors import MetricError
from evalframe.engine._evaluate import evaluate
from evalframe.metrics.semantic import TextEmbeddings, TokenEmbeddings
from evalframe.providers import JudgeClient, Providers

if TYPE_CHECKING:
    from evalframe.store import Store

__all__ = ["calibrate", "calibrate_labels", "stored_labels"]


def calibrate(
    cases: CalibrationCases | str | os.PathLike[str],
    *,
    providers: Providers | JudgeClient | None = None,
    threshold: float = 0.5,
    min_agreement: float = 0.8,
    model_under_test: str | None = None,
    length_bias_warn: float = 0.4,
    require_distinct_models: bool = True,
    store: Store | str | os.PathLike[str] | None = None,
) -> Calibration:
    """Judge human-labelled cases and measure how far the judge agrees with the humans.

    Each case is scored with the file's ``metric`` (default ``llm-as-judge``, with its
    prompt and strict reply checks) through the providers, so calls are cached, counted and
    budgeted as in a run. The judge's verdict is pass when its score reaches ``threshold``.

    Args:
        cases: a case file path or ``read_cases(...)``'s value.
        providers: the judge (default: from the environment).
        threshold: the verdict threshold (eval-harness's ``verdict_pass_threshold``).
        min_agreement: the gate's floor on percent agreement.
        model_under_test: the model that wrote the answers; the same model as the judge is
            a self-preference violation (unless ``require_distinct_models`` is off).
        length_bias_warn: warn when |Spearman(answer length, judge score)| reaches this.
        store: save the calibration there, where ``evalframe runs`` shows it next to runs
            of the same metric and judge model.

    Returns:
        A ``Calibration``; ``passed`` is the gate's verdict.

    Raises:
        DatasetError: the case file is malformed.
        MetricError: the metric is not judge-backed.
        ProviderError: no judge is configured.
    """
    if not isinstance(cases, CalibrationCases):
        cases = read_cases(Path(cases))
    context = Providers.coerce(providers)
    dataset = Dataset.from_records(
        [
            {
                "id": c.id,
                "input": c.input,
                "expected_output": c.expected,
                "metadata": {**c.metadata, "tags": list(c.tags)},
            }
            for c in cases.cases  # the case file's records, once
        ],
        name=cases.name,
        path=Path(cases.path) if cases.path else None,
    )
    run = evaluate(
        dataset,
        outputs={c.id: c.actual for c in cases.cases},
        metrics=[cases.metric],
        providers=context,
        progress=False,
        strict=False,  # a case the judge cannot score is listed, never an abort
    )
    metric = run.metrics[0]
    if all(isinstance(n, TextEmbeddings | TokenEmbeddings) for n in metric.needs()):
        raise MetricError(
            f"{cases.path or cases.name}: metric {metric.id!r} is not judge-backed; "
            "calibration measures a judge model against human labels."
        )
    judge = context.require_judge(f"Calibrating {metric.id}")
    order = pl.DataFrame({C.SAMPLE_ID: [c.id for c in cases.cases]})
    scored = order.join(
        run.scores.filter(pl.col(C.REPETITION) == 0).select(C.SAMPLE_ID, C.SCORE, C.ERROR),
        on=C.SAMPLE_ID,
        how="left",
        maintain_order="left",
    )
    result = agreement(
        cases,
        scored.get_column(C.SCORE).to_list(),
        scored.get_column(C.ERROR).to_list(),
        threshold=threshold,
        min_agreement=min_agreement,
        length_bias_warn=length_bias_warn,
        judge_model=judge.model,
        model_under_test=model_under_test,
        require_distinct_models=require_distinct_models,
        higher_is_better=metric.higher_is_better,
    )
    result = dataclasses.replace(result, metric=metric.id)
    if store is not None:
        from evalframe.store import as_store

        as_store(store).save_calibration(result)
    return result


def calibrate_labels(
    store: Store | str | os.PathLike[str],
    run: str,
    metric: str,
    *,
    threshold: float = 0.5,
    min_agreement: float = 0.8,
    model_under_test: str | None = None,
    length_bias_warn: float = 0.4,
    require_distinct_models: bool = True,
    save: bool = True,
) -> Calibration:
    """Measure a stored run's judge against the human labels kept with it in the store.

    The labelled executions (``evalframe view``'s Label page, ``Store.save_labels``) are the
    cases: their input, expected and actual output, and the person's verdict (a score label
    passes at ``threshold``, and counts as a graded label for weighted kappa when every
    label is a score). The judge's scores are those the run already holds, so no judge is
    called; to calibrate another judge on the same labels, rescore the run with it (a
    rescored run shares its source's outputs, and so its labels) and calibrate that run.

    Args:
        store: the run store.
        run: a run reference.
        metric: the judged metric's id in that run.
        threshold, min_agreement, model_under_test, length_bias_warn,
            require_distinct_models: as for ``calibrate``.
        save: keep the calibration in the store (``evalframe runs`` shows its agreement).

    Raises:
        DatasetError: the run has no label for ``metric``.
        StoreError: an unknown run.
    """
    import json

    from evalframe.core._calibration import CalibrationCase
    from evalframe.core._errors import DatasetError
    from evalframe.store import as_store
    from evalframe.store._labels import judge_model, labelled_executions

    db = as_store(store)
    run_id = db.resolve(run)
    metrics = db.sql(
        "SELECT metric, threshold FROM run_metrics WHERE run_id = ? ORDER BY ordinal", [run_id]
    )
    if metric not in metrics.get_column("metric").to_list():
        raise MetricError(
            f"Run {run_id} has no metric {metric!r}; it has: "
            f"{', '.join(metrics.get_column('metric').to_list())}."
        )
    rows = labelled_executions(db, run_id, metric)
    if rows.height == 0:
        raise DatasetError(
            f"Run {run_id} has no human label for {metric!r} in the store: label rows with "
            "`evalframe view` (its Label page) or Store.save_labels, or pass a CASES file."
        )
    many = rows.get_column("repetition").max() != 0
    cases = []
    for r in rows.iter_rows(named=True):  # one per label, a few hundred
        verdict = r["verdict"] or ("pass" if r["label"] >= threshold else "fail")
        expected = r["expected_output"]
        cases.append(
            CalibrationCase(
                id=f"{r['sample_id']}#{r['repetition']}" if many else r["sample_id"],
                input=json.loads(r["input"]) if r["input"] else {},
                expected="" if expected is None else str(expected),
                actual=r["actual_output"] or "",
                human_verdict=verdict,
                tags=tuple(r["tags"] or ()),
                human_score=None if r["verdict"] is not None else float(r["label"]),
            )
        )
    name = str(db.sql("SELECT name FROM runs WHERE run_id = ?", [run_id]).item())
    labelled = CalibrationCases(name=f"{name} labels", cases=tuple(cases), metric=metric)
    from evalframe.metrics._registry import get

    try:
        higher = get(metric).higher_is_better
    except MetricError:  # a stored metric this process does not register
        higher = True
    result = agreement(
        labelled,
        rows.get_column("score").to_list(),
        rows.get_column("error").to_list(),
        threshold=threshold,
        min_agreement=min_agreement,
        length_bias_warn=length_bias_warn,
        judge_model=judge_model(db, run_id),
        model_under_test=model_under_test,
        require_distinct_models=require_distinct_models,
        higher_is_better=higher,
    )
    if save:
        db.save_calibration(result)
    return result


def stored_labels(store: Store, run: str, metric: str) -> pl.DataFrame:
    """A stored run's current human labels of ``metric`` as ``estimate`` and
    ``suggest_labels`` take them: ``sample_id`` and ``label`` (the mean over the labelled
    repetitions of a sample), in dataset order."""
    labels = store.labels(run, metric=metric)
    return labels.group_by("sample_id", maintain_order=True).agg(pl.col("label").mean())
