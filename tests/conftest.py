"""Shared fixtures."""

from __future__ import annotations

import textwrap
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, settings

# --- property tests: the same on a loaded machine as on a quiet one ------------------------------

# Generation speed says nothing about correctness; under load (CI's two cores, a parallel run)
# Hypothesis's too_slow check and its per-example deadline fail tests that checked everything.
# A test's own @settings still overrides these; a failure prints the blob that reproduces it.
settings.register_profile(
    "evalframe", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.load_profile("evalframe")

# --- snapshots: written only on request (tests/snapshot.py) ---------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-snapshots",
        action="store_true",
        help="write tests/snapshots/* from the current output instead of comparing with them",
    )


def pytest_configure(config: pytest.Config) -> None:
    import snapshot

    snapshot.update_requested = bool(config.getoption("--update-snapshots"))


# --- no test may pass, or skip, having checked nothing --------------------------------------------


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A skipped test fails: a missing tool or file must be fixed, not silently tolerated."""
    report: pytest.TestReport = yield
    if report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"skipped tests are not allowed in this suite: {reason}"
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """A module that skips itself at import (``importorskip``) fails collection the same way."""
    report: pytest.CollectReport = yield
    if report.skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"skipped tests are not allowed in this suite: {reason}"
    return report


# --- providers: an OpenAI-compatible stub server on loopback (tests/openai_stub.py) ----------

STUB_API_KEY = "sk-test-Z9x8Y7w6V5u4T3s2"


@pytest.fixture
def openai_stub() -> Iterator[object]:
    """A started ``StubOpenAI`` on 127.0.0.1 that requires ``STUB_API_KEY``."""
    from openai_stub import StubOpenAI

    with StubOpenAI(api_key=STUB_API_KEY) as stub:
        yield stub


# --- a headless Chromium that blocks and records every non-local request (tests/browser.py) ---


# Per module, not per session: Playwright's sync API keeps an asyncio loop running in this
# thread while it is started, which would break later tests that run their own loop.
@pytest.fixture(scope="module")
def _chromium() -> Iterator[Any]:
    from browser import launch

    with launch() as browser:
        yield browser


@pytest.fixture
def offline_browser(_chromium: Any) -> Iterator[Any]:
    """An ``OfflineBrowser``: ``open(path)`` loads a local file and records its requests."""
    from browser import OfflineBrowser

    harness = OfflineBrowser(_chromium)
    yield harness
    harness.close()


# --- the metric registry is process-global: give every test a clean copy ----------------------


@pytest.fixture(autouse=True)
def _isolated_metric_registry() -> Iterator[None]:
    """Metrics a test registers (``@metric``, ``rowwise``, ``register``) vanish after it."""
    from evalframe.metrics import _registry

    # The built-ins load on first use: load them before the snapshot, so a test that triggers
    # the loading does not leave the next test an empty registry.
    _registry.load_builtins()
    saved = dict(_registry._REGISTRY)
    loaded = _registry._plugins_loaded
    yield
    _registry._REGISTRY.clear()
    _registry._REGISTRY.update(saved)
    _registry._plugins_loaded = loaded


# --- input files: written under a test's tmp_path ----------------------------------------------

DATA = Path(__file__).parent / "data"


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    """Write ``content`` to ``tmp_path / name``: bytes as they are, text dedented, as UTF-8."""
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(textwrap.dedent(content), encoding="utf-8")
    return path


# --- scoring frames ------------------------------------------------------------------------------


def frame(
    expected: list[str],
    actual: list[str | None],
    types: list[str] | None = None,
    **extra: Any,
) -> pl.DataFrame:
    """A scoring frame of (expected, actual) rows with input ``{"question":"q"}``.

    Expected values are strings unless ``types`` says otherwise; ``extra`` adds columns.
    """
    n = len(expected)
    base = pl.DataFrame(
        {
            "sample_id": [f"s{i}" for i in range(n)],
            "input": ['{"question":"q"}'] * n,
            "expected_output": expected,
            "expected_type": types or ["string"] * n,
            "metadata": ["{}"] * n,
            "tags": [[] for _ in range(n)],
            "row_hash": ["h"] * n,
            "actual_output": actual,
        },
        schema_overrides={"tags": pl.List(pl.String), "actual_output": pl.String},
    )
    return base.with_columns(**extra)


# --- a Dask cluster of two worker processes on loopback, shared by a module's tests ---------


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """A ``distributed.Client`` of a LocalCluster: 2 worker processes on 127.0.0.1."""
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=":0",
        ) as cluster,
        Client(cluster) as c,
    ):
        yield c
