"""The one snapshot helper: rendered output compared with a committed file in tests/snapshots/.

A missing or different snapshot fails the test. Writing snapshots is explicit: run pytest with
``--update-snapshots`` (or ``EVALFRAME_UPDATE_SNAPSHOTS=1``), then review the diff and commit
it. Every test that compares against tests/snapshots/ goes through ``check_snapshot``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SNAPSHOTS = Path(__file__).parent / "snapshots"
ENV = "EVALFRAME_UPDATE_SNAPSHOTS"
OPTION = "--update-snapshots"

# Set from the command line by conftest.py's pytest_configure.
update_requested = False


def updating() -> bool:
    """Whether this session (re)writes snapshots: ``--update-snapshots`` or the env var is 1."""
    return update_requested or os.environ.get(ENV, "") == "1"


def check_snapshot(name: str, text: str, *, directory: Path = SNAPSHOTS) -> None:
    """Fail unless ``text`` equals the committed snapshot ``directory / name``.

    In update mode, write ``text`` there instead (creating it) and pass.
    """
    path = directory / name
    if updating():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    if not path.is_file():
        pytest.fail(
            f"snapshot {path} does not exist. Write it with `pytest {OPTION}` (or {ENV}=1), "
            "review it, and commit it.",
            pytrace=False,
        )
    assert text == path.read_text(encoding="utf-8"), (
        f"{name} differs from its snapshot (see the diff above); if the change is intended, "
        f"rerun with {OPTION} and commit the new file"
    )
