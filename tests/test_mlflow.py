"""MLflow export against the real MLflow: sqlite and file tracking stores, read back through
MLflow's own client and its table reader."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner
from mlflow import MlflowClient

import evalframe as ef
from evalframe.cli import cli
from evalframe.integrations._mlflow import ERROR_TAG
from evalframe.integrations._mlflow_layout import key_part

EXAMPLES = Path(ef.__file__).parent / "examples"

# MLflow's own queries, read back here through its client, use a loader SQLAlchemy 2.1
# deprecates (the export itself silences MLflow's deprecation warnings).
pytestmark = pytest.mark.filterwarnings(
    "ignore:The ``noload`` loader strategy is deprecated:DeprecationWarning"
)


@pytest.fixture(scope="module")
def empty_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An MLflow sqlite store with its tables made: MLflow's migrations take seconds, so each
    test starts from a copy (the documented command is also run against a new file)."""
    folder = tmp_path_factory.mktemp("mlflow-empty")
    MlflowClient(tracking_uri=f"sqlite:///{folder / 'mlflow.db'}").search_experiments()
    return folder / "mlflow.db"


@pytest.fixture(autouse=True)
def _here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, empty_db: Path) -> None:
    # The documented URIs are relative to the current directory; nothing may come from the
    # environment of the machine running the tests.
    monkeypatch.chdir(tmp_path)
    for name in ("MLFLOW_TRACKING_URI", "MLFLOW_ALLOW_FILE_STORE", "MLFLOW_REGISTRY_URI"):
        monkeypatch.delenv(name, raising=False)
    shutil.copyfile(empty_db, tmp_path / "mlflow.db")


@pytest.fixture(params=["sqlite", "file"])
def uri(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An absolute tracking URI (MLflow caches its stores by URI for the whole process; the
    relative forms of the documentation run in their own process below)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'mlflow.db'}"
    return (tmp_path / "mlruns").as_uri()


def _client(uri: str, monkeypatch: pytest.MonkeyPatch) -> MlflowClient:
    """MLflow's client to read back what was exported (a file store only opens with
    MLFLOW_ALLOW_FILE_STORE, which the export sets for itself)."""
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    return MlflowClient(tracking_uri=uri)


def _run(**kwargs: object) -> ef.Run:
    return ef.evaluate(
        EXAMPLES / "support.yaml",
        outputs=EXAMPLES / "support.outputs.json",
        metrics=["contains", "rouge-l(beta=2.0)"],
        labels={"model": "gpt-x"},
        **kwargs,  # type: ignore[arg-type]
    )


def _rouge() -> str:
    return key_part("rouge-l(beta=2.0)")


