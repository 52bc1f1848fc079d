"""The functional API: the four operations on NumPy arrays, run by oneDNN.

Every call checks its arguments (``_attrs``, ``_arrays``, ``shapes``), picks
what oneDNN 3.2 compiles for it (``_lowering``), takes the compiled op from the
cache or compiles it (``_compiled``), and executes it on the caller's memory.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from . import _arrays, _attrs, _compiled, _lowering, shapes
from .errors import UnsupportedError

__all__ = [
    "conv_transpose",
    "conv_transpose_backward_data",
    "conv_transpose_backward_weights",
    "convolution_backward_data",
    "conv_transpose_backprop_filters",
]

Spatial = Any  # an int (every spatial axis) or a sequence with one int per axis


def _conv_attrs(strides: Spatial, pads_begin: Spatial, pads_end: Spatial, dilations: Spatial,
                auto_pad: str, output_padding: Spatial, groups: int, data_format: str,
                weights_format: str) -> dict[str, Any]:
    """The keywords every op shares, by their spec names (checked later by shapes.plan)."""
    return dict(strides=strides, pads_begin=pads_begin, pads_end=pads_end, dilations=dilations,
                auto_pad=auto_pad, output_padding=output_padding, groups=groups,
                data_format=data_format, weights_format=weights_format)


def _shape_arg(name: str, value: Any) -> Optional[tuple[int, ...]]:
    """weights_shape / dst_shape: a sequence of ints or the spec's 1-D s32 tensor."""
    if value is None:
        return None
    if isinstance(value, np.ndarray):
        if value.dtype != np.int32 and value.dtype.kind not in "iu":
            raise TypeError(f"{name} as an array must be int32 (the spec's s32 input), "
                            f"got {value.dtype}")
        if value.ndim != 1:
            raise ValueError(f"{name} must be one-dimensional, got shape {value.shape}")
    return _attrs.check_int_list(name, value, 1)


def _run(kind: str, names: Sequence[str], arrays: Sequence[Any], out: Any,
         attrs: dict[str, Any], view_out=None) -> np.ndarray:
    inputs = [_arrays.as_input(n, a) for n, a in zip(names, arrays)]
    dtypes = {a.dtype for a in inputs}
    if len(dtypes) != 1:
        listing = ", ".join(f"{n}: {a.dtype}" for n, a in zip(names, inputs))
        raise TypeError(f"{kind}: all tensors must share one dtype, got {listing}")
    plan = shapes.plan(kind, [a.shape for a in inputs], **attrs)
    native = _lowering.lower(plan, shapes.data_spatial(plan.attrs.data_format, inputs[0].shape))
    dtype = inputs[0].dtype
    out_shape = plan.output_shape if view_out is None else view_out[0]
    if out is None:
        out = _arrays.allocate(kind, out_shape, dtype)
    else:
        out = _arrays.check_out(out, out_shape, dtype, inputs)
    target = out if view_out is None else out.transpose(view_out[1])
    try:
        _compiled.run(native.kind, native.attrs, inputs, target)
    except UnsupportedError as exc:
        if native.kind == kind:
            raise
        # Name the op the caller asked for, not only the one it was lowered to.
        raise UnsupportedError(f"{kind}, lowered to {native.lowering}: {exc.message}",
                               exc.status) from None
    return out


