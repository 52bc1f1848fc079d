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
from typing import Any, Sequence

import numpy as np

from .. import _core, graph as _graph
from .._impl import arrays as _arrays, compiled as _compiled

__all__ = ["channel_sum"]


def _compile(module: Any, op: str, inputs: Sequence[Any], output: Any, attrs: dict) -> Any:
    """One op as a compiled partition, built with `module`'s Graph, Op and partitions."""
    g = module.Graph()
    g.add_op(module.Op(0, op, list(inputs), [output], attrs))
    g.finalize()
    [partition] = g.get_partitions()
    return partition.compile(list(inputs), [output], _compiled.engine())


class _Sum:
    """The compiled sum for one (shape, strides, dtype)."""

    def __init__(self, shape: tuple, strides: tuple, dtype: str) -> None:
        n, c, m = shape[0], shape[1], math.prod(shape[2:])
        self.lts: tuple[Any, ...]  # the logical tensors of the compiled partitions
        if dtype != "f32" or not _collapsible(shape, strides):
            # The package's graph engine: it runs bf16/f16 where this CPU has no kernel.
            src = _graph.LogicalTensor(0, dtype, shape, strides)
            dst = _graph.LogicalTensor(1, dtype, (c,))
            axes = [a for a in range(len(shape)) if a != 1]
            self.reduce = _compile(_graph, "ReduceSum", [src], dst,
                                   {"axes": axes, "keep_dims": False})
            self.lts = (src, dst)
            return
        self.reduce = None
        inner = strides[-1] if len(shape) > 2 else 1  # the spatial axes as one of stride `inner`
        # f32 MatMuls run everywhere: oneDNN's own objects, executed on the arrays
        # (the package's graph engine adds 8-9 us a call, a bias gradient's whole cost).
        data = _core.LogicalTensor(0, "f32", (n, c, m), (strides[0], strides[1], inner))
        column = _core.LogicalTensor(1, "f32", (m, 1))
        per_sample = _core.LogicalTensor(2, "f32", (n, c, 1))
        row = _core.LogicalTensor(3, "f32", (1, n))
        samples = _core.LogicalTensor(4, "f32", (n, c))
        total = _core.LogicalTensor(5, "f32", (1, c))
        self.first = _compile(_core, "MatMul", [data, column], per_sample, {})
        self.second = _compile(_core, "MatMul", [row, samples], total, {})
        self.lts = (data, column, per_sample, row, samples, total)
        self.ones_m, self.ones_n = np.ones((m, 1), np.float32), np.ones((1, n), np.float32)
        self.lock = threading.Lock()  # the (N, C) intermediate is shared by the callers
        self.between = np.empty((n, c, 1), np.float32)

    def __call__(self, values: np.ndarray, out: np.ndarray) -> None:
        stream = _compiled.stream()
        if self.reduce is not None:
            src, dst = self.lts
            T, engine = _graph.Tensor, _compiled.engine()
            self.reduce.execute(stream, [T(src, engine, values)], [T(dst, engine, out)])
            return
        data, column, per_sample, row, samples, total = self.lts
        view = np.lib.stride_tricks.as_strided(values, data.shape,
                                               [s * values.itemsize for s in data.strides])
        with self.lock:
            self.first.execute_arrays(stream, [view, self.ones_m], [self.between])
            self.second.execute_arrays(stream, [self.ones_n, self.between.reshape(samples.shape)],
                                       [out.reshape(total.shape)])


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
