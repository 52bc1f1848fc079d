"""PyTorch's ``conv_transpose1d/2d/3d`` with its exact semantics, computed by oneDNN.

Same arguments, defaults and layouts as ``torch.nn.functional.conv_transpose*d``:
``input`` is ``(N, C_in, *X)`` (or unbatched ``(C_in, *X)``), ``weight`` is
``(C_in, C_out/groups, *K)`` (oneDNN's ``IOX``), ``bias`` is ``(C_out,)``.
``output_size`` is ``torch.nn.ConvTranspose*d.forward``'s form: the wanted
spatial (or full) output size, from which ``output_padding`` is derived.

Beyond PyTorch (which has neither for transposed convolutions): ``padding``
may be one ``(begin, end)`` pair per axis, or ``"same"`` (output
``stride * input``) / ``"valid"``; see :func:`onednn_graph.padding.from_torch`.

Inputs may be NumPy arrays or CPU torch tensors (read in place, see
``onednn_graph._arrays``); the result is a NumPy array, or the caller's ``out``.
"""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING, Any, Optional, Sequence, TypeVar, Union

import numpy as np

from . import ops, padding as _padding
from ._impl import arrays as _arrays, attrs as _attrs

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ._impl.attrs import NoKeywords

__all__ = ["conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]

IntOrSeq = Union[int, Sequence[int]]
PaddingArg = Union[str, int, Sequence[Union[int, Sequence[int]]]]
OutT = TypeVar("OutT")


def per_axis(fn: str, name: str, value: Any, nsp: int, least: int) -> list[int]:
    """An int or a sequence of 1 or `nsp` ints, one per spatial axis, as PyTorch's
    ``_single``/``_pair``/``_triple`` broadcast them; each must be >= `least`."""
    seq = list(value) if isinstance(value, (tuple, list)) else [value]
    if any(isinstance(v, bool) or not isinstance(v, numbers.Integral) for v in seq):
        raise TypeError(f"{fn}: {name} must be an int or a sequence of ints, got {value!r}")
    if len(seq) not in (1, nsp):
        raise ValueError(f"{fn}: {name} must be an int or a sequence of 1 or {nsp} ints, got {value!r}")
    values = [int(v) for v in seq] * (nsp if len(seq) == 1 else 1)
    if any(v < least for v in values):
        raise ValueError(f"{fn}: {name} must be >= {least} on every axis, got {values}")
    return values


def padding_per_axis(padding: Any, nsp: int) -> Any:
    """PyTorch's padding with a 1-sequence broadcast to `nsp` axes; ints, strings and
    (begin, end) pairs as given (``padding.from_torch`` reads them)."""
    if isinstance(padding, str):
        return padding
    if isinstance(padding, (tuple, list)) and len(padding) == 1 and isinstance(padding[0], int):
        return list(padding) * nsp
    return padding


def _output_padding_for(output_size: Sequence[int], pads: _padding.Pads, in_spatial: Sequence[int],
                        kernel: Sequence[int], strides: Sequence[int],
                        dilations: Sequence[int]) -> tuple[int, ...]:
    """``torch.nn.modules.conv._ConvTransposeNd._output_padding``: the output_padding
    giving `output_size`, which must lie in [smallest, smallest + stride - 1]."""
    nsp = len(kernel)
    size = list(output_size)
    if len(size) == nsp + 2:
        size = size[2:]
    if len(size) != nsp:
        raise ValueError(f"output_size must have {nsp} or {nsp + 2} entries, "
                         f"got {list(output_size)}")
    smallest = _padding.Pads(pads.pads_begin, pads.pads_end, (0,) * nsp).output_shape(
        in_spatial, kernel, strides, dilations)
    for i, (want, lo, s) in enumerate(zip(size, smallest, strides)):
        if not lo <= want <= lo + s - 1:
            raise ValueError(f"output_size[{i}] = {want} is not in [{lo}, {lo + s - 1}], the sizes "
                             "this input, kernel, stride and padding can give")
    return tuple(want - lo for want, lo in zip(size, smallest))


def _conv_transpose_nd(nsp: int, input: Any, weight: Any, bias: Any, stride: IntOrSeq,
                       padding: PaddingArg, output_padding: IntOrSeq, groups: int,
                       dilation: IntOrSeq, output_size: Optional[Sequence[int]], out: Any) -> Any:
    name = f"conv_transpose{nsp}d"
    x = _arrays.to_numpy("input", input)
    w = _arrays.to_numpy("weight", weight)
    if w.ndim != nsp + 2:
        raise ValueError(f"{name}: weight must be {nsp + 2}-d (C_in, C_out/groups, *K), "
                         f"got shape {w.shape}")
    if x.ndim not in (nsp + 1, nsp + 2):
        raise ValueError(f"{name}: input must be {nsp + 1}-d (unbatched) or {nsp + 2}-d, "
                         f"got shape {x.shape}")
    unbatched = x.ndim == nsp + 1
    kernel = w.shape[2:]
    geom = _attrs.normalize("ConvTranspose", nsp, strides=per_axis(name, "stride", stride, nsp, 1),
                            dilations=per_axis(name, "dilation", dilation, nsp, 1),
                            output_padding=per_axis(name, "output_padding", output_padding, nsp, 0))
    strides, dilations = geom.strides, geom.dilations
    padding = padding_per_axis(padding, nsp)
    if output_size is not None and (isinstance(padding, str) or any(geom.output_padding)):
        raise ValueError(f"{name}: output_size replaces output_padding; it cannot be combined "
                         "with output_padding or a string padding")
    pads = _padding.from_torch(padding, geom.output_padding, kernel=kernel, strides=strides,
                               dilations=dilations)
    in_spatial = x.shape[-nsp:]
    if output_size is not None:
        pads = pads._replace(output_padding=_output_padding_for(
            output_size, pads, in_spatial, kernel, strides, dilations))
    target = out
    if unbatched:
        x = x[None]
        if out is not None:
            _arrays.check_no_grad("out", out)
            target = _arrays.to_numpy("out", out)[None]
    result = ops.conv_transpose(x, w, bias, strides=strides, dilations=dilations, groups=groups,
                                data_format="NCX", weights_format="IOX", out=target,
                                **pads.attrs())
    if out is not None:
        return out
    return result[0] if unbatched else result


@_attrs.slips_caught
def conv_transpose1d(input: Any, weight: Any, bias: Any = None, stride: IntOrSeq = 1,
                     padding: PaddingArg = 0, output_padding: IntOrSeq = 0, groups: int = 1,
                     dilation: IntOrSeq = 1, *, output_size: Optional[Sequence[int]] = None,
                     out: Optional[OutT] = None,
                     **slips: Unpack[NoKeywords]) -> Union[np.ndarray, OutT]:
    """``torch.nn.functional.conv_transpose1d`` on oneDNN.

    Parameters
    ----------
    input : array, shape (N, C_in, L) or (C_in, L)
    weight : array, shape (C_in, C_out/groups, K)
    bias : array of shape (C_out,), optional
    stride, output_padding, dilation : int or 1-sequence
    padding : int, 1-sequence, [(begin, end)], "same" or "valid"
    groups : int
    output_size : sequence of int, optional
        The wanted output length (``ConvTranspose1d.forward``'s form).
    out : array or torch tensor, optional
        Written in place and returned.

    Returns
    -------
    ndarray (or `out`) of shape (N, C_out, L_out)
        ``L_out = (L-1)*stride - pad_begin - pad_end + dilation*(K-1) + output_padding + 1``.

    Examples
    --------
    >>> import numpy as np
    >>> from onednn_graph import torch_like
    >>> x = np.arange(3, dtype=np.float32).reshape(1, 1, 3)
    >>> w = np.ones((1, 1, 2), np.float32)
    >>> torch_like.conv_transpose1d(x, w, stride=2)
    array([[[0., 0., 1., 1., 2., 2.]]], dtype=float32)
    >>> torch_like.conv_transpose1d(x, w, stride=2, padding=[(1, 0)])   # asymmetric
    array([[[0., 1., 1., 2., 2.]]], dtype=float32)
    """
    if slips:
        raise _attrs.unexpected(conv_transpose1d, slips, torch=True)
    return _conv_transpose_nd(1, input, weight, bias, stride, padding, output_padding, groups,
                              dilation, output_size, out)


@_attrs.slips_caught
def conv_transpose2d(input: Any, weight: Any, bias: Any = None, stride: IntOrSeq = 1,
                     padding: PaddingArg = 0, output_padding: IntOrSeq = 0, groups: int = 1,
                     dilation: IntOrSeq = 1, *, output_size: Optional[Sequence[int]] = None,
                     out: Optional[OutT] = None,
                     **slips: Unpack[NoKeywords]) -> Union[np.ndarray, OutT]:
    """``torch.nn.functional.conv_transpose2d`` on oneDNN.

    As :func:`conv_transpose1d`, with ``input`` (N, C_in, H, W), ``weight``
    (C_in, C_out/groups, kH, kW) and per-axis values as 2-sequences.

    Examples
    --------
    >>> import numpy as np
    >>> from onednn_graph import torch_like
    >>> x = np.ones((1, 2, 3, 3), np.float32)
    >>> w = np.ones((2, 4, 3, 3), np.float32)
    >>> torch_like.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1).shape
    (1, 4, 6, 6)
    >>> torch_like.conv_transpose2d(x, w, stride=2, padding="same").shape
    (1, 4, 6, 6)
    >>> torch_like.conv_transpose2d(x, w, stride=2, padding=1, output_size=(5, 6)).shape
    (1, 4, 5, 6)
    """
    if slips:
        raise _attrs.unexpected(conv_transpose2d, slips, torch=True)
    return _conv_transpose_nd(2, input, weight, bias, stride, padding, output_padding, groups,
                              dilation, output_size, out)


@_attrs.slips_caught
def conv_transpose3d(input: Any, weight: Any, bias: Any = None, stride: IntOrSeq = 1,
                     padding: PaddingArg = 0, output_padding: IntOrSeq = 0, groups: int = 1,
                     dilation: IntOrSeq = 1, *, output_size: Optional[Sequence[int]] = None,
                     out: Optional[OutT] = None,
                     **slips: Unpack[NoKeywords]) -> Union[np.ndarray, OutT]:
    """``torch.nn.functional.conv_transpose3d`` on oneDNN.

    As :func:`conv_transpose1d`, with ``input`` (N, C_in, D, H, W), ``weight``
    (C_in, C_out/groups, kD, kH, kW) and per-axis values as 3-sequences.

    Examples
    --------
    >>> import numpy as np
    >>> from onednn_graph import torch_like
    >>> x = np.ones((1, 4, 2, 2, 2), np.float32)
    >>> w = np.ones((4, 1, 2, 2, 2), np.float32)
    >>> torch_like.conv_transpose3d(x, w, groups=2).shape   # C_out = 1 * groups
    (1, 2, 3, 3, 3)
    """
    if slips:
        raise _attrs.unexpected(conv_transpose3d, slips, torch=True)
    return _conv_transpose_nd(3, input, weight, bias, stride, padding, output_padding, groups,
                              dilation, output_size, out)


def __dir__() -> list[str]:
    return list(__all__)
