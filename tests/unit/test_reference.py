"""The NumPy reference (onednn_graph.reference): hand-worked values, layout
invariance, adjoint identities and, where torch is installed, torch itself.

Tolerances: float64 sums of the same products in a different order differ
by at most ``T * eps * sum(|products|)``, where ``T`` is the number of
addends (the classic bound for recursive summation). Each test derives its own
``T`` and ``sum(|products|)``.
"""

import doctest

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onednn_graph import reference, shapes
from helpers import (ADJOINT_CASES, TORCH_CASES, ct_case as _ct_case, import_torch as _import_torch,
                     torch_ops)


ref = reference
normalize = shapes._attrs.normalize

EPS = np.finfo(np.float64).eps
NCX_IOX = dict(data_format="NCX", weights_format="IOX")
NCX_OIX = dict(data_format="NCX", weights_format="OIX")


def arr(*rows):
    return np.array(rows, dtype=np.float64)


# --------------------------------------------------------------------------
# hand-worked 1-D cases (N=1; shapes in NCX; weights IOX/OIX)
# --------------------------------------------------------------------------


def test_conv_transpose_stride_2():
    # x = [1, 2, 3], W = [1, 10], s=2: each x[p] writes x[p]*W[k] to q = 2p + k
    # q: 0   1   2   3   4   5
    #    1  10   2  20   3  30
    y = ref.conv_transpose(arr([[1, 2, 3]]), arr([[1, 10]]), strides=2, **NCX_IOX)
    np.testing.assert_array_equal(y, arr([[1, 10, 2, 20, 3, 30]]))


def test_conv_transpose_dilation_pads_output_padding_bias():
    x, w = arr([[1, 2, 3]]), arr([[1, 10]])
    # s=2, d=2: q = 2p + 2k. p=0 -> q0 += 1, q2 += 10; p=1 -> q2 += 2, q4 += 20;
    # p=2 -> q4 += 3, q6 += 30. Full length 2*2 + 3 = 7.
    full = [1, 0, 12, 0, 23, 0, 30]
    y = ref.conv_transpose(x, w, strides=2, dilations=2, **NCX_IOX)
    np.testing.assert_array_equal(y, arr([full]))
    # pads 1/2 crop one position first and two last: full[1:5]
    y = ref.conv_transpose(x, w, strides=2, dilations=2, pads_begin=1, pads_end=2, **NCX_IOX)
    np.testing.assert_array_equal(y, arr([[0, 12, 0, 23]]))
    # output_padding 1 adds one position at the end: full[1:6]
    y = ref.conv_transpose(x, w, np.array([0.5]), strides=2, dilations=2, pads_begin=1,
                           pads_end=2, output_padding=1, **NCX_IOX)
    np.testing.assert_array_equal(y, arr([[0.5, 12.5, 0.5, 23.5, 0.5]]))


def test_conv_transpose_auto_pad_same():
    # K=2, s=1: total = max(0, 2 - 1) = 1. Full output [1, 12, 23, 30].
    # same_upper pads (0, 1) -> [1, 12, 23]; same_lower (1, 0) -> [12, 23, 30]
    x, w = arr([[1, 2, 3]]), arr([[1, 10]])
    y = ref.conv_transpose(x, w, auto_pad="same_upper", pads_begin=5, **NCX_IOX)
    np.testing.assert_array_equal(y, arr([[1, 12, 23]]))
    y = ref.conv_transpose(x, w, auto_pad="same_lower", **NCX_IOX)
    np.testing.assert_array_equal(y, arr([[12, 23, 30]]))


def test_conv_transpose_groups_2():
    # C_in=2, C_out=2, g=2, IOX (2, 1, 2). Channel 0 -> out 0 with W[0,0]=[1, 1];
    # channel 1 -> out 1 with W[1,0]=[1, -1].
    # out0 = [1, 1+2, 2] = [1, 3, 2]; out1 = [3, -3+4, -4] = [3, 1, -4]
    x = arr([[1, 2], [3, 4]])
    w = np.array([[[1.0, 1.0]], [[1.0, -1.0]]])
    y = ref.conv_transpose(x, w, groups=2, **NCX_IOX)
    np.testing.assert_array_equal(y, arr([[1, 3, 2], [3, 1, -4]]))
    # groups=1 with C_out=1 reads the same array as (C_in=2, C_out=1, K) and
    # sums both channels: [1+3, 3+1, 2-4] = [4, 4, -2]
    y = ref.conv_transpose(x, w, groups=1, **NCX_IOX)
    np.testing.assert_array_equal(y, arr([[4, 4, -2]]))


