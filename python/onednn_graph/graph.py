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
calls) use below the public modules. They are shown here as this module's
(``_impl.export``; their docstrings and examples live with their code), rather than
subclassed: one class per object, so
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


def __dir__() -> list[str]:
    return list(__all__)
