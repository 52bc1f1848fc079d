"""bf16 and f16 ops in f32 between oneDNN TypeCasts (_as_f32): what the package runs
where this CPU's oneDNN has no kernel for the dtype, or only its reference kernel.

Truth: the NumPy reference, with the package's bound for the dtype (a chain rounds
once, like a kernel of that dtype that accumulates in f32), and for exact equality
the f32 op on the same values followed by one rounding. The chain is built directly
where a test must run it on every CPU; which calls take it is the probe's answer on
this machine (_kernels), never a list of what one CPU did.
"""

import threading

import numpy as np
import pytest

import onednn_graph as og
from onednn_graph import shapes
from onednn_graph._impl import (arrays as _arrays, as_f32 as _as_f32, batch_parts as _batch_parts, casts as _casts,
                                compiled as _compiled,
                                kernels as _kernels, lowering as _lowering)
from onednn_graph._tools import support as _support
from onednn_graph._impl.arrays import dtype_name
from onednn_graph._impl import registry
from helpers import assert_matches_reference, random

KINDS = ["ConvTranspose", "ConvTransposeBackwardData", "ConvTransposeBackwardWeights",
         "ConvolutionBackwardData"]
LOW = ["bf16", "f16"]
# (groups, output_padding, dilations): plain; grouped with a folded output_padding;
# depthwise with output_padding >= strides + pads_end (the cropped geometry);
# dilated (ConvTransposeBackwardData then runs as a Convolution).
GEOMETRIES = [(1, 0, 1), (2, 1, 1), ("depthwise", 3, 1), (1, 0, 2)]


def _problem(kind, dtype, data_format, groups=1, output_padding=0, dilations=1):
    if kind == "ConvolutionBackwardData":
        output_padding = 0  # ignored there (test_ops)
    return _support.problem(_support.Case(kind, dtype, data_format=data_format, groups=groups,
                                          output_padding=output_padding, dilations=dilations))


def _native_op(p):
    """What the package hands oneDNN for problem `p`, with the arrays it runs on."""
    shapes_in = [a.shape for a in p.args]
    plan = shapes.plan(p.case.kind, shapes_in, **p.kwargs)
    way = _lowering.lower(plan, shapes_in)
    arrays, out = list(p.args), np.full(p.output_shape, np.nan, p.args[0].dtype)
    index = _lowering.geometry_tensor(p.case.kind) if way.crop else None
    target = out
    if index is not None and index >= 0:
        arrays[index] = _arrays.crop(arrays[index], p.case.data_format, way.crop)
    elif index is not None:
        target = _arrays.crop(out, p.case.data_format, way.crop)
    return way, arrays, out, target


IDS = ["plain", "g2-op1", "dw-op3", "dil2"]
# ConvTranspose's cropped geometry leaves its tail to _impl.call (the bias, written
# without oneDNN; tests/api/test_ops.py): the chain alone does not compute it.
CHAIN_CASES = [pytest.param(kind, geometry, id=f"{kind}-{name}") for kind in KINDS
               for geometry, name in zip(GEOMETRIES, IDS)
               if not (kind == "ConvTranspose" and name == "dw-op3")]


@pytest.mark.parametrize("kind, geometry", CHAIN_CASES)
@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("data_format", ["NCX", "NXC"])
def test_the_chain_computes_every_op(kind, dtype, data_format, geometry):
    """Built directly, so it runs on every CPU, whatever the package would choose."""
    p = _problem(kind, dtype, data_format, *geometry)
    way, arrays, out, target = _native_op(p)
    assert not (way.crop and _lowering.geometry_tensor(kind) < 0)
    chain = _as_f32.ChainOp(way.kind, way.attrs, dtype, [_compiled.meta(a) for a in arrays],
                             _compiled.meta(target), input_order=way.input_order)
    chain.execute(arrays, target)
    # Every op of the chain is a oneDNN partition: casts in, the op in f32, a cast out.
    kinds = [op.kind for op in chain.graph_ops()]
    assert kinds == ["TypeCast"] * len(arrays) + [way.kind, "TypeCast"]
    result = _support._check(p, out)
    assert result.ok, str(result)
    # The native form of the chain (a cached call's) runs the same partitions: equal.
    again = np.full_like(out, np.nan)
    view = _arrays.crop(again, data_format, way.crop) if target is not out else again
    call = chain.direct_call(target.shape, target.dtype)
    assert call.run(_compiled.stream(), arrays, view) is view
    np.testing.assert_array_equal(again, out)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("geometry", GEOMETRIES, ids=IDS)
