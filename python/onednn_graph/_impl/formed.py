"""What an op that runs as another op on the package's views of its arrays shares.

Three formulations hand oneDNN other tensors than the caller's arrays: the kernel ==
stride MatMul (``_impl.matmul_form``: the arrays as matrices), the few-channel
Convolution that computes several output positions per channel
(``_impl.packed_form``: weights the package spreads over a wider kernel, the output
as a view) and the strided op as one stride-1 Convolution per output phase
(``_impl.polyphase_form``: each phase a strided view of the output). All are made
from the array layouts a call was compiled for, so each call is checked against
them first (a view built on other strides would read or write outside the array),
and all run on the Python path with a few scratch arrays of their own.
"""

from __future__ import annotations

import threading
from typing import Any, Optional, Sequence

import numpy as np

from .. import _core, shapes
from . import compiled as _compiled, arrays as _arrays, registry as _registry
from ..errors import UnsupportedError

Axes = list[tuple[int, int]]  # (extent, element stride) per axis


def data_axes(fmt: str, shape: Sequence[int], strides: Sequence[int]) -> tuple[Axes, tuple[int, int], Axes]:
    """(batch, channels, spatial) of a data tensor as (extent, stride)."""
    c = 1 if fmt == "NCX" else len(shape) - 1
    spatial = [i for i in range(1, len(shape)) if i != c]
    return [(shape[0], strides[0])], (shape[c], strides[c]), [(shape[i], strides[i]) for i in spatial]


