"""A layer's ConvTranspose as an eager call runs it: as little Python as the call allows.

``functional`` checks a call's arguments once per signature (tensor shapes and dtypes,
the layer's attributes) and hands over a ``Call``, which holds what they settle: the
op's attributes, the result's shape, and the functional API's keyword values of the
op and of its two gradients. ``conv_transpose`` then picks the path:

* anything traces or transforms the call (compile, export, a mode, a meta tensor), or
  there is nothing to sum (an empty batch): the registered op (``_library``);
* no gradient is wanted: the op on the tensors' memory (``_native``), no autograd;
* else a plain autograd ``Function`` whose backward runs the two gradient ops and the
  bias sum on views it made in the forward (``create_graph``, which needs their
  gradients, takes the registered ops instead).

Per call, what remains is PyTorch's: NumPy views of the tensors (no copy), the
results' allocation, and autograd's node; the functional API's cache finds the
compiled op in one native call (``ops.call_in_order``).
"""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

import numpy as np
import torch

from . import _library, _native
from .._impl import registry as _registry

__all__ = ["Call", "conv_transpose"]

_CT, _CTBD, _CTBW = (_registry.CONV_TRANSPOSE, _registry.CONV_TRANSPOSE_BWD_DATA,
                     _registry.CONV_TRANSPOSE_BWD_WEIGHTS)


class Call(NamedTuple):
    """What a conv_transposeNd call's checked arguments settle (``functional``)."""

    #: The registered op's attributes: stride, pads_begin, pads_end, output_padding and
    #: dilation as lists, groups.
    attrs: tuple
    #: The batched result's shape.
    out_shape: tuple
    #: The functional API's keyword values (``ops.call_in_order``) of ConvTranspose, which
    #: ConvTransposeBackwardData shares, and of ConvTransposeBackwardWeights.
    values: tuple
    weights_values: tuple
    #: Whether a tensor has no elements (an empty batch): nothing for oneDNN to sum.
    empty: bool


def make_call(attrs: tuple, out_shape: tuple, input_shape: tuple, weight_shape: tuple) -> Call:
    """The ``Call`` of a checked call of batched `input_shape` and `weight_shape`."""
    stride, pads_begin, pads_end, output_padding, dilation, groups = attrs
    values = (stride, pads_begin, pads_end, dilation, "none", output_padding, groups, "NCX", "IOX")
    empty = 0 in input_shape or 0 in weight_shape
    return Call(attrs, out_shape, values, values + (tuple(weight_shape),), empty)


def conv_transpose(input: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor],
                   call: Call, fmt: Optional[torch.memory_format] = None,
                   w: Optional[np.ndarray] = None, b: Optional[np.ndarray] = None) -> torch.Tensor:
    """ConvTranspose of a checked `call` on (batched) `input`, by the path it allows.
    A layer that keeps them (``_layer``) hands over the result's memory format `fmt` and
    the views `w` and `b` of its weight and bias."""
    if not _library.untraced(input, weight, bias) or call.empty:
        # traced, or nothing to sum: the registered op (which knows the geometry's answer)
        return _library.conv_transpose(input, weight, bias, *call.attrs)
    if fmt is None:
        fmt = _native.memory_format(input, weight)
    if w is None:
        w = _native.view(weight)
    if b is None and bias is not None:
        b = _native.view(bias)
    if torch.is_grad_enabled() and (input.requires_grad or weight.requires_grad
                                    or (bias is not None and bias.requires_grad)):
        return _apply(input, weight, bias, call, fmt, w, b)
    return _forward(input, call, fmt, w, b)[0]


def _forward(input: torch.Tensor, call: Call, fmt: torch.memory_format, w: np.ndarray,
             b: Optional[np.ndarray]) -> tuple:
    """The result (in `fmt`) and the view of `input` oneDNN read, with weights `w`, bias `b`."""
    out, target = _native.result(call.out_shape, input.dtype, fmt)
    x = _native.view(input)
    _native.run(_CT, (x, w) if b is None else (x, w, b), target, call.values)
    return out, x


class _Function(torch.autograd.Function):
    """ConvTranspose and its three gradients as a plain autograd Function, in the old style
    (``forward(ctx, ...)``): the new one (``setup_context``) binds the arguments with
    ``inspect`` on every call, about 40 us (measured on a Zen 4)."""

    @staticmethod
    def forward(ctx, input, weight, bias, call, fmt, w, b):  # type: ignore[no-untyped-def]
        out, ctx.x = _forward(input, call, fmt, w, b)
        ctx.save_for_backward(input, weight)  # (unpacked in backward: autograd's in-place check)
        ctx.call, ctx.fmt, ctx.w, ctx.had_bias = call, fmt, w, bias is not None
        return out

    @staticmethod
    def backward(ctx, grad):  # type: ignore[no-untyped-def]
        input, weight = ctx.saved_tensors
        call, need = ctx.call, ctx.needs_input_grad
        if torch.is_grad_enabled() or not _library.untraced(grad):
            # create_graph: the registered ops, whose gradients autograd then records
            return _library.conv_transpose_grads(input, weight, grad, call.attrs, need,
                                                 ctx.had_bias) + (None,) * 4
        grad = grad.contiguous(memory_format=ctx.fmt)  # PyTorch's convolutions do the same
        g = _native.view(grad)
        gx = gw = gb = None
        if need[0]:
            gx, target = _native.result(input.shape, grad.dtype, ctx.fmt)
            _native.run(_CTBD, (g, ctx.w), target, call.values)
        if need[1]:
            gw, target = _native.result(weight.shape, grad.dtype, torch.contiguous_format)
            _native.run(_CTBW, (ctx.x, g), target, call.weights_values)
        if ctx.had_bias and need[2]:
            gb = _native.bias_grad(grad, g)
        return gx, gw, gb, None, None, None, None


def _apply_of(function: Any) -> Any:
    """``function.apply`` without its Python wrapper, which only handles torch.func
    transforms (``_library.untraced`` has ruled them out): the C++ apply of autograd's
    Function base, about 7 us less a call."""
    try:
        return super(torch.autograd.function._SingleLevelFunction, function).apply
    except (AttributeError, TypeError):  # pragma: no cover - another PyTorch's internals,
        return getattr(function, "apply", None)  # or a mocked torch (the API reference)


_apply = _apply_of(_Function)


def __dir__() -> list[str]:
    return list(__all__)
