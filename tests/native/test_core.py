"""The bound objects of onednn_graph._core and the low-level Python layer."""

import os
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import onednn_graph as og
from onednn_graph import _core
from onednn_graph._impl import arrays as _arrays, kernels as _kernels
from helpers import NUMPY, UNDER_ASAN, assert_matches_reference, random

CONV_ATTRS = {"strides": [2, 2], "pads_begin": [0, 0], "pads_end": [0, 0],
              "dilations": [1, 1]}


def test_version_and_isa():
    v = og.system.onednn_version()
    assert (v.major, v.minor) >= (3, 2)
    # The CPU runtimes oneDNN builds with; PyPI's onednn 2026.x runs the CPU through SYCL.
    assert v.cpu_runtime in {"omp", "tbb", "seq", "threadpool", "sycl"}
    assert len(v.hash) == 40
    assert og.system.cpu_isa() != "default"


def test_engine_and_stream():
    e = og.Engine("cpu", index=0)
    assert e.kind == "cpu"
    og.Stream(e).wait()
    with pytest.raises(ValueError, match="index"):
        og.Engine("cpu", index=5)
    with pytest.raises(ValueError, match="engine kind"):
        og.Engine("tpu")


def test_onednn_allocations_are_counted_and_given_back(rng):
    """oneDNN takes its scratchpad through the engine's allocator: an NCX
    ConvTranspose (run by 3.2 on channels-last copies) needs one during the call,
    and gives it back after. Truth: the byte counts of the counting allocator."""
    x, w = random(rng, (2, 16, 8, 8), "f32"), random(rng, (16, 8, 2, 2), "f32")
    kwargs = dict(strides=2, data_format="NCX", weights_format="IOX")
    og.conv_transpose(x, w, **kwargs)  # compiled, cached
    _core.reset_onednn_peak()
    before = _core.onednn_allocations()
    assert before["peak"] == before["current"]
    og.conv_transpose(x, w, **kwargs)
    after = _core.onednn_allocations()
    assert after["allocations"] > before["allocations"]
    assert after["peak"] - before["current"] >= x.nbytes  # at least the reordered src
    assert after["current"] == before["current"]  # the scratchpad was freed


_REPEATED_CALLS = """
import resource, numpy as np, onednn_graph as og
from onednn_graph import _core
rng = np.random.default_rng(0)
x, w = rng.standard_normal({x}, np.float32), rng.standard_normal({w}, np.float32)
kw = dict(strides=2, data_format="NCX", weights_format="IOX")
out = og.conv_transpose(x, w, **kw)
for _ in range(3):
    og.conv_transpose(x, w, **kw, out=out)
before = _core.onednn_allocations()
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range({calls}):
    og.conv_transpose(x, w, **kw, out=out)
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
after = _core.onednn_allocations()
print(after["allocations"] - before["allocations"], after["peak"] - before["current"],
      after["fresh"] - before["fresh"], faults)
"""


def _repeated_calls(x: tuple, w: tuple, calls: int, env: dict | None = None) -> list[int]:
    """In a process of its own, an NCX ConvTranspose (stride 2) on `x` and `w` called
    `calls` times after its first calls: (oneDNN's allocations, its scratchpad's bytes,
    the allocations that took new memory, the process's page faults)."""
    code = _REPEATED_CALLS.format(x=x, w=w, calls=calls)
    return [int(v) for v in subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                           env={**os.environ, **(env or {})}, timeout=300, check=True).stdout.split()]


def test_a_repeated_call_takes_no_new_memory():
    """After its first calls, a call's scratchpad comes from memory oneDNN had before:
    no allocation takes new memory (`fresh`: the package's block cache,
    cpp/allocator.hpp), and the process faults almost no pages. A 1x64x32x32 NCX
    ConvTranspose, whose blocked copies (a scratchpad of 0.5 MB and more) would fault
    over 100 pages per call if their memory were new; the bound, 10 per call, leaves room
    for NumPy's own result pages, of which `out=` has none."""
    allocations, _, fresh, faults = _repeated_calls((1, 64, 32, 32), (64, 32, 2, 2), 20)
    assert allocations > 0 and fresh == 0  # it does use a scratchpad, from kept blocks
    assert faults <= 20 * 10, f"{faults} page faults in 20 calls"


