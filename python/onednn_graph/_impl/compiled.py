"""Single-op partitions compiled once and reused: the functional API's engine.

The recipe is oneDNN's ``examples/graph/cpu_single_op_partition.cpp``: strided
logical tensors that describe the caller's arrays exactly, one op, one
partition, compiled for the CPU engine; each call hands the arrays to oneDNN
(``_core.DirectCall`` or ``CompiledPartition.execute_arrays``: no copy, no
Tensor objects) and executes without the GIL.

Constant inputs (``constant_weights``) get the ``constant`` property, so oneDNN
3.2 reorders them once and keeps the result in its constant-tensor cache. That
cache is keyed by the compiled kernel, not by the data (backend/dnnl/kernels/
*.hpp: ``constant_key_ = this``): a compiled op with a constant input must
therefore only ever see one buffer with one content. ``CompiledOp`` enforces it
by owning a private read-only copy of each constant input, and constant ops are
never shared through the cache.
"""

from __future__ import annotations

import threading
import time
from typing import Any, NamedTuple, Optional, Sequence

import numpy as np

from .. import _core
from . import arrays as _arrays, batch_parts as _batch_parts, machine_load as _machine_load
from ..errors import Error, UnsupportedError

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
    """This thread's stream on the CPU engine (streams are not shared by threads).
    On the functional API's hot path: the made stream is read without a default."""
    try:
        return _local.stream
    except AttributeError:
        s = _local.stream = _core.Stream(engine())
        return s


def meta(array: np.ndarray) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(shape, element strides) as a logical tensor describes the array."""
    return tuple(array.shape), tuple(_arrays.element_strides(array))


def array_for(lt: Any, fill: Optional[float] = None) -> np.ndarray:
    """A new array with exactly logical tensor `lt`'s dtype, shape and element strides
    (any positive strides; ``meta`` read backwards), filled with `fill` (None: left
    uninitialised)."""
    dtype = _arrays.numpy_dtype(lt.dtype)
    shape, strides = tuple(lt.shape), tuple(lt.strides)
    span = max(1 + sum((d - 1) * s for d, s in zip(shape, strides)) if all(shape) else 1, 1)
    buffer = np.empty(span, dtype) if fill is None else np.full(span, fill, dtype)
    return np.lib.stride_tricks.as_strided(buffer, shape, [s * dtype.itemsize for s in strides])


class CompiledOp:
    """One op compiled for fixed dtypes, shapes and strides of its arguments.

    ``constants`` maps input positions to arrays that are compiled in as
    constant; they are copied here (read-only), and every execution must be
    handed that copy. ``threads`` > 0 compiles and runs it on at most that
    many OpenMP threads (``_plan.threads``); 0 is oneDNN's default. With ``rows``
    (``_impl.batch_parts``) it is compiled for that many samples and runs the batch
    in parts; ``inputs`` and ``output`` still describe the whole batch.
    """

    compiled: Any  # the one compiled partition (``_as_f32.ChainOp`` has several)
    runs_in_f32 = False  # a bf16/f16 op in f32 between TypeCasts (``_as_f32.ChainOp``)

    def __init__(self, kind: str, attrs: dict[str, Any], dtype: str,
                 inputs: Sequence[tuple], output: tuple,
                 constants: Optional[dict[int, np.ndarray]] = None,
                 input_order: tuple[int, ...] = (), threads: int = 0,
                 output_dtype: Optional[str] = None, rows: int = 0, owned: bool = False) -> None:
        self.kind, self.attrs, self.dtype = kind, attrs, dtype
        # `inputs`, `constants` and execute()'s arrays are in the caller's order;
        # the op takes caller position input_order[j] as its input j.
        self.input_order = input_order
        order = input_order or tuple(range(len(inputs)))
        self.lowering = "native"  # how the spec-level op became this one (set by _call)
        # compile_op(..., tune=True): median seconds per call of each lowering tried
        self.tuning: Optional[dict[str, float]] = None
        self.tuning_verdict = ""  # how tuning decided (_tuning.verdict)
        self.constants = private_copies(constants, owned)
        n = len(inputs)
        #: Samples per part where the batch runs in parts, else 0; the caller's inputs
        #: whose first axis is the batch.
        self.rows, self.batched = _batch_parts.split(kind, order, rows, output[0][0] if output[0] else 0)

        def tensors(rows: int) -> tuple[list[Any], Any]:
            """The op's logical tensors for parts of `rows` samples (0: the whole batch)."""
            part = _batch_parts.part_shape
            lts = [_core.LogicalTensor(j, dtype, part(inputs[i][0], rows * (i in self.batched)), inputs[i][1],
                                       "strided", "constant" if i in self.constants else "variable")
                   for j, i in enumerate(order)]
            # output_dtype: a TypeCast's (_as_f32); every other op has one dtype
            return lts, _core.LogicalTensor(n, output_dtype or dtype, part(output[0], rows), output[1])

        self.inputs, self.output = tensors(0)
        ins, out = tensors(self.rows) if self.rows else (self.inputs, self.output)
        describe = f"{kind} ({dtype}, attrs {attrs})"
        start = time.perf_counter()
        try:
            graph = _core.Graph("cpu", "strict")
            graph.add_op(_core.Op(0, kind, ins, [out], _batch_parts.part_attrs(kind, attrs, self.rows)))
            graph.finalize()
            # "debug" runs only oneDNN's single-op passes. A graph of one op has
            # nothing to fuse, and the fusion policy's pattern matching costs
            # 7-11 ms per new problem (0.3 ms this way; the same kernels).
            partitions = graph.get_partitions("debug")
            if len(partitions) != 1 or not partitions[0].is_supported:
                raise UnsupportedError(f"oneDNN {'.'.join(map(str, _core.version()[:3]))} "
                                       f"has no kernel for {describe}")
            self.compiled = partitions[0].compile(ins, [out], engine(), threads)
        except UnsupportedError:
            raise
        except Error as exc:
            raise UnsupportedError(f"oneDNN cannot compile {describe}: {exc.message}",
                                   exc.status) from None
        self.compile_seconds = time.perf_counter() - start
        self.threads = self.compiled.threads  # 0 where OpenMP's threads cannot be set
        got = self.compiled.query_logical_tensor(n)
        if got.shape != tuple(out.shape):
            raise Error(f"oneDNN inferred output shape {got.shape} for {describe}, "
                        f"expected {tuple(out.shape)}", "invalid_shape")

    def direct_call(self, shape: Sequence[int], dtype: np.dtype) -> Any:
        """The op as one native call on the caller's arrays (``_core.DirectCall``),
        writing a new result of `shape` and `dtype` or the caller's ``out``."""
        batched = _batch_parts.batched_positions(self.kind) if self.rows else ()
        return _core.DirectCall(self.compiled, self.input_order, shape, dtype, batched, self.rows)

    @property
    def label(self) -> str:
        """How it runs: the lowering, and the thread count where one was set."""
        return self.lowering + (f", on {self.threads} thread{'s' * (self.threads > 1)}"
                                if self.threads else "")

    def execute(self, inputs: Sequence[np.ndarray], output: np.ndarray) -> None:
        """Run on `inputs` (a constant one must be ``self.constants[i]`` itself) writing `output`."""
        if not self.rows:
            self._execute(inputs, output)
            return
        for part_inputs, part_output in _batch_parts.parts(self.rows, self.batched, inputs, output):
            self._execute(part_inputs, part_output)

    def _execute(self, inputs: Sequence[np.ndarray], output: np.ndarray) -> None:
        if self.input_order:
            inputs = [inputs[i] for i in self.input_order]
        self.compiled.execute_arrays(stream(), inputs, (output,))


