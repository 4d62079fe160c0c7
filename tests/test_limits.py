"""Unbounded work is refused up front: repetitions, metric parameters, per-field caps."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import evalframe as ef
from evalframe.engine._evaluate import MAX_REPETITIONS

ROOT = Path(__file__).resolve().parents[1]


def _files(tmp_path: Path, repetitions: int | None = None) -> tuple[Path, Path]:
    header = f"repetitions: {repetitions}\n" if repetitions is not None else ""
    dataset = tmp_path / "d.yaml"
    dataset.write_text(
        f"name: d\n{header}samples:\n  - id: a\n    input: {{}}\n    expected_output: x\n"
    )
    outputs = tmp_path / "o.json"
    outputs.write_text(json.dumps({"outputs": {"a": "x"}}))
    return dataset, outputs


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "evalframe", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


def test_the_repetition_limit_is_one_thousand() -> None:
    assert MAX_REPETITIONS == 1000


def test_evaluate_accepts_the_limit_and_refuses_one_more(tmp_path: Path) -> None:
    dataset, outputs = _files(tmp_path)
    run = ef.evaluate(dataset, outputs=outputs, metrics=["exact-match"], repetitions=1000)
    assert run.scores.height == 1000
    with pytest.raises(ValueError, match=r"repetitions must be a whole number from 1 to 1,000"):
        ef.evaluate(dataset, outputs=outputs, metrics=["exact-match"], repetitions=1001)
    with pytest.raises(ValueError, match=r"from 1 to 1,000; got 0"):
        ef.evaluate(dataset, outputs=outputs, metrics=["exact-match"], repetitions=0)


def test_a_dataset_asking_for_too_many_repetitions_is_refused(tmp_path: Path) -> None:
    dataset, outputs = _files(tmp_path, repetitions=5000)
    with pytest.raises(ValueError, match=r"Dataset 'd' repetitions must be .* 1,000; got 5000"):
        ef.evaluate(dataset, outputs=outputs, metrics=["exact-match"])


def test_cli_repetitions_beyond_the_limit_exit_two_naming_it(tmp_path: Path) -> None:
    dataset, outputs = _files(tmp_path)
    done = _cli("run", str(dataset), "--outputs", str(outputs), "--repetitions", "1001")
    assert done.returncode == 2
    assert "1<=x<=1000" in done.stderr
    assert "Traceback" not in done.stderr
    done = _cli(
        "run", str(dataset), "--outputs", str(outputs), "--repetitions", "3", "-m", "contains"
    )
    assert done.returncode == 0, done.stderr


def test_cli_dataset_repetitions_beyond_the_limit_exit_two(tmp_path: Path) -> None:
    dataset, outputs = _files(tmp_path, repetitions=5000)
    done = _cli("run", str(dataset), "--outputs", str(outputs), "-m", "exact-match")
    assert done.returncode == 2
    assert "from 1 to 1,000" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("spec", "named"),
    [
        ("rouge-l(max_tokens=0)", "'max_tokens'"),
        ("rouge-l(beta=nan)", "'beta'"),
        ("retrieval-hit-at-k(k=9223372036854775808)", "'k'"),
        ("levenshtein(max_chars=0)", "'max_chars'"),
        ("retrieval-mrr(k=0)", "'k'"),
    ],
)
def test_cli_out_of_range_metric_parameters_exit_two_naming_them(
    tmp_path: Path, spec: str, named: str
) -> None:
    dataset, outputs = _files(tmp_path)
    done = _cli("run", str(dataset), "--outputs", str(outputs), "-m", spec)
    assert done.returncode == 2
    assert f"parameter {named}" in done.stderr
    assert "Traceback" not in done.stderr
    assert "col(" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
