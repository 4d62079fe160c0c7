"""MLflow export against a real local tracking store, read back through MLflow's client."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner
from mlflow import MlflowClient

import evalframe as ef
from evalframe.cli import cli

EXAMPLES = Path(ef.__file__).parent / "examples"


@pytest.fixture
def tracking(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    # MLflow keeps its file store in maintenance mode; it still reads and writes it.
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    return (tmp_path / "mlruns").as_uri()


def _run() -> ef.Run:
    return ef.evaluate(
        EXAMPLES / "support.yaml",
        outputs=EXAMPLES / "support.outputs.json",
        metrics=["contains", "rouge-l(beta=2.0)"],
        labels={"model": "gpt-x"},
    )


def test_run_to_mlflow_logs_params_metrics_artifacts_and_tags(
    tracking: str, tmp_path: Path
) -> None:
    run = _run()
    mlflow_id = run.to_mlflow(tracking_uri=tracking, experiment="support")
    client = MlflowClient(tracking_uri=tracking)
    logged = client.get_run(mlflow_id)
    assert client.get_experiment(logged.info.experiment_id).name == "support"
    assert logged.info.status == "FINISHED"
    assert logged.info.run_name == run.name

    params = logged.data.params
    assert params["dataset"] == "support.faq"
    assert params["metrics"] == "contains, rouge-l(beta=2.0)"
    assert params["samples"] == str(run.dataset.height)
    assert params["repetitions"] == "1"
    assert params["providers"] == "none"
    assert len(params["dataset_hash"]) == 16

    # Independent oracle: the per-metric numbers straight from the scores frame.
    metrics = logged.data.metrics
    scores = run.scores
    for metric, key in (("contains", "contains"), ("rouge-l(beta=2.0)", "rouge-l_beta_2.0_")):
        column = scores.filter(pl.col("metric") == metric).get_column("score")
        passed = scores.filter(pl.col("metric") == metric).get_column("passed")
        assert metrics[f"{key}.mean"] == pytest.approx(column.mean())
        assert metrics[f"{key}.pass_rate"] == pytest.approx(passed.sum() / column.len())
        assert metrics[f"{key}.p50"] == pytest.approx(column.quantile(0.5, "linear"))
    assert metrics["macro_f1"] == pytest.approx(run.macro_f1)
    # Cohort "shipping" holds shipping-time and shipping-cost, both containing their answer.
    assert metrics["cohort.shipping.contains.pass_rate"] == 1.0

    tags = logged.data.tags
    assert tags["evalframe.run_id"] == run.run_id
    assert tags["label.model"] == "gpt-x"
    assert "mlflow.source.git.commit" in tags  # the tests run in a git checkout

    names = sorted(a.path for a in client.list_artifacts(mlflow_id))
    assert names == ["report.html", "report.json", "scores.parquet"]
    down = Path(client.download_artifacts(mlflow_id, "", str(tmp_path / "down")))
    assert json.loads((down / "report.json").read_text())["run_id"] == run.run_id
    assert pl.read_parquet(down / "scores.parquet").equals(run.scores)
    assert "<html" in (down / "report.html").read_text().lower()


def test_cli_export_to_mlflow_from_the_store(tracking: str, tmp_path: Path) -> None:
    run = _run()
    store = tmp_path / "runs.duckdb"
    run.save(store)
    result = CliRunner().invoke(
        cli,
        ["export", run.run_id, "--to", "mlflow", "--store", str(store), "--tracking-uri", tracking],
    )
    assert result.exit_code == 0, result.output
    mlflow_id = result.output.strip().rsplit(" ", 1)[-1]
    logged = MlflowClient(tracking_uri=tracking).get_run(mlflow_id)
    assert logged.data.tags["evalframe.run_id"] == run.run_id
    assert logged.data.params["dataset"] == "support.faq"
    experiment = MlflowClient(tracking_uri=tracking).get_experiment(logged.info.experiment_id)
    assert experiment.name == "support.faq"  # the dataset name by default


def test_cli_export_to_a_directory_still_writes_parquet(tmp_path: Path) -> None:
    run = _run()
    store = tmp_path / "runs.duckdb"
    run.save(store)
    result = CliRunner().invoke(
        cli, ["export", run.run_id, "--to", str(tmp_path / "out"), "--store", str(store)]
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out").is_dir()
    bad = CliRunner().invoke(
        cli,
        ["export", run.run_id, "--to", str(tmp_path / "o2"), "--store", str(store),
         "--experiment", "x"],
    )  # fmt: skip
    assert bad.exit_code == 2
    assert "--to mlflow" in bad.output