def conv_transpose(src: Any, weights: Any, bias: Any = None, *, strides: Spatial = 1,
                   pads_begin: Spatial = 0, pads_end: Spatial = 0, dilations: Spatial = 1,
                   auto_pad: str = "none", output_padding: Spatial = 0, groups: int = 1,
                   data_format: str = "NXC", weights_format: str = "XOI",
                   out: Any = None) -> np.ndarray:
    """Transposed convolution (the spec's ConvTranspose), computed by oneDNN.

    Parameters
    ----------
    src : array, shape (N, *X, C_in) for NXC or (N, C_in, *X) for NCX
    weights : array, shape (*K, C_out/groups, C_in) for XOI or (C_in, C_out/groups, *K) for IOX
    bias : array of shape (C_out,), optional
    strides, pads_begin, pads_end, dilations, output_padding : int or sequence of int
        One value per spatial axis (an int applies to all).
    auto_pad : {"none", "same_upper", "same_lower", "valid"}, any letter case
    groups : int
    data_format : {"NXC", "NCX"}
    weights_format : {"XOI", "IOX"}
    out : array, optional
        Written in place and returned; must have the result's shape and dtype.

    Returns
    -------
    ndarray of the inputs' dtype: dst, spatial size
    ``strides*(X-1) + dilations*(K-1) + 1 - pads_begin - pads_end + output_padding``.

    Examples
    --------
    >>> import numpy as np, onednn_graph as og
    >>> x = np.ones((1, 1, 3), np.float32)          # NCX
    >>> w = np.ones((1, 1, 2), np.float32)          # IOX
    >>> og.conv_transpose(x, w, strides=2, data_format="NCX", weights_format="IOX")
    array([[[1., 1., 1., 1., 1., 1.]]], dtype=float32)
    """
    attrs = _conv_attrs(strides, pads_begin, pads_end, dilations, auto_pad, output_padding,
                        groups, data_format, weights_format)
    arrays = [src, weights] + ([] if bias is None else [bias])
    return _run(_attrs.CONV_TRANSPOSE, ("src", "weights", "bias"), arrays, out, attrs)


def conv_transpose_backward_data(diff_dst: Any, weights: Any, *, strides: Spatial = 1,
                                 pads_begin: Spatial = 0, pads_end: Spatial = 0,
                                 dilations: Spatial = 1, auto_pad: str = "none",
                                 output_padding: Spatial = 0, groups: int = 1,
                                 data_format: str = "NXC", weights_format: str = "XOI",
                                 out: Any = None) -> np.ndarray:
    """Gradient of ConvTranspose with respect to src (ConvTransposeBackwardData).

    Same keywords as :func:`conv_transpose`. The result (diff_src) has the
    spatial size ``floor((Y + pads_begin + pads_end - output_padding - dilations*(K-1) - 1)
    / strides) + 1`` of the diff_dst size Y.

    Examples
    --------
    >>> import numpy as np, onednn_graph as og
    >>> dy = np.ones((1, 1, 6), np.float32)
    >>> w = np.ones((1, 1, 2), np.float32)
    >>> og.conv_transpose_backward_data(dy, w, strides=2, data_format="NCX", weights_format="IOX")
    array([[[2., 2., 2.]]], dtype=float32)
    """
    attrs = _conv_attrs(strides, pads_begin, pads_end, dilations, auto_pad, output_padding,
                        groups, data_format, weights_format)
    return _run(_attrs.CONV_TRANSPOSE_BWD_DATA, ("diff_dst", "weights"), [diff_dst, weights],
                out, attrs)


def conv_transpose_backward_weights(src: Any, diff_dst: Any, weights_shape: Any = None, *,
                                    strides: Spatial = 1, pads_begin: Spatial = 0,
                                    pads_end: Spatial = 0, dilations: Spatial = 1,
                                    auto_pad: str = "none", output_padding: Spatial = 0,
                                    groups: int = 1, data_format: str = "NXC",
                                    weights_format: str = "XOI", out: Any = None) -> np.ndarray:
    """Gradient of ConvTranspose with respect to weights (ConvTransposeBackwardWeights).

    ``weights_shape`` (a sequence of ints or a 1-D int32 array) is the result's
    shape in ``weights_format``; when omitted it is inferred where the other
    arguments determine it, else ValueError asks for it.

    Examples
    --------
    >>> import numpy as np, onednn_graph as og
    >>> x = np.ones((1, 1, 3), np.float32)
    >>> dy = np.ones((1, 1, 6), np.float32)
    >>> og.conv_transpose_backward_weights(x, dy, (1, 1, 2), strides=2,
    ...                                    data_format="NCX", weights_format="IOX")
    array([[[3., 3.]]], dtype=float32)
    """
    attrs = _conv_attrs(strides, pads_begin, pads_end, dilations, auto_pad, output_padding,
                        groups, data_format, weights_format)
    ws = _shape_arg("weights_shape", weights_shape)
    if ws is None:
        ws = shapes.infer_weights_shape(np.shape(src), np.shape(diff_dst), **attrs)
    return _run(_attrs.CONV_TRANSPOSE_BWD_WEIGHTS, ("src", "diff_dst"), [src, diff_dst], out,
                dict(attrs, weights_shape=ws))