def test_conv_transpose_iox_is_cin_by_cout_over_groups():
    # The library's IOX: (C_in, C_out/g, K). C_in=2, C_out=4, g=2, K=1, X=1:
    # W = [[[1], [2]], [[3], [4]]]. Out 0, 1 come from in 0 (x=1) with W[0,0],
    # W[0,1]; out 2, 3 from in 1 (x=2) with W[1,0], W[1,1]: [1, 2, 6, 8]
    x = np.array([[[1.0], [2.0]]])
    w = np.array([[[1.0], [2.0]], [[3.0], [4.0]]])
    y = ref.conv_transpose(x, w, groups=2, **NCX_IOX)
    np.testing.assert_array_equal(y[0, :, 0], [1, 2, 6, 8])
    # the spec note's (C_in/g, C_out, K) = (1, 4, 1) is refused
    with pytest.raises(ValueError, match="I axis"):
        ref.conv_transpose(x, w.reshape(1, 4, 1), groups=2, **NCX_IOX)


def test_conv_transpose_backward_data_by_hand():
    # dx[p] = sum_k dy[2p + k] * W[k]: [1 + 20, 3 + 40, 5 + 60] = [21, 43, 65]
    dx = ref.conv_transpose_backward_data(arr([[1, 2, 3, 4, 5, 6]]), arr([[1, 10]]), strides=2,
                                          **NCX_IOX)
    np.testing.assert_array_equal(dx, arr([[21, 43, 65]]))
    # groups 2 (the weights of test_conv_transpose_groups_2), dy = its output:
    # dx0[p] = dy0[p] + dy0[p+1] = [1+3, 3+2] = [4, 5]
    # dx1[p] = dy1[p] - dy1[p+1] = [3-1, 1+4] = [2, 5]
    w = np.array([[[1.0, 1.0]], [[1.0, -1.0]]])
    dx = ref.conv_transpose_backward_data(arr([[1, 3, 2], [3, 1, -4]]), w, groups=2, **NCX_IOX)
    np.testing.assert_array_equal(dx, arr([[4, 5], [2, 5]]))


def test_conv_transpose_backward_weights_by_hand():
    # dW[k] = sum_p x[p] * dy[2p + k]: k=0: 1*1 + 2*3 + 3*5 = 22; k=1: 1*2 + 2*4 + 3*6 = 28
    x, dy = arr([[1, 2, 3]]), arr([[1, 2, 3, 4, 5, 6]])
    dw = ref.conv_transpose_backward_weights(x, dy, (1, 1, 2), strides=2, **NCX_IOX)
    np.testing.assert_array_equal(dw, np.array([[[22.0, 28.0]]]))
    # weights_shape omitted: 6 = 2*2 + K gives K = 2, the same result
    np.testing.assert_array_equal(
        ref.conv_transpose_backward_weights(x, dy, strides=2, **NCX_IOX), dw)


def test_convolution_and_backward_data_by_hand():
    # conv: y[p] = x[p] - x[p+1] = [-1, -1, -1]
    y = ref.convolution(arr([[1, 2, 3, 4]]), arr([[1, -1]]), **NCX_OIX)
    np.testing.assert_array_equal(y, arr([[-1, -1, -1]]))
    # conv, s=2, pads 1/0, d=2 on x = [1..5]: ek=3, out = (5+1-3)//2+1 = 2;
    # y[p] = x[2p-1]*1 + x[2p+1]*(-1): y0 = 0 - 2 = -2, y1 = 2 - 4 = -2
    y = ref.convolution(arr([[1, 2, 3, 4, 5]]), arr([[1, -1]]), strides=2, pads_begin=1,
                        dilations=2, **NCX_OIX)
    np.testing.assert_array_equal(y, arr([[-2, -2]]))
    # backward data, s=2, dst X=5: dx[2p + k] += dy[p] W[k]:
    # [1*1, 1*10, 2*1, 2*10, nothing] = [1, 10, 2, 20, 0]
    dx = ref.convolution_backward_data(arr([[1, 2]]), arr([[1, 10]]), (1, 1, 5), strides=2,
                                       **NCX_OIX)
    np.testing.assert_array_equal(dx, arr([[1, 10, 2, 20, 0]]))
    # dst_shape omitted and s=2: X in {4, 5} both fit, so it must be asked for
    with pytest.raises(ValueError, match="pass dst_shape="):
        ref.convolution_backward_data(arr([[1, 2]]), arr([[1, 10]]), strides=2, **NCX_OIX)


