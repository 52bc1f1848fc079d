#!/usr/bin/env bash
# Builds the package against PyPI's oneDNN 3.13 (onednn==2026.1.0, SYCL CPU runtime)
# in a virtual environment of its own and runs the README's quick start and the whole
# test suite there: natively, then as an AVX2-only CPU runs it (ONEDNN_MAX_CPU_ISA=AVX2:
# no bf16/f16 kernels, the package's f32 chains), then the op and cast tests as an
# SSE4.1 one does. The default build (oneDNN 3.2, what .ci/run tests) is left alone:
# this one builds in build/onednn-3.13, and the wheel test (the README's default wheel)
# is .ci/run's.
#
#   bash scripts/test_onednn_3_13.sh [VENV]        # default VENV: .venv-onednn-3.13
#   ONEDNN_GRAPH_CI_ONEDNN_3_13=1 bash .ci/run     # CI, then this (docs/onednn-3.13.md)
#
# Needs about 2.2 GB for the environment (oneDNN 3.13 pulls its SYCL, OpenCL and TBB
# runtimes) and network access to PyPI. Times: docs/onednn-3.13.md.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${1:-.venv-onednn-3.13}
python3 -m venv "$VENV"
source "$VENV/bin/activate"
python -m pip install --upgrade pip >/dev/null
# The library, and what --no-build-isolation needs from the environment to build.
pip install onednn==2026.1.0 onednn-devel==2026.1.0 "scikit-build-core>=0.10" "pybind11>=2.12"
ONEDNN_ROOT="$VIRTUAL_ENV" pip install --no-build-isolation -C build-dir=build/onednn-3.13 ".[test]"
# It links 3.13, and nothing pulled oneDNN 3.2's wheel in beside it.
python - <<'PY'
import importlib.metadata as m
import onednn_graph as og
v = og.system.onednn_version()
assert (v.major, v.minor) == (3, 13), v
assert "onednn-cpu-gomp" not in {d.metadata["Name"] for d in m.distributions()}
print(f"onednn-graph on oneDNN {v.major}.{v.minor}.{v.patch} ({v.cpu_runtime}), CPU ISA {og.system.cpu_isa()}")
PY
python examples/quickstart.py
python -m pytest -m "not wheel"
ONEDNN_MAX_CPU_ISA=AVX2 python -m pytest -m "not wheel" -q -p no:cacheprovider
ONEDNN_MAX_CPU_ISA=SSE41 python -m pytest -m "not wheel" -q -p no:cacheprovider \
  tests/api/test_ops.py tests/api/test_as_f32.py tests/native/test_casts.py
