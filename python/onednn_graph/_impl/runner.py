"""Run a loaded graph on oneDNN and check it against the reference, or time it.

The graph goes through the spec-level objects (``_graph``: finalize, get
partitions, compile, execute), so lowerings apply exactly as for a user's own
Graph. Inputs are seeded random values in [-1, 1) rounded to their dtype, or
in exact mode small integers (as benchdnn fills its inputs) for which an f32
accumulator is exact. Outputs start as NaN, so an element oneDNN never writes
fails the check. Each op is compared with ``reference`` on the very inputs
oneDNN read, with ``tolerance``'s bound.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from .. import _core, graph as _graph, reference, shapes, tolerance
from . import compiled as _compiled, cost as _cost, dtypes as _dtypes, plan as _plan, registry as _registry
from .call import prepare
from .._core import Tensor
from ..errors import UnsupportedError

#: The op kinds the driver checks: those the reference covers (the spec's ops, the
#: legacy name, and the convolution ops some calls run as).
CHECKED = tuple(_registry.SPECS) + (_registry.LEGACY.kind,)


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


@dataclass
class Result:
    """What one run of a graph gave."""

    passed: Optional[bool]                # None in perf mode
    checks: list[OpCheck] = field(default_factory=list)
    compile_ms: float = 0.0
    median_ms: Optional[float] = None
    flops: int = 0
    lowerings: list[str] = field(default_factory=list)

    @property
    def gflops(self) -> Optional[float]:
        return self.flops / self.median_ms / 1e6 if self.median_ms else None


@dataclass
class _Call:
    """An op as a reference call: function, input ids, keyword arguments, plan."""

    fn: Any
    input_ids: list[int]
    kwargs: dict[str, Any]
    plan: shapes.Plan
    input_shapes: list[tuple[int, ...]]


def _call(op: _graph.Op) -> _Call:
    kind, attrs = op.kind, op.attrs
    ids = [t.id for t in op.inputs]
    spec = _registry.spec(kind)
    shape_attr = _registry.shape_attr(kind)
    if shape_attr:
        ids = ids[:len(spec.inputs)]  # an s32 shape input gives what the output shape already says
        attrs.setdefault(shape_attr, list(op.outputs[0].shape))
    in_shapes = [tuple(t.shape) for t in op.inputs[:len(ids)]]
    current, kw, _ = shapes.current_form(kind, attrs)
    return _Call(reference_of(kind), ids, attrs, shapes.plan(current, in_shapes, **kw), in_shapes)


def check_runnable(graph: _graph.Graph) -> None:
    """ValueError unless every op is one the driver can check, with known shapes."""
    for op in graph.ops:
        if op.kind not in CHECKED:
            raise ValueError(f"op {op.id} is a {op.kind}; the driver runs graphs of "
                             f"{', '.join(CHECKED)} (the ops the reference covers)")
        for t in op.inputs + op.outputs:
            if t.shape is None or any(d < 0 for d in t.shape) or t.strides is None:
                raise ValueError(f"op {op.id}: tensor {t.id} needs a known shape and strides "
                                 "(give them with --in-shapes)")


def tune(graph: _graph.Graph) -> list[tuple[int, str, Any]]:
    """Tune each op of `graph` alone, as ``compile_op(..., tune=True)`` does for its
    shapes, strides, dtype and attributes (on inputs of ones), keeping the decisions
    in the tuning database; returns (op id, kind, the compiled op) per op.

    The decisions serve later calls of those problems with tuning on (the
    functional API under ``set_tuning(True)``, ``compile_op(..., tune=True)``); a
    graph replayed by ``run`` is compiled as oneDNN partitions and not tuned.
    """
    check_runnable(graph)
    done = []
    for op in graph.ops:
        call = _call(op)
        names = _registry.input_names(op.kind)[:len(call.input_ids)]
        lts = {t.id: t for t in op.inputs}
        arrays = [_compiled.array_for(lts[i], 1.0) for i in call.input_ids]
        out = op.outputs[0]
        plan = _plan.plan_call(op.kind, names, arrays, call.kwargs)
        prepared = prepare(plan, arrays, (tuple(out.shape), tuple(out.strides)), tune=True)
        done.append((op.id, op.kind, prepared.op))
    return done


def _fill(rng: np.random.Generator, lt: Any, exact_r: Optional[int]) -> np.ndarray:
    a = _compiled.array_for(lt)
    if exact_r is None:
        a[...] = rng.uniform(-1, 1, size=a.shape)
    else:
        a[...] = rng.integers(-exact_r, exact_r + 1, size=a.shape)
    return a


def _low_precision(p: _graph.Partition) -> bool:
    return any(lt.dtype in _dtypes.LOW_PRECISION for lt in p.input_ports + p.output_ports)


def run(graph: _graph.Graph, *, perf: bool = False, exact: bool = False, repeat: int = 10,
        seed: int = 0) -> Result:
    """Execute `graph` once (correctness) or `repeat` times (perf) on oneDNN.

    Raises ValueError for a graph the driver cannot run, UnsupportedError when
    oneDNN returns a partition it does not support, and onednn_graph.Error when
    compiling or executing fails.
    """
    check_runnable(graph)
    calls = {op.id: _call(op) for op in graph.ops}
    lts = {t.id: t for op in graph.ops for t in op.inputs + op.outputs}
    produced = {t.id for op in graph.ops for t in op.outputs}
    terms = {oid: tolerance.accumulation_terms(c.plan, c.input_shapes) for oid, c in calls.items()}
    if not graph.is_finalized:
        graph.finalize()
    partitions = graph.get_partitions()
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
        call = calls[op.id]
        r = tolerance.exact_range(terms[op.id]) if exact else None
        for i, t in enumerate(op.inputs):
            if t.id in produced or t.id in arrays:
                continue
            if i >= len(call.input_ids):  # the s32 shape input
                arrays[t.id] = np.asarray(op.outputs[0].shape, np.int32)
            else:
                arrays[t.id] = _fill(rng, t, r)
    for tid in produced:
        arrays[tid] = _compiled.array_for(lts[tid], np.nan)

    engine, stream = _compiled.engine(), _compiled.stream()
    result = Result(passed=None)
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
                         "the reference one)" for p, (c, _, _) in zip(partitions, steps)
                         if c.runs_in_f32]
    result.flops = sum(_cost.problem(c.plan, c.input_shapes).flops for c in calls.values())
    if perf:
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            execute()
            times.append((time.perf_counter() - start) * 1e3)
        result.median_ms = statistics.median(times)
        return result
    for op in graph.ops:
        call, out = calls[op.id], op.outputs[0]
        args = [arrays[i] for i in call.input_ids]
        cmp = tolerance.compare(arrays[out.id], call.fn, args, call.kwargs, out.dtype,
                                terms[op.id], exact)
        result.checks.append(OpCheck(op.id, op.kind, out.dtype, terms[op.id], cmp))
    result.passed = all(c.comparison.ok for c in result.checks)
    return result
