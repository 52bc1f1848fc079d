"""The package's ops registered with PyTorch as ``torch.ops.onednn_graph.*``.

Each is a ``torch.library.custom_op`` whose implementation is the functional API on
the caller's tensors (read in place; the result is a torch tensor of its own,
written by oneDNN through ``out=``, on the same cached native call path, without
the GIL), with a fake implementation (shapes only, for ``torch.compile`` and
``torch.export``) and an autograd formula made of the same ops, so that
gradients, and their gradients, are computed by oneDNN too. Under CPU autocast
``conv_transpose`` runs in the region's dtype, as ``torch.nn``'s conv_transpose does.
Where nothing traces a call (eager mode, plain tensors), the layers' forward and a
backward without ``create_graph`` call the same functions and formulas without the
custom-op layers, which cost more per call than a small layer's oneDNN work.

Tensors are in PyTorch's layouts: data ``(N, C, *X)`` (oneDNN's NCX, whatever the
memory format: channels-last tensors are NCX with NXC strides, which oneDNN reads
in place), ConvTranspose weights ``(C_in, C_out/groups, *K)`` (IOX), convolution
weights ``(C_out, C_in/groups, *K)`` (OIX). A result is channels-last when its data
tensor or its weights are, as PyTorch's CPU convolutions decide (``memory_format``).
Where there is nothing to sum (an empty batch), oneDNN is not called: the result is
empty, or zeros (plus the bias), as the geometry fixes it.

Attributes are oneDNN's: explicit ``pads_begin``/``pads_end`` per axis (PyTorch's
``padding`` and "same" are converted by ``onednn_graph.torch.functional``).

(No ``from __future__ import annotations`` here: ``custom_op`` reads the schema
from the annotations.)
"""

from typing import Any, Callable, List, Optional

import torch
from torch import _prims_common  # suggest_memory_format: Tensor.suggest_memory_format's rule

from .. import ops as _ops, shapes
from .._impl import arrays as _arrays
from ._channel_sum import channel_sum

_NCX = dict(data_format="NCX")


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


def _attrs(stride: List[int], pads_begin: List[int], pads_end: List[int], dilation: List[int],
           groups: int, **extra: object) -> dict:
    return dict(strides=list(stride), pads_begin=list(pads_begin), pads_end=list(pads_end),
                dilations=list(dilation), groups=groups, **_NCX, **extra)


def conv_transpose_shape(input: torch.Tensor, weight: torch.Tensor, stride: List[int],
                          pads_begin: List[int], pads_end: List[int], output_padding: List[int],
                          dilation: List[int], groups: int) -> list:
    """ConvTranspose's output shape (N, C_out, *X) for (N, C_in, *X) data and IOX weights."""
    # shapes' rule is plain arithmetic: it takes torch.compile's symbolic sizes too
    spatial = [shapes.conv_transpose_out_size(x, k, s, d, pb, pe, op) for x, k, s, d, pb, pe, op in zip(
        input.shape[2:], weight.shape[2:], stride, dilation, pads_begin, pads_end, output_padding)]
    return [input.shape[0], weight.shape[1] * groups, *spatial]


def _empty(shape: list, like: torch.Tensor, *follows: torch.Tensor) -> torch.Tensor:
    return torch.empty(shape, dtype=like.dtype, device=like.device,
                       memory_format=memory_format(*follows))


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


# --- the ops -------------------------------------------------------------------------

_IMPLEMENTATIONS: dict = {}  # each custom op -> the function it registers


def _custom_op(name: str) -> Callable[[Callable[..., torch.Tensor]], Any]:
    """``torch.library.custom_op("onednn_graph::<name>")``, its function kept for
    ``_call``."""
    def register(fn: Callable[..., torch.Tensor]) -> Any:
        op = torch.library.custom_op(f"onednn_graph::{name}", mutates_args=())(fn)
        _IMPLEMENTATIONS[op] = fn
        return op
    return register


_PLAIN = (torch.Tensor, torch.nn.Parameter)  # not subclasses: they may trace or dispatch


