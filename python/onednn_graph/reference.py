"""First-principles NumPy reference for oneDNN 3.2's convolution-family ops.

Each function restates the math of one Graph op (see :mod:`onednn_graph.shapes`
for the layouts and geometry). The formulas index data as ``NCX`` and weights
as ``IOX`` for the ConvTranspose family and ``OIX`` for the convolution family;
all accumulation is in float64. For one spatial axis, stride ``s``, dilation
``d`` and begin pad ``pb``, the math is::

    Convolution     y[n, o, p]  = sum_{c in group(o), k} x[n, c, p*s - pb + k*d] * W_oix[o, c % (C_in/g), k]
    ConvTranspose   y[n, o, q] += x[n, c, p] * W_iox[c, o % (C_out/g), k]  for q == p*s - pb + k*d,
                                  c in group(o); then y += bias[o]

Reads outside the input are zero. Writes outside the output are dropped. That
covers pads and output_padding of either sign. ConvTransposeBackwardData is
the Convolution above with ``W_iox`` read as ``(O, I/g)``. ConvolutionBackwardData
is the ConvTranspose scatter with ``W_oix`` read as ``(I, O/g)``.
ConvTransposeBackwardWeights is the derivative of ConvTranspose with respect
to ``W``.

Python loops run only over kernel taps, and each tap is one matrix product
(``np.matmul``, so BLAS) per group. The data are read channels last (``NXC``,
C-contiguous): the positions a tap pairs form an ``(N*positions, C)`` matrix.
The forward ops multiply it by the tap's ``(C, O)`` weights (as the transposed
product ``(O, C) @ (C, N*positions)``, summed channels first), and the backward
weights ops contract it with the other operand's matrix of the same positions.

Inputs must share one floating dtype: float16, float32, bfloat16 (ml_dtypes),
or float64 for tests. The result has that dtype. ConvTranspose also takes the int8
form (``onednn_graph.quant``): quantized src and weights are dequantized to float64,
the result is f32, or integers when ``quantize=`` asks for them (:func:`dequantize`,
:func:`quantize`).
"""

from __future__ import annotations

import itertools
from typing import Any, Dict, Iterator, Optional, Sequence, Tuple, Union

import numpy as np

from . import post as _post, quant as _quant, shapes
from ._impl import arrays as _arrays

try:  # bfloat16 comes from ml_dtypes; without it only the other dtypes work
    import ml_dtypes

    _DTYPES: Tuple[np.dtype, ...] = (np.dtype(np.float16), np.dtype(np.float32),
                                     np.dtype(np.float64), np.dtype(ml_dtypes.bfloat16))
except ImportError:  # pragma: no cover
    _DTYPES = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))

Spatial = Union[int, Sequence[int]]  # an int (every spatial axis) or one int per axis
Geom = Tuple[int, int, int]  # (stride, pad_begin, dilation) of one spatial axis

__all__ = [
    "conv_transpose",
    "conv_transpose_backward_data",
    "conv_transpose_backward_weights",
    "convolution_backward_data",
    "convolution",
    "convolution_backward_weights",
    "conv_transpose_backprop_filters",
    "matmul",
    "post_ops",
    "dequantize",
    "quantize",
]


def _inputs(**arrays: Any) -> Tuple[Dict[str, Any], Any]:
    """Return the non-None arrays in float64 and their common dtype. A float64 array is
    passed as it is, not copied: nothing here writes to its inputs, and a copy of a large
    input costs as much as a tap's matrix product (mostly first touches of fresh pages)."""
    dtype: Any = None
    out: Dict[str, Optional[np.ndarray]] = {}
    for name, value in arrays.items():
        if value is None:
            out[name] = None
            continue
        arr = _arrays.to_numpy(name, value)  # same conversions as the oneDNN path
        if arr.dtype not in _DTYPES:
            raise TypeError(f"{name} has dtype {arr.dtype}; expected one of "
                            f"{', '.join(str(d) for d in _DTYPES)}")
        if dtype is not None and arr.dtype != dtype:
            raise TypeError(f"{name} has dtype {arr.dtype} but the other inputs have {dtype}")
        dtype = arr.dtype
        out[name] = arr.astype(np.float64, copy=False)
    return out, dtype


def _relayout(a: np.ndarray, from_fmt: str, to_fmt: str) -> np.ndarray:
    return np.transpose(a, shapes.format_permutation(from_fmt, to_fmt, a.ndim))


def _taps(kernel: Sequence[int]) -> Iterator[Tuple[int, ...]]:
    return itertools.product(*(range(k) for k in kernel))


