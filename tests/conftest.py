"""Shared fixtures."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

# --- providers: an OpenAI-compatible stub server on loopback (tests/openai_stub.py) ----------

STUB_API_KEY = "sk-test-Z9x8Y7w6V5u4T3s2"


@pytest.fixture
def openai_stub() -> Iterator[object]:
    """A started ``StubOpenAI`` on 127.0.0.1 that requires ``STUB_API_KEY``."""
    from openai_stub import StubOpenAI

    with StubOpenAI(api_key=STUB_API_KEY) as stub:
        yield stub


# --- the metric registry is process-global: give every test a clean copy ----------------------


@pytest.fixture(autouse=True)
def _isolated_metric_registry() -> Iterator[None]:
    """Metrics a test registers (``@metric``, ``rowwise``, ``register``) vanish after it."""
    from evalframe.metrics import _registry

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
