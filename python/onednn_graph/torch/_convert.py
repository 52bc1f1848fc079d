"""A whole model's transposed convolutions on oneDNN in one call, and back.

``convert`` changes the class of each ``torch.nn.ConvTranspose1d/2d/3d`` in a module
tree to the package's layer of the same dimension (``modules``), which subclasses it
and differs only in ``forward``. Nothing else of the layer is touched: the same object
keeps its ``Parameter`` objects (an optimizer built before keeps working), buffers,
``state_dict`` keys, hooks, ``training``, ``requires_grad``, device, dtype and memory
format, and a layer reached by two paths is one object, swapped once. A layer with
parametrizations (``torch.nn.utils.parametrizations.weight_norm``,
``spectral_norm``) has a class PyTorch made for it on top of its own
(``ParametrizedConvTranspose2d``): it gets the same class made on top of the
package's layer, with the same properties, so its weight is computed as before. The
older ``torch.nn.utils.weight_norm`` is a forward pre-hook: it stays. ``revert``
does the reverse.

A subclass of torch's layers may compute something else in its own ``forward``, so it
is left alone unless ``subclasses=True``; then one that does not override ``forward``
gets a class made on top of it with the package's ``forward`` (pickled as its own class
plus the swap, so ``torch.save`` of the whole model works). A layer on another device
than the CPU, or in float64 (oneDNN has no f64 kernel), is left too. ``report`` lists
every transposed convolution of a tree, what runs it and why; ``convert`` logs what it
swapped (INFO) and what it left (WARNING) on the ``onednn_graph.torch`` logger.
"""

from __future__ import annotations

import copy
import logging
from typing import Any, NamedTuple, Optional

import torch
from torch.nn.utils import parametrize
from torch.nn.utils.weight_norm import WeightNorm as _WeightNorm  # the older hook's class

from . import _inference, _kernel_choice, _layer, _processes, _routing, modules as _modules

__all__ = ["convert", "revert", "report", "Report", "LayerReport"]

_log = logging.getLogger("onednn_graph.torch")

#: torch.nn's layers and the package's, by dimension.
_TORCH = (torch.nn.ConvTranspose1d, torch.nn.ConvTranspose2d, torch.nn.ConvTranspose3d)
_OURS = (_modules.ConvTranspose1d, _modules.ConvTranspose2d, _modules.ConvTranspose3d)
_TO_OURS: dict[type, type] = dict(zip(_TORCH, _OURS))
_TO_TORCH: dict[type, type] = dict(zip(_OURS, _TORCH))


class LayerReport(NamedTuple):
    """One transposed convolution of a module tree (``report``)."""

    #: Its name in ``named_modules()`` ("" for the root); the first of several paths.
    path: str
    #: Its class before parametrizations (``torch.nn.ConvTranspose2d``, a subclass, ...).
    layer: str
    #: "oneDNN" or "torch.nn": what computes it.
    runs_on: str
    #: Why, in words.
    why: str


class Report(list):
    """What computes each transposed convolution of a module tree: a list of
    ``LayerReport``, printed as a table; and ``functional_calls``, where the tree's
    forward calls ``torch.nn.functional.conv_transpose1d/2d/3d`` itself (as torch.fx
    traces it), which no conversion swaps (``route_functional`` runs them on oneDNN)."""

    functional_calls: list[str] = []

    @property
    def on_onednn(self) -> list[LayerReport]:
        return [r for r in self if r.runs_on == "oneDNN"]

    @property
    def on_torch(self) -> list[LayerReport]:
        return [r for r in self if r.runs_on == "torch.nn"]

    def __str__(self) -> str:
        calls = [_calls_note(self.functional_calls)] if self.functional_calls else []
        if not self:
            return "\n".join(calls or ["no transposed convolution"])
        rows = [("layer", "class", "runs on", "why")] + [
            (r.path or "(the module itself)", r.layer, r.runs_on, r.why) for r in self]
        widths = [max(len(row[i]) for row in rows) for i in range(3)]
        return "\n".join(["  ".join(cell.ljust(w) for cell, w in zip(row[:3], widths)) + "  " + row[3]
                          for row in rows] + calls).rstrip()


