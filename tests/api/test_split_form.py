"""A ConvTranspose or ConvolutionBackwardData as two calls over its output channels
(``_impl.split_form``): against the float64 reference for every weights format, layout,
rank, pad and output_padding; where the default rule takes it; the reproducer; through
``compile_op`` with constant weights and through a converted PyTorch layer.

Each output channel is the same sum of the same products as in the one call (only which
call computes it differs), so the op's f32 bound holds.
"""

import numpy as np
import pytest

import onednn_graph as og
from onednn_graph._impl import lowering as _lowering, plan as _plan, registry as _registry
from helpers import (FORMED_KINDS, assert_call_matches_reference, default_forms, formed_matches_reference,
                     formed_reproducer, geometries_matching_reference, import_torch, strided_problem)

CT, CBD, CTBW = "ConvTranspose", "ConvolutionBackwardData", "ConvTransposeBackwardWeights"
CTBD = "ConvTransposeBackwardData"
GEOMETRIES = [(4, 2, 1, 1, 0), (3, 2, 1, 1, 1), (2, 2, 0, 0, 0), (3, 1, 1, 1, 0)]


def _split_by(block):
    """``channel_split_way`` with vectors of `block` channels (small problems split too)."""
    return lambda plan, input_shapes, native: _lowering.channel_split_way(plan, input_shapes, native, block)


@pytest.mark.parametrize("kind,wfmt", FORMED_KINDS)
@pytest.mark.parametrize("fmt", ["NXC", "NCX"])
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_matches_the_reference(rng, kind, wfmt, fmt, rank):
    # 6 channels as 4 + 2: the weights sliced on their O axis (I for the convolution's
    # ConvolutionBackwardData) wherever the format puts it, the bias and result on theirs.
    assert geometries_matching_reference(rng, kind, wfmt, fmt, rank, GEOMETRIES, _split_by(4),
                                         _lowering.AS_SPLIT, o=6) == len(GEOMETRIES) - (kind == CBD)


def _weights_grad_problem(rng, fmt, wfmt, rank, geometry, o, **problem):
    """ConvTransposeBackwardWeights's arrays (src, diff_dst) and keywords (weights_shape
    included) for the ConvTranspose ``strided_problem`` makes."""
    arrays, kw = strided_problem(rng, CT, fmt, wfmt, rank, geometry, o=o, **problem)
    cp = _plan.plan_call(CT, ("src", "weights"), arrays, dict(kw))
    diff_dst = rng.uniform(-1, 1, size=cp.result_shape).astype(np.float32)
    return [arrays[0], diff_dst], dict(kw, weights_shape=arrays[1].shape)


@pytest.mark.parametrize("wfmt", _registry.SPECS[CTBW].weights_formats)
@pytest.mark.parametrize("fmt", ["NXC", "NCX"])
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_the_weights_gradient_matches_the_reference(rng, wfmt, fmt, rank):
    # Split over diff_dst's channels: each part writes its slice of the weights' O axis.
    for geometry in GEOMETRIES:
        arrays, kw = _weights_grad_problem(rng, fmt, wfmt, rank, geometry, 6)
        assert formed_matches_reference(CTBW, arrays, kw, _split_by(4), _lowering.AS_SPLIT)


def test_where_it_does_not_apply(rng):
    for o, groups in ((8, 1), (3, 1), (6, 2)):  # a multiple of the vector; fewer; groups
        arrays, kw = strided_problem(rng, CT, "NXC", "IOX", 2, (4, 2, 1, 1, 0), groups=groups, c=4, o=o)
        cp = _plan.plan_call(CT, ("src", "weights"), arrays, dict(kw))
        assert _lowering.channel_split_way(cp.plan, cp.input_shapes, cp.native, 4) is None, (o, groups)


@pytest.mark.parametrize("kind,fmt,channels,batch,isa,chosen", [
    (CT, "NCX", 17, 4, "avx512_core_bf16", True),    # Keypoint R-CNN's head: 0.89x (NCX), 0.84x (NXC)
    (CBD, "NXC", 17, 4, "avx512_core_bf16", True),
    (CT, "NXC", 20, 16, "avx512_core_bf16", True),   # 4 over 16: 0.93x, 0.84x
    (CT, "NCX", 21, 16, "avx512_core_bf16", False),  # 5 over: the rest costs a whole vector
    (CT, "NCX", 17, 2, "avx512_core_bf16", False),   # the rest under 8 MFLOP: its form loses there
    (CT, "NXC", 17, 16, "avx2", True),               # capped at AVX2, 1 over 16: 0.81x
    (CT, "NCX", 17, 16, "avx2", False),              # NCX: 0.97x, and 1.09x with 3 over
    (CT, "NXC", 19, 16, "avx2", False),              # 3 over 16
])
def test_default_rule(rng, kind, fmt, channels, batch, isa, chosen):
    forms = default_forms(rng, kind, fmt, isa, c=512, o=channels, batch=batch, spatial=(14, 14))
    assert (forms["f32"] == "split") == chosen, forms
    assert forms["bf16"] != "split" and forms["f16"] != "split"  # f32 only: the rest's form is


