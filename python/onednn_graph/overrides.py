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
* ``--mb=N``: the minibatch of every graph input that carries it (below).
* ``--op-kind=OPID:KIND[+...]``: another kind for an eltwise or binary op, of
  the same family (benchdnn allows it for those only).
* ``--tensor-property=ID:PROPERTY[+...]``: ``undef``, ``variable`` or ``constant``.
* ``--attr-fpmath=MODE``: the graph's fpmath mode (``strict``, ``bf16``, ...).

Every error is a ValueError naming the option and the piece it could not read.
Applying overrides re-derives every tensor's shape from its producer, as
benchdnn's graph driver does (graph/flex_rewrite.cpp): the convolution ops
through ``shapes``, Dequantize / Quantize / TypeCast / BiasAdd / the eltwise ops
as their input, the binary ops by broadcasting; each output keeps its axis
order (its tag). Per-channel scales and zero points follow their axis's new
size as benchdnn 3.13 resizes them (scales repeated, zero points padded with 0).
When an input's rank changes, a rank-sized attribute the line leaves alone
follows it: ``output_padding`` (which oneDNN dumps 12 entries long, the rest
zeros) is cut or padded with zeros, one value repeated on every axis is
repeated on the new ones, and anything else asks for the attribute with
``--op-attrs``.

``--mb`` rewrites axis 0 of the graph inputs benchdnn rewrites
(deserialize.cpp, ``check_tensor_with_mb``): a tensor carries the minibatch
when every op reading it takes it where the minibatch goes (a convolution op's
data inputs, an eltwise op's input, a binary op's larger operand) and passes
it on to an output that does too. Unlike benchdnn, ConvolutionBackwardData
(its ``dst_shape`` follows) and the backward-weights ops (their weights do not
change) take it, and ConvTransposeBackwardData's weights never do.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Optional, Union

from . import _core, graph as _graph, post as _post, shapes
from ._impl import arrays as _arrays, json_format as _json_format, registry as _registry

__all__ = ["InShape", "parse_in_shapes", "parse_op_attrs", "parse_dt", "parse_mb",
           "parse_op_kind", "parse_tensor_property", "parse_count", "apply", "dense_strides",
           "axis_order", "minibatch_inputs"]

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
        if dt not in _arrays.FLOATING:
            _fail("--dt", dt, f"expected one of {', '.join(_arrays.FLOATING)}")
        return dt
    if ":" not in text:
        return check(text)
    return {tid: check(dt) for tid, dt in _entries("--dt", text)}


def parse_count(option: str, text: str) -> int:
    """A non-negative integer option (``--mb``, ``--expected-n-partitions``).

    >>> parse_count("--mb", "2")
    2
    """
    if not text.isdigit():
        _fail(option, text, "expected a non-negative integer")
    return int(text)


def parse_mb(text: str) -> int:
    """A --mb value: the new minibatch, 0 for the file's."""
    return parse_count("--mb", text)


#: The families within which --op-kind may change an op's kind (benchdnn: binary
#: and eltwise ops only).
KIND_FAMILIES = (_post.UNARY, _post.BINARY)


def parse_op_kind(text: str) -> dict[int, str]:
    """Parse an --op-kind value into op id -> new kind.

    >>> parse_op_kind("0:Multiply+3:ReLU")
    {0: 'Multiply', 3: 'ReLU'}
    """
    out = {}
    for oid, kind in _entries("--op-kind", text):
        if not any(kind in family for family in KIND_FAMILIES):
            _fail("--op-kind", kind, "benchdnn changes the kind of binary and eltwise ops only: "
                  f"one of {', '.join(k for f in KIND_FAMILIES for k in f)}")
        out[oid] = kind
    return out


#: --tensor-property values oneDNN 3.2 knows (3.13's ``host_scalar`` is newer).
PROPERTIES = ("undef", "variable", "constant")


def parse_tensor_property(text: str) -> dict[int, str]:
    """Parse a --tensor-property value into tensor id -> property.

    >>> parse_tensor_property("1:constant")
    {1: 'constant'}
    """
    out = {}
    for tid, prop in _entries("--tensor-property", text):
        if prop not in PROPERTIES:
            _fail("--tensor-property", prop, f"expected one of {', '.join(PROPERTIES)} "
                  "(oneDNN 3.2 has no host_scalar)")
        out[tid] = prop
    return out


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