def test_a_large_scratchpad_is_kept_for_the_next_call():
    """Scratchpads past glibc's mmap threshold (32 MB at most) are fresh pages on every
    call unless the package keeps the freed block (ONEDNN_GRAPH_CACHE_BYTES=0 keeps
    nothing): a 2x64x256x256 NCX ConvTranspose, whose blocked copies take about 100 MB,
    faults no page on its repeated calls with the cache and thousands a call without
    (16 thousand on a Zen 4: 64 MB of 4 KiB pages)."""
    _, scratch, fresh, faults = _repeated_calls((2, 64, 256, 256), (64, 16, 2, 2), 5)
    assert scratch > 32 << 20 and fresh == 0 and faults < 5 * 100, (scratch, fresh, faults)
    _, _, fresh, faults = _repeated_calls((2, 64, 256, 256), (64, 16, 2, 2), 5, {"ONEDNN_GRAPH_CACHE_BYTES": "0"})
    assert fresh >= 5 and faults > 5 * 1000, (fresh, faults)


_FILL_THEN_SMALL = """
import numpy as np, onednn_graph as og
from onednn_graph import _core
rng = np.random.default_rng(0)
big = dict(strides=2, pads_begin=1, pads_end=1, data_format="NCX", weights_format="IOX")
x, w = rng.standard_normal((4, 1024, 8, 8), np.float32), rng.standard_normal((1024, 256, 4, 4), np.float32)
for _ in range(2):
    og.conv_transpose(x, w, **big)
small = dict(strides=2, data_format="NCX", weights_format="IOX")
x, w = rng.standard_normal((1, 64, 32, 32), np.float32), rng.standard_normal((64, 32, 2, 2), np.float32)
out = og.conv_transpose(x, w, **small)
for _ in range(3):
    og.conv_transpose(x, w, **small, out=out)
before = _core.onednn_allocations()
for _ in range(20):
    og.conv_transpose(x, w, **small, out=out)
after = _core.onednn_allocations()
print(before["cached"], after["fresh"] - before["fresh"])
"""


def test_a_full_block_cache_makes_room():
    """Where the kept blocks fill the cache (its limit set to what a wide
    layer's executions leave), a later execution's freed scratchpad gives back the
    largest kept blocks: its next executions reuse it (each took fresh memory before,
    once a 1024-channel layer had run: test_a_repeated_call_takes_no_new_memory after
    the wide-channel sweep)."""
    run = lambda env: subprocess.run([sys.executable, "-c", _FILL_THEN_SMALL], capture_output=True,
                                     text=True, env={**os.environ, **env}, timeout=300, check=True).stdout
    cached = int(run({}).split()[0])
    assert cached > 0
    _, fresh = run({"ONEDNN_GRAPH_CACHE_BYTES": str(cached - 1)}).split()  # full: no room
    assert int(fresh) == 0


@pytest.mark.parametrize("layout", ["strided", "any"])
@pytest.mark.parametrize("prop", ["variable", "constant"])
def test_logical_tensor_fields_round_trip(layout, prop):
    lt = og.LogicalTensor(7, "bf16", (2, 3, 4), layout=layout, property=prop)
    assert (lt.id, lt.dtype, lt.shape, lt.layout, lt.property) == (7, "bf16", (2, 3, 4), layout, prop)
    if layout == "strided":
        assert lt.strides == (12, 4, 1)
        assert lt.nbytes == 2 * 24
    else:
        assert lt.strides is None


def test_logical_tensor_strides_unknown_rank_and_dims():
    lt = og.LogicalTensor(1, np.float32, (2, 3), strides=(1, 2))
    assert lt.strides == (1, 2) and lt.dtype == "f32"
    unknown = og.LogicalTensor(2, "f16", None)
    assert unknown.shape is None and unknown.ndim == -1
    dims = og.LogicalTensor(3, ml_dtypes.bfloat16, (-1, 4))
    assert dims.shape == (-1, 4) and dims.dtype == "bf16"
    with pytest.raises(ValueError, match="strides must have one entry per dimension"):
        og.LogicalTensor(4, "f32", (2, 3), strides=(1,))
    with pytest.raises(ValueError, match="layout"):
        og.LogicalTensor(4, "f32", (2, 3), layout="opaque")
    with pytest.raises(ValueError, match="property"):
        og.LogicalTensor(4, "f32", (2, 3), property="mutable")


@pytest.mark.parametrize("name, np_type", [("f32", np.float32), ("bf16", ml_dtypes.bfloat16),
                                           ("f16", np.float16), ("s32", np.int32)])
def test_dtype_mapping_both_ways(name, np_type):
    assert _arrays.dtype_name(np_type) == name
    assert _arrays.dtype_name(np.dtype(np_type)) == name
    assert _arrays.numpy_dtype(name) == np.dtype(np_type)
    assert og.LogicalTensor(0, np_type, (1,)).dtype == name


