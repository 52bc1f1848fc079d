"""A layer's eager forward with what its last call settled kept: a per-layer plan.

A model calls each layer with the same shapes step after step. For each of the
package's layers this keeps, beside the layer (never in it: its ``__dict__``,
``state_dict``, copies and pickles stay the stock layer's), the last call's

* checked call (``functional``'s checks in PyTorch's terms, and the op's attributes),
  valid while the input's shape and dtype, the parameters' shapes and dtypes and the
  layer's attributes are the same (compared each call: a layer whose ``stride`` is
  changed is checked again);
* how its tensors reach oneDNN (``_eager.Runner``: the result's memory format and the
  native calls of the op and its gradients, valid while the input's and the weight's
  strides are the same; NumPy views of weight and bias, valid while they are the same
  tensors over the same memory: an optimizer's in-place update keeps both, and
  ``param.data = ...`` or a parametrization's freshly computed weight gets new views).

A call like the last one torch.nn's kernel computed (``_kernel_choice``: a tiny layer,
by the default rule) goes to torch.nn's function before any of that is read: the layer's
lane (``_lane``), about 1 us of facts compared instead of 3-4 us of checks and lookups.

Under CPU autocast the layer casts its tensors first, as ``functional`` does (the plan
is then the low-precision call's). Where a call is traced or unbatched, it takes
``functional``'s path (as does a call given ``output_size``, in ``modules``).
"""

from __future__ import annotations

import functools
import os
import weakref
from typing import Any, Optional

import torch

from . import _eager, _kernel_choice, _library, _native, _processes, functional as _functional

__all__ = ["forward_with", "lowerings", "on_lane", "runs_torch_nn", "torch_computes",
           "torch_function", "torch_nn", "weight_and_bias"]


class _Plan:
    """What one layer's last call settled (see the module's docstring); ``call`` None where
    torch.nn computes it (``torch_nn``)."""

    __slots__ = ("key", "call", "weight", "w_ptr", "bias", "b_ptr", "x_stride", "w_stride",
                 "runner", "kernels", "lane")

    def __init__(self, key: tuple, call: Optional[_eager.Call]) -> None:
        self.key, self.call = key, call
        # (input strides, whether gradients are recorded) -> why torch.nn's kernel computes
        # such a call, or None: oneDNN's (``_kernel_choice``)
        self.kernels: dict[tuple, Optional[str]] = {}
        self.weight: Any = None
        self.bias: Any = None
        self.x_stride: Any = None
        self.w_stride: Any = None
        self.runner: Optional[_eager.Runner] = None
        self.w_ptr = self.b_ptr = 0
        # ``_lane``'s facts of the last call torch.nn's kernel computed, or None
        self.lane: Optional[tuple] = None


# id(layer) -> (a weak reference to the layer, its plan); an entry goes with its layer.
# A forked child makes its plans again (whether oneDNN runs there: _processes).
_plans: dict[int, tuple[Any, _Plan]] = {}
os.register_at_fork(after_in_child=_plans.clear)


def _forget(ref: Any, key: int, plans: dict = _plans) -> None:
    # (`plans` bound: at interpreter exit a layer may go after this module's globals)
    entry = plans.get(key)
    if entry is not None and entry[0] is ref:
        del plans[key]


def _new_plan(layer: torch.nn.Module, key: tuple) -> _Plan:
    """`layer`'s plan for a call of `key` (``_planned``'s), checked and kept."""
    # None: torch.nn computes it (a dtype oneDNN does not take; a process it cannot run in)
    call = _functional._cached_call(
        _functional._cached_conv_transpose, _functional._checked_conv_transpose,
        (len(layer.kernel_size), *key)) \
        if key[1] in _ONEDNN_DTYPES and key[3] in _ONEDNN_DTYPES and _processes.onednn_usable else None
    plan = _Plan(key, call)
    ref = weakref.ref(layer, functools.partial(_forget, key=id(layer)))
    _plans[id(layer)] = (ref, plan)
    return plan


def lowerings(layer: Any) -> dict[str, str]:
    """How oneDNN computed each op kind of `layer`'s last call it ran in eager mode, and its
    gradients (``Operation.lowering``; ``report``): {} where none ran."""
    entry = _plans.get(id(layer))
    runner = entry[1].runner if entry is not None and entry[0]() is layer else None
    return {} if runner is None else dict(runner.lowerings)


def weight_and_bias(layer: Any) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
    """The layer's weight and bias, each read once: a parametrized weight is computed on
    every read, and spectral_norm's read in training mode runs a power iteration (changing
    its buffers)."""
    params = layer._parameters
    return (params["weight"] if "weight" in params else layer.weight,
            params["bias"] if "bias" in params else layer.bias)