def _untraced(args: tuple) -> bool:
    """Whether nothing traces or transforms a call with `args` (``torch.compile``,
    ``torch.export``, ``torch.func``, dispatch or function modes, autocast), on plain
    tensors and parameters only."""
    return (not torch.compiler.is_compiling()  # first: dynamo cannot trace the checks below
            and torch._C._len_torch_dispatch_stack() == 0
            and not torch._C._is_torch_function_mode_enabled()
            and torch._C._functorch.peek_interpreter_stack() is None
            and not torch.is_autocast_enabled("cpu")
            and all(type(a) in _PLAIN for a in args if isinstance(a, torch.Tensor)))


def _runs_eagerly(args: tuple) -> bool:
    """Whether nothing would see a call with `args` but its result: ``_untraced``, and no
    gradient to record (a backward without ``create_graph``)."""
    return not torch.is_grad_enabled() and _untraced(args)


def _call(op: Any, *args: Any) -> torch.Tensor:
    """`op` in a gradient formula. Where only the result matters (``_runs_eagerly``) its
    function is called directly: the dispatcher's custom-op layers (autograd wrapper,
    redispatch, the dynamo-disable wrapper) cost about 45 us a call, measured on a Zen 4,
    against 20-100 us of oneDNN work for the training example's layers; elsewhere the op
    itself, which compile, export, modes and a double backward see."""
    return _IMPLEMENTATIONS[op](*args) if _runs_eagerly(args) else op(*args)

@_custom_op("conv_transpose")
def conv_transpose(input: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor],
                   stride: List[int], pads_begin: List[int], pads_end: List[int],
                   output_padding: List[int], dilation: List[int], groups: int) -> torch.Tensor:
    """ConvTranspose (IOX weights), optionally with bias."""
    out = _empty(conv_transpose_shape(input, weight, stride, pads_begin, pads_end, output_padding,
                                       dilation, groups), input, input, weight)
    if _has_no_elements(input, weight):
        return _zeros_plus_bias(out, bias)
    _ops.conv_transpose(input, weight, bias, out=out, weights_format="IOX",
                        output_padding=list(output_padding),
                        **_attrs(stride, pads_begin, pads_end, dilation, groups))
    return out


@_custom_op("conv_transpose_backward_data")
def conv_transpose_backward_data(grad_output: torch.Tensor, weight: torch.Tensor,
                                 input_size: List[int], stride: List[int], pads_begin: List[int],
                                 pads_end: List[int], output_padding: List[int],
                                 dilation: List[int], groups: int) -> torch.Tensor:
    """ConvTransposeBackwardData: the gradient of ``conv_transpose`` with respect to its input."""
    out = _empty(list(input_size), grad_output, grad_output, weight)
    if _has_no_elements(grad_output, weight):
        return _zeros_plus_bias(out)
    _ops.conv_transpose_backward_data(grad_output, weight, out=out, weights_format="IOX",
                                      output_padding=list(output_padding),
                                      **_attrs(stride, pads_begin, pads_end, dilation, groups))
    return out


@_custom_op("conv_transpose_backward_weights")
def conv_transpose_backward_weights(input: torch.Tensor, grad_output: torch.Tensor,
                                    weight_size: List[int], stride: List[int],
                                    pads_begin: List[int], pads_end: List[int],
                                    output_padding: List[int], dilation: List[int],
                                    groups: int) -> torch.Tensor:
    """ConvTransposeBackwardWeights: the gradient of ``conv_transpose`` with respect to its
    (IOX) weights."""
    out = _empty(list(weight_size), input)
    if _has_no_elements(input, grad_output):
        return _zeros_plus_bias(out)
    _ops.conv_transpose_backward_weights(input, grad_output, tuple(weight_size), out=out,
                                         weights_format="IOX", output_padding=list(output_padding),
                                         **_attrs(stride, pads_begin, pads_end, dilation, groups))
    return out


@_custom_op("convolution_backward_data")
def convolution_backward_data(grad_output: torch.Tensor, weight: torch.Tensor,
                              input_size: List[int], stride: List[int], pads_begin: List[int],
                              pads_end: List[int], dilation: List[int],
                              groups: int) -> torch.Tensor:
    """ConvolutionBackwardData: the gradient of a convolution (OIX weights) with respect to
    its input, of `input_size`."""
    out = _empty(list(input_size), grad_output, grad_output, weight)
    if _has_no_elements(grad_output, weight):
        return _zeros_plus_bias(out)
    _ops.convolution_backward_data(grad_output, weight, tuple(input_size), out=out,
                                   weights_format="OIX",
                                   **_attrs(stride, pads_begin, pads_end, dilation, groups))
    return out


