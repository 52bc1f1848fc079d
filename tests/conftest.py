"""Shared fixtures: a seeded RNG, dtypes with their rounding, a report header,
Hypothesis profiles and a helper that runs code in a fresh interpreter."""

import os
import re
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import onednn_graph as og
from onednn_graph.tolerance import compare

try:
    from hypothesis import settings
except ImportError:  # pragma: no cover - test_fuzz.py skips itself then
    settings = None
else:
    # "ci" (the default): a fixed sequence of examples, so every run checks
    # the same problems, bounded so the suite stays fast. "long": many random
    # examples, run by hand with HYPOTHESIS_PROFILE=long (README, developer notes).
    settings.register_profile("ci", max_examples=60, derandomize=True, deadline=None,
                              database=None, print_blob=True)
    settings.register_profile("long", max_examples=3000, deadline=None, print_blob=True)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

NUMPY = {"f32": np.float32, "bf16": ml_dtypes.bfloat16, "f16": np.float16}


def pytest_report_header(config):
    v = og.onednn_version()
    return (f"onednn_graph: oneDNN {v.major}.{v.minor}.{v.patch} ({v.cpu_runtime}), "
            f"ISA {og.cpu_isa()}, numpy {np.__version__}, ml_dtypes {ml_dtypes.__version__}")


@pytest.fixture
def rng():
    return np.random.default_rng(20261122)


@pytest.fixture(params=["f32", "bf16", "f16"])
def dtype(request):
    return request.param


def random(rng, shape, dtype):
    """Values in [-1, 1), rounded to `dtype` (the reference sees the same inputs)."""
    return rng.uniform(-1, 1, size=shape).astype(NUMPY[dtype])


def assert_matches_reference(got, ref_fn, args, kwargs, dtype, terms):
    """oneDNN vs the float64 reference; the bound is derived in onednn_graph.tolerance."""
    result = compare(got, ref_fn, args, kwargs, dtype, terms)
    assert result.ok, str(result)



TESTS_DIR = os.path.dirname(os.path.abspath(__file__))

# scripts/sanitize.sh preloads the ASan runtime; some bounds only hold without it.
UNDER_ASAN = "libasan" in os.environ.get("LD_PRELOAD", "")

# With allocator_may_return_null=1 (scripts/sanitize.sh) ASan returns NULL for an
# impossible allocation, so NumPy raises MemoryError as it would without ASan, but
# ASan still prints this warning. It reports a request the tests make on purpose,
# not a memory error.
_ASAN_ALLOCATION_WARNING = re.compile(r"^==\d+==WARNING: AddressSanitizer failed to allocate .*$\n?", re.M)


def run_python(code, timeout=120):
    """Run `code` in a fresh interpreter (tests/ on sys.path) and return its stdout.

    A crash (signal, abort, sanitizer report) there fails the calling test
    instead of killing the test run: the return code and stderr are checked.
    """
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [TESTS_DIR] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=TESTS_DIR)
    assert proc.returncode == 0, (f"child exited with {proc.returncode}\n"
                                  f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}")
    stderr = _ASAN_ALLOCATION_WARNING.sub("", proc.stderr)
    assert "Sanitizer" not in stderr and "runtime error:" not in stderr, stderr[-3000:]
    return proc.stdout
