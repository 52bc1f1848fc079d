"""Inference the way oneDNN's Graph API is meant to run it: ``convert(model, inference=True)``.

In eval, a converted ConvTranspose layer then computes its epilogue too, as one oneDNN
partition with its weights packed once:

* **Folding.** A BatchNorm that reads only the layer's result is folded into the layer's
  weights and bias (PyTorch computes the folded values, in the weights' dtype: ``fold``):
  ``w' = w * g / sqrt(v + eps)`` per output channel, ``b' = (b - m) * g / sqrt(v + eps) + beta``;
  not where its statistics are bf16/f16 (a model cast to them: ``UNFOLDED_STATISTICS``).
* **Fusion.** An activation module that reads only that (ReLU, LeakyReLU, GELU, Tanh,
  Sigmoid, ELU, Hardswish, Mish, ReLU6, Hardtanh: ``post_of``) is the partition's post-op.
  SiLU and GELU's tanh approximation stay PyTorch's: oneDNN 3.2's graph API has no op for
  them.
* **Packing.** Without a gradient to record, the folded weights and bias are constant
  inputs of the compiled partition (``_impl.as_f32.ChainOp``): oneDNN reorders them into
  its kernel's layout once, and a call runs it natively (``ChainCall``).

The folded BatchNorm and activation modules keep their class's behaviour but return
their input in eval, where the layer has applied them (their class is made on top of
theirs, as ``convert`` makes the layer's: ``folded``; ``revert`` gives it back). Where
they are is found where the model shows it (``find``): a module that follows the layer
in an ``nn.Sequential``, or in the graph torch.fx traces of the model, and reads only the
layer's result. Training mode is unchanged: every module computes what it computed.

What invalidates the packed weights (``_sources``): a parameter or buffer of the layer or
of its BatchNorm that is another tensor (a parameter replaced, ``model.to(dtype)`` and
back), has another data pointer (``param.data = ...``) or version (any in-place write
PyTorch tracks: an optimizer step, ``load_state_dict``, ``param.mul_`` under no_grad, a
train-mode pass moving the running statistics); a parametrized weight is checked through
its originals. A train-mode pass writes BatchNorm's running statistics in its kernel,
without a version change: ``num_batches_tracked``'s version says it. PyTorch itself does
not track writes through ``param.data`` (``.data.copy_``, ``.data.clamp_``: no version
counter sees them), so after such a write call ``refresh(model)``. A call that records
gradients (``requires_grad`` parameters outside ``no_grad``) folds with differentiable
torch ops and packs nothing.

A layer of plain ``convert(model)`` (no epilogue) packs in eval too (``forward_plain``):
nothing folded or fused, its weights packed on the second call in a row that finds them
unchanged (``_Seen`` marks the first), so that weights changed before every call never
pay a partition's compile on every call. So does a layer of ``convert(model,
inference=True)`` with nothing to fold, fuse or hand on (``convert`` gives it no
epilogue): where torch.nn's kernel runs its calls it then takes the layer's lane
(``_layer.on_lane``), which with a model's caches cold cost 19 us over torch.nn's own
call, where this module's path cost 68 (``_OnTorch``: a 3-D layer, Zen 4).

Under ``torch.compile`` the layer with its epilogue is one registered op,
``conv_transpose_inference`` (on the dispatcher without custom_op's Python layers, its
attributes one string: ``_library.graph_op``, ``config_of``), whose implementation packs
as eager does, per weight (``run_registered``); its result's layout (channels-last for a
next layer, stock otherwise) is settled while the graph is traced (``_compiled_call``), so
that the fake implementation gives the same strides.
"""

from __future__ import annotations

import functools
import math
import os
import weakref
from typing import Any, NamedTuple, Optional

import numpy as np
import torch

from .. import ops as _ops, post as _post
from .._impl import (arrays as _arrays, as_f32 as _as_f32, call as _call, compiled as _compiled,
                     kernels as _kernels, lowering as _lowering, matmul_form as _matmul_form, plan as _plan)
from . import (_kernel_choice, _layer, _library, _native, _routing, _subpixel, _via_nxc,
               functional as _functional)

__all__ = ["Epilogue", "NO_EPILOGUE", "REPACKS", "applied", "describe", "disable", "enable", "epilogue_of",
           "find", "forward", "forward_plain", "refresh"]

_TRANSPOSED = (torch.nn.ConvTranspose1d, torch.nn.ConvTranspose2d, torch.nn.ConvTranspose3d)
_NORMS = {1: torch.nn.BatchNorm1d, 2: torch.nn.BatchNorm2d, 3: torch.nn.BatchNorm3d}
#: torch.nn's convolutions a layer hands channels-last data to (1-D data has no such layout).
_CONVS = {2: torch.nn.Conv2d, 3: torch.nn.Conv3d}


class Epilogue(NamedTuple):
    """What a converted layer computes after its op in eval: the BatchNorm folded into it
    and the activation fused as its post-op (None: none); and the transposed convolution,
    or torch.nn's 2-D or 3-D convolution, that alone reads what it writes (None: none), for
    which it writes it channels-last (the layout both kernels read and write: no reorder
    between them; such a convolution gives its result the stock layout: ``_restoring_forward``)."""

    bn: Optional[torch.nn.Module]
    act: Optional[torch.nn.Module]
    next_layer: Optional[torch.nn.Module] = None


def post_of(act: torch.nn.Module) -> Optional[tuple[str, dict[str, float]]]:
    """The oneDNN post-op (kind, attributes) that computes activation module `act`, or None."""
    cls = _unfolded(type(act))
    made: Optional[_post.PostOp] = None
    if cls is torch.nn.ReLU:
        made = _post.relu()
    elif cls is torch.nn.LeakyReLU:
        made = _post.leaky_relu(act.negative_slope)
    elif cls is torch.nn.GELU and act.approximate == "none":
        made = _post.gelu()
    elif cls is torch.nn.Tanh:
        made = _post.tanh()
    elif cls is torch.nn.Sigmoid:
        made = _post.sigmoid()
    elif cls is torch.nn.ELU:
        made = _post.elu(act.alpha)
    elif cls is torch.nn.Hardswish:
        made = _post.hardswish()
    elif cls is torch.nn.Mish:
        made = _post.mish()
    elif cls in (torch.nn.ReLU6, torch.nn.Hardtanh):
        made = _post.clamp(act.min_val, act.max_val)
    return None if made is None else (made.kind, dict(made.attrs))


# --- where: the model's structure -------------------------------------------------------


def _is_norm_for(bn: Any, conv: torch.nn.Module) -> bool:
    nsp = len(conv.kernel_size)
    return type(bn) in (_NORMS[nsp], _folded_classes.get(_NORMS[nsp])) and \
        bn.num_features == conv.out_channels and bn.track_running_stats


