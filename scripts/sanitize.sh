#!/usr/bin/env bash
# Builds the extension with AddressSanitizer + UndefinedBehaviorSanitizer
# (CMake option ONEDNN_GRAPH_SANITIZE) into its own virtual environment and runs
# the whole test suite under it.
#
#   scripts/sanitize.sh [VENV_DIR] [pytest args...]     (default VENV_DIR: /tmp/venv-sanitize)
#   REBUILD=0 scripts/sanitize.sh ...                    (reuse the venv's sanitized build)
#
# Python itself is not instrumented, so the ASan runtime is preloaded. Leak
# detection is off: CPython and oneDNN keep allocations alive until exit by
# design (interned objects, kernel caches), which LeakSanitizer would report.
# Any ASan report aborts the process; UBSan reports halt too, so a finding
# fails the run rather than scrolling past.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${1:-/tmp/venv-sanitize}"
shift || true
PYTHON="${PYTHON:-python3}"

[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
start=$(date +%s)
# A separate build directory, so the sanitized objects never mix with a normal build.
if [ "${REBUILD:-1}" != 0 ]; then
  "$VENV/bin/pip" install -q "$ROOT[test]" \
    -Ccmake.define.ONEDNN_GRAPH_SANITIZE=ON -Ccmake.build-type=RelWithDebInfo \
    -Cbuild-dir="$ROOT/build/sanitize"
fi
built=$(date +%s)

# libstdc++ too: ASan intercepts __cxa_throw only if libstdc++ is loaded when it
# starts, else the first C++ exception aborts ("real___cxa_throw != 0").
export LD_PRELOAD="$(c++ -print-file-name=libasan.so) $(c++ -print-file-name=libstdc++.so)"
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$ROOT/scripts/ubsan.supp"
export PYTHONMALLOC=malloc  # let ASan see every Python allocation too
cd "$ROOT"
set +e
"$VENV/bin/python" -m pytest -q -p no:cacheprovider "$@"
status=$?
end=$(date +%s)
echo "sanitize.sh: build $((built - start)) s, tests $((end - built)) s, pytest exit status $status"
exit $status
