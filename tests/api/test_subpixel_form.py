"""A strided ConvTranspose as one stride-1 Convolution with every output phase as
channels (``_impl.subpixel_form``): against the float64 reference for every weights
format, layout, rank, pad and output_padding it takes; where it does not apply; and
the geometry's taps against the definition of the op.

Each output is the same sum of the op's products plus products with zero weights
(exact zeros), so the op's f32 bound holds.
"""

import itertools

import numpy as np
import pytest

import onednn_graph as og
from onednn_graph._impl import (formed as _formed, lowering as _lowering, plan as _plan, registry as _registry,
                                subpixel_form)
from helpers import (FORMED_KINDS, assert_call_matches_reference, default_forms, formed_call,
                     formed_reproducer, geometries_matching_reference, random, strided_problem)

CT, CBD = "ConvTranspose", "ConvolutionBackwardData"
# (kernel, stride, pads_begin, pads_end, output_padding)
GEOMETRIES = [(4, 2, 1, 1, 0), (3, 2, 1, 1, 1), (5, 3, 2, 1, 0), (2, 2, 0, 0, 0), (4, 2, 2, 0, 0),
              (3, 3, 0, 0, 0), (6, 2, 2, 2, 0), (1, 2, 0, 0, 1),
              (3, 2, 1, 1, 0), (3, 2, 3, 0, 0), (8, 4, 3, 2, 1)]  # odd outputs, a pad past the kernel


@pytest.mark.parametrize("kind,wfmt", FORMED_KINDS)
@pytest.mark.parametrize("fmt", ["NXC", "NCX"])
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_matches_the_reference(rng, kind, wfmt, fmt, rank):
    # (every geometry but ConvolutionBackwardData's with an output_padding)
    assert geometries_matching_reference(rng, kind, wfmt, fmt, rank, GEOMETRIES, _lowering.subpixel_way,
                                         _lowering.AS_SUBPIXEL, o=3) == (11 if kind == CT else 8)


def test_hundreds_of_channels_in(rng):
    # A GAN generator's last layer at the width real ones have: 256 -> 3 channels.
    arrays, kw = strided_problem(rng, CT, "NXC", "IOX", 2, (4, 2, 1, 1, 0), c=256, o=3, bias=True, batch=2,
                          spatial=(16, 16))
    _, out = formed_call(CT, arrays, kw, _lowering.subpixel_way)
    assert_call_matches_reference(CT, arrays, kw, out, "f32")


def test_where_it_does_not_apply(rng):
    x, w = random(rng, (1, 5, 5, 4), "f32"), random(rng, (3, 3, 4, 4), "f32")
    base = dict(data_format="NXC", weights_format="XOI")
    for extra in (dict(strides=1), dict(strides=2, dilations=2), dict(strides=2, groups=2),
                  dict(strides=2, pads_begin=4, pads_end=0), dict(strides=2, pads_begin=0, pads_end=6)):
        # stride 1; dilation; groups; the Convolution's pads negative: a pad past a stride
        # beyond the kernel (no tap at m >= 0), an end pad cropping 6 of 11 positions
        if "groups" in extra:
            w2 = random(rng, (3, 3, 2, 4), "f32")
            cp = _plan.plan_call(CT, ("src", "weights"), [x, w2], dict(base, **extra))
        else:
            cp = _plan.plan_call(CT, ("src", "weights"), [x, w], dict(base, **extra))
        assert _lowering.subpixel_way(cp.plan, cp.input_shapes, cp.native) is None, extra


@pytest.mark.parametrize("k,s,pb,x,extra", list(itertools.product([1, 2, 3, 4, 5, 7], [2, 3, 4], [0, 1, 2, 3],
                                                                    [1, 3], [0, 1])))
