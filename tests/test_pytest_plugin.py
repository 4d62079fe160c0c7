"""The pytest plugin, run by real pytest (pytester), and ``ef.testing.assert_passes``."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import duckdb  # noqa: F401  (see below)
import pytest

import evalframe as ef

# pytester puts sys.modules back as it found it after each test, so a module first imported
# inside one (DuckDB, when a test reads a store back) is imported again by the next test in
# the process; DuckDB's extension aborts the process when initialised twice. Imported here,
# it is in every snapshot.
pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]

DATASET = """\
schema_version: eval-harness.dataset.v1
name: capitals
metrics: [exact-match]
samples:
  - id: fr
    input: {question: "Capital of France?"}
    expected_output: "Paris"
  - id: de
    input: {question: "Capital of Germany?"}
    expected_output: "Berlin"
  - id: it
    input: {question: "Capital of Italy?"}
    expected_output: "Rome"
"""

OUTPUTS = '{"outputs": {"fr": "Paris", "de": "Munich", "it": "Rome"}}'

# A system under test that records every call it gets, one line per call, in calls.log.
SYSTEM = """\
import os

ANSWERS = {"Capital of France?": "Paris", "Capital of Germany?": "Bonn",
           "Capital of Italy?": "Rome"}

def answer(inputs):
    with open(os.path.join(os.path.dirname(__file__), "calls.log"), "a") as log:
        log.write(inputs["question"] + "\\n")
    return ANSWERS[inputs["question"]]
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".yaml", golden=DATASET)
    pytester.makefile(".json", outputs=OUTPUTS)
    pytester.makepyfile(sut=SYSTEM)
    return pytester


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    # The installed entry point (name "evalframe") is blocked and the module named instead, so
    # the plugin loads once whether or not this checkout is installed.
    return pytester.runpytest_subprocess(
        "-p", "no:evalframe", "-p", "evalframe_pytest", "-p", "no:cacheprovider", *args
    )  # fmt: skip


def test_items_are_sample_metric_pairs_with_readable_failures(project: pytest.Pytester) -> None:
    result = run(
        project,
        "golden.yaml",
        "--evalframe-outputs",
        "outputs.json",
        "--evalframe-metric",
        "exact-match",
        "--evalframe-metric",
        "contains",
        "-v",
    )
    out = result.stdout.str()
    for sample in ("fr", "de", "it"):
        for metric in ("exact-match", "contains"):
            verdict = "FAILED" if sample == "de" else "PASSED"
            assert f"golden.yaml::{sample}::{metric} {verdict}" in out
    result.assert_outcomes(passed=4, failed=2)
    # The failure names the input, the expected and actual output, score and threshold.
    assert "sample 'de' scored below the threshold of exact-match" in out
    assert '  input:     {"question":"Capital of Germany?"}' in out
    assert "  expected:  Berlin" in out
    assert "  actual:    Munich" in out
    assert "  score:     0.0000" in out
    assert "  threshold: 0.5000" in out
    assert "  details:" in out
    # Two of three rows pass on each metric: pass-rate 2/3 each, macro-F1 2/3.
    assert "contains     pass-rate 0.6667  (2 of 3 executions passed)" in out
    assert "exact-match  pass-rate 0.6667  (2 of 3 executions passed)" in out
    assert "macro-F1 0.6667 over 2 quality metric(s)" in out
    assert "INCOMPLETE" not in out


def test_the_dataset_metrics_list_is_the_default(project: pytest.Pytester) -> None:
    result = run(project, "golden.yaml", "--evalframe-outputs", "outputs.json")
    result.assert_outcomes(passed=2, failed=1)
    assert "FAILED golden.yaml::de::exact-match" in result.stdout.str()


def test_an_error_fails_its_item_with_the_error(project: pytest.Pytester) -> None:
    project.makepyfile(
        flaky="def answer(inputs):\n"
        "    if 'Italy' in inputs['question']:\n"
        "        raise RuntimeError('the model timed out')\n"
        "    return {'Capital of France?': 'Paris', 'Capital of Germany?': 'Berlin'}"
        "[inputs['question']]\n"
    )
    result = run(project, "golden.yaml", "--evalframe-system", "flaky:answer")
    out = result.stdout.str()
    result.assert_outcomes(passed=2, failed=1)
    assert "sample 'it' was not scored by exact-match" in out
    assert "the model timed out" in out


def test_a_run_that_cannot_be_scored_fails_every_item_readably(
    project: pytest.Pytester,
) -> None:
    project.makefile(".json", partial='{"outputs": {"fr": "Paris", "de": "Berlin"}}')
    result = run(project, "golden.yaml", "--evalframe-outputs", "partial.json")
    result.assert_outcomes(failed=3)
    assert "golden.yaml could not be scored: Saved outputs" in result.stdout.str()
    assert "Traceback" not in result.stdout.str()


