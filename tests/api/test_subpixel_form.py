"""A strided ConvTranspose as one stride-1 Convolution with every output phase as
channels (``_impl.subpixel_form``): against the float64 reference for every weights
format, layout, rank, pad and output_padding it takes; where it does not apply; and
the geometry's taps against the definition of the op.

Each output is the same sum of the op's products plus products with zero weights
(exact zeros), so the op's f32 bound holds.
"""

import itertools

import pytest

import onednn_graph as og
from onednn_graph._impl import lowering as _lowering, plan as _plan, registry as _registry
from helpers import (FORMED_KINDS, assert_call_matches_reference, default_forms, formed_call,
                     formed_reproducer, geometries_matching_reference, random, strided_problem)

CT, CBD = "ConvTranspose", "ConvolutionBackwardData"
# (kernel, stride, pads_begin, pads_end, output_padding)
GEOMETRIES = [(4, 2, 1, 1, 0), (3, 2, 1, 1, 1), (5, 3, 2, 1, 0), (2, 2, 0, 0, 0), (4, 2, 2, 0, 0),
              (3, 3, 0, 0, 0), (6, 2, 2, 2, 0), (1, 2, 0, 0, 1)]


@pytest.mark.parametrize("kind,wfmt", FORMED_KINDS)
@pytest.mark.parametrize("fmt", ["NXC", "NCX"])
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_matches_the_reference(rng, kind, wfmt, fmt, rank):
    # (not where the stride does not divide the output)
    assert geometries_matching_reference(rng, kind, wfmt, fmt, rank, GEOMETRIES, _lowering.subpixel_way,
                                         _lowering.AS_SUBPIXEL, o=3) >= 4


def test_hundreds_of_channels_in(rng):
    # A GAN generator's last layer at the width real ones have: 256 -> 3 channels.
    arrays, kw = strided_problem(rng, CT, "NXC", "IOX", 2, (4, 2, 1, 1, 0), c=256, o=3, bias=True, batch=2,
                          spatial=(16, 16))
    _, out = formed_call(CT, arrays, kw, _lowering.subpixel_way)
    assert_call_matches_reference(CT, arrays, kw, out, "f32")


def test_where_it_does_not_apply(rng):
    x, w = random(rng, (1, 5, 5, 4), "f32"), random(rng, (3, 3, 4, 4), "f32")
    base = dict(data_format="NXC", weights_format="XOI")
    for extra in (dict(strides=1), dict(strides=2, dilations=2), dict(strides=2, pads_begin=1, pads_end=1),
                  dict(strides=2, groups=2), dict(strides=2, pads_begin=3, pads_end=0)):
        # stride 1; dilation; an odd output (9); groups; a pad past the kernel (no tap at m >= 0)
        if "groups" in extra:
            w2 = random(rng, (3, 3, 2, 4), "f32")
            cp = _plan.plan_call(CT, ("src", "weights"), [x, w2], dict(base, **extra))
        else:
            cp = _plan.plan_call(CT, ("src", "weights"), [x, w], dict(base, **extra))
        assert _lowering.subpixel_way(cp.plan, cp.input_shapes, cp.native) is None, extra


@pytest.mark.parametrize("k,s,pb,x", list(itertools.product([1, 2, 3, 4, 5, 7], [2, 3, 4], [0, 1, 2, 3], [1, 3])))
def test_geometry_is_the_definition(k, s, pb, x):
    # Output position o = s*i - pb + t of a 1-D ConvTranspose sums x[i] * w[t]; the
    # Convolution's output q, phase r, tap j reads x[q + j - pads_begin] times w[taps[r][j]].
    y = s * x  # the largest output the phases tile
    g = _lowering.subpixel_geometry(s, k, pb, x, y)
    if pb > k - 1:
        assert g is None
        return
    taps, begin, end, q = g
    assert q * s == y and begin >= 0 and end >= 0
    assert x + begin + end - len(taps[0]) + 1 == q  # the Convolution's output size
    want = {(o, i, t) for i in range(x) for t in range(k) for o in [s * i - pb + t] if 0 <= o < y}
    got = {(s * qq + r, qq + j - begin, taps[r][j]) for qq in range(q) for r in range(s)
           for j in range(len(taps[r])) if taps[r][j] < k and 0 <= qq + j - begin < x}
    assert got == want


