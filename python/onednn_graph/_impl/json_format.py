"""oneDNN's JSON graph format, the writing side: ops and graphs as JSON documents.

What ``onednn_graph.graph_json`` reads, this writes (that module's docstring has
the format and its quirks); the spec-level ``Graph`` writes itself through it
(``Graph.to_json``). It imports no spec-level object, so both may use it.
"""

from __future__ import annotations

from typing import Any

from .. import _core
from . import attrs as _attrs, lowering as _lowering, registry as _registry

#: The version the writer puts in files: the format of oneDNN 3.2's own writer
#: (input_ports/output_ports included), which every later reader accepts.
FORMAT_VERSION = "3.2.0"
UNKNOWN_DIM = -(2**63)  # DNNL_GRAPH_UNKNOWN_DIM in oneDNN 3.x
_ATTR_TYPES = {"s64": "s64", "s64 list": "s64[]", "f32": "f32", "f32 list": "f32[]",
               "bool": "bool", "string": "string"}
# Attributes of the legacy ConvTransposeBackpropFilters, unknown to oneDNN 3.2.
_LEGACY_ATTR_TYPES = {"filter_format": "string", "filter_shape": "s64[]"}
#: The fields of a logical tensor, in the order oneDNN writes them.
LT_FIELDS = ("id", "dtype", "shape", "stride", "layout_type", "property_type")


def known_kinds() -> set[str]:
    """The op kinds a file may name: oneDNN's, and the legacy name the package reads."""
    return set(_core.op_kinds()) | {_registry.LEGACY_BACKPROP_FILTERS}


def attr_types(kind: str) -> dict[str, str]:
    """Attribute name -> JSON type for `kind` (the spec's schema for the package's ops)."""
    native = {name: _ATTR_TYPES[t] for name, t in _core.attr_types().items()}
    if kind in _registry.NAMES:
        types = dict(native, **_LEGACY_ATTR_TYPES)
        return {name: types[name] for name in _attrs.schema(kind)}
    return native


def _lt_json(t: Any) -> dict[str, Any]:
    shape = [UNKNOWN_DIM] if t.shape is None else [UNKNOWN_DIM if d < 0 else d for d in t.shape]
    return {"id": t.id, "dtype": t.dtype, "shape": shape,
            "stride": [UNKNOWN_DIM] if t.strides is None else list(t.strides),
            "layout_type": t.layout, "property_type": t.property}


def _attr_json(kind: str, name: str, value: Any, types: dict[str, str]) -> dict[str, Any]:
    if name == "auto_pad":  # oneDNN's reader takes its own spelling; native ops have it already
        value = _lowering.NATIVE_AUTO_PAD.get(value, value)
    # "type" first: benchdnn's reader ignores an attribute whose first key is not "type".
    return {"type": types[name], "value": list(value) if isinstance(value, tuple) else value}


def op_json(op: Any) -> dict[str, Any]:
    """One op (a package Op or a native ``_core.Op``) as a JSON object."""
    types = attr_types(op.kind)
    return {"id": op.id, "name": op.name, "kind": op.kind,
            "attrs": {n: _attr_json(op.kind, n, v, types) for n, v in op.attrs.items()},
            "inputs": [_lt_json(t) for t in op.inputs],
            "outputs": [_lt_json(t) for t in op.outputs]}


def document(ops: list[Any], engine_kind: str = "cpu", fpmath_mode: str = "strict") -> dict:
    """The JSON document of a list of ops, with ports computed as oneDNN does."""
    produced = [t.id for op in ops for t in op.outputs]
    consumed = [t.id for op in ops for t in op.inputs]
    return {"version": FORMAT_VERSION, "engine_kind": engine_kind, "fpmath_mode": fpmath_mode,
            "input_ports": list(dict.fromkeys(i for i in consumed if i not in produced)),
            "output_ports": list(dict.fromkeys(i for i in produced if i not in consumed)),
            "graph": [op_json(op) for op in ops]}


def to_json(graph: Any) -> dict:
    """The graph as a JSON document (a dict; ``json.dumps`` it to get text).

    Attributes are written in oneDNN's spelling, each ``type`` before its
    ``value`` as oneDNN's reader requires; ``version`` is
    :data:`FORMAT_VERSION`; the ports list the tensors no op produces
    (inputs) and no op consumes (outputs).

    >>> import onednn_graph as og
    >>> x = og.LogicalTensor(0, "f32", (1, 1, 3))
    >>> w = og.LogicalTensor(1, "f32", (1, 1, 2))
    >>> g = og.Graph()
    >>> g.add_op(og.Op(0, "ConvTranspose", [x, w], [og.LogicalTensor(2, "f32", (1, 1, 4))],
    ...          {"strides": [1], "pads_begin": [0], "pads_end": [0], "dilations": [1],
    ...           "auto_pad": "same_upper", "data_format": "NCX", "weights_format": "IOX"}))
    >>> og.graph_json.to_json(g)["graph"][0]["attrs"]["auto_pad"]
    {'type': 'string', 'value': 'SAME_UPPER'}
    """
    return document(graph.ops, graph.engine_kind, graph.fpmath_mode)
