"""Strict mode: the first captured error aborts the run, with exit 1, and nothing is saved."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

import evalframe as ef
from evalframe.cli import cli
from evalframe.core._errors import StrictModeError


def dataset() -> ef.Dataset:
    return ef.Dataset.from_records(
        [{"id": f"s{i}", "input": {"n": i}, "expected_output": "ok"} for i in range(4)],
        name="strict",
    )


def flaky(inp: dict[str, int]) -> str:
    if inp["n"] == 2:
        raise RuntimeError("backend down")
    return "ok"


def test_a_system_error_aborts(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    with pytest.raises(StrictModeError, match="backend down") as err:
        ef.evaluate(dataset(), system=flaky, metrics=["exact-match"], strict=True, store=db)
    assert (err.value.sample_id, err.value.metric, err.value.repetition) == ("s2", None, 0)
    assert not db.exists() or ef.Store(db).runs().height == 0
    relaxed = ef.evaluate(dataset(), system=flaky, metrics=["exact-match"])
    assert relaxed.failures.height == 1  # without strict: captured, the run goes on


def test_a_metric_error_aborts() -> None:
    outputs = {f"s{i}": "ok" for i in range(4)}
    with pytest.raises(
        StrictModeError, match=r"sample 's0' \(repetition 0\) metric 'numeric-diff'"
    ):
        ef.evaluate(
            dataset(), outputs=outputs, metrics=["exact-match", "numeric-diff"], strict=True
        )


def test_the_cli_exits_1(tmp_path: Path) -> None:
    ds = tmp_path / "d.yaml"
    ds.write_text(yaml.safe_dump({
        "schema_version": "eval-harness.dataset.v1", "name": "strict", "metrics": ["exact-match"],
        "samples": [{"id": f"s{i}", "input": {"n": i}, "expected_output": "ok"} for i in range(4)],
    }), encoding="utf-8")  # fmt: skip
    (tmp_path / "flakysys.py").write_text(
        "def answer(inp):\n    if inp['n'] == 2:\n        raise RuntimeError('backend down')\n"
        "    return 'ok'\n",
        encoding="utf-8",
    )
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        result = CliRunner().invoke(
            cli, ["run", str(ds), "--system", "flakysys:answer", "--strict"]
        )
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("flakysys", None)
    assert result.exit_code == 1
    assert "strict mode: System under test raised RuntimeError for sample 's2'" in result.output
    assert "# " not in result.output  # no report: the run was aborted


def test_evalframe_strict_sets_strict_mode_as_eval_harness_variable_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for value in ("1", "true", "YES", "on"):
        monkeypatch.setenv("EVALFRAME_STRICT", value)
        with pytest.raises(StrictModeError, match="backend down"):
            ef.evaluate(dataset(), system=flaky, metrics=["exact-match"])
    for value in ("0", "false", "off", ""):
        monkeypatch.setenv("EVALFRAME_STRICT", value)
        assert ef.evaluate(dataset(), system=flaky, metrics=["exact-match"]).failures.height == 1
    monkeypatch.setenv("EVALFRAME_STRICT", "1")
    # strict=False given explicitly wins over the variable
    assert ef.evaluate(
        dataset(), system=flaky, metrics=["exact-match"], strict=False
    ).failures.height
    monkeypatch.setenv("EVALFRAME_STRICT", "maybe")
    with pytest.raises(ValueError, match=r"\$EVALFRAME_STRICT must be 1 or 0 .* got 'maybe'"):
        ef.evaluate(dataset(), system=flaky, metrics=["exact-match"])
    # on the command line: exit 1 without --strict, as with it
    ds = tmp_path / "d.yaml"
    ds.write_text(yaml.safe_dump({
        "schema_version": "eval-harness.dataset.v1", "name": "strict", "metrics": ["exact-match"],
        "samples": [{"id": f"s{i}", "input": {"n": i}, "expected_output": "ok"} for i in range(4)],
    }), encoding="utf-8")  # fmt: skip
    (tmp_path / "envsys.py").write_text(
        "def answer(inp):\n    if inp['n'] == 2:\n        raise RuntimeError('backend down')\n"
        "    return 'ok'\n",
        encoding="utf-8",
    )
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        result = CliRunner().invoke(
            cli, ["run", str(ds), "--system", "envsys:answer"], env={"EVALFRAME_STRICT": "1"}
        )
        adversarial = CliRunner().invoke(
            cli,
            ["adversarial", "run", "--system", "envsys:answer", "-m", "exact-match"],
            env={"EVALFRAME_STRICT": "1"},
        )
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("envsys", None)
    assert result.exit_code == 1
    assert "strict mode: System under test raised RuntimeError for sample 's2'" in result.output
    assert adversarial.exit_code == 1, adversarial.output
    assert "error: strict mode:" in adversarial.output
