"""The functional API: the four operations on NumPy arrays, run by oneDNN.

Every call checks its arguments (``_impl.attrs``, ``_impl.arrays``, ``shapes``), picks
what oneDNN 3.2 compiles for it (``_lowering``), takes the compiled op from the
cache or compiles it (``_impl.compiled``), and executes it on the caller's memory.
A keyword a function does not take is Python's TypeError saying which one the caller
meant (``stride`` -> ``strides``: ``_impl.attrs.OPS_KEYWORD_HINTS``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Sequence, TypeVar, Union

import numpy as np

from . import post as _post, quant as _quant
from ._impl import attrs as _attrs, call as _call, fused as _fused, registry as _registry

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ._impl.attrs import NoKeywords

__all__ = [
    "conv_transpose",
    "conv_transpose_backward_data",
    "conv_transpose_backward_weights",
    "convolution_backward_data",
    "conv_transpose_backprop_filters",
]

Spatial = Union[int, Sequence[int]]  # an int (every spatial axis) or one int per axis
#: The caller's ``out`` object (an ndarray, a torch tensor, ...): returned as given.
OutT = TypeVar("OutT")


# The keywords every op shares, by their spec names (checked later by shapes.plan).
# Each function hands _call.run its values as a tuple in this order: a cached
# call then builds no dict (a microsecond of the tiny call's few).
_CONV_KEYS = ("strides", "pads_begin", "pads_end", "dilations", "auto_pad", "output_padding",
              "groups", "data_format", "weights_format")
_CTBW_KEYS = _CONV_KEYS + ("weights_shape",)
_CBD_KEYS = _CONV_KEYS + ("dst_shape",)
_LEGACY_KEYS = _CONV_KEYS[:-1] + ("filter_format", "filter_shape")
# Each op's kind and array arguments (_impl.registry), bound once: module constants
# cost a cached call less than a lookup.
_CT, _CTBD, _CTBW, _CBD, _LEGACY = (
    _registry.CONV_TRANSPOSE, _registry.CONV_TRANSPOSE_BWD_DATA,
    _registry.CONV_TRANSPOSE_BWD_WEIGHTS, _registry.CONV_BWD_DATA, _registry.LEGACY_BACKPROP_FILTERS)
_CT_IN, _CTBD_IN, _CTBW_IN, _CBD_IN, _LEGACY_IN = (
    _registry.input_names(k) for k in (_CT, _CTBD, _CTBW, _CBD, _LEGACY))


def _fused_call(kind: str, names: Sequence[str], arrays: tuple, out: Any,
                keys: tuple[str, ...], values: tuple, post_ops: Any, quantize: Any = None) -> Any:
    """A call with post-ops or quantization (``_impl.fused``); where the op is lowered it
    runs alone first, as a plain call. Formats spelled out (``"NCHW"``) are given to
    ``_impl.fused`` as the spec names them: it reads them before they are checked."""
    first = arrays[0].data if isinstance(arrays[0], _quant.Quantized) else arrays[0]
    attrs = _attrs.spelled_formats(kind, dict(zip(keys, values)), np.ndim(first) - 2)
    return _fused.run(kind, lambda y: _call.run(kind, names, arrays, y, keys, values),
                      names[:len(arrays)], arrays, attrs, post_ops, out, quantize)


@_attrs.slips_caught
def conv_transpose(src: Any, weights: Any, bias: Any = None, *, strides: Spatial = 1,
                   pads_begin: Spatial = 0, pads_end: Spatial = 0, dilations: Spatial = 1,
                   auto_pad: str = "none", output_padding: Spatial = 0, groups: int = 1,
                   data_format: str = "NXC", weights_format: str = "XOI",
                   out: Optional[OutT] = None,
                   post_ops: Optional[Sequence[_post.PostOp]] = None,
                   quantize: Optional[_quant.Quantization] = None,
                   **slips: Unpack[NoKeywords]) -> Union[np.ndarray, OutT]:
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
        Or spelled out for the arrays' spatial axes: "NHWC", "NCHW" (2-D), "NCW", ...
    weights_format : {"XOI", "IOX"}
        Or spelled out likewise: "HWOI", "IOHW" (2-D), ...
    out : array or CPU torch tensor, optional
        Written in place and returned as the caller's own object; must have the
        result's shape and dtype.
    post_ops : list of ``onednn_graph.post`` ops, optional
        Applied in order after the op and its bias (``[post.relu(), post.add(skip)]``),
        compiled with it by oneDNN's fusion policy: one partition where the linked
        oneDNN fuses the chain (``onednn_graph.post``); ``og.reference.post_ops``
        is the float64 reference.
    quantize : ``onednn_graph.quant.to(dtype, scale, zero_point)``, optional
        Return the result quantized to u8/s8 (oneDNN's Quantize, fused with the op).
        With `src` and `weights` quantized (``quant.per_tensor`` / ``quant.per_channel``)
        the op is oneDNN's int8 ConvTranspose; ``og.reference.conv_transpose`` takes
        the same arguments.

    Returns
    -------
    ndarray of the inputs' dtype
        dst, spatial size
        ``strides*(X-1) + dilations*(K-1) + 1 - pads_begin - pads_end + output_padding``.

    Examples
    --------
    >>> import numpy as np, onednn_graph as og
    >>> x = np.ones((1, 1, 3), np.float32)          # NCX
    >>> w = np.ones((1, 1, 2), np.float32)          # IOX
    >>> og.conv_transpose(x, w, strides=2, data_format="NCX", weights_format="IOX")
    array([[[1., 1., 1., 1., 1., 1.]]], dtype=float32)
    """
    if slips:
        raise _attrs.unexpected(conv_transpose, slips)
    arrays = (src, weights) if bias is None else (src, weights, bias)
    values = (strides, pads_begin, pads_end, dilations, auto_pad, output_padding, groups,
              data_format, weights_format)
    # NumPy arrays first: the plain call is the hot one, and an ndarray is never quantized.
    if post_ops or quantize is not None or (type(src) is not np.ndarray and isinstance(src, _quant.Quantized)) \
            or (type(weights) is not np.ndarray and isinstance(weights, _quant.Quantized)):
        return _fused_call(_CT, _CT_IN, arrays, out, _CONV_KEYS, values, post_ops, quantize)
    return _call.run(_CT, _CT_IN, arrays, out, _CONV_KEYS, values)


