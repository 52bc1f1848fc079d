"""Run a loaded graph on oneDNN and check it against the reference, or time it.

The graph goes through the spec-level objects (``_graph``: finalize, get
partitions, compile, execute), so lowerings apply exactly as for a user's own
Graph. Inputs are seeded random values in [-1, 1) rounded to their dtype, or
in exact mode small integers (as benchdnn fills its inputs) for which an f32
accumulator is exact. Outputs start as NaN, so an element oneDNN never writes
fails the check. Each op is compared with ``reference`` on the very inputs
oneDNN read, with ``tolerance``'s bound.

A graph with an epilogue (BiasAdd, post-ops, Dequantize / Quantize: what oneDNN
fuses into one partition, whose values between ops are never written) is checked
at its outputs against the whole graph's reference (``graph_reference``). Its
quantized (u8/s8) inputs are filled, like benchdnn's int8 ones, with the zero point
plus small even steps, which every int8 kernel computes exactly (see
``_impl.fused._WITHOUT_VNNI``).

Perf mode times what the library runs. A graph of the package's ops times each op as
the functional API's own call on the graph's arrays, made once (``as_called``:
``og.conv_transpose(..., out=...)`` and its siblings, or ``compile_op``'s call for a
thread count or constant weights): its plan, lowering, form and thread count for the
problem, its native hot path. A graph with an epilogue, or an fpmath mode the
functional API has no argument for, is timed as oneDNN's partitions of it, which is how
the API's fused calls run it too.
"""

from __future__ import annotations

import contextlib
import functools
import math
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional, Sequence

import numpy as np

from .. import (_core, graph as _graph, graph_json as _graph_json, ops as _ops, reference,
               shapes, tolerance)
from .._impl import (compiled as _compiled, arrays as _arrays, plan as _plan,
                     registry as _registry, tuning as _tuning, version as _version)
from .._impl.call import prepare, tuning_enabled
from . import graph_reference as _graph_reference
from .._core import Tensor
from ..operation import Operation, compile_op
from ..errors import UnsupportedError

#: The op kinds the driver checks: those the reference covers (the spec's ops, the
#: legacy name, the convolution ops some calls run as, and the epilogue oneDNN fuses
#: after them).
CONVOLUTIONS = tuple(_registry.SPECS) + (_registry.LEGACY.kind,)
#: ...and MatMul, which the kernel == stride formulation runs (``_impl.matmul_form``):
#: its reproducers hold one.
REFERENCED = CONVOLUTIONS + ("MatMul",)
CHECKED = REFERENCED + _graph_reference.EPILOGUE


def reference_of(kind: str) -> Any:
    """`kind`'s first-principles reference (``onednn_graph.reference``)."""
    return getattr(reference, _registry.function(kind))


@dataclass
class OpCheck:
    """One op's comparison with the reference."""

    op_id: int
    kind: str
    dtype: str
    terms: int
    comparison: tolerance.Comparison

    def __bool__(self) -> bool:
        """True exactly when the op agrees with the reference (its comparison does)."""
        return bool(self.comparison)


@dataclass
class Result:
    """What one run of a graph gave: true exactly when every op was checked and agreed
    (``passed``; a perf-mode run checks nothing, so it is false)."""

    passed: Optional[bool]                # None in perf mode
    checks: list[OpCheck] = field(default_factory=list)
    compile_ms: float = 0.0
    median_ms: Optional[float] = None
    flops: int = 0
    lowerings: list[str] = field(default_factory=list)
    partitions: int = 0                   # how many oneDNN returned for the graph
    # of them, those oneDNN reported unsupported for their bf16/f16 dtype (no kernel
    # here: oneDNN 3.13 then returns a fused chain op by op), run in f32 between TypeCasts
    unsupported_low_precision: int = 0
    # perf mode: how the graph was timed (a key of TIMED_AS), and the OpenMP threads
    # each op ran on, by op id (0: oneDNN's default)
    timed_as: str = ""
    threads: dict[int, int] = field(default_factory=dict)

    @property
    def gflops(self) -> Optional[float]:
        return self.flops / self.median_ms / 1e6 if self.median_ms else None

    def thread_counts(self) -> list[int]:
        """The OpenMP threads the ops of a perf run ran on, each count once, oneDNN's
        default (0 in ``threads``) as the count it stands for here."""
        return sorted({n or _version.onednn_threads()[0] for n in self.threads.values()})

    def threads_text(self) -> str:
        """The threads of a perf run in words: "1 thread", "2 threads (oneDNN's
        default)", or each op's where they differ."""
        def words(n: int) -> str:
            count = n or _version.onednn_threads()[0]
            return f"{count} thread{'s' * (count != 1)}" + (" (oneDNN's default)" if not n else "")
        if len(set(self.threads.values())) == 1:
            return words(next(iter(self.threads.values())))
        return ", ".join(f"op {op_id} {words(n)}" for op_id, n in self.threads.items())

    def __bool__(self) -> bool:
        return self.passed is True

    def __repr__(self) -> str:
        return f"<Result {self._verdict()}>"

    def _verdict(self) -> str:
        """Why the result is true or false, in words (its repr)."""
        if self.passed is None:
            return f"not checked (perf mode): median {self.median_ms} ms, {self.flops} FLOPs"
        if self.passed:
            return f"passed: {len(self.checks)} op(s) within tolerance"
        failed = "; ".join(f"op {c.op_id} {c.kind} {c.dtype}: {c.comparison}"
                           for c in self.checks if not c)
        return f"FAILED: {failed}"