def test_the_package_takes_the_chain_where_the_probe_finds_no_kernel(kind, dtype, geometry):
    p = _problem(kind, dtype, "NXC", *geometry)
    way, arrays, _, target = _native_op(p)
    og.cache.clear_cache()
    got = getattr(og.ops, registry.function(kind))(*p.args, **p.kwargs)
    [op] = _compiled.CACHE.ops()
    taken = [arrays[i].shape for i in way.input_order] if way.input_order else [a.shape for a in arrays]
    probe = _kernels.for_op(op.kind, op.attrs, dtype, taken, target.shape)
    assert isinstance(op, _as_f32.ChainOp) == (probe.status != "native"), probe
    if isinstance(op, _as_f32.ChainOp):
        assert op.lowering.endswith(f"in f32 between TypeCasts ({op.reason}), "
                                    + _casts.describe(op.chain.converters))
        [prepared] = _compiled.CACHE.values()
        if not way.crop:  # a cropped call needs the Python path (_call.Prepared.run)
            assert isinstance(prepared.direct, og._core.ChainCall)
        assert dtype in op.reason and og.system.cpu_isa() in op.reason
    else:
        assert op.dtype == dtype and "TypeCasts" not in op.lowering
    assert got.dtype == p.args[0].dtype
    result = _support._check(p, got)
    assert result.ok, str(result)


@pytest.mark.parametrize("dtype", LOW)
def test_a_chain_writes_a_strided_out_and_refuses_what_it_cannot_take(rng, dtype):
    x, w = random(rng, (2, 5, 4, 6), dtype), random(rng, (3, 3, 4, 6), dtype)  # NXC, XOI
    out = np.full((2, 11, 9, 4)[::-1], np.nan, x.dtype).T  # Fortran order
    attrs = _lowering.spelled_natively(og._impl.attrs.normalize("ConvTranspose", 2, strides=2))
    chain = _as_f32.ChainOp("ConvTranspose", attrs, dtype, [_compiled.meta(x), _compiled.meta(w)],
                             _compiled.meta(out))
    chain.execute([x, w], out)
    # The same f32 kernel on the same values, then one rounding to nearest (oneDNN's
    # TypeCast, ml_dtypes' and NumPy's astype): equal.
    expected = og.conv_transpose(x.astype(np.float32), w.astype(np.float32), strides=2)
    np.testing.assert_array_equal(out, expected.astype(x.dtype))
    # Through the functional API, chain or native kernel, the checks come first.
    got = og.conv_transpose(x, w, strides=2, out=out)
    assert got is out
    before = out.copy()
    with pytest.raises(ValueError, match="out"):
        og.conv_transpose(x, w, strides=2, out=out[:1])
    with pytest.raises(TypeError, match="weights"):
        og.conv_transpose(x, w.astype(np.float32), strides=2, out=out)
    np.testing.assert_array_equal(out, before)


