"""Shared fixtures: a seeded RNG, dtypes with their rounding, and a report header."""

import ml_dtypes
import numpy as np
import pytest

import onednn_graph as og
from onednn_graph.tolerance import compare

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