def test_run_to_mlflow_lays_out_an_evaluation_run(
    uri: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    run = _run()
    mlflow_id = run.to_mlflow(tracking_uri=uri, experiment="support")
    client = _client(uri, monkeypatch)
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

    # Independent oracle: the per-metric numbers straight from the scores frame.
    metrics = logged.data.metrics
    scores = run.scores
    for metric, key in (("contains", "contains"), ("rouge-l(beta=2.0)", _rouge())):
        one = scores.filter(pl.col("metric") == metric)
        column, passed = one.get_column("score"), one.get_column("passed")
        assert metrics[f"{key}/mean"] == pytest.approx(column.mean())
        assert metrics[f"{key}/median"] == pytest.approx(column.median())
        assert metrics[f"{key}/p95"] == pytest.approx(column.quantile(0.95, "linear"))
        assert metrics[f"{key}/pass_rate"] == pytest.approx(passed.sum() / column.len())
    assert metrics["macro_f1"] == pytest.approx(run.macro_f1)
    # Cohort "shipping" holds shipping-time and shipping-cost, both containing their answer;
    # one sample has no tag: its cohort is not logged under any name.
    assert metrics["cohort/shipping/contains/pass_rate"] == 1.0
    assert not any("None" in key or "untagged" in key for key in metrics)
    tagged = set(run.dataset.get_column("tags").explode().drop_nulls())
    assert {k.split("/")[1] for k in metrics if k.startswith("cohort/")} == tagged

    tags = logged.data.tags
    assert tags["evalframe.run_id"] == run.run_id
    assert tags["evalframe.version"] == ef.__version__
    assert tags["label.model"] == "gpt-x"
    assert tags["mlflow.source.git.commit"] == head.stdout.strip()  # run inside a checkout
    assert json.loads(tags["mlflow.loggedArtifacts"]) == [
        {"path": "eval_results_table.json", "type": "table"}
    ]

    (dataset_input,) = logged.inputs.dataset_inputs
    assert dataset_input.dataset.name == "support.faq"
    assert dataset_input.dataset.digest == params["dataset_hash"]
    assert dataset_input.dataset.source_type == "local"
    assert json.loads(dataset_input.dataset.source) == {
        "uri": (EXAMPLES / "support.yaml").resolve().as_uri()
    }
    assert json.loads(dataset_input.dataset.profile) == {"num_rows": 12}
    assert [(t.key, t.value) for t in dataset_input.tags] == [("mlflow.data.context", "evaluation")]

    names = sorted(a.path for a in client.list_artifacts(mlflow_id))
    assert names == [
        "eval_results_table.json",
        "evalframe_keys.json",
        "report.html",
        "report.json",
        "scores.parquet",
    ]
    down = Path(client.download_artifacts(mlflow_id, "", str(tmp_path / "down")))
    assert json.loads((down / "report.json").read_text())["run_id"] == run.run_id
    assert pl.read_parquet(down / "scores.parquet").equals(run.scores)
    assert 'id="ef-chart-0"' in (down / "report.html").read_text()  # drawn by the viz extra
    keys = json.loads((down / "evalframe_keys.json").read_text())
    assert keys[f"{_rouge()}/mean"] == {"metric": "rouge-l(beta=2.0)", "statistic": "mean"}
    assert keys["label.model"] == {"label": "model", "value": "gpt-x"}

    # The per-row table, read by MLflow's own table reader.
    table = client.load_table(logged.info.experiment_id, "eval_results_table.json", [mlflow_id])
    assert len(table) == run.frame.height
    row = table.set_index("sample_id").loc["refund-window"]
    assert row["inputs"] == {"question": "How long do I have to return an item?"}
    assert row["ground_truth"] == "30 days"
    expected = scores.filter(
        (pl.col("sample_id") == "refund-window") & (pl.col("metric") == "rouge-l(beta=2.0)")
    ).row(0, named=True)
    assert row["rouge-l(beta=2.0)/score"] == pytest.approx(expected["score"])
    assert bool(row["rouge-l(beta=2.0)/passed"]) is expected["passed"]


@pytest.mark.parametrize("uri", ["sqlite:///mlflow.db", "file:./mlruns"])
def test_the_documented_commands_work_as_written(
    uri: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The integration's page: pip install ".[mlflow]", then this command, in a new process,
    # with MLflow's environment variables unset.
    run = _run()
    run.save(tmp_path / "runs.duckdb")
    (tmp_path / "mlflow.db").unlink()  # a new store, made by the command
    command = [
        *(sys.executable, "-m", "evalframe", "export", run.run_id, "--to", "mlflow"),
        *("--store", "runs.duckdb", "--tracking-uri", uri, "--experiment", "support-bot"),
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    mlflow_id = done.stdout.strip().rsplit(" ", 1)[-1]
    absolute = (
        f"sqlite:///{tmp_path / 'mlflow.db'}"
        if "sqlite" in uri
        else "file:" + str(tmp_path / "mlruns")
    )
    client = _client(absolute, monkeypatch)
    logged = client.get_run(mlflow_id)
    assert logged.info.status == "FINISHED"
    assert client.get_experiment(logged.info.experiment_id).name == "support-bot"


def test_exporting_again_updates_the_same_mlflow_run(
    uri: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _run()
    store = tmp_path / "runs.duckdb"
    run.save(store)
    ids = []
    for _ in range(2):
        args = ["export", run.run_id, "--to", "mlflow", "--store", str(store)]
        result = CliRunner().invoke(cli, [*args, "--tracking-uri", uri])
        assert result.exit_code == 0, result.output
        ids.append(result.output.strip().rsplit(" ", 1)[-1])
    assert ids[0] == ids[1]
    client = _client(uri, monkeypatch)
    logged = client.get_run(ids[0])
    assert client.get_experiment(logged.info.experiment_id).name == "support.faq"
    found = client.search_runs([logged.info.experiment_id])
    assert [r.info.run_id for r in found] == ids[:1]
    assert len(client.get_metric_history(ids[0], "macro_f1")) == 1
    assert len(logged.inputs.dataset_inputs) == 1
    # A second evalframe run of the same dataset is a second MLflow run.
    other = _run().to_mlflow(tracking_uri=uri)
    assert other != ids[0]
    assert len(client.search_runs([logged.info.experiment_id])) == 2


def test_a_run_left_running_by_a_killed_export_is_completed(tmp_path: Path) -> None:
    run = _run()
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    experiment_id = client.create_experiment("support.faq")
    # What an export killed right after creating its run leaves behind.
    left = client.create_run(experiment_id, tags={"evalframe.run_id": run.run_id})
    assert client.get_run(left.info.run_id).info.status == "RUNNING"
    assert run.to_mlflow(tracking_uri=uri) == left.info.run_id
    logged = client.get_run(left.info.run_id)
    assert logged.info.status == "FINISHED"
    assert logged.data.metrics["contains/mean"] == 1.0


HOSTILE = [
    "line\u2028separator",
    "para\u2029graph",
    "<!--<script>",
    "..",
    ".hidden",
    "a/b",
    "a//b",
    "colon:tag",
    "tab\there",
    "é ü 中文",
    "🎉",
    "x" * 300,
    "None",
    "quote'and\"double",
]


def test_any_string_exports(uri: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    records = [
        {"id": f"s{i}", "input": {"q": str(i)}, "expected_output": "yes",
         "metadata": {"tags": [tag]}}
        for i, tag in enumerate(HOSTILE)
    ]  # fmt: skip
    dataset = ef.Dataset.from_records(records, name="name\u2028with/..")
    outputs = {f"s{i}": "yes" if i % 2 else "no" for i in range(len(HOSTILE))}
    labels = {text: f"value of {text}" for text in HOSTILE}
    run = ef.evaluate(dataset, outputs=outputs, metrics=["exact-match", "rouge-l(beta=2.0)"],
                      labels=labels)  # fmt: skip
    mlflow_id = run.to_mlflow(tracking_uri=uri)
    client = _client(uri, monkeypatch)
    logged = client.get_run(mlflow_id)
    assert logged.info.status == "FINISHED"
    assert client.get_experiment(logged.info.experiment_id).name == "name\u2028with/.."
    keys = json.loads(
        Path(client.download_artifacts(mlflow_id, "evalframe_keys.json", str(tmp_path))).read_text()
    )
    # Every cohort, metric and label came through under its own key, the original text kept.
    cohorts = {(v["cohort"], v["metric"]) for v in keys.values() if "cohort" in v}
    assert cohorts == {(t, m) for t in HOSTILE for m in ("exact-match", "rouge-l(beta=2.0)")}
    assert {v["label"]: v["value"] for v in keys.values() if "label" in v} == labels
    for key, original in keys.items():
        if "cohort" in original:
            odd = HOSTILE.index(original["cohort"]) % 2  # the odd samples passed
            assert logged.data.metrics[key] == float(odd)
        elif "label" in original:
            assert logged.data.tags[key] == original["value"]
    assert all(len(key) <= 250 for key in [*logged.data.metrics, *logged.data.tags])
    # The per-row table carries every text as it is, read back by MLflow's table reader.
    table = client.load_table(logged.info.experiment_id, "eval_results_table.json", [mlflow_id])
    frame = run.frame.sort("sample_id")
    got = table.sort_values("sample_id")
    assert got["sample_id"].tolist() == frame["sample_id"].to_list()
    assert got["inputs"].tolist() == [json.loads(text) for text in frame["input"]]
    assert [list(t) for t in got["tags"]] == frame["tags"].to_list()
    assert got["outputs"].tolist() == frame["actual_output"].to_list()
    # The same strings map to the same keys: exporting again changes nothing.
    assert run.to_mlflow(tracking_uri=uri) == mlflow_id


def test_key_parts_are_unique_and_stable() -> None:
    texts = [*HOSTILE, "rouge-l(beta=2.0)", "rouge-l[beta=2.0]", "rouge-l_beta_2.0_", "", " "]
    parts = [key_part(t) for t in texts]
    assert len(set(parts)) == len(texts)
    assert parts == [key_part(t) for t in texts]
    assert key_part("exact-match") == "exact-match"  # what MLflow takes as it is stays as it is
    assert key_part("rouge-l_beta_2.0_") == "rouge-l_beta_2.0_"


def _blocked_experiment(tmp_path: Path, uri: str) -> tuple[MlflowClient, str, Path]:
    """An experiment whose artifacts must go under a regular file: creating the run and
    logging its metrics work, storing its artifacts fails (even as root)."""
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the artifact folder should be")
    client = MlflowClient(tracking_uri=uri)
    experiment_id = client.create_experiment(
        "support.faq", artifact_location=(blocker / "artifacts").as_uri()
    )
    return client, experiment_id, blocker


def test_an_export_failing_midway_ends_its_run_failed_with_the_reason(tmp_path: Path) -> None:
    run = _run()
    store = tmp_path / "runs.duckdb"
    run.save(store)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client, experiment_id, blocker = _blocked_experiment(tmp_path, uri)
    result = CliRunner().invoke(
        cli, ["export", run.run_id, "--to", "mlflow", "--store", str(store), "--tracking-uri", uri]
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    message = result.output.strip()
    assert message.startswith(f"error: MLflow export of run {run.run_id} to {uri} failed: ")
    assert "\n" not in message
    (failed,) = client.search_runs([experiment_id])
    assert failed.info.status == "FAILED"
    assert failed.data.tags["evalframe.run_id"] == run.run_id
    assert failed.data.tags[ERROR_TAG] in message
    assert f"The MLflow run {failed.info.run_id} was ended as FAILED" in message
    # Once the cause is gone, exporting again completes that same run.
    blocker.unlink()
    assert run.to_mlflow(tracking_uri=uri) == failed.info.run_id
    done = client.get_run(failed.info.run_id)
    assert done.info.status == "FINISHED"
    assert ERROR_TAG not in done.data.tags
    assert "eval_results_table.json" in [a.path for a in client.list_artifacts(done.info.run_id)]


def test_mlflow_refusing_the_store_is_exit_2_and_writes_nothing(tmp_path: Path) -> None:
    run = _run()
    store = tmp_path / "runs.duckdb"
    run.save(store)
    result = CliRunner().invoke(
        cli,
        ["export", run.run_id, "--to", "mlflow", "--store", str(store),
         "--tracking-uri", "nosuchscheme://user:secret@host/x"],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert "nosuchscheme://user:***@host/x failed while opening the tracking store" in result.output
    assert "secret" not in result.output
    assert "No run was written to MLflow." in result.output


def test_without_the_viz_extra_the_report_goes_without_charts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "altair", None)  # as if the viz extra were not installed
    run = _run()
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    mlflow_id = run.to_mlflow(tracking_uri=uri)
    client = MlflowClient(tracking_uri=uri)
    assert client.get_run(mlflow_id).info.status == "FINISHED"
    html = Path(client.download_artifacts(mlflow_id, "report.html", str(tmp_path))).read_text()
    assert "ef-chart-0" not in html
    assert "support.faq" in html


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
