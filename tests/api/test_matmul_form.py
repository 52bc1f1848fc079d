"""kernel == stride as one MatMul (``_impl.matmul_form``): every op, layout, group
count and rank against the float64 reference; when the rules and tuning choose it;
that its reproducer replays; and that it refuses arrays it was not compiled for.

The formulation is forced here (the call's plan with ``matmul_way`` as its way), so
each case runs it whatever this CPU's default rules choose. Its product runs in f32
on exactly the products and sums of the op (no window overlaps, so each output is
one sum over the same terms): the reference bound of the op in its dtype
(``tolerance``) holds, and the bf16/f16 calls (f32 between the package's exact
conversions) are held to their own dtype's bound as every f32 chain is.
"""

import dataclasses
import importlib
import itertools

import numpy as np
import pytest

import onednn_graph as og
from onednn_graph import reference as R, shapes
from onednn_graph._impl import (call as _call, compiled as _compiled, lowering as _lowering,
                                matmul_form as _matmul_form, plan as _plan, registry as _registry)
from onednn_graph._impl import version as _version
from onednn_graph._tools import runner as _runner
from onednn_graph._impl.registry import input_names
from helpers import assert_call_matches_reference, random

CT, CTBD, CTBW, CBD = ("ConvTranspose", "ConvTransposeBackwardData",
                       "ConvTransposeBackwardWeights", "ConvolutionBackwardData")
KINDS = (CT, CTBD, CTBW, CBD)


def _problem(rng, kind, fmt, wfmt, groups, rank, dtype="f32", bias=False, batch=3,
             small_channels=None, big_channels=None, spatial=(3, 5, 2), kernel=(2, 3, 1)):
    """Inputs and keywords of `kind` with kernel == stride: odd batch and spatial sizes,
    a different kernel per axis; `groups` = small_channels makes it depthwise."""
    kernel = kernel[:rank]
    spatial = spatial[:rank]
    c = small_channels or 2 * groups
    o = big_channels or 3 * groups
    small = shapes.data_shape_for(fmt, batch, c, spatial)
    big = shapes.data_shape_for(fmt, batch, o, tuple(k * x for k, x in zip(kernel, spatial)))
    attrs = og._impl.attrs.normalize(kind, rank, weights_format=wfmt, groups=groups)
    w_shape = shapes.weights_shape_for(attrs, c, o, kernel) if _registry.SPECS[kind].transposed \
        else shapes.weights_shape_for(attrs, o, c, kernel)
    kw = dict(strides=kernel, groups=groups, data_format=fmt, weights_format=wfmt)
    if kind == CT:
        arrays = [random(rng, small, dtype), random(rng, w_shape, dtype)]
        if bias:
            arrays.append(random(rng, (o,), dtype))
    elif kind == CBD:
        arrays, kw["dst_shape"] = [random(rng, small, dtype), random(rng, w_shape, dtype)], big
    elif kind == CTBD:
        arrays = [random(rng, big, dtype), random(rng, w_shape, dtype)]
    else:
        arrays, kw["weights_shape"] = [random(rng, small, dtype), random(rng, big, dtype)], w_shape
    return arrays, kw


def _one_position(rng, kind, fmt, wfmt, rank, groups=1, batch=3, small_channels=None, big_channels=None,
                  strides=(1, 2, 3), kernel=(4, 3, 2), dtype="f32", bias=False):
    """`_problem` with a small tensor of one position per sample and strides unlike the
    kernel (a latent vector made a feature map): one window, whatever the stride."""
    arrays, kw = _problem(rng, kind, fmt, wfmt, groups, rank, dtype=dtype, bias=bias, batch=batch,
                          small_channels=small_channels, big_channels=big_channels,
                          spatial=(1, 1, 1), kernel=kernel)
    kw["strides"] = list(strides[:rank])
    return arrays, kw


def _as_matmul(kind, arrays, kw, out_meta=None):
    """The call prepared with the MatMul formulation as its way."""
    names = input_names(kind)[:len(arrays)]
    cp = _plan.plan_call(kind, names, arrays, dict(kw))
    way = _lowering.matmul_way(cp.plan, cp.input_shapes, cp.native)
    assert way is not None and way.kind == _matmul_form.MATMUL
    return cp, _call.prepare(dataclasses.replace(cp, way=way), arrays, out_meta)




LAYOUTS = [(kind, fmt, wfmt) for kind in KINDS for fmt in ("NCX", "NXC")
           for wfmt in _registry.SPECS[kind].weights_formats]


