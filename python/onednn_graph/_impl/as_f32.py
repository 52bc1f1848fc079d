"""bf16 and f16 ops run in f32 by oneDNN, where this CPU's oneDNN has no kernel
for them in that dtype, or only its reference kernel (``_impl.kernels`` asks).

A ``Chain`` runs ops as oneDNN partitions on f32 tensors: a TypeCast of each
bf16/f16 input to f32, the ops in f32 (fused as their bf16/f16 partition was: a
ConvTranspose with its bias and post-ops stays one partition), a TypeCast of each
bf16/f16 output back. It computes what a native kernel of the dtype computes: a product of two
bf16 or f16 values is exact in f32, the sums accumulate in f32 as oneDNN's
bf16/f16 kernels do, and the result is rounded to the dtype once. The cost is
memory: f32 copies of the inputs and the results, made once per thread that
runs the chain and reused by its later calls (threads may share one chain).
A cached call runs the whole chain in one native call (``_core.ChainCall``,
from ``Chain.native_call``), as a single partition runs in a ``DirectCall``.

A TypeCast whose reorder in the linked oneDNN is not a ``jit:`` one (oneDNN 3.2's
scalar ``simple:any``, on AVX2 for every pair) is converted by the package instead
(``_impl.casts``: a ``_core.Cast`` step, vectorized, bit for bit what ml_dtypes and
NumPy give). Each f32 copy lies in memory in the order of the tensor it mirrors
(a channels-last input gets a channels-last copy), so a conversion is one pass
over both.

``ChainOp`` is a chain of one op with the interface of ``_compiled.CompiledOp``
(the functional API and ``compile_op``); the spec-level ``Graph`` runs any
partition as a ``Chain`` when it needs one (``_graph``).

A chain also runs a ConvTranspose's epilogue after the kernel where oneDNN 3.2 would
apply it more than once (``_impl.epilogue_apart.split``, asked of the ops as they
compute, after the widening): the op without its bias, kept out of fused partitions by an
End op, then a BiasAdd, which computes in place in the memory of the value it writes
(``Chain._in_place``). An f32 op takes a chain for that alone (``ChainOp`` with
``runs_in_f32`` False).
"""

from __future__ import annotations

import threading
import time
from typing import Any, Optional, Sequence

import numpy as np

from .. import _core
from . import (arrays as _arrays, batch_parts as _batch_parts, casts as _casts, compiled as _compiled,
               epilogue_apart as _epilogue_apart)
from .arrays import dense_strides
from .compiled import CompiledOp, private_copies
from ..errors import Error, UnsupportedError

def dense_like(shape: Sequence[int], strides: Optional[Sequence[int]]) -> tuple[int, ...]:
    """Element strides of a dense array of `shape` whose axes lie in memory in the
    order `strides` gives them (the largest outermost; ties keep the axes' order):
    C-contiguous strides give ``dense_strides(shape)``, channels-last ones
    channels-last. Without `strides`: ``dense_strides(shape)``."""
    if strides is None or len(strides) != len(shape):
        return dense_strides(shape)
    order = sorted(range(len(shape)), key=lambda i: -abs(int(strides[i])))
    result, step = [0] * len(shape), 1
    for i in reversed(order):
        result[i] = step
        step *= max(int(shape[i]), 1)
    return tuple(result)


def known_shape(lt: Any) -> bool:
    """Whether logical tensor `lt` has a known rank and dims (-1 is an unknown dim)."""
    return lt.shape is not None and all(d >= 0 for d in lt.shape)


def _f32(id: int, lt: Any, property: str = "variable") -> Any:
    """An f32 logical tensor of `lt`'s shape, dense in `lt`'s order of axes in memory
    (shape unknown: unknown)."""
    if not known_shape(lt):
        return _core.LogicalTensor(id, "f32", lt.shape, None, "strided", property)
    return _core.LogicalTensor(id, "f32", lt.shape, dense_like(lt.shape, lt.strides), "strided",
                               property)


