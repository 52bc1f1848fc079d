"""Op, Graph, Partition, Tensor: oneDNN's low-level objects with the spec's semantics.

``_core`` binds oneDNN as it is; these classes take ops as the specification
writes them (lower-case ``auto_pad``, the optional s32 shape input, the legacy
ConvTransposeBackpropFilters) and hand oneDNN 3.2 what it compiles, through
the same ``_lowering`` as the functional API. Ops of other kinds pass through.

Pads that oneDNN is not handed (a negative pad, output_padding >= strides +
pads_end: ``_lowering``'s docstring) make the op run on a view of one tensor
that leaves out positions outside every kernel window (``NativeOp.crop``), as in
the functional API. Here that tensor is described to oneDNN as a strided view of
the user's: the same strides, the cropped shape, under a logical-tensor id of its
own (``_View``) that no other op uses, so oneDNN neither fuses through it nor
sees two shapes for one id. A Partition shows the user's tensor in its ports; a
CompiledPartition hands oneDNN the view of the user's memory at the right offset
and writes the left-out outputs itself: zeros, or ConvTranspose's bias (what the
geometry alone fixes). A cropped output ends its partition: the ops that read it
run as partitions of their own, which ``Graph.get_partitions`` lists after it.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, TypeVar, Union

import numpy as np

from . import _core, shapes
from ._impl import (arrays as _arrays, as_f32 as _as_f32, attrs as _attrs, casts as _casts,
                    dtypes as _dtypes, json_format as _json_format, kept_apart as _kept_apart,
                    kernels as _kernels, lowering as _lowering, plan as _plan,
                    registry as _registry, version as _version)
from .errors import Error, UnsupportedError

__all__ = ["Op", "Graph", "Partition", "CompiledPartition", "Tensor", "LogicalTensor", "Engine",
           "Stream"]

LogicalTensor, Engine, Stream = _core.LogicalTensor, _core.Engine, _core.Stream

T = TypeVar("T")
# What a compiled partition runs: oneDNN's own, or the ops in f32 between TypeCasts.
_Runner = Union[_core.CompiledPartition, _as_f32.Chain]


def _check_list(where: str, role: str, items: Any, cls: type[T]) -> list[T]:
    """`items` as a list, each a `cls`; a TypeError naming `role` otherwise."""
    if isinstance(items, (str, bytes, np.ndarray)) or not isinstance(items, Sequence) \
            or not all(isinstance(t, cls) for t in items):
        raise TypeError(f"{where}: {role} must be a list of {cls.__name__}")
    return list(items)


class Op:
    """One operation, as the specification defines it.

    Parameters
    ----------
    id : int
    kind : str
        The spec's op name, e.g. ``"ConvTranspose"``; also the legacy
        ``"ConvTransposeBackpropFilters"`` and every kind oneDNN knows.
    inputs, outputs : list of LogicalTensor
    attrs : dict, optional
        Spec attribute names -> values, checked against the op's schema.
    name : str, optional

    Examples
    --------
    >>> import onednn_graph as og
    >>> x = og.LogicalTensor(0, "f32", (1, 2, 3, 3))
    >>> w = og.LogicalTensor(1, "f32", (3, 3, 4, 2))
    >>> y = og.LogicalTensor(2, "f32", None)
    >>> op = og.Op(0, "ConvTranspose", [x, w], [y], {"strides": [2, 2],
    ...            "pads_begin": [0, 0], "pads_end": [0, 0], "dilations": [1, 1],
    ...            "data_format": "NCX", "auto_pad": "none"})
    >>> op.attrs["strides"]
    [2, 2]
    """

    def __init__(self, id: int, kind: str, inputs: Sequence[_core.LogicalTensor],
                 outputs: Sequence[_core.LogicalTensor], attrs: Optional[dict[str, Any]] = None,
                 name: str = "") -> None:
        self.id = _attrs.check_int("id", id, 0)
        for arg, value in (("kind", kind), ("name", name)):
            if not isinstance(value, str):
                raise TypeError(f"{arg} must be a str, got {type(value).__name__}")
        self.kind, self.name = kind, name
        self.inputs = _check_list(kind, "inputs", inputs, _core.LogicalTensor)
        self.outputs = _check_list(kind, "outputs", outputs, _core.LogicalTensor)
        if kind in _registry.NAMES:
            spec = _registry.spec(kind)  # an s32 shape input may follow the arrays
            lo, hi = spec.required, len(spec.inputs) + (spec.shape_attr is not None)
            if not lo <= len(self.inputs) <= hi or len(self.outputs) != 1:
                raise ValueError(f"{kind} takes {lo}..{hi} inputs and 1 output, got "
                                 f"{len(self.inputs)} and {len(self.outputs)}")
            rank = self.inputs[0].ndim
            self._attrs = _attrs.check_op_attrs(kind, attrs, rank - 2 if rank >= 0 else None)
        else:
            # oneDNN checks other kinds itself; building the native op now
            # reports an unknown kind or attribute where the user made it.
            _core.Op(self.id, kind, self.inputs, self.outputs, attrs, name)
            self._attrs = dict(attrs or {})

    @property
    def attrs(self) -> dict[str, Any]:
        """A copy of the attributes, normalized (lists, lower-case auto_pad)."""
        return dict(self._attrs)

    def __repr__(self) -> str:
        return f"Op(id={self.id}, kind={self.kind!r})"


class _View:
    """The tensor of a native op that runs on a view of the user's (``NativeOp.crop``): the
    user's logical tensor `full` (of `full_shape`) without `crop`'s positions, which oneDNN
    sees as a strided view under its own `id`. An output view leaves positions outside
    every kernel window unwritten: they are ConvTranspose's bias (the input `bias_id`),
    or zeros."""

    def __init__(self, full: _core.LogicalTensor, id: int, full_shape: Sequence[int],
                 data_format: str, crop: tuple[tuple[int, int], ...], is_output: bool,
                 bias_id: Optional[int]) -> None:
        self.full, self.id, self.full_shape = full, id, tuple(full_shape)
        self.data_format, self.crop = data_format, crop
        self.is_output, self.bias_id = is_output, bias_id

    def logical_tensor(self, lt: _core.LogicalTensor) -> _core.LogicalTensor:
        """The view of `lt` (the user's tensor as given, at op or compile time): its
        strides, the cropped shape. An unknown shape is the op's (C-contiguous, as
        oneDNN lays out an output it infers)."""
        if lt.layout != "strided":
            raise UnsupportedError(
                f"tensor {lt.id}: the op runs on a view of it without the positions outside "
                f"every kernel window, which needs a strided layout, not {lt.layout!r}")
        known = _as_f32.known_shape(lt) and lt.strides is not None
        shape = tuple(lt.shape) if known else self.full_shape
        if shape != self.full_shape:
            raise ValueError(f"tensor {lt.id} has shape {shape}; the op was added with {self.full_shape}")
        strides = list(lt.strides) if known else list(_arrays.dense_strides(shape))
        return _core.LogicalTensor(self.id, lt.dtype, _lowering.cropped(shape, self.data_format, self.crop),
                                   strides, "strided", lt.property)

    def user_port(self) -> _core.LogicalTensor:
        """The user's logical tensor, as a partition's port shows it (of known shape)."""
        lt = self.full
        if _as_f32.known_shape(lt) and lt.strides is not None:
            return lt
        return _core.LogicalTensor(lt.id, lt.dtype, self.full_shape,
                                   _arrays.dense_strides(self.full_shape), "strided", lt.property)

    def array(self, full: np.ndarray) -> np.ndarray:
        """The view of the user's array `full` that the op reads or writes."""
        return _arrays.crop(full, self.data_format, self.crop)

    def write_left_out(self, full: np.ndarray, bias: Optional[np.ndarray]) -> None:
        """Write the positions of output `full` that the op left out: outside every kernel
        window, they are the bias (ConvTranspose with one), or zeros."""
        _arrays.fill_cropped(full, self.data_format, self.crop, bias)


