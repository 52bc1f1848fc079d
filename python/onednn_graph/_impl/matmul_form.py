"""kernel == stride, or one input position, as one oneDNN MatMul: the op without
overlapping windows.

With kernel == stride (or a small tensor of one position per sample, whatever the
stride: a latent vector made a feature map), zero pads and dilation 1, no two kernel
windows overlap:
each position of ConvTranspose's small tensor (its src; ConvolutionBackwardData's
diff_dst) feeds one block of ``prod(kernel)`` positions of the big one (its dst),
so each of the four ops is one matrix product per group over

* ``A`` = the small tensor as (groups, N * spatial, channels per group),
* ``W`` = the weights as (groups, small channels per group, kernel... x big channels
  per group),
* ``Z`` = the big tensor as (groups, N * spatial, kernel... x big channels per group),

and a rearrangement between ``Z`` and the big tensor (depth-to-space for
ConvTranspose and ConvolutionBackwardData, ``Z = A @ W``; space-to-depth for
ConvTransposeBackwardData, ``A = Z @ W^T``, and ConvTransposeBackwardWeights,
``W = A^T @ Z``). oneDNN's MatMul runs the product (its brgemm kernels, near the
machine's peak, where 3.2's deconvolution runs the few-channel and large-kernel
problems far below it); a matrix the caller's memory already is goes to it as a
strided view, any other one is rearranged by the package (``_core.cast``: a copy,
or the exact dtype conversion of a bf16/f16 call, which runs its product in f32
like every f32 chain) into a dense scratch matrix on the way in or out. That is data
movement only: every product and sum is oneDNN's.
"""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

import numpy as np

from .. import _core
from . import (arrays as _arrays, as_f32 as _as_f32, compiled as _compiled, formed as _formed, lowering as _lowering,
               registry as _registry)

#: ``NativeOp.kind`` of this formulation (``_lowering.matmul_way`` says when it applies).
MATMUL = _lowering.MATMUL

Axes = _formed.Axes


#: How each tensor is read as a matrix: (batch, rows, columns), by part names.
#: "rows": positions are rows, channels columns (channels-last data: the data
#: tensors are matrices as they lie); "columns": channels are rows and positions
#: columns, one matrix per sample (channels-first data), the weights broadcast
#: over the samples (their "n" is absent: an axis of extent 1).
ORIENTATIONS = {
    "rows": {"small": ("g", "nx", "c"), "big": ("g", "nx", "ko"), "weights": ("g", "c", "ko")},
    "columns": {"small": ("ng", "c", "x"), "big": ("ng", "ko", "x"), "weights": ("ng", "ko", "c")},
    # The same with the big tensor's channel before its kernel positions: channels-first
    # weights (IOX, OIX) are then a plain matrix as they lie (the big tensor is copied
    # in either order).
    "columns-ok": {"small": ("ng", "c", "x"), "big": ("ng", "ok", "x"), "weights": ("ng", "ok", "c")},
    # Rows with the channel first: channels-first data of one position per sample (a
    # latent vector) is then, with channels-first weights, three plain matrices as they
    # lie (the big tensor (N, O, k...) is N rows of O x k).
    "rows-ok": {"small": ("g", "nx", "c"), "big": ("g", "nx", "ok"), "weights": ("g", "c", "ok")},
}
#: The orientations whose rows are positions (one matrix for the whole batch).
ROW_ORIENTATIONS = ("rows", "rows-ok")


def arranged(parts: _formed.Parts, orientation: str, role: str, groups: int) -> tuple[Axes, Axes, Axes]:
    """`parts` of tensor `role` ("small", "big", "weights") as (batch, rows, columns)
    axes in `orientation`; the group axis only where there are groups."""
    def axes(names: str) -> Axes:
        out: Axes = []
        for name in names:
            if name == "g" and groups == 1:
                continue
            value = parts.get(name, (1, 0))  # the weights have no batch axis
            out.extend(value if isinstance(value, list) else [value])
        return out
    return tuple(axes(names) for names in ORIENTATIONS[orientation][role])  # type: ignore[return-value]