def on_lane(layer: Any, input: torch.Tensor) -> Optional[torch.Tensor]:
    """``layer(input)`` by torch.nn's function where the call's facts are those of the last
    call torch.nn's kernel computed (the layer's lane, ``_lane``), else None. (The weight
    is read only where the layer has a lane: a parametrized one is computed on each read.)"""
    if _compiling():  # (first: what the trace reads, dynamo guards on every call)
        return None
    entry = _plans.get(id(layer))
    if entry is not None:
        plan = entry[1]
        # (not while torch.jit.trace traces: its sizes are traced values, which the
        # comparison would turn into constants of the trace with a warning)
        if plan.lane is not None and _jit_tracing() is None:
            weight, bias = weight_and_bias(layer)
            lane = _lane(layer, input, weight, bias)
            if lane == plan.lane and entry[0]() is layer:  # as the last call: torch.nn's
                return _TORCH_FUNCTIONS[len(lane[0]) - 2](input, weight, bias, *lane[-5:])
    return None


def forward_with(layer: Any, input: torch.Tensor, weight: torch.Tensor,
                 bias: Optional[torch.Tensor]) -> torch.Tensor:
    """``forward`` on the given weight and bias (the layer's, or ``_inference``'s folded
    ones), planned: where torch.nn's kernel computes it, its facts are the layer's lane."""
    nsp = len(layer.kernel_size)
    if type(input) not in _PLAIN or input.dim() != nsp + 2 \
            or not _library.untraced(input, weight, bias):
        if torch_computes(input, weight) or _kernel_choice.by_rule(layer, input, weight) or (
                _compiling() and _kernel_choice.training_in_graph(_recorded(input, weight, bias))):
            return torch_nn(layer, input, weight, bias)
        return _functional._conv_transpose_nd(nsp, input, weight, bias, layer.stride,
                                              layer.padding, layer.output_padding, layer.groups,
                                              layer.dilation)
    uncast = (input, weight, bias)  # (the lane's facts are read before autocast casts)
    # cast as autocast casts (new tensors each call); any device's asked first (``_any_autocast``)
    if _any_autocast() and torch.is_autocast_enabled("cpu"):
        input, weight, bias = _functional._autocast(input, weight, bias)
    plan = _planned(layer, input, weight, bias)
    call = plan.call
    if call is None:
        plan.lane = _lane(layer, *uncast)
        return torch_nn(layer, input, weight, bias)
    if call.empty:  # nothing to sum: the registered op knows the geometry's answer
        return _library.conv_transpose(input, weight, bias, *call.attrs)
    recorded = _recorded(input, weight, bias)
    kernel = plan.kernels.get((input.stride(), recorded), _UNDECIDED)
    if kernel is _UNDECIDED:
        kernel = _torch_kernel(layer, plan, input, weight, bias, recorded)
    if kernel is None:
        return _on_onednn(layer, plan, input, weight, bias)
    plan.lane = _lane(layer, *uncast)
    return torch_nn(layer, input, weight, bias)


def _recorded(input: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor]) -> bool:
    """Whether autograd records a call on these tensors."""
    return _grad_enabled() and (input.requires_grad or weight.requires_grad
                                or (bias is not None and bias.requires_grad))


def _lane(layer: Any, input: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor]) -> tuple:
    """What decides whose kernel computes a call (``_kernel_choice.decide``: the input's
    shape, strides and dtype, the weight's shape, whether the call records gradients,
    whether autocast casts it, the layer's attributes), of the tensors autocast casts.

    A call whose facts are those of the last call torch.nn's kernel computed goes there
    straight, unchecked and unplanned: torch.nn's function computes any call as torch.nn's
    layer does (and checks it as that does: a bias or weight of another dtype since is
    torch's error to report), so the tiny layers the rule gives it cost no more than
    torch.nn's own forward (``benchmarks/layer_overhead.py``). The attributes come last:
    the call's own, as that function takes them."""
    return (input.shape, input.stride(), input.dtype, weight.shape,
            _grad_enabled() and (input.requires_grad or weight.requires_grad  # (``_recorded``
                                 or (bias is not None and bias.requires_grad)),  # inline: 0.1 us)
            _any_autocast(),
            layer.stride, layer.padding, layer.output_padding, layer.groups, layer.dilation)


def _planned(layer: Any, input: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor]) -> _Plan:
    # (read on every call of every layer: the arguments of functional's checks in their
    # order, nothing built twice, the plan's tuple compared before its layer's weakref)
    key = (input.shape, input.dtype, weight.shape, weight.dtype,
           None if bias is None else bias.shape, None if bias is None else bias.dtype,
           layer.stride, layer.padding, layer.output_padding, layer.groups, layer.dilation)
    entry = _plans.get(id(layer))
    if entry is not None and entry[1].key == key and entry[0]() is layer:
        return entry[1]
    return _new_plan(layer, key)


def _torch_kernel(layer: Any, plan: _Plan, input: torch.Tensor, weight: torch.Tensor,
                  bias: Optional[torch.Tensor], recorded: bool) -> Optional[str]:
    """Why torch.nn's kernel computes this call, or None: oneDNN's (``_kernel_choice``,
    decided once per input layout and whether the call records gradients)."""
    kind = (input.stride(), recorded)
    kernel = plan.kernels.get(kind, _UNDECIDED)
    if kernel is _UNDECIDED:
        kernel = plan.kernels[kind] = _kernel_choice.decide(
            layer, input, weight, bias, recorded,
            functools.partial(_on_onednn, layer, plan), functools.partial(torch_nn, layer))
    return kernel