@pytest.mark.parametrize("kind,fmt,wfmt", LAYOUTS)
@pytest.mark.parametrize("rank", [1, 2, 3])
@pytest.mark.parametrize("geometry", ["kernel == stride", "one input position"])
def test_every_layout_and_rank_matches_the_reference(rng, kind, fmt, wfmt, rank, geometry):
    # one input position: kernel 4 at stride 1 (DCGAN's first layer), 3 at 2, 2 at 3: the
    # windows never meet whatever the stride
    problem = _problem if geometry == "kernel == stride" else _one_position
    for groups in (1, 2):
        arrays, kw = problem(rng, kind, fmt, wfmt, groups=groups, rank=rank, bias=kind == CT)
        cp, prepared = _as_matmul(kind, arrays, kw)
        assert prepared.op.lowering.startswith(_lowering.AS_MATMUL)
        out = np.full(cp.result_shape, np.nan, np.float32)
        prepared.run(list(arrays), out)
        assert_call_matches_reference(kind, arrays, kw, out, "f32")


@pytest.mark.parametrize("fmt,wfmt", [("NXC", "XOI"), ("NXC", "IOX"), ("NCX", "IOX")])
@pytest.mark.parametrize("posts", [[], [("ReLU", {})], [("Elu", {"alpha": 0.5}), ("Tanh", {})]],
                         ids=["none", "ReLU", "Elu, Tanh"])
def test_constant_weights_and_post_ops(rng, fmt, wfmt, posts):
    """A converted layer's inference call (``torch._inference``): the weights and bias
    constant (their matrices made once and packed by oneDNN), unary post-ops fused; the
    reference's op then its post-ops (one more f32 rounding each: within the bound,
    which the post-ops' slopes here (at most 1) do not widen). The caller's arrays are
    copied at build, so a later write to them changes nothing. One input position in NCX
    takes its bias too (along the MatMul's columns: "rows-ok")."""
    for one_position, (arrays, kw) in (
            (True, _one_position(rng, CT, fmt, wfmt, 2, batch=5, small_channels=24, big_channels=7,
                                 strides=(1, 1), kernel=(4, 4), bias=True)),
            (False, _problem(rng, CT, fmt, wfmt, 1, 2, bias=True))):
        if fmt == "NCX" and not one_position:  # (a bias along the MatMul's rows: _bias_along_rows)
            arrays = arrays[:2]
        cp = _plan.plan_call(CT, input_names(CT)[:len(arrays)], arrays, dict(kw))
        way = _lowering.matmul_way(cp.plan, cp.input_shapes, cp.native)
        metas = [_compiled.meta(a) for a in arrays]
        out = np.full(cp.result_shape, np.nan, np.float32)
        form = _matmul_form.MatMulForm(way.kind, way.attrs, "f32", metas, _compiled.meta(out),
                                       {i: a for i, a in enumerate(arrays) if i > 0}, posts=posts)
        kept = [a.copy() for a in arrays]
        for a in arrays[1:]:
            a *= 3  # the form keeps its own copies
        form.execute(list(arrays), out)
        if not posts:
            assert_call_matches_reference(CT, kept, kw, out, "f32")
            continue
        want = R.post_ops(R.conv_transpose(*kept, **kw), [og.post.PostOp(k, tuple(a.items())) for k, a in posts])
        # (sums of at most 24 products of numbers near 1, then functions of slope <= 1: the f32
        # error stays near 1e-6 of the largest value; 1e-5 leaves room, a wrong sum is O(1))
        np.testing.assert_allclose(out, want, rtol=0, atol=1e-5 * float(np.abs(want).max()))


