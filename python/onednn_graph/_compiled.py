"""Single-op partitions compiled once and reused: the functional API's engine.

The recipe is oneDNN's ``examples/graph/cpu_single_op_partition.cpp``: strided
logical tensors that describe the caller's arrays exactly, one op, one
partition, compiled for the CPU engine; each call wraps the arrays in Tensors
(no copy) and executes without the GIL.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Hashable, Sequence

import numpy as np

from . import _arrays, _core, _dtypes
from .errors import Error, UnsupportedError

_engine: Any = None
_local = threading.local()
_lock = threading.Lock()


def engine() -> Any:
    """The process's CPU engine (created once)."""
    global _engine
    if _engine is None:
        with _lock:
            if _engine is None:
                _engine = _core.Engine("cpu", 0)
    return _engine


def stream() -> Any:
    """This thread's stream on the CPU engine (streams are not shared by threads)."""
    s = getattr(_local, "stream", None)
    if s is None:
        s = _local.stream = _core.Stream(engine())
    return s


def _freeze(attrs: dict[str, Any]) -> tuple:
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in attrs.items()))


def _meta(array: np.ndarray) -> tuple[tuple[int, ...], tuple[int, ...]]:
    return tuple(array.shape), tuple(_arrays.element_strides(array))


class CompiledOp:
    """One op compiled for fixed dtypes, shapes and strides of its arguments."""

    def __init__(self, kind: str, attrs: dict[str, Any], dtype: str,
                 inputs: Sequence[tuple], output: tuple) -> None:
        self.kind, self.attrs, self.dtype = kind, attrs, dtype
        n = len(inputs)
        self.inputs = [_core.LogicalTensor(i, dtype, shape, strides)
                       for i, (shape, strides) in enumerate(inputs)]
        self.output = _core.LogicalTensor(n, dtype, output[0], output[1])
        describe = f"{kind} ({dtype}, attrs {attrs})"
        try:
            graph = _core.Graph("cpu", "strict")
            graph.add_op(_core.Op(0, kind, self.inputs, [self.output], attrs))
            graph.finalize()
            partitions = graph.get_partitions()
            if len(partitions) != 1 or not partitions[0].is_supported:
                raise UnsupportedError(f"oneDNN {'.'.join(map(str, _core.version()[:3]))} "
                                       f"has no kernel for {describe}")
            self.compiled = partitions[0].compile(self.inputs, [self.output], engine())
        except UnsupportedError:
            raise
        except Error as exc:
            raise UnsupportedError(f"oneDNN cannot compile {describe}: {exc.message}",
                                   exc.status) from None
        got = self.compiled.query_logical_tensor(n)
        if got.shape != tuple(output[0]):
            raise Error(f"oneDNN inferred output shape {got.shape} for {describe}, "
                        f"expected {tuple(output[0])}", "invalid_shape")

    def execute(self, inputs: Sequence[np.ndarray], output: np.ndarray) -> None:
        e = engine()
        ins = [_core.Tensor(lt, e, a) for lt, a in zip(self.inputs, inputs)]
        self.compiled.execute(stream(), ins, [_core.Tensor(self.output, e, output)])


class Cache:
    """A bounded, thread-safe LRU of compiled ops with hit/miss statistics."""

    def __init__(self, capacity: int = 256) -> None:
        self._items: OrderedDict[Hashable, CompiledOp] = OrderedDict()
        self._lock = threading.Lock()
        self.capacity = capacity
        self.hits = self.misses = 0

    def get(self, kind: str, attrs: dict[str, Any], dtype: str,
            inputs: Sequence[np.ndarray], output: np.ndarray) -> CompiledOp:
        in_meta = [_meta(a) for a in inputs]
        out_meta = _meta(output)
        key = (kind, _freeze(attrs), dtype, tuple(in_meta), out_meta)
        with self._lock:
            op = self._items.get(key)
            if op is not None:
                self._items.move_to_end(key)
                self.hits += 1
                return op
            self.misses += 1
        op = CompiledOp(kind, attrs, dtype, in_meta, out_meta)  # compile outside the lock
        with self._lock:
            self._items[key] = op
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)
        return op

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._items)


CACHE = Cache()


def run(kind: str, attrs: dict[str, Any], inputs: Sequence[np.ndarray], output: np.ndarray) -> np.ndarray:
    """Compile (or reuse) and execute one op on the given arrays."""
    dtype = _dtypes.dtype_name(output.dtype)
    CACHE.get(kind, attrs, dtype, inputs, output).execute(inputs, output)
    return output