def _channels_last(a: np.ndarray, data_format: str) -> np.ndarray:
    """`a` as a C-contiguous ``(N, *X, C)`` array: the channels of each position are one
    matrix row, so the positions a kernel tap touches are one ``(positions, C)`` matrix."""
    return np.ascontiguousarray(_relayout(a, data_format, "NXC"))


def _tap_window(k: int, axis_geom: Geom, count: int, bound: int) -> Tuple[slice, slice]:
    """On one spatial axis, for tap ``k``: the ``p`` in ``range(count)`` whose
    ``q = p*s - pb + k*d`` lies in ``range(bound)``, as a slice of ``p`` and the
    matching slice of ``q``. Only these pairs meet: outside them a read is zero
    and a write is dropped."""
    s, pb, d = axis_geom
    offset = k * d - pb  # q = p*s + offset
    first = max(0, -(offset // s))  # ceil(-offset / s): the first p with q >= 0
    stop = min(count, (bound - 1 - offset) // s + 1)  # one past the last p with q < bound
    if stop <= first:
        return slice(0, 0), slice(0, 0)
    return slice(first, stop), slice(first * s + offset, (stop - 1) * s + offset + 1, s)


def _tap_windows(tap: Tuple[int, ...], geom: Sequence[Geom], count: Sequence[int],
                 bound: Sequence[int]) -> Tuple[Tuple[slice, ...], Tuple[slice, ...]]:
    """:func:`_tap_window` on every spatial axis, as indices of ``(N, *spatial, ...)`` arrays:
    the ``p`` side (spatial sizes `count`) and the ``q`` side (sizes `bound`)."""
    windows = [_tap_window(*args) for args in zip(tap, geom, count, bound)]
    everything = (slice(None),)  # the batch axis
    return everything + tuple(w[0] for w in windows), everything + tuple(w[1] for w in windows)


def _per_tap(w: np.ndarray, groups: int) -> np.ndarray:
    """Weights ``(g*A, B, *K)`` (IOX or OIX) as a ``(*K, g, A, B)`` view: one ``(A, B)``
    matrix per kernel tap and group."""
    nk = w.ndim - 2
    w = w.reshape(groups, w.shape[0] // groups, *w.shape[1:])  # (g, A, B, *K)
    return np.moveaxis(w, range(3, 3 + nk), range(nk))


def _from_per_tap(w_taps: np.ndarray) -> np.ndarray:
    """The inverse of :func:`_per_tap`: ``(*K, g, A, B)`` back to ``(g*A, B, *K)``."""
    nk = w_taps.ndim - 3
    g, a, b = w_taps.shape[nk:]
    return np.moveaxis(w_taps, range(nk), range(3, 3 + nk)).reshape(g * a, b, *w_taps.shape[:nk])


def _rows_times(rows: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Channels-last ``rows`` ``(..., g*C)`` times one tap's weights, ``w`` ``(g, O, C)``
    C-contiguous, group by group, channels first: ``(g, O, ...)``."""
    lead = rows.shape[:-1]
    g, o, c = w.shape
    m = int(np.prod(lead))
    # (g, C, M): a view whose every group is a strided matrix BLAS reads in place
    by_group = np.ascontiguousarray(rows).reshape(m, g, c).transpose(1, 2, 0)
    # (O, C) @ (C, M) per group. In BLAS's column-major terms the M positions are the
    # result's rows, which OpenBLAS splits between threads in contiguous blocks; the
    # (M, C) @ (C, O) form gives the same numbers but ran 2-3x slower on two shared
    # cores with O = 3 (conv_bwd_d_3d.json).
    return np.matmul(w, by_group).reshape(g, o, *lead)


def _rows_gram(a: np.ndarray, b: np.ndarray, groups: int) -> np.ndarray:
    """``sum over rows of a[row, i] * b[row, j]`` for channels-last ``a`` ``(..., g*A)`` and
    ``b`` ``(..., g*B)`` of the same positions, group by group: ``(g, A, B)``."""
    m = int(np.prod(a.shape[:-1]))  # 0 when the tap meets no position
    a_t = np.ascontiguousarray(a).reshape(m, groups, a.shape[-1] // groups).transpose(1, 2, 0)
    b_g = np.ascontiguousarray(b).reshape(m, groups, b.shape[-1] // groups).transpose(1, 0, 2)
    return np.matmul(a_t, b_g)


_BOTH_CHANNEL_AXES = (slice(None), slice(None))  # the (g, O/g) axes of a channels-first sum


def _as_channels_last(y: np.ndarray) -> np.ndarray:
    """A ``(g, O/g, N, *spatial)`` sum as an ``(N, *spatial, O)`` view."""
    return np.moveaxis(y.reshape(-1, *y.shape[2:]), 0, -1)


def _convolution_nxc(x: np.ndarray, w_oix: np.ndarray, geom: Sequence[Geom], groups: int,
                     out_spatial: Sequence[int]) -> np.ndarray:
    """Forward convolution of channels-last ``x`` ``(N, *X, C)`` with ``(O, C/g, *K)`` weights:
    per tap, the positions ``p*s - pb + k*d`` read as rows times that tap's weights."""
    w_taps = np.ascontiguousarray(_per_tap(w_oix, groups))  # (*K, g, O/g, C/g)
    g, o_per_g = w_taps.shape[-3:-1]
    y = np.zeros((g, o_per_g, x.shape[0], *out_spatial))  # channels first, as _rows_times gives
    for tap in _taps(w_oix.shape[2:]):
        at_p, at_q = _tap_windows(tap, geom, out_spatial, x.shape[1:-1])
        y[_BOTH_CHANNEL_AXES + at_p] += _rows_times(x[at_q], w_taps[tap])
    return _as_channels_last(y)


def _conv_transpose_nxc(x: np.ndarray, w_iox: np.ndarray, geom: Sequence[Geom], groups: int,
                        out_spatial: Sequence[int]) -> np.ndarray:
    """ConvTranspose scatter of channels-last ``x`` ``(N, *X, C)`` with ``(C, O/g, *K)`` weights:
    per tap, the rows times that tap's weights added at the positions ``p*s - pb + k*d``."""
    w_taps = np.ascontiguousarray(np.swapaxes(_per_tap(w_iox, groups), -1, -2))  # (*K, g, O/g, C/g)
    g, o_per_g = w_taps.shape[-3:-1]
    y = np.zeros((g, o_per_g, x.shape[0], *out_spatial))  # channels first, as _rows_times gives
    for tap in _taps(w_iox.shape[2:]):
        at_p, at_q = _tap_windows(tap, geom, x.shape[1:-1], out_spatial)
        # One tap sends distinct p to distinct q (s >= 1): no element is added twice.
        y[_BOTH_CHANNEL_AXES + at_q] += _rows_times(x[at_p], w_taps[tap])
    return _as_channels_last(y)


def _geom(p: shapes.Plan) -> Tuple[Geom, ...]:
    return tuple(zip(p.attrs.strides, p.pads_begin, p.attrs.dilations))


def _attr_kw(strides: Spatial, pads_begin: Spatial, pads_end: Spatial, dilations: Spatial,
             auto_pad: str, groups: int, data_format: str, weights_format: str,
             output_padding: Optional[Spatial] = None) -> Dict[str, Any]:
    kw = dict(strides=strides, pads_begin=pads_begin, pads_end=pads_end, dilations=dilations,
              auto_pad=auto_pad, groups=groups, data_format=data_format,
              weights_format=weights_format)
    if output_padding is not None:
        kw["output_padding"] = output_padding
    return kw


def conv_transpose(src: Any, weights: Any, bias: Any = None, *, strides: Spatial = 1,
                   pads_begin: Spatial = 0, pads_end: Spatial = 0, dilations: Spatial = 1,
                   auto_pad: str = "none", output_padding: Spatial = 0, groups: int = 1,
                   data_format: str = "NXC", weights_format: str = "XOI",
                   post_ops: Optional[Sequence[_post.PostOp]] = None,
                   quantize: Optional[_quant.Quantization] = None) -> np.ndarray:
    """Reference ConvTranspose (transposed convolution), the adjoint of :func:`convolution`,
    followed by `post_ops` (:func:`post_ops`, in float64 before the result is rounded).
    Quantized `src` and `weights` (``onednn_graph.quant``) are dequantized first and give
    an f32 result, or `quantize`'s integers (:func:`quantize` of the float64 values).

    Parameters
    ----------
    src : array, shape ``(N, C_in, *X)`` (NCX) or ``(N, *X, C_in)`` (NXC)
    weights : array, ``IOX`` = ``(C_in, C_out/groups, *K)`` or ``XOI`` = ``(*K, C_out/groups, C_in)``
    bias : array of shape ``(C_out,)``, optional
    strides, pads_begin, pads_end, dilations, output_padding : int or sequence of int
        Per spatial axis. An int applies to every axis.
    auto_pad : {"none", "same_upper", "same_lower", "valid"}
        Not "none": the pads are recomputed as the library does, see
        :func:`onednn_graph.shapes.resolve_pads`.
    groups : int
    data_format : {"NXC", "NCX"}
    weights_format : {"XOI", "IOX"}

    Returns
    -------
    ndarray
        ``dst``, ``s*(X-1) + (K-1)*d + 1 - pb - pe + output_padding`` per axis,
        in ``data_format`` and ``src``'s dtype.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.array([[[1.0, 2.0, 3.0]]])             # NCX, one channel
    >>> w = np.array([[[1.0, 10.0]]])                 # IOX (1, 1, 2)
    >>> conv_transpose(x, w, strides=2, data_format="NCX", weights_format="IOX")
    array([[[ 1., 10.,  2., 20.,  3., 30.]]])
    """
    if isinstance(src, _quant.Quantized) or isinstance(weights, _quant.Quantized):
        a, _ = _inputs(bias=bias)
        a["src"], a["weights"] = dequantize(src, "src"), dequantize(weights, "weights")
        dtype = np.dtype(np.float32)  # what oneDNN's Dequantize makes
    else:
        a, dtype = _inputs(src=src, weights=weights, bias=bias)
    kw = _attr_kw(strides, pads_begin, pads_end, dilations, auto_pad, groups, data_format,
                  weights_format, output_padding)
    in_shapes = [a["src"].shape, a["weights"].shape] + ([] if bias is None else [a["bias"].shape])
    p = shapes.plan("ConvTranspose", in_shapes, **kw)
    x = _channels_last(a["src"], p.attrs.data_format)
    w = _relayout(a["weights"], p.attrs.weights_format, "IOX")
    out_spatial = shapes.data_spatial(p.attrs.data_format, p.output_shape)
    y = _conv_transpose_nxc(x, w, _geom(p), p.attrs.groups, out_spatial)
    if bias is not None:
        y += a["bias"]  # the channels are the last axis
    y = _relayout(y, "NXC", p.attrs.data_format)
    y = _post_chain(y, post_ops) if post_ops else y
    if quantize is not None:
        return np.ascontiguousarray(_quantize(y, _quant_of(quantize)))
    return y.astype(dtype, order="C")


def _quant_of(q: Any) -> _quant.Quantization:
    if not isinstance(q, _quant.Quantization):
        raise TypeError(f"quantize must be an onednn_graph.quant.to(...) quantization, got {q!r}")
    return q


def dequantize(q: Any, name: str = "q") -> np.ndarray:
    """The reals a quantized array (``onednn_graph.quant``) stands for, in float64:
    ``(data - zero_point) * scale`` (per position of the axis for per-channel ones),
    as oneDNN's Dequantize defines them.

    >>> import numpy as np
    >>> from onednn_graph import quant, reference
    >>> reference.dequantize(quant.per_tensor(np.array([0, 128, 255], np.uint8), 0.5, 128))
    array([-64. ,   0. ,  63.5])
    """
    if not isinstance(q, _quant.Quantized):
        raise TypeError(f"{name} must be a quantized array (onednn_graph.quant.per_tensor or "
                        f"per_channel), got {type(q).__name__}")
    data = _arrays.to_numpy(name, q.data)
    qz = q.quantization
    if data.dtype != _quant.DTYPES[qz.dtype]:
        raise TypeError(f"{name}: data of dtype {data.dtype} for a {qz.dtype} quantization")
    scales, zps = _scales_and_zero_points(qz, data.ndim)
    return (data.astype(np.float64) - zps) * scales


def quantize(values: Any, quantization: _quant.Quantization) -> np.ndarray:
    """`values` as integers of `quantization` (``onednn_graph.quant.to``):
    ``saturate(round_half_to_even(values / scale) + zero_point)``, as oneDNN's Quantize
    computes them (its CPU kernels round to nearest even and saturate).

    >>> import numpy as np
    >>> from onednn_graph import quant, reference
    >>> reference.quantize(np.array([-1.0, 0.25, 0.75, 100.0]), quant.to("u8", 0.5, 2))
    array([  0,   2,   4, 202], dtype=uint8)
    """
    return _quantize(_arrays.to_numpy("values", values).astype(np.float64), _quant_of(quantization))


def _scales_and_zero_points(q: _quant.Quantization, ndim: int) -> Tuple[np.ndarray, np.ndarray]:
    """`q`'s scales and zero points in float64, shaped to broadcast along its axis."""
    shape = [1] * ndim
    if q.axis is not None:
        shape[q.axis] = -1
    return (np.asarray(q.scales, np.float64).reshape(shape),
            np.asarray(q.zero_points, np.float64).reshape(shape))


def _quantize(v: np.ndarray, q: _quant.Quantization) -> np.ndarray:
    scales, zps = _scales_and_zero_points(q, v.ndim)
    lo, hi = q.range()
    return np.clip(np.rint(v / scales) + zps, lo, hi).astype(_quant.DTYPES[q.dtype])


def conv_transpose_backward_data(diff_dst: Any, weights: Any, *, strides: Spatial = 1,
                                 pads_begin: Spatial = 0, pads_end: Spatial = 0,
                                 dilations: Spatial = 1, auto_pad: str = "none",
                                 output_padding: Spatial = 0, groups: int = 1,
                                 data_format: str = "NXC", weights_format: str = "XOI",
                                 post_ops: Optional[Sequence[_post.PostOp]] = None) -> np.ndarray:
    """Reference ConvTransposeBackwardData: the gradient of ConvTranspose with respect to ``src``,
    followed by `post_ops` (:func:`post_ops`, in float64 before the result is rounded).

    It is a forward convolution of ``diff_dst`` with ``weights`` read as
    ``(C_in, C_out/groups, *K)`` = (O, I/g) of that convolution. All attributes
    are those of the forward ConvTranspose: the pads come from auto_pad as
    ConvTranspose resolves them, and ``output_padding`` extends diff_dst. The
    output size is ``floor((Y + pb + pe - output_padding - (K-1)*d - 1) / s) + 1``
    (infer_convtranspose_bprop_data_output_shape with ``pads_end - output_padding``).
    Other parameters as for :func:`conv_transpose`.

    Examples
    --------
    >>> import numpy as np
    >>> dy = np.array([[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]]])
    >>> w = np.array([[[1.0, 10.0]]])
    >>> conv_transpose_backward_data(dy, w, strides=2, data_format="NCX", weights_format="IOX")
    array([[[21., 43., 65.]]])
    """
    a, dtype = _inputs(diff_dst=diff_dst, weights=weights)
    kw = _attr_kw(strides, pads_begin, pads_end, dilations, auto_pad, groups, data_format,
                  weights_format, output_padding)
    p = shapes.plan("ConvTransposeBackwardData", [a["diff_dst"].shape, a["weights"].shape], **kw)
    dy = _channels_last(a["diff_dst"], p.attrs.data_format)
    w = _relayout(a["weights"], p.attrs.weights_format, "IOX")
    out_spatial = shapes.data_spatial(p.attrs.data_format, p.output_shape)
    dx = _convolution_nxc(dy, w, _geom(p), p.attrs.groups, out_spatial)
    dx = _relayout(dx, "NXC", p.attrs.data_format)
    return (_post_chain(dx, post_ops) if post_ops else dx).astype(dtype, order="C")


def conv_transpose_backward_weights(src: Any, diff_dst: Any,
                                    weights_shape: Optional[Sequence[int]] = None, *,
                                    strides: Spatial = 1, pads_begin: Spatial = 0,
                                    pads_end: Spatial = 0, dilations: Spatial = 1,
                                    auto_pad: str = "none", output_padding: Spatial = 0,
                                    groups: int = 1, data_format: str = "NXC",
                                    weights_format: str = "XOI") -> np.ndarray:
    """Reference ConvTransposeBackwardWeights: the gradient of ConvTranspose with respect to ``weights``.

    ``dW[c, o % (C_out/g), k] = sum_{n, p} src[n, c, p] * diff_dst[n, o, p*s - pb + k*d]``
    (IOX indices, ``c`` in ``o``'s group), returned in ``weights_format``.
    ``weights_shape`` is in ``weights_format``. If it is None, it is inferred
    by :func:`onednn_graph.shapes.infer_weights_shape`, which raises ValueError
    when the kernel size is not unique. All attributes are those of the forward
    ConvTranspose (auto_pad resolved as it does, ``output_padding`` extending
    diff_dst). Other parameters as for :func:`conv_transpose`.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.array([[[1.0, 2.0, 3.0]]])
    >>> dy = np.array([[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]]])
    >>> conv_transpose_backward_weights(x, dy, (1, 1, 2), strides=2, data_format="NCX",
    ...                                 weights_format="IOX")
    array([[[22., 28.]]])
    """
    a, dtype = _inputs(src=src, diff_dst=diff_dst)
    kw = _attr_kw(strides, pads_begin, pads_end, dilations, auto_pad, groups, data_format,
                  weights_format, output_padding)
    if weights_shape is None:
        weights_shape = shapes.infer_weights_shape(a["src"].shape, a["diff_dst"].shape, **kw)
    p = shapes.plan("ConvTransposeBackwardWeights", [a["src"].shape, a["diff_dst"].shape],
                    weights_shape=weights_shape, **kw)
    g = p.attrs.groups
    x = _channels_last(a["src"], p.attrs.data_format)
    dy = _channels_last(a["diff_dst"], p.attrs.data_format)
    dw_taps = np.zeros((*p.kernel, g, x.shape[-1] // g, dy.shape[-1] // g))
    for tap in _taps(p.kernel):
        at_p, at_q = _tap_windows(tap, _geom(p), x.shape[1:-1], dy.shape[1:-1])
        dw_taps[tap] = _rows_gram(x[at_p], dy[at_q], g)  # (g, C_in/g, C_out/g)
    dw = _from_per_tap(dw_taps)  # IOX
    return _relayout(dw, "IOX", p.attrs.weights_format).astype(dtype, order="C")


def convolution_backward_data(diff_dst: Any, weights: Any,
                              dst_shape: Optional[Sequence[int]] = None, *,
                              strides: Spatial = 1, pads_begin: Spatial = 0,
                              pads_end: Spatial = 0, dilations: Spatial = 1,
                              auto_pad: str = "none", output_padding: Spatial = 0,
                              groups: int = 1, data_format: str = "NXC",
                              weights_format: str = "XIO",
                              post_ops: Optional[Sequence[_post.PostOp]] = None) -> np.ndarray:
    """Reference ConvolutionBackwardData: the gradient of a convolution with respect to its ``src``,
    followed by `post_ops`.

    ``weights`` are ``OIX`` = ``(C_out, C_in/groups, *K)`` or ``XIO`` =
    ``(*K, C_in/groups, C_out)``. ``dst_shape`` is the forward convolution's
    ``src`` shape (the shape of the result) in ``data_format``. If it is None,
    it is inferred by :func:`onednn_graph.shapes.infer_dst_shape`, which raises
    ValueError when it is not unique (usually with stride > 1). Auto-pad uses
    ``dst_shape``'s sizes. ``output_padding`` is ignored, as in the 3.2
    library.

    Examples
    --------
    >>> import numpy as np
    >>> dy = np.array([[[1.0, 2.0]]])
    >>> w = np.array([[[1.0, 10.0]]])                 # OIX (1, 1, 2)
    >>> convolution_backward_data(dy, w, (1, 1, 5), strides=2, data_format="NCX",
    ...                           weights_format="OIX")
    array([[[ 1., 10.,  2., 20.,  0.]]])
    """
    a, dtype = _inputs(diff_dst=diff_dst, weights=weights)
    kw = _attr_kw(strides, pads_begin, pads_end, dilations, auto_pad, groups, data_format,
                  weights_format, output_padding)
    if dst_shape is None:
        dst_shape = shapes.infer_dst_shape(a["diff_dst"].shape, a["weights"].shape, **kw)
    p = shapes.plan("ConvolutionBackwardData", [a["diff_dst"].shape, a["weights"].shape],
                    dst_shape=dst_shape, **kw)
    dy = _channels_last(a["diff_dst"], p.attrs.data_format)
    w = _relayout(a["weights"], p.attrs.weights_format, "OIX")
    out_spatial = shapes.data_spatial(p.attrs.data_format, p.output_shape)
    dx = _conv_transpose_nxc(dy, w, _geom(p), p.attrs.groups, out_spatial)
    dx = _relayout(dx, "NXC", p.attrs.data_format)
    return (_post_chain(dx, post_ops) if post_ops else dx).astype(dtype, order="C")


def convolution(src: Any, weights: Any, bias: Any = None, *, strides: Spatial = 1, pads_begin: Spatial = 0,
                pads_end: Spatial = 0, dilations: Spatial = 1, auto_pad: str = "none",
                groups: int = 1, data_format: str = "NXC", weights_format: str = "XIO"
                ) -> np.ndarray:
    """Reference forward convolution (`bias`: one value per output channel, optional),
    the op whose adjoint is ConvolutionBackwardData.

    ``weights`` are ``OIX`` = ``(C_out, C_in/groups, *K)`` or ``XIO``. The output
    size is ``floor((X + pb + pe - (K-1)*d - 1) / s) + 1``, with auto_pad on
    ``src``'s sizes.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.array([[[1.0, 2.0, 3.0, 4.0]]])
    >>> w = np.array([[[1.0, -1.0]]])
    >>> convolution(x, w, data_format="NCX", weights_format="OIX")
    array([[[-1., -1., -1.]]])
    """
    a, dtype = _inputs(src=src, weights=weights, bias=bias)
    kw = _attr_kw(strides, pads_begin, pads_end, dilations, auto_pad, groups, data_format,
                  weights_format)
    p = shapes.plan("Convolution", [a["src"].shape, a["weights"].shape] +
                    ([a["bias"].shape] if bias is not None else []), **kw)
    x = _channels_last(a["src"], p.attrs.data_format)
    w = _relayout(a["weights"], p.attrs.weights_format, "OIX")
    out_spatial = shapes.data_spatial(p.attrs.data_format, p.output_shape)
    y = _convolution_nxc(x, w, _geom(p), p.attrs.groups, out_spatial)
    if bias is not None:
        y += a["bias"]  # the channels are the last axis
    return _relayout(y, "NXC", p.attrs.data_format).astype(dtype, order="C")


def convolution_backward_weights(src: Any, diff_dst: Any, weights_shape: Sequence[int], *,
                                 strides: Spatial = 1, pads_begin: Spatial = 0,
                                 pads_end: Spatial = 0, dilations: Spatial = 1,
                                 auto_pad: str = "none", groups: int = 1,
                                 data_format: str = "NXC", weights_format: str = "XIO"
                                 ) -> np.ndarray:
    """Reference ConvolutionBackwardWeights: the gradient of :func:`convolution` with
    respect to its weights, which the package runs some ConvTransposeBackwardWeights
    calls as.

    ``dW[o, c % (C_in/g), k] = sum_{n, p} diff_dst[n, o, p] * src[n, c, p*s - pb + k*d]``
    (OIX indices, ``c`` in ``o``'s group), returned in ``weights_format`` (``OIX`` or
    ``XIO``) with ``weights_shape``.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.array([[[1.0, 2.0, 3.0, 4.0]]])
    >>> dy = np.array([[[1.0, 0.0, -1.0]]])
    >>> convolution_backward_weights(x, dy, (1, 1, 2), data_format="NCX", weights_format="OIX")
    array([[[-2., -2.]]])
    """
    a, dtype = _inputs(src=src, diff_dst=diff_dst)
    kw = _attr_kw(strides, pads_begin, pads_end, dilations, auto_pad, groups, data_format,
                  weights_format)
    p = shapes.plan("ConvolutionBackwardWeights", [a["src"].shape, a["diff_dst"].shape],
                    weights_shape=weights_shape, **kw)
    g = p.attrs.groups
    x = _channels_last(a["src"], p.attrs.data_format)
    dy = _channels_last(a["diff_dst"], p.attrs.data_format)
    dw_taps = np.zeros((*p.kernel, g, dy.shape[-1] // g, x.shape[-1] // g))
    for tap in _taps(p.kernel):
        at_p, at_q = _tap_windows(tap, _geom(p), dy.shape[1:-1], x.shape[1:-1])
        dw_taps[tap] = _rows_gram(dy[at_p], x[at_q], g)  # (g, C_out/g, C_in/g)
    dw = _from_per_tap(dw_taps)  # OIX
    return _relayout(dw, "OIX", p.attrs.weights_format).astype(dtype, order="C")


def conv_transpose_backprop_filters(input_forward: Any, output_delta: Any,
                                    filter_shape: Optional[Sequence[int]] = None, *,
                                    strides: Spatial = 1, pads_begin: Spatial = 0,
                                    pads_end: Spatial = 0, dilations: Spatial = 1,
                                    auto_pad: str = "none", output_padding: Spatial = 0,
                                    groups: int = 1, data_format: str = "NXC",
                                    filter_format: str = "XIO") -> np.ndarray:
    """Legacy ConvTransposeBackpropFilters (graph spec 0.x name of ConvTransposeBackwardWeights).

    ``filter_format`` ``OIX`` is ``(C_out/groups, C_in, *K)`` and ``XIO`` is
    ``(*K, C_in, C_out/groups)``. They are the current ``IOX``/``XOI`` with the
    two channel axes swapped (see :func:`onednn_graph.shapes.from_legacy_filter`).
    ``filter_shape`` and the result use that legacy layout.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.ones((1, 1, 3))
    >>> dy = np.ones((1, 2, 4))
    >>> conv_transpose_backprop_filters(x, dy, (2, 1, 2), data_format="NCX",
    ...                                 filter_format="OIX").shape
    (2, 1, 2)
    """
    weights_format, weights_shape = shapes.from_legacy_filter(filter_format, filter_shape)
    dw = conv_transpose_backward_weights(
        input_forward, output_delta, weights_shape, strides=strides, pads_begin=pads_begin,
        pads_end=pads_end, dilations=dilations, auto_pad=auto_pad,
        output_padding=output_padding, groups=groups, data_format=data_format,
        weights_format=weights_format)
    return np.ascontiguousarray(_relayout(dw, weights_format, filter_format))



def matmul(src: Any, weights: Any, bias: Any = None, *, transpose_a: bool = False,
           transpose_b: bool = False) -> np.ndarray:
    """Reference MatMul, as oneDNN's Graph API defines it: ``src @ weights`` over the
    last two axes (each first transposed where asked), the leading (batch) axes
    broadcast as NumPy broadcasts them, plus `bias` broadcast to the result. What the
    package's kernel == stride formulation runs (``_impl.matmul_form``), so that its
    reproducers replay.

    Examples
    --------
    >>> import numpy as np
    >>> matmul(np.array([[1.0, 2.0]]), np.array([[3.0], [4.0]]), np.array([0.5]))
    array([[11.5]])
    """
    arrays = {"src": src, "weights": weights}
    if bias is not None:
        arrays["bias"] = bias
    a, dtype = _inputs(**arrays)
    x, w = a["src"], a["weights"]
    if x.ndim < 2 or w.ndim < 2:  # np.matmul would promote a vector; the op's inputs are matrices
        raise ValueError(f"matmul takes arrays of 2 or more axes, got {x.ndim} and {w.ndim}")
    if transpose_a:
        x = np.swapaxes(x, -1, -2)
    if transpose_b:
        w = np.swapaxes(w, -1, -2)
    # Every output element is one sum over k of products, in float64 (BLAS).
    y = np.matmul(x, w)
    if bias is not None:
        y = y + a["bias"]
    return y.astype(dtype, order="C")


def _erf(x: np.ndarray) -> np.ndarray:
    import math
    return np.vectorize(math.erf, otypes=[np.float64])(x)


_UNARY = {
    "Abs": lambda y, a: np.abs(y),
    "Clamp": lambda y, a: np.clip(y, a["min"], a["max"]),
    "Elu": lambda y, a: np.where(y > 0, y, a["alpha"] * np.expm1(np.minimum(y, 0))),
    "Exp": lambda y, a: np.exp(y),
    "GELU": lambda y, a: 0.5 * y * (1 + _erf(y / np.sqrt(2))),
    "HardSigmoid": lambda y, a: np.clip(a["alpha"] * y + a["beta"], 0, 1),
    "HardSwish": lambda y, a: y * np.clip(y + 3, 0, 6) / 6,
    "LeakyReLU": lambda y, a: np.where(y >= 0, y, a["alpha"] * y),
    "Log": lambda y, a: np.log(y),
    "Mish": lambda y, a: y * np.tanh(np.logaddexp(0, y)),
    "Sigmoid": lambda y, a: 1 / (1 + np.exp(-y)),
    "SoftPlus": lambda y, a: np.logaddexp(0, a["beta"] * y) / a["beta"],
    "ReLU": lambda y, a: np.maximum(y, 0),
    "Round": lambda y, a: np.round(y),
    "Sqrt": lambda y, a: np.sqrt(y),
    "Square": lambda y, a: y * y,
    "Tanh": lambda y, a: np.tanh(y),
}
_BINARY = {"Add": np.add, "Multiply": np.multiply, "Maximum": np.maximum,
           "Minimum": np.minimum, "Subtract": np.subtract, "Divide": np.divide}


def post_ops(result: Any, post_ops: Sequence[_post.PostOp]) -> np.ndarray:
    """Apply `post_ops` (``onednn_graph.post``) in order to `result`, in float64:
    what ``conv_transpose(..., post_ops=...)`` computes after the op.

    Examples
    --------
    >>> import numpy as np
    >>> from onednn_graph import post, reference
    >>> reference.post_ops(np.array([-1.0, 2.0]), [post.relu(), post.add(np.array([0.5, 0.5]))])
    array([0.5, 2.5])
    """
    return _post_chain(_arrays.to_numpy("result", result).astype(np.float64), post_ops)


def _post_chain(y: np.ndarray, post_ops: Sequence[_post.PostOp]) -> np.ndarray:
    for p in post_ops:
        if p.kind in _BINARY:
            operand = dequantize(p.operand, "operand") if isinstance(p.operand, _quant.Quantized) \
                else _arrays.to_numpy("operand", p.operand).astype(np.float64)
            y = _BINARY[p.kind](y, operand)
        else:
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                y = _UNARY[p.kind](y, dict(p.attrs))
    return y

def __dir__() -> list[str]:
    return list(__all__)