def orientation(op: str, data_format: str, weights: _formed.Parts, groups: int,
                one_position: bool = False) -> str:
    """Channels-first data as one matrix per sample (its positions lie densely along
    rows of a channel), except for the weights gradient, whose product sums over the
    samples too: one matrix for the whole batch, as for channels-last data. Per
    sample, the rows run over the output channel first where that makes `weights`
    (their parts) a matrix the MatMul reads in place. Channels-first data of
    `one_position` per sample: one matrix for the whole batch, channel first."""
    if data_format == "NCX" and one_position:
        return "rows-ok"
    if data_format != "NCX" or _registry.SPECS[op].weights_gradient:
        return "rows"
    batch, rows, cols = arranged(weights, "columns-ok", "weights", groups)
    return "columns-ok" if _matrix(batch, rows, cols)[1] is not None else "columns"


def _merged(axes: Axes) -> Optional[tuple[int, int]]:
    """`axes` as one axis (extent, stride), or None where memory does not step evenly
    through them (axes of extent 1 take any stride)."""
    kept = [a for a in axes if a[0] > 1]
    if not kept:
        return 1, 1
    extent, stride = kept[-1]
    for e, s in reversed(kept[:-1]):
        if s != extent * stride:
            return None
        extent *= e
    return extent, stride


def _matrix(batch: Axes, rows: Axes, cols: Axes
            ) -> tuple[tuple[int, ...], Optional[tuple[int, ...]]]:
    """(shape, element strides) of a matrix of the MatMul (batch axes first), strides None
    where the memory is not one that oneDNN's MatMul reads in place (a plain matrix:
    rows or columns dense; each batch axis steps past the whole matrix), so the
    package rearranges it."""
    r, c = _merged(rows), _merged(cols)
    shape = tuple(e for e, _ in batch) + (math.prod(e for e, _ in rows), math.prod(e for e, _ in cols))
    if r is None or c is None:
        return shape, None
    m, n = shape[-2:]
    plain = (c[1] == 1 and r[1] >= n) or (r[1] == 1 and c[1] >= m)
    span = r[1] * (m - 1) + c[1] * (n - 1) + 1
    plain = plain and all(e == 1 or st >= span for e, st in batch)
    # An axis of extent 1 (the weights' absent batch) is never stepped along; it gets
    # the stride past everything inside it, as a dense layout would have.
    strides, reach = [r[1], c[1]], span
    for e, st in reversed(batch):
        strides.insert(0, st if e > 1 else reach)
        reach = max(reach, strides[0] * (e - 1) + reach)
    return shape, (tuple(strides) if plain else None)


