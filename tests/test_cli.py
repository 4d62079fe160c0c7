"""The evalframe command line: outputs, formats and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import evalframe as ef
from evalframe.cli import cli

EXAMPLE = Path(ef.__file__).parent / "examples"
DATASET = str(EXAMPLE / "support.yaml")
OUTPUTS = str(EXAMPLE / "support.outputs.json")


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_run_prints_markdown_and_exits_zero_on_a_clean_run() -> None:
    code, out, _ = invoke("run", DATASET, "--outputs", OUTPUTS)
    assert code == 0
    assert out.startswith("# Eval report — support.faq\n")


def test_run_json_format_and_out_file(tmp_path: Path) -> None:
    code, out, _ = invoke(
        "run",
        DATASET,
        "--outputs",
        OUTPUTS,
        "--format",
        "json",
        "-m",
        "exact-match",
        "-m",
        "rouge-l(beta=2.0)",
    )
    assert code == 0
    report = json.loads(out)
    assert list(report["metrics"]) == ["exact-match", "rouge-l(beta=2.0)"]
    target = tmp_path / "r.md"
    code, out, _ = invoke("run", DATASET, "--outputs", OUTPUTS, "--out", str(target))
    assert code == 0
    assert out == ""
    assert target.read_text().startswith("# Eval report")


def test_run_exits_one_when_a_sample_fails_a_metric(tmp_path: Path) -> None:
    ds = tmp_path / "d.yaml"
    ds.write_text(
        "name: d\nsamples:\n  - id: a\n    input: {}\n    expected_output: [x]\n"
        "  - id: b\n    input: {}\n    expected_output: y\n"
    )
    out = tmp_path / "o.json"
    out.write_text('{"outputs": {"a": "x", "b": "y"}}')
    code, stdout, err = invoke("run", str(ds), "--outputs", str(out), "-m", "exact-match")
    assert code == 1
    assert err.splitlines()[-1] == (
        "INCOMPLETE: 1 of 2 executions errored; 1 (execution, metric) pair(s) could not be "
        "scored (the report's execution errors)."
    )
    assert "must be a string for exact-match metric; got list" in stdout


def test_input_and_usage_errors_exit_two_without_a_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n")
    cases = [
        ("run", str(bad), "--outputs", OUTPUTS),
        ("run", str(tmp_path / "missing.yaml"), "--outputs", OUTPUTS),
        ("run", DATASET, "--outputs", OUTPUTS, "-m", "rouge_l"),
        ("run", DATASET, "--outputs", OUTPUTS, "-m", "rouge-l(beta=x)"),
        ("run", DATASET),
        ("run", DATASET, "--outputs", OUTPUTS, "--format", "xml"),
    ]
    for args in cases:
        code, _, err = invoke(*args)
        assert code == 2, (args, err)
        assert "Traceback" not in err
        assert err.strip()
    _, _, err = invoke("run", DATASET, "--outputs", OUTPUTS, "-m", "rouge_l")
    assert "Did you mean 'rouge-l'" in err


def test_metrics_lists_the_registry() -> None:
    code, out, _ = invoke("metrics", "--format", "json")
    assert code == 0
    names = {m["name"] for m in json.loads(out)}
    assert {"exact-match", "contains", "regex", "rouge-l"} <= names
    code, out, _ = invoke("metrics")
    assert code == 0
    assert "rouge-l" in out


def test_console_script_runs_as_a_real_process() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "evalframe",
            "run",
            DATASET,
            "--outputs",
            OUTPUTS,
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["total_failures"] == 0


def test_run_calls_a_system_under_test_given_as_module_and_function(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "support_bot.py").write_text(
        "def answer(inp):\n"
        "    if 'delete' in inp['question']:\n"
        "        raise RuntimeError('no such feature')\n"
        "    return 'I am not sure: ' + inp['question']\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    code, out, _ = invoke("run", DATASET, "--system", "support_bot:answer", "--format", "json")
    assert code == 1  # one sample's system call failed
    report = json.loads(out)
    assert report["total_samples"] == 12
    failed = {f["sample_id"] for f in report["failures"]}
    assert failed == {"account-delete"}
    assert "System under test raised RuntimeError" in report["failures"][0]["error"]


def test_run_rejects_a_bad_system_reference_and_both_sources() -> None:
    for args in (
        ("run", DATASET, "--system", "no_colon"),
        ("run", DATASET, "--system", "no_such_module_xyz:f"),
        ("run", DATASET, "--system", "json:no_such_attr"),
        ("run", DATASET, "--outputs", OUTPUTS, "--system", "json:dumps"),
    ):
        code, _, err = invoke(*args)
        assert code == 2, (args, err)
        assert "Traceback" not in err


def _readme_exit_codes() -> str:
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    start = readme.index("Exit codes:")
    end = readme.index("no traceback).", start) + len("no traceback).")
    return " ".join(readme[start:end].split())


@pytest.mark.parametrize(
    "command", [["run"], ["report"], ["compare"], ["gate"], ["rescore"]], ids=" ".join
)
def test_help_states_the_exit_codes_as_the_readme_does(command: list[str]) -> None:
    code, out, _ = invoke(*command, "--help")
    assert code == 0
    text = " ".join(out.split())
    assert _readme_exit_codes() in text
    assert text.count("Exit codes:") == 1
