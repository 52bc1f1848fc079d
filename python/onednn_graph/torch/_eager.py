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
results' allocation, and autograd's node. A ``Runner`` takes each op to oneDNN: the
native call (``DirectCall``) the one call cache made for these layouts, kept by a layer
between calls (``_layer``), or the functional API's positional entry
(``ops.call_in_order``), which finds or compiles it.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

import numpy as np
import torch

from . import _channel_sum, _library, _native, _via_nxc
from .._impl import compiled as _compiled, registry as _registry

__all__ = ["Call", "Runner", "make_call", "conv_transpose", "run"]

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


#: A Runner's native calls: the op and its gradients as the layout has them, and as NXC
#: calls on channels-last copies of NCX data (``_via_nxc``).
_SLOTS = ("forward", "backward_data", "backward_weights", "via_forward", "via_backward_data",
          "via_backward_weights")


class Runner:
    """How a call's tensors reach oneDNN, kept by a layer between calls (``_layer``): the
    result's memory format and strides and the native calls (``DirectCall``) that ran the
    op and each gradient last, which the next call runs directly (None: not yet, or none;
    one that refuses the arrays is replaced through the functional API), valid while the
    input's and the weight's layouts stay; and NumPy views of weight and bias, which the
    layer replaces where those are other tensors. ``lowerings``: how oneDNN computed each
    op kind it ran (``Operation.lowering``), for ``report``."""

    __slots__ = ("fmt", "out_strides", "axes", "values", "weights_values", "w", "b", "keep",
                 "via", "via_alone", "via_values", "via_weights_values", "bias_sum", "generation",
                 "lowerings", "forward", "backward_data", "backward_weights", "via_forward",
                 "via_backward_data", "via_backward_weights")  # (the last six: _SLOTS)

    def __init__(self, call: Call, fmt: torch.memory_format, w: np.ndarray,
                 b: Optional[np.ndarray], keep: bool = True) -> None:
        self.fmt, self.w, self.b = fmt, w, b
        self.keep = keep  # False: a runner for one call, which looks no native call up
        self.out_strides = _native.dense_strides(call.out_shape, fmt)
        # channels last: the data tensors as NXC views, the calls' data_format NXC
        self.axes = _native.nxc_axes(fmt, len(call.out_shape))
        self.values = _native.with_format(call.values, self.axes)
        self.weights_values = _native.with_format(call.weights_values, self.axes)
        # NCX data whose calls run on channels-last copies (``_via_nxc``), as NXC calls of
        # their own slots: where the input's gradient is wanted (the gradient's copy serves
        # both gradient calls), and `via_alone`: a forward without it too
        self.via = _via_nxc.axes_for(call, fmt, w)
        self.via_alone = self.via is not None and _via_nxc.axes_for(call, fmt, w, alone=True) is not None
        self.via_values = _native.with_format(call.values, self.via)
        self.via_weights_values = _native.with_format(call.weights_values, self.via)
        self.forward = self.backward_data = self.backward_weights = None
        self.via_forward = self.via_backward_data = self.via_backward_weights = None
        self.bias_sum: Any = None  # the compiled sum of the result's gradient (_channel_sum)
        self.generation = _compiled.current_generation()  # cleared or busy: these go
        self.lowerings: dict[str, str] = {}

    def run(self, slot: str, kind: str, arrays: tuple, target: np.ndarray, values: tuple) -> None:
        """`kind` on `arrays` into `target` by the native call in `slot`, or by the
        functional API (which then fills the slot)."""
        direct, generation = getattr(self, slot), _compiled.current_generation()
        if direct is not None and self.generation == generation \
                and direct.run(_compiled.stream(), arrays, target) is not None:
            return
        if self.generation != generation:
            for name in _SLOTS:
                setattr(self, name, None)
            self.generation = generation
        if self.keep:
            direct, lowering = _native.runner(kind, arrays, target, values)
            setattr(self, slot, direct)
            if lowering is not None:
                self.lowerings[kind] = lowering + (_via_nxc.NOTE if slot.startswith("via_") else "")
        else:
            _native.run(kind, arrays, target, values)

    def run_forward(self, input: torch.Tensor, call: Call) -> tuple:
        """The op on `input`: its new result, the view of `input` oneDNN read, and whether
        that is a channels-last copy (``run`` written out: a layer's forward calls it
        every time)."""
        if self.via is not None and (self.via_alone or (input.requires_grad and torch.is_grad_enabled())):
            return self._forward_via_nxc(input, call)
        out, target = _native.result_strided(call.out_shape, self.out_strides, input.dtype)
        x = _native.view(input)
        if self.axes is not None:
            x, target = x.transpose(self.axes), target.transpose(self.axes)
        arrays = (x, self.w) if self.b is None else (x, self.w, self.b)
        direct = self.forward
        if direct is None or self.generation != _compiled.current_generation() \
                or direct.run(_compiled.stream(), arrays, target) is None:
            self.run("forward", _CT, arrays, target, self.values)
        return out, x, False

    def _forward_via_nxc(self, input: torch.Tensor, call: Call) -> tuple:
        """``run_forward`` on channels-last copies of the input (returned as the view
        oneDNN read, for the weight gradient) and of the result."""
        axes = self.via
        assert axes is not None
        # (the input's copy is the weight gradient's where autograd records the call)
        x = _via_nxc.to_nxc(input, axes, None if torch.is_grad_enabled() else "input")
        target = _via_nxc.scratch_nxc("result", call.out_shape, axes)
        self.run("via_forward", _CT, (x, self.w) if self.b is None else (x, self.w, self.b), target,
                 self.via_values)
        out, result = _native.result_strided(call.out_shape, self.out_strides, input.dtype)
        _via_nxc.from_nxc(target, result, axes)
        return out, x, True


