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
