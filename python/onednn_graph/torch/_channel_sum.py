"""The sum of a tensor over every axis but axis 1: a bias's gradient, on oneDNN.

oneDNN 3.2's dnnl backend has no partition for a lone BiasAddBackward (its fusion
with ConvolutionBackwardWeights is disabled, and there is none with the transposed
op), and its ReduceSum that keeps an inner axis runs the reference kernel
(``ref:any``: 0.2-0.9 ms for an 8x32x8x8 f32 tensor on the AVX2 EPYC). In f32 the
sum is gemm MatMuls instead (0.01 ms there), on strided views of the tensor, times
rows or columns of ones (data, not arithmetic):

* where the batch and the spatial axes are one axis of uniform stride in memory (a
  batch of one, or channels last), one MatMul: ``V(C, R) @ ones(R, 1)``;
* else two: ``V(N, C, M) @ ones(M, 1)``, then the transpose of that ``(N, C)`` times
  ``ones(N, 1)``.

bf16 and f16 keep ReduceSum, which accumulates in f32: a MatMul's ``(N, C)``
intermediate would be rounded to the dtype (the Graph API's MatMul takes one dtype
in and out). Each compiled sum is kept per (shape, strides, dtype) and runs as one
native call per MatMul.
"""

from __future__ import annotations

import math
import threading
from typing import Any, Optional, Sequence

import numpy as np

from .. import graph as _graph
from .._impl import arrays as _arrays, compiled as _compiled

__all__ = ["channel_sum", "summer"]


def _strided(shape: Sequence[int], strides: Sequence[int]) -> np.ndarray:
    """An f32 array of `shape` and element `strides` standing for a caller's view: only
    its description is compiled."""
    return np.lib.stride_tricks.as_strided(np.empty(1, np.float32), tuple(shape),
                                           [s * 4 for s in strides])


class _Sum:
    """The compiled sum for one (shape, element strides, dtype)."""

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
        inner = strides[-1] if len(shape) > 2 else 1  # the spatial axes' one stride
        meta, f32 = _compiled.meta, np.dtype(np.float32)
        # The tensor is each MatMul's first matrix, read as it lies; the ones are its second
        # (oneDNN's "weights", which it reorders into blocks): constant, so reordered once
        # and kept. The other way round the tensor was reordered on every call (0.8 ms for
        # 8192 x 1 values, measured on a Zen 4, against 0.03 ms for the product).
        if n == 1 or strides[0] == m * inner:  # batch and space: R rows of one stride
            self.rows = (n * m, c)
            self.channels_last = (0, *range(2, len(shape)), 1)  # (N, *X, C): rows, then channels
            columns = _strided((c, n * m), (strides[1], inner))  # (C, R): the values' transpose
            op = _compiled.CompiledOp("MatMul", {}, "f32",
                                      [meta(columns), meta(np.empty((n * m, 1), np.float32))],
                                      meta(np.empty((c, 1), np.float32)),
                                      constants={1: np.ones((n * m, 1), np.float32)})
            self.ones = op.constants[1]
            self.calls: tuple = (op.direct_call((c, 1), f32),)
            self.ops: tuple = (op,)  # the compiled partition, which the call holds too
            return
        # (N, C, M) times a column of ones, then the (N, C) result's transpose times a
        # column of ones: the intermediate is shared by the callers, hence the lock.
        self.data = (n, c, m)
        view = _strided(self.data, (strides[0], strides[1], inner))
        self.lock = threading.Lock()
        self.between = np.empty((n, c, 1), np.float32)
        first = _compiled.CompiledOp("MatMul", {}, "f32",
                                     [meta(view), meta(np.empty((m, 1), np.float32))],
                                     meta(self.between), constants={1: np.ones((m, 1), np.float32)})
        second = _compiled.CompiledOp("MatMul", {}, "f32",
                                      [meta(self.between[..., 0].T),
                                       meta(np.empty((n, 1), np.float32))],
                                      meta(np.empty((c, 1), np.float32)),
                                      constants={1: np.ones((n, 1), np.float32)})
        self.ones_m, self.ones_n = first.constants[1], second.constants[1]
        self.calls = (first.direct_call(self.between.shape, f32), second.direct_call((c, 1), f32))
        self.ops = (first, second)

    def __call__(self, values: np.ndarray, out: np.ndarray) -> None:
        stream = _compiled.stream()
        if self.reduce is not None:
            T, engine = _graph.Tensor, _compiled.engine()
            self.reduce.execute(stream, [T(self.src, engine, values)], [T(self.dst, engine, out)])
            return
        if len(self.calls) == 1:
            rows = values.transpose(self.channels_last).reshape(self.rows)  # a view: the axes collapse
            ran = self.calls[0].run(stream, (rows.T, self.ones), out.reshape(-1, 1))
        else:
            with self.lock:
                ran = self.calls[0].run(stream, (values.reshape(self.data), self.ones_m),
                                        self.between) is not None and \
                    self.calls[1].run(stream, (self.between[..., 0].T, self.ones_n),
                                      out.reshape(-1, 1))
        if ran is None or ran is False:  # the view it was compiled for, so never
            raise ValueError("channel_sum: oneDNN refused the arrays it was compiled for")


def _collapsible(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether the spatial axes (2...) are one axis of uniform stride in memory."""
    return all(strides[i] == strides[i + 1] * shape[i + 1] for i in range(2, len(shape) - 1))


_sums: dict = {}
_sums_lock = threading.Lock()


def summer(name: str, values: np.ndarray) -> _Sum:
    """The compiled sum for arrays laid out as `values` (found, or compiled and kept)."""
    compiled = _sums.get((values.shape, values.strides, values.dtype))  # (a dict read: atomic)
    if compiled is None:
        array = _arrays.as_input(name, values)  # the dtype checked
        key = (array.shape, tuple(_arrays.element_strides(array)), _arrays.dtype_name(array.dtype))
        with _sums_lock:
            compiled = _sums.get((values.shape, values.strides, values.dtype))
            if compiled is None:
                compiled = _sums[(values.shape, values.strides, values.dtype)] = _Sum(*key)
    return compiled


def channel_sum(name: str, values: Any, out: np.ndarray) -> None:
    """Write the sum of `values` (N, C, *X) over every axis but 1 into `out` (C,)."""
    array = _arrays.as_input(name, values)  # copied where oneDNN cannot read it
    if array.size == 0:
        out[...] = 0  # nothing to sum: fixed by the shape alone
        return
    summer(name, array)(array, out)
