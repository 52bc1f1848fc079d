"""The four operations on oneDNN against the float64 reference.

One factor at a time: a base problem, then each attribute through its values,
for every op, dtype and data format. Tolerances: conftest.assert_matches_reference.
"""

import itertools

import numpy as np
import pytest

import onednn_graph as og
from onednn_graph import reference as R
from onednn_graph import shapes
from helpers import assert_matches_reference, random

BASE = dict(rank=2, strides=2, dilations=1, pads_begin=1, pads_end=0, output_padding=0,
            auto_pad="none", groups=1, weights_format="XOI", bias=False)
VARIANTS = ([dict(rank=r) for r in (1, 3)]
            + [dict(strides=s) for s in (1, 3)]
            + [dict(dilations=2), dict(dilations=2, strides=1, pads_begin=2, pads_end=1)]
            + [dict(pads_begin=0, pads_end=2), dict(pads_begin=2, pads_end=1)]
            + [dict(output_padding=1), dict(output_padding=1, strides=3, pads_begin=0),
               dict(output_padding=2, strides=2, pads_begin=0, pads_end=2),
               # output_padding >= strides + pads_end: outputs outside every kernel window
               dict(output_padding=3, strides=2, pads_begin=0, pads_end=0),
               dict(output_padding=3, strides=1, dilations=2, bias=True),
               dict(output_padding=4, strides=2, auto_pad="same_lower", rank=3, bias=True)]
            + [dict(auto_pad=a) for a in ("same_upper", "same_lower", "valid", "SAME_UPPER")]
            + [dict(auto_pad=a, strides=1) for a in ("same_upper", "same_lower")]
            # Negative pads (the JAX and ONNX conventions reach them): positions
            # outside every kernel window before and after the full output.
            + [dict(pads_begin=-1), dict(pads_begin=-1, pads_end=-2, strides=1),
               dict(pads_begin=[1, -1], pads_end=[-2, 0], output_padding=1, bias=True),
               # No kernel window reaches any output position: the result is fixed by
               # the geometry alone (the bias, or zeros), without oneDNN.
               dict(pads_begin=[15, 12], pads_end=-1), dict(pads_begin=[15, 12], pads_end=-1, bias=True),
               dict(pads_begin=-1, pads_end=-1, strides=1, dilations=2, rank=1)]
            + [dict(groups=g) for g in (2, 3, "depthwise")]
            + [dict(weights_format="IOX"), dict(weights_format="IOX", groups=2),
               dict(bias=True), dict(bias=True, groups=2)])
OPS = ("ConvTranspose", "ConvTransposeBackwardData", "ConvTransposeBackwardWeights",
       "ConvolutionBackwardData")


def _id(v):
    return "-".join(f"{k}{val}" for k, val in v.items()) or "base"


def _valid(op, case):
    """Whether `case` is a case of `op`: a bias is ConvTranspose's input alone, and
    ConvolutionBackwardData's output_padding changes nothing (dst_shape fixes the
    geometry; test_cbd_ignores_output_padding shows it)."""
    if case.get("bias") and op != "ConvTranspose":
        return False
    return not (op == "ConvolutionBackwardData" and case.get("output_padding"))


# (op, case): only the combinations that are cases of the op.
CASES = [pytest.param(op, case, id=f"{op}-{_id(case)}")
         for op in OPS for case in [{}] + VARIANTS if _valid(op, case)]


def problem(rng, op, dtype, data_format, case):
    """Arrays and keywords for one case; returns (call, reference, args, kwargs, terms)."""
    c = dict(BASE, **case)
    rank, groups = c.pop("rank"), c.pop("groups")
    bias = c.pop("bias")
    c_in, c_out = (6, 6) if groups == "depthwise" else (2 * groups, 3 * groups)
    groups = 6 if groups == "depthwise" else groups
    spatial = (7, 6, 5)[:rank]
    kernel = (3, 2, 3)[:rank]
    kw = dict(c, groups=groups, data_format=data_format)
    x_shape = shapes.data_shape_for(data_format, 2, c_in, spatial)
    assert _valid(op, case), (op, case)
    if op == "ConvolutionBackwardData":
        kw["weights_format"] = {"XOI": "XIO", "IOX": "OIX"}[kw["weights_format"]]
        a = og._impl.attrs.normalize(op, rank, **{k: v for k, v in kw.items()})
        w = random(rng, shapes.weights_shape_for(a, c_in, c_out, kernel), dtype)
        dy_shape = shapes.plan("Convolution", [x_shape, w.shape],
                               **{k: v for k, v in kw.items() if k != "output_padding"}).output_shape
        dy = random(rng, dy_shape, dtype)
        return og.convolution_backward_data, R.convolution_backward_data, (dy, w), \
            dict(kw, dst_shape=x_shape), c_out // groups * np.prod(kernel)
    a = og._impl.attrs.normalize("ConvTranspose", rank, **kw)
    w = random(rng, shapes.weights_shape_for(a, c_in, c_out, kernel), dtype)
    x = random(rng, x_shape, dtype)
    y_shape = shapes.output_shape("ConvTranspose", [x.shape, w.shape], **kw)
    if op == "ConvTranspose":
        args = (x, w, random(rng, (c_out,), dtype)) if bias else (x, w)
        return og.conv_transpose, R.conv_transpose, args, kw, c_in * np.prod(kernel) + 1
    dy = random(rng, y_shape, dtype)
    if op == "ConvTransposeBackwardData":
        return og.conv_transpose_backward_data, R.conv_transpose_backward_data, (dy, w), kw, \
            c_out // groups * np.prod(kernel)
    return og.conv_transpose_backward_weights, R.conv_transpose_backward_weights, (x, dy), \
        dict(kw, weights_shape=w.shape), 2 * np.prod(y_shape[1:])