def find(model: torch.nn.Module) -> list[tuple[torch.nn.Module, Epilogue]]:
    """Each transposed convolution of `model` with the BatchNorm and activation modules
    that read only its result, in the graph torch.fx traces of the model (every
    transposed convolution a leaf), else in ``nn.Sequential`` children; modules reached
    by one path only. One whose structure neither shows gets nothing folded or fused (an
    empty epilogue, ``NO_EPILOGUE``: ``convert`` leaves such a layer plain, which packs its
    weights in eval all the same, ``forward_plain``)."""
    once = {id(m) for m in _counted(model)}
    named = dict(model.named_modules())
    found: dict[int, tuple[torch.nn.Module, Epilogue]] = {}
    try:
        graph = _routing._Tracer().trace(model)
    except Exception:  # noqa: BLE001 - any failure of tracing: the Sequential children only
        graph = None
    if graph is not None:  # (a module the forward calls twice is not folded either)
        calls: dict[Any, int] = {}
        for node in graph.nodes:
            if node.op == "call_module":
                calls[node.target] = calls.get(node.target, 0) + 1
        once &= {id(named[t]) for t, n in calls.items() if n == 1 and t in named}
        for node in graph.nodes:
            conv = named.get(node.target) if node.op == "call_module" else None
            if isinstance(conv, _TRANSPOSED) and id(conv) in once:
                chain: list[Any] = []  # the modules that read only the last one's result
                nodes = [node]
                while len(nodes[-1].users) == 1 and len(chain) < 3:
                    after = next(iter(nodes[-1].users))
                    if after.op != "call_module" or len(after.args) != 1 or after.kwargs:
                        break
                    chain.append(named.get(after.target))
                    nodes.append(after)
                found[id(conv)] = (conv, _epilogue(conv, chain, once))
    else:
        for seq in model.modules():
            if isinstance(seq, torch.nn.Sequential):
                children = list(seq)
                for i, conv in enumerate(children):
                    if isinstance(conv, _TRANSPOSED) and id(conv) in once:
                        found[id(conv)] = (conv, _epilogue(conv, children[i + 1:i + 4], once))
    for m in model.modules():
        if isinstance(m, _TRANSPOSED) and id(m) in once and id(m) not in found:
            found[id(m)] = (m, Epilogue(None, None, None))
    return list(found.values())