def _next_free_id(lts: Sequence[_core.LogicalTensor]) -> Callable[[], int]:
    """A view id for an op alone in its graph: above every id of `lts`."""
    return lambda: 1 + max(t.id for t in lts)


class _Native:
    """The native op for one spec-level op, its hidden s32 shape input, and the view of
    the tensor it runs on where it is cropped (``view``)."""

    def __init__(self, op: Op, shape_values: Optional[Sequence[int]] = None,
                 view_id: Optional[Callable[[], int]] = None) -> None:
        """`view_id` gives the id of a view (default: one above the op's own ids)."""
        self.source = op
        kind, attrs = op.kind, op.attrs
        inputs, outputs = list(op.inputs), list(op.outputs)
        self.shape_input = None
        self.shape_name: Optional[str] = None
        self.shape_value: Optional[tuple[int, ...]] = None
        self.view: Optional[_View] = None
        if kind not in _registry.NAMES:
            self.op = _core.Op(op.id, kind, inputs, outputs, attrs, op.name)
            return
        spec = _registry.spec(kind)
        # The shape argument in the op's own terms (the legacy op's filter_shape).
        shape_name = _registry.shape_attr(kind)
        if shape_name and len(inputs) == len(spec.inputs) + 1:
            # 3.2 cannot compile a partition with the shape input: its values
            # become the attribute (the input takes precedence, as the spec says).
            self.shape_input = inputs.pop()
        out = outputs[0]
        # Without the shape input's values (known only at execution) or the
        # attribute, an output logical tensor of known shape says it.
        wants_shape = self.shape_input is not None or (shape_name and shape_name not in attrs)
        given = shape_values if shape_values is not None else (
            out.shape if wants_shape and _as_f32.known_shape(out) else None)
        if given is not None and shape_name is not None:
            attrs[shape_name] = list(given)
        # What the op is compiled with, in its own terms (execute() compares the input's values).
        self.shape_name = shape_name
        self.shape_value = tuple(attrs[shape_name]) if shape_name and shape_name in attrs else None
        current, current_attrs, legacy_filter = shapes.current_form(kind, attrs)
        if legacy_filter is not None:
            outputs = [self._legacy_output(out, legacy_filter)]
        if all(_as_f32.known_shape(t) for t in inputs) and (not shape_name or shape_name in attrs):
            call = _plan.plan_call(kind, spec.inputs, inputs, attrs)
            native = call.native
            if native.unreached:
                raise UnsupportedError(
                    f"{op.kind} op {op.id}: no kernel window reaches its output ({native.lowering}), "
                    "so oneDNN has nothing to compute and refuses the geometry; the functional "
                    "API (onednn_graph.ops) returns that result")
            if native.crop:
                self.view = self._cropped(call, inputs, outputs,
                                          view_id or _next_free_id(inputs + outputs))
        elif shape_name and shape_name not in attrs:
            raise ValueError(f"{op.kind} op {op.id}: give the {shape_name} attribute or an output "
                             "logical tensor with a known shape (the shape input's values are "
                             "only known when the partition executes)")
        else:
            kind, shape_name = current, spec.shape_attr
            rank = inputs[0].ndim - 2
            normalized = _attrs.normalize(kind, rank, **{k: v for k, v in current_attrs.items()
                                                         if k != shape_name})
            if normalized.groups > 1 and kind == _registry.CONV_BWD_DATA or any(normalized.output_padding):
                raise UnsupportedError(f"{op.kind} op {op.id}: oneDNN {_kernels.version()} cannot "
                                       "compile these attributes as they are, and lowering them needs the "
                                       "input shapes; give the logical tensors known shapes")
            native = _lowering.NativeOp(kind, dict(_lowering.spelled_natively(normalized), **(
                {shape_name: current_attrs[shape_name]} if shape_name else {})), "native")
            if kind != _registry.CONV_TRANSPOSE:
                native.attrs.pop("output_padding", None)
        self.lowering = native.lowering
        self.op = _core.Op(op.id, native.kind, inputs, outputs, native.attrs, op.name)

    def _cropped(self, call: _plan.CallPlan, inputs: list[_core.LogicalTensor],
                 outputs: list[_core.LogicalTensor], view_id: Callable[[], int]) -> _View:
        """The view of the tensor `call` crops, put in its place in `inputs` or `outputs`."""
        a = call.plan.attrs
        index = _lowering.geometry_tensor(a.kind)
        full = outputs[0] if index < 0 else inputs[index]
        full_shape = call.plan.output_shape if index < 0 else call.input_shapes[index]
        bias = inputs[2].id if index < 0 and a.kind == _registry.CONV_TRANSPOSE and len(inputs) > 2 \
            else None
        view = _View(full, view_id(), full_shape, a.data_format, call.native.crop, index < 0, bias)
        if index < 0:
            outputs[0] = view.logical_tensor(full)
        else:
            inputs[index] = view.logical_tensor(full)
        return view

    @staticmethod
    def _legacy_output(out: _core.LogicalTensor, filter_format: str) -> _core.LogicalTensor:
        """The legacy filter layout, described as current weights via strides."""
        if not _as_f32.known_shape(out) or out.strides is None:
            raise UnsupportedError("ConvTransposeBackpropFilters needs a strided output "
                                   "logical tensor of known shape")
        weights_format = _registry.LEGACY.formats[filter_format]
        perm = shapes.format_permutation(filter_format, weights_format, len(out.shape))
        return _core.LogicalTensor(out.id, out.dtype, [out.shape[p] for p in perm],
                                   [out.strides[p] for p in perm], "strided", out.property)


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
        self._ops: list[_Native] = []
        self._tensor_ids: set[int] = set()  # the ids the user's ops use
        self._view_ids: set[int] = set()    # the ids given to views (_View)

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
        native = _Native(op, view_id=self._new_view_id)
        self._native.add_op(native.op)
        self._ops.append(native)

    def _new_view_id(self) -> int:
        """An id for a view (``_View``) that no op of this graph uses: from
        ``_VIEW_IDS_TOP`` down, far from the ids graphs use (add_op refuses a later op
        that uses one)."""
        candidate = min(self._view_ids, default=_VIEW_IDS_TOP + 1) - 1
        while candidate in self._tensor_ids:
            candidate -= 1
        self._view_ids.add(candidate)
        return candidate

    def finalize(self) -> None:
        # oneDNN's End marks a value the graph must hand out: that keeps it out of a
        # fused partition (_impl.kept_apart). Its partition holds no op of this Graph.
        first = max((op.id for op in self.ops), default=-1) + 1
        for i, value in enumerate(_kept_apart.sum_operands(self.ops)):
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


