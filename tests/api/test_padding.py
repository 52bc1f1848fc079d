"""Padding conversions between the PyTorch, JAX, ONNX and oneDNN conventions.

Independent truths: JAX's definition of conv_transpose (a forward correlation
over the stride-dilated, padded input with the flipped kernel), restated in
NumPy below; the output of ONNX's backend test ``test_convtranspose_pads``;
PyTorch's output-size formula. Values are small integers, so every sum is exact
in f32 and results are compared for equality.
"""

import numpy as np
import pytest

import onednn_graph as og
from onednn_graph import padding
from onednn_graph.padding import Pads

NCX = dict(data_format="NCX", weights_format="IOX")


def jax_conv_transpose_1d(x, w, s, d, lo, hi):
    """lax.conv_transpose(transpose_kernel=True) on one channel, from its definition."""
    xd = np.zeros(s * (len(x) - 1) + 1)
    xd[::s] = x
    xd = np.concatenate([np.zeros(max(lo, 0)), xd[max(-lo, 0):]])
    xd = np.concatenate([xd[:len(xd) - max(-hi, 0)], np.zeros(max(hi, 0))])
    wd = np.zeros((len(w) - 1) * d + 1)
    wd[::d] = w
    wf = wd[::-1]
    return np.array([xd[j:j + len(wf)] @ wf for j in range(len(xd) - len(wf) + 1)])


def onednn_1d(x, w, s, d, pads):
    y = og.conv_transpose(x.reshape(1, 1, -1).astype(np.float32),
                          w.reshape(1, 1, -1).astype(np.float32), strides=s, dilations=d,
                          **pads.attrs(), **NCX)
    return y.ravel()


GEOMETRIES = [(x, k, s, d) for x in (3, 4) for k in (1, 2, 3) for s in (1, 2, 3) for d in (1, 2)]


@pytest.mark.parametrize("mode", ["SAME", "VALID"])
@pytest.mark.parametrize("x_len,k,s,d", GEOMETRIES)
def test_jax_strings_match_jax_definition(mode, x_len, k, s, d):
    x = np.arange(1, x_len + 1, dtype=np.float64)
    w = np.arange(2, k + 2, dtype=np.float64)
    pads = padding.from_jax(mode, kernel=(k,), strides=(s,), dilations=(d,))
    [(lo, hi)] = padding.to_jax(pads, kernel=(k,), dilations=(d,))
    expected = jax_conv_transpose_1d(x, w, s, d, lo, hi)
    if mode == "SAME":
        assert len(expected) == s * x_len  # JAX's SAME promise, including ek < s
    np.testing.assert_array_equal(onednn_1d(x, w, s, d, pads), expected)


@pytest.mark.parametrize("lo,hi", [(0, 0), (2, 3), (1, -1), (-1, 2), (0, 3)])
def test_jax_pairs_match_jax_definition(lo, hi):
    x, w, s, d = np.array([1.0, 2, 3, 4]), np.array([1.0, 10, 100]), 2, 1
    pads = padding.from_jax([(lo, hi)], kernel=(3,), strides=2)
    assert padding.to_jax(pads, kernel=(3,)) == [(lo, hi)]
    np.testing.assert_array_equal(onednn_1d(x, w, s, d, pads),
                                  jax_conv_transpose_1d(x, w, s, d, lo, hi))


@pytest.mark.parametrize("lo,hi", [(3, 0), (5, -1), (4, 4), (3, -3)])
def test_jax_pads_before_the_output_are_a_negative_pads_begin(lo, hi):
    # lo > ek - 1 puts zeros before the output: JAX defines the result (leading
    # zeros, then the op), and so does oneDNN with a negative pads_begin.
    x, w, s, d = np.array([1.0, 2, 3, 4]), np.array([1.0, 10, 100]), 2, 1
    pads = padding.from_jax([(lo, hi)], kernel=(3,), strides=2)
    assert pads.pads_begin == (2 - lo,) and padding.to_jax(pads, kernel=(3,)) == [(lo, hi)]
    expected = jax_conv_transpose_1d(x, w, s, d, lo, hi)
    assert np.all(expected[:lo - 2] == 0)
    np.testing.assert_array_equal(onednn_1d(x, w, s, d, pads), expected)
    with pytest.raises(ValueError, match="PyTorch equivalent"):
        padding.to_torch(pads, strides=2)
    with pytest.raises(ValueError, match="output_shape"):
        padding.to_onnx(pads)