def _transposed(meta: tuple[tuple[int, ...], tuple[int, ...]]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """A matrix's (shape, strides) with its last two axes swapped."""
    shape, strides = meta
    return shape[:-2] + (shape[-1], shape[-2]), strides[:-2] + (strides[-1], strides[-2])


def _seen_as_input(operand: "Operand", dense: np.ndarray, constant: np.ndarray) -> Optional[np.ndarray]:
    """`constant` (C-ordered) as a read-only view of `dense`, the rearranged copy `operand`
    made of it, where each of its axes is one of the matrix's axes (not split into groups
    and channels) and the view holds its values; else None."""
    strides = []
    for extent, step in zip(constant.shape, _arrays.dense_strides(constant.shape)):
        if extent == 1:
            strides.append(0)
            continue
        # (the canonical axis this one is: its extent and its stride in `constant`)
        found = [s for (e, c), (_, s) in zip(operand.axes, operand.scratch_axes) if e == extent and c == step]
        if len(found) != 1:
            return None
        strides.append(found[0] * dense.itemsize)
    view = np.lib.stride_tricks.as_strided(dense, constant.shape, strides, writeable=False)
    return view if np.array_equal(view, constant) else None


class Operand:
    """One tensor of the call seen as a MatMul matrix: its axes in the caller's array
    (batch, rows, columns; element strides), and the matrix oneDNN reads or writes:
    the caller's memory (``direct``) or a dense scratch matrix the package fills from
    it (an input) or copies into it (the output)."""

    def __init__(self, axes: tuple[Axes, Axes, Axes], dtype: str, transpose: bool = False) -> None:
        batch, rows, cols = axes
        self.axes = batch + rows + cols
        shape, strides = _matrix(batch, rows, cols)
        self.direct = strides is not None and dtype == "f32"
        self.matrix: tuple[tuple[int, ...], tuple[int, ...]] = (
            shape, strides if strides is not None and self.direct else _arrays.dense_strides(shape))
        self.transpose = transpose
        # The scratch matrix in the canonical axes' shape (its dense strides split).
        self.scratch_axes: Axes = []
        if not self.direct:
            dense = _arrays.dense_strides([e for e, _ in self.axes])
            self.scratch_axes = [(e, s) for (e, _), s in zip(self.axes, dense)]

    @property
    def taken(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The (shape, strides) handed to the MatMul (transposed where it reads W^T or A^T)."""
        return _transposed(self.matrix) if self.transpose else self.matrix

    def matrix_of(self, array: np.ndarray, scratch: Optional[np.ndarray], threads: int) -> np.ndarray:
        """The matrix oneDNN reads of the caller's input `array`: a view, or `scratch`
        (dense f32 of the matrix's shape) filled from it on at most `threads` threads."""
        if self.direct:
            return _formed.view(array, list(zip(*self.taken)))
        assert scratch is not None
        _core.cast(_formed.view(array, self.axes), _formed.view(scratch, self.scratch_axes), threads)
        return _formed.view(scratch, list(zip(*self.taken)))


class MatMulForm(_formed.Formed):
    """A call without overlapping windows as one compiled MatMul on matrices of the caller's arrays
    (``CompiledOp``'s arguments and interface; calls take the Python path).
    `attrs` are the op's as ``lowering`` writes them (``op`` names it). A constant input
    (`constants`: a converted layer's folded weights and bias in inference) is made its
    matrix once and compiled in as constant (oneDNN packs it once); unary `posts` act on
    the product per element, so oneDNN fuses them into the MatMul's partition (a
    ConvTranspose's activation, before the rearrangement as after it)."""

    def __init__(self, kind: str, attrs: dict[str, Any], dtype: str, inputs: Sequence[tuple],
                 output: tuple, constants: Optional[dict[int, np.ndarray]] = None,
                 input_order: tuple[int, ...] = (), threads: int = 0, compile: bool = True,
                 posts: Sequence[tuple[str, dict[str, Any]]] = ()) -> None:
        super().__init__(kind, attrs, dtype, inputs, output, constants)
        op = self.op_kind
        spec = _registry.SPECS[op]
        g, fmt, wfmt = attrs["groups"], attrs["data_format"], attrs["weights_format"]
        kernel = attrs["kernel"]
        w_meta = output if spec.weights_gradient else inputs[1]
        small_meta = output if spec.reads_big else inputs[0]
        one_position = math.prod(e for e, _ in _formed.small_parts(fmt, small_meta[0], small_meta[1], g)["x"]) == 1
        self.orientation = orientation(op, fmt, _formed.weights_parts(op, wfmt, w_meta[0], w_meta[1], g), g,
                                       one_position)

        def operand(role: str, parts: _formed.Parts, transpose: bool = False) -> Operand:
            return Operand(arranged(parts, self.orientation, role, g), dtype, transpose)

        small = lambda meta: _formed.small_parts(fmt, meta[0], meta[1], g)  # noqa: E731
        big = lambda meta: _formed.big_parts(fmt, meta[0], meta[1], g, kernel)  # noqa: E731
        weights = lambda meta: _formed.weights_parts(op, wfmt, meta[0], meta[1], g)  # noqa: E731
        rows = self.orientation in ROW_ORIENTATIONS
        self.bias: Optional[tuple[int, ...]] = None
        if spec.writes_big:  # ConvTranspose, ConvolutionBackwardData
            # rows: big = small @ W; columns: big^T = W^T @ small^T (per sample)
            pair = [operand("small", small(inputs[0])), operand("weights", weights(inputs[1]))]
            self.operands = pair if rows else pair[::-1]
            self.result = operand("big", big(output))
            if len(inputs) > 2:  # ConvTranspose's bias, one per output channel: tiled
                self.bias = self._bias_shape(g)
        elif spec.reads_big:  # ConvTransposeBackwardData
            # rows: small = big @ W^T; columns: small^T = W @ big^T
            pair = [operand("big", big(inputs[0])), operand("weights", weights(inputs[1]), True)]
            self.operands = pair if rows else pair[::-1]
            self.result = operand("small", small(output))
        else:  # ConvTransposeBackwardWeights (rows only): W = small^T @ big
            self.operands = [operand("small", small(inputs[0]), True), operand("big", big(inputs[1]))]
            self.result = operand("weights", weights(output))
        # The caller's input each operand reads (the columns form takes the weights first).
        self.reads = (0, 1) if rows or spec.weights_gradient else (1, 0)
        self.kernel_positions = math.prod(kernel)
        self.groups = g
        metas = [o.taken for o in self.operands]
        if self.bias is not None:
            metas.append((self.bias, _arrays.dense_strides(self.bias)))
        # The MatMul's inputs made once from constant ones (by position in the MatMul), read-only
        # (oneDNN packs them into its own layout once whatever they are; the inner op keeps
        # them as they are): a view of the form's copy where that is the matrix as it lies (a
        # direct operand: IOX weights of one input position), else a rearranged copy, of
        # which the form's record is then a view where one exists (channels-last weights).
        # So the weights are held twice (here and packed by oneDNN), not three times.
        fixed: dict[int, np.ndarray] = {}
        for p, (o, i) in enumerate(zip(self.operands, self.reads)):
            if i not in self.constants:
                continue
            if o.direct:
                fixed[p] = o.matrix_of(self.constants[i], None, 0)
                continue
            dense = np.empty(o.matrix[0], np.float32)
            fixed[p] = o.matrix_of(self.constants[i], dense, 0)
            seen = _seen_as_input(o, dense, self.constants[i]) \
                if self.constants[i].dtype == dense.dtype else None  # (bf16/f16: a widened copy)
            if seen is not None:
                self.constants[i] = seen
        if self.bias is not None and 2 in self.constants:
            fixed[len(self.operands)] = self._tiled_bias(self.constants[2])
        for matrix in fixed.values():
            matrix.flags.writeable = False
        metas = [_compiled.meta(fixed[p]) if p in fixed else m for p, m in enumerate(metas)]
        self.posts = tuple(posts)
        inner = _as_f32.ChainOp(MATMUL, {}, "f32", metas, self.result.matrix, fixed, threads=threads, posts=posts,
                                in_f32=False, owned=True) if posts and compile else None
        self._build(MATMUL, {}, "f32", metas, self.result.matrix, threads, compile, fixed, inner)

    def _scratch_arrays(self) -> list[Optional[np.ndarray]]:
        operands = [None if o.direct or p in self.fixed else np.empty(o.matrix[0], np.float32)
                    for p, o in enumerate(self.operands)]
        return operands + [None if self.result.direct else np.empty(self.result.matrix[0], np.float32)]

    def _bias_shape(self, groups: int) -> tuple[int, ...]:
        """The MatMul's bias: one value per column of the result (rows form) or per row
        (columns form), each of the kernel positions' copy of its channel's bias."""
        rows = self.orientation in ROW_ORIENTATIONS
        extent = self.result.matrix[0][-1 if rows else -2]
        if rows:
            return (groups, 1, extent) if groups > 1 else (extent,)
        return (1, groups, extent, 1) if groups > 1 else (1, extent, 1)

    def _tiled_bias(self, bias: np.ndarray) -> np.ndarray:
        """`bias` (O,) as f32 in the MatMul's bias layout: (group, kernel position, channel),
        or (group, channel, kernel position) where the rows run over channels first."""
        g, positions = self.groups, self.kernel_positions
        assert self.bias is not None
        tiled = np.empty(self.bias, np.float32)
        if self.orientation in ("columns-ok", "rows-ok"):
            per_group = bias.reshape(g, -1, 1)
            shape = (g, per_group.shape[1], positions)
        else:
            per_group = bias.reshape(g, 1, -1)
            shape = (g, positions, per_group.shape[-1])
        _core.cast(np.broadcast_to(per_group, shape), tiled.reshape(shape))
        return tiled

    def _run(self, inputs: Sequence[np.ndarray], output: np.ndarray, scratch: list[Any]) -> None:
        matrices = [self.fixed[p] if p in self.fixed else o.matrix_of(inputs[i], s, self.threads)
                    for p, (o, i, s) in enumerate(zip(self.operands, self.reads, scratch))]
        if self.bias is not None:
            matrices.append(self.fixed[len(matrices)] if len(matrices) in self.fixed
                            else self._tiled_bias(inputs[2]))
        r = self.result
        if r.direct:
            self.inner.execute(matrices, _formed.view(output, list(zip(*r.matrix))))
            return
        result = scratch[-1]
        assert result is not None
        self.inner.execute(matrices, result)
        _core.cast(_formed.view(result, r.scratch_axes), _formed.view(output, r.axes), self.threads)