def _relayout(lt: Any, shape: Any, strides: Any, dtype: str, prop: str) -> Any:
    return _core.LogicalTensor(lt.id, dtype, shape, strides, lt.layout, prop)


def _input_lt(lt: Any, spec: Optional[InShape], dtype: str, prop: str) -> Any:
    if spec is None:
        return _relayout(lt, lt.shape, lt.strides, dtype, prop)
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
    return _relayout(lt, tuple(shape), tuple(strides), dtype, prop)


def _spec_output_shape(kind: str, op: _graph.Op, inputs: list[Any],
                       attrs: dict[str, Any]) -> tuple[int, ...]:
    kw = dict(attrs)
    spec = _registry.spec(kind)
    shape_inputs = [t.shape for t in inputs][:len(spec.inputs)]  # an s32 shape input says the output's
    if not _registry.is_legacy(kind) and spec.shape_attr and len(inputs) > len(spec.inputs):
        kw.setdefault(spec.shape_attr, op.outputs[0].shape)
    return shapes.output_shape(kind, shape_inputs, **kw)


#: Ops whose output has their first input's shape.
SAME_SHAPE = ("Dequantize", "Quantize", "TypeCast", "Reorder", "BiasAdd") + _post.UNARY


def _broadcast(kind: str, op_id: int, a: tuple[int, ...], b: tuple[int, ...],
               auto_broadcast: str) -> tuple[int, ...]:
    if auto_broadcast == "none":
        if a != b:
            raise ValueError(f"{kind} op {op_id}: auto_broadcast none needs equal shapes, "
                             f"got {a} and {b}")
        return a
    rank = max(len(a), len(b))
    a, b = (1,) * (rank - len(a)) + a, (1,) * (rank - len(b)) + b
    if any(x != y and 1 not in (x, y) for x, y in zip(a, b)):
        raise ValueError(f"{kind} op {op_id}: shapes {a} and {b} do not broadcast")
    return tuple(max(x, y) if 1 in (x, y) else x for x, y in zip(a, b))


def _derived_shape(kind: str, op: _graph.Op, inputs: list[Any], attrs: dict[str, Any],
                   file_shape: Any) -> Any:
    """The output shape `op` gives on `inputs` (the file's where the op is not one
    whose shape rule the driver knows)."""
    if any(t.shape is None for t in inputs):
        return file_shape
    shapes_in = [tuple(t.shape) for t in inputs]
    if kind in _registry.NAMES:
        try:
            return _spec_output_shape(kind, op, inputs, attrs)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{kind} op {op.id}: {exc}") from None
    if kind in SAME_SHAPE:
        return shapes_in[0]
    if kind in _post.BINARY and len(shapes_in) == 2:
        return _broadcast(kind, op.id, shapes_in[0], shapes_in[1],
                          str(attrs.get("auto_broadcast", "numpy")))
    return file_shape


#: Rank-sized attributes of the convolution ops.
SPATIAL_ATTRS = ("strides", "dilations", "pads_begin", "pads_end", "output_padding")


def _follow_rank(kind: str, op_id: int, attrs: dict[str, Any], rank: int,
                 given: dict[str, str]) -> None:
    """Rank-sized attributes of `attrs` for `rank` spatial axes (module docstring)."""
    for name in SPATIAL_ATTRS:
        value = attrs.get(name)
        if not isinstance(value, list) or len(value) == rank:
            continue
        if name == "output_padding" and not any(value[rank:]):
            attrs[name] = (value + [0] * rank)[:rank]
        elif name not in given and len(set(value)) == 1:
            attrs[name] = [value[0]] * rank
        else:
            raise ValueError(f"{kind} op {op_id}: {name} {value} has {len(value)} entries for "
                             f"{rank} spatial axes; give {name} for the new rank with "
                             f"--op-attrs={op_id}:{name}:{'x'.join(['N'] * rank)}")


def _per_channel(kind: str, attrs: dict[str, Any], shape: Any) -> None:
    """Per-channel scales/zero points resized to their axis, as benchdnn 3.13 does."""
    if attrs.get("qtype") != "per_channel" or "scales" not in attrs or shape is None:
        return
    axis = int(attrs.get("axis", 1)) % max(len(shape), 1)
    n = shape[axis]
    scales = list(attrs["scales"])
    if scales and len(scales) != n:
        attrs["scales"] = [scales[i % len(scales)] for i in range(n)]
    if "zps" in attrs and len(attrs["zps"]) != n:
        zps = list(attrs["zps"])
        attrs["zps"] = (zps + [0] * n)[:n]