@_attrs.slips_caught
def conv_transpose_backward_data(diff_dst: Any, weights: Any, *, strides: Spatial = 1,
                                 pads_begin: Spatial = 0, pads_end: Spatial = 0,
                                 dilations: Spatial = 1, auto_pad: str = "none",
                                 output_padding: Spatial = 0, groups: int = 1,
                                 data_format: str = "NXC", weights_format: str = "XOI",
                                 out: Optional[OutT] = None,
                                 post_ops: Optional[Sequence[_post.PostOp]] = None,
                                 **slips: Unpack[NoKeywords]) -> Union[np.ndarray, OutT]:
    """Gradient of ConvTranspose with respect to src (ConvTransposeBackwardData).

    Same keywords as :func:`conv_transpose`. The result (diff_src) has the
    spatial size ``floor((Y + pads_begin + pads_end - output_padding - dilations*(K-1) - 1)
    / strides) + 1`` of the diff_dst size Y. ``post_ops`` are applied after it (e.g. an
    activation's mask, ``[post.multiply(mask)]``); oneDNN 3.2 runs them as partitions of
    their own (it fuses nothing after this op).

    Examples
    --------
    >>> import numpy as np, onednn_graph as og
    >>> dy = np.ones((1, 1, 6), np.float32)
    >>> w = np.ones((1, 1, 2), np.float32)
    >>> og.conv_transpose_backward_data(dy, w, strides=2, data_format="NCX", weights_format="IOX")
    array([[[2., 2., 2.]]], dtype=float32)
    """
    if slips:
        raise _attrs.unexpected(conv_transpose_backward_data, slips)
    values = (strides, pads_begin, pads_end, dilations, auto_pad, output_padding, groups,
              data_format, weights_format)
    if post_ops:
        return _fused_call(_CTBD, _CTBD_IN, (diff_dst, weights), out, _CONV_KEYS, values, post_ops)
    return _call.run(_CTBD, _CTBD_IN, (diff_dst, weights), out, _CONV_KEYS, values)


@_attrs.slips_caught
def conv_transpose_backward_weights(src: Any, diff_dst: Any, weights_shape: Any = None, *,
                                    strides: Spatial = 1, pads_begin: Spatial = 0,
                                    pads_end: Spatial = 0, dilations: Spatial = 1,
                                    auto_pad: str = "none", output_padding: Spatial = 0,
                                    groups: int = 1, data_format: str = "NXC",
                                    weights_format: str = "XOI", out: Optional[OutT] = None,
                                    **slips: Unpack[NoKeywords]) -> Union[np.ndarray, OutT]:
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
    if slips:
        raise _attrs.unexpected(conv_transpose_backward_weights, slips)
    return _call.run(_CTBW, _CTBW_IN, (src, diff_dst), out, _CTBW_KEYS,
                     (strides, pads_begin, pads_end, dilations, auto_pad, output_padding, groups,
                      data_format, weights_format, weights_shape))