def _counted(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The modules of `model` reached by exactly one path."""
    seen: dict[int, int] = {}
    modules = {}
    for _, m in model.named_modules(remove_duplicate=False):
        seen[id(m)] = seen.get(id(m), 0) + 1
        modules[id(m)] = m
    return [modules[i] for i, n in seen.items() if n == 1]


def _epilogue(conv: torch.nn.Module, after: list[Any], once: set[int]) -> Epilogue:
    """`conv`'s epilogue among the modules `after` it (each reading only the one before):
    a BatchNorm for its channels, then an activation ``post_of`` computes; and whether the
    module after them is a transposed convolution."""
    bn = act = None
    rest = [m if m is not None and id(m) in once else None for m in after]
    if rest[:1] and _is_norm_for(rest[0], conv):
        bn, rest = rest[0], rest[1:]
    if rest[:1] and rest[0] is not None and post_of(rest[0]) is not None:
        act, rest = rest[0], rest[1:]
    return Epilogue(bn, act, rest[0] if rest[:1] and _reads_channels_last(rest[0], conv) else None)


def _reads_channels_last(m: Any, conv: torch.nn.Module) -> bool:
    """Whether module `m`, reading `conv`'s result, computes it in channels-last in place:
    a transposed convolution, or torch.nn's own 2-D or 3-D convolution."""
    return isinstance(m, _TRANSPOSED) or _unfolded(type(m)) is _CONVS.get(len(conv.kernel_size))


# --- the folded modules -----------------------------------------------------------------

_FOLDED = "_onednn_folded_into"  # on a folded module: the layer that applies it in eval
_EPILOGUE = "_onednn_epilogue"   # on a layer: its Epilogue
_folded_classes: dict[type, type] = {}


#: A BatchNorm whose statistics are in one of these dtypes (a model cast to bf16/f16; under
#: autocast they stay f32) is not folded, and the layer's epilogue runs as the stock model
#: runs it: folding rounds ``w * g / sqrt(v + eps)`` to that dtype, once more than the stock
#: model rounds its weights, and where a layer's sums cancel (large products, a small result)
#: that moved outputs by 0.18 of the largest where the stock model's own error was 0.01 (bf16,
#: ConvTranspose2d(128, 512, (4, 5), 7) with randn weights, BatchNorm and Hardtanh, against a
#: float64 run; 0.0099 against 0.0035 with PyTorch's default initialisation).
UNFOLDED_STATISTICS = (torch.bfloat16, torch.float16)


def applied(layer: torch.nn.Module, epilogue: Epilogue) -> bool:
    """Whether `layer` applies its epilogue now (``forward``): it and its BatchNorm are in eval,
    and the BatchNorm's statistics are not bf16/f16 (``UNFOLDED_STATISTICS``)."""
    bn = epilogue.bn
    return not layer.training and (bn is None or (not bn.training and (
        bn.running_var is None or bn.running_var.dtype not in UNFOLDED_STATISTICS)))


def _folded_forward(self: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
    layer = self.__dict__.get(_FOLDED)
    epilogue = None if layer is None else layer.__dict__.get(_EPILOGUE)
    if epilogue is not None and applied(layer, epilogue):
        return args[0]  # the layer's result already holds this module's work
    return super(type(self), self).forward(*args, **kwargs)


def _restoring_forward(self: torch.nn.Module, input: torch.Tensor) -> torch.Tensor:
    out = super(type(self), self).forward(input)
    layer = self.__dict__.get(_FOLDED)
    epilogue = None if layer is None else layer.__dict__.get(_EPILOGUE)
    if epilogue is None or not applied(layer, epilogue):
        return out
    # The layout stock gives: PyTorch's rule on the stock input's and the weight's
    if torch.compiler.is_compiling():
        contiguous = _handed_in_trace.pop(id(self), None) == LAYOUT_HANDED
    else:
        handed = _kept(_handed, self)
        contiguous = handed is not None and handed[0]() is input and handed[1] == torch.contiguous_format
    return out.contiguous(memory_format=_native.memory_format(self.weight)) if contiguous else out


def folded(cls: type) -> type:
    """`cls` (a BatchNorm or an activation) with a forward that returns its input where the
    layer it is folded into applies it, or (torch.nn's convolution, which that layer hands
    channels-last data) one that gives its result the layout the stock model has; pickled
    as `cls` plus the swap."""
    made = _folded_classes.get(cls)
    if made is None:
        forward = _restoring_forward if cls in _CONVS.values() else _folded_forward
        made = _folded_classes[cls] = type(cls.__name__, (cls,), {
            "__module__": cls.__module__, "__qualname__": cls.__qualname__, "__doc__": cls.__doc__,
            "forward": forward, "_onednn_unfolded": cls, "__reduce_ex__": _reduce_ex})
    return made


def _unfolded(cls: type) -> type:
    return getattr(cls, "_onednn_unfolded", cls)


def _reduce_ex(self: torch.nn.Module, protocol: int) -> Any:
    reduced = object.__reduce_ex__(self, protocol)
    return (_rebuild, (type(self)._onednn_unfolded,)) + tuple(reduced[2:])


def _rebuild(cls: type) -> torch.nn.Module:
    return object.__new__(folded(cls))


def enable(layer: torch.nn.Module, epilogue: Epilogue) -> None:
    """Give converted `layer` its epilogue (``forward`` runs it in eval)."""
    disable(layer)
    for m in (epilogue.bn, epilogue.act, _stock_conv(epilogue)):
        if m is not None:
            m.__class__ = folded(_unfolded(type(m)))
            m.__dict__[_FOLDED] = layer
    layer.__dict__[_EPILOGUE] = epilogue


def disable(layer: torch.nn.Module) -> None:
    """Undo ``enable``: the layer and its folded modules back to their own forward."""
    epilogue = layer.__dict__.pop(_EPILOGUE, None)
    for m in (epilogue.bn, epilogue.act, _stock_conv(epilogue)) if epilogue is not None else ():
        if m is not None:
            m.__class__ = _unfolded(type(m))
            m.__dict__.pop(_FOLDED, None)
            _handed.pop(id(m), None)
    _packed.pop(id(layer), None)
    for t in layer.parameters():  # what torch.compile's calls packed
        _packed_by_weight.pop(id(t), None)


def _stock_conv(epilogue: Epilogue) -> Optional[torch.nn.Module]:
    """The epilogue's next layer where it is torch.nn's convolution (not a transposed one)."""
    m = epilogue.next_layer
    return None if m is None or isinstance(m, _TRANSPOSED) else m


def epilogue_of(layer: torch.nn.Module) -> Optional[Epilogue]:
    return layer.__dict__.get(_EPILOGUE)


def _plain(epilogue: Epilogue) -> bool:
    """Whether nothing is folded into the layer or fused after it (under torch.compile,
    Inductor chooses the layout it hands on)."""
    return epilogue.bn is None and epilogue.act is None


def _torch_in_graph(layer: torch.nn.Module, input: torch.Tensor, epilogue: Epilogue) -> bool:
    """Whether torch's convolution, and the activation module after it, would compute
    `layer`'s inference call on `input` in torch.compile's graph
    (``_kernel_choice.plain_in_graph`` says where they do): where nothing is folded into the
    layer or fused after it; and in float32 where kernel == stride with only an activation
    after it (``_activation_apart``); not a plain layer whose call runs on channels-last
    copies (``_via_nxc.routed_in_graph``)."""
    return (_plain(epilogue) and not _via_nxc.routed_in_graph(layer, input)) \
        or _activation_apart(layer, input, epilogue)


def _activation_apart(layer: torch.nn.Module, input: torch.Tensor, epilogue: Epilogue) -> bool:
    """Float32 (no autocast), kernel == stride, no BatchNorm, an activation: Inductor runs
    stock's layer channels-last on PyTorch's oneDNN 3.12, whose kernel there is faster than
    3.2's by about what fusing the activation saves. The Mask R-CNN head compiled
    (``ConvTranspose2d(256, 256, 2, 2)`` + ReLU, 32 RoIs, Zen 4, three in-process A/Bs of
    21-31 rounds): the registered op with the ReLU fused took 1.02-1.04x this form's time
    (converted compiled 1.03-1.04x stock compiled with it, 1.00-1.01x with this); in bf16
    autocast the op was the faster (0.97x), so it stays there."""
    return _apart_in_f32(layer, epilogue) and input.dtype == torch.float32 and not torch.is_autocast_enabled("cpu")


def _apart_in_f32(layer: torch.nn.Module, epilogue: Epilogue) -> bool:
    """Whether ``_activation_apart`` holds for `layer`'s float32 calls."""
    return epilogue.bn is None and epilogue.act is not None and tuple(layer.kernel_size) == tuple(layer.stride)


def describe(layer: torch.nn.Module) -> str:
    """What inference does for `layer`, and torch.compile for its training calls (``report``)."""
    epilogue = epilogue_of(layer)
    # (training calls in torch.compile's graph: ``_layer.forward_with``; a plain layer's
    # eval calls there: ``forward_plain``)
    compiled = _kernel_choice.training_in_graph(True)
    # (only a layer some of whose calls can run on channels-last copies on this CPU family
    # keeps the op for them: ``_via_nxc.routed_in_graph``)
    copies = " but for calls on channels-last copies" if _via_nxc.may_route(layer) else ""
    if epilogue is None:
        return "in eval without gradients: weights packed once two calls in a row had them unchanged" + (
            f"; under torch.compile torch's convolution (measured faster there){copies}" if compiled else "")
    training = "; under torch.compile its training calls torch's convolution (measured faster there)" \
        if compiled else ""
    done = ["weights packed once"]
    bn = epilogue.bn
    if bn is not None and bn.running_var is not None and bn.running_var.dtype in UNFOLDED_STATISTICS:
        return "inference in eval: " + ", ".join(done + [
            f"{type(bn).__name__} not folded (not while its statistics are bf16/f16: the layer, it and what "
            "follows run as in the stock model)"]) + training
    if bn is not None:
        done.append(f"{type(bn).__name__} folded")
    if epilogue.act is not None:
        done.append(f"{type(epilogue.act).__name__} fused")
    if epilogue.next_layer is not None:
        done.append("its result channels-last for the next layer")
    if _kernel_choice.plain_in_graph(_plain(epilogue)):
        done.append(f"under torch.compile torch's convolution (nothing to fold or fuse){copies}")
    elif _kernel_choice.plain_in_graph(_apart_in_f32(layer, epilogue)):
        done.append("under torch.compile in float32 torch's convolution and the activation apart "
                    "(kernel == stride: measured faster there)")
    return "inference in eval: " + ", ".join(done) + training


def lowering(layer: torch.nn.Module) -> str:
    """How oneDNN computes `layer`'s packed inference calls (``Operation.lowering``; for
    ``report``): "" where none was packed, or torch.nn's kernel computes them."""
    packed = _kept(_packed, layer)
    return packed.lowering if type(packed) is _Packed else ""


def refresh(model: torch.nn.Module) -> None:
    """Drop every packed weight of `model`'s layers: for writes through ``param.data``,
    which PyTorch's version counters do not see; and a layer that packed ``REPACKS`` times
    packs again."""
    for m in model.modules():
        _packed.pop(id(m), None)
    for t in model.parameters():
        _packed_by_weight.pop(id(t), None)


# --- the calls ---------------------------------------------------------------------------


class Norm(NamedTuple):
    """An eval BatchNorm's tensors (``norm_of``): what folding reads."""

    weight: Optional[torch.Tensor]  # None: not affine
    bias: Optional[torch.Tensor]
    mean: torch.Tensor
    var: torch.Tensor
    eps: float
    # num_batches_tracked: a train-mode pass writes the statistics in its kernel with no
    # version change, and counts this up in Python (a version change); None: not tracked
    tracked: Optional[torch.Tensor] = None


def norm_of(bn: Optional[torch.nn.Module]) -> Optional[Norm]:
    return None if bn is None else Norm(bn.weight if bn.affine else None, bn.bias if bn.affine else None,
                                        bn.running_mean, bn.running_var, float(bn.eps),
                                        bn.num_batches_tracked)


class Geometry(NamedTuple):
    """A transposed convolution's attributes in torch.nn's terms."""

    stride: tuple
    padding: tuple
    output_padding: tuple
    dilation: tuple
    groups: int


def geometry_of(layer: torch.nn.Module) -> Geometry:
    return Geometry(tuple(layer.stride), tuple(layer.padding), tuple(layer.output_padding),
                    tuple(layer.dilation), layer.groups)


def fold(weight: torch.Tensor, bias: Optional[torch.Tensor], norm: Optional[Norm],
         groups: int) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
    """`weight` (IOX: ``(C_in, C_out/groups, *K)``) and `bias` with eval BatchNorm `norm`
    folded in (per output channel), by PyTorch's ops (differentiable)."""
    if norm is None:
        return weight, bias
    scale = torch.rsqrt(norm.var + norm.eps)
    if norm.weight is not None:
        scale = norm.weight * scale
    shift = -norm.mean * scale
    if norm.bias is not None:
        shift = shift + norm.bias
    c_in, per_group = weight.shape[0], weight.shape[1]
    ones = [1] * (weight.dim() - 2)
    folded_w = (weight.reshape(groups, c_in // groups, per_group, *weight.shape[2:])
                * scale.reshape(groups, 1, per_group, *ones)).reshape(weight.shape)
    folded_b = shift if bias is None else bias * scale + shift
    return folded_w, folded_b.to(weight.dtype)


def _sources(layer: torch.nn.Module, epilogue: Epilogue) -> list[torch.Tensor]:
    """The tensors whose values the packed weights derive from: the layer's parameters (a
    parametrized weight's originals among them) and its BatchNorm's parameters and
    running statistics."""
    tensors = _tensors_of(layer._modules, layer._parameters, layer.parameters)
    if epilogue.bn is not None:
        # (a train-mode pass writes the running statistics in its kernel, with no version
        # change: num_batches_tracked's, counted up in Python, says it)
        bn = epilogue.bn
        tensors += _tensors_of(bn._modules, bn._parameters, bn.parameters)
        tensors += _tensors_of(bn._modules, bn._buffers, bn.buffers)
    return tensors


def _tensors_of(modules: dict, own: dict, every: Any) -> list[torch.Tensor]:
    """A module's parameters or buffers: from its own dict `own` where it has no submodules
    (asked on every call: ``parameters()`` walks the module tree, 2-3 us a module), else
    `every`'s (a parametrization's originals are in a submodule)."""
    if modules:
        return list(every())
    return [t for t in own.values() if t is not None]


Stamp = list  # [(a weak reference to a tensor, its version, its data pointer)]


def _stamp(tensors: list[torch.Tensor]) -> Stamp:
    # (weak: a cache entry must not keep a replaced parameter, or the model, alive; an
    # inference tensor has no version: the caller packs for one call only, ``_unversioned``)
    return [(weakref.ref(t), -1 if t.is_inference() else t._version, t.data_ptr()) for t in tensors]


def _unversioned(tensors: list[torch.Tensor]) -> bool:
    """Whether any of `tensors` is an inference tensor (made under ``torch.inference_mode``,
    as a model built there has its parameters): PyTorch keeps no version of one, so an
    in-place write under inference_mode would go unseen by a packed call's stamp."""
    return any(t.is_inference() for t in tensors)


def _same(stamp: Stamp, tensors: list[torch.Tensor]) -> bool:
    if len(stamp) != len(tensors):
        return False
    for (ref, version, ptr), now in zip(stamp, tensors):
        if ref() is not now or now._version != version or now.data_ptr() != ptr:
            return False
    return True


class _Packed:
    """One call's computation (op, BatchNorm folded, activation fused) with its folded
    weights and bias, for one input layout, dtype and thread count: a compiled partition
    with them as constants, run natively (``op``), or where the package lowers the
    geometry, the functional API's fused call on them (``fused``). ``lowering``: how
    oneDNN computes it (``Operation.lowering``), for ``report``."""

    __slots__ = ("key", "stamp", "op", "direct", "fused", "arrays", "out_shape", "out_strides",
                 "axes", "via", "dtype", "stock_format", "packs", "lowering")

    def __init__(self, key: tuple, stamp: Stamp, out_shape: tuple, out_strides: tuple,
                 axes: Optional[tuple], dtype: torch.dtype, stock_format: torch.memory_format,
                 op: Any = None, fused: Any = None, lowering: str = "", via: Optional[tuple] = None) -> None:
        self.key, self.stamp, self.op, self.fused = key, stamp, op, fused
        # NCX data computed on channels-last copies (``_via_nxc``): `axes` are then its NXC axes
        self.via = via
        self.lowering = lowering + (_via_nxc.NOTE if via is not None and lowering else "")
        self.packs = 0  # (``_packed_call``: how many times the layer packed, this one included)
        self.stock_format = stock_format  # the memory format the stock layer writes
        self.out_shape, self.out_strides, self.axes, self.dtype = out_shape, out_strides, axes, dtype
        self.arrays = () if op is None else tuple(op.constants[i] for i in sorted(op.constants))
        self.direct = None if op is None else op.direct_call(
            out_shape if axes is None else tuple(out_shape[a] for a in axes),
            _arrays.numpy_dtype(_DTYPE_NAMES[dtype]))

    def run(self, input: torch.Tensor) -> torch.Tensor:
        out, target = _native.result_strided(self.out_shape, self.out_strides, self.dtype)
        if self.via is not None:
            return self._run_via_nxc(input, out, target)
        x = _native.view(input)
        if self.axes is not None:
            x, target = x.transpose(self.axes), target.transpose(self.axes)
        self._compute(x, target)
        return out

    def _run_via_nxc(self, input: torch.Tensor, out: torch.Tensor, result: np.ndarray) -> torch.Tensor:
        """``run`` on this thread's channels-last copies of the input and the result."""
        via = self.via
        assert via is not None
        target = _via_nxc.scratch_nxc("result", self.out_shape, via)
        self._compute(_via_nxc.to_nxc(input, via, "input"), target)
        _via_nxc.from_nxc(target, result, via)
        return out

    def _compute(self, x: np.ndarray, target: np.ndarray) -> None:
        if self.op is None:
            self.fused(x, target)
        elif self.direct is None or self.direct.run(_compiled.stream(), (x,) + self.arrays, target) is None:
            self.op.execute((x,) + self.arrays, target)


_DTYPE_NAMES = {torch.float32: "f32", torch.bfloat16: "bf16", torch.float16: "f16"}


class _OnTorch:
    """A layer's inference call that torch.nn's kernel computes faster (``_kernel_choice``),
    kept as a packed call is (``key``, ``stamp``): its BatchNorm folded into the weights
    once, then torch.nn's function and the activation module's own forward. Its result is
    in torch.nn's layout: nothing is handed on (``stock_format`` None). The activation is
    held weakly: the folded modules refer to their layer, which this must not keep alive."""

    __slots__ = ("key", "stamp", "weight", "bias", "act", "function", "attrs", "packs")
    stock_format = None

    def __init__(self, layer: torch.nn.Module, key: tuple, sources: list[torch.Tensor],
                 weight: torch.Tensor, bias: Optional[torch.Tensor], epilogue: Epilogue) -> None:
        self.key, self.stamp, self.packs = key, _stamp(sources), 0
        with torch.no_grad():
            self.weight, self.bias = fold(weight, bias, norm_of(epilogue.bn), layer.groups)
        self.act = None if epilogue.act is None else weakref.ref(epilogue.act)
        self.function = _layer.torch_function(layer)
        self.attrs = (layer.stride, layer.padding, layer.output_padding, layer.groups, layer.dilation)

    def run(self, input: torch.Tensor) -> torch.Tensor:
        y = self.function(input, self.weight, self.bias, *self.attrs)
        return y if self.act is None else _activated(self.act(), y)


def _drop(cache: dict, key: int, ref: Any) -> None:
    entry = cache.get(key)
    if entry is not None and entry[0] is ref:
        del cache[key]


def _keep(cache: dict, owner: Any, packed: Any) -> None:
    """``cache[id(owner)]``: `packed`, while `owner` lives."""
    cache[id(owner)] = (weakref.ref(owner, functools.partial(_drop, cache, id(owner))), packed)


def _kept(cache: dict, owner: Any) -> Any:
    entry = cache.get(id(owner))
    return entry[1] if entry is not None and entry[0]() is owner else None


# id(layer) -> (a weak reference to the layer, its _Packed) for a layer's eager calls;
# id(weight) -> the same for ``conv_transpose_inference`` (torch.compile's calls). A forked
# child packs again.
_packed: dict[int, tuple[Any, _Packed | _OnTorch | _Seen]] = {}
_packed_by_weight: dict[int, tuple[Any, _Packed]] = {}
os.register_at_fork(after_in_child=_packed.clear)
os.register_at_fork(after_in_child=_packed_by_weight.clear)


def forward(layer: torch.nn.Module, input: torch.Tensor, epilogue: Epilogue) -> torch.Tensor:
    """``layer(input)`` with its epilogue, in eval: packed where nothing records or traces
    the call, under torch.compile the registered ``conv_transpose_inference`` (which packs
    when it runs), else composed of PyTorch's ops and the layer's (``_composed``)."""
    if torch.compiler.is_compiling():
        return _in_graph(layer, input, epilogue)
    # The sources, not the weight: a parametrized weight is computed on every read, and
    # the packed call needs it only when it packs.
    sources = _sources(layer, epilogue)
    if _recorded(input, sources) or not _library.untraced(input):  # (plain CPU tensors only, nothing tracing)
        return _composed(layer, input, *_layer.weight_and_bias(layer), epilogue)
    return _packed_call(layer, input, epilogue, sources, deferred=False)


def _in_graph(layer: torch.nn.Module, input: torch.Tensor, epilogue: Epilogue) -> torch.Tensor:
    """``forward`` while torch.compile traces it: torch's convolution, the registered
    ``conv_transpose_inference``, or where gradients are recorded the composed ops. Dynamo
    guards every read of the trace and runs the guards on every call of the compiled frame,
    so the sources are read only where gradients may be recorded (the eager path's reads
    put 421 guard lines in EnCodec's ConvTranspose1d block's frame, this path 293, stock's
    layer 207)."""
    if not (torch.is_grad_enabled() and _recorded(input, _sources(layer, epilogue))):
        if _kernel_choice.plain_in_graph(_torch_in_graph(layer, input, epilogue)):  # torch's convolution
            y = _layer.torch_nn(layer, input, *_layer.weight_and_bias(layer))
            return y if epilogue.act is None else _activated(epilogue.act, y)
        if _compiles_packed(layer, input) and not _kernel_choice.by_rule(layer, input, layer.weight):
            return _compiled_call(layer, input, epilogue)
    return _composed(layer, input, *_layer.weight_and_bias(layer), epilogue)


#: The epilogue of a layer ``convert`` gave none (``forward_plain``): nothing folded or fused.
NO_EPILOGUE = Epilogue(None, None, None)


def forward_plain(layer: torch.nn.Module, input: torch.Tensor) -> torch.Tensor:
    """``layer(input)`` in eval for a layer ``convert(model)`` gave no epilogue (no
    ``inference=True``): where nothing records or traces the call and oneDNN's kernel
    computes it, with its weights packed as ``forward`` packs them, once a second call in a
    row finds them unchanged (in eval without gradients a model's weights rarely change;
    where they change before every call, packing would compile a partition each time);
    under torch.compile as ``forward`` with nothing folded or fused (torch's convolution in
    the graph, ``_kernel_choice.plain_in_graph``: the training op there ran MONAI's GAN
    generator 1.31x stock compiled); every other call as ``_layer.forward_with`` computes
    it. (The caller tried the layer's lane first: ``_layer.on_lane``.)"""
    if torch.compiler.is_compiling():
        return _in_graph(layer, input, NO_EPILOGUE)
    sources = _sources(layer, NO_EPILOGUE)
    if _recorded(input, sources) or not _library.untraced(input):
        return _layer.forward_with(layer, input, *_layer.weight_and_bias(layer))
    return _packed_call(layer, input, NO_EPILOGUE, sources, deferred=True)


def _recorded(input: torch.Tensor, sources: list[torch.Tensor]) -> bool:
    """Whether autograd records a call on `input` and the layer's `sources`."""
    return torch.is_grad_enabled() and (input.requires_grad or any(t.requires_grad for t in sources))


class _Seen:
    """A deferred layer's call seen once (``forward_plain``): its key and its sources'
    stamp, to pack on the next call if both are the same. `packs`: how many times the layer
    packed before (``REPACKS``)."""

    __slots__ = ("key", "stamp", "packs")

    def __init__(self, key: tuple, stamp: Stamp, packs: int) -> None:
        self.key, self.stamp, self.packs = key, stamp, packs


#: How many times a layer (under torch.compile: a weight) packs its weights, on changes of
#: its parameters or of its calls' key; after that its calls fold them once per change but
#: do not pack them (``_pack``'s `constant`: oneDNN reorders them on every call, as in
#: training, and keeps nothing), until ``refresh``. oneDNN 3.2 keeps every packed
#: partition's reordered weights in its constant-tensor cache for the process's life (the
#: cache has no capacity there, and a destroyed partition's entry stays): a DCGAN generator
#: (14 MB of ConvTranspose weights) packed again after each of 30 weight changes held
#: 470 MB more, none with the cache off.
REPACKS = 8


def _packed_call(layer: torch.nn.Module, input: torch.Tensor, epilogue: Epilogue,
                 sources: list[torch.Tensor], deferred: bool) -> torch.Tensor:
    """``forward``'s call where nothing records or traces it: the layer's packed call, made
    or kept (`deferred`: made on the second call in a row with the same key and sources)."""
    # (autocast asked of any device first: one call without arguments, where a device's
    # name is parsed; the hot path's calls each cost 5-10 us with a model's caches cold)
    autocast = torch.get_autocast_dtype("cpu") if _layer._any_autocast() and torch.is_autocast_enabled("cpu") \
        else None
    # The input's memory format as the stock model has it: another layer writes its result
    # channels-last for this one (Epilogue.next_layer), where stock writes it as its rule says.
    handed = _kept(_handed, layer) if _handed else None
    stock_format = handed[1] if handed is not None and handed[0]() is input else None
    # (the layer's attributes as it has them: a changed padding is another call; `deferred`:
    # a plain call with the epilogue unapplied, a BatchNorm in training mode, is another)
    key = (input.shape, input.dtype, input.stride(), autocast, stock_format, layer.stride,
           layer.padding, layer.output_padding, layer.dilation, layer.groups, deferred) \
        + _compiled.call_threads()
    packed = _kept(_packed, layer)
    fresh = packed is not None and packed.key == key and _same(packed.stamp, sources)
    if not fresh or type(packed) is _Seen:
        weight, bias = _layer.weight_and_bias(layer)
        if _unversioned(sources):  # no change to them would be seen: nothing is kept
            return _composed(layer, input, weight, bias, epilogue, stock_format)
        packs = 0 if packed is None else packed.packs
        if deferred and not fresh:
            _keep(_packed, layer, _Seen(key, _stamp(sources), packs))
            return _composed(layer, input, weight, bias, epilogue, stock_format)
        if autocast is None and _layer.runs_torch_nn(layer, input, weight, bias):
            if deferred:  # (``_layer``'s call: the next one takes the layer's lane)
                return _composed(layer, input, weight, bias, epilogue, stock_format)
            packed = _OnTorch(layer, key, sources, weight, bias, epilogue)  # the faster kernel
        else:  # (past REPACKS, folded but not packed: oneDNN would keep every packing's weights)
            packed = _pack(geometry_of(layer), input, weight, bias, norm_of(epilogue.bn),
                           None if epilogue.act is None else post_of(epilogue.act), key, sources,
                           autocast, stock_format, epilogue.next_layer is not None, packs < REPACKS)
            packs = min(packs + 1, REPACKS)
        if packed is None:
            return _composed(layer, input, weight, bias, epilogue, stock_format)
        packed.packs = packs
        _keep(_packed, layer, packed)
    out = packed.run(input.to(autocast) if autocast is not None and _functional._autocast_eligible(input, autocast)
                     else input)
    if epilogue.next_layer is not None:
        _keep(_handed, epilogue.next_layer, (weakref.ref(out), packed.stock_format))
    return out


#: id(a layer that another hands its result to channels-last) -> (a weak reference to the
#: layer, (a weak reference to that result, the memory format the stock model gives it)),
#: as ``_keep`` keeps it. Beside the layer, not in it: a weak reference does not pickle.
_handed: dict[int, tuple[Any, tuple[Any, torch.memory_format]]] = {}


def _composed(layer: torch.nn.Module, input: torch.Tensor, weight: torch.Tensor,
              bias: Optional[torch.Tensor], epilogue: Epilogue,
              stock_format: Optional[torch.memory_format] = None) -> torch.Tensor:
    """The layer and its epilogue as PyTorch's ops and the package's layer compose them
    (differentiable: the folding is torch's, the op the package's, the activation the
    module's own class's forward); for an input another layer handed on channels-last
    (`stock_format`: the stock model's input's format), in the layout the stock model's
    result has."""
    w, b = fold(weight, bias, norm_of(epilogue.bn), layer.groups)
    y = _layer.forward_with(layer, input, w, b)
    y = y if epilogue.act is None else _activated(epilogue.act, y)
    if stock_format is None:
        return y
    return y.contiguous(memory_format=_stock_result_format(stock_format, weight))


def _stock_result_format(stock_format: torch.memory_format, weight: torch.Tensor) -> torch.memory_format:
    """The memory format of the stock layer's result for an input of `stock_format`
    (PyTorch's rule: channels-last where the input or the weight is)."""
    return stock_format if stock_format != torch.contiguous_format else _native.memory_format(weight)


def _activated(act: torch.nn.Module, y: torch.Tensor) -> torch.Tensor:
    """`y` through activation module `act` as its own class computes it (its folded
    class's forward returns its input)."""
    return _unfolded(type(act)).forward(act, y)  # type: ignore[attr-defined]


# --- under torch.compile: the registered op ---------------------------------------------


def _compiles_packed(layer: torch.nn.Module, input: torch.Tensor) -> bool:
    """Whether torch.compile's graph takes ``conv_transpose_inference`` for `layer`: its
    weight and bias are parameters (a parametrized weight is a new tensor on every call:
    the op would pack on every call; the composed ops fold it as they go), and the input is
    a batch of a dtype oneDNN takes on the CPU."""
    params = layer._parameters
    return isinstance(params.get("weight"), torch.nn.Parameter) and (
        params.get("bias") is None or isinstance(params["bias"], torch.nn.Parameter)) and \
        input.dim() == len(layer.kernel_size) + 2 and input.dtype in _DTYPE_NAMES and \
        params["weight"].dtype in _DTYPE_NAMES and input.device.type == "cpu"


def _compiled_call(layer: torch.nn.Module, input: torch.Tensor, epilogue: Epilogue) -> torch.Tensor:
    """``forward`` in torch.compile's graph: ``conv_transpose_inference`` on the layer's
    tensors, in autocast's dtype where the region casts (the op computes in its input's)."""
    if torch.is_autocast_enabled("cpu") and input.dtype == torch.float32:
        input = input.to(torch.get_autocast_dtype("cpu"))
    # The layout, settled while torch.compile traces (a Python dict it replays as a side
    # effect): channels-last for the next layer as eager hands it; that layer then writes
    # what stock gives it. (Fake tensors have no weak references for eager's check.)
    handed = _handed_in_trace.pop(id(layer), None)
    if epilogue.next_layer is not None:
        stock = handed if handed is not None else \
            LAYOUT_HANDED if _native.memory_format(input, layer.weight) == torch.contiguous_format else LAYOUT_STOCK
        _handed_in_trace[id(epilogue.next_layer)] = stock
        layout = LAYOUT_CHANNELS_LAST
    else:
        layout = LAYOUT_STOCK if handed is None else handed
    norm = norm_of(epilogue.bn)
    post = None if epilogue.act is None else post_of(epilogue.act)
    return conv_transpose_inference(
        input, layer.weight, layer.bias, *((None,) * 5 if norm is None else norm[:4] + (norm.tracked,)),
        config_of(geometry_of(layer), 0.0 if norm is None else norm.eps, post, layout))


#: ``conv_transpose_inference``'s layouts: PyTorch's rule on (input, weight), as the stock
#: layer writes; channels-last (for the next layer, where it has the format); PyTorch's rule
#: on the weight alone (a layer handed channels-last data whose stock form is contiguous).
LAYOUT_STOCK, LAYOUT_CHANNELS_LAST, LAYOUT_HANDED = 0, 1, 2
_handed_in_trace: dict[int, int] = {}  # id(layer) -> its layout, while torch.compile traces


def run_registered(input: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor],
                   norm: Optional[Norm], post: Optional[tuple[str, dict[str, float]]],
                   geometry: Geometry, layout: int = LAYOUT_STOCK) -> torch.Tensor:
    """``conv_transpose_inference``'s implementation: packed once per weight (its other
    tensors' stamps and the call's key checked on every call, as a layer's are)."""
    sources = [t for t in (weight, bias) + (() if norm is None else norm[:4] + (norm.tracked,))
               if t is not None]
    key = (input.shape, input.dtype, input.stride(), geometry, norm is not None and norm.eps,
           post, layout) + _compiled.call_threads()
    packed = _kept(_packed_by_weight, weight)
    if packed is None or packed.key != key or not _same(packed.stamp, sources):
        # (packed at most REPACKS times per weight; for one call only, never)
        packs = 0 if packed is None else packed.packs
        once = _unversioned(sources)
        packed = _pack(geometry, input, weight, bias, norm, post, key, sources, None,
                       torch.contiguous_format if layout == LAYOUT_HANDED else None,
                       layout == LAYOUT_CHANNELS_LAST, packs < REPACKS and not once)
        if packed is None:
            raise TypeError("conv_transpose_inference: input must be a batch of "
                            f"{len(weight.shape) - 2}-D data of a dtype oneDNN computes (float32, "
                            f"bfloat16, float16) on the CPU, got {input.dtype} {tuple(input.shape)} "
                            f"on {input.device}")
        if once:  # for this call only: a change would go unseen
            return packed.run(input)
        packed.packs = min(packs + 1, REPACKS)
        _keep(_packed_by_weight, weight, packed)
    return packed.run(input)


def config_of(geometry: Geometry, eps: float, post: Optional[tuple[str, dict[str, float]]],
              layout: int) -> str:
    """``conv_transpose_inference``'s attributes as one string, which the dispatcher hands
    its kernel as one object where lists of ints cost a conversion each (``graph_op``);
    floats as ``repr`` writes them, which ``float`` reads back exactly (``parsed_config``)."""
    def ints(values: tuple) -> str:
        return ",".join(str(v) for v in values)
    text = (f"stride={ints(geometry.stride)};padding={ints(geometry.padding)};"
            f"output_padding={ints(geometry.output_padding)};dilation={ints(geometry.dilation)};"
            f"groups={geometry.groups};layout={layout};bn_eps={float(eps)!r}")
    if post is not None:
        text += f";post={post[0]}" + "".join(f";{name}={float(value)!r}" for name, value in post[1].items())
    return text


_FIXED = ("stride", "padding", "output_padding", "dilation", "groups", "layout", "bn_eps")


@functools.lru_cache(maxsize=256)  # (a graph's few configs, each read on every call)
def parsed_config(config: str) -> tuple[Geometry, float, Optional[tuple[str, dict[str, float]]], int]:
    """(geometry, BatchNorm eps, post-op or None, layout) from ``config_of``'s string."""
    fields = [field.partition("=")[::2] for field in config.split(";")]
    names = tuple(name for name, _ in fields[:len(_FIXED)])
    if names != _FIXED or (fields[len(_FIXED):] and fields[len(_FIXED)][0] != "post"):
        raise ValueError(f"conv_transpose_inference: config must be 'stride=..;padding=..;"
                         f"output_padding=..;dilation=..;groups=..;layout=..;bn_eps=..[;post=..;"
                         f"<attribute>=..]' (config_of), got {config!r}")
    v = dict(fields[:len(_FIXED)])
    try:
        stride, padding, output_padding, dilation = (tuple(int(i) for i in v[name].split(","))
                                                     for name in _FIXED[:4])
        geometry = Geometry(stride, padding, output_padding, dilation, int(v["groups"]))
        post = None if len(fields) == len(_FIXED) else \
            (fields[len(_FIXED)][1], {name: float(value) for name, value in fields[len(_FIXED) + 1:]})
        return geometry, float(v["bn_eps"]), post, int(v["layout"])
    except ValueError:
        raise ValueError(f"conv_transpose_inference: config {config!r} has a value that is not a "
                         "number where one must be (config_of)") from None


@_library.graph_op("conv_transpose_inference", (
    "(Tensor input, Tensor weight, Tensor? bias, Tensor? bn_weight, Tensor? bn_bias, "
    "Tensor? bn_mean, Tensor? bn_var, Tensor? bn_tracked, str config) -> Tensor"))
def conv_transpose_inference(input: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor],
                             bn_weight: Optional[torch.Tensor], bn_bias: Optional[torch.Tensor],
                             bn_mean: Optional[torch.Tensor], bn_var: Optional[torch.Tensor],
                             bn_tracked: Optional[torch.Tensor], config: str) -> torch.Tensor:
    """A converted layer's inference in eval as torch.compile's graph holds it
    (``torch.ops.onednn_graph.conv_transpose_inference``): ConvTranspose (IOX weights,
    torch.nn's attributes) in its input's dtype, an eval BatchNorm folded into its weights
    and bias (``bn_mean`` None: none; ``bn_tracked`` its num_batches_tracked), then the
    oneDNN post-op the config names, if any, with the folded weights packed once
    (``run_registered``), its result in the config's layout (``LAYOUT_*``); the attributes
    in `config` (``config_of``). Not differentiable: the layer takes it only where nothing
    records gradients."""
    geometry, eps, post, layout = parsed_config(config)
    norm = None if bn_mean is None or bn_var is None else Norm(bn_weight, bn_bias, bn_mean, bn_var,
                                                               eps, bn_tracked)
    return run_registered(input, weight, bias, norm, post, geometry, layout)


@torch.library.register_fake("onednn_graph::conv_transpose_inference")
def _(input, weight, bias, bn_weight, bn_bias, bn_mean, bn_var,  # type: ignore[no-untyped-def]
      bn_tracked, config):
    g, _eps, _post, layout = parsed_config(config)
    shape = _native.conv_transpose_shape(input, weight, g.stride, g.padding, g.padding, g.output_padding,
                                         g.dilation, g.groups)
    if layout == LAYOUT_CHANNELS_LAST and input.dim() in _native._CHANNELS_LAST:
        return input.new_empty_strided(shape, _native.dense_strides(shape, _native._CHANNELS_LAST[input.dim()]))
    return _native.empty(shape, input, *((weight,) if layout == LAYOUT_HANDED else (input, weight)))


def _pack(geometry: Geometry, input: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor],
          norm: Optional[Norm], post: Optional[tuple[str, dict[str, float]]], key: tuple,
          sources: list[torch.Tensor], autocast: Optional[torch.dtype],
          stock_format: Optional[torch.memory_format], hands_on: bool,
          constant: bool = True) -> Optional[_Packed]:
    """The call of a transposed convolution of `geometry` on inputs like `input` with
    BatchNorm `norm` folded and activation `post` fused (its result channels-last where it
    `hands_on` to the next layer), its weights folded and packed once (not `constant`:
    folded once, then the functional API's fused call on them, which oneDNN reorders on
    every call and keeps nothing of: ``REPACKS``); None where the package does not compute
    it (a dtype oneDNN does not take, data of another rank)."""
    nsp = weight.dim() - 2
    # (the dtype autocast casts the input to: a float16 input too, as stock's layer has it)
    dtype = autocast if autocast is not None and (
        input.dtype == autocast or _functional._autocast_eligible(input, autocast)) else input.dtype
    if input.dim() != nsp + 2 or not input.is_cpu or dtype not in _DTYPE_NAMES:
        return None
    with torch.no_grad():
        w, b = fold(weight, bias, norm, geometry.groups)
        w = w.to(dtype).contiguous()
        b = None if b is None else b.to(dtype).contiguous()
    call = _functional._checked_conv_transpose(nsp, input.shape, dtype, w.shape, dtype,
                                               None if b is None else b.shape, None if b is None else dtype,
                                               geometry.stride, geometry.padding, geometry.output_padding,
                                               geometry.groups, geometry.dilation)
    fmt = _native.memory_format(input, weight)  # how the kernel reads the input
    # What the stock layer writes (PyTorch's rule, from the input's format in the stock
    # model); what this one writes: that, or channels-last for the next layer.
    stock = _stock_result_format(stock_format, weight) if stock_format is not None else fmt
    out_fmt = _native._CHANNELS_LAST.get(input.dim(), stock) if hands_on else stock
    if math.prod(input.shape[2:]) == 1:
        # One position per sample (a latent vector: DCGAN's first layer) lies the same in
        # either format: read as the result is written (channels-last data may run as the
        # MatMul, ``_impl.lowering.MATMUL_ONE_POSITION``).
        fmt = out_fmt
    axes = _native.nxc_axes(fmt, input.dim())
    out_shape = tuple(call.out_shape)
    out_strides = _native.dense_strides(out_shape, out_fmt)
    arrays: tuple = (_native.view(w),) + (() if b is None else (_native.view(b),))
    # NCX in and out, computed on channels-last copies where the rule says so (``_via_nxc``)
    via = _via_nxc.axes_for(call, fmt, arrays[0], alone=True) if out_fmt == fmt else None
    if via is not None:
        axes = via
        x = _via_nxc.scratch_nxc("input", tuple(input.shape), via)
    else:
        x = _native.oriented(_native.view(input.to(dtype) if input.dtype != dtype else input), axes)
    values = _native.with_format(call.values, axes)
    keywords = dict(zip(("strides", "pads_begin", "pads_end", "dilations", "auto_pad", "output_padding",
                         "groups", "data_format", "weights_format"), values))
    made = dict(key=key, stamp=_stamp(sources), out_shape=out_shape, out_strides=out_strides, axes=axes,
                dtype=dtype, stock_format=stock, via=via)
    posts = [] if post is None else [post]
    cp = None if call.empty else _plan.plan_call("ConvTranspose", ("src", "weights", "bias")[:1 + len(arrays)],
                                                 [x, *arrays], keywords)
    if cp is None:  # an empty batch: an empty result, nothing to compute
        return _Packed(**made, fused=lambda x, target: None)
    if constant:
        cp = _plan.with_constant_weights(cp)
    native = cp.native
    threads = _plan.threads(cp.size)
    busy = key[-2]
    if busy and not threads:
        threads = busy
    out_meta_shape = out_shape if axes is None else tuple(out_shape[a] for a in axes)
    reason = "inference: weights packed once" + (", its epilogue fused" if posts else "")
    if not constant:
        return _Packed(**made, fused=_fused_call(arrays, keywords, posts), lowering=native.lowering)
    if _lowering.formed(cp.way) == "subpixel":  # few output channels (_impl.subpixel_form)
        subpixel = _subpixel.SubpixelCall(
            cp.way.attrs, _arrays.dtype_name(x.dtype), _compiled.meta(x), out_meta_shape, arrays[0],
            arrays[1] if len(arrays) > 1 else None, posts, threads, reason)
        return _Packed(**made, fused=subpixel, lowering=_call.lowering_of(subpixel.op, cp.way))
    out_meta_strides = out_strides if axes is None else tuple(out_strides[a] for a in axes)
    if via is not None:  # (the result's copy: dense NXC)
        out_meta_strides = tuple(_native.dense_strides(out_meta_shape, torch.contiguous_format))
    if _lowering.formed(cp.way) == "matmul":
        # The MatMul is faster here (``_impl.lowering.preferred``: one input position, few
        # output channels at kernel == stride): the folded weights and bias made its
        # matrices once and compiled in as constants, the activation fused.
        form = _matmul_form.MatMulForm(cp.way.kind, cp.way.attrs, _arrays.dtype_name(x.dtype),
                                       [_compiled.meta(x)] + [_compiled.meta(a) for a in arrays],
                                       (out_meta_shape, out_meta_strides), {i + 1: a for i, a in enumerate(arrays)},
                                       cp.way.input_order, threads, posts=posts)
        kept = [form.constants[i + 1] for i in range(len(arrays))]  # (its own: not the folded tensors)
        return _Packed(**made, fused=lambda x, target: form.execute([x, *kept], target),
                       lowering=_call.lowering_of(form, cp.way) + (", its epilogue fused" if posts else ""))
    if _lowering.formed(cp.way) is not None and not posts:
        # Another formulation on views of the arrays is faster here (few output channels as
        # the packed Convolution): prepared once, on the folded weights. (These forms take no
        # post-op: with one the op runs as written.)
        prepared = _call.prepare(cp, [x, *arrays], out_meta=(out_meta_shape, out_meta_strides),
                                 threads=threads)
        return _Packed(**made, fused=lambda x, target: prepared.run([x, *arrays], target),
                       lowering=prepared.op.lowering)
    if native.lowering != "native" or native.crop or native.unreached:
        # The package lowers this geometry: its fused call, on the weights folded once.
        return _Packed(**made, fused=_fused_call(arrays, keywords, posts), lowering=native.lowering)
    name = _arrays.dtype_name(x.dtype)
    in_f32 = name in _arrays.LOW_PRECISION and _kernels.runs_in_f32(
        "ConvTranspose", native.attrs, name, [x.shape] + [a.shape for a in arrays], out_meta_shape,
        cp.size.flops)
    constants = {i + 1: a for i, a in enumerate(arrays)}
    op = _as_f32.ChainOp("ConvTranspose", native.attrs, name, [_compiled.meta(x)] + [_compiled.meta(a) for a in arrays],
                         (out_meta_shape, out_meta_strides), constants, threads=threads,
                         reason=reason, posts=posts, in_f32=in_f32)
    return _Packed(**made, op=op, lowering=_call.lowering_of(op, native))


def _fused_call(arrays: tuple, keywords: dict, posts: list) -> Any:
    """The functional API's ConvTranspose on `arrays` (the folded weights and bias) with the
    post-ops `posts`, as a ``_Packed.fused`` call."""
    post_ops = [_post.PostOp(kind, tuple(attrs.items())) for kind, attrs in posts]
    return lambda x, target: _ops.conv_transpose(x, *arrays, **keywords, post_ops=post_ops, out=target)


def __dir__() -> list[str]:
    return list(__all__)
