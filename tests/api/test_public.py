"""The public surface: what ``import onednn_graph`` offers is what it says it offers.

Truth: each module's ``__all__``. Every name in it exists, ``dir()`` shows exactly
those names, no public name is an implementation module, the objects a user is
handed are the classes the package exports, and what the docs once reached
through private objects has a public name.
"""

import importlib
import types

import numpy as np
import pytest

import onednn_graph as og

PUBLIC_MODULES = ["onednn_graph"] + [f"onednn_graph.{m}" for m in og.__all__
                                     if isinstance(getattr(og, m), types.ModuleType)]


@pytest.mark.parametrize("name", PUBLIC_MODULES + ["onednn_graph.reproducer", "onednn_graph.cli"])
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
    og.clear_cache()
    x = rng.standard_normal((1, 3, 3, 2)).astype(np.float32)
    w = rng.standard_normal((2, 2, 2, 2)).astype(np.float32)  # XOI
    og.conv_transpose(x, w)
    [op] = og.cached_ops()
    assert op is not None
    og.reset_onednn_peak()
    allocations = og.onednn_allocations()
    assert set(allocations) == {"current", "peak", "allocations", "cached", "fresh"}
    assert "support" in og.capabilities()