@pytest.mark.parametrize("bad", [np.float64, np.int64, object, np.dtype(">f4"), "f64"])
def test_unsupported_dtype_is_type_error_listing_supported(bad):
    with pytest.raises(TypeError, match="supported: f32"):
        _arrays.dtype_name(bad)
    with pytest.raises(TypeError, match="supported"):
        og.LogicalTensor(0, bad, (1,))


def _single_conv_transpose(dtype, data_format, x_shape, w_shape, out_id=2):
    src = og.LogicalTensor(0, dtype, x_shape)
    weights = og.LogicalTensor(1, dtype, w_shape)
    dst = og.LogicalTensor(out_id, dtype, None)
    op = og.Op(0, "ConvTranspose", [src, weights], [dst],
               dict(CONV_ATTRS, data_format=data_format, weights_format="XOI"))
    graph = og.Graph()
    graph.add_op(op)
    graph.finalize()
    [partition] = graph.get_partitions()
    # Without a kernel for the dtype on this CPU, oneDNN 3.13 says so here (3.2 when
    # compiling); either way the package compiles it (in f32 between TypeCasts).
    x_lt = [src.shape, weights.shape]
    attrs = dict(CONV_ATTRS, auto_pad="None", groups=1, data_format=data_format, weights_format="XOI")
    out_shape = og.shapes.output_shape("ConvTranspose", x_lt, **CONV_ATTRS, data_format=data_format,
                                       weights_format="XOI")
    no_kernel = _kernels.needs_f32("ConvTranspose", attrs, dtype, x_lt, out_shape)
    assert partition.is_supported or (no_kernel
                                      and tuple(og.system.onednn_version()[:2]) >= (3, 13))
    assert partition.op_ids == [0]
    assert [lt.id for lt in partition.input_ports] == [0, 1]
    assert [lt.id for lt in partition.output_ports] == [out_id]
    engine = og.Engine()
    return src, weights, partition.compile([src, weights], [dst], engine), engine


@pytest.mark.parametrize("data_format", ["NCX", "NXC"])
def test_conv_transpose_graph_matches_numpy(rng, dtype, data_format):
    x_shape = (2, 6, 5, 4) if data_format == "NCX" else (2, 5, 4, 6)
    x = random(rng, x_shape, dtype)
    w = random(rng, (3, 3, 4, 6), dtype)  # XOI: (kh, kw, C_out, C_in)
    src, weights, compiled, engine = _single_conv_transpose(dtype, data_format, x.shape, w.shape)
    dst = compiled.query_logical_tensor(2)
    y = np.full(dst.shape, np.nan, NUMPY[dtype])
    compiled.execute(og.Stream(engine), [og.Tensor(src, engine, x), og.Tensor(weights, engine, w)],
                     [og.Tensor(dst, engine, y)])
    # 6 input channels x 9 taps: at most 54 products per output element.
    assert_matches_reference(y, og.reference.conv_transpose, (x, w),
                             dict(strides=2, data_format=data_format), dtype, terms=54)


def test_zero_copy_buffers(rng):
    x = random(rng, (1, 2, 3, 3), "f32")
    w = random(rng, (3, 3, 4, 2), "f32")
    src, weights, compiled, engine = _single_conv_transpose("f32", "NCX", x.shape, w.shape)
    dst = compiled.query_logical_tensor(2)
    y = np.zeros(dst.shape, np.float32)
    tx, ty = og.Tensor(src, engine, x), og.Tensor(dst, engine, y)
    # The tensor's view is the caller's memory, not a copy ...
    assert np.shares_memory(tx.numpy(), x) and tx.array is x
    compiled.execute(og.Stream(engine), [tx, og.Tensor(weights, engine, w)], [ty])
    # ... and oneDNN wrote straight into the caller's output array.
    assert np.abs(y).sum() > 0 and np.shares_memory(ty.numpy(), y)
    view = ty.numpy()
    del ty
    assert view.base is not None and view.sum() == y.sum()  # the view keeps the buffer alive


def test_tensor_rejects_mismatched_arrays():
    e = og.Engine()
    lt = og.LogicalTensor(0, "f32", (2, 3))
    with pytest.raises(TypeError, match="dtype float64 does not match"):
        og.Tensor(lt, e, np.zeros((2, 3), np.float64))
    with pytest.raises(ValueError, match="shape"):
        og.Tensor(lt, e, np.zeros((3, 2), np.float32))
    with pytest.raises(ValueError, match="strides"):
        og.Tensor(lt, e, np.zeros((3, 2), np.float32).T)
    with pytest.raises(ValueError, match="unknown"):
        og.Tensor(og.LogicalTensor(1, "f32", None), e, np.zeros(3, np.float32))