@pytest.mark.parametrize("kind,fmt,channels,batch,isa,chosen", [
    (CT, "NXC", 3, 8, "avx512_core_bf16", True),     # 50 MFLOP
    (CBD, "NCX", 4, 2, "avx512_core_bf16", False),   # 4 channels under 32 MFLOP (17): up to 1.17x
    (CBD, "NCX", 4, 8, "avx512_core_bf16", True),    # 67 MFLOP
    (CT, "NXC", 3, 1, "avx512_core_bf16", False),    # 6 MFLOP: the per-call gathering costs more
    (CT, "NCX", 8, 16, "avx512_core_bf16", False),   # 8 channels: 1.15-2.02x
    (CT, "NXC", 2, 8, "avx2", True),
    (CT, "NCX", 3, 8, "avx2", True),                 # capped at AVX2, 3 channels from 32 MFLOP: 0.91-0.93x
    (CT, "NCX", 3, 2, "avx2", False),                # under 32 MFLOP (13)
])
def test_default_rule(rng, kind, fmt, channels, batch, isa, chosen):
    forms = default_forms(rng, kind, fmt, isa, c=64, o=channels, batch=batch, spatial=(32, 32))
    assert (forms["f32"] == "subpixel") == chosen, forms
    assert forms["bf16"] != "subpixel" and forms["f16"] != "subpixel"  # f32 only


@pytest.mark.parametrize("c,chosen", [(64, True), (256, False), (512, False)])
def test_capped_at_avx2_three_channels_need_few_inputs(rng, c, chosen):
    # 3 channels, k4s2, 14 x 14 RoI-sized inputs capped at AVX2: 64 input channels 0.92-1.00x,
    # 256 1.08-1.11x, 512 1.33-1.34x the one call (benchmarks/channel_blocks.py); natively
    # 0.62-0.73x on all of them.
    for isa, want in (("avx2", chosen), ("avx512_core_bf16", True)):
        forms = default_forms(rng, CT, "NCX", isa, c=c, o=3, batch=16, spatial=(14, 14) if c > 64 else (32, 32))
        assert (forms["f32"] == "subpixel") == want, (isa, forms)


def test_the_default_call_runs_it_and_matches_the_reference(rng):
    # Through the public op, as a user calls it: a GAN generator's last layer.
    arrays, kw = strided_problem(rng, CT, "NCX", "IOX", 2, (4, 2, 1, 1, 0), c=64, o=3, bias=True, batch=8,
                          spatial=(32, 32))
    op = og.compile_op(CT, src=arrays[0], weights=arrays[1], bias=arrays[2], **kw)
    if (_lowering.LINKED, _lowering.HOST_ISA) in _lowering.SUBPIXEL_CHANNELS:
        assert op.lowering.startswith(_lowering.AS_SUBPIXEL), op.lowering
    out = op(*arrays)
    assert_call_matches_reference(CT, arrays, kw, out, "f32")


@pytest.mark.parametrize("kind", [CT, CBD])
def test_reproducer_holds_the_convolution_and_replays_exactly(rng, kind):
    wfmt = _registry.SPECS[kind].weights_formats[0]
    arrays, kw = strided_problem(rng, kind, "NXC", wfmt, 2, (4, 2, 1, 1, 0), o=3, bias=kind == CT)
    doc = formed_reproducer(kind, arrays, kw, _lowering.subpixel_way)
    assert [op["kind"] for op in doc["graph"]] == ["Convolution"]
