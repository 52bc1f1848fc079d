"""The spec-level graph engine under ``onednn_graph.graph``: a Graph of spec-level ops
(``spec_op``), its partitions and their compiled form. ``onednn_graph.graph`` shows
these classes as its own, with the public docstrings and examples; the package's own
graphs (``fused``'s chains) are built here, below the public modules.

A Partition shows the user's tensors in its ports where oneDNN has another: the
view of a cropped op's tensor (``spec_op.View``), the legacy op's output in the
current weights format, and the hidden s32 shape inputs. A CompiledPartition hands
oneDNN the view of the user's memory at the right offset and writes the left-out
outputs itself: zeros, or ConvTranspose's bias (what the geometry alone fixes). A
cropped output ends its partition: the ops that read it run as partitions of their
own, which ``Graph.get_partitions`` lists after it (``_in_dependency_order``). Where
this CPU's oneDNN has no bf16/f16 kernel for an op of a partition, the partition runs
in f32 between TypeCasts (``_as_f32.Chain``, executed by ``_run_chain``).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

import numpy as np

from .. import _core
from . import (arrays as _arrays, as_f32 as _as_f32, attrs as _attrs, casts as _casts,
               dataflow as _dataflow, epilogue_apart as _epilogue_apart, json_format as _json_format,
               kept_apart as _kept_apart, kernels as _kernels, registry as _registry,
               version as _version)
from .spec_op import Native, Op, check_list
from ..errors import Error, UnsupportedError

# What a compiled partition runs: oneDNN's own, or the ops in f32 between TypeCasts.
_Runner = Union[_core.CompiledPartition, _as_f32.Chain]


class Tensor(_core.Tensor):
    """A logical tensor bound to an array's memory, without a copy.

    ``array`` may be anything the functional API takes (a NumPy array, a CPU
    torch tensor, a DLPack or buffer-protocol object): its memory is viewed,
    never copied, and kept alive by the Tensor (``Tensor.array``).

    Examples
    --------
    >>> import numpy as np, onednn_graph as og
    >>> a = np.zeros((2, 3), np.float32)
    >>> t = og.Tensor(og.LogicalTensor(0, "f32", (2, 3)), og.Engine(), memoryview(a))
    >>> np.shares_memory(t.numpy(), a)
    True
    """

    def __init__(self, logical_tensor: _core.LogicalTensor, engine: _core.Engine,
                 array: Any) -> None:
        super().__init__(logical_tensor, engine, _arrays.to_numpy("array", array))


class Graph:
    """A graph of ops (the spec's semantics) that oneDNN partitions and compiles.

    Examples
    --------
    >>> import numpy as np, onednn_graph as og
    >>> x = og.LogicalTensor(0, "f32", (1, 1, 3))
    >>> w = og.LogicalTensor(1, "f32", (1, 1, 2))
    >>> y = og.LogicalTensor(2, "f32", (1, 1, 6))
    >>> g = og.Graph()
    >>> g.add_op(og.Op(0, "ConvTranspose", [x, w], [y], {"strides": [2], "pads_begin": [0],
    ...          "pads_end": [0], "dilations": [1], "data_format": "NCX", "weights_format": "IOX"}))
    >>> g.finalize()
    >>> [p] = g.get_partitions()
    >>> e = og.Engine()          # one engine for compiling, tensors and the stream
    >>> cp = p.compile([x, w], [y], e)
    >>> s = og.Stream(e)
    >>> out = np.zeros((1, 1, 6), np.float32)
    >>> cp.execute(s, [og.Tensor(x, e, np.ones((1, 1, 3), np.float32)),
    ...                og.Tensor(w, e, np.ones((1, 1, 2), np.float32))], [og.Tensor(y, e, out)])
    >>> out
    array([[[1., 1., 1., 1., 1., 1.]]], dtype=float32)
    """

    def __init__(self, engine_kind: str = "cpu", fpmath_mode: str = "strict") -> None:
        self._native = _core.Graph(engine_kind, fpmath_mode)
        self.engine_kind, self.fpmath_mode = engine_kind, fpmath_mode
        self._ops: list[Native] = []
        self._tensor_ids: set[int] = set()  # the ids the user's ops use
        self._view_ids: set[int] = set()    # the ids given to views (View)

    @property
    def ops(self) -> list[Op]:
        return [n.source for n in self._ops]

    def add_op(self, op: Op) -> None:
        if not isinstance(op, Op):
            raise TypeError(f"add_op takes an onednn_graph.Op, got {type(op).__name__}")
        if self.is_finalized:
            # oneDNN's own refusal does not say why.
            raise Error("add_op: the graph is finalized; ops go in before finalize()",
                        "invalid_graph")
        ids = {t.id for t in op.inputs + op.outputs}
        if ids & self._view_ids:
            raise ValueError(f"add_op: op {op.id} uses tensor id {min(ids & self._view_ids)}, which "
                             "this graph gave the view of a cropped tensor (those ids count down "
                             "from 2**62); give the tensor another id")
        self._tensor_ids |= ids
        native = Native(op, view_id=self._new_view_id)
        self._native.add_op(native.op)
        self._ops.append(native)

    def _new_view_id(self) -> int:
        """An id for a view (``View``) that no op of this graph uses: from
        ``_VIEW_IDS_TOP`` down, far from the ids graphs use (add_op refuses a later op
        that uses one)."""
        candidate = min(self._view_ids, default=_VIEW_IDS_TOP + 1) - 1
        while candidate in self._tensor_ids:
            candidate -= 1
        self._view_ids.add(candidate)
        return candidate

    def finalize(self) -> None:
        # oneDNN 3.2 says only "could not finalize the graph" of a tensor id described
        # two ways, finalizes a graph whose ops read their own results (and then gives
        # no partition), and kept_apart would walk such a cycle forever: refuse them here.
        ops = self.ops
        twice = _dataflow.described_twice(ops)
        if twice:
            tensor, (i, role, _), described, (j, role_before, _), before = twice
            raise Error(f"finalize: tensor {tensor} is {_dataflow.description(described)} in "
                        f"op {ops[i].id}'s {role} but {_dataflow.description(before)} in op "
                        f"{ops[j].id}'s {role_before}; one id is one tensor", "invalid_graph")
        writer, written_twice = _dataflow.writers(ops)
        if written_twice:
            tensor, by, again = written_twice
            raise Error(f"finalize: tensor {tensor} is written by op {ops[by].id} and by op "
                        f"{ops[again].id}; each tensor has one writer", "invalid_graph")
        cycle = _dataflow.cycle(ops, writer)
        if cycle:
            raise Error(f"finalize: {_dataflow.described(ops, cycle)}", "invalid_graph")
        # oneDNN's End marks a value the graph must hand out: that keeps it out of a
        # fused partition (_impl.kept_apart). Its partition holds no op of this Graph.
        first = max((op.id for op in ops), default=-1) + 1
        for i, value in enumerate(_kept_apart.sum_operands(ops)):
            self._native.add_op(_core.Op(first + i, "End", [value], [], {}))
        self._native.finalize()

    @property
    def is_finalized(self) -> bool:
        return self._native.is_finalized

    def to_json(self) -> dict:
        """The graph in oneDNN's JSON format (see :func:`onednn_graph.graph_json.to_json`)."""
        return _json_format.to_json(self)

    def get_partitions(self, policy: str = "fusion") -> list["Partition"]:
        """The partitions, each after those whose outputs it reads."""
        found = [(p, [n for n in self._ops if n.source.id in p.op_ids])
                 for p in self._native.get_partitions(policy)]
        return _in_dependency_order([Partition(p, ops, self.fpmath_mode)
                                     for p, ops in found if ops])  # not an End's


#: The first id ``Graph`` gives a view (``spec_op.View``); they count down from it. Far above
#: the ids graphs use, and below oneDNN's int64 limit by as much: the f32 chain
#: (``_as_f32.widen``) numbers its own tensors above every id in use.
_VIEW_IDS_TOP = 2**62


def _in_dependency_order(partitions: list["Partition"]) -> list["Partition"]:
    """`partitions` with each after those that produce its inputs, else in oneDNN's order.
    oneDNN orders them by its own graph, where a view's id cuts the edge from a cropped
    output to the ops that read the user's tensor."""
    made_by = {port.id: p for p in partitions for port in p.output_ports}
    done: list[Partition] = []

    def visit(p: Partition, path: tuple[int, ...]) -> None:
        if p in done or id(p) in path:
            return
        for port in p.input_ports:
            producer = made_by.get(port.id)
            if producer is not None and producer is not p:
                visit(producer, path + (id(p),))
        done.append(p)

    for p in partitions:
        visit(p, ())
    return done


class Partition:
    """A partition of a Graph, with the spec's ports (hidden shape inputs
    included): the user's logical tensors, where oneDNN has a view of one (a cropped op's,
    ``_impl.spec_op.View``) or the legacy op's output in the current weights format."""

    def __init__(self, native: _core.Partition, ops: list[Native], fpmath_mode: str = "strict") -> None:
        self._native, self._ops, self._fpmath_mode = native, ops, fpmath_mode
        self._hidden = {n.shape_input.id: n for n in ops if n.shape_input is not None}
        self._views = {n.view.id: n.view for n in ops if n.view is not None}
        # oneDNN's ports that are another logical tensor for the user: views (View), and
        # the legacy op's output described in the current weights format.
        self._shown = {v.id: v.user_port() for v in self._views.values()}
        self._shown.update({n.op.outputs[0].id: n.source.outputs[0] for n in ops
                            if _registry.is_legacy(n.source.kind)})

    id = property(lambda self: self._native.id)
    is_supported = property(lambda self: self._native.is_supported)
    op_ids = property(lambda self: self._native.op_ids)
    engine_kind = property(lambda self: self._native.engine_kind)

    @property
    def input_ports(self) -> list[_core.LogicalTensor]:
        return self._users(self._native.input_ports) + [n.shape_input for n in self._hidden.values()
                                                        if n.shape_input is not None]

    @property
    def output_ports(self) -> list[_core.LogicalTensor]:
        return self._users(self._native.output_ports)

    def _users(self, ports: list[_core.LogicalTensor]) -> list[_core.LogicalTensor]:
        """oneDNN's `ports` as the user's logical tensors (``_shown``), each once."""
        shown = [self._shown.get(p.id, p) for p in ports]
        return list({lt.id: lt for lt in reversed(shown)}.values())[::-1]

    def compile(self, inputs: Sequence[_core.LogicalTensor], outputs: Sequence[_core.LogicalTensor],
                engine: _core.Engine) -> "CompiledPartition":
        inputs = check_list("compile", "inputs", inputs, _core.LogicalTensor)
        outputs = check_list("compile", "outputs", outputs, _core.LogicalTensor)
        ports = {p.id: p for p in self.input_ports}
        for lt in inputs:
            port = ports.get(lt.id)
            if port is not None and port.dtype != lt.dtype:
                # oneDNN would only say that it has no kernel.
                raise ValueError(f"compile: input {lt.id} has dtype {lt.dtype}, the "
                                 f"partition's port has {port.dtype}")
        kept = [lt for lt in inputs if lt.id not in self._hidden]
        return CompiledPartition(self, kept, outputs, engine)

    def __repr__(self) -> str:
        return f"Partition(id={self.id}, supported={self.is_supported})"


class CompiledPartition:
    """A compiled partition; shape inputs are read when it executes.

    Where this CPU's oneDNN has no bf16/f16 kernel for an op of the partition, or
    only its reference kernel (``_impl.kernels``), the partition runs in f32 between
    oneDNN TypeCasts (``_impl.as_f32.Chain``), on the same tensors.

    A cropped op (``_impl.spec_op.View``) is compiled for the view of the user's logical
    tensor and runs on the view of the user's memory; ``execute`` then writes the positions
    its output leaves out (zeros, or ConvTranspose's bias), and only those.
    """

    def __init__(self, partition: Partition, inputs: list[_core.LogicalTensor],
                 outputs: list[_core.LogicalTensor], engine: _core.Engine) -> None:
        self._partition, self._engine = partition, engine
        self._views = list(partition._views.values())
        # Per cropped tensor: the user's logical tensor as compiled, and its view's.
        self._full: dict[int, _core.LogicalTensor] = {}
        self._view_lts: dict[int, _core.LogicalTensor] = {}
        native = partition._native
        self._input_ids = {p.id for p in native.input_ports}
        self._output_ids = {p.id for p in native.output_ports}
        self._inputs = self._onednn_side(inputs, self._input_ids, "input")
        self._outputs = self._onednn_side([self._output_for(lt) for lt in outputs], self._output_ids,
                                          "output")
        for v in self._views:
            if v.bias_id is not None and v.bias_id not in self._input_ids:
                raise UnsupportedError(
                    f"{v.full.id}: the bias of the ConvTranspose writing it must be an input of the "
                    "partition: the op runs on a view of its output, and the package writes the "
                    "bias into the positions outside every kernel window")
        self._native = self._build([n.op for n in partition._ops], native)

    def _onednn_side(self, lts: list[_core.LogicalTensor], port_ids: set[int],
                     role: str) -> list[_core.LogicalTensor]:
        """The logical tensors oneDNN compiles for the user's `lts` (the partition's `role`
        ports): the view of each cropped tensor (``View``), and the tensor itself where
        oneDNN also has it as a port (in `port_ids`, another op's); every other tensor
        as it is."""
        self._check_cropped_given(role, {lt.id for lt in lts}, "compile", "logical tensor")
        result = []
        for lt in lts:
            views = [v for v in self._views if v.full.id == lt.id]
            if not views or lt.id in port_ids:
                result.append(lt)
            for v in views:
                self._view_lts[v.id] = v.logical_tensor(lt)
                self._full[lt.id] = lt if _as_f32.known_shape(lt) else v.user_port()
                result.append(self._view_lts[v.id])
        return result

    def _build(self, ops: list[_core.Op], native_partition: _core.Partition) -> _Runner:
        """The compiled partition of `ops`, or a Chain running them in f32, or with a
        ConvTranspose's epilogue after it (``_impl.epilogue_apart``: where oneDNN 3.2 would
        repeat it, or its kernel runs it far slower)."""
        failure: Optional[Error] = None
        in_f32 = any(_needs_f32(op) for op in ops)
        if not in_f32 and _epilogue_apart.split(ops) is not None:
            try:
                return _as_f32.Chain(ops, self._inputs, self._outputs, in_f32=False,
                                     fpmath_mode=self._partition._fpmath_mode)
            except Error:
                pass  # in f32 between TypeCasts below, as a kernel missing for the dtype
        elif not in_f32:
            try:
                return native_partition.compile(self._inputs, self._outputs, self._engine)
            except Error as exc:
                # A kernel the probe did not foresee (or could not ask about: shapes
                # unknown) is missing. oneDNN 3.2 says so when compiling
                # ("unimplemented"); 3.13 already when partitioning, and compiling the
                # unsupported partition then fails as "invalid_arguments".
                if not _low_precision(ops):
                    if not native_partition.is_supported:
                        raise _no_kernel(ops, exc, chain_tried=False) from None
                    raise
                if exc.status != "unimplemented" and native_partition.is_supported:
                    raise
                failure = exc
        try:
            return _as_f32.Chain(ops, self._inputs, self._outputs,
                                 fpmath_mode=self._partition._fpmath_mode)
        except Error as exc:
            raise _no_kernel(ops, failure or exc) from None

    def _output_for(self, lt: _core.LogicalTensor) -> _core.LogicalTensor:
        for n in self._partition._ops:
            if _registry.is_legacy(n.source.kind) and n.source.outputs[0].id == lt.id:
                return n.op.outputs[0]
        return lt

    @property
    def runs_in_f32(self) -> bool:
        """Whether it runs in f32 between TypeCasts (this CPU's oneDNN has no kernel
        for an op of it in its bf16/f16 dtype, or only the reference kernel)."""
        return isinstance(self._native, _as_f32.Chain) and self._native.widened

    @property
    def conversions(self) -> Optional[str]:
        """Who converts the TypeCasts of a partition that runs in f32 (``runs_in_f32``):
        the package where oneDNN's reorder for them is not a jit one, else oneDNN;
        None for a partition that runs natively."""
        runner = self._native
        if not isinstance(runner, _as_f32.Chain) or not runner.widened:
            return None
        return _casts.describe(runner.converters)

    @property
    def epilogue_apart(self) -> Optional[str]:
        """Why a ConvTranspose of the partition runs its epilogue after the kernel
        (``_impl.epilogue_apart``), or None."""
        runner = self._native
        return runner.split.why if isinstance(runner, _as_f32.Chain) and runner.split else None

    def query_logical_tensor(self, id: int) -> _core.LogicalTensor:
        if id in self._full:  # a cropped tensor: the user's, as compiled
            return self._full[id]
        runner = self._native
        if isinstance(runner, _as_f32.Chain):
            for lt in runner.inputs + runner.outputs:
                if lt.id == id:
                    return runner.layouts[id]
            raise Error(f"query_logical_tensor: no input or output with id {id} in this "
                        "compiled partition", "invalid_arguments")
        return runner.query_logical_tensor(id)

    @property
    def inplace_ports(self) -> list[tuple[int, int]]:
        runner = self._native
        if isinstance(runner, _as_f32.Chain):
            return []
        views = {v.id for v in self._views}  # a view is part of a tensor: never in place
        return [(i, o) for i, o in runner.inplace_ports if i not in views and o not in views]

    def execute(self, stream: _core.Stream, inputs: Sequence[_core.Tensor],
                outputs: Sequence[_core.Tensor]) -> None:
        inputs = check_list("execute", "inputs", inputs, _core.Tensor)
        outputs = check_list("execute", "outputs", outputs, _core.Tensor)
        hidden = self._partition._hidden
        kept = [t for t in inputs if t.logical_tensor.id not in hidden]
        native = self._native
        for t in inputs:
            n = hidden.get(t.logical_tensor.id)
            if n is None:
                continue
            values = np.asarray(t.numpy())
            if values.ndim != 1 or values.dtype != np.int32:
                raise ValueError(f"the shape input (id {t.logical_tensor.id}) must be a 1-D int32 tensor")
            held = tuple(int(v) for v in values)
            _attrs.check_int_list(n.shape_name or "shape", held, 1)  # the spec's rule first
            out = n.source.outputs[0]
            if _as_f32.known_shape(out) and held != tuple(out.shape):
                raise ValueError(f"the shape input (id {t.logical_tensor.id}) holds {held}, "
                                 f"but op {n.source.id}'s output was compiled with shape {out.shape}")
            if n.shape_value is None or held != n.shape_value:
                native = self._recompile(n, held)
        outs = [self._tensor_for(t) for t in outputs]
        onednn_ins = self._onednn_tensors(kept, self._input_ids, "input")
        onednn_outs = self._onednn_tensors(outs, self._output_ids, "output")
        if isinstance(native, _as_f32.Chain):
            _run_chain(native, onednn_ins, onednn_outs)
        else:
            native.execute(stream, onednn_ins, onednn_outs)
        self._write_left_out(kept, outs)

    def _onednn_tensors(self, tensors: list[_core.Tensor], port_ids: set[int],
                        role: str) -> list[_core.Tensor]:
        """The Tensors oneDNN runs on for the user's `tensors`, as ``_onednn_side``
        maps logical tensors: the view of a cropped tensor's memory at its offset."""
        self._check_cropped_given(role, {t.logical_tensor.id for t in tensors}, "execute", "tensor")
        result = []
        for t in tensors:
            lt = t.logical_tensor
            views = [v for v in self._views if v.full.id == lt.id]
            if not views or lt.id in port_ids:
                result.append(t)
            if views:
                compiled = self._full[lt.id]
                if (lt.dtype, lt.shape, lt.strides) != (compiled.dtype, compiled.shape, compiled.strides):
                    raise ValueError(f"execute: {role} tensor with id {lt.id} has a dtype, shape or "
                                     "strides other than the compiled ones")
            for v in views:
                result.append(_core.Tensor(self._view_lts[v.id], self._engine, v.array(t.array)))
        return result

    def _check_cropped_given(self, role: str, ids: set[int], where: str, what: str) -> None:
        """A ValueError unless `ids` hold each cropped tensor of `role` (oneDNN would
        only name its view's id)."""
        for v in self._views:
            if v.is_output == (role == "output") and v.full.id not in ids:
                raise ValueError(f"{where}: expected an {role} {what} with id {v.full.id}")

    def _write_left_out(self, inputs: list[_core.Tensor], outputs: list[_core.Tensor]) -> None:
        """Complete each cropped output: the positions its op left out (``View``)."""
        arrays = {t.logical_tensor.id: t.array for t in inputs + outputs}
        for v in self._views:
            if v.is_output:
                v.write_left_out(arrays[v.full.id], None if v.bias_id is None else arrays[v.bias_id])

    def _tensor_for(self, t: _core.Tensor) -> _core.Tensor:
        lt = self._output_for(t.logical_tensor)
        if lt is t.logical_tensor:
            return t
        # The legacy output: the same memory, described in the current format.
        view = np.lib.stride_tricks.as_strided(
            t.array, shape=lt.shape, strides=[s * t.array.itemsize for s in lt.strides])
        return _core.Tensor(lt, self._engine, view)

    def _recompile(self, n: Native, values: Sequence[int]) -> _Runner:
        # The shape input differs from what was compiled: the input wins, so
        # compile again with its values.
        rebuilt = Native(n.source, [int(v) for v in values])
        if n.view is not None or rebuilt.view is not None:
            raise UnsupportedError(
                f"{n.source.kind} op {n.source.id}: its shape input holds {tuple(values)}, not the "
                f"{n.shape_name} it was compiled with, and the op runs on a view of a tensor whose "
                "crop depends on it; give the attribute (or the output shape) the input holds")
        graph = _core.Graph(self._partition.engine_kind, self._partition._fpmath_mode)
        graph.add_op(rebuilt.op)
        graph.finalize()
        [part] = graph.get_partitions()
        return self._build([rebuilt.op], part)


def _low_precision(ops: Sequence[_core.Op]) -> bool:
    return any(t.dtype in _arrays.LOW_PRECISION for op in ops for t in op.inputs + op.outputs)


def _needs_f32(op: _core.Op) -> bool:
    """Whether this CPU's oneDNN lacks an optimized kernel for native op `op`
    (``_impl.kernels``; only ops of known shapes are asked)."""
    tensors = op.inputs + op.outputs
    if op.kind not in _registry.SPECS or not all(_as_f32.known_shape(t) for t in tensors):
        return False
    return _kernels.needs_f32(op.kind, op.attrs, op.outputs[0].dtype,
                              [t.shape for t in op.inputs], op.outputs[0].shape)


def _no_kernel(ops: Sequence[_core.Op], exc: Error, chain_tried: bool = True) -> UnsupportedError:
    """The error of a partition that cannot run on this CPU, in any form (`chain_tried`:
    a low-precision partition was tried in f32 between TypeCasts too)."""
    dtypes = sorted({t.dtype for op in ops for t in op.inputs + op.outputs})
    names = ", ".join(f"op {op.id} {op.kind}" for op in ops)
    where = f"{names} ({'/'.join(dtypes)}): oneDNN {_kernels.version()} has no kernel for this " \
            f"partition on this CPU ({_version.cpu_isa()})"
    if not chain_tried:
        return UnsupportedError(f"{where} ({exc.message})", exc.status)
    return UnsupportedError(
        f"{where}, and it could not run it in f32 "
        f"between TypeCasts either ({exc.message}). Give the ops f32 tensors, or use the "
        "functional API (onednn_graph.conv_transpose, ...), which runs every dtype on "
        "every CPU", exc.status)


def _run_chain(chain: _as_f32.Chain, inputs: Sequence[_core.Tensor],
               outputs: Sequence[_core.Tensor]) -> None:
    """Execute `chain` on Tensors, after the checks a compiled partition makes."""
    given = {t.logical_tensor.id: t for t in inputs}
    made = {t.logical_tensor.id: t for t in outputs}
    for role, tensors, want in (("input", given, chain.inputs), ("output", made, chain.outputs)):
        if len(tensors) != len(want) or set(tensors) != {lt.id for lt in want}:
            raise ValueError(f"execute: expected {role} tensors with ids {[lt.id for lt in want]}, "
                             f"got {list(tensors)}")
        for lt in want:
            t, compiled = tensors[lt.id].logical_tensor, chain.layouts[lt.id]
            if (t.dtype, t.shape, t.strides) != (compiled.dtype, compiled.shape, compiled.strides):
                raise ValueError(f"execute: {role} tensor with id {lt.id} has a dtype, shape or "
                                 "strides other than the compiled ones")
    for lt in chain.outputs:
        out = made[lt.id].array
        if not out.flags.writeable:
            raise ValueError(f"execute: output tensor with id {lt.id} is read-only")
        if any(np.may_share_memory(out, t.array) for t in inputs):
            raise ValueError(f"execute: output tensor with id {lt.id} shares memory with an input")
    chain.execute([given[lt.id].array for lt in chain.inputs],
                  [made[lt.id].array for lt in chain.outputs])
