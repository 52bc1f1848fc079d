"""Few output channels as a Convolution computing several output positions per channel
(``_impl.packed_form``): against the float64 reference on every weights format, rank,
pad and layout it takes; when the rules choose it; that its reproducer replays; and
that a dtype it does not run falls back to the op as written.

Each output is the same sum of the same products as the op's (the extra kernel
taps are zeros the package wrote, which add exact zeros), so the op's f32 bound
(``tolerance``) holds.
"""

import dataclasses
import itertools

import numpy as np
import pytest

import onednn_graph as og
from onednn_graph import shapes
from onednn_graph._impl import (call as _call, compiled as _compiled, lowering as _lowering,
                                plan as _plan, registry as _registry)
from onednn_graph._tools import runner as _runner
from onednn_graph._impl.registry import input_names
from helpers import assert_call_matches_reference, random

CT, CBD = "ConvTranspose", "ConvolutionBackwardData"


def _problem(rng, kind, fmt, wfmt, rank, kernel, pads, channels, bias=False, batch=2,
             spatial=(7, 6, 5), dtype="f32"):
    pb, pe = pads
    x = spatial[:rank]
    y = tuple(v - 1 + kernel - pb - pe for v in x)
    small = shapes.data_shape_for(fmt, batch, 4, x)
    big = shapes.data_shape_for(fmt, batch, channels, y)
    attrs = og._impl.attrs.normalize(kind, rank, weights_format=wfmt)
    k = (kernel,) * rank
    w_shape = shapes.weights_shape_for(attrs, 4, channels, k) if kind == CT else \
        shapes.weights_shape_for(attrs, channels, 4, k)
    kw = dict(strides=1, pads_begin=pb, pads_end=pe, data_format=fmt, weights_format=wfmt)
    arrays = [random(rng, small, dtype), random(rng, w_shape, dtype)]
    if bias:
        arrays.append(random(rng, (channels,), dtype))
    if kind == CBD:
        kw["dst_shape"] = big
    return arrays, kw




def _packed(kind, arrays, kw, out_meta=None, dtype="f32"):
    cp = _plan.plan_call(kind, input_names(kind)[:len(arrays)], arrays, dict(kw))
    way = _lowering.packed_way(cp.plan, cp.input_shapes, cp.native)
    assert way is not None and _lowering.formed(way) == "packed"
    return cp, _call.prepare(dataclasses.replace(cp, way=way), arrays, out_meta)




PADS = [(3, (1, 1)), (3, (0, 2)), (2, (0, 0)), (4, (3, 0)), (1, (0, 0))]


@pytest.mark.parametrize("kind,wfmt", [(k, f) for k in (CT, CBD) for f in _registry.SPECS[k].weights_formats])
@pytest.mark.parametrize("fmt", ["NXC", "NCX"])
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_matches_the_reference(rng, kind, wfmt, fmt, rank):
    for (kernel, pads), channels in itertools.product(PADS, (1, 3, 5)):
        arrays, kw = _problem(rng, kind, fmt, wfmt, rank, kernel, pads, channels, bias=kind == CT)
        cp = _plan.plan_call(kind, input_names(kind)[:len(arrays)], arrays, dict(kw))
        if _lowering.packed_way(cp.plan, cp.input_shapes, cp.native) is None:
            continue  # no block of positions divides the last output axis
        cp, prepared = _packed(kind, arrays, kw)
        assert prepared.op.lowering.startswith(_lowering.AS_PACKED)
        out = np.full(cp.result_shape, np.nan, np.float32)
        prepared.run(list(arrays), out)
        assert_call_matches_reference(kind, arrays, kw, out, "f32")


@pytest.mark.parametrize("fmt", ["NXC", "NCX"])
def test_strided_out_goes_through_the_package_s_copy(rng, fmt):
    arrays, kw = _problem(rng, CT, fmt, "XOI", 2, 3, (1, 1), 3, bias=True, spatial=(6, 8))
    shape = _plan.plan_call(CT, input_names(CT)[:len(arrays)], arrays, dict(kw)).result_shape
    wide = np.full(shape[:-1] + (shape[-1] + 1,), np.nan, np.float32)
    out = wide[..., :-1]  # a gap after each last-axis row
    _, prepared = _packed(CT, arrays, kw, _compiled.meta(out))
    assert not prepared.op.direct  # its positions' channels do not lie together
    prepared.run(list(arrays), out)
    assert_call_matches_reference(CT, arrays, kw, out, "f32")
    assert np.isnan(wide[..., -1]).all()  # nothing written in the gaps


def test_only_stride_one_few_channels_without_groups_has_it(rng):
    x, w = random(rng, (1, 6, 6, 4), "f32"), random(rng, (3, 3, 3, 4), "f32")
    base = dict(data_format="NXC", weights_format="XOI", pads_begin=1, pads_end=1)
    for extra in (dict(strides=2), dict(dilations=2), dict(pads_begin=3)):
        cp = _plan.plan_call(CT, ("src", "weights"), [x, w], dict(base, **extra))
        assert _lowering.packed_way(cp.plan, cp.input_shapes, cp.native) is None, extra
    many = random(rng, (3, 3, 9, 4), "f32")  # 9 channels: no two positions fit 16 lanes
    cp = _plan.plan_call(CT, ("src", "weights"), [x, many], base)
    assert _lowering.packed_way(cp.plan, cp.input_shapes, cp.native) is None