def test_convolution_backward_weights_by_hand():
    # dW[k] = sum_p dy[p] * x[2p - 1 + k] on x = [1..5], dy = [1, -1, 2] (pads 1/1):
    # k=0: 1*0 - 1*2 + 2*4 = 6; k=1: 1*1 - 1*3 + 2*5 = 8; k=2: 1*2 - 1*4 + 0 = -2
    dw = ref.convolution_backward_weights(arr([[1, 2, 3, 4, 5]]), arr([[1, -1, 2]]), (1, 1, 3),
                                          strides=2, pads_begin=1, pads_end=1, **NCX_OIX)
    np.testing.assert_array_equal(dw, arr([[6, 8, -2]]))
    # It is ConvTransposeBackwardWeights with the data roles swapped: the identity
    # the package runs f32 NXC ConvTransposeBackwardWeights by (_lowering.preferred).
    rng = np.random.default_rng(5)
    x, dy = rng.standard_normal((2, 4, 3)), rng.standard_normal((2, 6, 7))
    kw = dict(strides=2, groups=2, data_format="NCX")
    iox = ref.conv_transpose_backward_weights(x, dy, (4, 3, 3), weights_format="IOX", **kw)
    np.testing.assert_allclose(
        ref.convolution_backward_weights(dy, x, (4, 3, 3), weights_format="OIX", **kw), iox,
        rtol=1e-13)


def test_convolution_backward_data_ignores_output_padding():
    # 3.2 ignores output_padding here: dst_shape fixes the geometry
    rng = np.random.default_rng(11)
    dy, w = rng.standard_normal((1, 2, 4)), rng.standard_normal((2, 3, 3))
    kw = dict(strides=2, pads_begin=1, **NCX_OIX)
    np.testing.assert_array_equal(
        ref.convolution_backward_data(dy, w, (1, 3, 8), output_padding=1, **kw),
        ref.convolution_backward_data(dy, w, (1, 3, 8), **kw))


def test_legacy_backprop_filters_is_the_weights_gradient_with_channel_axes_swapped():
    rng = np.random.default_rng(7)
    x, dy = rng.standard_normal((2, 4, 3)), rng.standard_normal((2, 6, 7))
    kw = dict(strides=2, groups=2, data_format="NCX")
    iox = ref.conv_transpose_backward_weights(x, dy, (4, 3, 3), weights_format="IOX", **kw)
    oix = ref.conv_transpose_backprop_filters(x, dy, (3, 4, 3), filter_format="OIX", **kw)
    np.testing.assert_array_equal(oix, iox.transpose(1, 0, 2))
    xoi = np.moveaxis(iox, (0, 1), (2, 1))  # (K, C_out/g, C_in)
    xio = ref.conv_transpose_backprop_filters(x, dy, (3, 4, 3), filter_format="XIO", **kw)
    np.testing.assert_array_equal(xio, xoi.swapaxes(1, 2))


def test_doctests():
    for module in (shapes, ref):
        result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
        assert result.attempted > 0 and result.failed == 0, module.__name__


# --------------------------------------------------------------------------
# dtypes
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float16, np.float32, ml_dtypes.bfloat16])
def test_low_precision_rounds_once_from_float64(dtype):
    # Accumulating in float64 and rounding once means the result equals the
    # float64 result on the same (exactly widened) inputs, cast to dtype: bit for bit.
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 5, 4)).astype(dtype)
    w = rng.standard_normal((2, 3, 4)).astype(dtype)
    y = ref.conv_transpose(x, w, strides=2)
    assert y.dtype == np.dtype(dtype)
    expected = ref.conv_transpose(x.astype(np.float64), w.astype(np.float64), strides=2)
    np.testing.assert_array_equal(y.view(np.uint8), expected.astype(dtype).view(np.uint8))


def test_dtype_errors():
    x, w = np.ones((1, 3, 2), np.float32), np.ones((2, 2, 2), np.float64)
    with pytest.raises(TypeError, match="dtype float64 but the other inputs have float32"):
        ref.conv_transpose(x, w)
    with pytest.raises(TypeError, match="expected one of"):
        ref.conv_transpose(np.ones((1, 3, 2), np.int32), np.ones((2, 2, 2), np.int32))


# --------------------------------------------------------------------------
# layout invariance: NXC vs NCX, XOI vs IOX, XIO vs OIX
# --------------------------------------------------------------------------


