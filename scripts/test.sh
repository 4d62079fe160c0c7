#!/usr/bin/env bash
# The whole test suite from a fresh clone, in one command: the system packages the suite
# needs, a virtual environment with the test extra, then pytest. Arguments go to pytest
# (e.g. `scripts/test.sh tests/test_cli.py -x`).
#
# Debian and Ubuntu: what is missing is installed with apt-get (through sudo when not root):
# Chromium for the browser tests, python3-venv for the virtual environment. Playwright drives
# that system Chromium; its own browser download is never used.
# Elsewhere (macOS, other Linux): install Python 3.11+ and any Chromium or Chrome yourself,
# and set EVALFRAME_CHROMIUM to its executable when it is not on PATH as chromium,
# chromium-browser, google-chrome or chrome.
#
# Inside an activated virtual environment the script installs into it; otherwise it creates
# and uses .venv in the repository.
set -euo pipefail
cd "$(dirname "$0")/.."

have_chromium() {
    if [ -n "${EVALFRAME_CHROMIUM:-}" ]; then
        command -v "$EVALFRAME_CHROMIUM" >/dev/null 2>&1 && return 0
        echo "EVALFRAME_CHROMIUM=$EVALFRAME_CHROMIUM is not an executable" >&2
        exit 2
    fi
    local name
    for name in chromium chromium-browser google-chrome chrome; do
        command -v "$name" >/dev/null 2>&1 && return 0
    done
    return 1
}

apt_install() {
    command -v apt-get >/dev/null 2>&1 || return 1
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then sudo=(sudo); fi
    echo "installing $* with apt-get" >&2
    ${sudo[@]+"${sudo[@]}"} apt-get update -qq &&
        ${sudo[@]+"${sudo[@]}"} env DEBIAN_FRONTEND=noninteractive \
            apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# Chromium: Debian names the package chromium, Ubuntu chromium-browser.
if ! have_chromium; then
    apt_install chromium || apt_install chromium-browser || true
    if ! have_chromium; then
        echo "The browser tests need Chromium: install it (Debian: apt-get install chromium;" \
            "macOS: brew install --cask chromium) or set EVALFRAME_CHROMIUM to a Chromium" \
            "or Chrome executable." >&2
        exit 2
    fi
fi

# A virtual environment: the active one, else .venv (python3-venv installed when missing).
if [ -z "${VIRTUAL_ENV:-}" ]; then
    if [ ! -x .venv/bin/python ]; then
        if ! python3 -c "import ensurepip, venv" >/dev/null 2>&1; then
            apt_install python3-venv || {
                echo "python3 cannot create a virtual environment: install its venv module" >&2
                exit 2
            }
        fi
        python3 -m venv .venv
    fi
    # shellcheck disable=SC1091
    source .venv/bin/activate
fi

python -m pip install -q --upgrade pip
python -m pip install -e ".[test]"
python -m pytest -q "$@"
