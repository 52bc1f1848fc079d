"""One spec-level op and what oneDNN 3.2 is handed for it: the engine under
``onednn_graph.graph.Op`` (which shows ``Op`` as its own, with the public docstring
and example).

``Native`` lowers an op as the specification writes it (lower-case ``auto_pad``, the
optional s32 shape input, the legacy ConvTransposeBackpropFilters) through the same
``_lowering`` as the functional API; ops of other kinds pass through. Its s32 shape
input is hidden from oneDNN (3.2 cannot compile a partition with it): the values
become the attribute, and a compiled partition compares them when it executes.

Pads that oneDNN is not handed (a negative pad, output_padding >= strides +
pads_end: ``_lowering``'s docstring) make the op run on a view of one tensor that
leaves out positions outside every kernel window (``NativeOp.crop``), as in the
functional API. That tensor is described to oneDNN as a strided view of the
user's (``View``): the same strides, the cropped shape, under a logical-tensor id
of its own that no other op uses, so oneDNN neither fuses through it nor sees two
shapes for one id.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, TypeVar

import numpy as np

from .. import _core, shapes
from . import (arrays as _arrays, as_f32 as _as_f32, attrs as _attrs, kernels as _kernels,
               lowering as _lowering, plan as _plan, registry as _registry)
from ..errors import UnsupportedError

T = TypeVar("T")


def check_list(where: str, role: str, items: Any, cls: type[T]) -> list[T]:
    """`items` as a list, each a `cls`; a TypeError naming `role` otherwise."""
    if isinstance(items, (str, bytes, np.ndarray)) or not isinstance(items, Sequence) \
            or not all(isinstance(t, cls) for t in items):
        raise TypeError(f"{where}: {role} must be a list of {cls.__name__}")
    return list(items)


def check_dtypes(kind: str, data: Sequence[_core.LogicalTensor], names: Sequence[str],
                 output: _core.LogicalTensor) -> None:
    """Refuse dtypes oneDNN 3.2 refuses for one of the package's ops, naming the tensors:
    its `data` inputs (`names`; not the s32 shape input) share one floating dtype, and
    `output` has it too. (oneDNN says only that it refuses the op: a damaged graph file
    whose ConvolutionBackwardData wrote s32 got no more than that.)"""
    def named(i: int) -> str:
        return f"{names[i]} (tensor {data[i].id})"
    dtypes = [t.dtype for t in data]
    if len(set(dtypes)) > 1:
        listing = ", ".join(f"{named(i)}: {d}" for i, d in enumerate(dtypes))
        raise TypeError(f"{kind}: all tensors must share one dtype, got {listing}")
    dtype = dtypes[0]
    inputs = " and ".join(named(i) for i in range(len(data)))
    if dtype not in _arrays.FLOATING:
        raise TypeError(f"{kind} takes {', '.join(_arrays.FLOATING)} tensors, but {inputs} "
                        f"{'are' if len(data) > 1 else 'is'} {dtype}"
                        + (" (int8 is Dequantize, the op in f32, Quantize)"
                           if dtype in _arrays.QUANTIZED else ""))
    if output.dtype != dtype:
        raise TypeError(f"the output (tensor {output.id}) is {output.dtype}, but the inputs "
                        f"{inputs} are {dtype}: {kind} writes its inputs' dtype, so the output "
                        f"must be {dtype}")


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
        self.inputs = check_list(kind, "inputs", inputs, _core.LogicalTensor)
        self.outputs = check_list(kind, "outputs", outputs, _core.LogicalTensor)
        if kind in _registry.NAMES:
            spec = _registry.spec(kind)  # an s32 shape input may follow the arrays
            lo, hi = spec.required, len(spec.inputs) + (spec.shape_attr is not None)
            if not lo <= len(self.inputs) <= hi or len(self.outputs) != 1:
                raise ValueError(f"{kind} takes {lo}..{hi} inputs and 1 output, got "
                                 f"{len(self.inputs)} and {len(self.outputs)}")
            check_dtypes(kind, self.inputs[:len(spec.inputs)], spec.inputs, self.outputs[0])
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


class View:
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


class Native:
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
        self.view: Optional[View] = None
        if kind not in _registry.NAMES:
            self.op = _core.Op(op.id, kind, inputs, outputs, attrs, op.name)
            return
        spec = _registry.spec(kind)
        # The shape argument in the op's own terms (the legacy op's filter_shape).
        shape_name = _registry.SHAPE_ATTRS[kind]
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
            if normalized.groups > 1 and not spec.native_groups or any(normalized.output_padding):
                raise UnsupportedError(f"{op.kind} op {op.id}: oneDNN {_kernels.version()} cannot "
                                       "compile these attributes as they are, and lowering them needs the "
                                       "input shapes; give the logical tensors known shapes")
            native = _lowering.NativeOp(kind, dict(_lowering.spelled_natively(normalized), **(
                {shape_name: current_attrs[shape_name]} if shape_name else {})), "native")
            if not spec.native_output_padding:
                native.attrs.pop("output_padding", None)
        self.lowering = native.lowering
        self.op = _core.Op(op.id, native.kind, inputs, outputs, native.attrs, op.name)

    def _cropped(self, call: _plan.CallPlan, inputs: list[_core.LogicalTensor],
                 outputs: list[_core.LogicalTensor], view_id: Callable[[], int]) -> View:
        """The view of the tensor `call` crops, put in its place in `inputs` or `outputs`."""
        a = call.plan.attrs
        index = _lowering.geometry_tensor(a.kind)
        full = outputs[0] if index < 0 else inputs[index]
        full_shape = call.plan.output_shape if index < 0 else call.input_shapes[index]
        bias = inputs[2].id if index < 0 and _registry.SPECS[a.kind].has_bias and len(inputs) > 2 \
            else None
        view = View(full, view_id(), full_shape, a.data_format, call.native.crop, index < 0, bias)
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
