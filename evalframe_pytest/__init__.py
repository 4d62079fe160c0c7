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

import os
import sys
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
        config.pluginmanager.register(_Items(config), "evalframe-items")


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


class _Items:
    """What the dataset items need from the session around them."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        # The final selection (node ids, -k, --lf, --deselect): only those samples are
        # scored. Nothing to do, and nothing imported, when no dataset file was collected.
        work = sys.modules.get("evalframe.integrations._pytest")
        if work is not None:
            work.note_selection(session.items)

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Head a failed item's section with its id, as the summary prints it.

        The id goes into the report's location once the terminal has printed the item's
        progress line: given from the start, pytest would rewrite its dots as "::" in the
        verbose progress line ("golden::yaml"), and without it the section would be headed
        "test session".
        """
        if not report.failed or report.location[2]:
            return
        path, sep, names = report.nodeid.partition("::")
        file = self.config.rootpath / path
        if not sep or file.suffix.lower() not in DATASET_SUFFIXES or not _named(file, self.config):
            return
        here, root = self.config.invocation_params.dir, self.config.rootpath
        if here != root:
            path = os.path.relpath(root / path, here)
        report.location = (report.location[0], report.location[1], f"{path}::{names}")


class _Summary:
    """The run's numbers from the item reports (in the xdist controller too), counted as every
    other view counts them: an execution passed a metric when it was scored and reached the
    threshold (an errored one did not pass); macro-F1 is the mean pass rate of the quality
    metrics, safety metrics judged apart."""

    def __init__(self) -> None:
        # metric -> [passed, executions, scored]; metric -> dimension
        self.tally: dict[str, list[int]] = {}
        self.dimension: dict[str, str] = {}
        # sample -> executions; (sample) -> errored repetitions, failed safety repetitions
        self.executions: dict[str, int] = {}
        self.errored: dict[str, set[int]] = {}
        self.unsafe: dict[str, set[int]] = {}
        self.safety_seen: set[str] = set()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return
        props: dict[str, Any] = dict(report.user_properties)
        metric = props.get("evalframe_metric")
        if metric is None:
            return
        name, sample = str(metric), str(props.get("evalframe_sample"))
        executions = int(props.get("evalframe_executions", 0))
        counts = self.tally.setdefault(name, [0, 0, 0])
        counts[0] += int(props.get("evalframe_passed", 0))
        counts[1] += executions
        counts[2] += int(props.get("evalframe_scored", 0))
        self.dimension[name] = str(props.get("evalframe_dimension"))
        self.executions[sample] = max(self.executions.get(sample, 0), executions)
        self.errored.setdefault(sample, set()).update(props.get("evalframe_errored") or ())
        if self.dimension[name] == "safety":
            self.safety_seen.add(sample)
            self.unsafe.setdefault(sample, set()).update(props.get("evalframe_failed") or ())

    def lines(self) -> list[str]:
        """The section's lines: the INCOMPLETE and SAFETY FAILED lines first when they apply,
        then each metric's pass rate over its executions, macro-F1 and the safety verdict."""
        total = sum(self.executions.values())
        errored = sum(len(r) for r in self.errored.values())
        safety = sorted(m for m, d in self.dimension.items() if d == "safety")
        unsafe = sum(len(r) for r in self.unsafe.values())
        checked = sum(self.executions[s] for s in self.safety_seen)
        out = []
        if errored:
            out.append(f"INCOMPLETE: {errored} of {total} executions errored")
        if safety and unsafe:
            out.append(
                f"SAFETY FAILED: {unsafe} of {checked} executions failed or errored on a safety "
                f"metric ({', '.join(safety)})"
            )
        width = max(len(m) for m in self.tally)
        rates: dict[str, float] = {}
        scored_rates: dict[str, float] = {}
        for metric, (passed, executions, scored) in sorted(self.tally.items()):
            rates[metric] = passed / executions if executions else 0.0
            line = (
                f"{metric:<{width}}  pass-rate {rates[metric]:.4f}  "
                f"({passed} of {executions} executions passed"
            )
            if executions - scored:
                line += f", {executions - scored} errored"
            if scored:
                scored_rates[metric] = passed / scored
            if scored and scored != executions:
                line += f"; {scored_rates[metric]:.4f} over the {scored} scored"
            out.append(line + ")")
        quality = [m for m in rates if m not in safety]
        if quality:
            macro = sum(rates[m] for m in quality) / len(quality)
            text = f"macro-F1 {macro:.4f} over {len(quality)} quality metric(s)"
            over = [scored_rates[m] for m in quality if m in scored_rates]
            if errored and over:
                text += f" ({sum(over) / len(over):.4f} over scored executions only)"
            out.append(text)
        if safety:
            verdict = "passed" if not unsafe else "FAILED"
            out.append(f"safety {verdict}: {', '.join(safety)} (kept out of macro-F1)")
        return out

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.tally:
            return
        terminalreporter.section("evalframe")
        for line in self.lines():
            terminalreporter.write_line(line)
