#!/usr/bin/env bash
# The README's install commands, in order, on a fresh clone in a fresh virtual
# environment, and how many of the extension's objects each one compiled (from the
# object files' times in the build folder): the first compiles them all, every other
# one none. Exits 1 if a later command compiled anything.
#
#   bash scripts/count_compiles.sh [WORKDIR]    # default: a new temporary folder
#
# About 3 minutes on 2 cores (one compile, the test extras' downloads). The torch step
# runs where pip finds PyTorch's CPU wheel 2.13.0 locally (PIP_FIND_LINKS), as
# README's "With PyTorch" installs it first; elsewhere it is left out.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${1:-$(mktemp -d)}
git clone -q "$ROOT" "$WORK/clone"
cd "$WORK/clone"
python3 -m venv "$WORK/venv"
source "$WORK/venv/bin/activate"
python -m pip install -q --upgrade pip

objects() {  # the build folder's object files with their modification times
  [ -d build ] || return 0
  find build -name '*.o' -path '*_core.dir*' -printf '%p %T@\n' | sort
}
compiled_after_first=0
step() {
  local before after changed seconds start
  before=$(objects)
  start=$(date +%s)
  "$@" >"$WORK/step.log" 2>&1 || { cat "$WORK/step.log"; echo "FAILED: $*"; exit 2; }
  seconds=$(( $(date +%s) - start ))
  after=$(objects)
  changed=$(comm -13 <(echo "$before") <(echo "$after") | grep -c . || true)
  echo "$* : ${seconds} s, ${changed} of $(echo "$after" | grep -c .) objects compiled"
  if [ -n "$before" ] && [ "$changed" -gt 0 ]; then compiled_after_first=1; fi
}

step pip install .
step pip install ".[test]"
if ls "${PIP_FIND_LINKS:-/nonexistent}"/torch-2.13.0*.whl >/dev/null 2>&1; then
  step pip install torch==2.13.0
  step pip install ".[torch]"
fi
step pip wheel --no-deps . -w build/wheel
if [ "$compiled_after_first" -ne 0 ]; then
  echo "a command after the first compiled the extension again"
  exit 1
fi
echo "one compile"
