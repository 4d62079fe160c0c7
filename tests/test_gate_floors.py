"""Gate floors: --min-pass-rate per metric and drift checks on p50, p95 and pass-rate."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import evalframe as ef
from evalframe.cli import cli
from evalframe.core._compare import compare
from evalframe.core._gate import gate

EXPECTED = "the quick brown fox jumps over the lazy dog"


def runs() -> tuple[ef.Run, ef.Run]:
    ds = ef.Dataset.from_records(
        [{"id": f"s{i}", "input": {"q": i}, "expected_output": EXPECTED} for i in range(10)],
        name="drift",
    )
    words = EXPECTED.split()
    before = {f"s{i}": " ".join(words[: 9 - i % 3]) for i in range(10)}
    after = {f"s{i}": " ".join(words[: 8 - (i % 3) * 2 - (i > 6) * 3]) for i in range(10)}
    return (
        ef.evaluate(ds, outputs=before, metrics=["rouge-l"]),
        ef.evaluate(ds, outputs=after, metrics=["rouge-l"]),
    )


def stat(run: ef.Run, name: str) -> float:
    """The statistic computed here with NumPy (linear interpolation), not by evalframe."""
    scores = run.scores.get_column("score").to_numpy()
    if name == "pass_rate":
        return float((scores >= 0.5).mean())
    return float(np.percentile(scores, {"p50": 50, "p95": 95}[name]))


@pytest.mark.parametrize("name", ["p50", "p95", "pass_rate"])
def test_drift_checks_on_each_statistic(name: str) -> None:
    a, b = runs()
    drop = stat(a, name) - stat(b, name)
    assert drop > 0.01
    key = f"rouge-l:{name}"
    failing = gate(compare(a, b), max_regressions=100, max_drop={key: drop - 0.005})
    assert not failing.passed
    label = name.replace("_", "-")
    assert f"metric 'rouge-l' {label} dropped by {drop:.4f}" in failing.failures[0]
    assert gate(compare(a, b), max_regressions=100, max_drop={key: drop + 0.005}).passed


def test_min_pass_rate_floor() -> None:
    a, b = runs()
    rate = stat(b, "pass_rate")
    low = gate(compare(a, b), max_regressions=100, min_pass_rate={"rouge-l": rate + 0.01})
    assert low.failures == [
        f"metric 'rouge-l' pass rate {rate:.4f} is below the minimum {rate + 0.01:.4f}"
    ]
    assert gate(compare(a, b), max_regressions=100, min_pass_rate={"rouge-l": rate}).passed
    with pytest.raises(ef.ComparisonError, match="--min-pass-rate names metric 'bleu'"):
        gate(compare(a, b), min_pass_rate={"bleu": 0.5})


def test_floors_through_the_cli(tmp_path: Path) -> None:
    a, b = runs()
    db = tmp_path / "s.duckdb"
    with ef.Store(db) as store:
        store.save(a)
        store.save(b)
    runner = CliRunner()
    args = ["gate", b.run_id, "--baseline", a.run_id, "--store", str(db),
            "--max-regressions", "100", "--format", "json"]  # fmt: skip
    result = runner.invoke(cli, [*args, "--min-pass-rate", "rouge-l=0.99", "--max-drop",
                                 "rouge-l:p95=0.5"])  # fmt: skip
    assert result.exit_code == 1
    failures = json.loads(result.output)["failures"]
    assert len(failures) == 1
    assert "pass rate" in failures[0]
    bad = runner.invoke(cli, [*args, "--min-pass-rate", "rouge-l"])
    assert bad.exit_code == 2
    assert "is not METRIC=X" in bad.output
