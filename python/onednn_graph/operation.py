"""Compiled operations for hot loops: ``compile_op`` once, call many times.

An ``Operation`` is one op compiled for fixed shapes, strides and dtype. Its
call path does the least Python can do: a dtype check per array, the output
allocation (or nothing, with ``out=``), and one native call that checks every
buffer against the compiled logical tensors and executes without the GIL.

``constant_weights=True`` compiles the weights in as a constant: oneDNN
reorders them once and reuses the reordered copy. The operation keeps its own
read-only copy of the weights (oneDNN 3.2 caches constants per compiled
kernel, not per buffer, so changing them in place would silently give stale
results): to use other weights, compile another operation.
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any, Callable, Optional, Sequence

import numpy as np

from . import _core, ops, quant as _quant
from ._impl import (arrays as _arrays, as_f32 as _as_f32, attrs as _attrs, call as _call,
                    compiled as _compiled, fused as _fused, plan as _plan,
                    registry as _registry, version as _version)

__all__ = ["Operation", "FusedOperation", "compile_op"]

def _function(kind: str) -> Callable[..., Any]:
    """`kind`'s function in the functional API, which defines its keywords and defaults."""
    function: Callable[..., Any] = getattr(ops, _registry.function(kind))
    return function


def _keywords(kind: str, given: dict[str, Any]) -> dict[str, Any]:
    """The op's keywords with the functional API's defaults; unknown names are a TypeError."""
    inputs = _registry.input_names(kind)
    # (post_ops, quantize: compile_op takes them itself, for the ops of _fused.KINDS)
    params = [p for name, p in inspect.signature(_function(kind)).parameters.items()
              if name not in inputs and name not in ("out", "post_ops", "quantize")]
    unknown = set(given) - {p.name for p in params}
    if unknown:
        # What the caller meant by each, among everything compile_op takes for `kind`.
        taken = [*inputs, *(p.name for p in params), *inspect.signature(compile_op).parameters]
        hints = [f"{name}: {hint}" for name in sorted(unknown)
                 for hint in [_attrs.keyword_hint(kind, name, given[name], taken)] if hint]
        raise TypeError(f"compile_op: {kind} has no input or attribute {sorted(unknown)}; "
                        + "".join(f"{h}; " for h in hints)
                        + f"inputs: {inputs}, attributes: {[p.name for p in params]}")
    return {p.name: given.get(p.name, p.default) for p in params}


def _example(name: str, value: Any, dtype: Optional[str]) -> np.ndarray:
    """An input given as an array, or as a shape (with ``dtype=``)."""
    if isinstance(value, (tuple, list)) and all(isinstance(d, (int, np.integer)) and
                                                not isinstance(d, bool) for d in value):
        if dtype is None:
            raise TypeError(f"compile_op: {name} is given as a shape; also give dtype=")
        shape = _attrs.check_int_list(name, value, 0)
        return np.lib.stride_tricks.as_strided(np.empty(1, _arrays.numpy_dtype(dtype)), shape,
                                               [0] * len(shape))  # shape only; never read
    array = _arrays.as_input(name, value)
    if dtype is not None and _arrays.dtype_name(array.dtype) != _arrays.dtype_name(dtype):
        raise TypeError(f"compile_op: {name} has dtype {array.dtype}, dtype= says {dtype}")
    return array