def convolution_backward_data(diff_dst: Any, weights: Any, dst_shape: Any = None, *,
                              strides: Spatial = 1, pads_begin: Spatial = 0,
                              pads_end: Spatial = 0, dilations: Spatial = 1,
                              auto_pad: str = "none", output_padding: Spatial = 0,
                              groups: int = 1, data_format: str = "NXC",
                              weights_format: str = "XIO", out: Any = None) -> np.ndarray:
    """Gradient of a convolution with respect to its src (ConvolutionBackwardData).

    ``weights`` are the forward convolution's: XIO ``(*K, C_in/groups, C_out)``
    or OIX ``(C_out, C_in/groups, *K)``. ``dst_shape`` is the result's shape
    (the forward convolution's src); when omitted it is inferred where unique,
    else ValueError asks for it. As in oneDNN 3.2, ``output_padding`` does not
    change the result: ``dst_shape`` fixes the geometry.

    Examples
    --------
    >>> import numpy as np, onednn_graph as og
    >>> dy = np.ones((1, 1, 3), np.float32)
    >>> w = np.ones((1, 1, 2), np.float32)          # OIX
    >>> og.convolution_backward_data(dy, w, (1, 1, 4), data_format="NCX", weights_format="OIX")
    array([[[1., 2., 2., 1.]]], dtype=float32)
    """
    attrs = _conv_attrs(strides, pads_begin, pads_end, dilations, auto_pad, output_padding,
                        groups, data_format, weights_format)
    ds = _shape_arg("dst_shape", dst_shape)
    if ds is None:
        ds = shapes.infer_dst_shape(np.shape(diff_dst), np.shape(weights), **attrs)
    return _run(_attrs.CONV_BWD_DATA, ("diff_dst", "weights"), [diff_dst, weights], out,
                dict(attrs, dst_shape=ds))


def conv_transpose_backprop_filters(input_forward: Any, output_delta: Any,
                                    filter_shape: Any = None, *, strides: Spatial = 1,
                                    pads_begin: Spatial = 0, pads_end: Spatial = 0,
                                    dilations: Spatial = 1, auto_pad: str = "none",
                                    output_padding: Spatial = 0, groups: int = 1,
                                    data_format: str = "NXC", filter_format: str = "XIO",
                                    out: Any = None) -> np.ndarray:
    """ConvTransposeBackpropFilters, the earlier spec's name of ConvTransposeBackwardWeights.

    ``filter_format`` OIX is ``(C_out/groups, C_in, *K)`` and XIO is
    ``(*K, C_in, C_out/groups)``: the current IOX / XOI with the two channel
    axes swapped. oneDNN writes the result straight into that layout (the
    output's strides describe it); nothing is transposed afterwards.

    Examples
    --------
    >>> import numpy as np, onednn_graph as og
    >>> x = np.ones((1, 1, 3), np.float32)
    >>> dy = np.ones((1, 1, 6), np.float32)
    >>> og.conv_transpose_backprop_filters(x, dy, (1, 1, 2), strides=2, data_format="NCX",
    ...                                    filter_format="OIX")
    array([[[3., 3.]]], dtype=float32)
    """
    _attrs.check_choice("filter_format", filter_format, tuple(_attrs.LEGACY_FILTER_FORMATS))
    weights_format, ws = shapes.from_legacy_filter(filter_format, _shape_arg("filter_shape", filter_shape))
    attrs = _conv_attrs(strides, pads_begin, pads_end, dilations, auto_pad, output_padding,
                        groups, data_format, weights_format)
    if ws is None:
        ws = shapes.infer_weights_shape(np.shape(input_forward), np.shape(output_delta), **attrs)
    to_legacy = shapes.format_permutation(weights_format, filter_format, len(ws))
    legacy_shape = tuple(ws[p] for p in to_legacy)
    to_current = shapes.format_permutation(filter_format, weights_format, len(ws))
    return _run(_attrs.CONV_TRANSPOSE_BWD_WEIGHTS, ("input_forward", "output_delta"),
                [input_forward, output_delta], out, dict(attrs, weights_shape=ws),
                view_out=(legacy_shape, to_current))
