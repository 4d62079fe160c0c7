"""Snapshots are compared, never silently written: a missing one fails, writing is explicit."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from snapshot import SNAPSHOTS, check_snapshot

TESTS = Path(__file__).parent

PROBE = """
from snapshot import check_snapshot

def test_probe():
    check_snapshot("probe.txt", "hello\\n")
"""


def _suite(tmp_path: Path, text: str = "hello") -> Path:
    """A copy of this suite's conftest and snapshot helper with one snapshot test."""
    tests = tmp_path / "tests"
    tests.mkdir()
    for name in ("conftest.py", "snapshot.py"):
        shutil.copy(TESTS / name, tests / name)
    (tests / "test_probe.py").write_text(PROBE.replace("hello", text), encoding="utf-8")
    return tests


def _pytest(tests: Path, *args: str, env: dict[str, str] | None = None) -> int:
    import os

    environ = {k: v for k, v in os.environ.items() if k != "EVALFRAME_UPDATE_SNAPSHOTS"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", str(tests),
         *args],
        cwd=tests.parent, capture_output=True, text=True, timeout=300, check=False,
        env={**environ, **(env or {})},
    )  # fmt: skip
    return done.returncode


def test_a_missing_snapshot_fails_and_is_not_written(tmp_path: Path) -> None:
    tests = _suite(tmp_path)
    assert _pytest(tests) == 1
    assert not (tests / "snapshots" / "probe.txt").exists()


def test_update_snapshots_flag_writes_then_plain_runs_compare(tmp_path: Path) -> None:
    tests = _suite(tmp_path)
    assert _pytest(tests, "--update-snapshots") == 0
    assert (tests / "snapshots" / "probe.txt").read_text(encoding="utf-8") == "hello\n"
    assert _pytest(tests) == 0
    (tests / "test_probe.py").write_text(PROBE.replace("hello", "changed"), encoding="utf-8")
    assert _pytest(tests) == 1
    assert (tests / "snapshots" / "probe.txt").read_text(encoding="utf-8") == "hello\n"


def test_the_env_var_writes_snapshots_too(tmp_path: Path) -> None:
    tests = _suite(tmp_path)
    assert _pytest(tests, env={"EVALFRAME_UPDATE_SNAPSHOTS": "1"}) == 0
    assert (tests / "snapshots" / "probe.txt").read_text(encoding="utf-8") == "hello\n"


def test_check_snapshot_fails_on_a_missing_file_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("EVALFRAME_UPDATE_SNAPSHOTS", raising=False)
    with pytest.raises(pytest.fail.Exception, match="does not exist"):
        check_snapshot("absent.txt", "x", directory=tmp_path)
    assert list(tmp_path.iterdir()) == []


def _snapshot_names_checked() -> set[str]:
    names: set[str] = set()
    for path in TESTS.glob("test_*.py"):
        if path.name == "test_snapshot.py":  # its probes use their own directories
            continue
        names |= set(re.findall(r'check_snapshot\(\s*"([^"]+)"', path.read_text(encoding="utf-8")))
    return names


def test_every_snapshot_file_is_checked_and_every_checked_name_is_committed() -> None:
    on_disk = {p.name for p in SNAPSHOTS.iterdir() if p.is_file()}
    assert on_disk, "tests/snapshots/ is empty"
    assert _snapshot_names_checked() == on_disk


def test_only_the_helper_touches_the_snapshot_directory() -> None:
    """No test keeps a private snapshot helper (one that might write missing files)."""
    offenders = [
        p.name
        for p in TESTS.glob("*.py")
        if p.name not in {"snapshot.py", "test_snapshot.py"}
        and re.search(r"""/\s*["']snapshots["']|["']snapshots/""", p.read_text(encoding="utf-8"))
    ]
    assert offenders == []