def private_copy(array: np.ndarray) -> np.ndarray:
    copy = np.array(array, copy=True, order="C")
    copy.flags.writeable = False
    return copy


def private_copies(constants: Optional[dict[int, np.ndarray]], owned: bool = False) -> dict[int, np.ndarray]:
    """An op's constant inputs (by position) as its own read-only arrays: copies of the
    caller's, or, where they are `owned` (a form's read-only matrices, made for the op and
    written by nobody), the arrays themselves: one copy fewer of the weights, beside the
    one oneDNN packs."""
    if owned:
        assert all(not a.flags.writeable for a in (constants or {}).values())
        return dict(constants or {})
    return {i: private_copy(a) for i, a in (constants or {}).items()}


class CacheInfo(NamedTuple):
    """Statistics of the compiled-call cache (``onednn_graph.cache.cache_info()``): single-op
    calls and fused ones (``post_ops=``, int8 ``quantize=``) together."""

    hits: int
    misses: int
    size: int  # entries: single + fused
    capacity: int
    compile_seconds: float  # total time spent compiling on misses
    # Added after the five above, with defaults: a CacheInfo built or unpacked by
    # position as before still works.
    single: int = 0  # entries of single-op calls
    fused: int = 0  # entries of fused calls


class FusedEntry:
    """What a fused call's cache entry (``_fused._Call``) derives from: the cache
    holds these beside single-op calls (``_call.Prepared``) in one LRU order, counts
    them apart, and ``cached_ops`` lists the entry itself (it has no one compiled op)."""

    __slots__ = ()


