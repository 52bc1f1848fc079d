"""The public surface: what ``import onednn_graph`` offers is what it says it offers.

Truth: each module's ``__all__``. Every name in it exists, ``dir()`` shows exactly
those names, no public name is an implementation module, the objects a user is
handed are the classes the package exports, and what the docs once reached
through private objects has a public name. The top level itself is pinned below
(CHANGELOG, 0.1.0, Changed), and the names that left it still work for one
release, warning where they went.
"""

import importlib
import subprocess
import sys
import types

import numpy as np
import pytest

import onednn_graph as og

PUBLIC_MODULES = ["onednn_graph"] + [f"onednn_graph.{m}" for m in og.__all__
                                     if isinstance(getattr(og, m), types.ModuleType)]

# What a program running the ops needs; the rest is in a module named for it.
TOP_LEVEL = {
    "conv_transpose", "conv_transpose_backward_data", "conv_transpose_backward_weights",
    "convolution_backward_data", "conv_transpose_backprop_filters", "output_shape",
    "compile_op", "Operation", "FusedOperation",
    "CompiledPartition", "Engine", "Graph", "LogicalTensor", "Op", "Partition", "Stream", "Tensor",
    "load_graph", "save_graph", "Error", "UnsupportedError",
    "cache", "errors", "graph", "graph_json", "operation", "ops", "overrides", "padding", "post",
    "quant", "reference", "reproducer", "shapes", "system", "tolerance", "torch_like", "tuning",
}
# The names that left the top level in 0.1.0, and the module each went to.
MOVED = {
    **dict.fromkeys(["cache_info", "CacheInfo", "cached_ops", "clear_cache",
                     "set_cache_capacity"], "cache"),
    **dict.fromkeys(["set_tuning", "tuning_enabled", "tuning_database", "TuningDatabase",
                     "TuningEntry"], "tuning"),
    **dict.fromkeys(["capabilities", "cpu_isa", "onednn_version", "onednn_allocations",
                     "reset_onednn_peak"], "system"),
}


def test_the_top_level_is_what_it_was_decided_to_be():
    assert set(og.__all__) == TOP_LEVEL


@pytest.mark.parametrize("name", sorted(MOVED))
def test_a_moved_name_still_works_and_says_where_it_went(name):
    module = MOVED[name]
    assert name not in og.__all__ and name not in dir(og)
    said = rf"^onednn_graph\.{name} is deprecated: use onednn_graph\.{module}\.{name} "
    with pytest.warns(DeprecationWarning, match=said):
        old = getattr(og, name)
    assert old is getattr(importlib.import_module(f"onednn_graph.{module}"), name)


def test_a_moved_name_imported_by_name_warns_too():
    with pytest.warns(DeprecationWarning, match="use onednn_graph.cache.cache_info"):
        from onednn_graph import cache_info
    assert cache_info is og.cache.cache_info


def test_the_reproducer_module_called_as_the_old_function_warns(rng):
    x = rng.standard_normal((1, 2, 3)).astype(np.float32)
    w = rng.standard_normal((2, 1, 2)).astype(np.float32)
    said = r"use onednn_graph\.reproducer\.reproducer\(\.\.\.\)"
    with pytest.warns(DeprecationWarning, match=said):
        old = og.reproducer(og.conv_transpose, x, w, data_format="NCX", weights_format="IOX")
    assert old == og.reproducer.reproducer(og.conv_transpose, x, w, data_format="NCX",
                                           weights_format="IOX")


def test_a_name_that_never_was_is_an_attribute_error():
    with pytest.raises(AttributeError, match="has no attribute 'cache_infos'"):
        og.cache_infos  # noqa: B018


def test_the_interpreters_tests_start_fail_on_a_moved_name():
    """tests/conftest.py hands them the rule; without it an example or a README block
    spelling a moved name would only print the warning and pass."""
    result = subprocess.run([sys.executable, "-c", "import onednn_graph as og; og.cpu_isa()"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "DeprecationWarning: onednn_graph.cpu_isa is deprecated" in result.stderr


@pytest.mark.parametrize("name", PUBLIC_MODULES + ["onednn_graph.cli"])
def test_dir_is_all(name):
    module = importlib.import_module(name)
    assert len(set(module.__all__)) == len(module.__all__), "a name is listed twice"
    missing = [n for n in module.__all__ if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ lists names it does not define: {missing}"
    assert dir(module) == sorted(module.__all__)


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_no_public_name_is_the_implementation(name):
    module = importlib.import_module(name)
    for n in module.__all__:
        value = getattr(module, n)
        where = value.__name__ if isinstance(value, types.ModuleType) else getattr(value, "__module__", "")
        assert "._impl" not in (where or ""), f"{name}.{n} is {where}: export it from a public module"


def test_partition_compile_returns_the_exported_class(rng):
    src = og.LogicalTensor(0, "f32", (1, 3, 4, 4))
    w = og.LogicalTensor(1, "f32", (3, 2, 3, 3))
    dst = og.LogicalTensor(2, "f32", (1, 2, 6, 6))
    g = og.Graph()
    g.add_op(og.Op(0, "ConvTranspose", [src, w], [dst], dict(
        strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0], dilations=[1, 1],
        data_format="NCX", weights_format="IOX")))
    g.finalize()
    [partition] = g.get_partitions()
    compiled = partition.compile([src, w], [dst], og.Engine())
    assert isinstance(compiled, og.CompiledPartition)
    assert isinstance(partition, og.Partition)


def test_the_cache_and_the_allocator_have_public_names(rng):
    og.cache.clear_cache()
    x = rng.standard_normal((1, 3, 3, 2)).astype(np.float32)
    w = rng.standard_normal((2, 2, 2, 2)).astype(np.float32)  # XOI
    og.conv_transpose(x, w)
    [op] = og.cache.cached_ops()
    assert op is not None
    og.system.reset_onednn_peak()
    allocations = og.system.onednn_allocations()
    assert set(allocations) == {"current", "peak", "allocations", "cached", "fresh"}
    assert "support" in og.system.capabilities()
