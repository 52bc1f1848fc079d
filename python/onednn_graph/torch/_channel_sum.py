"""The sum of a tensor over every axis but axis 1: a bias's gradient, on oneDNN.

oneDNN 3.2's dnnl backend has no partition for a lone BiasAddBackward, and its
ReduceSum that keeps an inner axis runs the reference kernel (``ref:any``: 0.2-0.9
ms for an 8x32x8x8 f32 tensor on the AVX2 EPYC). In f32 the sum is two gemm
MatMuls instead (0.01 ms there): the tensor as ``(N, C, M)`` (a strided view, in
either memory format) times a column of ones, then a row of ones times that
``(N, C)`` result. The ones are data, not arithmetic. bf16 and f16 keep ReduceSum,
which accumulates in f32: a MatMul's ``(N, C)`` intermediate would be rounded to
the dtype (the Graph API's MatMul takes one dtype in and out).
"""

from __future__ import annotations

import math
import threading
from typing import Any, Optional, Sequence

import numpy as np

from .. import graph as _graph
from .._impl import arrays as _arrays, compiled as _compiled

__all__ = ["channel_sum"]


class _Sum:
    """The compiled sum for one (shape, strides, dtype)."""

    def __init__(self, shape: tuple, strides: tuple, dtype: str) -> None:
        n, c, m = shape[0], shape[1], math.prod(shape[2:])
        self.reduce: Optional[_graph.CompiledPartition] = None
        if dtype != "f32" or not _collapsible(shape, strides):
            # The package's graph engine: it runs bf16/f16 where this CPU has no kernel.
            self.src = _graph.LogicalTensor(0, dtype, shape, strides)
            self.dst = _graph.LogicalTensor(1, dtype, (c,))
            axes = [a for a in range(len(shape)) if a != 1]
            g = _graph.Graph()
            g.add_op(_graph.Op(0, "ReduceSum", [self.src], [self.dst],
                               {"axes": axes, "keep_dims": False}))
            g.finalize()
            [partition] = g.get_partitions()
            self.reduce = partition.compile([self.src], [self.dst], _compiled.engine())
            return
        # The spatial axes as one (a view: _collapsible), the (N, C) intermediate between
        # the two MatMuls (shared by the callers, hence the lock), the ones.
        self.data = (n, c, m)
        view = np.lib.stride_tricks.as_strided(
            np.empty(1, np.float32), self.data,
            [s * 4 for s in (strides[0], strides[1], strides[-1] if len(shape) > 2 else 1)])
        self.ones_m, self.ones_n = np.ones((m, 1), np.float32), np.ones((1, n), np.float32)
        self.lock = threading.Lock()
        self.between = np.empty((n, c, 1), np.float32)
        # f32 MatMuls run everywhere: single ops compiled on the arrays (the package's
        # graph engine adds 8-9 us a call, a bias gradient's whole cost), each run as one
        # native call.
        meta = _compiled.meta
        first = _compiled.CompiledOp("MatMul", {}, "f32", [meta(view), meta(self.ones_m)],
                                     meta(self.between))
        second = _compiled.CompiledOp("MatMul", {}, "f32",
                                      [meta(self.ones_n), meta(self.between[..., 0])],
                                      meta(np.empty((1, c), np.float32)))
        self.first = first.direct_call(self.between.shape, self.between.dtype)
        self.second = second.direct_call((1, c), self.between.dtype)
        self.ops = (first, second)  # their compiled partitions, which the calls hold too

    def __call__(self, values: np.ndarray, out: np.ndarray) -> None:
        if self.reduce is not None:
            T, engine = _graph.Tensor, _compiled.engine()
            self.reduce.execute(_compiled.stream(), [T(self.src, engine, values)],
                                [T(self.dst, engine, out)])
            return
        stream = _compiled.stream()
        with self.lock:
            if self.first.run(stream, (values.reshape(self.data), self.ones_m), self.between) is None \
                    or self.second.run(stream, (self.ones_n, self.between[..., 0]),
                                       out.reshape(1, -1)) is None:
                raise ValueError("channel_sum: oneDNN refused the arrays it was compiled for")


def _collapsible(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether the spatial axes (2...) are one axis of uniform stride in memory."""
    return all(strides[i] == strides[i + 1] * shape[i + 1] for i in range(2, len(shape) - 1))


_sums: dict = {}
_sums_lock = threading.Lock()


def channel_sum(name: str, values: Any, out: np.ndarray) -> None:
    """Write the sum of `values` (N, C, *X) over every axis but 1 into `out` (C,)."""
    array = _arrays.as_input(name, values)  # copied only where oneDNN cannot read it
    if array.size == 0:
        out[...] = 0  # nothing to sum: fixed by the shape alone
        return
    key = (array.shape, tuple(_arrays.element_strides(array)), _arrays.dtype_name(array.dtype))
    with _sums_lock:
        compiled = _sums.get(key)
        if compiled is None:
            compiled = _sums[key] = _Sum(*key)
    compiled(array, out)
