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

from .. import shapes
from . import _native
from ._native import _PLAIN, conv_transpose_shape, memory_format

# --- the ops -------------------------------------------------------------------------

_IMPLEMENTATIONS: dict = {}  # each custom op -> the function it registers


def custom_op(name: str, schema: Optional[str] = None) -> Callable[[Callable[..., torch.Tensor]], Any]:
    """``torch.library.custom_op("onednn_graph::<name>")``, its function kept for
    ``_call``; its schema read from the function's annotations, or `schema`."""
    def register(fn: Callable[..., torch.Tensor]) -> Any:
        # CPU kernels (a meta or fake tensor gets the fake implementation; another device
        # is refused by the dispatcher, naming the device)
        op = torch.library.custom_op(f"onednn_graph::{name}", mutates_args=(),
                                     device_types="cpu", schema=schema)(fn)
        _IMPLEMENTATIONS[op] = fn
        return op
    return register


#: The namespace's registrations outside ``custom_op``: ops defined directly (``graph_op``)
#: and kernels for other dispatch keys (CPU autocast, below).
_FRAGMENT = torch.library.Library("onednn_graph", "FRAGMENT")


def graph_op(name: str, schema: str) -> Callable[[Callable[..., torch.Tensor]], Any]:
    """``torch.ops.onednn_graph.<name>`` defined with `schema` (its arguments, without the
    name) and `fn` as its CPU kernel, on the dispatcher without ``custom_op``'s Python
    layers: for an op torch.compile's graphs call where nothing records gradients (it has
    no autograd formula). Those layers (an autograd kernel in Python, an aliasing check)
    cost 4 us a call under ``inference_mode`` and 12 under ``no_grad`` more than the
    dispatcher's own call of a Python kernel; each argument's conversion costs more again
    (``custom_op``'s 18 arguments against 9 here: 10.6 us against 3.3 under
    ``inference_mode``, 19.2 against 3.4 under ``no_grad``, warm, Zen 4). Its fake
    implementation is registered with ``torch.library.register_fake``."""
    def register(fn: Callable[..., torch.Tensor]) -> Any:
        _FRAGMENT.define(name + schema, tags=(torch.Tag.pt2_compliant_tag,))
        _FRAGMENT.impl(name, fn, "CPU")
        return getattr(torch.ops.onednn_graph, name).default
    return register


def untraced(*tensors: Optional[torch.Tensor]) -> bool:
    """Whether nothing traces or transforms a call on `tensors` (``torch.compile``,
    ``torch.export``, ``torch.jit.trace``, ``torch.func``, dispatch or function modes), and
    they are plain tensors and parameters (not subclasses, which may trace or dispatch) in
    CPU memory (a meta tensor has no memory: the registered op's fake implementation
    answers). ``torch.jit.trace`` records only what goes through the dispatcher: a call
    it traces takes the registered op, which its graph then holds (the eager path's
    NumPy views would leave the traced input's result in it as a constant)."""
    if (torch.compiler.is_compiling()  # first: dynamo cannot trace the checks below
            or _dispatch_modes() or _function_modes() or _functorch_level() is not None
            or _jit_tracing() is not None):
        return False
    for t in tensors:  # (a loop: all() over a generator costs a layer call a microsecond)
        if t is not None and (type(t) not in _PLAIN or not t.is_cpu):
            return False
    return True


_jit_tracing = torch._C._get_tracing_state
_dispatch_modes = torch._C._len_torch_dispatch_stack
_function_modes = torch._C._is_torch_function_mode_enabled
_functorch_level = torch._C._functorch.peek_interpreter_stack


def jit_tracing() -> bool:
    """Whether ``torch.jit.trace`` is tracing this call."""
    return _jit_tracing() is not None


def traced_shapes(*tensors: Optional[torch.Tensor]) -> tuple:
    """The shapes of `tensors` as ints while ``torch.jit.trace`` traces: there a size is a
    traced tensor, and every check of one would be recorded (and warned about as a
    conversion to a Python bool). The registered op the trace records takes attributes,
    not sizes, so its graph computes other inputs' sizes itself."""
    state = _jit_tracing()
    torch._C._set_tracing_state(None)
    try:
        return tuple(None if t is None else torch.Size(tuple(t.shape)) for t in tensors)
    finally:
        torch._C._set_tracing_state(state)