@pytest.mark.parametrize("fmt,wfmt", [("NXC", "XOI"), ("NXC", "IOX"), ("NCX", "IOX"), ("NCX", "XOI")])
@pytest.mark.parametrize("groups", [1, 2])
@pytest.mark.parametrize("posts", [[], [("ReLU", {})]], ids=["plain", "ReLU"])
def test_constant_weights_are_held_once_beside_onednn(rng, fmt, wfmt, groups, posts):
    """A form's constant weights: its record of them (``constants``: what a caller hands
    back, and ``Operation.weights``) and the matrix its inner op keeps are one array where
    the matrix is the weights as they lie or a rearranged copy of which they are a view,
    and never a further copy in the inner op: the weights twice with oneDNN's packed
    copy, not three times (DCGAN's first layer: 3.3 MB each). With groups over the
    channels a rearranged matrix may have no such view: then the record is a copy. Either
    way the record holds the caller's values, and the results are the reference's."""
    for arrays, kw in (_one_position(rng, CT, fmt, wfmt, 2, groups, batch=5, small_channels=4 * groups,
                                     big_channels=3 * groups, strides=(1, 1), kernel=(4, 4), bias=True),
                       _problem(rng, CT, fmt, wfmt, groups, 2, bias=True)):
        if fmt == "NCX" and arrays[0].shape[2:] != (1, 1):
            arrays = arrays[:2]  # (k == s NCX: a bias along the MatMul's rows, _bias_along_rows)
        cp = _plan.plan_call(CT, input_names(CT)[:len(arrays)], arrays, dict(kw))
        way = _lowering.matmul_way(cp.plan, cp.input_shapes, cp.native)
        out = np.full(cp.result_shape, np.nan, np.float32)
        form = _matmul_form.MatMulForm(way.kind, way.attrs, "f32", [_compiled.meta(a) for a in arrays],
                                       _compiled.meta(out), {i: a for i, a in enumerate(arrays) if i > 0},
                                       posts=posts)
        p = form.reads.index(1)  # the weights' matrix
        weights, matrix = form.constants[1], form.fixed[p]
        assert np.array_equal(weights, arrays[1]) and not weights.flags.writeable
        assert all(form.inner.constants[q] is m for q, m in form.fixed.items())  # kept, not copied
        if groups == 1:
            assert np.shares_memory(weights, matrix), (form.orientation, form.operands[p].direct)
        form.execute(list(arrays[:1]) + [form.constants[i] for i in range(1, len(arrays))], out)
        want = R.conv_transpose(*arrays, **kw)
        if posts:
            want = np.maximum(want, 0)
        # (sums of at most 16 products of numbers near 1: f32 error near 1e-6 of the largest)
        np.testing.assert_allclose(out, want, rtol=0, atol=1e-5 * float(np.abs(want).max()))
        # The caller's own weights at that position are checked, not read; other arrays refused.
        form.execute(list(arrays), out)
        with pytest.raises(ValueError, match="input 1"):
            form.execute([arrays[0], arrays[1][:1]] + list(arrays[2:]), out)


@pytest.mark.parametrize("kind", list(KINDS))
def test_windows_that_meet_are_not_a_matmul(rng, kind):
    # two input positions 1 apart, kernel 4: their windows overlap; pads make windows partial
    wfmt = _registry.SPECS[kind].weights_formats[0]
    arrays, kw = _problem(rng, kind, "NXC", wfmt, 1, 2, spatial=(2, 1), kernel=(4, 4))
    kw["strides"] = [1, 1]
    if kind == CBD:
        kw["dst_shape"] = [3, 5, 4, 3]
    elif kind == CTBD:
        arrays[0] = random(rng, (3, 5, 4, 3), "f32")
    elif kind == CTBW:
        arrays[1] = random(rng, (3, 5, 4, 3), "f32")
    cp = _plan.plan_call(kind, input_names(kind)[:len(arrays)], arrays, dict(kw))
    assert _lowering.matmul_way(cp.plan, cp.input_shapes, cp.native) is None
    arrays, kw = _one_position(rng, kind, "NXC", wfmt, 2)
    cp = _plan.plan_call(kind, input_names(kind)[:len(arrays)], arrays, dict(kw))
    assert _lowering.matmul_way(cp.plan, cp.input_shapes, cp.native) is not None
    padded = dict(kw, pads_begin=[1, 0], pads_end=[1, 0])
    if kind == CBD:
        padded["dst_shape"] = [3, 2, 3, 3]
    elif kind in (CTBD, CTBW):
        return  # (their big tensor's shape would change with the pads: the CT/CBD cases hold)
    cp = _plan.plan_call(kind, input_names(kind)[:len(arrays)], arrays, padded)
    assert _lowering.matmul_way(cp.plan, cp.input_shapes, cp.native) is None


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("isa,version", [("avx512_core_bf16", (3, 2)), ("avx2", (3, 2)),
                                         ("avx512_core_amx", (3, 2)), ("avx512_core_bf16", (3, 13))])