def compile_op(kind: str, *, dtype: Optional[str] = None, constant_weights: bool = False,
               tune: bool = False, threads: Optional[int] = None,
               **arguments: Any) -> "Operation":
    """Compile one op for the given input shapes, strides, dtype and attributes.

    Parameters
    ----------
    kind : str
        ``"ConvTranspose"``, ``"ConvTransposeBackwardData"``,
        ``"ConvTransposeBackwardWeights"``, ``"ConvolutionBackwardData"`` or
        ``"ConvTransposeBackpropFilters"``.
    dtype : {"f32", "bf16", "f16"}, optional
        Needed when inputs are given as shapes.
    constant_weights : bool
        Compile ``weights`` (given as an array) in as a constant; calls then
        leave the weights out.
    tune : bool
        Where the problem can be computed by more than one oneDNN op
        (``_lowering.alternatives``: ConvTranspose without bias and with
        groups = 1 also as a ConvolutionBackwardData, ConvTransposeBackwardData
        as a forward Convolution, ConvTransposeBackwardWeights as a
        ConvolutionBackwardWeights, ConvolutionBackwardData with groups = 1 as
        a ConvTranspose), compile each, time each on the given arrays (shapes: on ones) and keep
        the fastest where it beats the default clearly (``Operation.tuning_verdict``
        says how it was decided; nothing is stored while other processes load the
        CPU); ``Operation.tuning`` has the times. Costs a few calls'
        time once; the results agree within the package's error bound, not
        bit for bit.
    threads : int, optional
        At most this many OpenMP threads to compile and run on (where oneDNN
        uses OpenMP; never more than OpenMP's own setting): 1 for callers that
        parallelize themselves, 0 for oneDNN's default (all). On another CPU
        runtime (PyPI's oneDNN 3.13 runs SYCL) a count > 0 warns
        (RuntimeWarning) and has no effect.
        By default the package chooses: 1 for a problem under 1 MFLOP, else
        all (``_plan.threads``); ``tune`` then also times the other count.
    **arguments
        The op's inputs by name (``src``, ``weights``, ``bias``, ``diff_dst``,
        ...), each an array (its shape, strides and dtype are compiled for) or
        a shape tuple (C-contiguous), and its attributes as the functional API
        takes them (``strides=2``, ``weights_shape=...``). ConvTranspose and the
        backward-data ops also take ``post_ops`` (``onednn_graph.post``), and
        ConvTranspose ``quantize`` and quantized inputs (``onednn_graph.quant``), as the
        functional API does (inputs as arrays then).

    Returns
    -------
    Operation
        Call it with the inputs in order: ``op(src, weights, out=y)``.
        With post-ops or quantization a :class:`FusedOperation`, called with the
        inputs and then the binary post-ops' operands; its ``partitions`` says how
        many oneDNN partitions a call runs.

    Examples
    --------
    >>> import numpy as np, onednn_graph as og
    >>> x = np.ones((1, 3, 2), np.float32)              # NXC
    >>> w = np.ones((2, 1, 2), np.float32)              # XOI
    >>> op = og.compile_op("ConvTranspose", src=x, weights=w, strides=2)
    >>> op.output_shape
    (1, 6, 1)
    >>> op(x, w)[0, :, 0]
    array([2., 2., 2., 2., 2., 2.], dtype=float32)
    """
    if kind not in _registry.NAMES:
        raise ValueError(f"compile_op: unknown op kind {kind!r}; expected one of {_registry.NAMES}")
    names = _registry.input_names(kind)
    inputs = {n: arguments.pop(n) for n in names if arguments.get(n) is not None}
    post_ops, quantize = arguments.pop("post_ops", None), arguments.pop("quantize", None)
    attrs = _keywords(kind, arguments)
    if post_ops or quantize is not None or any(isinstance(v, _quant.Quantized) for v in inputs.values()):
        return _compile_fused(kind, inputs, attrs, post_ops, quantize,
                              constant_weights=constant_weights, tune=tune, threads=threads)
    missing = [n for n in names if n not in inputs and n != "bias"]
    if missing:
        raise TypeError(f"compile_op: {kind} needs the inputs {missing}")
    names = tuple(n for n in names if n in inputs)
    arrays = [_example(n, inputs[n], dtype) for n in names]
    constant = None
    if constant_weights:
        if "weights" not in names or _is_shape(inputs["weights"]):
            raise ValueError(f"compile_op: constant_weights needs the weights of {kind} as an array")
        constant = names.index("weights")
    # An array as_input had to copy (a layout oneDNN cannot describe) is copied on every call.
    copied = tuple(not _is_shape(inputs[n]) and a is not inputs[n] for n, a in zip(names, arrays))
    if constant is not None:
        # Compiled in as the C-ordered copy the op keeps (``_compiled.private_copy``): planned
        # and compiled for that copy's strides, not for a view's the caller handed in.
        arrays[constant] = np.ascontiguousarray(arrays[constant])
    if threads is not None and (type(threads) is not int or threads < 0):
        raise ValueError(f"compile_op: threads must be an int >= 0 (0: oneDNN's default), got {threads!r}")
    if threads and not _core.can_limit_threads():
        v = _version.onednn_version()
        warnings.warn(
            f"compile_op: threads={threads} has no effect with oneDNN {v.major}.{v.minor} on its "
            f"{v.cpu_runtime} CPU runtime: the package sets the thread count per call only where "
            "oneDNN uses OpenMP. There it follows the CPU affinity of the process "
            "(os.sched_setaffinity or taskset before the first oneDNN call); the op runs on "
            "oneDNN's default threads", RuntimeWarning, stacklevel=2)
    cp = _plan.plan_call(kind, names, arrays, attrs)
    prepared = _call.prepare(cp, arrays, constant=constant, copied=copied, tune=tune, threads=threads)
    return Operation(kind, names, attrs, prepared, constant, [tuple(a.shape) for a in arrays])


