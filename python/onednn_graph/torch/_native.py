"""The ops on CPU torch tensors, computed by oneDNN through the functional API.

Each function takes PyTorch's layouts (data ``(N, C, *X)``, oneDNN's NCX whatever
the memory format: channels-last tensors are NCX with NXC strides, which oneDNN
reads in place; ConvTranspose weights ``(C_in, C_out/groups, *K)``, IOX;
convolution weights ``(C_out, C_in/groups, *K)``, OIX) and oneDNN's attributes
(explicit ``pads_begin``/``pads_end``), allocates the result as a torch tensor in
the memory format PyTorch's CPU convolutions would pick (``memory_format``), and
has oneDNN write it. The tensors reach oneDNN as NumPy views of their memory (no
copy; bf16 through int16, whose items have the same size), by the functional API's
positional entry (``ops.call_in_order``): a repeated call is found and run by the one
call cache in one native call, a new one is checked, planned and compiled there.
Where there is nothing to sum (an empty batch), oneDNN is not called: the result is
empty, or zeros (plus the bias), as the geometry fixes it.

These are the registered custom ops' implementations (``_library``) and what the
layers' eager path runs (``_eager``); nothing here traces or dispatches.
"""

from typing import Any, List, Optional, Sequence

import ml_dtypes
import numpy as np
import torch
from torch import _prims_common  # suggest_memory_format: Tensor.suggest_memory_format's rule

from .. import _core, ops as _ops, shapes
from .._impl import arrays as _arrays, call as _call, compiled as _compiled, registry as _registry
from ._channel_sum import channel_sum

__all__ = ["memory_format", "conv_transpose_shape", "conv_transpose",
           "conv_transpose_backward_data", "conv_transpose_backward_weights",
           "convolution_backward_data", "bias_grad"]

_CT, _CTBD, _CTBW, _CBD = (_registry.CONV_TRANSPOSE, _registry.CONV_TRANSPOSE_BWD_DATA,
                           _registry.CONV_TRANSPOSE_BWD_WEIGHTS, _registry.CONV_BWD_DATA)


def memory_format(*tensors: torch.Tensor) -> torch.memory_format:
    """The memory format of a result computed from `tensors` (data, then weights): channels-
    last when any of them has channels-last strides, as PyTorch's CPU convolutions decide
    (ATen's ``mkldnn_conv_use_channels_last``: the input's or the weight's suggested
    format). The strides decide, not ``is_contiguous``: a one-channel channels-last tensor
    is contiguous too, and still channels-last to PyTorch."""
    for t in tensors:
        fmt = _suggested_format(t)
        if fmt != torch.contiguous_format:
            return fmt
    return torch.contiguous_format


_CHANNELS_LAST = {4: torch.channels_last, 5: torch.channels_last_3d}
_PLAIN = (torch.Tensor, torch.nn.Parameter)  # not subclasses: they may trace or dispatch


def _suggested_format(t: torch.Tensor) -> torch.memory_format:
    """``t.suggest_memory_format()``. Where exactly one of the two formats' contiguity
    holds it decides (two C++ checks); where both or neither do (one channel, unit
    spatial axes, gaps) the strides do, by torch's rule (6 us a call, a few per layer)."""
    channels_last = _CHANNELS_LAST.get(t.dim())
    if channels_last is None:
        return torch.contiguous_format
    # A plain tensor holds no symbolic size (asked first: _symbolic reads every size and
    # stride); symbolic sizes (torch.compile) take torch's rule, which adds no guards.
    if type(t) in _PLAIN or not _symbolic(t):
        contiguous, last = t.is_contiguous(), t.is_contiguous(memory_format=channels_last)
        if contiguous != last:
            return channels_last if last else torch.contiguous_format
    return _prims_common.suggest_memory_format(t)


def _symbolic(t: torch.Tensor) -> bool:
    """Whether `t` has symbolic sizes or strides (torch.compile with dynamic shapes)."""
    return any(isinstance(v, torch.SymInt) for v in (*t.shape, *t.stride()))


def conv_transpose_shape(input: torch.Tensor, weight: torch.Tensor, stride: Sequence[int],
                         pads_begin: Sequence[int], pads_end: Sequence[int],
                         output_padding: Sequence[int], dilation: Sequence[int],
                         groups: int) -> list:
    """ConvTranspose's output shape (N, C_out, *X) for (N, C_in, *X) data and IOX weights."""
    # shapes' rule is plain arithmetic: it takes torch.compile's symbolic sizes too
    spatial = [shapes.conv_transpose_out_size(x, k, s, d, pb, pe, op) for x, k, s, d, pb, pe, op in zip(
        input.shape[2:], weight.shape[2:], stride, dilation, pads_begin, pads_end, output_padding)]
    return [input.shape[0], weight.shape[1] * groups, *spatial]