def test_low_precision_falls_back_to_the_op_as_written(rng):
    """It runs in f32 only: a bf16 call given it (by tuning, say) compiles the op as
    written instead (a preference, not a need: _call.prepare)."""
    arrays, kw = _problem(rng, CT, "NXC", "XOI", 2, 3, (1, 1), 3, dtype="bf16", spatial=(6, 8))
    cp, prepared = _packed(CT, arrays, kw)
    assert not prepared.op.lowering.startswith(_lowering.AS_PACKED)


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_a_low_precision_call_that_runs_as_the_f32_chain_never_plans_it(rng, dtype):
    """Where this CPU's oneDNN runs a bf16/f16 op as the f32 chain, the f32 rules pick the
    default; where they pick the packed form (f32 only), the call plans by its own dtype's
    rules instead. oneDNN's conv_bwd_d_3d.json in f16 (32 -> 3 channels, stride 1, NXC)
    crashed here with KeyError: the probe read the packed form's attributes as an op's."""
    arrays, kw = _problem(rng, CBD, "NXC", "XIO", 3, 3, (0, 0), 3, batch=2, dtype=dtype,
                          spatial=(16, 16, 16))
    cp = _plan.plan_call(CBD, input_names(CBD)[:len(arrays)], arrays, dict(kw))
    assert _lowering.formed(cp.way) not in _lowering.F32_ONLY_FORMS
    got = og.convolution_backward_data(*arrays, **kw)
    assert_call_matches_reference(CBD, arrays, kw, got, dtype)


@pytest.mark.parametrize("kind,fmt,isa,channels,rank,chosen", [
    (CT, "NXC", "avx512_core_bf16", 3, 2, True),
    (CBD, "NXC", "avx512_core_bf16", 8, 1, True),
    (CBD, "NCX", "avx512_core_bf16", 3, 2, True),
    (CT, "NCX", "avx512_core_bf16", 5, 2, False),   # NCX: at most PACKED_NCX_CHANNELS
    (CT, "NCX", "avx512_core_bf16", 3, 1, False),   # NCX: 2 spatial axes or more
    (CT, "NXC", "avx2", 3, 2, True),
    (CBD, "NXC", "avx2", 3, 2, False),              # its native kernel won as often there
    (CT, "NXC", "avx512_core_amx", 3, 2, False),    # not measured: the op as written
])
def test_default_rule(rng, kind, fmt, isa, channels, rank, chosen):
    wfmt = _registry.SPECS[kind].weights_formats[0]
    arrays, kw = _problem(rng, kind, fmt, wfmt, rank, 3, (1, 1), channels, batch=8,
                          spatial=(64, 64, 8) if rank > 1 else (4096,))
    cp = _plan.plan_call(kind, input_names(kind)[:len(arrays)], arrays, dict(kw))
    way = _lowering.preferred(cp.plan, cp.input_shapes, cp.native, "f32", isa=isa,
                              flops=cp.size.flops, version=(3, 2))
    assert (_lowering.formed(way) == "packed") == chosen, way.lowering
    if chosen:
        assert "few output channels" in way.lowering
        bf16 = _lowering.preferred(cp.plan, cp.input_shapes, cp.native, "bf16", isa=isa,
                                   flops=cp.size.flops, version=(3, 2))
        assert _lowering.formed(bf16) != "packed"  # f32 only


@pytest.mark.parametrize("kind", [CT, CBD])
@pytest.mark.parametrize("fmt", ["NXC", "NCX"])
def test_reproducer_holds_the_convolution_and_replays_exactly(rng, kind, fmt):
    wfmt = _registry.SPECS[kind].weights_formats[0]
    arrays, kw = _problem(rng, kind, fmt, wfmt, 2, 3, (1, 1), 3, bias=kind == CT, spatial=(6, 8))
    _, prepared = _packed(kind, arrays, kw)
    doc = og.reproducer.reproducer(prepared.op).native
    [op] = doc["graph"]
    assert op["kind"] == "Convolution" and op["attrs"]["strides"]["value"][-1] == \
        prepared.op.positions
    assert _runner.run(og.load_graph(doc), exact=True).passed


@pytest.mark.parametrize("fmt", ["NXC", "NCX"])
@pytest.mark.parametrize("size,chosen", [(16, False), (32, True)])
def test_one_packed_row_is_not_the_default(rng, fmt, size, chosen):
    # 1 channel, 3-D, kernel 3: 16 positions packed, so 16^3 leaves one row per output row
    # (1.48-1.74x the native time in a sweep on Zen 4), 32^3 two (0.79-0.82x).
    arrays, kw = _problem(rng, CT, fmt, "IOX", 3, 3, (1, 1), 1, batch=8, spatial=(size,) * 3)  # 7-57 MFLOP
    cp = _plan.plan_call(CT, input_names(CT)[:len(arrays)], arrays, dict(kw))
    way = _lowering.preferred(cp.plan, cp.input_shapes, cp.native, "f32", isa="avx512_core_bf16",
                              flops=cp.size.flops, version=(3, 2))
    assert (_lowering.formed(way) == "packed") == chosen, way.lowering
    assert _lowering.packed_way(cp.plan, cp.input_shapes, cp.native) is not None  # tuning still tries it