def _compile_fused(kind: str, inputs: dict[str, Any], attrs: dict[str, Any], post_ops: Any,
                   quantize: Any, **options: Any) -> "FusedOperation":
    """compile_op with post-ops or quantization: an op's fused form, or ConvTranspose's
    int8 one."""
    if kind not in _fused.KINDS:
        raise TypeError(f"compile_op: post_ops and quantize are taken by {', '.join(_fused.KINDS)}, "
                        f"not {kind}")
    given = [k for k, v in options.items() if v]
    if given:
        raise TypeError(f"compile_op: {', '.join(given)} is not taken with post_ops or quantize")
    if any(_is_shape(v) for v in inputs.values()):
        raise TypeError("compile_op: with post_ops or quantize, give the inputs as arrays")
    names = tuple(n for n in _registry.input_names(kind) if n in inputs)
    call, _, operands = _fused.prepare(kind, names, [inputs[n] for n in names], attrs, post_ops,
                                       None, quantize)
    return FusedOperation(kind, names, attrs, call, [o is not None for o in operands])


def _is_shape(value: Any) -> bool:
    return isinstance(value, (tuple, list))


class Operation:
    """One op compiled for fixed shapes, strides and dtype (see ``compile_op``)."""

    def __init__(self, kind: str, names: tuple[str, ...], attrs: dict[str, Any],
                 prepared: _call.Prepared, constant: Optional[int],
                 input_shapes: Sequence[tuple[int, ...]]) -> None:
        self.kind, self.attrs = kind, attrs
        # What each argument was compiled for, to name the one at fault (issue 31).
        self._shapes = tuple(s for i, s in enumerate(input_shapes) if i != constant)
        self._prepared = prepared
        self._constant = constant
        self.input_names = tuple(n for i, n in enumerate(names) if i != constant)
        self._dtype = prepared.dtype
        self._n = len(self.input_names)
        self._copy = tuple(c for i, c in enumerate(prepared.copy_inputs) if i != constant)
        self._direct = prepared.direct  # None when the call needs the Python path

    @property
    def output_shape(self) -> tuple[int, ...]:
        return self._prepared.output_shape

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    @property
    def lowering(self) -> str:
        """"native", or how the op was rewritten for the linked oneDNN."""
        return self._prepared.op.lowering

    @property
    def compute_dtype(self) -> np.dtype:
        """The dtype oneDNN's kernel computes in: the op's own, or float32 where a bf16
        or f16 call runs as the f32 op between the package's conversions (this CPU's
        oneDNN has no kernel for the dtype, or the f32 one is faster; ``lowering`` says
        which)."""
        return np.dtype(np.float32) if self._prepared.op.runs_in_f32 else self._dtype

    @property
    def threads(self) -> Optional[int]:
        """The OpenMP threads it was compiled for and runs on; 1 for a problem under
        ``_plan.SMALL_FLOPS`` (or as tuning chose), None for oneDNN's default (all)."""
        return self._prepared.op.threads or None

    @property
    def tuning(self) -> Optional[dict[str, float]]:
        """Median seconds per call of each way tried (lowering, and thread count
        where set) with ``tune=True``, else None."""
        return self._prepared.op.tuning

    @property
    def tuning_verdict(self) -> str:
        """How ``tune=True`` decided, in words: the winner's median ratio to the
        default and the rounds it won, "no clear winner ... the default stands", "the
        machine was busy ... nothing stored", or that the tuning database held the
        decision; "" without tuning."""
        return self._prepared.op.tuning_verdict

    @property
    def compile_seconds(self) -> float:
        return self._prepared.op.compile_seconds

    @property
    def weights(self) -> Optional[np.ndarray]:
        """The compiled-in constant weights (read-only), or None."""
        return None if self._constant is None else self._prepared.op.constants[self._constant]

    def __call__(self, *arrays: Any, out: Any = None) -> np.ndarray:
        if self._direct is not None:
            result = self._direct.run(_compiled.stream(),
                                  arrays if self._constant is None else self._with_constant(arrays), out)
            if result is not None:
                return result
        if len(arrays) != self._n:
            raise TypeError(f"{self.kind} takes {self._n} inputs {self.input_names}, got {len(arrays)}")
        p = self._prepared
        dtype = self._dtype
        for i, a in enumerate(arrays):
            if type(a) is not np.ndarray or a.dtype != dtype:
                arrays = self._convert(arrays)
                break
        inputs = list(arrays)
        if any(self._copy):
            inputs = [np.ascontiguousarray(a) if c else a for a, c in zip(inputs, self._copy)]
        if self._constant is not None:
            inputs.insert(self._constant, p.op.constants[self._constant])
        try:
            if out is None:
                return p.run(inputs, np.empty(p.output_shape, dtype))
            p.run(inputs, _arrays.check_out(out, p.output_shape, dtype, inputs))
        except ValueError:
            self._check_shapes(arrays)  # names the argument at fault, if one is
            raise
        return out  # the caller's own object (an ndarray, a torch tensor, ...)

    def _check_shapes(self, arrays: Sequence[np.ndarray]) -> None:
        """Raise for the first argument whose shape differs from the one compiled for,
        named (oneDNN's refusal only says "input 0")."""
        for name, a, expected in zip(self.input_names, arrays, self._shapes):
            if tuple(a.shape) != expected:
                raise ValueError(f"{self.kind}: {name} has shape {tuple(a.shape)}, the operation "
                                 f"was compiled for {expected}")

    def _with_constant(self, arrays: tuple) -> tuple:
        c = self._constant
        assert c is not None
        return arrays[:c] + (self._prepared.op.constants[c],) + arrays[c:]

    def _convert(self, arrays: tuple) -> tuple:
        converted = tuple(_arrays.as_input(n, a) for n, a in zip(self.input_names, arrays))
        for n, a in zip(self.input_names, converted):
            if a.dtype != self._dtype:
                raise TypeError(f"{self.kind}: {n} has dtype {a.dtype}, the operation was compiled "
                                f"for {self._dtype}")
        return converted

    def __repr__(self) -> str:
        return (f"Operation({self.kind}, inputs={self.input_names}, dtype={self._dtype}, "
                f"output_shape={self.output_shape}, lowering={self.lowering!r})")


