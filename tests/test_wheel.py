"""The built wheel ships every file of the packages: the judge prompt texts, the bundled
examples and tokenizer, the ``py.typed`` marker, and the entry points (a missing data file
would only fail on a user's machine, at the first judged metric or ``evalframe run``)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("evalframe", "evalframe_pytest")


def _shipped_by_the_tree() -> set[str]:
    return {
        p.relative_to(ROOT).as_posix()
        for package in PACKAGES
        for p in (ROOT / package).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }


def test_the_wheel_holds_every_package_file_and_the_entry_points(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation",
         "--quiet", "--wheel-dir", str(tmp_path)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    (wheel,) = tmp_path.glob("evalframe-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        info = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        entry_points = archive.read(info).decode("utf-8")
    packaged = {n for n in names if n.split("/", 1)[0] in PACKAGES}
    assert packaged == _shipped_by_the_tree()
    prompts = {n for n in packaged if n.startswith("evalframe/metrics/prompts/")}
    assert "evalframe/metrics/prompts/judge.llm-as-judge.v2.txt" in prompts
    assert len(prompts) == len(list((ROOT / "evalframe/metrics/prompts").glob("*.txt"))) > 40
    for data in ("evalframe/py.typed", "evalframe/_assets/tokenizer.json",
                 "evalframe/examples/support.yaml"):  # fmt: skip
        assert data in packaged, data
    assert "evalframe = evalframe.cli:main" in entry_points
    assert "evalframe = evalframe_pytest" in entry_points