@dataclass
class _Call:
    """An op as a reference call: function, input ids, keyword arguments, and the
    number of f32 terms each output sums (``tolerance``) and its FLOPs."""

    fn: Any
    input_ids: list[int]
    kwargs: dict[str, Any]
    terms: int
    flops: int


def _call(op: _graph.Op) -> _Call:
    kind, attrs = op.kind, op.attrs
    ids = [t.id for t in op.inputs]
    if kind == "MatMul":
        flags = {k: bool(attrs.get(k, False)) for k in ("transpose_a", "transpose_b")}
        src = op.inputs[0].shape
        k = src[-2] if flags["transpose_a"] else src[-1]
        return _Call(reference.matmul, ids, flags, k, 2 * k * math.prod(op.outputs[0].shape))
    spec = _registry.spec(kind)
    shape_attr = _registry.SHAPE_ATTRS[kind]
    if shape_attr:
        ids = ids[:len(spec.inputs)]  # an s32 shape input gives what the output shape already says
        attrs.setdefault(shape_attr, list(op.outputs[0].shape))
    in_shapes = [tuple(t.shape) for t in op.inputs[:len(ids)]]
    current, kw, _ = shapes.current_form(kind, attrs)
    plan = shapes.plan(current, in_shapes, **kw)
    return _Call(reference_of(kind), ids, attrs, tolerance.accumulation_terms(plan, in_shapes),
                 _plan.problem(plan, in_shapes).flops)


class OutsideTheDriver(ValueError):
    """A graph holds an op the driver cannot check (benchdnn lines on other ops are
    skipped for it, not counted as bad input)."""


def outside_the_driver(graph: _graph.Graph) -> list[str]:
    """'op ID KIND' of each op of `graph` the driver cannot check; every op when none
    is of the ops the package computes (an epilogue op alone is oneDNN's, not ours)."""
    if not any(op.kind in REFERENCED for op in graph.ops):
        return [f"op {op.id} {op.kind}" for op in graph.ops]
    return [f"op {op.id} {op.kind}" for op in graph.ops if op.kind not in CHECKED]


def check_runnable(graph: _graph.Graph) -> None:
    """ValueError unless every op is one the driver can check, with known shapes."""
    outside = outside_the_driver(graph)
    if outside:
        raise OutsideTheDriver(
            f"{', '.join(outside)}: the driver runs graphs of {', '.join(REFERENCED)} and "
            "the epilogue oneDNN fuses after them (BiasAdd, Dequantize, Quantize, the "
            "onednn_graph.post ops): the ops the reference covers")
    for op in graph.ops:
        for t in op.inputs + op.outputs:
            if t.shape is None or any(d < 0 for d in t.shape) or t.strides is None:
                raise ValueError(f"op {op.id}: tensor {t.id} needs a known shape and strides "
                                 "(give them with --in-shapes)")


#: float64 arrays the check keeps per tensor besides oneDNN's: the reference's values,
#: and the magnitudes or bounds its tolerance comes from (tolerance.compare,
#: graph_reference); temporaries inside the reference come on top.
_REFERENCE_COPIES = 2