def _calls_note(calls: list[str]) -> str:
    return (f"and {len(calls)} call{'s' * (len(calls) > 1)} of torch's function in forward, on "
            f"torch: {'; '.join(calls)} (onednn_graph.torch.route_functional() runs them on "
            "oneDNN; onednn_graph.torch.conv_transpose1d/2d/3d are the drop-ins)")


def _base(module: torch.nn.Module) -> type:
    """The module's class before parametrizations (PyTorch's own rule)."""
    return parametrize.type_before_parametrizations(module)


def _torch_class(cls: type) -> Optional[type]:
    """The torch.nn transposed convolution `cls` is or derives from (None: not one)."""
    for torch_cls in _TORCH:
        if issubclass(cls, torch_cls):
            return torch_cls
    return None


def _state(module: torch.nn.Module, subclasses: bool) -> tuple[str, str, Optional[type]]:
    """(runs on, why, the class to become where `convert` swaps it) for a transposed
    convolution `module`."""
    base = _base(module)
    ours = base in _TO_TORCH or getattr(base, "_onednn_base", None) is not None
    # What torch.nn computes in the package's layer too (``_layer.torch_nn``).
    layer = "the package's layer, " if ours else ""
    # Its parameters, not `weight`: a parametrized weight is computed on each read, and
    # spectral_norm's read in training mode runs a power iteration, changing its buffers.
    param = next(module.parameters(), None)
    if param is not None and param.device.type not in ("cpu", "meta"):
        return "torch.nn", f"{layer}on {param.device}: oneDNN here runs on the CPU", None
    if param is not None and param.dtype not in (torch.float32, torch.bfloat16, torch.float16):
        return "torch.nn", f"{layer}{param.dtype}: oneDNN computes float32, bfloat16, float16", None
    if ours:
        if not _processes.onednn_usable:
            return "torch.nn", ("the package's layer, in a process forked after oneDNN's runtime "
                                "ran: it does not survive fork"), None
        inference = _inference.describe(module)
        every_call, kernels = _kernel_choice.describe(module)
        # (what inference packs is oneDNN's: nothing where torch.nn's kernel computes every call)
        notes = "".join(f"; {note}" for note in (None if every_call else inference, kernels,
                                                 _lowerings(module)) if note)
        return "torch.nn" if every_call else "oneDNN", "the package's layer" + notes, None
    if base in _TO_OURS:
        return "torch.nn", "torch.nn's layer", _TO_OURS[base]
    torch_cls: Any = _torch_class(base)  # not None: `module` is a transposed convolution
    if getattr(base, "forward") is not torch_cls.forward:
        return "torch.nn", f"a subclass of {_name(torch_cls)} with its own forward", None
    if not subclasses:
        return "torch.nn", (f"a subclass of {_name(torch_cls)}: convert(..., subclasses=True) "
                            f"swaps it"), None
    return "torch.nn", f"a subclass of {_name(torch_cls)}", _onednn_subclass(base)


def _lowerings(layer: torch.nn.Module) -> str:
    """How oneDNN computed the last calls of each kind of `layer` (the op, its gradients, a
    packed inference call), in words; "" before any."""
    ways = [f"{kind}: {how}" for kind, how in _layer.lowerings(layer).items()]
    packed = _inference.lowering(layer)
    ways += [f"packed inference: {packed}"] if packed else []
    return "oneDNN's formulation (last call of each kind): " + "; ".join(ways) if ways else ""


def _name(cls: type) -> str:
    module = "torch.nn" if cls.__module__.startswith("torch.nn") else cls.__module__
    return f"{module}.{cls.__qualname__}"


def _transposed_convolutions(module: torch.nn.Module) -> list[tuple[str, torch.nn.Module]]:
    """Every transposed convolution of the tree, once each (the first path to it)."""
    return [(path, m) for path, m in module.named_modules()
            if _torch_class(_base(m)) is not None]