def empty(shape: Sequence[Any], like: torch.Tensor, *follows: torch.Tensor) -> torch.Tensor:
    """A new result of `shape` with `like`'s dtype and device, in the memory format
    PyTorch would give a convolution of `follows` (none: contiguous): what the fake
    implementations return. On the meta device PyTorch's convolutions return contiguous
    results whatever the strides (measured on PyTorch 2.13; a fake CPU tensor follows the
    CPU's rule), and so does this."""
    fmt = torch.contiguous_format if like.device.type == "meta" else memory_format(*follows)
    return torch.empty(shape, dtype=like.dtype, device=like.device, memory_format=fmt)


def view(t: torch.Tensor) -> np.ndarray:
    """A NumPy array over the memory of `t`, a CPU tensor: no copy (torch copies only a
    tensor with a lazy negation bit, which oneDNN then reads instead), whether or not it
    requires grad."""
    if t.dtype == torch.bfloat16:  # NumPy has no bf16: the same 2-byte items, reinterpreted
        return t.view(torch.int16).numpy(force=True).view(ml_dtypes.bfloat16)
    return t.numpy(force=True)


def result(shape: Sequence[Any], dtype: torch.dtype,
           fmt: torch.memory_format) -> tuple[torch.Tensor, np.ndarray]:
    """A new CPU result and the NumPy view oneDNN writes it through."""
    return result_strided(shape, dense_strides(shape, fmt), dtype)


def run(kind: str, arrays: tuple, target: np.ndarray, values: tuple) -> None:
    """The functional API's call of `kind` on views, `values` its keywords in order."""
    _ops.call_in_order(kind, arrays, target, values)


def runner(kind: str, arrays: tuple, target: np.ndarray, values: tuple) -> tuple[Any, Optional[str]]:
    """``run``, then (the native call that ran it from the one call cache, a
    ``DirectCall``, for a caller that runs the same arrays' layouts again; how oneDNN
    computed it, ``Operation.lowering``, for ``report``): None where the call has none
    (one the package crops, permutes or copies for)."""
    run(kind, arrays, target, values)
    key = _core.call_signature(kind, arrays, target, _call.signature_values(values))
    prepared = _compiled.CACHE.lookup(key) if key is not None else None
    return getattr(prepared, "direct", None), getattr(getattr(prepared, "op", None), "lowering", None)


def dense_strides(shape: Sequence[int], fmt: torch.memory_format) -> tuple:
    """The strides of a dense tensor of `shape` in memory format `fmt`."""
    order = list(range(len(shape)))  # outermost first
    if fmt != torch.contiguous_format:
        order = [0, *range(2, len(shape)), 1]  # channels last
    strides, step = [0] * len(shape), 1
    for axis in reversed(order):
        strides[axis] = step
        step *= max(int(shape[axis]), 1)
    return tuple(strides)


def result_strided(shape: Sequence[Any], strides: Sequence[int],
                   dtype: torch.dtype) -> tuple[torch.Tensor, np.ndarray]:
    """``result`` for a caller that knows the result's strides (``dense_strides``)."""
    out = torch.empty_strided(shape, strides, dtype=dtype)
    return out, view(out)


_TO_NXC = {4: (0, 2, 3, 1), 5: (0, 2, 3, 4, 1)}


def nxc_axes(fmt: torch.memory_format, ndim: int) -> Optional[tuple]:
    """The axes that show data tensors of memory format `fmt` as oneDNN's NXC (channels
    last in memory: dense NXC views), or None for NCX. The package's measured rules for
    channels-last data are written for NXC (``_impl.lowering``: on a Zen 4 an NXC
    ConvTransposeBackwardData runs as the forward Convolution, 0.5-0.7x the time of the
    same memory described as NCX)."""
    return None if fmt == torch.contiguous_format else _TO_NXC.get(ndim)


def oriented(array: np.ndarray, axes: Optional[tuple]) -> np.ndarray:
    """A data tensor's view as the call describes it (``nxc_axes``)."""
    return array if axes is None else array.transpose(axes)


def with_format(values: tuple, axes: Optional[tuple]) -> tuple:
    """Keyword values in order (``ops.call_in_order``) with data_format (the 8th) for
    `axes` (a data shape argument is the caller's to reorder)."""
    return values if axes is None else values[:7] + ("NXC",) + values[8:]


def _has_no_elements(*tensors: torch.Tensor) -> bool:
    """Whether an op's sums run over nothing (an empty batch, say): oneDNN takes no
    zero-size dimension, and the result is then the geometry's alone: empty, or zeros."""
    return any(t.numel() == 0 for t in tensors)