def test_one_position_rule_where_measured(rng, kind, isa, version):
    """DCGAN's first layer (100 -> 512, kernel 4 at stride 1, batch 16, 26 MFLOP) runs as
    the MatMul by default in f32 where that was measured (Zen 4 natively and capped at
    AVX2: ``MATMUL_ONE_POSITION``), in both data formats, from
    ``MATMUL_ONE_POSITION_FROM_FLOPS``: its forward, ConvolutionBackwardData and weight
    gradient, not its data gradient (0.65-4.1x); not in bf16 (1.1-3.2x natively)."""
    wfmt = _registry.SPECS[kind].weights_formats[0]
    measured = (version, isa) in _lowering.MATMUL_ONE_POSITION and kind != CTBD
    for fmt in ("NXC", "NCX"):
        arrays, kw = _one_position(rng, kind, fmt, wfmt, 2, batch=16, small_channels=100, big_channels=512,
                                   strides=(1, 1), kernel=(4, 4))
        cp = _plan.plan_call(kind, input_names(kind)[:len(arrays)], arrays, dict(kw))
        assert cp.size.flops == 2 * 16 * 100 * 512 * 16
        for dtype, flops, expected in (("f32", cp.size.flops, measured),
                                       ("bf16", cp.size.flops, False),
                                       ("f32", _lowering.MATMUL_ONE_POSITION_FROM_FLOPS - 1, False)):
            way = _lowering.preferred(cp.plan, cp.input_shapes, cp.native, dtype, isa=isa, flops=flops,
                                      version=version)
            assert (way.kind == _matmul_form.MATMUL) == expected, (fmt, dtype, flops, way.lowering)
            if expected:
                assert "one input position" in way.lowering and isa in way.lowering


@pytest.mark.parametrize("isa,version", [("avx512_core_bf16", (3, 2)), ("avx2", (3, 2)),
                                         ("avx512_core_amx", (3, 2))])
def test_constant_bf16_weights_rule(rng, isa, version):
    """With constant weights (made f32 once) a bf16 ConvTranspose of one input position
    runs as the MatMul from ``MATMUL_ONE_POSITION_BF16_FROM_FLOPS`` where measured (Zen 4:
    0.26-0.82x oneDNN's bf16 kernel from 16.8 MFLOP); never with weights given per call,
    nor another op, an f32 call (``preferred`` decides those) or another way already taken."""
    measured = (version, isa) in _lowering.MATMUL_ONE_POSITION_BF16
    for kind in (CT, CBD):
        wfmt = _registry.SPECS[kind].weights_formats[0]
        arrays, kw = _one_position(rng, kind, "NXC", wfmt, 2, batch=16, small_channels=100, big_channels=512,
                                   strides=(1, 1), kernel=(4, 4))
        cp = _plan.plan_call(kind, input_names(kind)[:len(arrays)], arrays, dict(kw))
        for dtype, flops, expected in (("bf16", cp.size.flops, measured and kind == CT),
                                       ("bf16", _lowering.MATMUL_ONE_POSITION_BF16_FROM_FLOPS - 1, False),
                                       ("f32", cp.size.flops, False)):
            way = _lowering.constant_weights_way(cp.plan, cp.input_shapes, cp.native, cp.native, dtype, flops,
                                                 isa=isa, version=version)
            assert (way.kind == _matmul_form.MATMUL) == expected, (kind, dtype, flops)
            if expected:
                assert "constant bf16 weights" in way.lowering and isa in way.lowering
    taken = _lowering.matmul_way(cp.plan, cp.input_shapes, cp.native, "already the default")
    assert _lowering.constant_weights_way(cp.plan, cp.input_shapes, cp.native, taken, "bf16",
                                          cp.size.flops, isa=isa, version=version) is taken


