"""The matrix-product reference (onednn_graph.reference: one np.matmul per kernel
tap) against the module docstring's formulas written as plain element loops.

The loops below index data as NCX and weights as IOX / OIX, exactly as the
docstring does, and visit every (n, c, o, position, tap) one at a time; they
share nothing with the reference but the geometry tuple. Inputs are small
integers held in float64, so every product and partial sum is an integer far
below 2**53 and both sides are exact whatever order they add in: results must
be equal, not close. The adjoint identity is checked on real-valued inputs with
a rounding bound instead.
"""

import itertools

import numpy as np
import pytest

from onednn_graph import reference as ref

EPS = np.finfo(np.float64).eps


# --------------------------------------------------------------------------
# the docstring's formulas as element loops (NCX data, IOX/OIX weights)
# --------------------------------------------------------------------------


def tap_pairs(count, bound, kernel, s, pb, d):
    """Every (p, q, k) with p in range(count), k a tap and q = p*s - pb + k*d in range(bound)."""
    for p in itertools.product(*map(range, count)):
        for k in itertools.product(*map(range, kernel)):
            q = tuple(pi * si - pbi + ki * di for pi, si, pbi, ki, di in zip(p, s, pb, k, d))
            if all(0 <= qi < b for qi, b in zip(q, bound)):
                yield p, q, k


def loop_gather(x, w, out_spatial, s, pb, d, g):
    """y[n, o, p] = sum_{c in group(o), k} x[n, c, p*s - pb + k*d] * w[o, c % (C/g), k];
    Convolution with OIX weights, ConvTransposeBackwardData with IOX read as (O, I/g)."""
    n_batch, c_in = x.shape[:2]
    c_out, c_per_g = w.shape[:2]
    y = np.zeros((n_batch, c_out, *out_spatial))
    for p, q, k in tap_pairs(out_spatial, x.shape[2:], w.shape[2:], s, pb, d):
        for n, o, ci in itertools.product(range(n_batch), range(c_out), range(c_per_g)):
            c = o // (c_out // g) * c_per_g + ci
            y[(n, o) + p] += x[(n, c) + q] * w[(o, ci) + k]
    return y


def loop_scatter(x, w, out_spatial, s, pb, d, g):
    """y[n, o, p*s - pb + k*d] += x[n, c, p] * w[c, o % (O/g), k], c in group(o);
    ConvTranspose with IOX weights, ConvolutionBackwardData with OIX read as (I, O/g)."""
    n_batch, c_in = x.shape[:2]
    o_per_g = w.shape[1]
    y = np.zeros((n_batch, o_per_g * g, *out_spatial))
    for p, q, k in tap_pairs(x.shape[2:], out_spatial, w.shape[2:], s, pb, d):
        for n, c, oi in itertools.product(range(n_batch), range(c_in), range(o_per_g)):
            o = c // (c_in // g) * o_per_g + oi
            y[(n, o) + q] += x[(n, c) + p] * w[(c, oi) + k]
    return y


def loop_ct_weights(x, dy, kernel, s, pb, d, g):
    """dW[c, o % (O/g), k] = sum_{n, p} x[n, c, p] * dy[n, o, p*s - pb + k*d] (IOX)."""
    n_batch, c_in = x.shape[:2]
    o_per_g = dy.shape[1] // g
    dw = np.zeros((c_in, o_per_g, *kernel))
    for p, q, k in tap_pairs(x.shape[2:], dy.shape[2:], kernel, s, pb, d):
        for n, c, oi in itertools.product(range(n_batch), range(c_in), range(o_per_g)):
            o = c // (c_in // g) * o_per_g + oi
            dw[(c, oi) + k] += x[(n, c) + p] * dy[(n, o) + q]
    return dw


def loop_conv_weights(x, dy, kernel, s, pb, d, g):
    """dW[o, c % (C/g), k] = sum_{n, p} dy[n, o, p] * x[n, c, p*s - pb + k*d] (OIX)."""
    n_batch, c_out = dy.shape[:2]
    c_per_g = x.shape[1] // g
    dw = np.zeros((c_out, c_per_g, *kernel))
    for p, q, k in tap_pairs(dy.shape[2:], x.shape[2:], kernel, s, pb, d):
        for n, o, ci in itertools.product(range(n_batch), range(c_out), range(c_per_g)):
            c = o // (c_out // g) * c_per_g + ci
            dw[(o, ci) + k] += dy[(n, o) + p] * x[(n, c) + q]
    return dw


