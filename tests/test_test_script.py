"""scripts/test.sh, the README's test command, run with stand-ins for the system: it installs
Chromium with apt-get when none is on PATH (through sudo when not root), installs the test
extra into the active virtual environment and hands its arguments to pytest."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "test.sh"


def _stub(path: Path, body: str) -> None:
    path.write_text("#!/bin/bash\n" + body + "\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.fixture
def system(tmp_path: Path) -> Path:
    """A PATH of stand-ins that log their arguments: apt-get "installs" chromium, python
    records what it is asked to run. Only the few real tools the script needs are linked."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for tool in ("bash", "dirname", "env", "chmod"):
        real = shutil.which(tool)
        assert real is not None
        (bin_ / tool).symlink_to(real)
    log = tmp_path / "log"
    _stub(bin_ / "id", 'echo "${UID_STUB:-1000}"')
    _stub(bin_ / "sudo", f'echo "sudo $*" >> {log}; exec "$@"')
    _stub(
        bin_ / "apt-get",
        f'echo "apt-get $*" >> {log}\n'
        f'if [[ "$*" == *"install"*" chromium" ]]; then\n'
        f'  printf "#!/bin/bash\\n" > {bin_}/chromium; chmod +x {bin_}/chromium\nfi',
    )
    _stub(bin_ / "python", f'echo "python $*" >> {log}')
    return tmp_path


def _run(system: Path, *args: str, **env: str) -> tuple[int, list[str], str]:
    environ = {"PATH": str(system / "bin"), "VIRTUAL_ENV": str(system), "HOME": str(system)}
    done = subprocess.run(
        ["bash", str(SCRIPT), *args],
        env={**environ, **env}, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    log = system / "log"
    lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    return done.returncode, lines, done.stderr


def test_a_fresh_debian_gets_chromium_through_sudo_then_the_extra_then_pytest(
    system: Path,
) -> None:
    code, log, err = _run(system, "tests/test_cli.py", "-x")
    assert code == 0, err
    assert log == [
        "sudo apt-get update -qq",
        "apt-get update -qq",
        "sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "
        "--no-install-recommends chromium",
        "apt-get install -y -qq --no-install-recommends chromium",
        "python -m pip install -q --upgrade pip",
        "python -m pip install -e .[test]",
        "python -m pytest -q tests/test_cli.py -x",
    ]
    assert os.access(system / "bin" / "chromium", os.X_OK)


def test_root_needs_no_sudo_and_a_present_chromium_is_kept(system: Path) -> None:
    code, log, err = _run(system, UID_STUB="0")
    assert code == 0, err
    assert not any(line.startswith("sudo") for line in log)
    assert log[1] == "apt-get install -y -qq --no-install-recommends chromium"
    (system / "log").unlink()
    code, log, err = _run(system)  # chromium is on PATH now: no apt-get at all
    assert code == 0, err
    assert log[0] == "python -m pip install -q --upgrade pip"
    assert log[-1] == "python -m pytest -q"


def test_evalframe_chromium_is_used_and_a_machine_without_apt_is_told_what_to_do(
    system: Path,
) -> None:
    browser = system / "my-chrome"
    _stub(browser, "")
    code, log, err = _run(system, EVALFRAME_CHROMIUM=str(browser))
    assert code == 0, err
    assert not any("apt-get" in line for line in log)
    (system / "bin" / "apt-get").unlink()
    (system / "log").unlink()
    code, log, err = _run(system)
    assert code == 2
    assert "EVALFRAME_CHROMIUM" in err
    assert "python -m pytest -q" not in log