@_attrs.slips_caught
def convolution_backward_data(diff_dst: Any, weights: Any, dst_shape: Any = None, *,
                              strides: Spatial = 1, pads_begin: Spatial = 0,
                              pads_end: Spatial = 0, dilations: Spatial = 1,
                              auto_pad: str = "none", output_padding: Spatial = 0,
                              groups: int = 1, data_format: str = "NXC",
                              weights_format: str = "XIO", out: Optional[OutT] = None,
                              post_ops: Optional[Sequence[_post.PostOp]] = None,
                              **slips: Unpack[NoKeywords]) -> Union[np.ndarray, OutT]:
    """Gradient of a convolution with respect to its src (ConvolutionBackwardData).

    ``weights`` are the forward convolution's: XIO ``(*K, C_in/groups, C_out)``
    or OIX ``(C_out, C_in/groups, *K)``. ``dst_shape`` is the result's shape
    (the forward convolution's src); when omitted it is inferred where unique,
    else ValueError asks for it. As in oneDNN 3.2, ``output_padding`` does not
    change the result: ``dst_shape`` fixes the geometry. ``post_ops`` as for
    :func:`conv_transpose_backward_data`.

    Examples
    --------
    >>> import numpy as np, onednn_graph as og
    >>> dy = np.ones((1, 1, 3), np.float32)
    >>> w = np.ones((1, 1, 2), np.float32)          # OIX
    >>> og.convolution_backward_data(dy, w, (1, 1, 4), data_format="NCX", weights_format="OIX")
    array([[[1., 2., 2., 1.]]], dtype=float32)
    """
    if slips:
        raise _attrs.unexpected(convolution_backward_data, slips)
    values = (strides, pads_begin, pads_end, dilations, auto_pad, output_padding, groups,
              data_format, weights_format, dst_shape)
    if post_ops:
        return _fused_call(_CBD, _CBD_IN, (diff_dst, weights), out, _CBD_KEYS, values, post_ops)
    return _call.run(_CBD, _CBD_IN, (diff_dst, weights), out, _CBD_KEYS, values)


@_attrs.slips_caught
def conv_transpose_backprop_filters(input_forward: Any, output_delta: Any,
                                    filter_shape: Any = None, *, strides: Spatial = 1,
                                    pads_begin: Spatial = 0, pads_end: Spatial = 0,
                                    dilations: Spatial = 1, auto_pad: str = "none",
                                    output_padding: Spatial = 0, groups: int = 1,
                                    data_format: str = "NXC", filter_format: str = "XIO",
                                    out: Optional[OutT] = None,
                                    **slips: Unpack[NoKeywords]) -> Union[np.ndarray, OutT]:
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
    if slips:
        raise _attrs.unexpected(conv_transpose_backprop_filters, slips)
    return _call.run(_LEGACY, _LEGACY_IN, (input_forward, output_delta), out, _LEGACY_KEYS,
                     (strides, pads_begin, pads_end, dilations, auto_pad, output_padding, groups,
                      data_format, filter_format, filter_shape))


# Each spec op's array arguments and keywords, for ``call_in_order``.
_ORDER = {_CT: (_CT_IN, _CONV_KEYS), _CTBD: (_CTBD_IN, _CONV_KEYS), _CTBW: (_CTBW_IN, _CTBW_KEYS),
          _CBD: (_CBD_IN, _CBD_KEYS)}


def call_in_order(kind: str, arrays: tuple, out: Any, values: tuple) -> Any:
    """`kind`'s plain call (no post-ops) with every keyword given by position, in the
    order of its function's signature (``strides, pads_begin, pads_end, dilations,
    auto_pad, output_padding, groups, data_format, weights_format``, then the shape
    argument): the same checks, cache and result as the function, without parsing
    keywords. ``onednn_graph.torch`` calls it several times per layer call."""
    names, keys = _ORDER[kind]
    return _call.run(kind, names, arrays, out, keys, values)


def __dir__() -> list[str]:
    return list(__all__)