#: Which inputs of an op take the minibatch (axis 0): the convolution ops' data.
_MB_INPUTS = {"ConvTranspose": (0,), "ConvTransposeBackwardData": (0,),
              "ConvTransposeBackwardWeights": (0, 1), "ConvolutionBackwardData": (0,),
              "ConvTransposeBackpropFilters": (0, 1), "Convolution": (0,),
              "ConvolutionBackwardWeights": (0, 1)}
#: ...and whether their output carries it on.
_MB_OUTPUT = {"ConvTransposeBackwardWeights": False, "ConvTransposeBackpropFilters": False,
              "ConvolutionBackwardWeights": False}


def minibatch_inputs(ops: list[_graph.Op]) -> list[int]:
    """Ids of the graph inputs ``--mb`` rewrites (module docstring)."""
    readers: dict[int, list[tuple[_graph.Op, int]]] = {}
    for op in ops:
        for i, t in enumerate(op.inputs):
            readers.setdefault(t.id, []).append((op, i))
    memo: dict[int, bool] = {}

    def carries(tid: int) -> bool:
        if tid not in readers:
            return True  # a graph output
        if tid not in memo:
            memo[tid] = False  # a cycle carries nothing
            memo[tid] = all(_takes(op, i, tid) for op, i in readers[tid])
        return memo[tid]

    def _takes(op: _graph.Op, i: int, tid: int) -> bool:
        out = op.outputs[0].id if op.outputs else None
        onward = out is None or carries(out)
        if op.kind in _MB_INPUTS:
            return i in _MB_INPUTS[op.kind] and (not _MB_OUTPUT.get(op.kind, True) or onward)
        if op.kind in _post.BINARY and len(op.inputs) == 2:
            a, b = (list(t.shape or ()) for t in op.inputs)
            larger = op.inputs[0].id if len(a) >= len(b) else op.inputs[1].id
            same_rank_batched = len(a) == len(b) and len(b) > 0 and b[0] != 1
            return (same_rank_batched or tid == larger) and onward
        return i == 0 and onward

    produced = {t.id for op in ops for t in op.outputs}
    inputs = sorted({t.id for op in ops for t in op.inputs if t.id not in produced
                     and t.shape is not None and len(t.shape) > 0})
    return [tid for tid in inputs if carries(tid)]


def _check_ids(graph: _graph.Graph, in_shapes: dict[int, InShape], op_attrs: dict[int, Any],
               dt: Any, op_kind: dict[int, str], tensor_property: dict[int, str]) -> None:
    ops = graph.ops
    produced = {t.id for op in ops for t in op.outputs}
    all_ids = {t.id for op in ops for t in op.inputs + op.outputs}
    op_ids = sorted(op.id for op in ops)
    for tid in in_shapes:
        if tid not in all_ids or tid in produced:
            raise ValueError(f"--in-shapes: the graph has no input tensor with id {tid}; "
                             f"its inputs are {sorted(all_ids - produced)}")
    for option, ids in (("--dt", dt if isinstance(dt, dict) else {}),
                        ("--tensor-property", tensor_property)):
        for tid in ids:
            if tid not in all_ids:
                raise ValueError(f"{option}: the graph has no tensor with id {tid}")
    for option, oids in (("--op-attrs", op_attrs), ("--op-kind", op_kind)):
        for oid in oids:
            if oid not in op_ids:
                raise ValueError(f"{option}: the graph has no op with id {oid}; its ops are "
                                 f"{op_ids}")
    kinds = {op.id: op.kind for op in ops}
    for oid, kind in op_kind.items():
        if not any(kinds[oid] in f and kind in f for f in KIND_FAMILIES):
            raise ValueError(f"--op-kind: op {oid} is a {kinds[oid]}; benchdnn changes a binary "
                             "op into another binary op and an eltwise op into another eltwise "
                             f"op only, not into {kind}")


def _output_lt(kind: str, op_id: int, t: Any, shape: Any, dtype: str, prop: str) -> Any:
    """Output `t` with its derived `shape`, keeping its axis order (its tag)."""
    if shape is not None and t.shape is not None and tuple(shape) == tuple(t.shape):
        return _relayout(t, shape, t.strides, dtype, prop)
    if shape is not None and (any(d < 1 for d in shape) or math.prod(shape) >= 2**63):
        raise ValueError(f"{kind} op {op_id}: output tensor {t.id} would have shape "
                         f"{tuple(shape)}: every dimension must be >= 1 and the size below "
                         "2**63")
    order = axis_order(t.shape, t.strides)
    strides = None if shape is None else dense_strides(
        shape, order if len(order) == len(shape) else list(range(len(shape))))
    return _relayout(t, shape, strides, dtype, prop)


