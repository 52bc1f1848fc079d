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
    from . import _core
except ImportError as exc:  # pragma: no cover - only without a built extension
    raise ImportError(
        "onednn_graph's native module _core is missing or cannot load "
        f"({exc}). Install the package with `pip install .` so that it is built "
        "against oneDNN; importing from the source tree does not work."
    ) from exc

from . import graph_json, padding, reference, shapes, torch_like
from ._core import CompiledPartition, Engine, LogicalTensor, Stream
from ._impl.compiled import CacheInfo, cache_info, clear_cache, set_cache_capacity
from .graph import Graph, Op, Partition, Tensor
from ._impl.info import capabilities
from ._impl.tuning import set_tuning, tuning_enabled
from ._impl.version import cpu_isa, onednn_version
from .operation import Operation, compile_op
from .ops import (conv_transpose, conv_transpose_backprop_filters, conv_transpose_backward_data,
                  conv_transpose_backward_weights, convolution_backward_data)
from .graph_json import load_graph, save_graph
from .reproducer import reproducer
from .shapes import output_shape

__all__ = [
    "CacheInfo", "CompiledPartition", "Engine", "Error", "Graph", "LogicalTensor", "Op",
    "Operation", "Partition", "Stream", "Tensor", "UnsupportedError", "cache_info",
    "capabilities", "clear_cache", "compile_op", "conv_transpose",
    "conv_transpose_backprop_filters", "conv_transpose_backward_data",
    "conv_transpose_backward_weights", "convolution_backward_data", "cpu_isa", "graph_json",
    "load_graph", "onednn_version", "output_shape", "padding", "reference", "reproducer",
    "save_graph", "set_cache_capacity", "set_tuning", "shapes", "torch_like", "tuning_enabled",
]
