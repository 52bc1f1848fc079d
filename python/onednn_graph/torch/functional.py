"""PyTorch's transposed convolution and convolution gradients, computed by oneDNN.

``conv_transpose1d/2d/3d`` take exactly ``torch.nn.functional.conv_transposeNd``'s
arguments (each per-axis argument an int or a sequence of 1 or N ints, as PyTorch
broadcasts them), plus what PyTorch lacks for transposed convolutions: ``padding``
as one ``(begin, end)`` pair per axis, ``"same"`` (output ``stride * input``) or
``"valid"`` (``onednn_graph.padding.from_torch``). They are differentiable: the
input's gradient is ConvTransposeBackwardData, the weight's
ConvTransposeBackwardWeights, the bias's a oneDNN reduction, each computed only
when autograd needs it. ``convNd_input`` is ``torch.nn.grad.convNd_input`` on
ConvolutionBackwardData, ``conv_transposeNd_weight`` the weight gradient of
``conv_transposeNd`` on ConvTransposeBackwardWeights.

Every call goes through a registered custom op (``torch.ops.onednn_graph.*``,
``_library``), so ``torch.compile(fullgraph=True)`` and ``torch.export`` see one
node per op.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Union

import torch

from .. import padding as _padding
from ..torch_like import padding_per_axis as _padding_arg, per_axis as _per_axis
from . import _library

__all__ = ["conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
           "conv1d_input", "conv2d_input", "conv3d_input",
           "conv_transpose1d_weight", "conv_transpose2d_weight", "conv_transpose3d_weight"]

IntOrSeq = Union[int, Sequence[int]]
PaddingArg = Union[str, int, Sequence[Any]]


def _check_tensor(fn: str, name: str, value: Any, ndims: Sequence[int]) -> None:
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{fn}: {name} must be a torch.Tensor, got {type(value).__name__}")
    if value.dim() not in ndims:
        raise ValueError(f"{fn}: {name} must be {' or '.join(map(str, ndims))}-D, got shape "
                         f"{tuple(value.shape)}")


def _conv_transpose_nd(nsp: int, input: Any, weight: Any, bias: Any, stride: IntOrSeq,
                       padding: PaddingArg, output_padding: IntOrSeq, groups: int,
                       dilation: IntOrSeq) -> torch.Tensor:
    fn = f"conv_transpose{nsp}d"
    _check_tensor(fn, "input", input, (nsp + 1, nsp + 2))
    _check_tensor(fn, "weight", weight, (nsp + 2,))
    if bias is not None:
        _check_tensor(fn, "bias", bias, (1,))
    if not isinstance(groups, int) or isinstance(groups, bool) or groups < 1:
        raise ValueError(f"{fn}: groups must be an int >= 1, got {groups!r}")
    strides = _per_axis(fn, "stride", stride, nsp, 1)
    dilations = _per_axis(fn, "dilation", dilation, nsp, 1)
    extra = _per_axis(fn, "output_padding", output_padding, nsp, 0)
    unbatched = input.dim() == nsp + 1
    x = input.unsqueeze(0) if unbatched else input
    if x.shape[1] != weight.shape[0]:
        raise ValueError(f"{fn}: weight {tuple(weight.shape)} expects {weight.shape[0]} input "
                         f"channels (its first axis), input {tuple(input.shape)} has {x.shape[1]}")
    if weight.shape[0] % groups:
        raise ValueError(f"{fn}: the input channels ({weight.shape[0]}) must be divisible by "
                         f"groups ({groups})")
    if bias is not None and bias.shape[0] != weight.shape[1] * groups:
        raise ValueError(f"{fn}: bias must have {weight.shape[1] * groups} elements (the output "
                         f"channels), got {bias.shape[0]}")
    try:
        pads = _padding.from_torch(_padding_arg(padding, nsp), extra,
                                   kernel=tuple(int(k) for k in weight.shape[2:]),
                                   strides=strides, dilations=dilations)
    except ValueError as exc:
        raise ValueError(f"{fn}: {exc}") from None
    y = _library.conv_transpose(x, weight, bias, strides, list(pads.pads_begin), list(pads.pads_end),
                                list(pads.output_padding), dilations, groups)
    return y.squeeze(0) if unbatched else y


def conv_transpose1d(input: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None,
                     stride: IntOrSeq = 1, padding: PaddingArg = 0, output_padding: IntOrSeq = 0,
                     groups: int = 1, dilation: IntOrSeq = 1) -> torch.Tensor:
    """``torch.nn.functional.conv_transpose1d`` on oneDNN: input ``(N, C_in, L)`` or
    ``(C_in, L)``, weight ``(C_in, C_out/groups, K)``, bias ``(C_out,)``; ``padding`` may
    also be ``[(begin, end)]``, ``"same"`` or ``"valid"``.

    Examples
    --------
    >>> import torch
    >>> from onednn_graph.torch import conv_transpose1d
    >>> x = torch.arange(3.0).reshape(1, 1, 3)
    >>> conv_transpose1d(x, torch.ones(1, 1, 2), stride=2)
    tensor([[[0., 0., 1., 1., 2., 2.]]])
    """
    return _conv_transpose_nd(1, input, weight, bias, stride, padding, output_padding, groups,
                              dilation)


def conv_transpose2d(input: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None,
                     stride: IntOrSeq = 1, padding: PaddingArg = 0, output_padding: IntOrSeq = 0,
                     groups: int = 1, dilation: IntOrSeq = 1) -> torch.Tensor:
    """``torch.nn.functional.conv_transpose2d`` on oneDNN (see :func:`conv_transpose1d`).
    A channels-last input or weight gives a channels-last result (PyTorch's rule), read
    and written in place."""
    return _conv_transpose_nd(2, input, weight, bias, stride, padding, output_padding, groups,
                              dilation)


def conv_transpose3d(input: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None,
                     stride: IntOrSeq = 1, padding: PaddingArg = 0, output_padding: IntOrSeq = 0,
                     groups: int = 1, dilation: IntOrSeq = 1) -> torch.Tensor:
    """``torch.nn.functional.conv_transpose3d`` on oneDNN (see :func:`conv_transpose1d`)."""
    return _conv_transpose_nd(3, input, weight, bias, stride, padding, output_padding, groups,
                              dilation)


def _conv_input(nsp: int, input_size: Sequence[int], weight: torch.Tensor, grad_output: torch.Tensor,
                stride: IntOrSeq, padding: IntOrSeq, dilation: IntOrSeq, groups: int) -> torch.Tensor:
    fn = f"conv{nsp}d_input"
    _check_tensor(fn, "weight", weight, (nsp + 2,))
    _check_tensor(fn, "grad_output", grad_output, (nsp + 2,))
    size = [int(v) for v in input_size]
    if len(size) != nsp + 2:
        raise ValueError(f"{fn}: input_size must have {nsp + 2} entries (N, C_in, *X), got {size}")
    pads = _per_axis(fn, "padding", padding, nsp, 0)
    return _library.convolution_backward_data(
        grad_output, weight, size, _per_axis(fn, "stride", stride, nsp, 1), pads, pads,
        _per_axis(fn, "dilation", dilation, nsp, 1), groups)


def conv1d_input(input_size: Sequence[int], weight: torch.Tensor, grad_output: torch.Tensor,
                 stride: IntOrSeq = 1, padding: IntOrSeq = 0, dilation: IntOrSeq = 1,
                 groups: int = 1) -> torch.Tensor:
    """``torch.nn.grad.conv1d_input`` on oneDNN's ConvolutionBackwardData: the gradient of
    ``conv1d(input, weight)`` with respect to its input of `input_size`, weight
    ``(C_out, C_in/groups, K)``."""
    return _conv_input(1, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv2d_input(input_size: Sequence[int], weight: torch.Tensor, grad_output: torch.Tensor,
                 stride: IntOrSeq = 1, padding: IntOrSeq = 0, dilation: IntOrSeq = 1,
                 groups: int = 1) -> torch.Tensor:
    """``torch.nn.grad.conv2d_input`` on oneDNN (see :func:`conv1d_input`)."""
    return _conv_input(2, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv3d_input(input_size: Sequence[int], weight: torch.Tensor, grad_output: torch.Tensor,
                 stride: IntOrSeq = 1, padding: IntOrSeq = 0, dilation: IntOrSeq = 1,
                 groups: int = 1) -> torch.Tensor:
    """``torch.nn.grad.conv3d_input`` on oneDNN (see :func:`conv1d_input`)."""
    return _conv_input(3, input_size, weight, grad_output, stride, padding, dilation, groups)


def _conv_transpose_weight(nsp: int, input: torch.Tensor, weight_size: Sequence[int],
                           grad_output: torch.Tensor, stride: IntOrSeq, padding: PaddingArg,
                           output_padding: IntOrSeq, groups: int, dilation: IntOrSeq) -> torch.Tensor:
    fn = f"conv_transpose{nsp}d_weight"
    _check_tensor(fn, "input", input, (nsp + 2,))
    _check_tensor(fn, "grad_output", grad_output, (nsp + 2,))
    size = [int(v) for v in weight_size]
    if len(size) != nsp + 2:
        raise ValueError(f"{fn}: weight_size must have {nsp + 2} entries (C_in, C_out/groups, *K), "
                         f"got {size}")
    strides = _per_axis(fn, "stride", stride, nsp, 1)
    dilations = _per_axis(fn, "dilation", dilation, nsp, 1)
    pads = _padding.from_torch(_padding_arg(padding, nsp),
                               _per_axis(fn, "output_padding", output_padding, nsp, 0),
                               kernel=tuple(size[2:]), strides=strides, dilations=dilations)
    return _library.conv_transpose_backward_weights(
        input, grad_output, size, strides, list(pads.pads_begin), list(pads.pads_end),
        list(pads.output_padding), dilations, groups)


def conv_transpose1d_weight(input: torch.Tensor, weight_size: Sequence[int], grad_output: torch.Tensor,
                            stride: IntOrSeq = 1, padding: PaddingArg = 0,
                            output_padding: IntOrSeq = 0, groups: int = 1,
                            dilation: IntOrSeq = 1) -> torch.Tensor:
    """The gradient of ``conv_transpose1d(input, weight, ...)`` with respect to its weight of
    `weight_size` ``(C_in, C_out/groups, K)``, on oneDNN's ConvTransposeBackwardWeights."""
    return _conv_transpose_weight(1, input, weight_size, grad_output, stride, padding,
                                  output_padding, groups, dilation)


def conv_transpose2d_weight(input: torch.Tensor, weight_size: Sequence[int], grad_output: torch.Tensor,
                            stride: IntOrSeq = 1, padding: PaddingArg = 0,
                            output_padding: IntOrSeq = 0, groups: int = 1,
                            dilation: IntOrSeq = 1) -> torch.Tensor:
    """As :func:`conv_transpose1d_weight`, in 2-D."""
    return _conv_transpose_weight(2, input, weight_size, grad_output, stride, padding,
                                  output_padding, groups, dilation)


def conv_transpose3d_weight(input: torch.Tensor, weight_size: Sequence[int], grad_output: torch.Tensor,
                            stride: IntOrSeq = 1, padding: PaddingArg = 0,
                            output_padding: IntOrSeq = 0, groups: int = 1,
                            dilation: IntOrSeq = 1) -> torch.Tensor:
    """As :func:`conv_transpose1d_weight`, in 3-D."""
    return _conv_transpose_weight(3, input, weight_size, grad_output, stride, padding,
                                  output_padding, groups, dilation)


def __dir__() -> list[str]:
    return list(__all__)
