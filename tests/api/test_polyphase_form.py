"""A strided ConvTranspose as one stride-1 Convolution per output phase
(``_impl.polyphase_form``): against the float64 reference for every weights format,
layout, rank, group count, pad and output_padding it takes; when the rules choose it;
and that its reproducer (one Convolution per phase) replays.

Each output is the same sum of the same products as the op's, so its f32 bound holds.
"""

import dataclasses
import itertools

import pytest

import onednn_graph as og
from onednn_graph._impl import (call as _call, lowering as _lowering, plan as _plan,
                                registry as _registry)
from onednn_graph._tools import runner as _runner
from onednn_graph._impl.registry import input_names
from helpers import formed_matches_reference, random, strided_problem

CT, CBD = "ConvTranspose", "ConvolutionBackwardData"
# (kernel, stride, pads_begin, pads_end, output_padding)
GEOMETRIES = [(4, 2, 1, 1, 0), (3, 2, 1, 1, 1), (5, 3, 2, 1, 0), (2, 2, 0, 0, 0), (4, 2, 2, 0, 0)]


@pytest.mark.parametrize("kind,wfmt", [(k, f) for k in (CT, CBD) for f in _registry.SPECS[k].weights_formats])
@pytest.mark.parametrize("fmt", ["NXC", "NCX"])
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_matches_the_reference(rng, kind, wfmt, fmt, rank):
    ran = 0
    for geometry, groups in itertools.product(GEOMETRIES, (1, 2, 4)):
        if kind == CBD and geometry[4]:
            continue  # ConvolutionBackwardData's size comes from dst_shape
        arrays, kw = strided_problem(rng, kind, fmt, wfmt, rank, geometry, groups, bias=kind == CT)
        # (not where the stride does not divide the output)
        ran += formed_matches_reference(kind, arrays, kw, _lowering.polyphase_way, _lowering.AS_POLYPHASE)
    assert ran >= 6  # the geometries above whose outputs the stride divides, in 3 group counts


def test_where_it_does_not_apply(rng):
    x, w = random(rng, (1, 5, 5, 4), "f32"), random(rng, (3, 3, 4, 4), "f32")
    base = dict(data_format="NXC", weights_format="XOI")
    for extra in (dict(strides=1), dict(strides=2, dilations=2), dict(strides=2, pads_begin=1, pads_end=1),
                  dict(strides=3, pads_begin=0, pads_end=0, output_padding=1)):
        # stride 1; dilation; an odd output (9: the phases' views would interleave);
        # a kernel with a phase without taps (3 taps, stride 3: each phase has one) is fine,
        # output_padding 1 makes the output 16, which 3 does not divide
        cp = _plan.plan_call(CT, ("src", "weights"), [x, w], dict(base, **extra))
        assert _lowering.polyphase_way(cp.plan, cp.input_shapes, cp.native) is None, extra


@pytest.mark.parametrize("kind,fmt,groups,isa,chosen", [
    (CT, "NXC", 64, "avx512_core_bf16", True),
    (CBD, "NXC", 64, "avx512_core_bf16", True),
    (CT, "NCX", 64, "avx512_core_bf16", False),     # NCX depthwise lost on 2 of 3 shapes
    (CT, "NXC", 4, "avx512_core_bf16", False),      # not depthwise
    (CT, "NXC", 64, "avx2", False),                 # capped at AVX2: 1.3-2.3x on two of three
])
def test_default_rule(rng, kind, fmt, groups, isa, chosen):
    wfmt = _registry.SPECS[kind].weights_formats[0]
    arrays, kw = strided_problem(rng, kind, fmt, wfmt, 2, (4, 2, 1, 1, 0), groups, c=64, o=64, batch=8,
                          spatial=(32, 32))
    cp = _plan.plan_call(kind, input_names(kind)[:len(arrays)], arrays, dict(kw))
    way = _lowering.preferred(cp.plan, cp.input_shapes, cp.native, "f32", isa=isa,
                              flops=cp.size.flops, version=(3, 2))
    assert (_lowering.formed(way) == "polyphase") == chosen, way.lowering
    if chosen:
        assert "depthwise" in way.lowering
        assert _lowering.formed(_lowering.preferred(cp.plan, cp.input_shapes, cp.native, "bf16", isa=isa,
                                                    flops=cp.size.flops, version=(3, 2))) != "polyphase"


@pytest.mark.parametrize("kind", [CT, CBD])
def test_reproducer_holds_a_convolution_per_phase_and_replays_exactly(rng, kind):
    wfmt = _registry.SPECS[kind].weights_formats[0]
    arrays, kw = strided_problem(rng, kind, "NXC", wfmt, 2, (4, 2, 1, 1, 0), 4, bias=kind == CT)
    cp = _plan.plan_call(kind, input_names(kind)[:len(arrays)], arrays, dict(kw))
    way = _lowering.polyphase_way(cp.plan, cp.input_shapes, cp.native)
    prepared = _call.prepare(dataclasses.replace(cp, way=way), arrays)
    doc = og.reproducer.reproducer(prepared.op).native
    assert [op["kind"] for op in doc["graph"]] == ["Convolution"] * 4  # stride 2 on 2 axes
    assert _runner.run(og.load_graph(doc), exact=True).passed