def test_inert_without_its_options(project: pytest.Pytester) -> None:
    project.makepyfile(test_plain="def test_one():\n    assert True\n")
    assert run(project, "test_plain.py").ret == pytest.ExitCode.OK
    # A dataset named without the options is left to pytest, exactly as without the plugin.
    result = run(project, "golden.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "not found:" in result.stderr.str()
    assert "evalframe" not in result.stdout.str()


def test_only_files_named_on_the_command_line_are_collected(project: pytest.Pytester) -> None:
    project.makepyfile(test_plain="def test_one():\n    assert True\n")
    result = run(project, ".", "--evalframe-outputs", "outputs.json")
    result.assert_outcomes(passed=1)  # golden.yaml sits in "." but was not named


def test_options_without_outputs_or_system_are_a_usage_error(project: pytest.Pytester) -> None:
    result = run(project, "golden.yaml", "--evalframe-metric", "contains")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--evalframe-metric need --evalframe-outputs" in result.stderr.str()


def test_system_is_called_once_per_row_under_xdist(project: pytest.Pytester) -> None:
    store = project.path / "runs.duckdb"
    result = run(
        project,
        "golden.yaml",
        "--evalframe-system",
        "sut:answer",
        "--evalframe-metric",
        "exact-match",
        "--evalframe-metric",
        "contains",
        "--evalframe-metric",
        "rouge-l",
        "--evalframe-store",
        str(store),
        "-n",
        "2",
    )
    result.assert_outcomes(passed=6, failed=3)
    calls = (project.path / "calls.log").read_text().splitlines()
    assert sorted(calls) == ["Capital of France?", "Capital of Germany?", "Capital of Italy?"]
    assert "macro-F1 0.6667 over 3 quality metric(s)" in result.stdout.str()
    with ef.Store(store) as saved:
        runs = saved.runs()
    assert runs.height == 1  # saved once, by the worker that scored


def test_system_without_xdist(project: pytest.Pytester) -> None:
    result = run(project, "golden.yaml", "--evalframe-system", "sut:answer")
    result.assert_outcomes(passed=2, failed=1)
    assert len((project.path / "calls.log").read_text().splitlines()) == 3


def test_the_entry_point_module_is_light() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert config["project"]["entry-points"]["pytest11"] == {"evalframe": "evalframe_pytest"}
    probe = (
        "import sys, evalframe_pytest\n"
        "heavy = {'polars', 'numpy', 'duckdb', 'pyarrow', 'evalframe'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=False,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr


def _run(outputs: dict[str, str]) -> ef.Run:
    """Four capitals scored with exact-match and contains; a sample without an output
    fails in the system under test, so every metric records an error for it."""
    dataset = ef.Dataset.from_records(
        [
            {"id": "fr", "input": {"q": "France"}, "expected_output": "Paris"},
            {"id": "de", "input": {"q": "Germany"}, "expected_output": "Berlin"},
            {"id": "it", "input": {"q": "Italy"}, "expected_output": "Rome"},
            {"id": "es", "input": {"q": "Spain"}, "expected_output": "Madrid"},
        ],
        name="capitals",
    )

    def system(inputs: dict[str, str]) -> str:
        return outputs[{"France": "fr", "Germany": "de", "Italy": "it", "Spain": "es"}[inputs["q"]]]

    return ef.evaluate(dataset, system=system, metrics=["exact-match", "contains"], progress=False)


def test_assert_passes_accepts_a_run_that_clears_its_bars() -> None:
    run_ = _run({"fr": "Paris", "de": "Berlin", "it": "Rome", "es": "in Madrid"})
    # exact-match 3/4, contains 4/4: macro-F1 7/8.
    ef.testing.assert_passes(
        run_, min_macro_f1=0.875, metrics={"exact-match": 0.75}, no_failures=True
    )
    ef.testing.assert_passes(run_.report(), min_macro_f1=0.875, metrics={"contains": 1.0})


def test_assert_passes_lists_the_missed_bars_and_failing_rows() -> None:
    run_ = _run({"fr": "Paris", "de": "Bonn", "it": "Rome", "es": "in Madrid"})
    with pytest.raises(AssertionError) as caught:
        ef.testing.assert_passes(run_, min_macro_f1=0.9, metrics={"contains": 0.8})
    message = str(caught.value)
    assert "macro-F1 0.6250 is below 0.9000" in message  # (2/4 + 3/4) / 2
    assert "contains pass-rate 0.7500 is below 0.8000" in message
    assert "failing rows (3):" in message
    assert "  de  exact-match  score 0.0000  threshold 0.5000" in message
    assert "  es  exact-match  score 0.0000  threshold 0.5000" in message
    assert "  de  contains  score 0.0000  threshold 0.5000" in message
    with pytest.raises(AssertionError, match=r"contains pass-rate 0\.7500") as from_report:
        ef.testing.assert_passes(run_.report(), metrics={"contains": 0.8})
    assert "  de  exact-match  score 0.0000  threshold 0.5000" in str(from_report.value)


def test_assert_passes_no_failures_counts_unscored_rows() -> None:
    run_ = _run({"fr": "Paris", "de": "Berlin", "it": "Rome"})  # es has no output
    # es errored on both metrics: it did not pass, so each pass-rate is 3 of 4
    ef.testing.assert_passes(run_, min_macro_f1=0.75)
    with pytest.raises(AssertionError, match=r"macro-F1 0\.7500 is below 1\.0000"):
        ef.testing.assert_passes(run_, min_macro_f1=1.0)
    with pytest.raises(AssertionError, match=r"macro-F1 0\.7500 is below 1\.0000"):
        ef.testing.assert_passes(run_.report(), min_macro_f1=1.0)
    with pytest.raises(AssertionError, match=r"2 \(execution, metric\) pair\(s\) could not"):
        ef.testing.assert_passes(run_, no_failures=True)


def test_assert_passes_rejects_a_metric_the_run_did_not_score() -> None:
    run_ = _run({"fr": "Paris", "de": "Berlin", "it": "Rome", "es": "Madrid"})
    with pytest.raises(ValueError, match="'rouge-l', which this run did not score"):
        ef.testing.assert_passes(run_, metrics={"rouge-l": 0.5})