def test_geometry_is_the_definition(k, s, pb, x, extra):
    # Output position o = s*i - pb + t of a 1-D ConvTranspose sums x[i] * w[t]; the
    # Convolution's output q, phase r, tap j reads x[q + j - pads_begin] times w[taps[r][j]]
    # for position s*q + r - first, with the fewest taps a phase needs: ceil(k / s).
    y = s * (x - 1) + k - pb + extra  # (pads_end 0, less the output_padding `extra`)
    g = _lowering.subpixel_geometry(s, k, pb, x, y)
    if pb - pb % s > k - 1:  # no phase's first tap in the kernel
        assert g is None
        return
    taps, begin, end, q, first = g
    assert q * s - first >= y and begin >= 0 and end >= 0 and len(taps[0]) == -(-k // s)
    assert x + begin + end - len(taps[0]) + 1 == q  # the Convolution's output size
    want = {(o, i, t) for i in range(x) for t in range(k) for o in [s * i - pb + t] if 0 <= o < y}
    got = {(o, qq + j - begin, taps[r][j]) for qq in range(q) for r in range(s) for o in [s * qq + r - first]
           for j in range(len(taps[r])) if taps[r][j] < k and 0 <= qq + j - begin < x and 0 <= o < y}
    assert got == want


@pytest.mark.parametrize("kind,fmt,channels,batch,isa,chosen", [
    # (figures: benchmarks/subpixel_channels.py, docs/benchmarks/zen4-subpixel.md)
    (CT, "NXC", 3, 8, "avx512_core_bf16", True),     # 50 MFLOP
    (CBD, "NCX", 4, 2, "avx512_core_bf16", False),   # NCX, 4 channels under 32 MFLOP (17): 0.85-1.18x
    (CBD, "NCX", 4, 8, "avx512_core_bf16", True),    # 67 MFLOP
    (CT, "NXC", 3, 1, "avx512_core_bf16", False),    # 6 MFLOP: the per-call gathering costs more
    (CT, "NCX", 8, 16, "avx512_core_bf16", False),   # NCX, 8 channels: 1.00-1.92x
    (CT, "NXC", 8, 16, "avx512_core_bf16", True),    # NXC, 8 channels from 47 MFLOP: 0.65-0.94x
    (CT, "NXC", 8, 2, "avx512_core_bf16", False),    # under 47 MFLOP (33): 1.23-1.26x
    (CT, "NXC", 2, 8, "avx2", True),
    (CT, "NXC", 4, 8, "avx2", True),                 # capped at AVX2, NXC 3-4 from 25 MFLOP: 0.47-0.92x
    (CT, "NCX", 3, 32, "avx2", True),                # NCX 3-4 from 59 MFLOP (195)
    (CT, "NCX", 3, 16, "avx2", True),                # (98 MFLOP: DCGAN's last layer): 0.62-0.70x
    (CT, "NCX", 3, 8, "avx2", False),                # under 59 MFLOP (49): 0.86-0.87x, but 1.07-1.18x
                                                     # with 512 input channels at 36-48
])
def test_default_rule(rng, kind, fmt, channels, batch, isa, chosen):
    forms = default_forms(rng, kind, fmt, isa, c=64, o=channels, batch=batch, spatial=(32, 32))
    assert (forms["f32"] == "subpixel") == chosen, forms
    assert forms["bf16"] != "subpixel" and forms["f16"] != "subpixel"  # f32 only


@pytest.mark.parametrize("c", [64, 256, 512])
def test_many_input_channels_take_it_on_both_families(rng, c):
    # 3 channels, k4s2, NXC, 16 inputs: capped at AVX2 0.52x (64 input channels), 0.72x
    # (256), 0.68x (512) the native op's time with the fewest taps (with three taps per
    # axis, 0.92-1.34x), natively 0.35-0.52x.
    for isa in ("avx2", "avx512_core_bf16"):
        forms = default_forms(rng, CT, "NXC", isa, c=c, o=3, batch=16, spatial=(14, 14) if c > 64 else (32, 32))
        assert forms["f32"] == "subpixel", (isa, forms)


def test_the_default_call_runs_it_and_matches_the_reference(rng):
    # Through the public op, as a user calls it: a GAN generator's last layer.
    # (151 MFLOP: over every family's threshold, SUBPIXEL_CHANNELS)
    arrays, kw = strided_problem(rng, CT, "NCX", "IOX", 2, (4, 2, 1, 1, 0), c=64, o=3, bias=True, batch=24,
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


@pytest.mark.parametrize("s", [2, 3, 4])
def test_row_blocks_cover_each_position_once(s):
    # Output position x of the last axis is phase r of result position q, x = s*q + r -
    # first: the blocks hold each x of [0, width) once, in order, from the (q, r) it is.
    for first, width in itertools.product(range(s), range(1, 13)):
        q = -(-(width + first) // s)  # the result's positions (``subpixel_geometry``)
        placed = []
        for q0, q1, r0, r1, x0 in subpixel_form.row_blocks(s, first, width, q):
            assert q1 - q0 == 1 or (r0, r1) == (0, s)  # several positions only with every phase
            placed += [(x0 + i, qq, r) for i, (qq, r) in enumerate(itertools.product(range(q0, q1), range(r0, r1)))]
        assert placed == [(x, *divmod(x + first, s)) for x in range(width)], (first, width)


@pytest.mark.parametrize("fmt", ["NCX", "NXC"])
def test_place_is_the_definition(fmt):
    # Strides 2 and 3, phase 0 at positions -1 and -2, outputs the strides do not divide;
    # out[n, y, x, o] = result[n, qy, qx, (ry * 3 + rx) * O + o], (q, r) = divmod(position + first, s).
    g = subpixel_form.Geometry(dict(strides=[2, 3], pads_begin=[1, 2]), (4, 5), (3, 3), (7, 8), 2, 1, 3)
    result = np.arange(np.prod(g.result_shape), dtype=np.float32).reshape(g.result_shape)
    out = np.full((2, 3, 7, 8) if fmt == "NCX" else (2, 7, 8, 3), -1, np.float32)
    g.place(result, _formed.channels_last(out, fmt))
    got = _formed.channels_last(out, fmt)
    for n, y, x, o in itertools.product(range(2), range(7), range(8), range(3)):
        (qy, ry), (qx, rx) = divmod(y + g.first[0], 2), divmod(x + g.first[1], 3)
        assert got[n, y, x, o] == result[n, qy, qx, (ry * 3 + rx) * 3 + o]
