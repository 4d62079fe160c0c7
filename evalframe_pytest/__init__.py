"""evalframe's pytest plugin: the hooks pytest loads at startup, and nothing heavier.

Registered through the ``pytest11`` entry point, so every pytest run in an environment with
evalframe installed imports this module. It is kept outside the ``evalframe`` package on
purpose: importing anything under ``evalframe`` loads Polars, and a plugin must not slow down
or change other projects' test runs. The hooks only add options; a dataset file becomes test
items only when ``--evalframe-outputs`` or ``--evalframe-system`` is given and the file is
named on the command line. The work lives in ``evalframe.integrations._pytest``, imported
on first use.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

__all__ = [
    "pytest_addoption",
    "pytest_collect_file",
    "pytest_configure",
]

DATASET_SUFFIXES = (".yaml", ".yml", ".json", ".jsonl", ".csv", ".parquet")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("evalframe", "evalframe: a dataset file as test items")
    group.addoption(
        "--evalframe-outputs",
        metavar="OUT",
        default=None,
        help="Score the dataset file(s) named on the command line against these saved outputs.",
    )
    group.addoption(
        "--evalframe-system",
        metavar="MODULE:FUNCTION",
        default=None,
        help="Call this system under test (a function taking a sample's input map and "
        "returning a string) instead of reading saved outputs.",
    )
    group.addoption(
        "--evalframe-store",
        metavar="DB",
        default=None,
        help="Save the run to this DuckDB run store.",
    )
    group.addoption(
        "--evalframe-metric",
        metavar="SPEC",
        action="append",
        default=[],
        help="A metric spec (repeatable); overrides the dataset's metrics: list.",
    )


def _active(config: pytest.Config) -> bool:
    return bool(
        config.getoption("evalframe_outputs", None) or config.getoption("evalframe_system", None)
    )


def pytest_configure(config: pytest.Config) -> None:
    outputs = config.getoption("evalframe_outputs", None)
    system = config.getoption("evalframe_system", None)
    if outputs and system:
        raise pytest.UsageError(
            "Pass either --evalframe-outputs OUT or --evalframe-system MODULE:FUNCTION, not both."
        )
    if not (outputs or system) and (
        config.getoption("evalframe_store", None) or config.getoption("evalframe_metric", None)
    ):
        raise pytest.UsageError(
            "--evalframe-store and --evalframe-metric need --evalframe-outputs OUT or "
            "--evalframe-system MODULE:FUNCTION."
        )
    if outputs or system:
        config.pluginmanager.register(_Summary(), "evalframe-summary")


def _named(file_path: Path, config: pytest.Config) -> bool:
    """Whether ``file_path`` is one of the files named on the command line."""
    here = config.invocation_params.dir
    target = file_path.resolve()
    # config.args: the positional arguments, options and their values removed.
    return any((here / text.split("::", 1)[0]).resolve() == target for text in config.args)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    config = parent.config
    if file_path.suffix.lower() not in DATASET_SUFFIXES or not _active(config):
        return None
    if not _named(file_path, config):
        return None
    from evalframe.integrations._pytest import DatasetFile

    return DatasetFile.from_parent(parent, path=file_path)


class _Summary:
    """Per-metric pass counts from the item reports (in the xdist controller too)."""

    def __init__(self) -> None:
        self.tally: dict[str, list[int]] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return
        props: dict[str, Any] = dict(report.user_properties)
        metric = props.get("evalframe_metric")
        if metric is None:
            return
        counts = self.tally.setdefault(str(metric), [0, 0])
        counts[0] += int(props.get("evalframe_passed", 0))
        counts[1] += int(props.get("evalframe_scored", 0))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.tally:
            return
        terminalreporter.section("evalframe")
        rates = {m: (p / n if n else 0.0) for m, (p, n) in sorted(self.tally.items())}
        width = max(len(m) for m in rates)
        for metric, rate in rates.items():
            passed, scored = self.tally[metric]
            terminalreporter.write_line(
                f"{metric:<{width}}  pass-rate {rate:.4f}  ({passed}/{scored} scored executions)"
            )
        macro = sum(rates.values()) / len(rates)
        terminalreporter.write_line(f"macro-F1 {macro:.4f} over {len(rates)} metric(s)")