def test_constant_bf16_weights_through_compile_op(rng):
    """``compile_op(..., constant_weights=True)`` takes that rule on this CPU (the MatMul
    where ``MATMUL_ONE_POSITION_BF16`` holds), within bf16's bound of the reference; with
    the weights per call the op runs as ``preferred`` says."""
    arrays, kw = _one_position(rng, CT, "NXC", "XOI", 2, dtype="bf16", batch=16, small_channels=100,
                               big_channels=512, strides=(1, 1), kernel=(4, 4))
    op = og.compile_op(CT, src=arrays[0], weights=arrays[1], constant_weights=True, **kw)
    plain = og.compile_op(CT, src=arrays[0], weights=arrays[1], **kw)
    expected = (_version.linked_version(), og.system.cpu_isa()) in _lowering.MATMUL_ONE_POSITION_BF16
    assert ("constant bf16 weights" in op.lowering) == expected
    assert "constant bf16 weights" not in plain.lowering
    assert_call_matches_reference(CT, arrays, kw, op(arrays[0]), "bf16")


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("fmt", ["NCX", "NXC"])
def test_depthwise_and_many_groups(rng, kind, fmt):
    wfmt = _registry.SPECS[kind].weights_formats[0]
    arrays, kw = _problem(rng, kind, fmt, wfmt, 4, 2, bias=kind == CT, small_channels=4,
                          big_channels=4)
    cp, prepared = _as_matmul(kind, arrays, kw)
    out = np.full(cp.result_shape, np.nan, np.float32)
    prepared.run(list(arrays), out)
    assert_call_matches_reference(kind, arrays, kw, out, "f32")


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_low_precision_runs_its_product_in_f32(rng, kind, dtype):
    """bf16 / f16: exact conversions up, the f32 product, one rounding down; the
    dtype's own bound holds (the chain's: test_as_f32)."""
    for fmt in ("NCX", "NXC"):
        wfmt = _registry.SPECS[kind].weights_formats[-1]
        arrays, kw = _problem(rng, kind, fmt, wfmt, 2, 2, dtype=dtype, bias=kind == CT)
        cp, prepared = _as_matmul(kind, arrays, kw)
        out = np.empty(cp.result_shape, arrays[0].dtype)
        prepared.run(list(arrays), out)
        assert_call_matches_reference(kind, arrays, kw, out, dtype)


@pytest.mark.parametrize("kind", list(KINDS))
def test_strided_inputs_and_out(rng, kind):
    """Every-other-element views in and out: read and written where they lie (the
    matrices are views of them, or the package's rearranging copies)."""
    def strided(a):
        wide = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
        view = wide[..., ::2]
        view[...] = a
        return view
    for fmt in ("NCX", "NXC"):
        wfmt = _registry.SPECS[kind].weights_formats[0]
        arrays, kw = _problem(rng, kind, fmt, wfmt, 1, 2, bias=kind == CT)
        arrays = [strided(a) for a in arrays]
        names = input_names(kind)[:len(arrays)]
        shape = _plan.plan_call(kind, names, arrays, dict(kw)).result_shape
        out = strided(np.full(shape, np.nan, np.float32))
        _, prepared = _as_matmul(kind, arrays, kw, _compiled.meta(out))
        prepared.run(list(arrays), out)
        assert_call_matches_reference(kind, arrays, kw, out, "f32")
        assert not out.base[..., 1::2].any()  # the gaps between its elements, zeros, untouched


def test_refuses_arrays_it_was_not_compiled_for(rng):
    """Its matrices are views made from the compiled strides: any other array is
    refused before anything is read or written."""
    arrays, kw = _problem(rng, CT, "NXC", "XOI", 1, 2)
    cp, prepared = _as_matmul(CT, arrays, kw)
    out = np.full(cp.result_shape, np.nan, np.float32)
    transposed = np.asfortranarray(arrays[0])
    with pytest.raises(ValueError, match="element strides"):
        prepared.op.execute([transposed, arrays[1]], out)
    with pytest.raises(ValueError, match="shares memory"):
        big = np.zeros(max(out.size, arrays[0].size) * 2, np.float32)
        alias = big[:arrays[0].size].reshape(arrays[0].shape)
        alias[...] = arrays[0]
        prepared.op.execute([alias, arrays[1]], big[:out.size].reshape(out.shape))
    read_only = out.copy()
    read_only.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        prepared.op.execute(list(arrays), read_only)
    assert np.isnan(out).all()


def test_only_kernel_equal_to_stride_without_pads_has_it(rng):
    """Overlapping windows, pads, dilation or output_padding: no MatMul formulation."""
    for extra in (dict(strides=1), dict(pads_begin=1, pads_end=1), dict(dilations=2),
                  dict(output_padding=1)):
        x = random(rng, (1, 4, 4, 2), "f32")
        w = random(rng, (2, 2, 3, 2), "f32")
        kw = dict(dict(strides=2, data_format="NXC", weights_format="XOI"), **extra)
        cp = _plan.plan_call(CT, ("src", "weights"), [x, w], kw)
        assert _lowering.matmul_way(cp.plan, cp.input_shapes, cp.native) is None, extra
        assert all(w.kind != _matmul_form.MATMUL for w in
                   _lowering.alternatives(cp.plan, cp.input_shapes, cp.native))