def _bytes_needed(lt: Any, checked: bool) -> int:
    """Bytes of `lt`'s array (``array_for``'s buffer) and, when `checked`, of its
    float64 copies for the reference."""
    array = _graph_json.strided_span(lt.shape, lt.strides) * _arrays.numpy_dtype(lt.dtype).itemsize
    return array + (_REFERENCE_COPIES * 8 * math.prod(lt.shape) if checked else 0)


def _available_memory() -> Optional[int]:
    """Bytes the system can hand out now without swapping (Linux's MemAvailable);
    None where it does not say."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def memory_limit() -> tuple[int, str]:
    """The most bytes a case's arrays may take: what the machine holds (the reader's
    limit) or, when less, what is available now. The runner fills every array, so
    Linux hands out the pages and, past what is available, its OOM killer ends the
    run (or another process) instead of NumPy raising MemoryError."""
    limit = _graph_json.memory_limit()
    available = _available_memory()
    if available is not None and available < limit[0]:
        return available, (f"the {_graph_json.byte_count(available)} of memory available "
                           "on this machine now")
    return limit


def check_memory(graph: _graph.Graph, checked: bool = True) -> None:
    """ValueError, before anything is allocated, when the arrays of `graph` (with
    `checked`, also their float64 reference copies) need more bytes than
    memory_limit(): after --in-shapes a case can be far bigger than its file, and
    NumPy's MemoryError, or the OOM killer, would end the run."""
    lts = {t.id: t for op in graph.ops for t in op.inputs + op.outputs}
    needed = {tid: _bytes_needed(lt, checked) for tid, lt in lts.items()}
    total = sum(needed.values())
    limit, limit_text = memory_limit()
    if total > limit:
        tid = max(needed, key=lambda i: needed[i])
        lt = lts[tid]
        raise ValueError(f"tensor {tid} of shape {list(lt.shape)}, strides {list(lt.strides)} "
                         f"and dtype {lt.dtype} needs {needed[tid]} bytes"
                         + (" with its float64 reference copies" if checked else "")
                         + f"; the case needs {total} bytes in all, more than {limit_text}")


@contextlib.contextmanager
def _allocating(lt: Any) -> Iterator[None]:
    """Allocation of `lt`'s array, where NumPy's MemoryError (memory other processes
    hold; check_memory counts the machine's) or OverflowError (byte strides beyond
    int64) becomes a ValueError naming the tensor."""
    try:
        yield
    except (MemoryError, OverflowError) as exc:
        raise ValueError(f"tensor {lt.id} of shape {list(lt.shape)}, strides {list(lt.strides)} "
                         f"and dtype {lt.dtype}: cannot allocate its array "
                         f"({_bytes_needed(lt, False)} bytes): {exc}") from None


def tune(graph: _graph.Graph) -> list[tuple[int, str, Any]]:
    """Tune each op of `graph` alone, as ``compile_op(..., tune=True)`` does for its
    shapes, strides, dtype and attributes (on inputs of ones), keeping the decisions
    in the tuning database; returns (op id, kind, the compiled op) per op.

    The decisions serve later calls of those problems with tuning on (the
    functional API under ``set_tuning(True)``, ``compile_op(..., tune=True)``); a
    graph replayed by ``run`` is compiled as oneDNN partitions and not tuned. A
    stored decision for another formulation than the default is measured again
    (``_tuning.recheck``), and replaced where it no longer wins clearly.
    """
    check_runnable(graph)
    check_memory(graph, checked=False)
    done = []
    for op in graph.ops:
        if op.kind not in CONVOLUTIONS:
            continue  # an epilogue op: nothing of its own to tune
        call = _call(op)
        names = _registry.input_names(op.kind)[:len(call.input_ids)]
        lts = {t.id: t for t in op.inputs}
        arrays = []
        for i in call.input_ids:
            with _allocating(lts[i]):
                arrays.append(_compiled.array_for(lts[i], 1.0))
        out = op.outputs[0]
        plan = _plan.plan_call(op.kind, names, arrays, call.kwargs)
        with _tuning.recheck():
            prepared = prepare(plan, arrays, (tuple(out.shape), tuple(out.strides)), tune=True)
        done.append((op.id, op.kind, prepared.op))
    return done


