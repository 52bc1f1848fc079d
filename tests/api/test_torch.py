"""oneDNN's results against PyTorch (skipped unless torch is installed).

PyTorch is a second, independent truth: its conv_transpose and the autograd
gradients of conv_transpose / conv give all four ops on the cases it can
express (symmetric... or any pads, by cropping its unpadded result with
F.pad, as test_reference does for the reference). PyTorch computes in float64
here, so the bound is onednn_graph.tolerance's, with PyTorch in the
reference's place.
"""

import numpy as np
import pytest

import onednn_graph as og
from onednn_graph import shapes
from onednn_graph.tolerance import accumulation_terms, compare
from helpers import NUMPY
from helpers import TORCH_CASES, import_torch as _import_torch, torch_ops

NCX_IOX = dict(data_format="NCX", weights_format="IOX")


def _vjp(torch, fn, wrt, primals, cotangent):
    """The gradient of <fn(*primals), cotangent> with respect to primals[wrt], in float64."""
    ts = [torch.tensor(np.asarray(p, np.float64), requires_grad=i == wrt) for i, p in enumerate(primals)]
    (fn(*ts) * torch.tensor(np.asarray(cotangent, np.float64))).sum().backward()
    return ts[wrt].grad.numpy()


@pytest.mark.parametrize("case", TORCH_CASES, ids=lambda c: f"{c[0]}d-g{c[1]}-s{c[6]}-op{c[10]}")
def test_all_four_ops_match_torch(case, dtype):
    torch = _import_torch()
    nsp, g, c_in, c_out, x_sp, k, s, d, pb, pe, op = case
    rng = np.random.default_rng(sum(x_sp) + 10 * g)
    cast = NUMPY[dtype]
    kw = dict(strides=s, dilations=d, pads_begin=pb, pads_end=pe, groups=g, output_padding=op,
              **NCX_IOX)
    conv_transpose, convolution = torch_ops(torch, nsp, s, d, pb, pe, op, g)
    x = rng.uniform(-1, 1, (2, c_in, *x_sp)).astype(cast)
    w = rng.uniform(-1, 1, (c_in, c_out // g, *k)).astype(cast)
    b = rng.uniform(-1, 1, c_out).astype(cast)

    def torch_forward(*arrays):
        return conv_transpose(*[torch.tensor(np.asarray(a, np.float64)) for a in arrays]).numpy()

    y = og.conv_transpose(x, w, b, **kw)
    plan = shapes.plan("ConvTranspose", [x.shape, w.shape, b.shape], **kw)
    result = compare(y, torch_forward, (x, w, b), {}, dtype, accumulation_terms(plan, [x.shape]))
    assert result.ok, f"ConvTranspose: {result}"

    dy = rng.uniform(-1, 1, y.shape).astype(cast)
    dx = og.conv_transpose_backward_data(dy, w, **kw)
    terms = accumulation_terms(shapes.plan("ConvTransposeBackwardData", [dy.shape, w.shape], **kw),
                               [dy.shape, w.shape])
    result = compare(dx, lambda dy_, w_: _vjp(torch, conv_transpose, 0, (x, w_), dy_), (dy, w), {},
                     dtype, terms)
    assert result.ok, f"ConvTransposeBackwardData: {result}"

    dw = og.conv_transpose_backward_weights(x, dy, w.shape, **kw)
    terms = accumulation_terms(shapes.plan("ConvTransposeBackwardWeights", [x.shape, dy.shape],
                                           weights_shape=w.shape, **kw), [x.shape, dy.shape])
    result = compare(dw, lambda x_, dy_: _vjp(torch, conv_transpose, 1, (x_, w), dy_), (x, dy), {},
                     dtype, terms)
    assert result.ok, f"ConvTransposeBackwardWeights: {result}"

    # ConvolutionBackwardData: the gradient of PyTorch's convolution w.r.t. its input.
    w_oix = rng.uniform(-1, 1, (c_out, c_in // g, *k)).astype(cast)
    conv_kw = dict(kw, weights_format="OIX")
    del conv_kw["output_padding"]
    dyc_shape = shapes.plan("Convolution", [x.shape, w_oix.shape], **conv_kw).output_shape
    dyc = rng.uniform(-1, 1, dyc_shape).astype(cast)
    dxc = og.convolution_backward_data(dyc, w_oix, x.shape, **conv_kw)
    terms = accumulation_terms(shapes.plan("ConvolutionBackwardData", [dyc.shape, w_oix.shape],
                                           dst_shape=x.shape, **conv_kw), [dyc.shape])
    result = compare(dxc, lambda dy_, w_: _vjp(torch, convolution, 0, (x, w_), dy_), (dyc, w_oix),
                     {}, dtype, terms)
    assert result.ok, f"ConvolutionBackwardData: {result}"
