"""The suite's own honesty rules: no test skips, none parametrizes over nothing, and every
test function checks something."""

from __future__ import annotations

import ast
import itertools
import re
import shutil
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).parent

PROBE = """
import pytest

def test_skips():
    pytest.skip("a tool is missing")

def test_imports_or_skips():
    pytest.importorskip("no_such_module_for_evalframe")

@pytest.mark.skip(reason="not today")
def test_marked_skip():
    assert True

@pytest.mark.parametrize("item", [])
def test_over_nothing(item):
    assert item

def test_real():
    assert 1 + 1 == 2
"""

MODULE_SKIP = """
import pytest

pytest.importorskip("no_such_module_for_evalframe")

def test_never_collected():
    assert True
"""


def _run_probe(tmp_path: Path, name: str, source: str) -> str:
    tests = tmp_path / "tests"
    tests.mkdir(exist_ok=True)
    for helper in ("conftest.py", "snapshot.py"):
        shutil.copy(TESTS / helper, tests / helper)
    shutil.copy(TESTS.parent / "pyproject.toml", tmp_path / "pyproject.toml")  # the ini options
    (tests / name).write_text(source, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rA", "-n", "0", "-p", "no:cacheprovider",
         str(tests / name)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode != 0, done.stdout
    return done.stdout


def test_skips_and_empty_parameter_sets_fail(tmp_path: Path) -> None:
    out = _run_probe(tmp_path, "test_probe.py", PROBE)
    assert "Empty parameter set in 'test_over_nothing'" in out
    assert "skipped" not in out.splitlines()[-1], out  # the summary line counts no skip


def test_every_kind_of_skip_is_a_failure(tmp_path: Path) -> None:
    # Without the empty parametrize, which stops collection, every other test runs.
    without_empty = PROBE.split("@pytest.mark.parametrize", maxsplit=1)[0]
    out = _run_probe(
        tmp_path, "test_probe.py", without_empty + "def test_real():\n    assert 1 + 1 == 2\n"
    )
    summary = out.splitlines()[-1]
    assert re.search(r"\b2 failed\b", summary), out
    assert re.search(r"\b1 error\b", summary), out  # the skip mark fires during setup
    assert re.search(r"\b1 passed\b", summary), out
    assert "skipped" not in summary, out
    assert out.count("skipped tests are not allowed in this suite") >= 3


def test_a_module_that_skips_itself_fails(tmp_path: Path) -> None:
    out = _run_probe(tmp_path, "test_module_skip.py", MODULE_SKIP)
    assert "skipped tests are not allowed in this suite" in out
    assert re.search(r"\b1 error\b", out.splitlines()[-1]), out


# --- a static audit of the test files ------------------------------------------------------------

CHECKING_CALLS = {"raises", "fail", "warns", "deprecated_call"}


def _checks(node: ast.AST, helpers: set[str]) -> bool:
    """Whether ``node`` asserts, expects an exception, or calls a helper that does."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Assert):
            return True
        if isinstance(sub, ast.Call):
            func = sub.func
            name = (
                func.attr
                if isinstance(func, ast.Attribute)
                else func.id
                if isinstance(func, ast.Name)
                else ""
            )
            if name in CHECKING_CALLS or name in helpers or name.startswith("assert"):
                return True
    return False


def _unchecked_tests(source: str, shared_helpers: set[str]) -> list[str]:
    """Test functions in ``source`` that neither assert nor call anything that does."""
    functions = {
        n.name: n
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    helpers = set(shared_helpers)
    grew = True
    while grew:  # helpers calling helpers: close over the module's functions
        grew = False
        for name, fn in functions.items():
            if name not in helpers and _checks(fn, helpers):
                helpers.add(name)
                grew = True
    return sorted(n for n in functions if n.startswith("test_") and n not in helpers)


def _shared_helpers() -> set[str]:
    found: set[str] = set()
    for path in TESTS.glob("*.py"):
        if not path.name.startswith("test_"):
            found |= set(_unchecked_helpers(path.read_text(encoding="utf-8")))
    return found


def _unchecked_helpers(source: str) -> list[str]:
    tree = ast.parse(source)
    return [
        n.name
        for n in tree.body
        if isinstance(n, ast.FunctionDef | ast.ClassDef) and _checks(n, set())
    ]


def test_the_audit_flags_a_test_that_checks_nothing() -> None:
    source = (
        "def helper(x):\n    assert x\n\n"
        "def test_ok():\n    helper(1)\n\n"
        "def test_raises():\n    with pytest.raises(ValueError):\n        int('x')\n\n"
        "def test_nothing():\n    for x in []:\n        print(x)\n"
    )
    assert _unchecked_tests(source, set()) == ["test_nothing"]


def test_every_test_function_checks_something() -> None:
    shared = _shared_helpers()
    assert "check_snapshot" in shared  # the audit sees the helpers tests import
    unchecked = {
        path.name: names
        for path in sorted(TESTS.glob("test_*.py"))
        if (names := _unchecked_tests(path.read_text(encoding="utf-8"), shared))
    }
    assert unchecked == {}


# --- no wall-clock upper bound in a test (they belong in benchmarks/) ----------------------------

CLOCKS = {"perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "time", "time_ns"}


def _reads_clock(node: ast.AST, timed: set[str]) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id in timed:
            return True
        if (
            isinstance(sub, ast.Call)
            and isinstance(sub.func, ast.Attribute)
            and sub.func.attr in CLOCKS
            and isinstance(sub.func.value, ast.Name)
            and sub.func.value.id == "time"
        ):
            return True
    return False


def _timed_upper_bounds(source: str) -> list[int]:
    """Lines of ``source`` that compare a clock reading with ``<``/``<=`` (or ``>``/``>=`` with
    the clock on the right): upper bounds on elapsed time. Lower bounds pass."""
    lines = []
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        timed: set[str] = set()
        for node in ast.walk(fn):  # names that hold a clock reading or a difference of them
            if isinstance(node, ast.Assign) and _reads_clock(node.value, timed):
                timed |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        for node in ast.walk(fn):
            if not isinstance(node, ast.Compare):
                continue
            operands = [node.left, *node.comparators]
            for op, (a, b) in zip(node.ops, itertools.pairwise(operands), strict=True):
                upper = (isinstance(op, ast.Lt | ast.LtE) and _reads_clock(a, timed)) or (
                    isinstance(op, ast.Gt | ast.GtE) and _reads_clock(b, timed)
                )
                if upper:
                    lines.append(node.lineno)
    return sorted(set(lines))


def test_the_timing_audit_flags_upper_bounds_only() -> None:
    source = (
        "def test_a():\n"
        "    start = time.perf_counter()\n"
        "    work()\n"
        "    elapsed = time.perf_counter() - start\n"
        "    assert elapsed < 30\n"  # line 5: upper bound
        "    assert time.monotonic() - start <= 2\n"  # line 6: upper bound
        "    assert 3 > time.perf_counter() - start\n"  # line 7: upper bound, reversed
        "    assert elapsed >= 0.2\n"  # a lower bound stays
        "    assert calls < 10\n"  # a count stays
    )
    assert _timed_upper_bounds(source) == [5, 6, 7]


def test_no_test_asserts_a_wall_clock_upper_bound() -> None:
    found = {
        path.name: lines
        for path in sorted(TESTS.glob("test_*.py"))
        if (lines := _timed_upper_bounds(path.read_text(encoding="utf-8")))
    }
    assert found == {}, "move timing targets to benchmarks/ (see benchmarks/bench_scale.py)"


# --- CI runs the linters and the type checker the project promises -----------------------------

ROOT = TESTS.parent
CI_TOOLS = ["ruff check .", "ruff format --check .", "mypy --strict"]


def test_ci_runs_the_readmes_test_command_and_lints_after_the_tests() -> None:
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("Install and run the whole test suite:", 1)[1]
    command = section.split("```bash\n", 1)[1].split("\n```", 1)[0]
    pytest_line = next(i for i, line in enumerate(script) if line.split(" ||")[0] == command)
    assert "pytest" in script[pytest_line]  # the lint-only run below leaves it out
    setup = (ROOT / "scripts" / "test.sh").read_text(encoding="utf-8")
    assert 'python -m pip install -e ".[test]"' in setup
    assert 'python -m pytest -q "$@"' in setup
    steps = [line.removeprefix("step ").strip() for line in script if line.startswith("step ")]
    assert steps == CI_TOOLS
    assert all(script.index(f"step {tool}") > pytest_line for tool in CI_TOOLS)


def test_the_test_extra_brings_the_tools_ci_runs() -> None:
    import tomllib

    extra = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]["test"]
    names = {re.split(r"[<>=\[ ]", req, maxsplit=1)[0].lower() for req in extra}
    assert {"pytest", "ruff", "mypy", "types-pyyaml", "playwright"} <= names


def test_the_ci_lint_steps_pass_on_this_tree() -> None:
    """The steps after the test suite, run as .ci/run runs them, with this interpreter's tools."""
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    lint = script[script.index("failed=()") :]
    lint = "\n".join(line for line in lint.splitlines() if "pytest" not in line)
    import os

    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        ["bash", "-c", "set -euo pipefail\n" + lint],
        cwd=ROOT, capture_output=True, text=True, timeout=600, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert [line for line in done.stdout.splitlines() if line.startswith("::: ")] == [
        f"::: {tool}" for tool in CI_TOOLS
    ]