def _runs_eagerly(args: tuple) -> bool:
    """Whether nothing would see a call with `args` but its result: ``untraced``, outside
    autocast, and no gradient to record (a backward without ``create_graph``)."""
    return (not torch.is_grad_enabled() and not torch.is_autocast_enabled("cpu")
            and untraced(*[a for a in args if isinstance(a, torch.Tensor)]))


def _call(op: Any, eager: bool, *args: Any) -> torch.Tensor:
    """`op` in a gradient formula: where only the result matters (`eager`, from
    ``_runs_eagerly``) its function is called directly: the dispatcher's custom-op layers
    (autograd wrapper, redispatch, the dynamo-disable wrapper) cost about 45 us a call,
    measured on a Zen 4, against 20-100 us of oneDNN work for the training example's
    layers; elsewhere the op itself, which compile, export, modes and a double backward
    see."""
    return _IMPLEMENTATIONS[op](*args) if eager else op(*args)


@custom_op("conv_transpose")
def conv_transpose(input: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor],
                   stride: List[int], pads_begin: List[int], pads_end: List[int],
                   output_padding: List[int], dilation: List[int], groups: int) -> torch.Tensor:
    """ConvTranspose (IOX weights), optionally with bias."""
    return _native.conv_transpose(input, weight, bias, stride, pads_begin, pads_end,
                                  output_padding, dilation, groups)


@custom_op("conv_transpose_backward_data")
def conv_transpose_backward_data(grad_output: torch.Tensor, weight: torch.Tensor,
                                 input_size: List[int], stride: List[int], pads_begin: List[int],
                                 pads_end: List[int], output_padding: List[int],
                                 dilation: List[int], groups: int) -> torch.Tensor:
    """ConvTransposeBackwardData: the gradient of ``conv_transpose`` with respect to its input."""
    return _native.conv_transpose_backward_data(grad_output, weight, input_size, stride,
                                                pads_begin, pads_end, output_padding, dilation,
                                                groups)


@custom_op("conv_transpose_backward_weights")
def conv_transpose_backward_weights(input: torch.Tensor, grad_output: torch.Tensor,
                                    weight_size: List[int], stride: List[int],
                                    pads_begin: List[int], pads_end: List[int],
                                    output_padding: List[int], dilation: List[int],
                                    groups: int) -> torch.Tensor:
    """ConvTransposeBackwardWeights: the gradient of ``conv_transpose`` with respect to its
    (IOX) weights."""
    return _native.conv_transpose_backward_weights(input, grad_output, weight_size, stride,
                                                   pads_begin, pads_end, output_padding,
                                                   dilation, groups)


@custom_op("convolution_backward_data")
def convolution_backward_data(grad_output: torch.Tensor, weight: torch.Tensor,
                              input_size: List[int], stride: List[int], pads_begin: List[int],
                              pads_end: List[int], dilation: List[int],
                              groups: int) -> torch.Tensor:
    """ConvolutionBackwardData: the gradient of a convolution (OIX weights) with respect to
    its input, of `input_size`."""
    return _native.convolution_backward_data(grad_output, weight, input_size, stride,
                                             pads_begin, pads_end, dilation, groups)


@custom_op("bias_grad")
def bias_grad(grad_output: torch.Tensor) -> torch.Tensor:
    """The gradient of a bias added along axis 1: the sum of `grad_output` over the other axes."""
    return _native.bias_grad(grad_output)


# --- shapes without running anything (torch.compile, torch.export) --------------------

@conv_transpose.register_fake
def _(input, weight, bias, stride, pads_begin, pads_end, output_padding, dilation, groups):  # type: ignore[no-untyped-def]
    return _native.empty(conv_transpose_shape(input, weight, stride, pads_begin, pads_end, output_padding,
                                        dilation, groups), input, input, weight)