#: How perf mode times a graph (``Result.timed_as``), in words: each op by the functional
#: API's call, or where the API has no argument for the call (a thread count, constant
#: weights) by ``compile_op``'s (``as_called``); or as oneDNN's partitions of the graph.
TIMED_AS = {"api": "as the functional API runs it", "compile_op": "as og.compile_op runs it",
            "partitions": "as oneDNN's partitions of the graph"}


def times_as_called(graph: _graph.Graph) -> bool:
    """Whether perf mode times `graph` as functional-API calls: every op is one of the
    package's (an epilogue runs as oneDNN's partitions, in the API's fused calls
    too) and the graph's fpmath mode is strict (the API has no other)."""
    return graph.fpmath_mode == "strict" and all(op.kind in CONVOLUTIONS for op in graph.ops)


@dataclass
class AsCalled:
    """One op of a graph as the library runs it: its compiled call (what
    ``og.cache.cached_ops()`` lists: ``lowering``, ``threads``, ``compile_seconds``)
    and one execution of it (``step``) on the graph's arrays, made once."""

    op_id: int
    compiled: Any
    step: Callable[[], Any]
    way: str  # "api" or "compile_op" (TIMED_AS)


def as_called(graph: _graph.Graph, arrays: dict[int, np.ndarray],
              threads: Optional[int] = None) -> list[AsCalled]:
    """Each op of `graph` (``times_as_called``), in dependency order, as the library runs
    it on `arrays` (by tensor id, the outputs included), called once (its first call
    compiles it).

    By default the step is the functional API's own call, ``og.<op>(*inputs, out=...,
    **attrs)``: its plan, lowering, form, thread count (``_plan.threads``) and tuning,
    its cache, and its hot path, the native call a repeated call is. Where the API has
    no argument for the call, it is ``compile_op``'s: `threads` given (0: oneDNN's
    default; ``compile_op(..., threads=N)``) or constant weights
    (``constant_weights=True``): the same plan, compiled with that, and called as an
    ``Operation`` (the same native call, without the API's cache lookup)."""
    if threads and not _core.can_limit_threads():
        threads = None  # oneDNN runs on its own threads whatever is asked (the CLI says so)
    done = []
    for op in _in_order(graph.ops):
        call = _call(op)
        names = _registry.input_names(op.kind)[:len(call.input_ids)]
        inputs = [arrays[i] for i in call.input_ids]
        out = arrays[op.outputs[0].id]
        weights = names.index("weights") if "weights" in names else None
        constant = weights if weights is not None and \
            op.inputs[weights].property == "constant" else None
        # The API's own call, unless it has no argument for this one or its cache is off
        # (og.cache.set_cache_capacity(0): each call would compile again).
        if threads is None and constant is None and _compiled.CACHE.capacity:
            function = getattr(_ops, _registry.function(op.kind))
            step: Callable[[], Any] = functools.partial(function, *inputs, out=out, **call.kwargs)
            step()  # the first call plans and compiles it; the API's cache keeps it, newest
            compiled, way = _compiled.CACHE.ops()[-1], "api"
        else:
            plan = _plan.plan_call(op.kind, names, inputs, call.kwargs)
            prepared = prepare(plan, inputs, _compiled.meta(out), constant=constant,
                               tune=tuning_enabled(), threads=threads)
            operation = Operation(op.kind, plan.names, call.kwargs, prepared, constant,
                                  plan.input_shapes)
            taken = [a for i, a in enumerate(inputs) if i != constant]  # a constant is compiled in
            step, compiled = functools.partial(operation, *taken, out=out), prepared.op
            way = "compile_op"
        done.append(AsCalled(op.id, compiled, step, way))
    return done


def _median_ms(steps: Sequence[Callable[[], Any]], repeat: int) -> float:
    """The median milliseconds of `repeat` rounds of `steps`, after one untimed round
    (the result's pages touched, the kernels' data in cache)."""
    for step in steps:
        step()
    clock, times = time.perf_counter, []
    for _ in range(repeat):
        start = clock()
        for step in steps:
            step()
        times.append(clock() - start)
    return statistics.median(times) * 1e3