def runs_torch_nn(layer: Any, input: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor]) -> bool:
    """Whether torch.nn's kernel computes `layer`'s call on these tensors recording no
    gradient (``_inference`` asks before it packs: a packed call would be oneDNN's)."""
    plan = _planned(layer, input, weight, bias)
    return plan.call is not None and not plan.call.empty and \
        _torch_kernel(layer, plan, input, weight, bias, False) is not None


_UNDECIDED: Any = object()


def _on_onednn(layer: Any, plan: _Plan, input: torch.Tensor, weight: torch.Tensor,
               bias: Optional[torch.Tensor]) -> torch.Tensor:
    """The call on oneDNN with `plan` (its runner made or kept)."""
    call = plan.call
    assert call is not None  # (a plan oneDNN computes)
    # The runner while the input's and the weight's layouts stay (its native calls take
    # any memory of those layouts), its views while the parameters' memory stays.
    stride, w_stride = input.stride(), weight.stride()
    runner = plan.runner
    if runner is None or stride != plan.x_stride or w_stride != plan.w_stride:
        runner = plan.runner = _eager.Runner(call, _native.memory_format(input, weight),
                                             _native.view(weight),
                                             None if bias is None else _native.view(bias))
        plan.x_stride, plan.w_stride = stride, w_stride
        plan.weight, plan.w_ptr = weight, weight.data_ptr()
        plan.bias, plan.b_ptr = bias, 0 if bias is None else bias.data_ptr()
    else:  # a parametrized weight is a new tensor on every call; a parameter, the same one
        if weight is not plan.weight or weight.data_ptr() != plan.w_ptr:
            runner.w = _native.view(weight)
            plan.weight, plan.w_ptr = weight, weight.data_ptr()
        if bias is not plan.bias or (bias is not None and bias.data_ptr() != plan.b_ptr):
            runner.b = None if bias is None else _native.view(bias)
            plan.bias, plan.b_ptr = bias, 0 if bias is None else bias.data_ptr()
    try:
        return _eager.run(input, weight, bias, call, runner)
    except (ValueError, TypeError) as exc:
        raise _functional._torch_error(_functional._CT_NAMES[len(layer.kernel_size)], exc) from None


_PLAIN = _native._PLAIN  # (bound here: read on every call)
_compiling = torch.compiler.is_compiling
_jit_tracing = torch._C._get_tracing_state
_grad_enabled = torch.is_grad_enabled
# Whether autocast is on for any device (the lane's fact; and asked before the CPU's by
# name, where a call needs that): 0.2 us less than asking for the CPU's by name, which
# parses its argument, and about 5 us less with a model's caches cold. With another device's on
# too, the CPU's turned on keeps a call on the lane: torch.nn's function casts it as
# torch.nn's layer does, only whose kernel is faster was decided without the cast.
_any_autocast = getattr(torch._C, "_is_any_autocast_enabled", None) or \
    functools.partial(torch.is_autocast_enabled, "cpu")
#: What oneDNN computes; a layer whose input or weight is another dtype (float64, which
#: ``model.double()`` and ``gradcheck`` give, complex) runs torch.nn's computation.
_ONEDNN_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
_TORCH_FUNCTIONS = {1: torch.nn.functional.conv_transpose1d, 2: torch.nn.functional.conv_transpose2d,
                    3: torch.nn.functional.conv_transpose3d}


def torch_function(layer: Any) -> Any:
    """torch.nn's function of `layer`'s rank (``torch.nn.functional.conv_transpose2d``, ...)."""
    return _TORCH_FUNCTIONS[len(layer.kernel_size)]


def torch_computes(input: torch.Tensor, weight: torch.Tensor) -> bool:
    """Whether torch.nn computes a traced or other call on `input` and `weight` (``torch_nn``):
    a dtype oneDNN does not take, another device than the CPU (meta tensors get the
    registered op's shapes), a process where oneDNN cannot run."""
    return input.dtype not in _ONEDNN_DTYPES or weight.dtype not in _ONEDNN_DTYPES \
        or not _processes.onednn_usable or not (input.is_cpu or input.is_meta) \
        or not (weight.is_cpu or weight.is_meta)


def torch_nn(layer: Any, input: torch.Tensor, weight: torch.Tensor, bias: Any) -> torch.Tensor:
    """``layer(input)`` as torch.nn's layer computes it (on the weight and bias already
    read: a parametrized weight is computed on each read), for a call oneDNN does not
    compute: another dtype than it takes, another device than the CPU, or a process
    where it cannot run (``_processes``). ``report`` says so of the layer."""
    return torch_function(layer)(input, weight, bias, layer.stride, layer.padding,
                                 layer.output_padding, layer.groups, layer.dilation)


def __dir__() -> list[str]:
    return list(__all__)
