"""Op, Graph, Partition, Tensor: oneDNN's low-level objects with the spec's semantics.

``_core`` binds oneDNN as it is; these classes take ops as the specification
writes them (lower-case ``auto_pad``, the optional s32 shape input, the legacy
ConvTransposeBackpropFilters) and hand oneDNN 3.2 what it compiles, through
the same ``_lowering`` as the functional API. Ops of other kinds pass through.

Pads that oneDNN is not handed (a negative pad, output_padding >= strides +
pads_end: ``_lowering``'s docstring) make the op run on a view of one tensor
that leaves out positions outside every kernel window (``NativeOp.crop``), as in
the functional API. Here that tensor is described to oneDNN as a strided view of
the user's: the same strides, the cropped shape, under a logical-tensor id of its
own that no other op uses, so oneDNN neither fuses through it nor sees two
shapes for one id. A Partition shows the user's tensor in its ports; a
CompiledPartition hands oneDNN the view of the user's memory at the right offset
and writes the left-out outputs itself: zeros, or ConvTranspose's bias (what the
geometry alone fixes). A cropped output ends its partition: the ops that read it
run as partitions of their own, which ``Graph.get_partitions`` lists after it.

This module is the public face only: the classes are the spec-level graph engine's
(``_impl.spec_op``, ``_impl.spec_graph``), which the package's own graphs (fused
calls) use below the public modules. They are shown here as this module's, with
their docstrings and examples, rather than subclassed: one class per object, so
every Graph, Partition and compiled partition (the engine's included) is an
``og.Graph``, ``og.Partition``, ... for ``isinstance``, mypy and the reproducer.
"""

from __future__ import annotations

from . import _core, _impl
from ._impl.spec_graph import CompiledPartition, Graph, Partition, Tensor
from ._impl.spec_op import Op

__all__ = ["Op", "Graph", "Partition", "CompiledPartition", "Tensor", "LogicalTensor", "Engine",
           "Stream"]

LogicalTensor, Engine, Stream = _core.LogicalTensor, _core.Engine, _core.Stream
_impl.export(__name__, Op, Graph, Partition, CompiledPartition, Tensor)

Op.__doc__ = """One operation, as the specification defines it.

    Parameters
    ----------
    id : int
    kind : str
        The spec's op name, e.g. ``"ConvTranspose"``; also the legacy
        ``"ConvTransposeBackpropFilters"`` and every kind oneDNN knows.
    inputs, outputs : list of LogicalTensor
    attrs : dict, optional
        Spec attribute names -> values, checked against the op's schema.
    name : str, optional

    Examples
    --------
    >>> import onednn_graph as og
    >>> x = og.LogicalTensor(0, "f32", (1, 2, 3, 3))
    >>> w = og.LogicalTensor(1, "f32", (3, 3, 4, 2))
    >>> y = og.LogicalTensor(2, "f32", None)
    >>> op = og.Op(0, "ConvTranspose", [x, w], [y], {"strides": [2, 2],
    ...            "pads_begin": [0, 0], "pads_end": [0, 0], "dilations": [1, 1],
    ...            "data_format": "NCX", "auto_pad": "none"})
    >>> op.attrs["strides"]
    [2, 2]
    """

Graph.__doc__ = """A graph of ops (the spec's semantics) that oneDNN partitions and compiles.

    Examples
    --------
    >>> import numpy as np, onednn_graph as og
    >>> x = og.LogicalTensor(0, "f32", (1, 1, 3))
    >>> w = og.LogicalTensor(1, "f32", (1, 1, 2))
    >>> y = og.LogicalTensor(2, "f32", (1, 1, 6))
    >>> g = og.Graph()
    >>> g.add_op(og.Op(0, "ConvTranspose", [x, w], [y], {"strides": [2], "pads_begin": [0],
    ...          "pads_end": [0], "dilations": [1], "data_format": "NCX", "weights_format": "IOX"}))
    >>> g.finalize()
    >>> [p] = g.get_partitions()
    >>> e = og.Engine()          # one engine for compiling, tensors and the stream
    >>> cp = p.compile([x, w], [y], e)
    >>> s = og.Stream(e)
    >>> out = np.zeros((1, 1, 6), np.float32)
    >>> cp.execute(s, [og.Tensor(x, e, np.ones((1, 1, 3), np.float32)),
    ...                og.Tensor(w, e, np.ones((1, 1, 2), np.float32))], [og.Tensor(y, e, out)])
    >>> out
    array([[[1., 1., 1., 1., 1., 1.]]], dtype=float32)
    """

Partition.__doc__ = """A partition of a Graph, with the spec's ports (hidden shape inputs
    included): the user's logical tensors, where oneDNN has a view of one (a cropped op's,
    ``_impl.spec_op.View``) or the legacy op's output in the current weights format."""

CompiledPartition.__doc__ = """A compiled partition; shape inputs are read when it executes.

    Where this CPU's oneDNN has no bf16/f16 kernel for an op of the partition, or
    only its reference kernel (``_impl.kernels``), the partition runs in f32 between
    oneDNN TypeCasts (``_impl.as_f32.Chain``), on the same tensors.

    A cropped op (``_impl.spec_op.View``) is compiled for the view of the user's logical
    tensor and runs on the view of the user's memory; ``execute`` then writes the positions
    its output leaves out (zeros, or ConvTranspose's bias), and only those.
    """

Tensor.__doc__ = """A logical tensor bound to an array's memory, without a copy.

    ``array`` may be anything the functional API takes (a NumPy array, a CPU
    torch tensor, a DLPack or buffer-protocol object): its memory is viewed,
    never copied, and kept alive by the Tensor (``Tensor.array``).

    Examples
    --------
    >>> import numpy as np, onednn_graph as og
    >>> a = np.zeros((2, 3), np.float32)
    >>> t = og.Tensor(og.LogicalTensor(0, "f32", (2, 3)), og.Engine(), memoryview(a))
    >>> np.shares_memory(t.numpy(), a)
    True
    """


def __dir__() -> list[str]:
    return list(__all__)
