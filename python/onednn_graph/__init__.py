"""onednn_graph: oneDNN's Graph API from Python.

The four operations, computed by oneDNN on NumPy arrays (also CPU torch tensors and
other DLPack or buffer-protocol objects, read without copying)::

    conv_transpose(src, weights, bias=None, **attrs)
        ConvTranspose
    conv_transpose_backward_data(diff_dst, weights, **attrs)
        its gradient with respect to src
    conv_transpose_backward_weights(src, diff_dst, weights_shape=None, **attrs)
        its gradient with respect to the weights
    convolution_backward_data(diff_dst, weights, dst_shape=None, **attrs)
        a convolution's gradient with respect to its input
    compile_op(kind, **inputs_and_attrs)
        one of them compiled once, as an Operation to call in a hot loop

attrs: strides, pads_begin, pads_end, dilations, auto_pad, output_padding, groups,
data_format ("NXC", channels last, by default; "NCX" is PyTorch's) and
weights_format ("XOI" by default; "IOX" is PyTorch's); ``out=`` writes in place.

    >>> import numpy as np, onednn_graph as og
    >>> x = np.ones((1, 4, 4, 8), np.float32)          # (N, H, W, C_in)
    >>> w = np.ones((3, 3, 2, 8), np.float32)          # (kH, kW, C_out, C_in)
    >>> og.conv_transpose(x, w, strides=2).shape
    (1, 9, 9, 2)

Also here: ``reference`` (the four ops in float64 NumPy, to check against), ``shapes``
and ``output_shape`` (their geometry), ``torch_like`` (PyTorch's ``conv_transpose*d``
signatures) and ``padding`` (PyTorch, JAX and ONNX padding to oneDNN's); ``post`` and
``quant`` (fused epilogues, the int8 form); oneDNN's low-level objects (``Graph``,
``Op``, ``LogicalTensor``, ...) and its JSON graphs (``load_graph``); ``cache``,
``tuning`` and ``system`` (the call cache, tuning, this installation); ``reproducer``
(a call as a benchdnn case). PyTorch models: ``onednn_graph.torch.convert(model)``.
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
except ImportError as exc:
    from ._load_error import message as _load_error_message
    raise ImportError(_load_error_message(exc)) from exc

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
