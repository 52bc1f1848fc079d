"""Fixtures (a seeded RNG, the dtypes), the report header and the Hypothesis
profiles; what tests share besides fixtures is in helpers.py."""

import os
import sys

import ml_dtypes
import numpy as np
import pytest

import onednn_graph as og

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


def pytest_addoption(parser):
    parser.addoption("--wide", action="store_true",
                     help="also run the tests marked wide (the wider channel-count sweep: minutes)")


def pytest_collection_modifyitems(config, items):
    """Without --wide, the tests marked wide are deselected (pytest's last line counts them)."""
    if config.getoption("--wide"):
        return
    wide = [item for item in items if item.get_closest_marker("wide") is not None]
    if wide:
        config.hook.pytest_deselected(items=wide)
        items[:] = [item for item in items if item.get_closest_marker("wide") is None]


def pytest_report_header(config):
    v = og.system.onednn_version()
    return (f"onednn_graph: oneDNN {v.major}.{v.minor}.{v.patch} ({v.cpu_runtime}), "
            f"ISA {og.system.cpu_isa()}, numpy {np.__version__}, ml_dtypes {ml_dtypes.__version__}")


@pytest.fixture
def rng():
    return np.random.default_rng(20261122)


@pytest.fixture(params=["f32", "bf16", "f16"])
def dtype(request):
    return request.param


@pytest.fixture(autouse=True)
def _own_tuning_database(monkeypatch, tmp_path):
    """Each test tunes into an empty database of its own (and never into the user's
    cache): a decision stored by one test must not spare another its measurement."""
    monkeypatch.setenv("ONEDNN_GRAPH_TUNING_DB", str(tmp_path / "tuning-db"))


@pytest.fixture(autouse=True)
def _tuning_never_sees_a_busy_machine(monkeypatch, request):
    """Tests that tune expect a decision to be stored; another process loading the CI
    machine must not make them fail. Only test_tuning_verdict.py's tests (marked
    busy_machine) keep the real threshold, and they give tuning its load readings."""
    if request.node.get_closest_marker("busy_machine") is None:
        from onednn_graph._impl import tuning as _tuning
        monkeypatch.setattr(_tuning, "BUSY_SHARE", float("inf"))


@pytest.fixture(autouse=True)
def _calls_never_see_a_busy_machine(monkeypatch, request):
    """Tests count compilations and cache entries, and compare thread counts; another
    process loading the CI machine must not move a call to fewer threads under them
    (machine_load.LIMIT). Child processes the tests start inherit the setting. Only
    test_machine_load.py's tests (marked busy_machine) give the limit its readings."""
    from onednn_graph._impl import machine_load as _machine_load
    if request.node.get_closest_marker("busy_machine") is None:
        monkeypatch.setenv(_machine_load.LOAD_AWARE_ENV, "0")
        monkeypatch.setattr(_machine_load, "LIMIT", _machine_load.ThreadLimit())


@pytest.fixture(autouse=True)
def _converted_layers_run_on_onednn(monkeypatch, request):
    """The tests of converted layers test what oneDNN computes: a small layer that the
    default rule would hand to torch.nn's faster kernel (onednn_graph.torch._kernel_choice)
    must not turn them into comparisons of torch.nn with itself. The tests of that choice
    are marked torch_kernels."""
    if request.node.get_closest_marker("torch_kernels") is None:
        monkeypatch.setenv("ONEDNN_GRAPH_TORCH_KERNELS", "off")


@pytest.fixture(autouse=True)
def _moved_names_fail_in_subprocesses(monkeypatch):
    """The package's own code, examples and documents use no deprecated top-level name
    (onednn_graph._deprecated). In this process pyproject's filterwarnings = error makes
    one a failure; the interpreters tests start (examples, README blocks, the command)
    get the same rule, for the package's warnings only (their messages start with
    "onednn_graph."), so another library's deprecation does not fail them."""
    rule = "error:onednn_graph.:DeprecationWarning"
    inherited = os.environ.get("PYTHONWARNINGS")
    monkeypatch.setenv("PYTHONWARNINGS", f"{inherited},{rule}" if inherited else rule)


@pytest.fixture(autouse=True)
def _fresh_torch_compile_caches():
    """Each test compiles from empty torch.compile caches: Dynamo recompiles one code
    object (a layer's forward) at most 8 times per process, and the tests compile the
    package's layers under many dtypes and autocast regions (0.01 ms a reset)."""
    yield
    dynamo = sys.modules.get("torch._dynamo")
    if dynamo is not None:
        dynamo.reset()
