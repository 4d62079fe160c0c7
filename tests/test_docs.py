"""The docs site builds offline with warnings as errors, and the package's doctests pass."""

from __future__ import annotations

import doctest
import importlib
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import evalframe as ef

ROOT = Path(__file__).resolve().parent.parent


def _modules() -> list[str]:
    names = ["evalframe"]
    for info in pkgutil.walk_packages(ef.__path__, prefix="evalframe."):
        if info.name.endswith("__main__"):
            continue
        names.append(info.name)
    return sorted(names)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
         "-d", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env=env, check=False,
    )  # fmt: skip
    warnings = [line for line in done.stderr.splitlines() if "WARNING" in line]
    assert done.returncode == 0, "\n".join(warnings) or done.stderr[-3000:]
    return out


def test_docs_build_strict_offline(site: Path) -> None:
    for page in ("index.html", "getting-started/index.html", "concepts/metric-contract/index.html",
                 "howto/ci-gate/index.html", "api/run/index.html", "cli/index.html"):  # fmt: skip
        assert (site / page).is_file(), page


def test_metric_catalogue_lists_every_registered_metric_with_its_doc(site: Path) -> None:
    page = (site / "metrics" / "catalogue" / "index.html").read_text(encoding="utf-8")
    # Built-ins only: other test modules register throwaway metrics when they are imported.
    for d in ef.metrics.available():
        if d.build.__module__.startswith("evalframe."):
            assert f'id="{d.name}"' in page, d.name
    assert "LCS" in page  # rouge-l's formula comes from its docstring


def test_cli_reference_lists_every_command(site: Path) -> None:
    from click import Context

    from evalframe.cli import cli

    page = (site / "cli" / "index.html").read_text(encoding="utf-8")
    for name in cli.list_commands(Context(cli)):
        assert f"evalframe {name}" in page, name


def test_api_reference_renders_docstrings(site: Path) -> None:
    page = (site / "api" / "run" / "index.html").read_text(encoding="utf-8")
    assert "One evaluation: the scored rows" in page


@pytest.mark.parametrize("module", _modules())
def test_doctests(module: str) -> None:
    mod = importlib.import_module(module)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False
    )
    failures = []
    for test in finder.find(mod, module):
        if test.lineno is None and not test.examples:
            continue
        result = runner.run(test, out=failures.append)
        del result
    assert not failures, "".join(failures)
