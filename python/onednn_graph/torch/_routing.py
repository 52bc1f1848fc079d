"""A model's own calls of ``torch.nn.functional.conv_transpose1d/2d/3d``: found, and run on
oneDNN on request.

``convert`` swaps layers; a forward that calls ``F.conv_transpose2d`` itself is left as it
is. ``functional_calls`` finds such calls where ``torch.fx`` can trace the model (every
transposed convolution layer a leaf), for ``convert`` to say once and ``report`` to list;
``route_functional()`` is a context in which they run as ``onednn_graph.torch``'s
``conv_transpose1d/2d/3d`` (the same arguments and gradients), where oneDNN computes them
(CPU tensors of float32, bfloat16 or float16; others as PyTorch runs them).
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import torch

from . import functional as _functional

__all__ = ["functional_calls", "route_functional"]

#: torch's functions (``F.conv_transposeNd`` is ``torch.conv_transposeNd``) -> the package's.
_ROUTED = {torch.conv_transpose1d: _functional.conv_transpose1d,
           torch.conv_transpose2d: _functional.conv_transpose2d,
           torch.conv_transpose3d: _functional.conv_transpose3d}
_NAMES = {f: f"torch.nn.functional.{f.__name__}" for f in _ROUTED}
_COMPUTED = (torch.float32, torch.bfloat16, torch.float16)
_TRANSPOSED = (torch.nn.ConvTranspose1d, torch.nn.ConvTranspose2d, torch.nn.ConvTranspose3d)


class _Tracer(torch.fx.Tracer):
    """torch.fx's tracer with every transposed convolution layer a leaf (the package's
    forward is not traceable, and a layer is not a functional call)."""

    def is_leaf_module(self, m: torch.nn.Module, qualname: str) -> bool:
        return isinstance(m, _TRANSPOSED) or super().is_leaf_module(m, qualname)


def functional_calls(module: torch.nn.Module) -> list[str]:
    """Where `module`'s forward calls ``torch.nn.functional.conv_transpose1d/2d/3d`` itself,
    as torch.fx traces it ("name of the call: the function"); [] where it has none, or
    torch.fx cannot trace it (data-dependent control flow, ...)."""
    try:
        graph = _Tracer().trace(module)
    except Exception:  # noqa: BLE001 - any failure of tracing: nothing found
        return []
    return [f"{node.name}: {_NAMES[node.target]}" for node in graph.nodes
            if node.op == "call_function" and node.target in _ROUTED]


class _Route(torch.overrides.TorchFunctionMode):
    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        ours = _ROUTED.get(func)
        if ours is not None and _computed(args[:2]):
            return ours(*args, **kwargs)
        return func(*args, **kwargs)


def _computed(tensors: tuple) -> bool:
    """Whether oneDNN computes a call on `tensors` (input, weight): CPU tensors of a dtype it
    takes (others run as PyTorch runs them)."""
    return all(isinstance(t, torch.Tensor) and t.is_cpu and t.dtype in _COMPUTED for t in tensors)


@contextlib.contextmanager
def route_functional() -> Iterator[None]:
    """A context in which ``torch.nn.functional.conv_transpose1d/2d/3d`` (``torch.
    conv_transposeNd``) run on oneDNN as ``onednn_graph.torch.conv_transpose1d/2d/3d``:
    for a model whose forward calls them itself, which ``convert`` cannot swap (it says so
    when it finds one). Calls on other devices or dtypes run as PyTorch runs them.

    Examples
    --------
    >>> import torch, onednn_graph.torch as ot
    >>> class Up(torch.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.weight = torch.nn.Parameter(torch.ones(2, 1, 2, 2))
    ...     def forward(self, x):
    ...         return torch.nn.functional.conv_transpose2d(x, self.weight, stride=2)
    >>> ot.report(Up()).functional_calls
    ['conv_transpose2d: torch.nn.functional.conv_transpose2d']
    >>> with ot.route_functional():
    ...     y = Up()(torch.ones(1, 2, 3, 3))
    >>> y.shape
    torch.Size([1, 1, 6, 6])
    """
    with _Route():
        yield


def __dir__() -> list[str]:
    return list(__all__)