def _strided(a, rng):
    """`a`'s values in a non-contiguous view: every other element of a larger buffer
    along the last axis (the rest is garbage that must not be read)."""
    buffer = rng.uniform(-9, 9, a.shape[:-1] + (2 * a.shape[-1],)).astype(a.dtype)
    view = buffer[..., ::2]
    view[...] = a
    return view


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("data_format", ["NCX", "NXC"])
def test_a_chain_reads_strided_inputs_and_writes_a_strided_out_where_they_lie(
        rng, kind, dtype, data_format):
    """Every op through the functional API on views (inputs and `out=`) that oneDNN
    cannot take as one dense block: the result agrees with the reference within the
    dtype's bound wherever the op runs; where it runs as the f32 chain it equals the
    f32 op on the same values rounded once (the casts are exact up, one rounding
    down), and the package converts exactly where oneDNN's reorder is not a jit one."""
    p = _problem(kind, dtype, data_format, 2, 1, 1)
    views = [_strided(a, rng) for a in p.args]
    out = _strided(np.zeros(p.output_shape, p.args[0].dtype), rng)
    canary = out.base.copy()
    og.cache.clear_cache()
    got = getattr(og.ops, registry.function(kind))(*views, **p.kwargs, out=out)
    assert got is out
    np.testing.assert_array_equal(out.base[..., 1::2], canary[..., 1::2])  # nothing else written
    result = _support._check(p, np.ascontiguousarray(out))
    assert result.ok, str(result)
    [op] = _compiled.CACHE.ops()
    if not isinstance(op, _as_f32.ChainOp):
        return
    casts = [s for s in op.chain.steps if isinstance(s[0], og._core.Cast)]
    assert len(casts) == sum(c.by_package for c in op.chain.converters)
    # (these tensors are small: the package converts them whatever oneDNN's reorder is)
    assert all(c.by_package for c in op.chain.converters)
    f32 = [a.astype(np.float32) for a in views]
    expected = getattr(og.ops, registry.function(kind))(*f32, **p.kwargs)
    np.testing.assert_array_equal(out, expected.astype(out.dtype))


@pytest.mark.parametrize("kind", ["ConvTranspose", "ConvTransposeBackwardData",
                                  "ConvolutionBackwardData"])
@pytest.mark.parametrize("data_format", ["NCX", "NXC"])
def test_a_chain_runs_its_batch_in_parts(rng, kind, data_format):
    """Built directly with one sample per part (the functional API chooses parts where
    they pay, _batch_parts.chain_rows): the steps compiled for one sample run once per
    sample on views of the caller's arrays, the weights' cast once. Truth: the
    reference within the dtype's bound; the native call equals the Python path."""
    p = _problem(kind, "bf16", data_format, 2, 1, 1)
    way, arrays, out, target = _native_op(p)
    batch = target.shape[0]
    chain = _as_f32.ChainOp(way.kind, way.attrs, "bf16", [_compiled.meta(a) for a in arrays],
                             _compiled.meta(target), input_order=way.input_order, rows=1)
    assert chain.rows == 1 and chain.batched == (way.input_order or (0,))[:1]
    # f32 copies of one sample's data (and of the weights), not of the batch's
    scratch = sum(int(np.prod(chain.chain.layouts[i].shape)) for i in chain.chain.scratch_ids)
    assert scratch < sum(a.size for a in arrays) + target.size
    chain.execute(arrays, target)
    result = _support._check(p, out)
    assert result.ok, str(result)
    again = np.full_like(out, np.nan)
    view = _arrays.crop(again, data_format, way.crop) if target is not out else again
    call = chain.direct_call(target.shape, target.dtype)
    assert call.run(_compiled.stream(), arrays, view) is view
    np.testing.assert_array_equal(again, out)
    # Refused, nothing written: a batch of another size than the result's.
    fresh = np.full_like(view, 7)
    shorter = [a[:batch - 1] if i in chain.batched else a for i, a in enumerate(arrays)]
    assert call.run(_compiled.stream(), shorter, fresh) is None
    assert (fresh.astype(np.float32) == 7).all()
    # A reproducer writes the whole batch's graph, as the call computes it.
    op = [o for o in chain.graph_ops() if o.kind == way.kind][0]
    assert op.outputs[0].shape[0] == batch


