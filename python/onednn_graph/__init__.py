"""onednn_graph: oneDNN's Graph API from Python.

The functional API (``conv_transpose`` and friends) runs the four transposed-
convolution operations on NumPy arrays; the low-level objects (``Graph``,
``Op``, ``LogicalTensor``, ...) follow oneDNN's C++ API; ``reference`` holds a
NumPy reference of the four operations and ``shapes`` their geometry;
``torch_like`` offers PyTorch's ``conv_transpose*d`` and ``padding`` converts
padding between the PyTorch, JAX, ONNX and oneDNN conventions. Every function
taking an array also takes CPU torch tensors and other DLPack / buffer-protocol
objects, without copying.
"""

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

from . import (errors, graph, graph_json, operation, ops, overrides, padding, post, quant,
               reference, shapes, tolerance, torch_like)
from . import _impl
from ._core import Engine, LogicalTensor, Stream, onednn_allocations, reset_onednn_peak
from ._impl.compiled import CacheInfo, cache_info, cached_ops, clear_cache, set_cache_capacity
from ._tools.info import capabilities
from ._impl.tuning import set_tuning, tuning_enabled
from ._impl.tuning_db import TuningDatabase, TuningEntry, tuning_database
from ._impl.version import cpu_isa, onednn_version
from .graph import CompiledPartition, Graph, Op, Partition, Tensor
from .graph_json import load_graph, save_graph
from .operation import FusedOperation, Operation, compile_op
from .ops import (conv_transpose, conv_transpose_backprop_filters, conv_transpose_backward_data,
                  conv_transpose_backward_weights, convolution_backward_data)
from .reproducer import reproducer
from .shapes import output_shape

__all__ = [
    # the functional API and compiled operations
    "conv_transpose", "conv_transpose_backward_data", "conv_transpose_backward_weights",
    "convolution_backward_data", "conv_transpose_backprop_filters", "output_shape",
    "compile_op", "Operation", "FusedOperation",
    # the call cache and tuning
    "cache_info", "CacheInfo", "cached_ops", "clear_cache", "set_cache_capacity", "set_tuning",
    "tuning_enabled", "tuning_database", "TuningDatabase", "TuningEntry",
    # oneDNN's low-level objects
    "CompiledPartition", "Engine", "Graph", "LogicalTensor", "Op", "Partition", "Stream", "Tensor",
    # JSON graphs and reproducers
    "load_graph", "save_graph", "reproducer",
    # this installation
    "capabilities", "cpu_isa", "onednn_version", "onednn_allocations", "reset_onednn_peak",
    # errors
    "Error", "UnsupportedError",
    # modules
    "errors", "graph", "graph_json", "operation", "ops", "overrides", "padding", "post", "quant",
    "reference", "shapes", "tolerance", "torch_like",
]
_impl.export(__name__, cache_info, CacheInfo, cached_ops, clear_cache, set_cache_capacity,
             set_tuning, tuning_enabled, tuning_database, TuningDatabase, TuningEntry, capabilities, cpu_isa, onednn_version)


def __dir__() -> list[str]:
    return list(__all__)
