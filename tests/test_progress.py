"""Progress of long work: shown on a terminal (stderr a pseudo-terminal), never on a pipe or
with --quiet, and never on stdout (a JSON report printed there stays parseable)."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

import evalframe as ef
from evalframe.core import _progress

EXAMPLE = Path(ef.__file__).parent / "examples" / "support.yaml"
SLOW_SYSTEM = """
import time

def answer(inp):
    time.sleep(0.15)
    return "30 days"
"""


def run_cli(tmp_path: Path, *args: str, terminal: bool) -> tuple[int, bytes, bytes]:
    """``evalframe run`` with a system under test slow enough to show progress (12 calls
    one at a time, about 2 s); stderr a pseudo-terminal or a pipe, stdout a pipe."""
    (tmp_path / "slow_system.py").write_text(SLOW_SYSTEM)
    argv = [sys.executable, "-m", "evalframe", "run", str(EXAMPLE), "--system",
            "slow_system:answer", "--concurrency", "1", "-m", "exact-match", *args]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "EVALFRAME_KERNELS")}
    env["COLUMNS"] = "120"
    if not terminal:
        done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, check=False)
        return done.returncode, done.stdout, done.stderr
    main, side = pty.openpty()
    stdout = tmp_path / "stdout"
    with stdout.open("wb") as sink:
        proc = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=sink, stderr=side)
    os.close(side)
    err = bytearray()
    while True:  # read the terminal until the process closes it
        ready, _, _ = select.select([main], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the other side closed
            break
        if not chunk:
            break
        err += chunk
    proc.wait(timeout=120)
    os.close(main)
    return proc.returncode, stdout.read_bytes(), bytes(err)


def test_a_terminal_shows_the_progress_of_long_work(tmp_path: Path) -> None:
    code, out, err = run_cli(tmp_path, "--format", "json", terminal=True)
    assert code in (0, 1), err
    assert b"calling the system under test" in err
    assert b"/12" in err  # a count out of the total
    assert b"calls/s" in err  # and a rate
    doc = json.loads(out)  # stdout holds the report alone
    assert len(doc["samples"]) == 12


def test_a_pipe_and_quiet_show_nothing(tmp_path: Path) -> None:
    code, out, err = run_cli(tmp_path, "--format", "json", terminal=False)
    assert code in (0, 1), err
    assert b"calling" not in err
    assert json.loads(out)["total_executions"] == 12
    code, out, err = run_cli(tmp_path, "--format", "json", "--quiet", terminal=True)
    assert code in (0, 1), err
    assert b"calling" not in err
    assert b"\x1b[" not in err  # no cursor movement at all
    assert json.loads(out)["total_executions"] == 12


def test_short_work_shows_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Work over before the display's delay draws nothing (and imports no rich)."""
    shown = []
    monkeypatch.setattr(_progress, "visible", lambda show=None: True)
    with _progress.track("quick", 3) as advance:
        advance(3)
        shown.append(_progress._CURRENT[0].progress)
    assert shown == [None]
    assert _progress._CURRENT == []


def test_long_work_draws_counts_on_stderr(capfd: pytest.CaptureFixture[str]) -> None:
    with _progress.track("long work", 10, unit="items", show=True) as advance:
        for _ in range(10):
            time.sleep(0.15)
            advance(1)
        assert _progress._CURRENT[0].progress is not None  # drawn after the delay
    assert _progress._CURRENT == []
    out, _ = capfd.readouterr()
    assert out == ""  # stdout untouched


def test_quiet_and_show_false_hide_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_progress.sys.stderr, "isatty", lambda: True)
    monkeypatch.delenv("CI", raising=False)
    assert _progress.visible()
    assert not _progress.visible(False)
    with _progress.showing(False):
        assert not _progress.visible()
    _progress.set_quiet(True)
    try:
        assert not _progress.visible()
        assert not _progress.visible(True)
    finally:
        _progress.set_quiet(False)
    monkeypatch.setenv("CI", "true")
    assert not _progress.visible()


def test_every_command_takes_quiet() -> None:
    import click

    from evalframe.cli import cli

    def commands(group: click.Group) -> list[click.Command]:
        found: list[click.Command] = [group]
        for sub in group.commands.values():
            found += commands(sub) if isinstance(sub, click.Group) else [sub]
        return found

    every = commands(cli)
    assert len(every) > 20
    for command in every:
        names = {o for p in command.params if isinstance(p, click.Option) for o in p.opts}
        assert {"--quiet", "-q"} <= names, command.name