def _nxc(a):
    return np.moveaxis(a, 1, -1)


def _x_first(w):  # IOX -> XOI or OIX -> XIO: (A, B, *K) -> (*K, B, A)
    return np.transpose(w, tuple(range(2, w.ndim)) + (1, 0))


def test_layouts_give_transposed_identical_results():
    rng = np.random.default_rng(2)
    g, kw = 2, dict(strides=(2, 1), dilations=(1, 2), pads_begin=(1, 0), pads_end=(0, 1),
                    groups=2)
    x = rng.standard_normal((2, 4, 3, 4))                    # NCX, C_in=4
    w_ct = rng.standard_normal((4, 3, 2, 2))                 # IOX, C_out=6
    b = rng.standard_normal(6)
    y = ref.conv_transpose(x, w_ct, b, output_padding=(1, 0), **kw, **NCX_IOX)
    y2 = ref.conv_transpose(_nxc(x), _x_first(w_ct), b, output_padding=(1, 0), **kw)
    np.testing.assert_array_equal(_nxc(y), y2)

    dx = ref.conv_transpose_backward_data(y, w_ct, **kw, **NCX_IOX)
    np.testing.assert_array_equal(
        _nxc(dx), ref.conv_transpose_backward_data(_nxc(y), _x_first(w_ct), **kw))

    dw = ref.conv_transpose_backward_weights(x, y, w_ct.shape, **kw, **NCX_IOX)
    np.testing.assert_array_equal(
        _x_first(dw), ref.conv_transpose_backward_weights(_nxc(x), _nxc(y), _x_first(w_ct).shape, **kw))

    w_conv = rng.standard_normal((6, 4 // g, 2, 2))          # OIX, C_out=6, C_in=4
    yc = ref.convolution(x, w_conv, **kw, **NCX_OIX)
    np.testing.assert_array_equal(_nxc(yc), ref.convolution(_nxc(x), _x_first(w_conv), **kw))
    dxc = ref.convolution_backward_data(yc, w_conv, x.shape, **kw, **NCX_OIX)
    np.testing.assert_array_equal(
        _nxc(dxc), ref.convolution_backward_data(_nxc(yc), _x_first(w_conv), _nxc(x).shape, **kw))


# --------------------------------------------------------------------------
# adjoint identities in float64
# --------------------------------------------------------------------------


def check_conv_transpose_adjoints(rng, op, **case):
    """<CT(x, W), dy> == <x, CTBwdData(dy, W)> == <W, CTBwdWeights(x, dy)>."""
    x, w, kw = _ct_case(rng, **case)
    kw["output_padding"] = op  # the backward ops take the forward's attributes
    y = ref.conv_transpose(x, w, **kw)
    dy = rng.standard_normal(y.shape)
    dx = ref.conv_transpose_backward_data(dy, w, **kw)
    dw = ref.conv_transpose_backward_weights(x, dy, w.shape, **kw)
    assert dx.shape == x.shape and dw.shape == w.shape
    lhs = np.vdot(y, dy)
    # sum(|products|) of all three sums: the same identity on absolute values
    scale = np.vdot(ref.conv_transpose(abs(x), abs(w), **kw), abs(dy))
    # T: no side adds more than x.size * w.size products
    tol = x.size * w.size * EPS * scale
    assert abs(lhs - np.vdot(x, dx)) <= tol
    assert abs(lhs - np.vdot(w, dw)) <= tol
    return scale


def check_convolution_adjoint(rng, **case):
    """<conv(x, W), dy> == <x, ConvolutionBackwardData(dy, W, x.shape)>
    == <W, ConvolutionBackwardWeights(x, dy, W.shape)>."""
    x, w, kw = _ct_case(rng, **case)
    kw["weights_format"] = {"IOX": "OIX", "XOI": "XIO"}[kw["weights_format"]]
    a = normalize("ConvolutionBackwardData", len(case["x"]), **kw)
    w = rng.standard_normal(shapes.weights_shape_for(a, case["c_in"], case["c_out"], case["k"]))
    y = ref.convolution(x, w, **kw)
    dy = rng.standard_normal(y.shape)
    dx = ref.convolution_backward_data(dy, w, x.shape, **kw)
    dw = ref.convolution_backward_weights(x, dy, w.shape, **kw)
    assert dx.shape == x.shape and dw.shape == w.shape
    scale = np.vdot(ref.convolution(abs(x), abs(w), **kw), abs(dy))
    assert abs(np.vdot(y, dy) - np.vdot(x, dx)) <= x.size * w.size * EPS * scale
    assert abs(np.vdot(y, dy) - np.vdot(w, dw)) <= x.size * w.size * EPS * scale
    return scale


@pytest.mark.parametrize("layout", [("NCX", "IOX"), ("NXC", "XOI")])
@pytest.mark.parametrize("case", ADJOINT_CASES)
def test_adjoint_identities(case, layout):
    nsp, g, c_in, c_out, x, k, s, d, pb, pe, op, auto_pad = case
    rng = np.random.default_rng(ADJOINT_CASES.index(case))
    common = dict(nsp=nsp, g=g, c_in=c_in, c_out=c_out, x=x, k=k, s=s, d=d, pb=pb, pe=pe,
                  auto_pad=auto_pad, fmt=layout[0], wfmt=layout[1])
    assert check_conv_transpose_adjoints(rng, op=op, **common) > 0
    assert check_convolution_adjoint(rng, **common) > 0


@st.composite
def _geometry(draw):
    nsp = draw(st.integers(1, 3))
    g = draw(st.integers(1, 3))
    auto_pad = draw(st.sampled_from(["none", "valid", "same_upper", "same_lower"]))
    axes = []
    for _ in range(nsp):
        k, s, d = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 2))
        ek = (k - 1) * d + 1
        # pads < ek keep every conv output position in reach of the input
        pb, pe = draw(st.integers(0, ek - 1)), draw(st.integers(0, ek - 1))
        # up to the stride: 3.2 refuses op >= s, the package folds it into pads_end
        op = draw(st.integers(0, s))
        # the conv input must cover the kernel: X + pads >= ek (valid: pads 0)
        low = ek if auto_pad == "valid" else max(1, ek - pb - pe)
        x = draw(st.integers(low, max(low, 4 if nsp < 3 else 3)))
        axes.append((x, k, s, d, pb, pe, op))
    x, k, s, d, pb, pe, op = (tuple(v) for v in zip(*axes))
    c_in, c_out = g * draw(st.integers(1, 2)), g * draw(st.integers(1, 2))
    layout = draw(st.sampled_from([("NCX", "IOX"), ("NXC", "XOI")]))
    return dict(nsp=nsp, g=g, c_in=c_in, c_out=c_out, x=x, k=k, s=s, d=d, pb=pb, pe=pe,
                auto_pad=auto_pad, fmt=layout[0], wfmt=layout[1]), op


