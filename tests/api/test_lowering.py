"""Each rewrite of _impl/lowering.py: the decision it takes, and that the op it
hands oneDNN computes the spec's numbers (the float64 reference).

A case names a call, the op oneDNN is to compile for it (``lower``) and what
runs by default (``preferred``). The call then runs through ``compile_op``, so
``Operation.lowering`` shows what ran, and its result is compared with the
reference in f32 (bound: onednn_graph.tolerance; the dtypes are test_ops').
"""

import pytest

import onednn_graph as og
from onednn_graph import reference as R
from onednn_graph import shapes
from onednn_graph._impl import lowering as _lowering
from onednn_graph._impl import version as _version
from onednn_graph._impl.plan import plan_call
from onednn_graph.tolerance import accumulation_terms
from helpers import assert_matches_reference, random

CT, CTBD, CTBW, CBD = ("ConvTranspose", "ConvTransposeBackwardData",
                       "ConvTransposeBackwardWeights", "ConvolutionBackwardData")
FUNCTIONS = {CT: R.conv_transpose, CTBD: R.conv_transpose_backward_data,
             CTBW: R.conv_transpose_backward_weights, CBD: R.convolution_backward_data}


def _arrays(rng, kind, fmt, attrs, c_in=4, c_out=6, x=(5, 6), k=(3, 2), bias=False):
    """The inputs of `kind` (and its shape keyword) for a ConvTranspose of src with
    `c_in` channels and spatial `x` to `c_out` channels, kernel `k`; for
    ConvolutionBackwardData the convolution that ConvTranspose is the adjoint of."""
    rank = len(x)
    if kind == CBD:
        wfmt = attrs.get("weights_format", "XIO")
        a = og._impl.attrs.normalize(kind, rank, **dict(attrs, weights_format=wfmt, data_format=fmt))
        w = random(rng, shapes.weights_shape_for(a, c_out, c_in, k), "f32")
        conv = {n: v for n, v in attrs.items() if n != "output_padding"}
        dst = shapes.data_shape_for(fmt, 2, c_out, (9, 8)[:rank])
        dy_shape = shapes.plan("Convolution", [dst, w.shape], data_format=fmt, **conv).output_shape
        return [random(rng, dy_shape, "f32"), w], dict(dst_shape=dst)
    wfmt = attrs.get("weights_format", "XOI")
    a = og._impl.attrs.normalize(CT, rank, **dict(attrs, weights_format=wfmt, data_format=fmt))
    src = random(rng, shapes.data_shape_for(fmt, 2, c_in, x), "f32")
    w = random(rng, shapes.weights_shape_for(a, c_in, c_out, k), "f32")
    y_shape = shapes.output_shape(CT, [src.shape, w.shape], data_format=fmt, **attrs)
    if kind == CT:
        return ([src, w, random(rng, (c_out,), "f32")] if bias else [src, w]), {}
    dy = random(rng, y_shape, "f32")
    if kind == CTBD:
        return [dy, w], {}
    return [src, dy], dict(weights_shape=w.shape)


# (id, kind, data_format, attrs, bias, what lower() hands oneDNN, what runs by default)
# An expectation is (op kind, a phrase of its `lowering`, crop, unreached).
CASES = [
    ("as-given", CT, "NCX", dict(strides=2, pads_begin=1, pads_end=0), True,
     (CT, "native", (), False), None),
    ("auto_pad-spelling", CT, "NCX", dict(strides=2, auto_pad="same_upper"), True,
     (CT, "native", (), False), None),
    ("output_padding-below-stride", CT, "NCX", dict(strides=3, output_padding=2), True,
     (CT, "native", (), False), None),
    ("output_padding-folds", CT, "NCX", dict(strides=2, pads_end=2, output_padding=2), True,
     (CT, "output_padding folded into pads_end", (), False), None),
    ("output_padding-folds-ctbd", CTBD, "NCX", dict(strides=2, output_padding=1, pads_end=1), False,
     (CTBD, "output_padding folded into pads_end", (), False), None),
    ("output_padding-folds-ctbw", CTBW, "NCX", dict(strides=2, output_padding=1, pads_end=1), False,
     (CTBW, "output_padding folded into pads_end", (), False), None),
    ("negative-pads-crop", CT, "NCX", dict(pads_begin=[-1, 0], pads_end=[0, -2]), True,
     (CT, _lowering.ON_A_VIEW, ((1, 0), (0, 2)), False), None),
    ("folded-pads-end-negative-crops", CTBD, "NCX", dict(strides=2, output_padding=1), False,
     (CTBD, _lowering.ON_A_VIEW, ((0, 1), (0, 1)), False), None),
    ("unreached-is-the-bias", CT, "NCX", dict(strides=2, pads_begin=[11, 12], pads_end=-1), True,
     (CT, "no kernel window reaches the output: it is the bias", ((0, 1), (0, 1)), True), None),
    ("unreached-is-zeros", CTBW, "NCX", dict(strides=2, pads_begin=[11, 12], pads_end=-1), False,
     (CTBW, "no kernel window reaches the output: it is zeros", ((0, 1), (0, 1)), True), None),
    ("ctbd-dilations", CTBD, "NCX", dict(dilations=2), False,
     ("Convolution", "Convolution over the same weights (dilations > 1)", (), False), None),
    ("ctbd-auto_pad-resolved", CTBD, "NCX", dict(strides=2, auto_pad="same_lower"), False,
     (CTBD, "auto_pad resolved as ConvTranspose does", (), False), None),
    ("ctbw-auto_pad-resolved", CTBW, "NCX", dict(strides=2, auto_pad="same_upper"), False,
     (CTBW, "auto_pad resolved as ConvTranspose does", (), False), None),
    ("cbd-native", CBD, "NCX", dict(strides=2, pads_begin=1), False,
     (CBD, "native", (), False), None),
    ("cbd-groups", CBD, "NCX", dict(strides=2, groups=2), False,
     (CT, "ConvTranspose over the same weights (groups > 1)", (), False), None),
    ("cbd-groups-negative-pads", CBD, "NCX", dict(groups=2, pads_begin=-1), False,
     (CT, "ConvTranspose over the same weights (groups > 1), " + _lowering.ON_A_VIEW,
      ((1, 0), (1, 0)), False), None),
    # preferred(): measured faster forms (lowering.preferred's docstring). The
    # ConvTranspose cases above have a bias, which keeps a tiny one as written.
    ("tiny-ct-as-cbd", CT, "NCX", dict(strides=2), False, (CT, "native", (), False),
     ("ConvolutionBackwardData", "faster on oneDNN {version} for a tiny problem")),
    # NXC only;
    # these hold on every CPU family (test_tuning.DEFAULTS pins each family's rules).
    ("ctbw-grouped-f32-nxc", CTBW, "NXC", dict(strides=2, groups=2), False,
     (CTBW, "native", (), False),
     ("ConvolutionBackwardWeights", "ConvolutionBackwardWeights of diff_dst and src")),
    ("ctbd-grouped-nxc", CTBD, "NXC", dict(strides=2, groups=2), False,
     (CTBD, "native", (), False), ("Convolution", "Convolution over the same weights")),
    ("ctbd-grouped-ncx-as-written", CTBD, "NCX", dict(strides=2, groups=2), False,
     (CTBD, "native", (), False), None),
]


