"""onednn_graph: oneDNN's Graph API from Python.

The functional API (``conv_transpose`` and friends) runs the four transposed-
convolution operations on NumPy arrays; the low-level objects (``Graph``,
``Op``, ``LogicalTensor``, ...) follow oneDNN's C++ API; ``reference`` holds a
NumPy reference of the four operations and ``shapes`` their geometry;
``torch_like`` offers PyTorch's ``conv_transpose*d`` and ``padding`` converts
padding between the PyTorch, JAX, ONNX and oneDNN conventions. Every function
taking an array also takes CPU torch tensors and other DLPack / buffer-protocol
objects, without copying. ``cache``, ``tuning`` and ``system`` hold the call
cache, tuning and what this installation is and can do; ``reproducer`` writes a
call out as a benchdnn case.
"""

import typing as _typing
from importlib import metadata as _metadata

from .errors import Error, UnsupportedError

try:
    __version__ = _metadata.version("onednn-graph")
except _metadata.PackageNotFoundError:  # pragma: no cover - not installed
    __version__ = "unknown"

try:
    from . import _core  # noqa: F401  (fails here, with advice, if the build is missing)
except ImportError as exc:  # pragma: no cover - only without a built extension
    raise ImportError(
        "onednn_graph's native module _core is missing or cannot load "
        f"({exc}). Install the package with `pip install .` so that it is built "
        "against oneDNN; importing from the source tree does not work."
    ) from exc

from . import (cache, errors, graph, graph_json, operation, ops, overrides, padding, post, quant,
               reference, reproducer, shapes, system, tolerance, torch_like, tuning)
from . import _deprecated
from ._core import Engine, LogicalTensor, Stream
from .graph import CompiledPartition, Graph, Op, Partition, Tensor
from .graph_json import load_graph, save_graph
from .operation import FusedOperation, Operation, compile_op
from .ops import (conv_transpose, conv_transpose_backprop_filters, conv_transpose_backward_data,
                  conv_transpose_backward_weights, convolution_backward_data)
from .shapes import output_shape

# The top level is what a program running the ops needs: the functional API, compiled
# calls, oneDNN's objects, JSON graphs (a Graph's file form) and the errors. What tunes,
# inspects or reproduces a run is in a module named for it (cache, tuning, system,
# reproducer, overrides), as boost-histogram and iminuit keep their top levels small.
__all__ = [
    # the functional API and compiled operations
    "conv_transpose", "conv_transpose_backward_data", "conv_transpose_backward_weights",
    "convolution_backward_data", "conv_transpose_backprop_filters", "output_shape",
    "compile_op", "Operation", "FusedOperation",
    # oneDNN's low-level objects, and a graph as a file
    "CompiledPartition", "Engine", "Graph", "LogicalTensor", "Op", "Partition", "Stream", "Tensor",
    "load_graph", "save_graph",
    # errors
    "Error", "UnsupportedError",
    # modules
    "cache", "errors", "graph", "graph_json", "operation", "ops", "overrides", "padding", "post",
    "quant", "reference", "reproducer", "shapes", "system", "tolerance", "torch_like", "tuning",
]

# Until the next release: og.reproducer(...) as the function that shadowed this module.
reproducer.__class__ = _deprecated.CallableReproducerModule

# Hidden from type checkers: mypy then reports a moved (or misspelled) name as missing
# instead of typing every attribute of the package as Any.
if not _typing.TYPE_CHECKING:
    def __getattr__(name: str) -> _typing.Any:
        """The top-level names that moved into modules, for one more release (PEP 562)."""
        return _deprecated.moved(name)


def __dir__() -> list[str]:
    return list(__all__)