def report(module: torch.nn.Module) -> Report:
    """What computes each transposed convolution in `module`'s tree (itself included):
    the package's layers on oneDNN, the others on torch.nn, and why.

    Examples
    --------
    >>> import torch, onednn_graph.torch as ot
    >>> model = torch.nn.Sequential(torch.nn.ConvTranspose2d(4, 2, 3))
    >>> [r.runs_on for r in ot.report(ot.convert(model))]
    ['oneDNN']
    """
    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"report: module must be a torch.nn.Module, got {type(module).__name__}")
    made = Report(LayerReport(path, _name(_base(m)), *_state(m, subclasses=False)[:2])
                  for path, m in _transposed_convolutions(module))
    made.functional_calls = _routing.functional_calls(module)
    return made


def convert(module: torch.nn.Module, inplace: bool = False, *,
            subclasses: bool = False, inference: bool = False, tune: bool = False) -> torch.nn.Module:
    """`module` with every ``torch.nn.ConvTranspose1d/2d/3d`` in its tree (itself
    included) computed by oneDNN: the package's layer of the same dimension, the same
    function, forward and backward.

    Parameters
    ----------
    module : torch.nn.Module
    inplace : bool
        Swap the layers of `module` itself (the same layer and ``Parameter`` objects:
        an optimizer built before keeps working) instead of those of a deep copy.
    subclasses : bool
        Also swap subclasses of torch's layers that keep torch's ``forward``.
    inference : bool
        In eval, each layer also computes the BatchNorm and the activation that follow it
        (folded and fused into one oneDNN partition), with its weights packed once where
        no gradient is recorded (docs/user-guide.md, "Inference"); training is unchanged.
    tune : bool
        Each layer's first call of each input shape, dtype, memory format and gradient
        mode times oneDNN's kernel against torch.nn's on its own tensors and keeps the
        faster (stored per machine in the tuning database: measured once). Without it,
        a default rule measured per CPU family decides (docs/user-guide.md, "Whose kernel
        runs a layer"); ``report`` says which ran, and why.

    Returns
    -------
    torch.nn.Module
        `module` (``inplace``) or its converted copy. What was swapped is logged at INFO,
        what was left and why at WARNING (logger ``onednn_graph.torch``); ``report``
        says it of any module.

    Examples
    --------
    >>> import torch, onednn_graph.torch as ot
    >>> model = torch.nn.Sequential(torch.nn.ConvTranspose2d(4, 2, 3), torch.nn.ReLU())
    >>> type(ot.convert(model)[0]).__name__, type(model[0]).__module__
    ('ConvTranspose2d', 'torch.nn.modules.conv')
    >>> ot.convert(model, inplace=True) is model, type(model[0]).__module__
    (True, 'onednn_graph.torch.modules')
    """
    _check(module, "convert")
    if not inplace:
        module = _deepcopy(module)
    swapped, left = [], []
    for path, layer in _transposed_convolutions(module):
        runs_on, why, target = _state(layer, subclasses)
        if target is not None:
            _swap(layer, target)
            swapped.append(path)
        elif runs_on == "torch.nn":
            left.append(f"{path or '(the module itself)'} ({_name(_base(layer))}): {why}")
    if swapped:
        _log.info("convert: %d transposed convolution%s now on oneDNN: %s", len(swapped),
                  "s" * (len(swapped) > 1), ", ".join(p or "(the module itself)" for p in swapped))
    if left:
        _log.warning("convert: %d transposed convolution%s left on torch.nn: %s", len(left),
                     "s" * (len(left) > 1), "; ".join(left))
    if tune:
        for _, layer in _transposed_convolutions(module):
            _kernel_choice.tune(layer)
    if inference:
        # (a layer with nothing to fold, fuse or hand on stays a plain one: packed in eval
        # as plain convert packs, and where torch.nn's kernel runs it, reached by its lane)
        for layer, epilogue in _inference.find(module):
            if epilogue != _inference.NO_EPILOGUE and (
                    _base(layer) in _TO_TORCH or getattr(_base(layer), "_onednn_base", None) is not None):
                _inference.enable(layer, epilogue)
    calls = _routing.functional_calls(module)
    if calls:
        _log.warning("convert: layers only; the model's forward makes %s", _calls_note(calls)[4:])
    return module