@pytest.mark.parametrize("kind, fmt, attrs, bias, native, runs",
                         [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_lowering_decides_and_matches_reference(rng, kind, fmt, attrs, bias, native, runs):
    arrays, shape_kw = _arrays(rng, kind, fmt, attrs, bias=bias)
    kw = dict(attrs, data_format=fmt, **shape_kw)
    names = og._impl.registry.input_names(kind)[:len(arrays)]
    call = plan_call(kind, names, arrays, kw)
    native_kind, phrase, crop, unreached = native
    assert (call.native.kind, call.native.crop, call.native.unreached) == (native_kind, crop, unreached)
    assert phrase in call.native.lowering
    if not unreached:
        assert min(call.native.attrs["pads_begin"] + call.native.attrs["pads_end"]) >= 0, \
            "oneDNN is never handed a negative pad (lowering's module docstring)"
    # The measured rules hold where this oneDNN version and CPU family were measured
    # (_lowering.measured); elsewhere every op runs as lowered.
    v = _version.linked_version()
    if runs and not _lowering.measured(v, og.system.cpu_isa()):
        runs = None
    want = (runs[0], runs[1].format(version=f"{v[0]}.{v[1]}")) if runs else \
        (call.native.kind, call.native.lowering)
    assert (call.way.kind, want[1] in call.way.lowering) == (want[0], True)

    op = og.compile_op(kind, **dict(zip(names, (a.shape for a in arrays))), dtype="f32", **kw)
    # (a bias may run apart on this CPU's kernel: _impl.epilogue_apart, said after the plan's)
    apart = "its bias and post-ops after it"
    assert op.lowering == call.way.lowering or (bias and apart in op.lowering and (
        call.way.lowering == "native" or op.lowering.startswith(call.way.lowering + ", ")))
    got = op(*arrays)
    terms = accumulation_terms(call.plan, call.input_shapes)
    assert_matches_reference(got, FUNCTIONS[kind], tuple(arrays), kw, "f32", terms)


def test_alternatives_compute_the_same_numbers(rng):
    """Each form ``tune=True`` may pick (lowering.alternatives) against the reference:
    tuning keeps the fastest, so every candidate must be right."""
    for kind in (CT, CTBD, CTBW, CBD):
        arrays, shape_kw = _arrays(rng, kind, "NXC", dict(strides=2, pads_begin=1))
        kw = dict(strides=2, pads_begin=1, data_format="NXC", **shape_kw)
        names = og._impl.registry.input_names(kind)[:len(arrays)]
        op = og.compile_op(kind, **dict(zip(names, arrays)), tune=True, **kw)
        call = plan_call(kind, names, arrays, kw)
        alternatives = _lowering.alternatives(call.plan, call.input_shapes, call.native)
        assert alternatives and op.tuning is not None
        for alternative in alternatives:
            form = alternative.lowering.split(" (")[0]  # its reason differs by who chose it
            assert any(k.startswith(form) for k in op.tuning), op.tuning
        terms = accumulation_terms(call.plan, call.input_shapes)
        assert_matches_reference(op(*arrays), FUNCTIONS[kind], tuple(arrays), kw, "f32", terms)


def test_spelled_natively_keeps_every_attribute_but_auto_pad():
    a = og._impl.attrs.normalize(CT, 2, strides=2, auto_pad="same_lower", output_padding=1)
    native = _lowering.spelled_natively(a)
    assert native["auto_pad"] == "SAME_LOWER"
    assert {k: v for k, v in native.items() if k != "auto_pad"} == \
        {k: v for k, v in a.as_dict().items() if k != "auto_pad"}


def test_weights_format_maps_are_inverse():
    assert {v: k for k, v in _lowering.TRANSPOSE_AS_CONV_FORMAT.items()} == \
        _lowering.CONV_AS_TRANSPOSE_FORMAT