def _fill(rng: np.random.Generator, lt: Any, exact_r: Optional[int],
          zero_point: int = 0) -> np.ndarray:
    a = _compiled.array_for(lt)
    if lt.dtype in _arrays.QUANTIZED:  # zero point + {-4, -2, 0, 2, 4}: exact on every int8 kernel
        info = np.iinfo(a.dtype)
        a[...] = np.clip(zero_point + 2 * rng.integers(-2, 3, size=a.shape), info.min, info.max)
    elif exact_r is None:
        a[...] = rng.uniform(-1, 1, size=a.shape)
    else:
        a[...] = rng.integers(-exact_r, exact_r + 1, size=a.shape)
    return a


def _check_outputs(graph: _graph.Graph, calls: dict[int, _Call],
                   arrays: dict[int, np.ndarray]) -> list[OpCheck]:
    """Each output of the graph (a value no op reads) against the graph's reference."""
    produced = {t.id for op in graph.ops for t in op.outputs}
    values = {tid: a.astype(np.float64) for tid, a in arrays.items() if tid not in produced}
    bounds = {tid: np.zeros(a.shape) for tid, a in values.items()}
    # The f32 terms behind each value's bound: an epilogue op's output carries those of
    # the convolution before it (what the bound printed for it comes from).
    terms = {tid: 0 for tid in values}
    consumed = {t.id for op in graph.ops for t in op.inputs}
    checks = []
    for op in _in_order(graph.ops):
        call = calls.get(op.id)
        ids = call.input_ids if call else [t.id for t in op.inputs]
        out = op.outputs[0]
        values[out.id], bounds[out.id] = _graph_reference.evaluate(
            op, [values[i] for i in ids], [bounds[i] for i in ids], call)
        terms[out.id] = call.terms if call else max((terms[i] for i in ids), default=0)
        if out.id not in consumed:
            checks.append(OpCheck(op.id, op.kind, out.dtype, terms[out.id],
                                  tolerance.Comparison(arrays[out.id], values[out.id],
                                                       bounds[out.id] + 1e-30)))
    return checks


def _in_order(ops: list[_graph.Op]) -> list[_graph.Op]:
    """`ops` with every op after the ops whose outputs it reads."""
    made_by = {t.id: op for op in ops for t in op.outputs}
    done: list[_graph.Op] = []
    seen: set[int] = set()

    def visit(op: _graph.Op) -> None:
        if op.id in seen:
            return
        seen.add(op.id)
        for t in op.inputs:
            if t.id in made_by:
                visit(made_by[t.id])
        done.append(op)

    for op in ops:
        visit(op)
    return done


def _low_precision(p: _graph.Partition) -> bool:
    return any(lt.dtype in _arrays.LOW_PRECISION for lt in p.input_ports + p.output_ports)