def _zeros_plus_bias(out: torch.Tensor, bias: Optional[torch.Tensor] = None) -> torch.Tensor:
    """`out` as a sum over nothing: zeros, plus the bias along axis 1 where there is one."""
    out.zero_()
    if bias is not None and out.numel():
        out += bias.reshape([1, -1] + [1] * (out.dim() - 2))
    return out


def conv_transpose(input: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor],
                   stride: List[int], pads_begin: List[int], pads_end: List[int],
                   output_padding: List[int], dilation: List[int], groups: int,
                   out_shape: Optional[Sequence[int]] = None) -> torch.Tensor:
    """ConvTranspose (IOX weights), optionally with bias; `out_shape` where the caller
    knows it (``conv_transpose_shape``)."""
    if out_shape is None:
        out_shape = conv_transpose_shape(input, weight, stride, pads_begin, pads_end,
                                         output_padding, dilation, groups)
    fmt = memory_format(input, weight)
    out, target = result(out_shape, input.dtype, fmt)
    if _has_no_elements(input, weight):
        return _zeros_plus_bias(out, bias)
    axes = nxc_axes(fmt, input.dim())
    x, w = oriented(view(input), axes), view(weight)
    run(_CT, (x, w) if bias is None else (x, w, view(bias)), oriented(target, axes),
        with_format((stride, pads_begin, pads_end, dilation, "none", output_padding, groups, "NCX",
                     "IOX"), axes))
    return out


def conv_transpose_backward_data(grad_output: torch.Tensor, weight: torch.Tensor,
                                 input_size: Sequence[int], stride: List[int],
                                 pads_begin: List[int], pads_end: List[int],
                                 output_padding: List[int], dilation: List[int],
                                 groups: int) -> torch.Tensor:
    """ConvTransposeBackwardData: the gradient of ``conv_transpose`` with respect to its input."""
    fmt = memory_format(grad_output, weight)
    out, target = result(input_size, grad_output.dtype, fmt)
    if _has_no_elements(grad_output, weight):
        return _zeros_plus_bias(out)
    axes = nxc_axes(fmt, grad_output.dim())
    run(_CTBD, (oriented(view(grad_output), axes), view(weight)), oriented(target, axes),
        with_format((stride, pads_begin, pads_end, dilation, "none", output_padding, groups, "NCX",
                     "IOX"), axes))
    return out


def conv_transpose_backward_weights(input: torch.Tensor, grad_output: torch.Tensor,
                                    weight_size: Sequence[int], stride: List[int],
                                    pads_begin: List[int], pads_end: List[int],
                                    output_padding: List[int], dilation: List[int],
                                    groups: int) -> torch.Tensor:
    """ConvTransposeBackwardWeights: the gradient of ``conv_transpose`` with respect to its
    (IOX) weights, of `weight_size` (contiguous, as PyTorch's)."""
    out, target = result(weight_size, input.dtype, torch.contiguous_format)
    if _has_no_elements(input, grad_output):
        return _zeros_plus_bias(out)
    # channels last where both data tensors are (each its own NXC view)
    axes = nxc_axes(memory_format(input), input.dim())
    if axes is not None and memory_format(grad_output) == torch.contiguous_format:
        axes = None
    run(_CTBW, (oriented(view(input), axes), oriented(view(grad_output), axes)), target,
        with_format((stride, pads_begin, pads_end, dilation, "none", output_padding, groups, "NCX",
                     "IOX", tuple(weight_size)), axes))
    return out


def convolution_backward_data(grad_output: torch.Tensor, weight: torch.Tensor,
                              input_size: Sequence[int], stride: List[int],
                              pads_begin: List[int], pads_end: List[int], dilation: List[int],
                              groups: int) -> torch.Tensor:
    """ConvolutionBackwardData: the gradient of a convolution (OIX weights) with respect to
    its input, of `input_size`."""
    fmt = memory_format(grad_output, weight)
    out, target = result(input_size, grad_output.dtype, fmt)
    if _has_no_elements(grad_output, weight):
        return _zeros_plus_bias(out)
    axes = nxc_axes(fmt, grad_output.dim())
    run(_CBD, (oriented(view(grad_output), axes), view(weight)), oriented(target, axes),
        with_format((stride, pads_begin, pads_end, dilation, "none", 0, groups, "NCX", "OIX",
                     tuple(input_size[a] for a in axes) if axes else tuple(input_size)), axes))
    return out


def bias_grad(grad_output: torch.Tensor) -> torch.Tensor:
    """The gradient of a bias added along axis 1: the sum of `grad_output` over the other axes."""
    out, target = result((grad_output.shape[1],), grad_output.dtype, torch.contiguous_format)
    channel_sum("grad_output", view(grad_output), target)
    return out


def __dir__() -> list[str]:
    return list(__all__)