def _split(axis: tuple[int, int], inner: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """An axis of `inner`-sized blocks as (blocks, position in a block)."""
    extent, stride = axis
    return (extent // inner, stride * inner), (inner, stride)


class Parts(dict):
    """A tensor's axes by meaning, each (extent, element stride) or a list of them:
    ``g`` (group), ``n`` (batch), ``x`` (the small tensor's spatial positions, or the
    big one's blocks), ``k`` (positions in a block: the kernel), ``c`` (the small
    tensor's channels in a group), ``o`` (the big tensor's channels in a group)."""


def small_parts(fmt: str, shape: Sequence[int], strides: Sequence[int], groups: int) -> Parts:
    batch, channels, spatial = data_axes(fmt, shape, strides)
    g, c = _split(channels, channels[0] // groups)
    return Parts(g=g, n=batch[0], x=spatial, c=c)


def big_parts(fmt: str, shape: Sequence[int], strides: Sequence[int], groups: int,
              kernel: Sequence[int]) -> Parts:
    batch, channels, spatial = data_axes(fmt, shape, strides)
    g, o = _split(channels, channels[0] // groups)
    blocks = [_split(axis, k) for axis, k in zip(spatial, kernel)]
    return Parts(g=g, n=batch[0], x=[b for b, _ in blocks], k=[p for _, p in blocks], o=o)


def weights_parts(kind: str, wfmt: str, shape: Sequence[int], strides: Sequence[int],
                  groups: int) -> Parts:
    """The ConvTranspose family's I is its small tensor's channels (all groups), O the
    big one's per group; the convolution's O is the small tensor's (its diff_dst) and
    I the big one's."""
    small_letter = "I" if _registry.SPECS[kind].transposed else "O"
    at, axis = {}, 0
    kernel: Axes = []
    for letter in wfmt:
        if letter == "X":
            rank = len(shape) - 2
            kernel = [(shape[axis + i], strides[axis + i]) for i in range(rank)]
            axis += rank
        else:
            at[letter] = (shape[axis], strides[axis])
            axis += 1
    small = at[small_letter]
    g, c = _split(small, small[0] // groups)
    return Parts(g=g, c=c, k=kernel, o=at["O" if small_letter == "I" else "I"])


def channels_last_meta(meta: Sequence[Sequence[int]], fmt: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """A data tensor's (shape, element strides) in `fmt` as the channels-last view of the
    same memory (the forms' Convolutions run channels-last: oneDNN reads a channels-first
    array's memory where it lies)."""
    shape, strides = (tuple(v) for v in meta)
    if fmt == "NXC":
        return shape, strides
    order = shapes.format_permutation("NCX", "NXC", len(shape))
    return tuple(shape[i] for i in order), tuple(strides[i] for i in order)


def channels_last(array: np.ndarray, fmt: str) -> np.ndarray:
    """A data array in `fmt` as its channels-last view."""
    return array if fmt == "NXC" else np.moveaxis(array, 1, -1)


def view(array: np.ndarray, axes: Sequence[tuple[int, int]]) -> np.ndarray:
    """`array`'s memory as the axes (extent, element stride) say, from its first element."""
    item = array.itemsize
    return np.lib.stride_tricks.as_strided(array, [e for e, _ in axes], [s * item for _, s in axes],
                                           writeable=array.flags.writeable)


class Formed:
    """``CompiledOp``'s interface for an op run as `inner` (a ``CompiledOp``, or None
    when only described) on views and scratch arrays of the caller's: `inputs` and
    `output` are the caller's (shape, element strides) it was made for. Subclasses
    set ``inner``, ``inputs`` / ``output`` (the inner op's logical tensors) and
    implement ``_scratch_arrays`` and ``_run`` (``_build`` makes the inner op)."""

    compiled = None  # no single partition on the caller's arrays: no DirectCall
    runs_in_f32 = False  # (``_as_f32.ChainOp``'s sense: bf16/f16 between TypeCasts)
    input_order: tuple[int, ...] = ()
    inner: Any = None
    #: The inner op's inputs every call hands it (by position), and its unary post-ops
    #: (the inner op is then the subclass's chain of them).
    fixed: dict[int, np.ndarray] = {}
    posts: tuple = ()
    inputs: list[Any]
    output: Any
    #: Which dtypes it runs: every one (the MatMul, through its f32 product), or f32 only.
    f32_only = False

    def __init__(self, kind: str, attrs: dict[str, Any], dtype: str, inputs: Sequence[tuple],
                 output: tuple, constants: Optional[dict[int, np.ndarray]] = None) -> None:
        if self.f32_only and dtype != "f32":
            raise UnsupportedError(f"{type(self).__name__} runs in f32 only, not {dtype}")
        self.kind, self.attrs, self.dtype = kind, attrs, dtype
        self.op_kind = attrs["op"]  # the spec's op it computes
        self.lowering = "native"
        self.tuning: Optional[dict[str, float]] = None
        self.tuning_verdict = ""
        self.constants = {i: _compiled.private_copy(a) for i, a in (constants or {}).items()}
        self.metas = [(tuple(s), tuple(st)) for s, st in inputs]
        self.out_meta = (tuple(output[0]), tuple(output[1]))
        self.compile_seconds, self.threads = 0.0, 0
        # The scratch arrays, made once: a new one per call costs its page faults
        # again. A call that finds them in use (another thread runs this op) makes its own.
        self._scratch: Optional[list[Any]] = None
        self._lock = threading.Lock()

    def _build(self, kind: str, attrs: dict[str, Any], dtype: str, metas: Sequence[tuple],
               out: tuple, threads: int, compile: bool, fixed: Optional[dict[int, np.ndarray]] = None,
               inner: Any = None) -> None:
        """Compile the inner op (or, unless `compile`, only describe its tensors): with
        its inputs `fixed` (by position: the arrays every call hands it; the form's own
        read-only arrays, which the inner op keeps as they are) compiled in as constants;
        or take the subclass's compiled `inner` (the op with its post-ops, made so)."""
        if compile:
            self.inner = inner or _compiled.CompiledOp(kind, attrs, dtype, metas, out, fixed, threads=threads,
                                                       owned=True)
            self.compile_seconds, self.threads = self.inner.compile_seconds, self.inner.threads
            self.inputs, self.output = self.inner.inputs, self.inner.output
            self.fixed = {p: self.inner.constants[p] for p in fixed or {}}
        else:
            self.inputs = [_core.LogicalTensor(i, dtype, m[0], m[1]) for i, m in enumerate(metas)]
            self.output = _core.LogicalTensor(len(metas), dtype, out[0], out[1])
            self.fixed = dict(fixed or {})
        self.inner_op = _core.Op(0, kind, self.inputs, [self.output], attrs, kind)

    label = _compiled.CompiledOp.label

    def direct_call(self, shape: Any, dtype: Any) -> None:
        """None: the views are made on the Python path (``execute``)."""
        return None

    def graph_ops(self) -> list[Any]:
        """The op as handed to oneDNN (reproducers), on its own tensors (with its post-ops:
        the chain's ops)."""
        return self.inner.graph_ops() if self.posts and self.inner is not None else [self.inner_op]

    def _check(self, name: str, array: np.ndarray, meta: tuple) -> None:
        # (strides compared where the extent is over 1: another's is never stepped along, and
        # how it was written down depends on the view it came from)
        if not isinstance(array, np.ndarray) or array.dtype != _arrays.numpy_dtype(self.dtype) or \
                tuple(array.shape) != meta[0] or \
                (array.size > 1 and any(e > 1 and s != t for e, s, t in zip(meta[0], _compiled.meta(array)[1],
                                                                            meta[1]))):
            got = f"{getattr(array, 'dtype', '?')} {tuple(getattr(array, 'shape', ()))}"
            raise ValueError(f"{self.op_kind}: {name} must be a {self.dtype} array of shape "
                             f"{meta[0]} and element strides {meta[1]} (what was compiled), got {got}")

    def execute(self, inputs: Sequence[np.ndarray], output: np.ndarray) -> None:
        """Run on `inputs` (the caller's order) writing `output`, after checking that
        they are the arrays it was made for."""
        if len(inputs) != len(self.metas):
            raise ValueError(f"{self.op_kind}: expected {len(self.metas)} inputs, got {len(inputs)}")
        for i, (array, meta) in enumerate(zip(inputs, self.metas)):
            if i in self.constants and array is self.constants[i]:
                continue  # the form's own copy (a MatMul form's may be a view of its matrix)
            self._check(f"input {i}", array, meta)
        self._check("the output", output, self.out_meta)
        if not output.flags.writeable:
            raise ValueError(f"{self.op_kind}: the output is read-only")
        for i, array in enumerate(inputs):  # as _arrays.check_out: bounds first, then exactly
            if np.may_share_memory(output, array) and np.shares_memory(output, array):
                raise ValueError(f"{self.op_kind}: the output shares memory with input {i}")
        mine = self._lock.acquire(blocking=False)
        try:
            if mine and self._scratch is None:
                self._scratch = self._scratch_arrays()
            scratch = self._scratch if mine and self._scratch is not None else self._scratch_arrays()
            self._run(inputs, output, scratch)
        finally:
            if mine:
                self._lock.release()

    def _scratch_arrays(self) -> list[Any]:
        raise NotImplementedError

    def _run(self, inputs: Sequence[np.ndarray], output: np.ndarray, scratch: list[Any]) -> None:
        raise NotImplementedError