@pytest.mark.parametrize("fmt,channels,batch,isa,chosen", [
    ("NCX", 17, 16, "avx512_core_bf16", True),   # Keypoint R-CNN's weights gradient: 0.68x
    ("NCX", 18, 4, "avx512_core_bf16", True),    # 0.61x
    ("NCX", 20, 16, "avx512_core_bf16", False),  # 4 over 16: the rest alone costs most of a vector
    ("NXC", 17, 16, "avx512_core_bf16", False),  # NXC: no step (and its own rewrite)
    ("NCX", 17, 16, "avx2", False),              # not measured there
])
def test_default_rule_for_the_weights_gradient(rng, fmt, channels, batch, isa, chosen):
    arrays, kw = _weights_grad_problem(rng, fmt, "IOX", 2, (4, 2, 1, 1, 0), channels, c=128, batch=batch,
                                       spatial=(32, 32))
    cp = _plan.plan_call(CTBW, ("src", "diff_dst"), arrays, dict(kw))
    for dtype in ("f32", "bf16", "f16"):  # f32 only
        way = _lowering.preferred(cp.plan, cp.input_shapes, cp.native, dtype, isa=isa, flops=cp.size.flops,
                                  version=(3, 2))
        assert (_lowering.formed(way) == "split") == (chosen and dtype == "f32"), (dtype, way.lowering)


def test_the_default_call_runs_it_and_matches_the_reference(rng):
    # Through the public op, as a user calls it: Keypoint R-CNN's head on 4 RoIs.
    arrays, kw = strided_problem(rng, CT, "NCX", "IOX", 2, (4, 2, 1, 1, 0), c=512, o=17, bias=True, batch=4,
                                 spatial=(14, 14))
    op = og.compile_op(CT, src=arrays[0], weights=arrays[1], bias=arrays[2], **kw)
    if "NCX" in _lowering.SPLIT_CHANNELS.get((_lowering.LINKED, _lowering.HOST_ISA), (0, ()))[1]:
        assert op.lowering.startswith(_lowering.AS_SPLIT), op.lowering
    assert_call_matches_reference(CT, arrays, kw, op(*arrays), "f32")
    constant = og.compile_op(CT, src=arrays[0], weights=arrays[1], bias=arrays[2], constant_weights=True, **kw)
    assert_call_matches_reference(CT, arrays, kw, constant(arrays[0], arrays[2]), "f32")  # (weights held)


def test_a_strided_out_is_written_in_place(rng):
    # A caller's `out` inside a larger array: each part writes its channels' view of it.
    import dataclasses

    from onednn_graph._impl import call as _call, compiled as _compiled
    arrays, kw = strided_problem(rng, CT, "NXC", "IOX", 2, (4, 2, 1, 1, 0), c=8, o=6, bias=True)
    base = np.full((2, 10, 8, 9), np.nan, np.float32)  # the result's (2, 10, 8, 6) inside it
    out = base[..., 1:7]
    cp = _plan.plan_call(CT, ("src", "weights", "bias"), arrays, dict(kw))
    split = dataclasses.replace(cp, way=_split_by(4)(cp.plan, cp.input_shapes, cp.native))
    prepared = _call.prepare(split, arrays, out_meta=_compiled.meta(out))
    prepared.run(list(arrays), out)
    assert prepared.op.lowering.startswith(_lowering.AS_SPLIT)
    assert_call_matches_reference(CT, arrays, kw, np.ascontiguousarray(out), "f32")
    assert np.isnan(base[..., 0]).all() and np.isnan(base[..., 7:]).all()  # nothing written beside it