def widen(ops: Sequence[Any], inputs: Sequence[Any], outputs: Sequence[Any],
          constants: Sequence[int] = ()) -> list[Any]:
    """`ops` (native ``_core.Op``) with every bf16/f16 tensor made f32: a TypeCast
    from each bf16/f16 tensor of `inputs` to a new f32 one, and from a new f32
    tensor to each of `outputs`; tensors between the ops become f32 in place (same
    id). Tensors of other dtypes are left as they are. `constants` are the ids of
    inputs that never change: their f32 copies are marked constant. New tensors and
    ops get ids above every id in use, in order: input casts, then output casts."""
    lts = [t for op in ops for t in op.inputs + op.outputs] + list(inputs) + list(outputs)
    next_tensor = max(t.id for t in lts) + 1
    next_op = max(op.id for op in ops) + 1
    casts_in, casts_out, mapped = [], [], {}
    for lt in inputs:
        if lt.dtype in _arrays.LOW_PRECISION and lt.id not in mapped:
            wide = _f32(next_tensor, lt, "constant" if lt.id in constants else "variable")
            casts_in.append(_core.Op(next_op, "TypeCast", [lt], [wide], {}, "TypeCast"))
            mapped[lt.id] = wide
            next_tensor, next_op = next_tensor + 1, next_op + 1
    for lt in outputs:
        if lt.dtype in _arrays.LOW_PRECISION:
            wide = _f32(next_tensor, lt)
            casts_out.append(_core.Op(next_op, "TypeCast", [wide], [lt], {}, "TypeCast"))
            mapped[lt.id] = wide
            next_tensor, next_op = next_tensor + 1, next_op + 1

    def retyped(lt: Any) -> Any:
        if lt.id in mapped:
            return mapped[lt.id]
        if lt.dtype not in _arrays.LOW_PRECISION:
            return lt
        mapped[lt.id] = _f32(lt.id, lt)  # a tensor between two of the ops
        return mapped[lt.id]

    body = [_core.Op(op.id, op.kind, [retyped(t) for t in op.inputs],
                     [retyped(t) for t in op.outputs], op.attrs, op.name) for op in ops]
    return casts_in + body + casts_out


