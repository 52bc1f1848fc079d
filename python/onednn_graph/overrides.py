"""benchdnn-style overrides of a loaded graph: --in-shapes, --op-attrs, --dt.

The syntax is benchdnn's graph driver's (tests/benchdnn/doc/driver_graph.md):

* ``--in-shapes=ID:SHAPE[*TAG|*STRIDES][+ID:...]``: a new shape for graph
  input ``ID`` (``2x64x28x28``), optionally its layout as a tag (``acdb``:
  axes from outermost to innermost) or explicit strides (``50176x1x1792x64``);
  ``ID:*TAG`` keeps the shape. A new shape alone is dense (``abcd``).
* ``--op-attrs=OPID:NAME:VALUE[*NAME:VALUE][+OPID:...]``: list values are
  ``x``-separated (``strides:2x2``), strings as oneDNN spells them
  (``auto_pad:SAME_UPPER``), bools ``true``/``false``.
* ``--dt=DT`` (every floating-point tensor) or ``--dt=ID:DT[+ID:DT]``.

Every error is a ValueError naming the option and the piece it could not read.
Applying overrides re-derives each op's output shape (``shapes.plan``) and keeps
each output's axis order (its tag), as benchdnn does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional, Union

from . import _core, graph as _graph, shapes
from ._impl import dtypes as _dtypes, json_format as _json_format, registry as _registry

__all__ = ["InShape", "parse_in_shapes", "parse_op_attrs", "parse_dt", "apply",
           "dense_strides", "axis_order"]

_DIMS = re.compile(r"^-?\d+(x-?\d+)*$")


@dataclass(frozen=True)
class InShape:
    """One --in-shapes entry: a new shape and/or a layout (tag or strides)."""

    shape: Optional[tuple[int, ...]] = None
    tag: Optional[str] = None
    strides: Optional[tuple[int, ...]] = None


def _fail(option: str, piece: str, rule: str) -> None:
    raise ValueError(f"{option}: cannot read {piece!r}: {rule}")


def _dims(option: str, text: str, minimum: int) -> tuple[int, ...]:
    if not _DIMS.match(text):
        _fail(option, text, "expected integers separated by 'x', e.g. 1x32x28x28")
    dims = tuple(int(v) for v in text.split("x"))
    if any(d < minimum for d in dims):
        _fail(option, text, f"every entry must be >= {minimum}")
    return dims


def _entries(option: str, text: str) -> list[tuple[int, str]]:
    """'ID:REST+ID:REST' -> [(ID, REST)], each ID a non-negative int."""
    out = []
    for item in text.split("+"):
        head, sep, rest = item.partition(":")
        if not sep or not head.isdigit() or not rest:
            _fail(option, item, "expected ID:VALUE with a non-negative integer ID")
        out.append((int(head), rest))
    return out


def parse_in_shapes(text: str) -> dict[int, InShape]:
    """Parse an --in-shapes value.

    >>> parse_in_shapes("0:1x28x28x32*acdb+1:*4x1")
    {0: InShape(shape=(1, 28, 28, 32), tag='acdb', strides=None), 1: InShape(shape=None, tag=None, strides=(4, 1))}
    """
    option, out = "--in-shapes", {}
    for tid, value in _entries(option, text):
        shape_text, star, layout = value.partition("*")
        if not star and value.isalpha():
            _fail(option, value, "a tag follows a '*': ID:*TAG or ID:SHAPE*TAG")
        shape = _dims(option, shape_text, 1) if shape_text else None
        tag = strides = None
        if star:
            if not layout:
                _fail(option, value, "a tag or strides must follow '*'")
            if layout.isalpha():
                tag = layout
                if sorted(tag) != [chr(ord("a") + i) for i in range(len(tag))]:
                    _fail(option, value, f"tag {tag!r} must use each of the letters "
                          f"a..{chr(ord('a') + len(tag) - 1)} once")
            else:
                strides = _dims(option, layout, 1)
        rank = len(shape) if shape else None
        given = len(tag) if tag else len(strides) if strides else None
        if rank and given and rank != given:
            _fail(option, value, f"the layout has {given} entries for a rank-{rank} shape")
        if tid in out:
            _fail(option, value, f"tensor {tid} is given twice")
        out[tid] = InShape(shape, tag, strides)
    return out


def parse_op_attrs(text: str) -> dict[int, dict[str, str]]:
    """Parse an --op-attrs value into op id -> {name: raw value}.

    >>> parse_op_attrs("0:strides:2x2*auto_pad:SAME_UPPER")
    {0: {'strides': '2x2', 'auto_pad': 'SAME_UPPER'}}
    """
    option = "--op-attrs"
    out: dict[int, dict[str, str]] = {}
    for oid, value in _entries(option, text):
        attrs = out.setdefault(oid, {})
        for item in value.split("*"):
            name, sep, raw = item.partition(":")
            if not sep or not name or not raw:
                _fail(option, item, "expected NAME:VALUE")
            attrs[name] = raw
    return out


def parse_dt(text: str) -> Union[str, dict[int, str]]:
    """Parse a --dt value: one dtype for every floating tensor, or ID:DT pairs.

    >>> parse_dt("bf16"), parse_dt("0:f16+2:f16")
    ('bf16', {0: 'f16', 2: 'f16'})
    """
    def check(dt: str) -> str:
        if dt not in _dtypes.FLOATING:
            _fail("--dt", dt, f"expected one of {', '.join(_dtypes.FLOATING)}")
        return dt
    if ":" not in text:
        return check(text)
    return {tid: check(dt) for tid, dt in _entries("--dt", text)}


def attr_value(kind: str, name: str, raw: str) -> Any:
    """An --op-attrs value as the attribute's type (from the op's schema)."""
    types = _json_format.attr_types(kind)
    where = f"--op-attrs {name}:{raw}"
    if name not in types:
        raise ValueError(f"{where}: {kind} has no attribute {name!r}; it takes "
                         f"{', '.join(sorted(types))}")
    t = types[name]
    if t == "s64[]":
        return list(_dims("--op-attrs", raw, -(2**62)))
    if t == "s64":
        return _dims("--op-attrs", raw, -(2**62))[0] if "x" not in raw else _fail(
            "--op-attrs", raw, f"{name} is one integer")
    if t == "bool":
        if raw not in ("true", "false", "1", "0"):
            _fail("--op-attrs", raw, f"{name} is true or false")
        return raw in ("true", "1")
    if t in ("f32", "f32[]"):
        try:
            values = [float(v) for v in raw.split("x")]
        except ValueError:
            _fail("--op-attrs", raw, f"{name} takes numbers")
        return values if t == "f32[]" else values[0]
    return raw


def dense_strides(shape: tuple[int, ...], order: list[int]) -> tuple[int, ...]:
    """Dense strides of `shape` with axes laid out outermost-first as `order`.

    >>> dense_strides((1, 32, 4, 2), [0, 1, 3, 2])   # benchdnn's tag "abdc"
    (256, 8, 1, 4)
    """
    strides, step = [0] * len(shape), 1
    for axis in reversed(order):
        strides[axis] = step
        step *= shape[axis]
    return tuple(strides)


def axis_order(shape: Any, strides: Any) -> list[int]:
    """Axes outermost-first by stride (ties by axis): the tag of a strided tensor."""
    if strides is None or shape is None or len(strides) != len(shape):
        return list(range(len(shape or ())))
    return sorted(range(len(shape)), key=lambda i: (-strides[i], i))


def _relayout(lt: Any, shape: Any, strides: Any, dtype: str) -> Any:
    return _core.LogicalTensor(lt.id, dtype, shape, strides, lt.layout, lt.property)


def _input_lt(lt: Any, spec: Optional[InShape], dtype: str) -> Any:
    if spec is None:
        return _relayout(lt, lt.shape, lt.strides, dtype)
    shape = spec.shape or lt.shape
    if shape is None:
        raise ValueError(f"--in-shapes: tensor {lt.id} has an unknown shape; give one")
    if spec.strides is not None:
        strides = spec.strides
    elif spec.tag is not None:
        strides = dense_strides(shape, [ord(c) - ord("a") for c in spec.tag])
    else:
        strides = dense_strides(shape, list(range(len(shape))))
    if len(strides) != len(shape):
        raise ValueError(f"--in-shapes: tensor {lt.id}: {len(strides)} strides for shape {shape}")
    return _relayout(lt, tuple(shape), tuple(strides), dtype)


def _output_shape(op: _graph.Op, inputs: list[Any], attrs: dict[str, Any]) -> tuple[int, ...]:
    kind = op.kind
    kw = {k: v for k, v in attrs.items()}
    spec = _registry.spec(kind)
    shape_inputs = [t.shape for t in inputs][:len(spec.inputs)]  # an s32 shape input says the output's
    if kind != _registry.LEGACY.kind and spec.shape_attr and len(inputs) > len(spec.inputs):
        kw.setdefault(spec.shape_attr, op.outputs[0].shape)
    return shapes.output_shape(kind, shape_inputs, **kw)


def apply(graph: _graph.Graph, in_shapes: Optional[dict[int, InShape]] = None,
          op_attrs: Optional[dict[int, dict[str, str]]] = None,
          dt: Union[None, str, dict[int, str]] = None) -> _graph.Graph:
    """A new Graph: `graph` with the overrides applied and output shapes re-derived.

    Raises ValueError when an override names a tensor or op the graph lacks,
    or when the result is inconsistent (e.g. new shapes that do not fit the
    attributes); the message names the option, the op and the rule.
    """
    in_shapes, op_attrs = dict(in_shapes or {}), dict(op_attrs or {})
    ops = graph.ops
    produced = {t.id for op in ops for t in op.outputs}
    all_ids = {t.id for op in ops for t in op.inputs + op.outputs}
    for tid in in_shapes:
        if tid not in all_ids or tid in produced:
            raise ValueError(f"--in-shapes: the graph has no input tensor with id {tid}; "
                             f"its inputs are {sorted(all_ids - produced)}")
    if isinstance(dt, dict):
        for tid in dt:
            if tid not in all_ids:
                raise ValueError(f"--dt: the graph has no tensor with id {tid}")
    for oid in op_attrs:
        if oid not in {op.id for op in ops}:
            raise ValueError(f"--op-attrs: the graph has no op with id {oid}; its ops are "
                             f"{sorted(op.id for op in ops)}")

    def dtype_of(lt: Any) -> str:
        if isinstance(dt, dict):
            return dt.get(lt.id, lt.dtype)
        return dt if dt and lt.dtype in _dtypes.FLOATING else lt.dtype

    out = _graph.Graph(graph.engine_kind, graph.fpmath_mode)
    known: dict[int, Any] = {}  # tensor id -> its new logical tensor
    for op in ops:  # a graph's ops are listed producers first (oneDNN's writer does so)
        inputs = [known[t.id] if t.id in known else
                  _input_lt(t, in_shapes.get(t.id), dtype_of(t)) for t in op.inputs]
        attrs = op.attrs
        for name, raw in op_attrs.get(op.id, {}).items():
            attrs[name] = attr_value(op.kind, name, raw)
        outputs = []
        for i, t in enumerate(op.outputs):
            shape = t.shape
            if op.kind in _registry.NAMES:
                try:
                    shape = _output_shape(op, inputs, attrs)
                except (TypeError, ValueError) as exc:
                    raise ValueError(f"{op.kind} op {op.id}: {exc}") from None
                touched = op.id in op_attrs or any(t.id in in_shapes for t in op.inputs)
                if not touched and t.shape is not None and all(d >= 0 for d in t.shape) \
                        and tuple(t.shape) != shape:
                    raise ValueError(f"{op.kind} op {op.id}: output tensor {t.id} has shape "
                                     f"{tuple(t.shape)}, but its inputs and attributes give "
                                     f"{shape}")
            same = t.shape is not None and shape is not None and tuple(shape) == tuple(t.shape)
            order = axis_order(t.shape, t.strides)
            strides = t.strides if same else None if shape is None else dense_strides(
                shape, order if len(order) == len(shape) else list(range(len(shape))))
            outputs.append(_relayout(t, shape, strides, dtype_of(t)))
        for t in outputs:
            known[t.id] = t
        new = _graph.Op(op.id, op.kind, inputs, outputs, attrs, op.name)
        out.add_op(new)
    return out


def __dir__() -> list[str]:
    return list(__all__)