def _few_channels_plan(rng, kind, fmt, big_channels, kernel=(2, 2), bias=False):
    wfmt = _registry.SPECS[kind].weights_formats[0]
    arrays, kw = _problem(rng, kind, fmt, wfmt, 1, 2, small_channels=64, big_channels=big_channels,
                          batch=8, spatial=(16, 16), kernel=kernel, bias=bias)
    return _plan.plan_call(kind, input_names(kind)[:len(arrays)], arrays, dict(kw))


@pytest.mark.parametrize("kind,fmt,isa,channels,kernel,bias,chosen", [
    (CT, "NXC", "avx512_core_bf16", 3, (4, 4), False, True),
    (CT, "NXC", "avx512_core_bf16", 3, (4, 4), True, True),     # NXC: the bias along columns
    (CT, "NXC", "avx512_core_bf16", 3, (2, 2), False, False),   # NXC kernel 2: 0.89-1.48x
    (CT, "NCX", "avx512_core_bf16", 3, (2, 2), False, True),
    (CT, "NCX", "avx2", 3, (4, 4), True, False),                # bias along rows: ref:any
    (CBD, "NCX", "avx512_core_bf16", 3, (2, 2), False, True),
    (CBD, "NCX", "avx512_core_bf16", 8, (2, 2), False, False),  # 8 channels: 0.95-3.73x
    (CT, "NCX", "avx2", 15, (2, 2), False, False),
    (CT, "NXC", "avx512_core_bf16", 16, (2, 2), False, False),  # 16 channels fill a vector
    (CTBD, "NXC", "avx512_core_bf16", 3, (4, 4), False, False), # won on some shapes only: tuning
    (CTBW, "NXC", "avx512_core_bf16", 3, (4, 4), False, False),
    (CT, "NXC", "avx512_core_amx", 3, (4, 4), False, False),    # a family nobody measured runs ops as written
    (CBD, "NXC", "avx2", 64, (2, 2), False, True),              # AVX2: NXC kernel 2 with 32+ channels too
    (CT, "NCX", "avx2", 64, (2, 2), False, False),
    (CT, "NXC", "avx512_core_bf16", 64, (2, 2), False, False),
])
def test_default_rule(rng, kind, fmt, isa, channels, kernel, bias, chosen):
    cp = _few_channels_plan(rng, kind, fmt, channels, kernel, bias)
    way = _lowering.preferred(cp.plan, cp.input_shapes, cp.native, "f32", isa=isa,
                              flops=cp.size.flops, version=(3, 2))
    assert (way.kind == _matmul_form.MATMUL) == chosen, way.lowering
    if chosen:
        assert ("few output channels" if channels < 16 else "NXC kernel 2") in way.lowering
        assert isa in way.lowering
        # bf16 and f16 too: the formulation runs its product in f32 (measured faster
        # than oneDNN's own kernels and the f32 chain for those dtypes)
        way16 = _lowering.preferred(cp.plan, cp.input_shapes, cp.native, "bf16", isa=isa,
                                    flops=cp.size.flops, version=(3, 2))
        assert way16.kind == _matmul_form.MATMUL
        # ...and never below MATMUL_FROM_FLOPS
        small = _lowering.preferred(cp.plan, cp.input_shapes, cp.native, "f32", isa=isa,
                                    flops=_lowering.MATMUL_FROM_FLOPS - 1, version=(3, 2))
        assert small.kind != _matmul_form.MATMUL


def test_a_bias_along_the_matmuls_rows_is_never_offered(rng):
    # NCX ConvTranspose with a bias: oneDNN 3.2's MatMul takes that bias on its reference
    # kernel (100x the native time): not the default, and tuning does not time it
    cp = _few_channels_plan(rng, CT, "NCX", 3, (4, 4), bias=True)
    ways = _lowering.alternatives(cp.plan, cp.input_shapes, cp.native)
    assert all(w.kind != _matmul_form.MATMUL for w in ways)
    cp = _few_channels_plan(rng, CT, "NCX", 3, (4, 4), bias=False)
    assert any(w.kind == _matmul_form.MATMUL for w in _lowering.alternatives(cp.plan, cp.input_shapes,
                                                                             cp.native))


