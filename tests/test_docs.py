"""The docs site builds offline with warnings as errors, and the package's doctests pass."""

from __future__ import annotations

import doctest
import importlib
import os
import pkgutil
import re
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


FINDER = doctest.DocTestFinder(exclude_empty=True)
# The metric factories' examples run in tests/test_metric_doctests.py, one test per metric.
METRIC_EXAMPLES = {
    f"{d.build.__module__}.{d.build.__name__}"
    for d in ef.metrics.available()
    if d.build.__module__.startswith("evalframe.")
}


def _doctests(module: str) -> list[doctest.DocTest]:
    """``module``'s docstring examples, the metric factories' aside."""
    found = FINDER.find(importlib.import_module(module), module)
    return [t for t in found if t.name not in METRIC_EXAMPLES]


def _examples(module: str) -> int:
    """How many doctest examples ``module``'s docstrings hold."""
    return sum(len(t.examples) for t in _doctests(module))


# Only modules with examples get a doctest item: a parametrized item for a module without any
# would pass having run nothing.
DOCTESTED = [m for m in _modules() if _examples(m)]

# The public entry points promise runnable examples; losing them fails instead of shrinking
# DOCTESTED unnoticed.
MUST_HAVE_EXAMPLES = (
    "evalframe",
    "evalframe.core.aggregate",
    "evalframe.core._compare",
    "evalframe.core._dataset",
    "evalframe.core._estimate",
    "evalframe.core._gate",
    "evalframe.core._outputs",
    "evalframe.engine._evaluate",
    "evalframe.enrich",
    "evalframe.metrics._registry",
    "evalframe.metrics._spec",
    "evalframe.store._store",
)


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
    builtins = [
        d.name for d in ef.metrics.available() if d.build.__module__.startswith("evalframe.")
    ]
    assert len(builtins) >= 15  # the README's fifteen; an empty registry must not pass
    assert [name for name in builtins if f'id="{name}"' not in page] == []
    assert "LCS" in page  # rouge-l's formula comes from its docstring


def test_cli_reference_lists_every_command(site: Path) -> None:
    from click import Context

    from evalframe.cli import cli

    page = (site / "cli" / "index.html").read_text(encoding="utf-8")
    commands = cli.list_commands(Context(cli))
    assert {"run", "report", "gate", "compare"} <= set(commands)
    assert [name for name in commands if f"evalframe {name}" not in page] == []


def test_api_reference_renders_docstrings(site: Path) -> None:
    page = (site / "api" / "run" / "index.html").read_text(encoding="utf-8")
    assert "One evaluation: the scored rows" in page


def test_the_modules_that_promise_examples_have_them() -> None:
    assert [m for m in MUST_HAVE_EXAMPLES if m not in DOCTESTED] == []


@pytest.mark.parametrize("module", DOCTESTED)
def test_doctests(module: str) -> None:
    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False
    )
    failures: list[str] = []
    for test in _doctests(module):
        runner.run(test, out=failures.append)
    assert not failures, "".join(failures)
    assert runner.summarize(verbose=False).attempted > 0, f"{module}: no example ran"


# --- the docs stand on their own: no citation of a specification outside the repository --------

CITATION = re.compile(
    r"§\s*\d"  # a numbered section of some other document
    r"|\breference\s+§"
    r"|eval-harness-behaviour"
    r"|\.\./shared\b"
    r"|\bshared/reference\b",
    re.IGNORECASE,
)
# Everything a reader sees: docs, README, docstrings and comments, notebooks, benchmarks.
CITATION_SCOPE = {
    "README.md": ("",),
    "mkdocs.yml": ("",),
    "docs": (".md", ".py", ".yml"),
    "evalframe": (".py", ".md", ".yaml", ".yml"),
    "notebooks": (".ipynb", ".md", ".py"),
    "benchmarks": (".py", ".md"),
}


def _readable_files() -> list[Path]:
    files = []
    for top, suffixes in CITATION_SCOPE.items():
        path = ROOT / top
        if path.is_file():
            files.append(path)
            continue
        files += [
            p
            for p in sorted(path.rglob("*"))
            if p.is_file() and p.suffix in suffixes and ".data" not in p.parts
        ]
    return files


def test_the_citation_pattern() -> None:
    cited = ["(reference §2.9)", "§3", "see eval-harness-behaviour.md", "../shared/x", "§ 6.4"]
    plain = ["eval-harness's semantics", "the reference run (before)", "section 3 below", "##§"]
    assert [t for t in cited if not CITATION.search(t)] == []
    assert [t for t in plain if CITATION.search(t)] == []


def test_docs_docstrings_and_notebooks_cite_no_outside_specification() -> None:
    files = _readable_files()
    assert len(files) > 50  # docs, modules, notebooks and benchmarks were all found
    assert {p.relative_to(ROOT).parts[0] for p in files} == set(CITATION_SCOPE)
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in files
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if CITATION.search(line)
    ]
    assert found == [], "describe the behaviour in the docs' own words:\n" + "\n".join(found)