def test_the_loops_give_the_hand_worked_values():
    # The docstring examples of reference.py, so that the truth itself is checked.
    one = (1,)
    x, w = np.array([[[1.0, 2.0, 3.0]]]), np.array([[[1.0, 10.0]]])
    np.testing.assert_array_equal(loop_scatter(x, w, (6,), (2,), (0,), one, 1),
                                  [[[1, 10, 2, 20, 3, 30]]])
    dy = np.array([[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]]])
    np.testing.assert_array_equal(loop_gather(dy, w, (3,), (2,), (0,), one, 1), [[[21, 43, 65]]])
    np.testing.assert_array_equal(loop_ct_weights(x, dy, (2,), (2,), (0,), one, 1), [[[22, 28]]])
    x4 = np.array([[[1.0, 2.0, 3.0, 4.0]]])
    np.testing.assert_array_equal(loop_gather(x4, np.array([[[1.0, -1.0]]]), (3,), one, (0,),
                                              one, 1), [[[-1, -1, -1]]])
    np.testing.assert_array_equal(
        loop_conv_weights(x4, np.array([[[1.0, 0.0, -1.0]]]), (2,), one, (0,), one, 1),
        [[[-2, -2]]])


# --------------------------------------------------------------------------
# geometry cases and layouts
# --------------------------------------------------------------------------

# (N, groups, C_in, C_out, X, K, strides, dilations, pads_begin, pads_end, output_padding)
# C_in / C_out: the channels of the convolution's src / dst, and of ConvTranspose's
# src / dst. Pads of both signs; groups 1, 2, depthwise (3 of 3) and depthwise with
# a channel multiplier (2 -> 4).
CASES = {
    "1d-stride2-pads": (2, 1, 2, 3, (7,), (3,), (2,), (1,), (1,), (2,), (1,)),
    "1d-dilated-negative-pads": (1, 1, 3, 2, (9,), (3,), (2,), (2,), (-1,), (-2,), (0,)),
    "2d-groups2-mixed-pads": (1, 2, 4, 6, (5, 4), (2, 3), (1, 2), (2, 1), (1, -1), (0, 2), (0, 1)),
    "2d-depthwise": (2, 3, 3, 3, (4, 5), (3, 3), (2, 1), (1, 1), (1, 1), (1, 0), (1, 0)),
    "3d-depthwise-multiplier": (1, 2, 2, 4, (3, 4, 5), (2, 2, 2), (1, 2, 1), (1, 1, 2),
                                (0, 1, -1), (1, 0, 0), (0, 1, 0)),
    "3d-groups1": (1, 1, 2, 3, (3, 3, 4), (2, 1, 3), (2, 1, 1), (1, 1, 1), (1, 0, 1), (0, 0, 1),
                   (1, 0, 0)),
}


def conv_out(x, k, s, d, pb, pe):
    return tuple((xi + b + e - (ki - 1) * di - 1) // si + 1
                 for xi, ki, si, di, b, e in zip(x, k, s, d, pb, pe))


def conv_transpose_out(x, k, s, d, pb, pe, op):
    return tuple(si * (xi - 1) + (ki - 1) * di + 1 - b - e + o
                 for xi, ki, si, di, b, e, o in zip(x, k, s, d, pb, pe, op))


def nxc(a):
    return np.moveaxis(a, 1, -1)


def ncx(a):
    return np.moveaxis(a, -1, 1)


def x_first(w):
    """IOX -> XOI, OIX -> XIO: (A, B, *K) -> (*K, B, A)."""
    return np.transpose(w, tuple(range(2, w.ndim)) + (1, 0))


def x_last(w):
    """The inverse of x_first: (*K, B, A) -> (A, B, *K)."""
    nk = w.ndim - 2
    return np.transpose(w, (nk + 1, nk) + tuple(range(nk)))


DATA = {"NCX": (lambda a: a, lambda a: a), "NXC": (nxc, ncx)}  # (to the format, back to NCX)
WEIGHTS = {"IOX": (lambda w: w, lambda w: w), "XOI": (x_first, x_last),
           "OIX": (lambda w: w, lambda w: w), "XIO": (x_first, x_last)}


def integers(rng, shape):
    return rng.integers(-3, 4, size=shape).astype(np.float64)


def case(name):
    n, g, c_in, c_out, x, k, s, d, pb, pe, op = CASES[name]
    return dict(n=n, g=g, c_in=c_in, c_out=c_out, x=x, k=k, s=s, d=d, pb=pb, pe=pe, op=op)


def geometry(c):
    return dict(strides=c["s"], dilations=c["d"], pads_begin=c["pb"], pads_end=c["pe"],
                groups=c["g"])


def attrs(c, data_format, weights_format, **extra):
    return dict(geometry(c), data_format=data_format, weights_format=weights_format, **extra)


# --------------------------------------------------------------------------
# each op against its loop, in every data and weights format
# --------------------------------------------------------------------------


