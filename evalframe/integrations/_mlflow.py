"""A run as an MLflow run: ``run.to_mlflow()`` and ``evalframe export RUN --to mlflow``.

What is logged (``_mlflow_layout`` builds it, before MLflow is touched):

* metrics ``<metric>/mean``, ``/median``, ``/p95``, ``/pass_rate`` per metric (as MLflow's
  own GenAI evaluation names its aggregates), ``macro_f1``, and
  ``cohort/<tag>/<metric>/pass_rate`` per tagged cohort;
* params ``dataset``, ``dataset_hash``, ``samples``, ``repetitions``, ``metrics``,
  ``providers`` and ``prompt_versions``;
* the dataset as a run input (its name, the digest of its rows, its source file);
* artifacts ``eval_results_table.json`` (one row per sample and repetition, shown as a table
  by MLflow), ``report.html``, ``report.json``, ``scores.parquet`` and
  ``evalframe_keys.json`` (the original text of every key built from a metric id, tag or
  label);
* tags ``evalframe.run_id``, ``evalframe.version``, ``mlflow.source.git.commit`` (inside a
  git checkout) and ``label.<name>`` per label.

One evalframe run is one MLflow run: an export looks the run up by its ``evalframe.run_id``
tag in the experiment and updates it, so exporting again adds no duplicate. An export that
fails after MLflow was written to ends the MLflow run as ``FAILED``, with the reason in its
``evalframe.export_error`` tag; exporting again completes it. Every MLflow failure is an
``ExportError`` with one paragraph (exit 2 on the command line).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import subprocess
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar
from urllib.parse import urlsplit, urlunsplit

from evalframe._version import __version__
from evalframe.core._errors import ExportError
from evalframe.integrations._mlflow_layout import (
    KEYS_FILE,
    RUN_ID_TAG,
    TABLE_FILE,
    Layout,
    cut,
    layout,
    results_table,
)

if TYPE_CHECKING:
    from evalframe.core._run import Run

__all__ = ["ERROR_TAG", "to_mlflow"]

ERROR_TAG: Final = "evalframe.export_error"
_INSTALL: Final = (
    "MLflow export needs the mlflow extra: pip install '.[mlflow]' in a clone of evalframe."
)
_FILE_STORE_ENV: Final = "MLFLOW_ALLOW_FILE_STORE"
_TABLES_TAG: Final = "mlflow.loggedArtifacts"
_BATCH_METRICS: Final = 1000  # MLflow's per-request limits
_BATCH_PARAMS_TAGS: Final = 100
_REASON_LIMIT: Final = 1000

T = TypeVar("T")


def _git_commit() -> str | None:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=False, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def _shown(uri: str | None) -> str:
    """``uri`` without a password, for messages."""
    if not uri:
        return "MLflow's default tracking store"
    parts = urlsplit(uri)
    if parts.password is None:
        return uri
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{host}"))


def _reason(exc: BaseException, uri: str | None) -> str:
    """The first paragraph of an exception's message, on one line, cut to a readable size,
    without the password of ``uri``."""
    text = str(exc).strip() or type(exc).__name__
    password = urlsplit(uri).password if uri else None
    if password:
        text = text.replace(password, "***")
    paragraph = " ".join(text.split("\n\n", 1)[0].split())
    return cut(f"{type(exc).__name__}: {paragraph}", _REASON_LIMIT).rstrip(".")


@contextlib.contextmanager
def _file_store_allowed(uri: str | None) -> Iterator[None]:
    """Let MLflow open a file store named by ``uri`` (MLflow 3 refuses one unless
    ``MLFLOW_ALLOW_FILE_STORE`` is true); a value the user set is left as it is."""
    uri = uri or os.environ.get("MLFLOW_TRACKING_URI")
    scheme = urlsplit(uri).scheme if uri else None
    if scheme not in ("", "file") or _FILE_STORE_ENV in os.environ:
        yield
        return
    os.environ[_FILE_STORE_ENV] = "true"
    try:
        yield
    finally:
        os.environ.pop(_FILE_STORE_ENV, None)


def _html(run: Run) -> str:
    # MLflow shows HTML artifacts in a sandboxed frame: static SVG charts, when the viz extra
    # is there to draw them; the tables alone otherwise.
    report = run.report(samples=False)
    if importlib.util.find_spec("altair") and importlib.util.find_spec("vl_convert"):
        try:
            return report.to_html(charts="svg")
        except ValueError:  # a chart the renderer refused: the export goes on without charts
            pass
    return report.to_html(charts="none")


def _artifacts(run: Run, plan: Layout, folder: Path) -> None:
    import orjson

    from evalframe.views._report_json import report_json_parts

    (folder / TABLE_FILE).write_bytes(results_table(run))
    (folder / "report.html").write_text(_html(run), encoding="utf-8")
    with (folder / "report.json").open("wb") as f:
        f.writelines(report_json_parts(run))
    run.scores.write_parquet(folder / "scores.parquet")
    (folder / KEYS_FILE).write_bytes(orjson.dumps(plan.keys, option=orjson.OPT_INDENT_2))


def _chunks(items: list[T], size: int) -> Iterator[list[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def to_mlflow(
    run: Run,
    *,
    tracking_uri: str | None = None,
    experiment: str | None = None,
    run_name: str | None = None,
) -> str:
    """Log ``run`` to MLflow as one finished MLflow run, or update the one logged before.

    Args:
        run: the evaluation.
        tracking_uri: the tracking server or store, e.g. ``sqlite:///mlflow.db`` (default:
            MLflow's own, from ``MLFLOW_TRACKING_URI``).
        experiment: the experiment's name, created when missing (default: the dataset name).
        run_name: the MLflow run's name (default: the run's name).

    Returns:
        The MLflow run id.

    Raises:
        ExportError: MLflow refused the store or a write; the message says what was left.
        ModuleNotFoundError: the ``mlflow`` extra is not installed.
    """
    try:
        from mlflow import MlflowClient
    except ImportError as exc:
        raise ModuleNotFoundError(_INSTALL) from exc
    tags = {RUN_ID_TAG: run.run_id, "evalframe.version": __version__}
    commit = _git_commit()
    if commit:
        tags["mlflow.source.git.commit"] = commit
    plan = layout(run, tags=tags)
    where = _shown(tracking_uri)
    with tempfile.TemporaryDirectory(prefix="evalframe-mlflow-") as scratch:
        folder = Path(scratch)
        _artifacts(run, plan, folder)  # everything is ready before MLflow is written to
        with _file_store_allowed(tracking_uri), warnings.catch_warnings():
            # MLflow's own use of its dependencies (SQLAlchemy 2.1 deprecations): nothing the
            # user of evalframe can act on.
            warnings.simplefilter("ignore", DeprecationWarning)

            def step(what: str, call: Callable[[], T]) -> T:
                try:
                    return call()
                except Exception as exc:
                    raise ExportError(
                        f"MLflow export of run {run.run_id} to {where} failed while {what}: "
                        f"{_reason(exc, tracking_uri)}. No run was written to MLflow."
                    ) from None

            client = step("opening the tracking store", lambda: MlflowClient(tracking_uri))
            name = experiment or cut(run.dataset.name, 500)
            experiment_id = step("finding the experiment", lambda: _experiment(client, name))
            found = step("looking up earlier exports", lambda: _earlier(client, experiment_id, run))
            if found is None:
                created = step(
                    "creating the run",
                    lambda: client.create_run(
                        experiment_id,
                        start_time=int(run.started_at * 1000),
                        tags=plan.tags,
                        run_name=run_name or run.name,
                    ),
                )
                mlflow_run_id: str = created.info.run_id
                old_params: dict[str, str] = {}
                old_metrics: dict[str, float] = {}
                old_tags: dict[str, str] = {}
            else:
                mlflow_run_id = found.info.run_id
                old_params = dict(found.data.params)
                old_metrics = dict(found.data.metrics)
                old_tags = dict(found.data.tags)
                changed = {
                    k for k, v in plan.params.items() if k in old_params and old_params[k] != v
                }
                if changed:
                    raise ExportError(
                        f"MLflow export of run {run.run_id}: its MLflow run {mlflow_run_id} "
                        f"holds other values for the params {', '.join(sorted(changed))}, and "
                        "MLflow params cannot change. Delete that MLflow run to export again. "
                        "Nothing was written to MLflow."
                    )
            try:
                _write(client, mlflow_run_id, run, plan, folder, old_params, old_metrics, old_tags)
                for key in sorted(old_tags):
                    if (key.startswith("label.") and key not in plan.tags) or key == ERROR_TAG:
                        client.delete_tag(mlflow_run_id, key)  # labels removed since, or
                        # the error of an export that failed before this one
                if found is not None and run_name:
                    client.update_run(mlflow_run_id, name=run_name)
                client.set_terminated(mlflow_run_id, "FINISHED", end_time=_end(run))
            except BaseException as exc:
                raise _failed(client, mlflow_run_id, run, tracking_uri, exc) from None
    return mlflow_run_id


def _end(run: Run) -> int:
    return int(run.finished_at * 1000)


def _experiment(client: Any, name: str) -> str:
    from mlflow.exceptions import MlflowException

    found = client.get_experiment_by_name(name)
    if found is not None:
        return str(found.experiment_id)
    try:
        return str(client.create_experiment(name))
    except MlflowException:  # created meanwhile by another export
        again = client.get_experiment_by_name(name)
        if again is None:
            raise
        return str(again.experiment_id)


def _earlier(client: Any, experiment_id: str, run: Run) -> Any:
    """The MLflow run an earlier export of ``run`` made in the experiment (the latest
    started, if several), or None."""
    rid = run.run_id
    quote = "'" if "'" not in rid else '"' if '"' not in rid else None
    if quote is not None and "\\" not in rid:
        runs = client.search_runs(
            [experiment_id],
            filter_string=f"tags.`{RUN_ID_TAG}` = {quote}{rid}{quote}",
            order_by=["attributes.start_time DESC"],
            max_results=1,
        )
        return runs[0] if runs else None
    token = None
    while True:  # an id no filter string can quote: look at every run
        page = client.search_runs([experiment_id], max_results=1000, page_token=token)
        for found in page:
            if found.data.tags.get(RUN_ID_TAG) == rid:
                return found
        token = page.token
        if not token:
            return None


def _write(
    client: Any,
    mlflow_run_id: str,
    run: Run,
    plan: Layout,
    folder: Path,
    old_params: dict[str, str],
    old_metrics: dict[str, float],
    old_tags: dict[str, str],
) -> None:
    import json

    from mlflow.entities import Dataset, DatasetInput, InputTag, Metric, Param, RunTag

    dataset = Dataset(
        name=plan.dataset_name,
        digest=plan.dataset_digest,
        source_type=plan.dataset_source_type,
        source=plan.dataset_source,
        profile=plan.dataset_profile,
    )
    context = InputTag(key="mlflow.data.context", value="evaluation")
    client.log_inputs(mlflow_run_id, datasets=[DatasetInput(dataset, tags=[context])])
    stamp = _end(run)
    metrics = [Metric(k, v, stamp, 0) for k, v in plan.metrics.items() if old_metrics.get(k) != v]
    params = [Param(k, v) for k, v in plan.params.items() if k not in old_params]
    tags = [RunTag(k, v) for k, v in plan.tags.items()]
    for metric_chunk in _chunks(metrics, _BATCH_METRICS):
        client.log_batch(mlflow_run_id, metrics=metric_chunk)
    for param_chunk in _chunks(params, _BATCH_PARAMS_TAGS):
        client.log_batch(mlflow_run_id, params=param_chunk)
    for tag_chunk in _chunks(tags, _BATCH_PARAMS_TAGS):
        client.log_batch(mlflow_run_id, tags=tag_chunk)
    client.log_artifacts(mlflow_run_id, str(folder))
    # MLflow lists its table artifacts in this tag (as its own log_table does) to show them
    # as tables.
    listed = json.loads(old_tags.get(_TABLES_TAG, "[]"))
    table = {"path": TABLE_FILE, "type": "table"}
    if table not in listed:
        client.set_tag(mlflow_run_id, _TABLES_TAG, json.dumps([*listed, table]))


def _failed(
    client: Any, mlflow_run_id: str, run: Run, tracking_uri: str | None, exc: BaseException
) -> Any:
    """End the MLflow run as FAILED with the reason; the error to raise (or ``exc`` itself
    when it is not an error, e.g. Ctrl-C)."""
    reason = "interrupted" if isinstance(exc, KeyboardInterrupt) else _reason(exc, tracking_uri)
    try:
        client.set_tag(mlflow_run_id, ERROR_TAG, reason)
        client.set_terminated(mlflow_run_id, "FAILED", end_time=int(time.time() * 1000))
        left = (
            f"The MLflow run {mlflow_run_id} was ended as FAILED, with the reason in its "
            f"{ERROR_TAG} tag; export again to complete it."
        )
    except Exception:
        left = (
            f"The MLflow run {mlflow_run_id} could not be ended as FAILED either; export "
            "again to complete it."
        )
    if not isinstance(exc, Exception):
        return exc
    where = _shown(tracking_uri)
    return ExportError(f"MLflow export of run {run.run_id} to {where} failed: {reason}. {left}")