@_custom_op("bias_grad")
def bias_grad(grad_output: torch.Tensor) -> torch.Tensor:
    """The gradient of a bias added along axis 1: the sum of `grad_output` over the other axes."""
    out = torch.empty(grad_output.shape[1], dtype=grad_output.dtype)
    channel_sum("grad_output", grad_output, _arrays.to_numpy("out", out))
    return out


# --- shapes without running anything (torch.compile, torch.export) --------------------

@conv_transpose.register_fake
def _(input, weight, bias, stride, pads_begin, pads_end, output_padding, dilation, groups):  # type: ignore[no-untyped-def]
    return _empty(conv_transpose_shape(input, weight, stride, pads_begin, pads_end, output_padding,
                                        dilation, groups), input, input, weight)


@conv_transpose_backward_data.register_fake
def _(grad_output, weight, input_size, stride, pads_begin, pads_end, output_padding, dilation, groups):  # type: ignore[no-untyped-def]
    return _empty(list(input_size), grad_output, grad_output, weight)


@conv_transpose_backward_weights.register_fake
def _(input, grad_output, weight_size, stride, pads_begin, pads_end, output_padding, dilation, groups):  # type: ignore[no-untyped-def]
    return _empty(list(weight_size), input)


@convolution_backward_data.register_fake
def _(grad_output, weight, input_size, stride, pads_begin, pads_end, dilation, groups):  # type: ignore[no-untyped-def]
    return _empty(list(input_size), grad_output, grad_output, weight)


@bias_grad.register_fake
def _(grad_output):  # type: ignore[no-untyped-def]
    return grad_output.new_empty((grad_output.shape[1],))


# --- gradients, each made of the ops above --------------------------------------------
#
# y = ConvTranspose(x, W) is bilinear, and <g, ConvTranspose(x, W)> = <ConvTransposeBackwardData
# (g, W), x> = <ConvTransposeBackwardWeights(x, g), W>: every gradient of these ops is one of
# them with the same attributes. ConvolutionBackwardData(dy, W) is ConvTranspose(dy, W) with
# W's OIX memory read as IOX and output_padding the convolution's floor slack.

def _save(ctx, inputs, output):  # type: ignore[no-untyped-def]
    ctx.save_for_backward(*[t for t in inputs if isinstance(t, torch.Tensor)])
    ctx.args = [None if isinstance(t, torch.Tensor) else t for t in inputs]
    ctx.had_bias = len(inputs) > 2 and isinstance(inputs[2], torch.Tensor)


def _like(grad, *tensors):  # type: ignore[no-untyped-def]
    """`grad` in the memory format the forward chose from `tensors`, so that the gradients
    follow it as PyTorch's convolutions' do (they make grad_output contiguous in that
    format too)."""
    return grad.contiguous(memory_format=memory_format(*tensors))


def _ct_backward(ctx, grad):  # type: ignore[no-untyped-def]
    x, w = ctx.saved_tensors[:2]
    grad = _like(grad, x, w)
    attrs = ctx.args[3:]  # stride, pads_begin, pads_end, output_padding, dilation, groups
    need = ctx.needs_input_grad
    gx = _call(conv_transpose_backward_data, grad, w, list(x.shape), *attrs) if need[0] else None
    gw = _call(conv_transpose_backward_weights, x, grad, list(w.shape), *attrs) if need[1] else None
    gb = _call(bias_grad, grad) if ctx.had_bias and need[2] else None
    return (gx, gw, gb) + (None,) * 6


def _ctbd_backward(ctx, grad):  # type: ignore[no-untyped-def]
    dy, w = ctx.saved_tensors
    grad = _like(grad, dy, w)
    attrs = ctx.args[3:]
    need = ctx.needs_input_grad
    gdy = _call(conv_transpose, grad, w, None, *attrs) if need[0] else None
    gw = (_call(conv_transpose_backward_weights, grad, dy, list(w.shape), *attrs)
          if need[1] else None)
    return (gdy, gw) + (None,) * 7


def _ctbw_backward(ctx, grad):  # type: ignore[no-untyped-def]
    x, dy = ctx.saved_tensors
    attrs = ctx.args[3:]
    need = ctx.needs_input_grad
    gx = _call(conv_transpose_backward_data, dy, grad, list(x.shape), *attrs) if need[0] else None
    gdy = _call(conv_transpose, x, grad, None, *attrs) if need[1] else None
    return (gx, gdy) + (None,) * 7