class Chain:
    """Native ops on bf16/f16 tensors, run in f32 between TypeCasts: the ops' f32
    partitions and the casts, executed in dependency order.

    `inputs` and `outputs` are the chain's boundary (the caller's tensors, of
    known shapes); ``execute`` takes arrays for them in that order. `constants`
    maps input positions to arrays that never change: they are cast once, here.
    """

    def __init__(self, ops: Sequence[Any], inputs: Sequence[Any], outputs: Sequence[Any],
                 constants: Optional[dict[int, np.ndarray]] = None, threads: int = 0,
                 fpmath_mode: str = "strict", in_f32: bool = True) -> None:
        self.inputs, self.outputs = list(inputs), list(outputs)
        constant_ids = {self.inputs[i].id for i in (constants or {})}
        originals = {op.id for op in ops}
        # (without `in_f32`, bf16/f16 ops run in their dtype: a chain only for its other work)
        widened = widen(ops, self.inputs, self.outputs, tuple(constant_ids)) if in_f32 else list(ops)
        # A ConvTranspose's epilogue runs after the kernel where oneDNN would repeat it or
        # runs it slowly (_impl.epilogue_apart), asked of the ops as oneDNN computes them.
        self.split = _epilogue_apart.split([op for op in widened if op.id in originals], threads)
        if self.split and not in_f32 and _low_precision_ops(ops):
            # Apart in bf16/f16, the op's result would be rounded before its bias is added:
            # in f32 between TypeCasts it is rounded once, at the end, as in the kernel.
            widened = widen(ops, self.inputs, self.outputs, tuple(constant_ids))
            self.split = _epilogue_apart.split([op for op in widened if op.id in originals], threads)
        casts = [op for op in widened if op.id not in originals]
        #: Whether it runs bf16/f16 tensors in f32 (else it only runs its epilogue apart).
        self.widened = bool(casts)
        first = next(i for i, op in enumerate(widened) if op.id in originals)  # casts in, ops, casts out
        body_ops = self.split.ops if self.split else widened[first:first + len(ops)]
        self.ops = widened[:first] + body_ops + widened[first + len(ops):]
        # The ops in f32 are one graph, partitioned as the caller's were: several ops
        # come from oneDNN's fusion policy, and fuse again in f32 (a ConvTranspose with
        # its bias and post-ops is one partition); one op takes the "debug" policy,
        # which skips the pattern matching (and runs a split op's BiasAdd apart). The
        # TypeCasts widen() added stay out of it, so that no low-precision pattern takes
        # one in: each is converted by the package, or is a partition of its own
        # (_cast_step). A split op's own result is marked as the graph's (oneDNN's End
        # op), which keeps the post-ops out of its partition.
        fusing = len(ops) > 1
        body = _core.Graph("cpu", fpmath_mode)
        for op in body_ops:
            body.add_op(op)
        end = max(op.id for op in widened + body_ops) + 1
        for i, value in enumerate(self.split.kept_apart if self.split and fusing else []):
            body.add_op(_core.Op(end + i, "End", [value], [], {}, "End"))
        body.finalize()
        pending: list[Any] = list(casts)
        pending += [p for p in body.get_partitions("fusion" if fusing else "debug")
                    if p.output_ports]  # not an End's
        declared = {t.id: t for op in self.ops for t in op.inputs + op.outputs}
        known = {t.id: t for t in self.inputs}
        # id -> array fixed for the chain's life: constant inputs and their f32 copies.
        self.fixed: dict[int, np.ndarray] = {self.inputs[i].id: a for i, a in (constants or {}).items()}
        #: Inputs seen in another shape (a split op's bias): id -> (the input's id, shape).
        self.views = self.split.views if self.split else {}
        for view in self.views:
            known[view] = declared[view]
        # (a CompiledPartition or a _core.Cast, input ids, output ids), in order.
        self.steps: list[tuple[Any, list[int], list[int]]] = []
        self.threads = 0
        #: Who converts each of the TypeCasts (``_impl.casts``), in the order they run.
        self.converters: list[_casts.Converter] = []
        while pending:
            unit = next((u for u in pending if all(t.id in known for t in _ports(u)[0])), None)
            if unit is None or (isinstance(unit, _core.Partition) and not unit.is_supported):
                raise Error(f"oneDNN cannot partition the f32 form of {[op.kind for op in ops]}",
                            "unimplemented")
            pending.remove(unit)
            in_ports, out_ports = _ports(unit)
            ins = [known[t.id] for t in in_ports]
            if isinstance(unit, _core.Partition):
                runner = unit.compile(ins, [declared[t.id] for t in out_ports], _compiled.engine(),
                                      threads)
                for t in out_ports:
                    known[t.id] = runner.query_logical_tensor(t.id)
            else:
                runner, known[out_ports[0].id], converter = _cast_step(unit, ins[0], threads,
                                                                       fpmath_mode)
                self.converters.append(converter)
            if isinstance(runner, _core.CompiledPartition):
                self.threads = max(self.threads, runner.threads)
            in_ids, out_ids = [t.id for t in ins], [t.id for t in out_ports]
            if in_ids and all(i in self.fixed for i in in_ids):  # a constant's cast: once
                results = [_compiled.array_for(known[i]) for i in out_ids]
                _run(runner, [self.fixed[i] for i in in_ids], results)
                self.fixed.update(zip(out_ids, results))
                continue
            self.steps.append((runner, in_ids, out_ids))
        for view, (source, shape) in self.views.items():  # a view of a constant (or its cast): once
            if source in self.fixed:
                self.fixed[view] = self.fixed[source].reshape(shape)
        self.layouts = known  # every tensor's compiled logical tensor
        for value in self.split.kept_apart if self.split else []:
            self._in_place(value.id)
        boundary = {t.id for t in self.inputs + self.outputs} | set(self.fixed) | set(self.views)
        # The f32 tensors between the steps, whose arrays each thread makes once.
        self.scratch_ids = sorted({i for _, ins, outs in self.steps for i in ins + outs} - boundary)
        self._per_thread = threading.local()

    def _in_place(self, value: int) -> None:
        """Write a split op's result `value` (``_impl.epilogue_apart``) where the one
        step that reads it writes, where oneDNN computes that step in place (its BiasAdd,
        or the post-ops fused with it) and the two have one layout: no array of the
        result's size between them, and one pass less over it."""
        writers = [k for k, (_, _, outs) in enumerate(self.steps) if value in outs]
        readers = [k for k, (_, ins, _) in enumerate(self.steps) if value in ins]
        if len(writers) != 1 or len(readers) != 1:
            return
        runner, ins, outs = self.steps[readers[0]]
        if not isinstance(runner, _core.CompiledPartition):
            return
        target = next((o for i, o in runner.inplace_ports if i == value), None)
        if target is None or target not in self.layouts:
            return
        a, b = self.layouts[value], self.layouts[target]
        if (a.dtype, a.shape, a.strides) != (b.dtype, b.shape, b.strides):
            return
        self.steps[readers[0]] = (runner, [target if i == value else i for i in ins], outs)
        runner, ins, outs = self.steps[writers[0]]
        self.steps[writers[0]] = (runner, ins, [target if o == value else o for o in outs])

    def scratch(self) -> list[np.ndarray]:
        """New arrays for ``scratch_ids``, in that order."""
        return [_compiled.array_for(self.layouts[i]) for i in self.scratch_ids]

    def execute(self, inputs: Sequence[np.ndarray], outputs: Sequence[np.ndarray]) -> None:
        """Run on arrays for the boundary `inputs` and `outputs` (a constant input's
        array is not read: its copy is)."""
        mine = getattr(self._per_thread, "arrays", None)
        if mine is None:
            mine = self._per_thread.arrays = dict(zip(self.scratch_ids, self.scratch()))
        arrays = dict(self.fixed)
        arrays.update(mine)
        for lt, array in zip(self.inputs, inputs):
            arrays.setdefault(lt.id, array)
        for view, (source, shape) in self.views.items():
            arrays.setdefault(view, arrays[source].reshape(shape))
        for lt, array in zip(self.outputs, outputs):
            arrays[lt.id] = array
        for runner, in_ids, out_ids in self.steps:
            _run(runner, [arrays[i] for i in in_ids], [arrays[i] for i in out_ids])

    def native_call(self, order: Sequence[int], shape: Sequence[int], dtype: np.dtype,
                    batched: Sequence[int] = (), rows: int = 0) -> Any:
        """The chain with one output as a ``_core.ChainCall``: caller array ``j`` is
        boundary input ``order[j]`` (empty: as given); a new result has `shape` and
        `dtype`. With `rows`, the chain was built for `rows` samples of a batch that the
        caller's arrays at positions `batched` and the result hold: it runs per part."""
        assert len(self.outputs) == 1, "a chain call has one result"
        assert all(view in self.fixed for view in self.views), \
            "views of a caller's array are made per call: the Python path's (only a fixed bias is one)"
        ids = [t.id for t in self.inputs]
        slots = [ids[i] for i in order] if order else ids
        return _core.ChainCall([(c, ins, outs) for c, ins, outs in self.steps], slots,
                               self.outputs[0].id, dict(self.fixed), self.scratch_ids, self.scratch,
                               list(shape), dtype, list(batched), rows)