def test_a_batch_runs_in_parts_where_the_op_reads_much_and_computes_little(monkeypatch):
    from onednn_graph._impl import version as _version
    monkeypatch.setattr(_version, "l2_cache_bytes", lambda: 2 << 20)
    dy, w, dx = (8, 64, 64, 64), (4, 4, 1, 64), (8, 32, 32, 64)  # depthwise, NXC: 1 MiB per sample
    flops = 2 * 8 * 64 * 1 * 16 * 32 * 32
    assert _batch_parts.chain_rows("ConvTransposeBackwardData", [dy, w], dx, flops) == 1
    assert _batch_parts.chain_rows("Convolution", [dy, w], dx, flops) == 1
    monkeypatch.setattr(_version, "l2_cache_bytes", lambda: 8 << 20)
    assert _batch_parts.chain_rows("ConvTransposeBackwardData", [dy, w], dx, flops) == 4
    # Not where the result is the larger tensor, the op computes enough per byte, the
    # result sums over the batch, or one part is the whole batch.
    assert _batch_parts.chain_rows("ConvTranspose", [dx, w], dy, flops) == 0
    assert _batch_parts.chain_rows("ConvTransposeBackwardData", [dy, w], dx, 1000 * flops) == 0
    assert _batch_parts.chain_rows("ConvTransposeBackwardWeights", [dx, dy], w, flops) == 0
    assert _batch_parts.chain_rows("ConvTransposeBackwardData", [(1,) + dy[1:], w], (1,) + dx[1:],
                              flops // 8) == 0
    monkeypatch.setattr(_version, "l2_cache_bytes", lambda: 64 << 20)
    assert _batch_parts.chain_rows("ConvTransposeBackwardData", [dy, w], dx, flops) == 0


def test_a_cached_chain_is_one_native_call_on_buffers_kept_per_thread(rng):
    """_core.ChainCall, built directly so that it runs on every CPU: one set of f32
    buffers per calling thread, made on its first call; results equal the Python
    form's; anything it cannot take is refused (None) before any step runs."""
    x, w = random(rng, (2, 5, 4, 6), "bf16"), random(rng, (3, 3, 4, 6), "bf16")  # NXC, XOI
    attrs = _lowering.spelled_natively(og._impl.attrs.normalize("ConvTranspose", 2, strides=2))
    shape = (2, 11, 9, 4)
    chain = _as_f32.ChainOp("ConvTranspose", attrs, "bf16", [_compiled.meta(x), _compiled.meta(w)],
                             (shape, _as_f32.dense_strides(shape)))
    expected = np.empty(shape, x.dtype)
    chain.execute([x, w], expected)
    call = chain.direct_call(shape, x.dtype)
    stream = _compiled.stream()
    results = [call.run(stream, (x, w), None) for _ in range(3)]
    assert call.threads_with_buffers == 1  # made once, reused by the later calls
    for got in results:
        np.testing.assert_array_equal(got, expected)
    assert len({id(r) for r in results}) == 3  # each call returns a new result
    other = []
    thread = threading.Thread(target=lambda: other.append(call.run(stream, (x, w), None)))
    thread.start()
    thread.join()
    assert call.threads_with_buffers == 2
    np.testing.assert_array_equal(other[0], expected)
    out = np.full(shape, 7, x.dtype)
    # Refused, nothing written: a wrong shape, a wrong dtype, a torch-like object,
    # an out that shares memory with an input, another number of arrays.
    assert call.run(stream, (x[:1], w), out) is None
    assert call.run(stream, (x.astype(np.float32), w), out) is None
    assert call.run(stream, (memoryview(x.view(np.uint16)), w), out) is None
    overlapping = np.zeros(x.size + w.size + int(np.prod(shape)), x.dtype)
    x2 = overlapping[:x.size].reshape(x.shape)
    x2[...] = x
    assert call.run(stream, (x2, w), overlapping[:int(np.prod(shape))].reshape(shape)) is None
    assert call.run(stream, (x,), out) is None
    assert (out == 7).all()
    assert call.run(stream, [x, w], out) is out
    np.testing.assert_array_equal(out, expected)


def test_constant_weights_are_cast_once(rng):
    x, w = random(rng, (1, 4, 4, 3), "f16"), random(rng, (2, 2, 5, 3), "f16")
    attrs = _lowering.spelled_natively(og._impl.attrs.normalize("ConvTranspose", 2, strides=2))
    out = np.empty((1, 8, 8, 5), np.float16)
    chain = _as_f32.ChainOp("ConvTranspose", attrs, "f16", [_compiled.meta(x), _compiled.meta(w)],
                             _compiled.meta(out), constants={1: w})
    # The cast of the weights ran when the chain was built: only x's cast, the op
    # and the cast back run per call.
    assert len(chain.chain.steps) == 3
    expected = og.conv_transpose(x, w, strides=2)
    w[...] = 0  # the chain owns its weights (and their f32 copy)
    chain.execute([x, chain.constants[1]], out)
    np.testing.assert_array_equal(out, expected)
    # compile_op does the same, whichever form this CPU runs f16 in.
    op = og.compile_op("ConvTranspose", src=x, weights=random(rng, w.shape, "f16"), strides=2,
                       constant_weights=True)
    assert op.weights.dtype == np.float16 and not op.weights.flags.writeable
    np.testing.assert_array_equal(op(x), og.conv_transpose(x, op.weights, strides=2))


@pytest.mark.parametrize("dtype", LOW)
def test_the_reproducer_writes_what_runs(rng, dtype):
    x, w = random(rng, (1, 4, 4, 3), dtype), random(rng, (2, 2, 5, 3), dtype)
    r = og.reproducer.reproducer(og.conv_transpose, x, w, strides=2)
    assert [op["kind"] for op in r.spec["graph"]] == ["ConvTranspose"]
    op = og.compile_op("ConvTranspose", src=x, weights=w, strides=2)
    assert og.reproducer.reproducer(op).native == r.native
    ops = r.native["graph"]
    runs = op._prepared.op.kind  # ConvolutionBackwardData for a tiny one (_lowering.TINY_FLOPS)
    if not isinstance(op._prepared.op, _as_f32.ChainOp):
        assert [o["kind"] for o in ops] == [runs]
        return
    assert [o["kind"] for o in ops] == ["TypeCast", "TypeCast", runs, "TypeCast"]
    # Each TypeCast's output feeds the f32 op; the last one writes the result.
    f32_in = [t["id"] for t in ops[2]["inputs"]]
    assert f32_in == [ops[0]["outputs"][0]["id"], ops[1]["outputs"][0]["id"]]
    assert ops[3]["inputs"][0]["id"] == ops[2]["outputs"][0]["id"]
    assert [t["dtype"] for t in ops[2]["inputs"]] == ["f32", "f32"]
    assert ops[3]["outputs"][0]["dtype"] == dtype
    g = og.load_graph(r.native)
    assert [o.kind for o in g.ops] == ["TypeCast", "TypeCast", runs, "TypeCast"]


def test_a_chain_tunes_like_any_op():
    """tune=True times every formulation, each in the form this CPU runs it in."""
    p = _problem("ConvTransposeBackwardData", "bf16", "NCX")
    dy, w = p.args
    op = og.compile_op("ConvTransposeBackwardData", diff_dst=dy, weights=w, tune=True, **p.kwargs)
    assert op.tuning is not None and op.lowering in op.tuning
    assert ("TypeCasts" in op.lowering) == isinstance(op._prepared.op, _as_f32.ChainOp)
    got = op(dy, w)
    assert dtype_name(got.dtype) == "bf16"
    result = _support._check(p, got)
    assert result.ok, str(result)


# (kind, groups, dtype, MFLOP, oneDNN ISA, oneDNN version, runs as the f32 chain): the
# rule of _kernels.faster_in_f32 for an op oneDNN has an optimized kernel for.
FASTER_IN_F32 = [
    # "most" (Sapphire Rapids without AMX; bf16 emulated below avx512_core_bf16)
    ("ConvTranspose", 1, "NCX", "bf16", 16, "avx512_core_fp16", (3, 2), True),
    ("ConvTransposeBackwardData", 1, "NXC", "f16", 16, "avx512_core_fp16", (3, 2), True),
    ("ConvTransposeBackwardWeights", 1, "NCX", "bf16", 16, "avx512_core", (3, 2), True),
    ("ConvTranspose", 64, "NXC", "bf16", 16, "avx512_core_vnni", (3, 2), True),  # depthwise: 13-16x
    ("ConvTransposeBackwardData", 64, "NCX", "bf16", 16, "avx512_core_fp16", (3, 2), False),
    ("ConvTransposeBackwardWeights", 2, "NCX", "bf16", 16, "avx512_core", (3, 2), False),
    ("ConvolutionBackwardWeights", 1, "NXC", "bf16", 0.01, "avx512_core", (3, 2), True),
    ("ConvTranspose", 1, "NXC", "bf16", 0.01, "avx512_core_fp16", (3, 2), False),  # tiny
    # "grouped" (AMD Zen 4: oneDNN's bf16 kernels about half the f32 time)
    ("ConvTranspose", 1, "NCX", "bf16", 16, "avx512_core_bf16", (3, 2), False),  # 0.45-0.71x
    ("ConvTranspose", 64, "NXC", "bf16", 16, "avx512_core_bf16", (3, 2), True),  # depthwise 18-20x
    ("ConvolutionBackwardData", 64, "NCX", "bf16", 16, "avx512_core_bf16", (3, 2), True),  # 20-21x
    ("ConvTransposeBackwardData", 64, "NCX", "bf16", 16, "avx512_core_bf16", (3, 2), False),
    ("ConvTranspose", 64, "NXC", "bf16", 0.5, "avx512_core_bf16", (3, 2), False),  # under 1 MFLOP
    ("ConvTransposeBackwardWeights", 64, "NXC", "bf16", 16, "avx512_core_bf16", (3, 2), True),
    ("ConvTransposeBackwardWeights", 1, "NXC", "bf16", 16, "avx512_core_bf16", (3, 2), False),
    ("ConvTransposeBackwardWeights", 1, "NXC", "bf16", 0.01, "avx512_core_bf16", (3, 2), True),  # tiny
    ("ConvTransposeBackwardWeights", 2, "NCX", "bf16", 16, "avx512_core_bf16", (3, 2), False),
    # elsewhere: oneDNN's kernel
    ("ConvTranspose", 1, "NXC", "bf16", 16, "avx512_core_amx", (3, 2), False),  # AMX: not measured
    ("ConvTranspose", 1, "NXC", "bf16", 16, "avx512_core_fp16", (3, 13), False),  # another oneDNN
    ("ConvTranspose", 1, "NXC", "f32", 16, "avx512_core_fp16", (3, 2), False),
]


@pytest.mark.parametrize("isa", ["avx512_core_bf16", "avx512_core_fp16"])
@pytest.mark.parametrize("strides, mflop, chain", [((1, 1), 16, True), ((2, 1), 16, False),
                                                   ((1, 1), 0.5, False)])
def test_a_stride_1_conv_transpose_with_bias_runs_as_the_chain(strides, mflop, chain, isa):
    # oneDNN 3.2 adds such a bias in a loop of its own (3.6-12x the bias-less time in bf16
    # on a Zen 4); other strides fuse it (brgconv_strided); the Zen 4 rule ("grouped")
    # otherwise keeps oneDNN's bf16 kernel for groups = 1
    native = _kernels.Kernel("native", "conv:any+jit_bf16:" + isa)
    attrs = dict(groups=1, data_format="NCX", strides=list(strides))
    got = _kernels.faster_in_f32(native, "ConvTranspose", attrs, "bf16", int(mflop * 1e6), isa,
                                 (3, 2), bias=True)
    assert got == (chain or isa == "avx512_core_fp16" and mflop >= 1)
    assert not _kernels.faster_in_f32(native, "ConvTranspose", attrs, "bf16", int(mflop * 1e6),
                                      "avx512_core_bf16", (3, 2), bias=False)
    assert not _kernels.faster_in_f32(native, "ConvTranspose", attrs, "bf16", 16_000_000,
                                      "avx512_core_amx", (3, 2), bias=True)  # not measured


@pytest.mark.parametrize("kind, groups, data_format, dtype, mflop, isa, version, chain", FASTER_IN_F32)
def test_where_oneDNN_s_own_low_precision_kernel_is_slower_than_the_chain(
        kind, groups, data_format, dtype, mflop, isa, version, chain):
    """The rule table, for any CPU and version (measured: _kernels.faster_in_f32)."""
    native = _kernels.Kernel("native", "brg_conv:" + isa)
    flops, attrs = int(mflop * 1e6), dict(groups=groups, data_format=data_format)
    assert _kernels.faster_in_f32(native, kind, attrs, dtype, flops, isa, version) == chain
    # A missing or reference kernel is another rule (needs_f32), never this one.
    for other in ("none", "reference"):
        assert not _kernels.faster_in_f32(_kernels.Kernel(other, ""), kind, attrs, dtype, flops,
                                          isa, version)


@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("kind", KINDS)
def test_a_problem_runs_as_the_rule_says_here_and_tuning_measures_both_forms(rng, kind, dtype):
    """A 5-MFLOP problem (above F32_FROM_FLOPS): the chain exactly where this CPU's
    oneDNN has no kernel (or a reference one), or the rule finds its kernel slower;
    tune=True times oneDNN's own kernel and the chain wherever both exist and keeps
    what it measured faster (stored in the tuning database). Truth: the reference."""
    # NXC, 16 -> 16 channels, 16x16 positions, a 3x2 kernel, stride 2: 2.4 MFLOP
    x_shape, w_shape = (2, 16, 16, 16), (3, 2, 16, 16)
    kw = dict(strides=2, pads_begin=1, pads_end=0, data_format="NXC")
    x, w = random(rng, x_shape, dtype), random(rng, w_shape, dtype)
    y_shape = og.output_shape("ConvTranspose", [x_shape, w_shape], **kw)
    y = random(rng, y_shape, dtype)
    call = {"ConvTranspose": (og.conv_transpose, (x, w), {}),
            "ConvTransposeBackwardData": (og.conv_transpose_backward_data, (y, w), {}),
            "ConvTransposeBackwardWeights": (og.conv_transpose_backward_weights, (x, y),
                                             dict(weights_shape=w_shape)),
            "ConvolutionBackwardData": (og.convolution_backward_data, (x, w.transpose(0, 1, 3, 2)),
                                        dict(dst_shape=y_shape, weights_format="XIO"))}[kind]
    fn, args, extra = call
    og.cache.clear_cache()
    got = fn(*args, **kw, **extra)
    [op] = _compiled.CACHE.ops()
    taken = [a.shape for a in args]
    probe = _kernels.for_op(op.kind, op.attrs, dtype, [taken[i] for i in op.input_order]
                            if getattr(op, "input_order", ()) else taken, got.shape)
    flops = 2 * 2 * 16 * 16 * 3 * 2 * 16 * 16
    expected = probe.status != "native" or _kernels.faster_in_f32(
        probe, op.kind, op.attrs, dtype, flops)
    assert isinstance(op, _as_f32.ChainOp) == expected, (op.lowering, probe)
    if expected and probe.status == "native":
        assert "faster than" in op.lowering
    ref = getattr(og.reference, registry.function(kind))
    terms = 16 * 3 * 2 if kind != "ConvTransposeBackwardWeights" else 2 * 16 * 16
    assert_matches_reference(got, ref, args, dict(kw, **extra), dtype, terms)
    inputs = dict(zip(registry.input_names(kind), args))
    tuned = og.compile_op(kind, **inputs, **kw, **extra, tune=True)
    if probe.status == "native":  # both forms exist: both were timed
        assert any("TypeCasts" in label for label in tuned.tuning), tuned.tuning
        assert any("TypeCasts" not in label for label in tuned.tuning), tuned.tuning
    assert_matches_reference(tuned(*args), ref, args, dict(kw, **extra), dtype, terms)
    # The decision replays from the tuning database in the form it measured.
    again = og.compile_op(kind, **inputs, **kw, **extra, tune=True)
    assert isinstance(again._prepared.op, _as_f32.ChainOp) == \
        isinstance(tuned._prepared.op, _as_f32.ChainOp)
    assert again.lowering == tuned.lowering