def test_jax_pairs_must_be_pairs():
    with pytest.raises(ValueError, match="pairs"):
        padding.from_jax([1, 2], kernel=(3,))


def test_jax_consistent_padding_is_crop():
    assert padding.from_jax([(1, 2)], kernel=(3,), use_consistent_padding=True) == \
        Pads((1,), (2,), (0,))


@pytest.mark.parametrize("x_len,k,s,d", GEOMETRIES)
@pytest.mark.parametrize("mode", ["same_upper", "same_lower"])
def test_onednn_same_vs_jax_and_onnx(x_len, k, s, d, mode):
    """Where oneDNN's SAME agrees with ONNX's and JAX's, and the documented clamp where not."""
    ek = (k - 1) * d + 1
    ours = padding.from_onednn((k,), strides=s, dilations=d, auto_pad=mode)
    size = ours.output_shape((x_len,), (k,), s, d)[0]
    onnx_mode = mode.upper()
    if ek >= s:
        assert size == s * x_len
        assert padding.from_onnx(auto_pad=onnx_mode, kernel=(k,), strides=s, dilations=d,
                                 input_spatial=(x_len,)) == ours
        if mode == "same_upper":
            assert padding.from_jax("SAME", kernel=(k,), strides=s, dilations=d) == ours
    else:  # kernel smaller than stride: oneDNN clamps; JAX and ONNX keep s*x
        assert size == s * (x_len - 1) + ek < s * x_len
        jax = padding.from_jax("SAME", kernel=(k,), strides=s, dilations=d)
        assert jax == Pads((0,), (0,), (s - ek,))
        # ONNX's negative total, split by floor division as its reference
        # implementation splits it: SAME_UPPER's extra elements come first.
        onnx = padding.from_onnx(auto_pad=onnx_mode, kernel=(k,), strides=s, dilations=d,
                                 input_spatial=(x_len,))
        total = ek - s
        first = total // 2 if onnx_mode == "SAME_UPPER" else total - total // 2
        assert onnx.pads_begin == (first,)
        assert onnx.output_shape((x_len,), (k,), s, d) == (s * x_len,)
        x = np.arange(1, x_len + 1, dtype=np.float64)
        w = np.arange(2, k + 2, dtype=np.float64)
        [(lo, hi)] = padding.to_jax(onnx, kernel=(k,), dilations=(d,))
        np.testing.assert_array_equal(onednn_1d(x, w, s, d, onnx),
                                      jax_conv_transpose_1d(x, w, s, d, lo, hi))


def test_onnx_backend_case_convtranspose_pads():
    # ONNX backend test test_convtranspose_pads (strides [3, 2], pads [1, 2, 1, 2]).
    x = np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3)
    w = np.ones((1, 2, 3, 3), np.float32)
    pads = padding.from_onnx([1, 2, 1, 2], kernel=(3, 3), strides=(3, 2))
    y = og.conv_transpose(x, w, strides=(3, 2), **pads.attrs(), **NCX)
    rows = [[1, 1, 3], [1, 1, 3], [7, 4, 9], [7, 4, 9], [7, 4, 9], [13, 7, 15], [13, 7, 15]]
    np.testing.assert_array_equal(y, np.array([[rows, rows]], np.float32))
    assert padding.to_onnx(pads) == {"pads": [1, 2, 1, 2], "output_padding": [0, 0]}


