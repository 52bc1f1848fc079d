"""The sum of a tensor over every axis but axis 1: a bias's gradient, on oneDNN.

oneDNN 3.2's dnnl backend has no partition for a lone BiasAddBackward (its fusion
with ConvolutionBackwardWeights is disabled, and there is none with the transposed
op), and its ReduceSum runs the reference kernel wherever an outer axis is summed
(``ref:any``: 0.2-2.5 ms for an 8x16x32x32 tensor on a Zen 4). Its jit reduction sums
the innermost axis (14 us there). So the tensor, read as ``(N, C, M)`` channels first, is summed over its
positions M by that reduction, into the result for one sample, else into an f32
``(N, C)`` whose transpose a MatMul multiplies by a column of ones (constant, so oneDNN
reorders it once); channels last, its transpose ``(C, N*M)`` is one MatMul's first
matrix as it lies, times a column of ones. bf16 and f16 (and gaps) are first copied
into a dense f32 scratch tensor in the same axis order by the package (bf16/f16 -> f32
is exact), and the f32 sum rounded once to bf16/f16 (round to nearest even): what an f32
accumulation gives. Each
compiled sum is kept per (shape, strides, dtype) and runs as one native call per op.
"""

from __future__ import annotations

import math
import threading
from typing import Any, Optional, Sequence

import numpy as np

from .. import _core
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
        self.data = (n, c, m)
        self.lock = threading.Lock()  # the scratch arrays are shared by the callers
        # bf16/f16, gaps, or one position per sample: the package first copies the values
        # into a dense f32 scratch tensor in their own axis order (exact conversion, or a
        # plain copy: the same order keeps it a straight pass).
        self.scratch: Optional[np.ndarray] = None
        given = strides
        positions, strides = _positions(shape, strides)
        inner = strides[-1] if len(positions) > 2 else 1  # the positions' one stride
        as_rows = n == 1 or strides[0] == m * inner  # samples and positions one axis
        if dtype != "f32" or m == 1 or not _collapsible(positions, strides) \
                or (inner != 1 and not as_rows):
            order = sorted(range(len(shape)), key=lambda a: -given[a])
            self.scratch = np.empty([shape[a] for a in order], np.float32).transpose(
                np.argsort(order))
            positions, strides = _positions(shape, tuple(_arrays.element_strides(self.scratch)))
            inner = strides[-1] if len(positions) > 2 else 1
            as_rows = n == 1 or strides[0] == m * inner
        meta, f32 = _compiled.meta, np.dtype(np.float32)
        self.calls: tuple = ()
        self.ops: tuple = ()  # the compiled partitions, which the calls hold too
        self.rows: Optional[tuple] = None
        self.between = np.empty((n, c, 1), np.float32)
        if m > 1 and inner != 1 and as_rows:
            # Channels last: samples and positions are R rows of one stride; the values'
            # transpose (C, R) is a MatMul's first matrix as it lies, a column of ones
            # its second (constant, reordered once: the other way round the values were
            # reordered into blocks on every call, 0.8 ms for 8192 x 1 on a Zen 4).
            self.rows = (n * m, c)
            self.channels_last = (0, *range(2, len(shape)), 1)  # (N, *X, C)
            columns = _strided((c, n * m), (strides[1], inner))
            op = _compiled.CompiledOp("MatMul", {}, "f32",
                                      [meta(columns), meta(np.empty((n * m, 1), np.float32))],
                                      meta(np.empty((c, 1), np.float32)),
                                      constants={1: np.ones((n * m, 1), np.float32)})
            self.ones = op.constants[1]
            self.calls, self.ops = (op.direct_call((c, 1), f32),), (op,)
        else:
            if m > 1:  # channels first: the innermost axis by oneDNN's jit reduction
                view = _strided(self.data, (strides[0], strides[1], inner))
                first = _compiled.CompiledOp("ReduceSum", {"axes": [2], "keep_dims": True},
                                             "f32", [meta(view)], meta(self.between))
                self.calls, self.ops = (first.direct_call(self.between.shape, f32),), (first,)
            else:  # nothing to sum within a sample: the (N, C) values themselves
                self.between = self.scratch.reshape(n, c, 1)  # type: ignore[union-attr]
            if n > 1:  # then over the samples: a MatMul with a constant column of ones
                second = _compiled.CompiledOp("MatMul", {}, "f32",
                                              [meta(self.between[..., 0].T),
                                               meta(np.empty((n, 1), np.float32))],
                                              meta(np.empty((c, 1), np.float32)),
                                              constants={1: np.ones((n, 1), np.float32)})
                self.ones = second.constants[1]
                self.calls += (second.direct_call((c, 1), f32),)
                self.ops += (second,)
        self.sum32 = np.empty(c, np.float32) if dtype != "f32" else None

    def __call__(self, values: np.ndarray, out: np.ndarray) -> None:
        stream = _compiled.stream()
        n, c, m = self.data
        with self.lock:
            if self.scratch is not None:
                _core.cast(values, self.scratch)
                values = self.scratch
            result = out if self.sum32 is None else self.sum32
            ran: Any = True
            if self.rows is not None:
                rows = values.transpose(self.channels_last).reshape(self.rows)  # a view
                ran = self.calls[0].run(stream, (rows.T, self.ones), result.reshape(-1, 1))
            else:
                if m > 1:  # over the positions: into the result, or per sample
                    ran = self.calls[0].run(stream, (values.reshape(self.data),),
                                            result.reshape(1, -1, 1) if n == 1 else self.between)
                if ran is not None and n > 1:
                    ran = self.calls[-1].run(stream, (self.between[..., 0].T, self.ones),
                                             result.reshape(-1, 1))
                if n == m == 1:  # one value per channel: the sum is itself
                    _core.cast(values.reshape(-1), result)
            if ran is None:  # the layout it was compiled for, so never
                raise ValueError("channel_sum: oneDNN refused the arrays it was compiled for")
            if self.sum32 is not None:
                _core.cast(self.sum32, out)  # one rounding to the dtype


def _positions(shape: Sequence[int], strides: Sequence[int]) -> tuple[tuple, tuple]:
    """`shape` and element `strides` without the spatial axes of one position, whose
    strides say nothing of the layout (``_arrays.element_strides`` gives them their
    C-contiguous one: (N, C, L, 1) channels-last would read as channels first)."""
    keep = [a for a in range(len(shape)) if a < 2 or shape[a] != 1]
    return tuple(shape[a] for a in keep), tuple(strides[a] for a in keep)


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