def test_execute_refuses_read_only_output_and_leaves_inputs(rng):
    x = random(rng, (1, 2, 3, 3), "f32")
    w = random(rng, (3, 3, 4, 2), "f32")
    src, weights, compiled, engine = _single_conv_transpose("f32", "NCX", x.shape, w.shape)
    dst = compiled.query_logical_tensor(2)
    y = np.zeros(dst.shape, np.float32)
    y.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        compiled.execute(og.Stream(engine), [og.Tensor(src, engine, x), og.Tensor(weights, engine, w)],
                         [og.Tensor(dst, engine, y)])
    assert not y.any()
    with pytest.raises(ValueError, match="expected 2 input"):
        compiled.execute(og.Stream(engine), [og.Tensor(src, engine, x)],
                         [og.Tensor(dst, engine, np.zeros(dst.shape, np.float32))])


def test_op_attrs_round_trip_and_schema():
    x, w, y = (og.LogicalTensor(i, "f32", None) for i in range(3))
    op = og.Op(3, "ConvTranspose", [x, w], [y], dict(CONV_ATTRS, auto_pad="SAME_UPPER", groups=2),
               name="up")
    assert (op.id, op.kind, op.name) == (3, "ConvTranspose", "up")
    assert op.attrs == dict(CONV_ATTRS, auto_pad="same_upper", groups=2)
    with pytest.raises(ValueError, match="unknown attribute 'stride'"):
        og.Op(0, "ConvTranspose", [x, w], [y], dict(CONV_ATTRS, stride=[1, 1]))
    with pytest.raises(ValueError, match="missing required attribute.*dilations"):
        og.Op(0, "ConvTranspose", [x, w], [y], {"strides": [1], "pads_begin": [0], "pads_end": [0]})
    with pytest.raises(TypeError, match="groups must be an int, got bool"):
        og.Op(0, "ConvTranspose", [x, w], [y], dict(CONV_ATTRS, groups=True))
    with pytest.raises(TypeError, match="strides must be a list of ints, got str"):
        og.Op(0, "ConvTranspose", [x, w], [y], dict(CONV_ATTRS, strides="22"))
    with pytest.raises(ValueError, match="auto_pad must be one of"):
        og.Op(0, "ConvTranspose", [x, w], [y], dict(CONV_ATTRS, auto_pad="same"))


def test_unknown_op_kind_and_attribute():
    x, y = og.LogicalTensor(0, "f32", None), og.LogicalTensor(1, "f32", None)
    with pytest.raises(ValueError, match="unknown op kind 'Deconv'"):
        og.Op(0, "Deconv", [x], [y])
    with pytest.raises(ValueError, match="unknown attribute 'beta2'"):
        og.Op(0, "ReLU", [x], [y], {"beta2": 1.0})
    with pytest.raises(TypeError, match="'alpha' must be a float"):
        _core.Op(0, "LeakyReLU", [x], [y], {"alpha": "0.1"})
    assert _core.Op(0, "LeakyReLU", [x], [y], {"alpha": 0.25}).attrs == {"alpha": 0.25}


def test_onednn_errors_carry_status():
    # A ConvTranspose whose weights cannot fit its src: oneDNN refuses it.
    x = og.LogicalTensor(0, "f32", (1, 2, 3, 3))
    w = og.LogicalTensor(1, "f32", (3, 3, 2, 4))  # C_in axis 4 != src channels 2
    y = og.LogicalTensor(2, "f32", None)
    graph = _core.Graph()
    graph.add_op(_core.Op(0, "ConvTranspose", [x, w], [y], dict(CONV_ATTRS, data_format="NCX")))
    graph.finalize()
    [p] = graph.get_partitions()
    with pytest.raises(og.Error) as info:
        p.compile([x, w], [y], og.Engine())
    assert info.value.status in {"invalid_shape", "invalid_arguments"}
    assert "oneDNN status" in str(info.value) and isinstance(info.value, RuntimeError)


@pytest.mark.skipif(UNDER_ASAN, reason="the bare environment drops LD_PRELOAD, and ASan must be loaded first")
def test_import_from_any_directory_without_library_path(tmp_path):
    # Nothing of this environment but oneDNN's own settings (an ISA cap changes cpu_isa()).
    env = {"PATH": "/usr/bin:/bin", **{k: v for k, v in os.environ.items() if k.startswith("ONEDNN_")}}
    code = "import onednn_graph as og; print(og.system.cpu_isa())"
    out = subprocess.run([sys.executable, "-c", code],
                         cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == og.system.cpu_isa()