@settings(max_examples=60, deadline=None, derandomize=True)
@given(_geometry(), st.integers(0, 2**32 - 1))
def test_adjoint_identities_hypothesis(geometry, seed):
    case, op = geometry
    rng = np.random.default_rng(seed)
    try:
        check_conv_transpose_adjoints(rng, op=op, **case)
    except ValueError as exc:  # pads larger than the ConvTranspose output
        assert "empty" in str(exc)
    check_convolution_adjoint(rng, **case)


def test_adjoint_check_can_fail():
    # The same check against a wrong backward (one kernel tap zeroed) must fail.
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((1, 2, 4)), rng.standard_normal((2, 2, 3))
    kw = dict(strides=2, **NCX_IOX)
    y = ref.conv_transpose(x, w, **kw)
    dy = rng.standard_normal(y.shape)
    w_bad = w.copy()
    w_bad[..., 1] = 0
    scale = np.vdot(ref.conv_transpose(abs(x), abs(w), **kw), abs(dy))
    tol = x.size * w.size * EPS * scale
    assert abs(np.vdot(y, dy) - np.vdot(x, ref.conv_transpose_backward_data(dy, w_bad, **kw))) > tol


# --------------------------------------------------------------------------
# torch (optional)
# --------------------------------------------------------------------------