def _low_precision_ops(ops: Sequence[Any]) -> bool:
    return any(t.dtype in _arrays.LOW_PRECISION for op in ops for t in op.inputs + op.outputs)


def _ports(unit: Any) -> tuple[list[Any], list[Any]]:
    """(inputs, outputs) of a pending unit of a chain: a TypeCast op or a partition."""
    if isinstance(unit, _core.Partition):
        return list(unit.input_ports), list(unit.output_ports)
    return list(unit.inputs), list(unit.outputs)


def _cast_step(cast: Any, source: Any, threads: int, fpmath_mode: str) -> tuple[Any, Any, Any]:
    """(runner, its result's logical tensor, converter) of a chain's TypeCast `cast`
    from `source` (compiled): the package's conversion where oneDNN's reorder for the
    pair is not a jit one (``_impl.casts``), else the TypeCast compiled alone."""
    target = cast.outputs[0]
    if not known_shape(target) or target.strides is None:
        # A result of unknown shape: the cast's (C-contiguous, as oneDNN infers an
        # output of unknown layout).
        target = _core.LogicalTensor(target.id, target.dtype, source.shape, dense_strides(source.shape))
    converter = _casts.converter(source, target)
    if converter.by_package:
        return _core.Cast(source.dtype, target.dtype, threads), target, converter
    graph = _core.Graph("cpu", fpmath_mode)
    graph.add_op(cast)
    graph.finalize()
    [part] = graph.get_partitions("debug")
    compiled = part.compile([source], [target], _compiled.engine(), threads)
    return compiled, compiled.query_logical_tensor(target.id), converter


def _run(runner: Any, inputs: Sequence[np.ndarray], outputs: Sequence[np.ndarray]) -> None:
    """One step of a chain: a compiled partition, or the package's conversion."""
    if isinstance(runner, _core.Cast):
        runner(inputs[0], outputs[0])
    else:
        runner.execute_arrays(_compiled.stream(), inputs, outputs)


