"""A run as an MLflow run: ``run.to_mlflow()`` and ``evalframe export RUN --to mlflow``.

What is logged:

* params: ``dataset``, ``dataset_hash`` (over the rows' content hashes), ``samples``,
  ``repetitions``, ``metrics`` (the metric specs, comma-separated), ``providers`` (the
  ``provider/model`` pairs the run called) and ``prompt_versions`` (each judge-backed
  metric's template, as a short hash);
* metrics: ``<metric>.mean``, ``.p50``, ``.p95``, ``.pass_rate`` per metric, ``macro_f1``, and
  ``cohort.<tag>.<metric>.pass_rate`` per cohort;
* artifacts: ``report.html``, ``report.json`` and ``scores.parquet``;
* tags: ``evalframe.run_id``, ``evalframe.version``, ``mlflow.source.git.commit`` (when the
  current directory is a git checkout) and each of the run's labels as ``label.<name>``.

MLflow keys allow letters, digits, ``_ - . /`` and spaces; other characters of a metric id
(``rouge-l(beta=2.0)``) become ``_``.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Final

from evalframe._version import __version__
from evalframe.core import schema as C

if TYPE_CHECKING:
    from evalframe.core._run import Run

__all__ = ["mlflow_metrics", "mlflow_params", "to_mlflow"]

_KEY: Final = re.compile(r"[^\w\-. /]")
_MAX_PARAM: Final = 6000
_INSTALL: Final = "MLflow export needs the mlflow extra: pip install 'evalframe[mlflow]'."


def _key(text: str) -> str:
    return _KEY.sub("_", text)


def _git_commit() -> str | None:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=False, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def _dataset_hash(run: Run) -> str:
    hashes = sorted(run.dataset.get_column(C.ROW_HASH).cast(str).to_list())
    return hashlib.sha256("\n".join(hashes).encode()).hexdigest()[:16]


def mlflow_params(run: Run) -> dict[str, str]:
    """The params logged for ``run`` (values cut to MLflow's length limit)."""
    providers: list[str] = []
    if run.usage.height and {"provider", "model"} <= set(run.usage.columns):
        pairs = run.usage.select("provider", "model").unique().sort("provider", "model")
        providers = [f"{p}/{m}" for p, m in pairs.iter_rows()]
    prompts = []
    for metric in run.metrics:
        template = dict(getattr(metric, "params", ())).get("template")
        if isinstance(template, str):
            prompts.append(f"{metric.id}={hashlib.sha256(template.encode()).hexdigest()[:12]}")
    params = {
        "dataset": run.dataset.name,
        "dataset_hash": _dataset_hash(run),
        "samples": str(run.dataset.height),
        "repetitions": str(run.repetitions),
        "metrics": ", ".join(run.metric_ids),
        "providers": ", ".join(providers) or "none",
        "prompt_versions": ", ".join(prompts) or "none",
    }
    return {k: v[:_MAX_PARAM] for k, v in params.items()}


def mlflow_metrics(run: Run) -> dict[str, float]:
    """The metrics logged for ``run``: per metric, macro-F1 and per-cohort pass-rates."""
    values: dict[str, float] = {"macro_f1": float(run.macro_f1)}
    for row in run.summary.iter_rows(named=True):
        for stat in ("mean", "p50", "p95", "pass_rate"):
            if row[stat] is not None:
                values[_key(f"{row['metric']}.{stat}")] = float(row[stat])
    cohorts = run.cohorts
    if cohorts.height:
        for tag, metric, rate in cohorts.select("cohort", "metric", "pass_rate").iter_rows():
            if rate is not None:
                values[_key(f"cohort.{tag}.{metric}.pass_rate")] = float(rate)
    return values


def to_mlflow(
    run: Run,
    *,
    tracking_uri: str | None = None,
    experiment: str | None = None,
    run_name: str | None = None,
) -> str:
    """Log ``run`` to MLflow as one finished MLflow run.

    Args:
        run: the evaluation.
        tracking_uri: the tracking server or store (default: MLflow's own, from
            ``MLFLOW_TRACKING_URI``).
        experiment: the experiment's name, created when missing (default: the dataset name).
        run_name: the MLflow run's name (default: the run's name).

    Returns:
        The MLflow run id.
    """
    try:
        from mlflow import MlflowClient
        from mlflow.entities import Metric, Param
    except ImportError as exc:
        raise ModuleNotFoundError(_INSTALL) from exc
    from evalframe.views._report_json import report_json_parts

    client = MlflowClient(tracking_uri=tracking_uri)
    name = experiment or run.dataset.name
    found = client.get_experiment_by_name(name)
    experiment_id = found.experiment_id if found is not None else client.create_experiment(name)
    tags = {"evalframe.run_id": run.run_id, "evalframe.version": __version__}
    commit = _git_commit()
    if commit:
        tags["mlflow.source.git.commit"] = commit
    tags.update({_key(f"label.{k}"): str(v) for k, v in run.labels.items()})
    started = int(run.started_at * 1000)
    created = client.create_run(
        experiment_id, start_time=started, tags=tags, run_name=run_name or run.name
    )
    mlflow_run_id: str = created.info.run_id
    stamp = int(run.finished_at * 1000)
    client.log_batch(
        mlflow_run_id,
        metrics=[Metric(k, v, stamp, 0) for k, v in mlflow_metrics(run).items()],
        params=[Param(k, v) for k, v in mlflow_params(run).items()],
    )
    with tempfile.TemporaryDirectory(prefix="evalframe-mlflow-") as scratch:
        folder = Path(scratch)
        report = run.report(samples=False)
        (folder / "report.html").write_text(report.to_html(charts="svg"), encoding="utf-8")
        with (folder / "report.json").open("wb") as f:
            f.writelines(report_json_parts(run))
        run.scores.write_parquet(folder / "scores.parquet")
        for file in ("report.html", "report.json", "scores.parquet"):
            client.log_artifact(mlflow_run_id, str(folder / file))
    client.set_terminated(mlflow_run_id, "FINISHED", end_time=stamp)
    return mlflow_run_id