def run(graph: _graph.Graph, *, perf: bool = False, exact: bool = False, repeat: int = 10,
        seed: int = 0, threads: Optional[int] = None) -> Result:
    """Execute `graph` once (correctness) or `repeat` times (perf) on oneDNN.

    Perf mode times a graph of the package's ops as the functional API runs each op
    (``as_called``; `threads` fixes the OpenMP threads of each, 0 oneDNN's default,
    where the API would choose them), any other as oneDNN's partitions.

    Raises ValueError for a graph the driver cannot run, UnsupportedError when
    oneDNN returns a partition it does not support, and onednn_graph.Error when
    compiling or executing fails.
    """
    check_runnable(graph)
    check_memory(graph, checked=not perf)
    calls = {op.id: _call(op) for op in graph.ops if op.kind in REFERENCED}
    epilogue = len(calls) < len(graph.ops)
    if epilogue and exact:
        raise ValueError("exact mode checks graphs of the convolution ops alone; this one has "
                         f"{', '.join(sorted({op.kind for op in graph.ops} - set(REFERENCED)))}"
                         " (use the default mode: a bound carried through the graph)")
    lts = {t.id: t for op in graph.ops for t in op.inputs + op.outputs}
    produced = {t.id for op in graph.ops for t in op.outputs}
    terms = {oid: c.terms for oid, c in calls.items()}
    zero_points = {op.inputs[0].id: int(op.attrs.get("zps", [0])[0])
                   for op in graph.ops if op.kind == "Dequantize"}
    if not graph.is_finalized:
        graph.finalize()
    partitions = graph.get_partitions()
    n_partitions = len(partitions)
    # A partition oneDNN does not support still runs when it is a bf16/f16 one the
    # package runs in f32 between TypeCasts (oneDNN 3.13 reports those unsupported
    # on CPUs without such kernels; 3.2 only fails to compile them): compile decides.
    bad = [p for p in partitions if not p.is_supported and not _low_precision(p)]
    if bad:
        raise UnsupportedError(f"oneDNN does not support the partition(s) of op(s) "
                               f"{sorted(i for p in bad for i in p.op_ids)}")
    rng = np.random.default_rng(seed)
    arrays: dict[int, np.ndarray] = {}
    for op in graph.ops:
        call = calls.get(op.id)
        r = tolerance.exact_range(terms[op.id]) if exact and call else None
        for i, t in enumerate(op.inputs):
            if t.id in produced or t.id in arrays:
                continue
            if call and i >= len(call.input_ids):  # the s32 shape input
                arrays[t.id] = np.asarray(op.outputs[0].shape, np.int32)
            else:
                with _allocating(t):
                    arrays[t.id] = _fill(rng, t, r, zero_points.get(t.id, 0))
    for tid in produced:  # NaN where oneDNN never writes (u8/s8 outputs: 0)
        with _allocating(lts[tid]):
            arrays[tid] = _compiled.array_for(lts[tid], np.nan) if lts[tid].dtype not in \
                _arrays.QUANTIZED else _compiled.array_for(lts[tid], 0)

    result = Result(passed=None, partitions=n_partitions, unsupported_low_precision=sum(
        not p.is_supported for p in partitions))  # every one low precision, by ``bad``
    result.flops = sum(c.flops for c in calls.values())
    if perf and times_as_called(graph):
        timed = as_called(graph, arrays, threads)
        result.timed_as = "compile_op" if any(c.way == "compile_op" for c in timed) else "api"
        result.compile_ms = sum(c.compiled.compile_seconds for c in timed) * 1e3
        result.threads = {c.op_id: c.compiled.threads for c in timed}
        result.lowerings = [f"op {c.op_id}: {c.compiled.lowering}" for c in timed
                            if c.compiled.lowering != "native"]
        result.median_ms = _median_ms([c.step for c in timed], repeat)
        return result
    engine, stream = _compiled.engine(), _compiled.stream()
    steps = []
    for p in partitions:
        ins = [lts[port.id] for port in p.input_ports]
        outs = [lts[port.id] for port in p.output_ports]
        start = time.perf_counter()
        compiled = p.compile(ins, outs, engine)
        result.compile_ms += (time.perf_counter() - start) * 1e3
        steps.append((compiled, ins, outs))
    bound = [(c, [Tensor(t, engine, arrays[t.id]) for t in ins],
              [Tensor(t, engine, arrays[t.id]) for t in outs]) for c, ins, outs in steps]

    def execute() -> None:
        for compiled, ins, outs in bound:
            compiled.execute(stream, ins, outs)

    execute()
    result.lowerings = [f"op {n.source.id}: {n.lowering}" for n in graph._ops
                        if getattr(n, "lowering", "native") != "native"]
    result.lowerings += [f"op(s) {', '.join(map(str, sorted(p.op_ids)))}: in f32 between "
                         f"TypeCasts (no kernel for the dtype on {_core.cpu_isa()}, or only "
                         f"the reference one), {c.conversions}" for p, (c, _, _) in zip(partitions, steps)
                         if c.runs_in_f32]
    result.lowerings += [f"op(s) {', '.join(map(str, sorted(p.op_ids)))}: {c.epilogue_apart}"
                         for p, (c, _, _) in zip(partitions, steps) if c.epilogue_apart]
    if epilogue and not perf:
        result.checks = _check_outputs(graph, calls, arrays)
        result.passed = all(c.comparison.ok for c in result.checks)
        return result
    if perf:  # as the API's fused calls run their partitions: on oneDNN's default threads
        result.timed_as, result.threads = "partitions", {op.id: 0 for op in graph.ops}
        result.median_ms = _median_ms([execute], repeat)
        return result
    for op in graph.ops:
        call, out = calls[op.id], op.outputs[0]
        args = [arrays[i] for i in call.input_ids]
        cmp = tolerance.compare(arrays[out.id], call.fn, args, call.kwargs, out.dtype,
                                terms[op.id], exact)
        result.checks.append(OpCheck(op.id, op.kind, out.dtype, terms[op.id], cmp))
    result.passed = all(c.comparison.ok for c in result.checks)
    return result