class FusedOperation(Operation):
    """An op with its epilogue (``post_ops``), or ConvTranspose in its int8 form
    (``quantize``), compiled once by ``compile_op``. Call it with the inputs, then each
    binary post-op's operand, in order (quantized ones as their integer arrays: the scales
    and zero points are compiled in): ``op(x, w, b, skip, out=y)``."""

    def __init__(self, kind: str, names: tuple[str, ...], attrs: dict[str, Any],
                 call: Any, binary: list[bool]) -> None:
        # Not Operation.__init__: an Operation holds one compiled op, this one the fused
        # call's stages (``_fused._Call``); the properties below answer from them.
        self.kind, self.attrs, self.input_names = kind, attrs, names
        self._call, self._binary = call, binary
        self._n = len(names) + sum(binary)

    @property
    def output_shape(self) -> tuple[int, ...]:
        return self._call.shape

    @property
    def dtype(self) -> np.dtype:
        return self._call.dtype

    @property
    def lowering(self) -> str:
        """"native", or how the op was rewritten for the linked oneDNN (it then runs
        alone, and the post-ops' partitions after it)."""
        return str(self._call.lowering)

    @property
    def compute_dtype(self) -> np.dtype:
        """The dtype of the oneDNN partition computing the op: float32 where it is
        quantized (oneDNN dequantizes into it) or where a bf16/f16 chain runs in f32
        between TypeCasts (this CPU's oneDNN has no kernel for the dtype), else the
        inputs'."""
        return np.dtype(np.float32) if self._call.runs_in_f32 else np.dtype(self._call.compute)

    @property
    def threads(self) -> Optional[int]:
        return None  # oneDNN's default

    @property
    def tuning(self) -> Optional[dict[str, float]]:
        return None

    @property
    def compile_seconds(self) -> float:
        return float(self._call.compile_seconds)

    @property
    def weights(self) -> Optional[np.ndarray]:
        return None

    @property
    def partitions(self) -> int:
        """How many oneDNN partitions a call runs: 1 where the linked oneDNN fuses the op,
        its bias, post-ops and quantization into one."""
        return int(self._call.partitions)

    def __call__(self, *arrays: Any, out: Any = None) -> Any:
        if len(arrays) != self._n:
            raise TypeError(f"{self.kind} with post-ops takes {self._n} arrays (inputs "
                            f"{self.input_names}, then {sum(self._binary)} post-op operand(s)), "
                            f"got {len(arrays)}")
        inputs = [_arrays.to_numpy(n, a) for n, a in zip(self.input_names, arrays)]
        rest = iter(_arrays.to_numpy(f"operand {i}", a) for i, a in enumerate(arrays[len(inputs):]))
        operands = [next(rest) if b else None for b in self._binary]
        return _fused.execute(self._call, inputs, operands, out,
                              lambda y: _function(self.kind)(*inputs, **self.attrs, out=y))

    def __repr__(self) -> str:
        return (f"FusedOperation({self.kind}, inputs={self.input_names}, "
                f"operands={sum(self._binary)}, dtype={self.dtype}, "
                f"output_shape={self.output_shape}, partitions={self.partitions})")


def __dir__() -> list[str]:
    return list(__all__)