def revert(module: torch.nn.Module, inplace: bool = False) -> torch.nn.Module:
    """`module` with each of the package's transposed convolutions in its tree back on
    its torch.nn class (the one ``convert`` swapped): ``convert``'s reverse.

    Examples
    --------
    >>> import torch, onednn_graph.torch as ot
    >>> model = ot.convert(torch.nn.Sequential(torch.nn.ConvTranspose1d(4, 2, 3)))
    >>> type(ot.revert(model)[0]) is torch.nn.ConvTranspose1d
    True
    """
    _check(module, "revert")
    if not inplace:
        module = _deepcopy(module)
    for _, layer in _transposed_convolutions(module):
        base = _base(layer)
        target = _TO_TORCH.get(base) or getattr(base, "_onednn_base", None)
        if target is not None:
            _inference.disable(layer)
            _swap(layer, target)
    return module


def _check(module: Any, fn: str) -> None:
    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"{fn}: module must be a torch.nn.Module, got {type(module).__name__}")
    if isinstance(module, torch.jit.ScriptModule):
        raise TypeError(f"{fn}: module is a TorchScript module, whose code is compiled; "
                        f"{fn} the Python module before torch.jit.script")


def _deepcopy(module: torch.nn.Module) -> torch.nn.Module:
    """``copy.deepcopy(module)``, also where the older ``torch.nn.utils.weight_norm`` left a
    computed weight, which deepcopy refuses (a non-leaf tensor: pytorch/pytorch#103001):
    the copy gets a detached copy of it, which its forward pre-hook computes again before
    every forward, as it does the original's."""
    memo: dict = {}
    for m in module.modules():
        for hook in m._forward_pre_hooks.values():
            if isinstance(hook, _WeightNorm):
                computed = getattr(m, hook.name, None)
                if isinstance(computed, torch.Tensor) and not computed.is_leaf:
                    memo[id(computed)] = computed.detach().clone()
    return copy.deepcopy(module, memo)


def _swap(layer: torch.nn.Module, target: type) -> None:
    """Make `layer` a `target`, its parametrizations' class (if any) rebuilt on top."""
    if parametrize.is_parametrized(layer):
        made = type(layer)
        # PyTorch's class for the parametrized layer: its properties and methods (the
        # parametrized tensors, __getstate__, __deepcopy__) on top of `target` instead.
        body = {k: v for k, v in vars(made).items() if k not in ("__dict__", "__weakref__")}
        target = type(made.__name__.replace(made.__bases__[0].__name__, target.__name__), (target,),
                      body)
    layer.__class__ = target


# --- subclasses ------------------------------------------------------------------------

_SUBCLASSES: dict = {}  # a subclass of torch's layer -> the package's class on top of it


def _onednn_subclass(base: type) -> type:
    """`base` (a subclass of a torch.nn transposed convolution that keeps torch's forward)
    with the package's forward: one class per base, which pickles as the base plus the
    swap (``_rebuild``)."""
    made = _SUBCLASSES.get(base)
    if made is None:
        made = _SUBCLASSES[base] = type(base.__name__, (_modules._OneDNNForward, base), {
            "__module__": base.__module__, "__qualname__": base.__qualname__,
            "__doc__": base.__doc__, "_onednn_base": base, "__reduce_ex__": _reduce_ex})
    return made


def _reduce_ex(self: torch.nn.Module, protocol: int) -> Any:
    """Pickling (``torch.save``, ``copy.deepcopy``) of a swapped subclass: its own class,
    which a reader imports by name, and the swap made again."""
    reduced = object.__reduce_ex__(self, protocol)
    return (_rebuild, (type(self)._onednn_base,)) + tuple(reduced[2:])


def _rebuild(base: type) -> torch.nn.Module:
    return object.__new__(_onednn_subclass(base))


def __dir__() -> list[str]:
    return list(__all__)