@pytest.mark.parametrize("case", TORCH_CASES)
def test_against_torch(case):
    torch = _import_torch()
    nsp, g, c_in, c_out, x_sp, k, s, d, pb, pe, op = case
    rng = np.random.default_rng(sum(x_sp) + 10 * g)
    x = rng.standard_normal((2, c_in, *x_sp))
    w_iox = rng.standard_normal((c_in, c_out // g, *k))
    b = rng.standard_normal(c_out)
    kw = dict(strides=s, dilations=d, pads_begin=pb, pads_end=pe, groups=g)
    torch_ct, torch_conv = torch_ops(torch, nsp, s, d, pb, pe, op, g)

    xt = torch.tensor(x, requires_grad=True)
    wt = torch.tensor(w_iox, requires_grad=True)
    bt = torch.tensor(b)
    y = ref.conv_transpose(x, w_iox, b, output_padding=op, **kw, **NCX_IOX)
    yt = torch_ct(xt, wt, bt)
    # per output element: at most c_in * prod(K) products plus the bias, so
    # T <= c_in*prod(K) + 1 addends; sum(|products|) <= the reference on |x|, |W|, |b|
    n_terms = c_in * np.prod(k) + 1
    abs_y = ref.conv_transpose(abs(x), abs(w_iox), abs(b), output_padding=op, **kw, **NCX_IOX)
    np.testing.assert_allclose(y, yt.detach().numpy(), rtol=0, atol=n_terms * EPS * abs_y.max())

    # gradients of sum(CT(x, W) * dy): w.r.t. x is CTBwdData, w.r.t. W is CTBwdWeights
    dy = rng.standard_normal(y.shape)
    (torch_ct(xt, wt) * torch.tensor(dy)).sum().backward()
    bkw = dict(kw, output_padding=op, **NCX_IOX)  # the forward op's attributes
    dx = ref.conv_transpose_backward_data(dy, w_iox, **bkw)
    dw = ref.conv_transpose_backward_weights(x, dy, w_iox.shape, **bkw)
    # dx element: c_out/g * prod(K) products; dW element: N * prod(X) products
    abs_dx = ref.conv_transpose_backward_data(abs(dy), abs(w_iox), **bkw)
    abs_dw = ref.conv_transpose_backward_weights(abs(x), abs(dy), w_iox.shape, **bkw)
    np.testing.assert_allclose(dx, xt.grad.numpy(), rtol=0,
                               atol=(c_out // g) * np.prod(k) * EPS * abs_dx.max())
    np.testing.assert_allclose(dw, wt.grad.numpy(), rtol=0,
                               atol=2 * np.prod(x_sp) * EPS * abs_dw.max())

    # forward convolution and ConvolutionBackwardData (its gradient w.r.t. src)
    w_oix = rng.standard_normal((c_out, c_in // g, *k))
    xt = torch.tensor(x, requires_grad=True)
    yc = ref.convolution(x, w_oix, **kw, **NCX_OIX)
    yct = torch_conv(xt, torch.tensor(w_oix))
    abs_yc = ref.convolution(abs(x), abs(w_oix), **kw, **NCX_OIX)
    np.testing.assert_allclose(yc, yct.detach().numpy(), rtol=0,
                               atol=(c_in // g) * np.prod(k) * EPS * abs_yc.max())
    dyc = rng.standard_normal(yc.shape)
    (yct * torch.tensor(dyc)).sum().backward()
    dxc = ref.convolution_backward_data(dyc, w_oix, x.shape, **kw, **NCX_OIX)
    abs_dxc = ref.convolution_backward_data(abs(dyc), abs(w_oix), x.shape, **kw, **NCX_OIX)
    np.testing.assert_allclose(dxc, xt.grad.numpy(), rtol=0,
                               atol=c_out * np.prod(k) * EPS * abs_dxc.max())


def test_against_torch_symmetric_padding_api():
    # torch's own padding/output_padding arguments, no manual cropping
    torch = _import_torch()
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 4, 5, 4))
    w = rng.standard_normal((4, 3, 3, 2))
    b = rng.standard_normal(6)
    y = ref.conv_transpose(x, w, b, strides=2, dilations=2, pads_begin=1, pads_end=1,
                           output_padding=1, groups=2, **NCX_IOX)
    yt = torch.nn.functional.conv_transpose2d(
        torch.tensor(x), torch.tensor(w), torch.tensor(b), stride=2, padding=1,
        output_padding=1, groups=2, dilation=2).numpy()
    # out = s*(X-1) + (K-1)*d + 1 - 2*pad + output_padding:
    # (2*4 + 5 - 2 + 1, 2*3 + 3 - 2 + 1) = (12, 8)
    assert y.shape == yt.shape == (2, 6, 12, 8)
    # at most C_in*prod(K) + 1 = 4*6 + 1 addends per element
    abs_y = ref.conv_transpose(abs(x), abs(w), abs(b), strides=2, dilations=2, pads_begin=1,
                               pads_end=1, output_padding=1, groups=2, **NCX_IOX)
    np.testing.assert_allclose(y, yt, rtol=0, atol=25 * EPS * abs_y.max())