@conv_transpose_backward_data.register_fake
def _(grad_output, weight, input_size, stride, pads_begin, pads_end, output_padding, dilation, groups):  # type: ignore[no-untyped-def]
    return _native.empty(list(input_size), grad_output, grad_output, weight)


@conv_transpose_backward_weights.register_fake
def _(input, grad_output, weight_size, stride, pads_begin, pads_end, output_padding, dilation, groups):  # type: ignore[no-untyped-def]
    return _native.empty(list(weight_size), input)


@convolution_backward_data.register_fake
def _(grad_output, weight, input_size, stride, pads_begin, pads_end, dilation, groups):  # type: ignore[no-untyped-def]
    return _native.empty(list(input_size), grad_output, grad_output, weight)


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


def conv_transpose_grads(x: torch.Tensor, w: torch.Tensor, grad: torch.Tensor, attrs: tuple,
                         need: tuple, had_bias: bool) -> tuple:
    """The gradients of ``conv_transpose(x, w, bias, *attrs)`` (attrs: stride, pads_begin,
    pads_end, output_padding, dilation, groups) for its output's gradient `grad`: those of
    x, w and the bias where `need` says so, else None."""
    grad = _like(grad, x, w)
    eager = _runs_eagerly((x, w, grad))
    gx = (_call(conv_transpose_backward_data, eager, grad, w, list(x.shape), *attrs)
          if need[0] else None)
    gw = (_call(conv_transpose_backward_weights, eager, x, grad, list(w.shape), *attrs)
          if need[1] else None)
    gb = _call(bias_grad, eager, grad) if had_bias and need[2] else None
    return gx, gw, gb


def _ct_backward(ctx, grad):  # type: ignore[no-untyped-def]
    x, w = ctx.saved_tensors[:2]
    # ctx.args[3:]: stride, pads_begin, pads_end, output_padding, dilation, groups
    return conv_transpose_grads(x, w, grad, ctx.args[3:], ctx.needs_input_grad,
                                ctx.had_bias) + (None,) * 6


def _ctbd_backward(ctx, grad):  # type: ignore[no-untyped-def]
    dy, w = ctx.saved_tensors
    grad = _like(grad, dy, w)
    attrs = ctx.args[3:]
    need, eager = ctx.needs_input_grad, _runs_eagerly((dy, w, grad))
    gdy = _call(conv_transpose, eager, grad, w, None, *attrs) if need[0] else None
    gw = (_call(conv_transpose_backward_weights, eager, grad, dy, list(w.shape), *attrs)
          if need[1] else None)
    return (gdy, gw) + (None,) * 7


def _ctbw_backward(ctx, grad):  # type: ignore[no-untyped-def]
    x, dy = ctx.saved_tensors
    attrs = ctx.args[3:]
    need, eager = ctx.needs_input_grad, _runs_eagerly((x, dy, grad))
    gx = (_call(conv_transpose_backward_data, eager, dy, grad, list(x.shape), *attrs)
          if need[0] else None)
    gdy = _call(conv_transpose, eager, x, grad, None, *attrs) if need[1] else None
    return (gx, gdy) + (None,) * 7


def _cbd_backward(ctx, grad):  # type: ignore[no-untyped-def]
    dy, w = ctx.saved_tensors
    grad = _like(grad, dy, w)
    input_size, stride, pads_begin, pads_end, dilation, groups = ctx.args[2:]
    slack = [x - shapes.conv_transpose_out_size(y, k, s, d, pb, pe) for x, y, k, s, d, pb, pe in zip(
        input_size[2:], dy.shape[2:], w.shape[2:], stride, dilation, pads_begin, pads_end)]
    attrs = (stride, pads_begin, pads_end, slack, dilation, groups)
    need, eager = ctx.needs_input_grad, _runs_eagerly((dy, w, grad))
    gdy = (_call(conv_transpose_backward_data, eager, grad, w, list(dy.shape), *attrs)
           if need[0] else None)
    gw = (_call(conv_transpose_backward_weights, eager, dy, grad, list(w.shape), *attrs)
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


_FRAGMENT.impl("conv_transpose", _autocast_cpu_kernel(conv_transpose), "AutocastCPU")
