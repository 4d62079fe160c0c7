"""A kernel loaded from numba's disk cache is recompiled when a kernel it calls has changed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CALLER = """
from evalframe.core._njit import njit
from kernels.callee import value


@njit
def total(x):
    return x + value()
"""

CALLEE = """
from evalframe.core._njit import njit


@njit
def value():
    return {result}
"""

SHOW = (
    "from kernels.caller import total; print(total(1), "
    "sum(total.dispatcher._cache_hits.values()), sum(total.dispatcher._cache_misses.values()))"
)


def _run(root: Path) -> list[int]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    env.pop("NUMBA_CACHE_DIR", None)
    out = subprocess.run(
        [sys.executable, "-c", SHOW], env=env, capture_output=True, text=True, check=True
    )
    return [int(word) for word in out.stdout.split()]


def test_an_edited_callee_invalidates_its_callers_cache_entry(tmp_path: Path) -> None:
    package = tmp_path / "kernels"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "caller.py").write_text(CALLER)
    (package / "callee.py").write_text(CALLEE.format(result=10))

    # result, cache hits, cache misses of the caller in a new process each time
    assert _run(tmp_path) == [11, 0, 1]  # compiled and saved
    assert _run(tmp_path) == [11, 1, 0]  # loaded from the cache
    (package / "callee.py").write_text(CALLEE.format(result=20))  # the caller's file unchanged
    assert _run(tmp_path) == [21, 0, 1]  # not the stale cached copy holding 10