def conv_transpose(input: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor],
                   call: Call) -> torch.Tensor:
    """ConvTranspose of a checked `call` on (batched) `input`, by the path it allows."""
    if not _library.untraced(input, weight, bias) or call.empty:
        # traced, or nothing to sum: the registered op (which knows the geometry's answer)
        return _library.conv_transpose(input, weight, bias, *call.attrs)
    return run(input, weight, bias, call, Runner(
        call, _native.memory_format(input, weight), _native.view(weight),
        None if bias is None else _native.view(bias), keep=False))


def run(input: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], call: Call,
        runner: Runner) -> torch.Tensor:
    """``conv_transpose`` of an untraced call with something to sum, with `runner` (made for
    these tensors' layouts; a layer keeps its own between calls)."""
    if torch.is_grad_enabled() and (input.requires_grad or weight.requires_grad
                                    or (bias is not None and bias.requires_grad)):
        return _apply(input, weight, bias, call, runner)
    return runner.run_forward(input, call)[0]


class _Function(torch.autograd.Function):
    """ConvTranspose and its three gradients as a plain autograd Function, in the old style
    (``forward(ctx, ...)``): the new one (``setup_context``) binds the arguments with
    ``inspect`` on every call, about 40 us (measured on a Zen 4)."""

    @staticmethod
    def forward(ctx, input, weight, bias, call, runner):  # type: ignore[no-untyped-def]
        out, ctx.x, ctx.routed = runner.run_forward(input, call)
        ctx.save_for_backward(input, weight)  # (unpacked in backward: autograd's in-place check)
        # (the weight's view as this call read it: the layer's runner may take another's next)
        ctx.call, ctx.runner, ctx.w = call, runner, runner.w
        ctx.bias, ctx.had_bias = bias, bias is not None
        return out

    @staticmethod
    def backward(ctx, grad):  # type: ignore[no-untyped-def]
        input, weight = ctx.saved_tensors
        call, need, runner = ctx.call, ctx.needs_input_grad, ctx.runner
        if torch.is_grad_enabled() or not _library.untraced(grad):
            # create_graph: the registered ops, whose gradients autograd then records
            return _library.conv_transpose_grads(input, weight, grad, call.attrs, need,
                                                 ctx.had_bias) + (None, None)
        grad = grad.contiguous(memory_format=runner.fmt)  # PyTorch's convolutions do the same
        g = _native.view(grad)
        axes, via = runner.axes, runner.via
        # Both gradients of a routed call: one channels-last copy of the result's gradient
        # for both calls. The weights' gradient alone runs on the NCX tensors: its call
        # reorders diff_dst itself, as fast as the copy would (the Mask R-CNN head on inputs
        # without a gradient, Zen 4: 21-23 ms routed against 22, the copy 2.4-2.8 ms more).
        routed = ctx.routed and need[0]
        if routed:
            g_call = _via_nxc.to_nxc(grad, via, "grad_output")
        else:
            g_call = g if axes is None else g.transpose(axes)  # as the forward's call described it
        gx = gw = gb = None
        if need[0]:
            gx = torch.empty_like(input, memory_format=runner.fmt)
            target = _native.view(gx)
            if routed:
                nxc = _via_nxc.scratch_nxc("grad_input", tuple(input.shape), via)
                runner.run("via_backward_data", _CTBD, (g_call, ctx.w), nxc, runner.via_values)
                _via_nxc.from_nxc(nxc, target, via)
            else:
                runner.run("backward_data", _CTBD, (g_call, ctx.w),
                           target if axes is None else target.transpose(axes), runner.values)
        if need[1]:
            gw = torch.empty_like(weight, memory_format=torch.contiguous_format)
            if routed:
                runner.run("via_backward_weights", _CTBW, (ctx.x, g_call), _native.view(gw),
                           runner.via_weights_values)
            else:  # (a routed forward's input, where it lies: NCX)
                x = _native.view(input) if ctx.routed else ctx.x
                runner.run("backward_weights", _CTBW, (x, g_call), _native.view(gw), runner.weights_values)
        if ctx.had_bias and need[2]:
            gb = torch.empty_like(ctx.bias, memory_format=torch.contiguous_format)
            if runner.bias_sum is None:
                runner.bias_sum = _channel_sum.summer("grad_output", g)
            runner.bias_sum(g, _native.view(gb))
        return gx, gw, gb, None, None


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
