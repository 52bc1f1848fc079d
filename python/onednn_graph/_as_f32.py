"""f16 ops that oneDNN 3.2 would run on its reference kernels, run in f32 by oneDNN.

oneDNN 3.2 has an optimized f16 kernel only for the forward-convolution-shaped op
(ConvTransposeBackwardData and the forward Convolution: brgconv:avx512_core_fp16
on this CPU). It runs f16 ConvTranspose, ConvTransposeBackwardWeights and
ConvolutionBackwardData, and every other formulation of them, on ``ref:any``: 255-267
ms against 0.28-0.62 ms in f32 for a 4x48x20x20 problem (README, Performance).

``F32Chain`` runs such an op as oneDNN partitions instead: a TypeCast of each f16
input to f32, the op in f32, a TypeCast of the result back to f16 (3.2 keeps the
four ops in four partitions under either policy). It computes what an f16 kernel
computes: a product of two f16 values is exact in f32, the sums accumulate in f32
as 3.2's f16 kernels do, and the result is rounded to f16 once. The cost is memory:
f32 copies of the inputs and the result, written by oneDNN into arrays allocated
per call (so that threads may share one chain).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from . import _attrs, _compiled, _core
from ._compiled import CompiledOp, private_copy

#: The ops that oneDNN 3.2 runs on ref:any in f16 (checked with ONEDNN_VERBOSE=1).
ON_REFERENCE_KERNELS = (_attrs.CONV_TRANSPOSE, _attrs.CONV_TRANSPOSE_BWD_WEIGHTS,
                        _attrs.CONV_BWD_DATA)


def wanted(kind: str, dtype: str) -> bool:
    """Whether an op of `kind` (as handed to oneDNN) on `dtype` data runs as an F32Chain."""
    return dtype == "f16" and kind in ON_REFERENCE_KERNELS


def compiler(kind: str, dtype: str) -> Any:
    """What compiles an op of `kind` on `dtype` data: ``F32Chain`` or ``CompiledOp``
    (both take ``CompiledOp``'s arguments)."""
    return F32Chain if wanted(kind, dtype) else _compiled.CompiledOp


def _dense(shape: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(shape, element strides) of a C-contiguous array of `shape` (``_compiled.meta``'s form)."""
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step)
        step *= max(int(d), 1)
    return tuple(int(d) for d in shape), tuple(reversed(strides))


class F32Chain:
    """An f16 op as TypeCast -> the op in f32 -> TypeCast, each a compiled oneDNN
    partition; the arguments are those of ``CompiledOp`` (whose interface it has,
    except that it has no single ``compiled`` partition: calls take the Python path)."""

    compiled = None

    def __init__(self, kind: str, attrs: dict[str, Any], dtype: str,
                 inputs: Sequence[tuple], output: tuple,
                 constants: Optional[dict[int, np.ndarray]] = None,
                 input_order: tuple[int, ...] = (), threads: int = 0) -> None:
        assert wanted(kind, dtype), (kind, dtype)
        self.kind, self.attrs, self.dtype = kind, attrs, dtype
        self.input_order = ()  # execute() takes the caller's order; the f32 op reorders
        self.lowering = "native"
        self.tuning: Optional[dict[str, float]] = None
        self.constants = {i: private_copy(a) for i, a in (constants or {}).items()}
        self.casts = [CompiledOp("TypeCast", {}, "f16", [m], _dense(m[0]), threads=threads,
                                 output_dtype="f32") for m in inputs]
        constants32 = {}
        for i, array in self.constants.items():  # cast once, by oneDNN
            constants32[i] = np.empty(array.shape, np.float32)
            self.casts[i].execute([array], constants32[i])
        self.op = CompiledOp(kind, attrs, "f32", [_dense(m[0]) for m in inputs], _dense(output[0]),
                             constants32, input_order, threads)
        self.back = CompiledOp("TypeCast", {}, "f32", [_dense(output[0])], output, threads=threads,
                               output_dtype="f16")
        parts = [*self.casts, self.op, self.back]
        self.compile_seconds = sum(p.compile_seconds for p in parts)
        self.threads = self.op.threads

    label = CompiledOp.label  # the lowering and thread count, as a CompiledOp says them

    def execute(self, inputs: Sequence[np.ndarray], output: np.ndarray) -> None:
        """Run on f16 `inputs` (a constant one must be ``self.constants[i]``) writing f16 `output`."""
        wide = []
        for i, (array, cast) in enumerate(zip(inputs, self.casts)):
            if i in self.op.constants:
                wide.append(self.op.constants[i])
                continue
            wide.append(np.empty(array.shape, np.float32))
            cast.execute([array], wide[-1])
        result = np.empty(output.shape, np.float32)
        self.op.execute(wide, result)
        self.back.execute([result], output)

    def graph_ops(self) -> list[Any]:
        """The chain as native ops on shared logical tensors (for reproducers)."""
        return chain_ops(self.kind, self.attrs, [c.inputs[0] for c in self.casts],
                         self.back.output, self.op.input_order)


def chain_ops(kind: str, attrs: dict[str, Any], inputs: Sequence[Any], output: Any,
              input_order: tuple[int, ...]) -> list[Any]:
    """TypeCast ops from the f16 logical tensors `inputs` to f32, the op `kind`, and a
    TypeCast to the f16 `output`, as one graph (ids: inputs, their f32 copies, the
    f32 result, `output`)."""
    n = len(inputs)
    wide = [_core.LogicalTensor(n + i, "f32", *_dense(t.shape)) for i, t in enumerate(inputs)]
    result = _core.LogicalTensor(2 * n, "f32", *_dense(output.shape))
    out = _core.LogicalTensor(2 * n + 1, "f16", output.shape, output.strides)
    ins = [_core.LogicalTensor(i, "f16", t.shape, t.strides) for i, t in enumerate(inputs)]
    order = input_order or tuple(range(n))
    ops = [_core.Op(i, "TypeCast", [ins[i]], [wide[i]], {}, "TypeCast") for i in range(n)]
    ops.append(_core.Op(n, kind, [wide[i] for i in order], [result], attrs, kind))
    ops.append(_core.Op(n + 1, "TypeCast", [result], [out], {}, "TypeCast"))
    return ops
