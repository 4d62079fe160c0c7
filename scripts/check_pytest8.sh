#!/usr/bin/env bash
# Run the pytest plugin's tests under pytest 8 (the test extra installs pytest 9).
#
# A throwaway virtual environment under $WORK (default /tmp/evalframe-pytest8) gets pytest 8
# and pytest-xdist; a .pth file then puts the active environment (where evalframe and its test
# extra are installed) after them on the path, so pytest 8 is the one that runs, and the tests'
# own pytest subprocesses run it too. Nothing is installed into the active environment. Usage,
# from the repository root, with the project's environment active:
#
#     bash scripts/check_pytest8.sh [pytest arguments]
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WORK="${WORK:-/tmp/evalframe-pytest8}"
PYTEST_SPEC="${PYTEST_SPEC:-pytest>=8,<9}"
SITE="$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"

rm -rf "$WORK"
python -m venv "$WORK"
"$WORK/bin/python" -m pip install -q "$PYTEST_SPEC" pytest-xdist
printf '%s\n%s\n' "$SITE" "$ROOT" >"$("$WORK/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/zz-evalframe.pth"
"$WORK/bin/python" -m pytest --version
cd "$ROOT"
"$WORK/bin/python" -m pytest -q -p no:randomly -p no:cacheprovider \
    tests/test_pytest_plugin.py tests/test_pytest_node_ids.py "$@"