class ChainOp:
    """One op as a ``Chain``, with ``CompiledOp``'s arguments and interface (except that
    it has no single ``compiled`` partition: calls take the Python path, or a
    ``ChainCall``): on bf16/f16 data in f32 between TypeCasts, and/or with its epilogue
    after the kernel where oneDNN 3.2 would repeat it (``_impl.epilogue_apart``).
    `reason` says why it is a chain (``Operation.lowering``); `needed` is False where
    oneDNN has a kernel for the dtype, but only its reference one (the chain is then
    only faster). `posts` are unary post-ops, (oneDNN kind, attributes) each, applied to
    the op's result in order: oneDNN fuses them into its partition (a ConvTranspose's
    activation: ``onednn_graph.torch``'s inference mode). Without `in_f32` a bf16/f16 op
    runs in its own dtype (oneDNN has a kernel for it): a chain for the rest only."""

    compiled = None

    def __init__(self, kind: str, attrs: dict[str, Any], dtype: str,
                 inputs: Sequence[tuple], output: tuple,
                 constants: Optional[dict[int, np.ndarray]] = None,
                 input_order: tuple[int, ...] = (), threads: int = 0,
                 reason: str = "", needed: bool = True, rows: int = 0,
                 posts: Sequence[tuple[str, dict[str, Any]]] = (), in_f32: bool = True,
                 owned: bool = False) -> None:
        self.kind, self.attrs, self.dtype = kind, attrs, dtype
        self.reason, self.needed = reason, needed
        self.input_order = ()  # execute() takes the caller's order; the op reorders
        self.lowering = "native"
        self.tuning: Optional[dict[str, float]] = None
        self.tuning_verdict = ""  # how tuning decided (_tuning.verdict)
        self.constants = private_copies(constants, owned)  # (`owned`: kept as they are)
        order = input_order or tuple(range(len(inputs)))
        #: Samples per part where the batch runs in parts (``_impl.batch_parts``), else 0; the
        #: caller's inputs whose first axis is the batch.
        self.rows, self.batched = _batch_parts.split(kind, order, rows, output[0][0] if output[0] else 0)

        def tensors(rows: int) -> tuple[list[Any], Any]:
            """The op's logical tensors for parts of `rows` samples (0: the whole batch)."""
            part = _batch_parts.part_shape
            # A constant input in the dtype the op computes in is compiled as constant
            # (in bf16/f16 its f32 copy is: widen).
            lts = [_core.LogicalTensor(i, dtype, part(s, rows * (i in self.batched)), strides, "strided",
                                       "constant" if i in self.constants and (
                                           dtype not in _arrays.LOW_PRECISION or not in_f32) else "variable")
                   for i, (s, strides) in enumerate(inputs)]
            return lts, _core.LogicalTensor(len(lts), dtype, part(output[0], rows), output[1])

        self.inputs, self.output = tensors(0)
        self._ops = _with_posts(kind, [self.inputs[i] for i in order], self.output, attrs, posts)
        lts, out = tensors(self.rows)
        ops = _with_posts(kind, [lts[i] for i in order], out, _batch_parts.part_attrs(kind, attrs, self.rows),
                          posts)
        start = time.perf_counter()
        try:
            self.chain = Chain(ops, lts, [out], self.constants, threads, in_f32=in_f32)
        except Error as exc:
            how = "in f32 between TypeCasts" if dtype in _arrays.LOW_PRECISION else "with its epilogue apart"
            raise UnsupportedError(f"oneDNN cannot compile {kind} ({dtype}, attrs {attrs}) {how} "
                                   f"either: {exc.message}", exc.status) from None
        self.compile_seconds = time.perf_counter() - start
        self.threads = self.chain.threads

    label = CompiledOp.label  # the lowering and thread count, as a CompiledOp says them

    @property
    def runs_in_f32(self) -> bool:
        """Whether it runs bf16/f16 data in f32 between TypeCasts."""
        return self.chain.widened

    def execute(self, inputs: Sequence[np.ndarray], output: np.ndarray) -> None:
        """Run on `inputs` (a constant one must be ``self.constants[i]``) writing `output`."""
        if not self.rows:
            self.chain.execute(inputs, [output])
            return
        for part_inputs, part_output in _batch_parts.parts(self.rows, self.batched, inputs, output):
            self.chain.execute(part_inputs, [part_output])

    def direct_call(self, shape: Sequence[int], dtype: np.dtype) -> Any:
        """The chain as one native call on the caller's arrays (``_core.ChainCall``)."""
        return self.chain.native_call((), shape, dtype, self.batched, self.rows)

    def graph_ops(self) -> list[Any]:
        """The chain as native ops on shared logical tensors (for reproducers): the whole
        batch's, as the call computes it, whether or not it runs in parts."""
        if not self.rows:
            return self.chain.ops
        return widen(self._ops, self.inputs, [self.output], tuple(self.constants))


def _with_posts(kind: str, inputs: list[Any], output: Any, attrs: dict[str, Any],
                posts: Sequence[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Op `kind` writing `output`, or with unary `posts` after it: the op and each post-op,
    every value between them of `output`'s layout (new ids above it), the last `output`."""
    values = [_core.LogicalTensor(output.id + 1 + i, output.dtype, output.shape, output.strides)
              for i in range(len(posts))] + [output]
    ops = [_core.Op(0, kind, inputs, [values[0]], attrs, kind)]
    for i, (post_kind, post_attrs) in enumerate(posts):
        ops.append(_core.Op(i + 1, post_kind, [values[i]], [values[i + 1]], dict(post_attrs), post_kind))
    return ops
