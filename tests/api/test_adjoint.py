"""Adjoint identities of oneDNN's own results: no reference needed for the three
ConvTranspose ops, which must be each other's transposes:

    <ConvTranspose(x, W), dy> = <x, ConvTransposeBackwardData(dy, W)>
                              = <W, ConvTransposeBackwardWeights(x, dy)>

and <conv(x, W), dy> = <x, ConvolutionBackwardData(dy, W)> with conv from the
reference. The inner products are summed in float64.

Bound: each op's output element y_j is within e_j = 2u|y_j| + T*2**-24*M_j of
its exact value (onednn_graph.tolerance), where M_j is the same op on the
inputs' absolute values, computed by oneDNN too (in f32 its own relative
error is below T*2**-24 < 1e-3, so 1.01*M_j bounds the exact value). An inner
product <a, y> then moves by at most sum_j |a_j| e_j; float64 summation adds
n*2**-53*sum|a_j y_j|, far below that. Two sides may differ by both bounds.
"""

import numpy as np
import pytest

import onednn_graph as og
from onednn_graph import reference as ref
from onednn_graph import shapes
from onednn_graph.tolerance import UNIT_ROUNDOFF, accumulation_terms
from helpers import NUMPY
from helpers import ADJOINT_CASES, ct_case as _ct_case


def _as(dtype, *arrays):
    return [a.astype(NUMPY[dtype]) for a in arrays]


def _bound(dtype, weight, y, magnitude, terms):
    """sum_j |weight_j| * e_j for output y with magnitude M (see the module docstring)."""
    e = 2 * UNIT_ROUNDOFF[dtype] * np.abs(y) + terms * 2.0**-24 * 1.01 * magnitude
    return float(np.sum(np.abs(weight) * e)) + y.size * 2.0**-53 * float(np.sum(np.abs(weight * y)))


def _f64(a):
    return np.asarray(a, np.float64)


@pytest.mark.parametrize("layout", [("NCX", "IOX"), ("NXC", "XOI")])
@pytest.mark.parametrize("case", ADJOINT_CASES, ids=lambda c: f"{c[0]}d-g{c[1]}-{c[-1]}-op{c[-2]}")
def test_conv_transpose_family_is_its_own_adjoint(case, layout, dtype):
    nsp, g, c_in, c_out, x_sp, k, s, d, pb, pe, op, auto_pad = case
    rng = np.random.default_rng(ADJOINT_CASES.index(case))
    x, w, kw = _ct_case(rng, nsp, g, c_in, c_out, x_sp, k, s, d, pb, pe, auto_pad, *layout)
    kw["output_padding"] = op
    x, w = _as(dtype, x, w)
    y = og.conv_transpose(x, w, **kw)
    dy, = _as(dtype, rng.standard_normal(y.shape))
    dx = og.conv_transpose_backward_data(dy, w, **kw)
    dw = og.conv_transpose_backward_weights(x, dy, w.shape, **kw)
    ax, aw, ady = np.abs(x), np.abs(w), np.abs(dy)
    plan = shapes.plan("ConvTranspose", [x.shape, w.shape], **kw)
    t_y = accumulation_terms(plan, [x.shape, w.shape])
    t_dx = accumulation_terms(shapes.plan("ConvTransposeBackwardData", [dy.shape, w.shape], **kw),
                              [dy.shape, w.shape])
    t_dw = accumulation_terms(shapes.plan("ConvTransposeBackwardWeights", [x.shape, dy.shape],
                                          weights_shape=w.shape, **kw), [x.shape, dy.shape])
    e_y = _bound(dtype, dy, _f64(y), _f64(og.conv_transpose(ax, aw, **kw)), t_y)
    e_dx = _bound(dtype, x, _f64(dx), _f64(og.conv_transpose_backward_data(ady, aw, **kw)), t_dx)
    e_dw = _bound(dtype, w, _f64(dw),
                  _f64(og.conv_transpose_backward_weights(ax, ady, w.shape, **kw)), t_dw)
    lhs = np.vdot(_f64(y), _f64(dy))
    assert abs(lhs - np.vdot(_f64(x), _f64(dx))) <= e_y + e_dx
    assert abs(lhs - np.vdot(_f64(w), _f64(dw))) <= e_y + e_dw


@pytest.mark.parametrize("layout", [("NCX", "OIX"), ("NXC", "XIO")])
@pytest.mark.parametrize("case", ADJOINT_CASES, ids=lambda c: f"{c[0]}d-g{c[1]}-{c[-1]}")
def test_convolution_backward_data_is_the_adjoint_of_convolution(case, layout, dtype):
    nsp, g, c_in, c_out, x_sp, k, s, d, pb, pe, _, auto_pad = case
    rng = np.random.default_rng(ADJOINT_CASES.index(case))
    ct_layout = (layout[0], {"OIX": "IOX", "XIO": "XOI"}[layout[1]])
    x, _, kw = _ct_case(rng, nsp, g, c_in, c_out, x_sp, k, s, d, pb, pe, auto_pad, *ct_layout)
    kw["weights_format"] = layout[1]
    a = og._impl.attrs.normalize("ConvolutionBackwardData", nsp, **kw)
    x, w = _as(dtype, x, rng.standard_normal(shapes.weights_shape_for(a, c_in, c_out, k)))
    y = ref.convolution(_f64(x), _f64(w), **kw)  # exact up to float64 rounding
    dy, = _as(dtype, rng.standard_normal(y.shape))
    dx = og.convolution_backward_data(dy, w, x.shape, **kw)
    plan = shapes.plan("ConvolutionBackwardData", [dy.shape, w.shape], dst_shape=x.shape, **kw)
    magnitude = _f64(og.convolution_backward_data(np.abs(dy), np.abs(w), x.shape, **kw))
    e_dx = _bound(dtype, x, _f64(dx), magnitude, accumulation_terms(plan, [dy.shape, w.shape]))
    e_conv = y.size * 2.0**-50 * float(np.sum(np.abs(y * _f64(dy))))
    assert abs(np.vdot(y, _f64(dy)) - np.vdot(_f64(x), _f64(dx))) <= e_dx + e_conv