def _cbd_backward(ctx, grad):  # type: ignore[no-untyped-def]
    dy, w = ctx.saved_tensors
    grad = _like(grad, dy, w)
    input_size, stride, pads_begin, pads_end, dilation, groups = ctx.args[2:]
    slack = [x - shapes.conv_transpose_out_size(y, k, s, d, pb, pe) for x, y, k, s, d, pb, pe in zip(
        input_size[2:], dy.shape[2:], w.shape[2:], stride, dilation, pads_begin, pads_end)]
    attrs = (stride, pads_begin, pads_end, slack, dilation, groups)
    need = ctx.needs_input_grad
    gdy = _call(conv_transpose_backward_data, grad, w, list(dy.shape), *attrs) if need[0] else None
    gw = (_call(conv_transpose_backward_weights, dy, grad, list(w.shape), *attrs)
          if need[1] else None)
    return (gdy, gw) + (None,) * 6


def _bias_grad_backward(ctx, grad):  # type: ignore[no-untyped-def]
    # The sum's gradient is its input broadcast back: a view, no arithmetic.
    (shape,) = ctx.saved_shape
    return grad.reshape([1, -1] + [1] * (len(shape) - 2)).expand(shape)


def _save_shape(ctx, inputs, output):  # type: ignore[no-untyped-def]
    ctx.saved_shape = (tuple(inputs[0].shape),)


conv_transpose.register_autograd(_ct_backward, setup_context=_save)
conv_transpose_backward_data.register_autograd(_ctbd_backward, setup_context=_save)
conv_transpose_backward_weights.register_autograd(_ctbw_backward, setup_context=_save)
convolution_backward_data.register_autograd(_cbd_backward, setup_context=_save)
bias_grad.register_autograd(_bias_grad_backward, setup_context=_save_shape)


# --- CPU autocast ----------------------------------------------------------------------
#
# torch.amp puts conv_transpose1d/2d/3d in CPU autocast's lower-precision list: their
# floating inputs are cast to the autocast dtype (bf16 or f16, whichever the region
# asks for; float64 stays) and the op runs there. torch.library.register_autocast
# fixes one dtype at registration, so the kernel below reads the region's instead.

_AUTOCAST = torch.library.Library("onednn_graph", "FRAGMENT")


def _to_autocast_dtype(value, dtype):  # type: ignore[no-untyped-def]
    eligible = isinstance(value, torch.Tensor) and value.is_floating_point() \
        and value.dtype != torch.float64
    return value.to(dtype) if eligible else value


def _autocast_cpu_kernel(op):  # type: ignore[no-untyped-def]
    def kernel(*args):  # type: ignore[no-untyped-def]
        dtype = torch.get_autocast_dtype("cpu")
        with torch.autocast("cpu", enabled=False):  # the op again, below autocast
            return op(*[_to_autocast_dtype(a, dtype) for a in args])
    return kernel


_AUTOCAST.impl("conv_transpose", _autocast_cpu_kernel(conv_transpose), "AutocastCPU")


# --- the layers' forward, eagerly ------------------------------------------------------

class _EagerConvTranspose(torch.autograd.Function):
    """``conv_transpose`` with its gradient formula as a plain autograd Function: what an
    eager call runs, without the custom-op layers (about 25 us a forward, measured on a
    Zen 4); ``run_conv_transpose`` picks it only where nothing traces the call."""

    @staticmethod
    def forward(*args):  # type: ignore[no-untyped-def]
        return _IMPLEMENTATIONS[conv_transpose](*args)

    @staticmethod
    def setup_context(ctx, inputs, output):  # type: ignore[no-untyped-def]
        _save(ctx, inputs, output)

    @staticmethod
    def backward(ctx, grad):  # type: ignore[no-untyped-def]
        return _ct_backward(ctx, grad)


def run_conv_transpose(*args: Any) -> torch.Tensor:
    """``conv_transpose(*args)`` as the layers call it: the registered op wherever
    anything traces, transforms or casts the call (compile and export see one node,
    autocast casts), the same function and formula directly otherwise."""
    return _EagerConvTranspose.apply(*args) if _untraced(args) else conv_transpose(*args)