class Cache(_core.CallCache):
    """The one bounded LRU of compiled calls, with statistics: single-op calls
    (``_call.Prepared``, keyed by ``_call``'s signatures) and fused calls
    (``FusedEntry``, keyed by ``_fused``'s tuples, which never equal those),
    so one capacity bounds both. Native (``cpp/call_cache.cpp``): a cached
    single-op call with a direct way to run is found and run in one native call
    (``call``; a fused entry has none, so it never answers there); every method
    runs under the GIL, which makes it thread-safe."""

    def __init__(self, capacity: int = 256) -> None:
        super().__init__(capacity)

    def ops(self) -> list[Any]:
        """The compiled op of each cached single-op call and each fused call's entry,
        least recently used first (``onednn_graph.reproducer`` writes any of them out)."""
        return [call if isinstance(call, FusedEntry) else call.op for call in self.values()]

    def info(self) -> CacheInfo:
        calls = self.values()
        fused = sum(isinstance(call, FusedEntry) for call in calls)
        return CacheInfo(self.hits, self.misses, len(calls), self.capacity, self.compile_seconds,
                         len(calls) - fused, fused)


CACHE = Cache()


def cache_info() -> CacheInfo:
    """Hits, misses, size, capacity and total compile time of the functional API's cache,
    and how many of its entries are single-op calls and fused ones (``post_ops=``, int8
    ``quantize=``, ``compile_op(..., post_ops=...)``): one cache, one capacity.

    Examples
    --------
    >>> import onednn_graph as og
    >>> og.cache.clear_cache()
    >>> og.cache.cache_info().hits
    0
    """
    return CACHE.info()


def cached_ops() -> list[Any]:
    """The compiled op of each call the functional API keeps, least recently used
    first: what ``onednn_graph.reproducer`` writes out as oneDNN ran it. A fused call
    (``post_ops=``, int8 ``quantize=``) is listed as its fused entry (its ``kind``,
    ``partitions``, ``lowering``, ``compile_seconds``), which ``reproducer`` writes out
    as the fused call's graph.

    Examples
    --------
    >>> import numpy as np, onednn_graph as og
    >>> og.cache.clear_cache()
    >>> one = np.ones((1,), np.float32)  # with a bias: a ConvTranspose on any size
    >>> _ = og.conv_transpose(np.ones((1, 2, 1), np.float32), np.ones((1, 1, 1), np.float32), one)
    >>> [op] = og.cache.cached_ops()
    >>> og.reproducer.reproducer(op).native["graph"][0]["kind"]
    'ConvTranspose'
    """
    return CACHE.ops()


#: Counts clear_cache and set_cache_capacity calls: a caller that keeps a cached call's
#: native runner beside the cache (onednn_graph.torch's layers) drops it when this moves.
generation = 0


def busy_threads() -> int:
    """The thread count a busy machine leaves new calls (``machine_load.LIMIT``; 0 on a
    quiet one), its counters read again first where a window has passed: a call's
    cost on a quiet machine is one clock reading."""
    limit = _machine_load.LIMIT
    if time.monotonic() >= limit.next_check:
        limit.refresh()
    return limit.threads


def call_threads() -> tuple[int, int]:
    """What a new call is compiled for: ``busy_threads()``, and the calling thread's
    OpenMP thread count now (``torch.set_num_threads`` or ``omp_set_num_threads`` set
    it; PyTorch and oneDNN 3.2 share one OpenMP runtime). oneDNN sizes a kernel's work
    split by the count when it compiles it, and runs that many threads whatever the count
    later: a call compiled before a change would keep the old count. So both are part of
    a call's cache signature (``_call.signature_values``), and a DataLoader worker's
    ``torch.set_num_threads(1)`` gets calls compiled for one thread."""
    return busy_threads(), _core.max_threads()


def current_generation() -> tuple[int, int, int]:
    """``generation`` and ``call_threads()``: a caller that keeps a cached call's
    native runner looks it up again when one moves, as a functional call would. (Written
    out: a layer asks it on every call.)"""
    limit = _machine_load.LIMIT
    if time.monotonic() >= limit.next_check:
        limit.refresh()
    return generation, limit.threads, _max_threads()


_max_threads = _core.max_threads


def clear_cache() -> None:
    """Drop every compiled call the functional API keeps (single-op and fused), and
    zero the statistics."""
    global generation
    CACHE.clear()
    generation += 1


def set_cache_capacity(capacity: int) -> None:
    """Keep at most `capacity` compiled calls, single-op and fused together (least
    recently used go first, of either kind; 0 disables)."""
    global generation
    CACHE.capacity = capacity
    generation += 1