def apply(graph: _graph.Graph, in_shapes: Optional[dict[int, InShape]] = None,
          op_attrs: Optional[dict[int, dict[str, str]]] = None,
          dt: Union[None, str, dict[int, str]] = None, *, mb: int = 0,
          op_kind: Optional[dict[int, str]] = None,
          tensor_property: Optional[dict[int, str]] = None,
          fpmath_mode: Optional[str] = None) -> _graph.Graph:
    """A new Graph: `graph` with the overrides applied and every shape re-derived.

    Raises ValueError when an override names a tensor or op the graph lacks,
    or when the result is inconsistent (e.g. new shapes that do not fit the
    attributes); the message names the option, the op and the rule.
    """
    in_shapes, op_attrs = dict(in_shapes or {}), dict(op_attrs or {})
    op_kind, tensor_property = dict(op_kind or {}), dict(tensor_property or {})
    _check_ids(graph, in_shapes, op_attrs, dt, op_kind, tensor_property)
    ops = graph.ops
    if mb:
        carriers = minibatch_inputs(ops)
        if not carriers:
            raise ValueError(f"--mb={mb}: no input of this graph carries a minibatch")
        lts = {t.id: t for op in ops for t in op.inputs}
        for tid in carriers:  # --mb wins over --in-shapes, as in benchdnn
            spec = in_shapes.get(tid, InShape())
            shape = (mb,) + tuple((spec.shape or lts[tid].shape)[1:])
            tag = spec.tag or (None if spec.strides or spec.shape else "".join(
                chr(ord("a") + i) for i in axis_order(lts[tid].shape, lts[tid].strides)))
            in_shapes[tid] = InShape(shape, tag, spec.strides)

    def dtype_of(lt: Any) -> str:
        if isinstance(dt, dict):
            return dt.get(lt.id, lt.dtype)
        return dt if dt and lt.dtype in _arrays.FLOATING else lt.dtype

    def property_of(lt: Any) -> str:
        return tensor_property.get(lt.id, lt.property)

    out = _graph.Graph(graph.engine_kind, fpmath_mode or graph.fpmath_mode)
    known: dict[int, Any] = {}  # tensor id -> its new logical tensor
    for op in ops:  # a graph's ops are listed producers first (oneDNN's writer does so)
        kind = op_kind.get(op.id, op.kind)
        inputs = [known[t.id] if t.id in known else
                  _input_lt(t, in_shapes.get(t.id), dtype_of(t), property_of(t))
                  for t in op.inputs]
        attrs = op.attrs
        given = op_attrs.get(op.id, {})
        for name, raw in given.items():
            attrs[name] = attr_value(kind, name, raw)
        changed = any(t.shape is not None and n.shape is not None and tuple(t.shape) != tuple(n.shape)
                      for t, n in zip(op.inputs, inputs))
        if kind in _registry.NAMES and inputs and inputs[0].shape is not None:
            _follow_rank(kind, op.id, attrs, len(inputs[0].shape) - 2, given)
            if mb and "dst_shape" in attrs and inputs[0].shape[0] == mb:  # ConvolutionBackwardData
                attrs["dst_shape"] = [mb] + list(attrs["dst_shape"][1:])
        if kind in ("Dequantize", "Quantize") and inputs:
            _per_channel(kind, attrs, inputs[0].shape)
        outputs = []
        for t in op.outputs:
            shape = _derived_shape(kind, op, inputs, attrs, t.shape)
            touched = bool(given) or changed
            if kind in _registry.NAMES and not touched and t.shape is not None \
                    and shape is not None and all(d >= 0 for d in t.shape) \
                    and tuple(t.shape) != tuple(shape):
                raise ValueError(f"{kind} op {op.id}: output tensor {t.id} has shape "
                                 f"{tuple(t.shape)}, but its inputs and attributes give "
                                 f"{shape}")
            outputs.append(_output_lt(kind, op.id, t, shape, dtype_of(t), property_of(t)))
        for t in outputs:
            known[t.id] = t
        out.add_op(_graph.Op(op.id, kind, inputs, outputs, attrs, op.name))
    return out


def __dir__() -> list[str]:
    return list(__all__)