@pytest.mark.parametrize("data_format", DATA)
@pytest.mark.parametrize("name", CASES)
def test_convolution_family(name, data_format):
    c, rng = case(name), np.random.default_rng(1)
    geom = (c["s"], c["pb"], c["d"])
    to_data, from_data = DATA[data_format]
    y_spatial = conv_out(c["x"], c["k"], c["s"], c["d"], c["pb"], c["pe"])
    x = integers(rng, (c["n"], c["c_in"], *c["x"]))
    w = integers(rng, (c["c_out"], c["c_in"] // c["g"], *c["k"]))  # OIX
    bias = integers(rng, (c["c_out"],))
    dy = integers(rng, (c["n"], c["c_out"], *y_spatial))
    y_loop = loop_gather(x, w, y_spatial, *geom, c["g"])
    dx_loop = loop_scatter(dy, w, c["x"], *geom, c["g"])
    dw_loop = loop_conv_weights(x, dy, c["k"], *geom, c["g"])
    for wf in ("OIX", "XIO"):
        to_w, from_w = WEIGHTS[wf]
        kw = attrs(c, data_format, wf)
        y = ref.convolution(to_data(x), to_w(w), bias, **kw)
        np.testing.assert_array_equal(from_data(y), y_loop + bias.reshape(-1, *[1] * len(y_spatial)),
                                      err_msg=f"Convolution {wf}")
        dx = ref.convolution_backward_data(to_data(dy), to_w(w), to_data(x).shape, **kw)
        np.testing.assert_array_equal(from_data(dx), dx_loop, err_msg=f"ConvolutionBackwardData {wf}")
        dw = ref.convolution_backward_weights(to_data(x), to_data(dy), to_w(w).shape, **kw)
        np.testing.assert_array_equal(from_w(dw), dw_loop, err_msg=f"ConvolutionBackwardWeights {wf}")


@pytest.mark.parametrize("data_format", DATA)
@pytest.mark.parametrize("name", CASES)
def test_conv_transpose_family(name, data_format):
    c, rng = case(name), np.random.default_rng(2)
    geom = (c["s"], c["pb"], c["d"])
    to_data, from_data = DATA[data_format]
    y_spatial = conv_transpose_out(c["x"], c["k"], c["s"], c["d"], c["pb"], c["pe"], c["op"])
    x = integers(rng, (c["n"], c["c_in"], *c["x"]))
    w = integers(rng, (c["c_in"], c["c_out"] // c["g"], *c["k"]))  # IOX
    bias = integers(rng, (c["c_out"],))
    dy = integers(rng, (c["n"], c["c_out"], *y_spatial))
    y_loop = loop_scatter(x, w, y_spatial, *geom, c["g"])
    dx_loop = loop_gather(dy, w, c["x"], *geom, c["g"])
    dw_loop = loop_ct_weights(x, dy, c["k"], *geom, c["g"])
    for wf in ("IOX", "XOI"):
        to_w, from_w = WEIGHTS[wf]
        kw = attrs(c, data_format, wf, output_padding=c["op"])
        y = ref.conv_transpose(to_data(x), to_w(w), bias, **kw)
        np.testing.assert_array_equal(from_data(y), y_loop + bias.reshape(-1, *[1] * len(y_spatial)),
                                      err_msg=f"ConvTranspose {wf}")
        dx = ref.conv_transpose_backward_data(to_data(dy), to_w(w), **kw)
        np.testing.assert_array_equal(from_data(dx), dx_loop, err_msg=f"ConvTransposeBackwardData {wf}")
        dw = ref.conv_transpose_backward_weights(to_data(x), to_data(dy), to_w(w).shape, **kw)
        np.testing.assert_array_equal(from_w(dw), dw_loop, err_msg=f"ConvTransposeBackwardWeights {wf}")


@pytest.mark.parametrize("name", CASES)
def test_legacy_backprop_filters(name):
    # Legacy OIX is (C_out/g, C_in, *K): IOX with the channel axes swapped; XIO is (*K, C_in, C_out/g).
    c, rng = case(name), np.random.default_rng(3)
    y_spatial = conv_transpose_out(c["x"], c["k"], c["s"], c["d"], c["pb"], c["pe"], c["op"])
    x = integers(rng, (c["n"], c["c_in"], *c["x"]))
    dy = integers(rng, (c["n"], c["c_out"], *y_spatial))
    dw_iox = loop_ct_weights(x, dy, c["k"], c["s"], c["pb"], c["d"], c["g"])
    legacy = {"OIX": np.swapaxes(dw_iox, 0, 1),
              "XIO": np.transpose(dw_iox, tuple(range(2, dw_iox.ndim)) + (0, 1))}
    for ff, expected in legacy.items():
        dw = ref.conv_transpose_backprop_filters(nxc(x), nxc(dy), expected.shape,
                                                 output_padding=c["op"], data_format="NXC",
                                                 filter_format=ff, **geometry(c))
        np.testing.assert_array_equal(dw, expected, err_msg=ff)


# --------------------------------------------------------------------------
# the adjoint identity, on real values
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", CASES)
def test_conv_transpose_adjoint(name):
    """<ConvTranspose(x, W), y> == <x, ConvTransposeBackwardData(y, W)> in float64.

    Both sides sum the same T products x[n,c,p] * W[c,o,k] * y[n,o,q], one per
    (n, c, o, p, k) pair a tap joins, in different orders and groupings. A float64
    sum of T terms is within about T * eps * (sum of their absolute values) of the
    exact one, whatever the order (Higham, 3.1; the triple products add one or two
    more roundings each, hence T + 2). So the two sides differ by at most twice that,
    with the absolute sum computed as the same identity on |x|, |W|, |y|. For these
    shapes T is a few hundred: a relative gap of about 1e-13 at most.
    """
    c, rng = case(name), np.random.default_rng(4)
    kw = attrs(c, "NCX", "IOX", output_padding=c["op"])
    y_spatial = conv_transpose_out(c["x"], c["k"], c["s"], c["d"], c["pb"], c["pe"], c["op"])
    x = rng.standard_normal((c["n"], c["c_in"], *c["x"]))
    w = rng.standard_normal((c["c_in"], c["c_out"] // c["g"], *c["k"]))
    y = rng.standard_normal((c["n"], c["c_out"], *y_spatial))
    lhs = np.sum(ref.conv_transpose(x, w, **kw) * y)
    rhs = np.sum(x * ref.conv_transpose_backward_data(y, w, **kw))
    magnitude = np.sum(ref.conv_transpose(np.abs(x), np.abs(w), **kw) * np.abs(y))
    terms = x.size * w.shape[1] * int(np.prod(c["k"]))  # every (n, c, p) meets O/g * taps weights
    assert magnitude > 0
    assert abs(lhs - rhs) <= 2 * (terms + 2) * EPS * magnitude


def test_adjoint_check_can_fail():
    # The same check with W mirrored on one side: a different operator, and the
    # bound above must catch the difference.
    c, rng = case("2d-groups2-mixed-pads"), np.random.default_rng(5)
    kw = attrs(c, "NCX", "IOX", output_padding=c["op"])
    y_spatial = conv_transpose_out(c["x"], c["k"], c["s"], c["d"], c["pb"], c["pe"], c["op"])
    x = rng.standard_normal((c["n"], c["c_in"], *c["x"]))
    w = rng.standard_normal((c["c_in"], c["c_out"] // c["g"], *c["k"]))
    y = rng.standard_normal((c["n"], c["c_out"], *y_spatial))
    lhs = np.sum(ref.conv_transpose(x, w, **kw) * y)
    rhs = np.sum(x * ref.conv_transpose_backward_data(y, w[..., ::-1, ::-1], **kw))
    magnitude = np.sum(ref.conv_transpose(np.abs(x), np.abs(w), **kw) * np.abs(y))
    terms = x.size * w.shape[1] * int(np.prod(c["k"]))
    assert abs(lhs - rhs) > 2 * (terms + 2) * EPS * magnitude


# --------------------------------------------------------------------------
# the taps are matrix products
# --------------------------------------------------------------------------


def test_no_einsum_on_the_way(monkeypatch):
    # np.einsum without optimize= never calls BLAS; the reference must not use it.
    def refuse(*args, **kwargs):
        raise AssertionError("np.einsum called")

    monkeypatch.setattr(np, "einsum", refuse)
    c, rng = case("2d-groups2-mixed-pads"), np.random.default_rng(6)
    kw = attrs(c, "NXC", "XOI", output_padding=c["op"])
    x = rng.standard_normal((c["n"], *c["x"], c["c_in"]))
    w = rng.standard_normal((*c["k"], c["c_out"] // c["g"], c["c_in"]))
    y = ref.conv_transpose(x, w, **kw)
    ref.conv_transpose_backward_data(y, w, **kw)
    ref.conv_transpose_backward_weights(x, y, w.shape, **kw)
    kw = attrs(c, "NXC", "XIO")
    wc = rng.standard_normal((*c["k"], c["c_in"] // c["g"], c["c_out"]))
    yc = ref.convolution(x, wc, **kw)
    ref.convolution_backward_data(yc, wc, x.shape, **kw)
    ref.convolution_backward_weights(x, yc, wc.shape, **kw)
    ref.matmul(rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 5)))