#: The first id ``Graph`` gives a view (``_View``); they count down from it. Far above
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
    """A partition of a Graph, with the spec's ports (hidden shape inputs included): the
    user's logical tensors, where oneDNN has a view of one (a cropped op's, ``_View``) or
    the legacy op's output in the current weights format."""

    def __init__(self, native: _core.Partition, ops: list[_Native], fpmath_mode: str = "strict") -> None:
        self._native, self._ops, self._fpmath_mode = native, ops, fpmath_mode
        self._hidden = {n.shape_input.id: n for n in ops if n.shape_input is not None}
        self._views = {n.view.id: n.view for n in ops if n.view is not None}
        # oneDNN's ports that are another logical tensor for the user: views (_View), and
        # the legacy op's output described in the current weights format.
        self._shown = {v.id: v.user_port() for v in self._views.values()}
        self._shown.update({n.op.outputs[0].id: n.source.outputs[0] for n in ops
                            if n.source.kind == _registry.LEGACY.kind})

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
        inputs = _check_list("compile", "inputs", inputs, _core.LogicalTensor)
        outputs = _check_list("compile", "outputs", outputs, _core.LogicalTensor)
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
    oneDNN TypeCasts (``_as_f32.Chain``), on the same tensors.

    A cropped op (``_View``) is compiled for the view of the user's logical tensor and
    runs on the view of the user's memory; ``execute`` then writes the positions its
    output leaves out (zeros, or ConvTranspose's bias), and only those.
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
        ports): the view of each cropped tensor (``_View``), and the tensor itself where
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
        """The compiled partition of `ops`, or a Chain running them in f32."""
        failure: Optional[Error] = None
        if not any(_needs_f32(op) for op in ops):
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
            if n.source.kind == _registry.LEGACY.kind and n.source.outputs[0].id == lt.id:
                return n.op.outputs[0]
        return lt

    @property
    def runs_in_f32(self) -> bool:
        """Whether it runs in f32 between TypeCasts (this CPU's oneDNN has no kernel
        for an op of it in its bf16/f16 dtype, or only the reference kernel)."""
        return isinstance(self._native, _as_f32.Chain)

    @property
    def conversions(self) -> Optional[str]:
        """Who converts the TypeCasts of a partition that runs in f32 (``runs_in_f32``):
        the package where oneDNN's reorder for them is not a jit one, else oneDNN;
        None for a partition that runs natively."""
        if not isinstance(self._native, _as_f32.Chain):
            return None
        return _casts.describe(self._native.converters)

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
        inputs = _check_list("execute", "inputs", inputs, _core.Tensor)
        outputs = _check_list("execute", "outputs", outputs, _core.Tensor)
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
        """Complete each cropped output: the positions its op left out (``_View``)."""
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

    def _recompile(self, n: _Native, values: Sequence[int]) -> _Runner:
        # The shape input differs from what was compiled: the input wins, so
        # compile again with its values.
        rebuilt = _Native(n.source, [int(v) for v in values])
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
    return any(t.dtype in _dtypes.LOW_PRECISION for op in ops for t in op.inputs + op.outputs)


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


def __dir__() -> list[str]:
    return list(__all__)