def test_one_sample_through_a_converted_layer():
    """Batch 1: a part's view of the result has a batch axis of one position, whose stride
    (the whole result's) the part's compiled description wrote down otherwise; it refused
    its own view (an internal "what was compiled" error from a converted layer's call).
    18 output channels (16 + 2), NCHW and channels-last, the forward alone and a training
    step, against stock torch.nn (f32 sums of 300 x 16 products: 1e-4)."""
    torch = import_torch()
    import copy

    import onednn_graph.torch as ot
    torch.manual_seed(0)
    stock = torch.nn.ConvTranspose2d(300, 18, (2, 8), stride=(1, 2), padding=(0, 2))
    ours = ot.convert(copy.deepcopy(stock))
    for fmt in (torch.channels_last, torch.contiguous_format):
        x = torch.randn(1, 300, 16, 31).contiguous(memory_format=fmt)
        with torch.no_grad():
            torch.testing.assert_close(ours(x), stock(x), rtol=1e-4, atol=1e-4)
        y = ours(x.requires_grad_())
        torch.testing.assert_close(y, stock(x), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kind", [CT, CBD])
def test_reproducer_holds_the_first_part_and_replays_exactly(rng, kind):
    wfmt = _registry.SPECS[kind].weights_formats[0]
    arrays, kw = strided_problem(rng, kind, "NXC", wfmt, 2, (4, 2, 1, 1, 0), o=6, bias=kind == CT)
    assert len(formed_reproducer(kind, arrays, kw, _split_by(4))["graph"]) == 1


def test_a_converted_keypoint_head_matches_torch():
    # torchvision's Keypoint R-CNN predictor's layer, 17 channels, in eval (packed) and in
    # a training step (the forward split, the gradients as before).
    torch = import_torch()
    import copy

    import onednn_graph.torch as ot
    torch.manual_seed(0)
    stock = torch.nn.ConvTranspose2d(512, 17, 4, stride=2, padding=1)
    ours = ot.convert(copy.deepcopy(stock))
    x = torch.randn(4, 512, 14, 14, requires_grad=True)
    # Two f32 computations in other summation orders. An output sums 512 * 4 products
    # (outputs about 1): their rounding differs by about 6e-8 * sqrt(2048), 3e-6, under
    # 2e-4. A weight gradient sums 4 * 28 * 28 = 3136 products of values about 1 (entries
    # about 56): about 6e-8 * 56 * sqrt(3136), 2e-4, under atol 2e-3 (rtol 1e-4 on top).
    with torch.no_grad():
        for _ in range(3):  # the second call in a row packs
            torch.testing.assert_close(ours.eval()(x), stock.eval()(x), rtol=1e-4, atol=2e-4)
    y, want = ours.train()(x), stock.train()(x)
    torch.testing.assert_close(y, want, rtol=1e-4, atol=2e-4)
    g = torch.randn_like(y)
    got_grads = torch.autograd.grad(y, (x, ours.weight, ours.bias), g)
    want_grads = torch.autograd.grad(want, (x, stock.weight, stock.bias), g)
    for a, b in zip(got_grads, want_grads):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=2e-3)


def test_report_names_how_onednn_computed_each_kind_of_call(monkeypatch):
    # report() says how oneDNN computed a layer's forward and gradients, as compile_op says
    # it for the same arrays and attributes (Operation.lowering): the keypoint head's split
    # where this CPU family's rule takes it, the native op where not. (Its NCX calls on NCX
    # data: not on channels-last copies, which test_torch_nxc_route.py reports.)
    torch = import_torch()
    import onednn_graph.torch as ot
    from onednn_graph.torch import _via_nxc
    monkeypatch.setattr(_via_nxc, "FORCED", "0")
    layer = ot.convert(torch.nn.ConvTranspose2d(512, 17, 4, stride=2, padding=1))
    x = torch.randn(4, 512, 14, 14, requires_grad=True)
    assert "formulation" not in ot.report(layer)[0].why  # nothing ran yet
    y = layer(x)
    g = torch.randn_like(y)
    y.backward(g)
    why = ot.report(layer)[0].why
    kw = dict(strides=(2, 2), pads_begin=(1, 1), pads_end=(1, 1), data_format="NCX", weights_format="IOX")
    src, w, b, dy = (t.detach().numpy() for t in (x, layer.weight, layer.bias, g))
    expected = {CT: og.compile_op(CT, src=src, weights=w, bias=b, **kw).lowering,
                CTBD: og.compile_op(CTBD, diff_dst=dy, weights=w, **kw).lowering,
                CTBW: og.compile_op(CTBW, src=src, diff_dst=dy, weights_shape=w.shape, **kw).lowering}
    assert why.endswith("oneDNN's formulation (last call of each kind): " + "; ".join(
        f"{kind}: {how}" for kind, how in expected.items())), why


def test_tuning_measures_it(rng):
    # compile_op(tune=True) times the split among the problem's formulations
    # (``_lowering.alternatives``) wherever the channels are not a multiple of the vector.
    arrays, kw = strided_problem(rng, CT, "NXC", "IOX", 2, (4, 2, 1, 1, 0), c=16, o=17, batch=1, spatial=(6, 6))
    cp = _plan.plan_call(CT, ("src", "weights"), arrays, dict(kw))
    ways = _lowering.alternatives(cp.plan, cp.input_shapes, cp.native)
    assert [w for w in ways if _lowering.formed(w) == "split"], [w.lowering for w in ways]
    arrays8, kw8 = strided_problem(rng, CT, "NXC", "IOX", 2, (4, 2, 1, 1, 0), c=16, o=32, batch=1, spatial=(6, 6))
    cp8 = _plan.plan_call(CT, ("src", "weights"), arrays8, dict(kw8))
    assert not [w for w in _lowering.alternatives(cp8.plan, cp8.input_shapes, cp8.native)
                if _lowering.formed(w) == "split"]