def test_default_rule_on_this_cpu_runs_it_through_the_public_api(rng):
    """A ViT-like few-channel problem through og.conv_transpose: what the rule says
    for this CPU runs, and agrees with the reference."""
    arrays, kw = _problem(rng, CT, "NXC", "XOI", 1, 2, bias=True, small_channels=64, big_channels=3,
                          batch=8, spatial=(16, 16), kernel=(4, 4))
    cp = _plan.plan_call(CT, input_names(CT), arrays, dict(kw))
    op = og.compile_op(CT, src=arrays[0], weights=arrays[1], bias=arrays[2], **kw)
    assert op.lowering == cp.way.lowering
    expected = (_version.linked_version(), og.system.cpu_isa()) in _lowering.MATMUL_FEW_CHANNELS
    assert op.lowering.startswith(_lowering.AS_MATMUL) == expected
    got = og.conv_transpose(*arrays, **kw)
    assert_call_matches_reference(CT, arrays, kw, got, "f32")
    np.testing.assert_array_equal(op(*arrays), got)


def test_tuning_offers_it(rng, tmp_path, monkeypatch):
    monkeypatch.setenv("ONEDNN_GRAPH_TUNING_DB", str(tmp_path / "tuning.json"))
    arrays, kw = _problem(rng, CTBD, "NXC", "XOI", 1, 2)
    op = og.compile_op(CTBD, diff_dst=arrays[0], weights=arrays[1], tune=True, **kw)
    assert op.tuning is not None and any(k.startswith(_lowering.AS_MATMUL) for k in op.tuning), \
        op.tuning
    assert_call_matches_reference(CTBD, arrays, kw, op(*arrays), "f32")


@pytest.mark.parametrize("kind,fmt", list(itertools.product(KINDS, ["NCX", "NXC"])))
def test_reproducer_holds_the_matmul_and_replays_exactly(rng, kind, fmt):
    """A call run as the MatMul writes the MatMul oneDNN ran, on its matrices; the
    driver replays it in exact mode (integers an f32 accumulator sums exactly)."""
    wfmt = _registry.SPECS[kind].weights_formats[0]
    arrays, kw = _problem(rng, kind, fmt, wfmt, 2, 2, bias=kind == CT)
    cp, prepared = _as_matmul(kind, arrays, kw)
    doc = og.reproducer.reproducer(prepared.op).native
    assert [op["kind"] for op in doc["graph"]] == ["MatMul"]
    assert _runner.run(og.load_graph(doc), exact=True).passed
    # A planned call (described, not run) writes the same MatMul.
    reproducer_module = importlib.import_module("onednn_graph.reproducer")
    way = _lowering.matmul_way(cp.plan, cp.input_shapes, cp.native)
    described = reproducer_module.describe(dataclasses.replace(cp, way=way), arrays)
    assert described.native["graph"][0]["kind"] == "MatMul"
    assert described.native["graph"][0]["inputs"] == doc["graph"][0]["inputs"]


def test_reference_matmul_by_hand():
    a = np.arange(6, dtype=np.float32).reshape(1, 2, 3)
    b = np.arange(12, dtype=np.float32).reshape(2, 3, 2)  # batch broadcast: 1 against 2
    got = R.matmul(a, b, np.array([1.0, -1.0], np.float32))
    want = np.stack([a[0] @ b[0], a[0] @ b[1]]) + np.array([1.0, -1.0])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(R.matmul(b, a, transpose_a=True, transpose_b=True),
                                  np.swapaxes(b, 1, 2) @ np.swapaxes(a, 1, 2))


@pytest.mark.parametrize("kind,wfmt,expected", [
    (CT, "IOX", "columns-ok"), (CT, "XOI", "columns"), (CBD, "OIX", "columns-ok"),
    (CTBD, "IOX", "columns-ok"), (CTBW, "IOX", "rows")])
def test_channels_first_reads_channels_first_weights_in_place(rng, kind, wfmt, expected):
    """Per sample, the rows run over the output channel first where that makes the
    weights a matrix oneDNN reads as they lie (no copy of them per call)."""
    arrays, kw = _problem(rng, kind, "NCX", wfmt, 1, 2, bias=kind == CT)
    cp, prepared = _as_matmul(kind, arrays, kw)
    form = prepared.op
    assert form.orientation == expected
    if expected == "columns-ok":
        assert form.operands[0].direct  # the weights
    out = np.full(cp.result_shape, np.nan, np.float32)
    prepared.run(list(arrays), out)
    assert_call_matches_reference(kind, arrays, kw, out, "f32")