@pytest.mark.parametrize("data_format", ["NXC", "NCX"])
@pytest.mark.parametrize("op, case", CASES)
def test_matches_reference(rng, op, dtype, data_format, case):
    call, ref, args, kw, terms = problem(rng, op, dtype, data_format, case)
    got = call(*args, **kw)
    assert got.dtype == args[0].dtype
    assert_matches_reference(got, ref, args, kw, dtype, terms)


def test_out_is_written_in_place_and_returned(rng):
    x = random(rng, (1, 4, 4, 3), "f32")
    w = random(rng, (2, 2, 5, 3), "f32")
    out = np.full((1, 8, 8, 5), np.nan, np.float32)
    assert og.conv_transpose(x, w, strides=2, out=out) is out
    np.testing.assert_array_equal(out, og.conv_transpose(x, w, strides=2))


def test_shape_input_as_int32_array_equals_attribute(rng):
    x = random(rng, (1, 5, 3), "f32")
    dy = random(rng, (1, 11, 4), "f32")
    by_list = og.conv_transpose_backward_weights(x, dy, (3, 4, 3), strides=2)
    by_array = og.conv_transpose_backward_weights(x, dy, np.array([3, 4, 3], np.int32), strides=2)
    np.testing.assert_array_equal(by_list, by_array)


def test_cbd_ignores_output_padding(rng):
    dy = random(rng, (1, 4, 4), "f32")
    w = random(rng, (3, 2, 4), "f32")  # XIO
    plain = og.convolution_backward_data(dy, w, (1, 9, 2), strides=2)
    padded = og.convolution_backward_data(dy, w, (1, 9, 2), strides=2, output_padding=1)
    np.testing.assert_array_equal(plain, padded)


@pytest.mark.parametrize("filter_format", ["OIX", "XIO"])
@pytest.mark.parametrize("groups", [1, 2])
def test_legacy_backprop_filters_is_backward_weights_with_swapped_channel_axes(rng, filter_format, groups):
    x = random(rng, (2, 5, 4), "f32")       # NXC, C_in = 4
    dy = random(rng, (2, 10, 6), "f32")     # C_out = 6
    current = {"OIX": "IOX", "XIO": "XOI"}[filter_format]
    ws = (4, 6 // groups, 2) if current == "IOX" else (2, 6 // groups, 4)
    new = og.conv_transpose_backward_weights(x, dy, ws, strides=2, groups=groups,
                                             weights_format=current)
    swap = (1, 0, 2) if current == "IOX" else (0, 2, 1)
    legacy = og.conv_transpose_backprop_filters(x, dy, tuple(ws[i] for i in swap), strides=2,
                                                groups=groups, filter_format=filter_format)
    np.testing.assert_array_equal(legacy, new.transpose(swap))


def test_output_shape_agrees_with_onednn(rng):
    for strides, pads, op_pad in itertools.product((1, 2, 3), (0, 1), (0, 1)):
        if op_pad >= strides:
            continue
        x = random(rng, (1, 3, 5, 5), "f32")
        w = random(rng, (3, 4, 3, 3), "f32")
        kw = dict(strides=strides, pads_begin=pads, pads_end=pads, output_padding=op_pad,
                  data_format="NCX", weights_format="IOX")
        assert og.output_shape("ConvTranspose", [x.shape, w.shape], **kw) == \
            og.conv_transpose(x, w, **kw).shape


def test_a_gradient_no_kernel_window_reaches_is_zero(rng, dtype):
    """The issue's case: valid for oneDNN's spec, refused by its primitives (no diff_dst
    position a kernel window reads); PyTorch and the reference give zeros."""
    kw = dict(strides=(1, 1, 2), dilations=(2, 1, 1), pads_begin=(1, 2, 2), pads_end=(0, 0, 2),
              output_padding=(1, 0, 1), groups=3, data_format="NCX", weights_format="IOX")
    x, dy = random(rng, (2, 3, 1, 3, 2), dtype), random(rng, (2, 6, 1, 2, 1), dtype)
    ws = (3, 2, 1, 2, 2)
    assert og.output_shape("ConvTransposeBackwardWeights", [x.shape, dy.shape], weights_shape=ws,
                           **kw) == ws
    got = og.conv_transpose_backward_weights(x, dy, ws, **kw)
    assert got.dtype == x.dtype and not np.any(got.astype(np.float32))
    np.testing.assert_array_equal(got.astype(np.float64),
                                  R.conv_transpose_backward_weights(x, dy, ws, **kw).astype(np.float64))
    op = og.compile_op("ConvTransposeBackwardWeights", src=x, diff_dst=dy, weights_shape=ws, **kw)
    assert op.lowering.startswith("no kernel window reaches the output")
    out = np.full(ws, np.nan, x.dtype)
    assert op(x, dy, out=out) is out and not np.any(out.astype(np.float32))
    with pytest.raises(ValueError, match="shape"):
        op(x[:1], dy)