def test_onnx_same_keeps_s_times_x_with_output_padding():
    pads = padding.from_onnx(auto_pad="SAME_LOWER", output_padding=1, kernel=(4,), strides=2,
                             input_spatial=(5,))
    assert pads == Pads((2,), (1,), (1,))  # total 3, odd unit first
    assert pads.output_shape((5,), (4,), 2) == (10,)
    explicit = padding.from_onnx(output_shape=(11,), kernel=(4,), strides=2, input_spatial=(5,))
    assert explicit == Pads((1,), (0,), (0,))  # NOTSET + output_shape splits like SAME_LOWER
    assert padding.from_onnx(auto_pad="VALID", kernel=(4,)) == Pads((0,), (0,), (0,))
    with pytest.raises(ValueError, match="input_spatial"):
        padding.from_onnx(auto_pad="SAME_UPPER", kernel=(3,))


@pytest.mark.parametrize("p,op,s,d", [(0, 0, 1, 1), (1, 1, 2, 1), (2, 0, 3, 2), (1, 2, 1, 3)])
def test_torch_round_trip_and_size(p, op, s, d):
    pads = padding.from_torch(p, op, kernel=(3,), strides=s, dilations=d)
    assert padding.to_torch(pads, strides=s, dilations=d) == ((p,), (op,))
    # PyTorch's documented size: (x-1)*s - 2p + d*(k-1) + op + 1
    assert pads.output_shape((5,), (3,), s, d) == ((5 - 1) * s - 2 * p + d * 2 + op + 1,)


def test_torch_limits():
    with pytest.raises(ValueError, match="smaller than stride"):
        padding.from_torch(0, 2, kernel=(3,), strides=2)
    with pytest.raises(ValueError, match="no PyTorch equivalent"):
        padding.to_torch(Pads((0,), (1,), (0,)), strides=2)
    with pytest.raises(ValueError, match="output_padding must be 0"):
        padding.from_torch("same", 1, kernel=(3,), strides=2)
    with pytest.raises(ValueError, match="padding must be one of"):
        padding.from_torch("full", kernel=(3,))
    with pytest.raises(ValueError, match=r"padding\[0\] must be an int or a \(begin, end\) pair"):
        padding.from_torch([(1, 2, 3)], kernel=(3,))
    with pytest.raises(ValueError, match="2 entries"):
        padding.from_torch([1], kernel=(3, 3))


def test_onnx_backend_case_convtranspose_output_shape():
    # ONNX backend test test_convtranspose_output_shape (strides [3, 2], output_shape
    # [10, 8], past the full 9 x 7 output): its pads formula gives total -1 per axis,
    # an extra row and column at the end that no kernel window reaches.
    x = np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3)
    w = np.ones((1, 2, 3, 3), np.float32)
    pads = padding.from_onnx(kernel=(3, 3), strides=(3, 2), input_spatial=(3, 3),
                             output_shape=(10, 8))
    assert pads == Pads((0, 0), (0, 0), (1, 1))
    y = og.conv_transpose(x, w, strides=(3, 2), **pads.attrs(), **NCX)
    rows = [[0, 0, 1, 1, 3, 2, 2, 0]] * 3 + [[3, 3, 7, 4, 9, 5, 5, 0]] * 3 + \
        [[6, 6, 13, 7, 15, 8, 8, 0]] * 3 + [[0] * 8]
    np.testing.assert_array_equal(y, np.array([[rows, rows]], np.float32))


def test_onnx_output_shape_far_past_the_output_puts_elements_before_it():
    # total -3: floor division splits it -1 / -2 (NOTSET splits like SAME_LOWER).
    pads = padding.from_onnx(kernel=(3,), strides=2, input_spatial=(3,), output_shape=(10,))
    assert pads == Pads((-1,), (0,), (2,))
    x, w = np.array([1.0, 2, 3]), np.array([1.0, 10, 100])
    [(lo, hi)] = padding.to_jax(pads, kernel=(3,))
    expected = jax_conv_transpose_1d(x, w, 2, 1, lo, hi)
    assert len(expected) == 10 and expected[0] == 0
    np.testing.assert_array_equal(onednn_1d(x, w, 2, 1, pads), expected)
