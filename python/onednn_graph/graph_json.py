"""oneDNN's JSON graph format: read it into a Graph, write a Graph back.

The format is the one oneDNN writes with ``ONEDNN_GRAPH_DUMP=graph``
(``Graph::serialize`` in ``src/graph/interface/graph.hpp``) and benchdnn's
graph driver reads (``tests/benchdnn/graph/deserialize.cpp``): ``version``,
``engine_kind``, ``fpmath_mode``, optional ``input_ports``/``output_ports``
(written since oneDNN 3.2, present in files of format 3.7.0) and ``graph``, a
list of ops with ``id``, ``name``, ``kind``, typed ``attrs`` and ``inputs`` /
``outputs`` logical tensors (``id``, ``dtype``, ``shape``, ``stride``,
``layout_type``, ``property_type``).

Quirks of real files handled here: every attribute is ``{"type": ...,
"value": ...}`` and benchdnn's reader only sees the value when ``type`` comes
first, so the writer keeps that order; ``output_padding`` is dumped with 12
entries (oneDNN's default is ``DNNL_MAX_NDIMS`` zeros), of which only the
first spatial-rank ones mean anything; ``auto_pad`` is spelled ``None`` /
``SAME_UPPER``; an unknown shape or stride is written as ``[INT64_MIN]``
(``DNNL_GRAPH_UNKNOWN_DIM``).

Reading and writing are exact inverses on the package's Graph: a load, save,
load round trip gives the same ops, attributes and logical tensors.
"""

from __future__ import annotations

import json
import os
from typing import Any, NoReturn, Optional, Sequence, Union


from . import _core, _impl, graph as _graph, quant as _quant
from .errors import Error, UnsupportedError
from ._impl import arrays as _arrays, dataflow as _dataflow, registry as _registry
from ._impl.arrays import dense_strides
from ._impl.json_format import (FORMAT_VERSION, LT_FIELDS, UNKNOWN_DIM, attr_types, document,
                                known_kinds, op_json, to_json)

__all__ = ["load_graph", "save_graph", "to_json", "from_json", "document", "op_json",
           "FORMAT_VERSION"]
_impl.export(__name__, to_json, document, op_json)

# Format versions this reader knows: the Graph API preview (0.x) and oneDNN 3.x.
_KNOWN_MAJORS = (0, 3)

#: oneDNN's statuses when its schema of an op refuses what a file gives the op (a
#: missing output, an input too many, an attribute value out of its set): bad input,
#: which oneDNN reports without naming the op.
_REFUSED_OPS = ("invalid_graph_op", "invalid_arguments")

PathOrDict = Union[str, "os.PathLike[str]", dict]


class _Reader:
    """Reads one document; every error names the file and the JSON field."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, field: str, message: str) -> NoReturn:
        raise ValueError(f"{self.source}: {field}: {message}")

    def get(self, obj: dict, key: str, field: str, kind: type, default: Any = ...) -> Any:
        if key not in obj:
            if default is ...:
                self.fail(field or "(top level)", f"missing field {key!r}")
            return default
        value = obj[key]
        if not _is(value, kind):
            self.fail(f"{field}.{key}" if field else key,
                      f"expected {_KIND_NAMES[kind]}, got {json.dumps(value)[:60]}")
        return value

    def version(self, doc: dict) -> str:
        text = self.get(doc, "version", "", str)
        parts = text.split(".")
        if not (len(parts) == 3 and all(p.isdigit() for p in parts)):
            self.fail("version", f"{text!r} is not MAJOR.MINOR.PATCH")
        if int(parts[0]) not in _KNOWN_MAJORS:
            self.fail("version", f"unknown format version {text!r}; this reader knows the "
                      "formats of oneDNN's Graph API 0.x and 3.x")
        return text

    def int_list(self, value: Any, field: str) -> list[int]:
        if not _is(value, list) or not all(_is(v, int) for v in value):
            self.fail(field, f"expected a list of int64s, got {json.dumps(value)[:60]}")
        return value

    def dims(self, values: list[int], field: str, tid: int, what: str) -> None:
        """Refuse negative dims or strides other than the unknown marker (oneDNN 3.x
        writes INT64_MIN; the package, and the 0.x files, -1)."""
        bad = [v for v in values if v < 0 and v not in _UNKNOWN_MARKERS]
        if bad:
            self.fail(field, f"tensor {tid}: {what} must be >= 0 (or INT64_MIN, unknown), "
                      f"got {values}")

    def memory(self, field: str, tid: int, dtype: str, shape: list[int],
               strides: list[int]) -> None:
        """Refuse a strided layout whose elements share memory (oneDNN only says
        it "could not construct a memory descriptor"), or that spans more bytes
        than this machine holds (NumPy would raise MemoryError when the runner
        allocates it)."""
        overlap = _overlapping_axis(shape, strides)
        if overlap is not None:
            axis, needed = overlap
            self.fail(f"{field}.stride", f"tensor {tid} of shape {shape} has strides {strides}, "
                      f"whose elements overlap: axis {axis} (size {shape[axis]}) needs a stride "
                      f"of at least {needed} (the extent of the axes inside it), got "
                      f"{strides[axis]}")
        if dtype not in _arrays.DTYPES:
            return  # _core.LogicalTensor names the dtype it does not know
        itemsize = _arrays.DTYPES[dtype].itemsize
        too_long = [a for a, s in enumerate(strides) if s * itemsize > _INT64_MAX]
        if too_long:  # even on an axis of size 1: NumPy and oneDNN keep byte strides in int64
            axis = too_long[0]
            self.fail(f"{field}.stride", f"tensor {tid} of shape {shape} has strides {strides}: "
                      f"axis {axis}'s stride of {strides[axis]} {dtype} elements is more than "
                      "2**63-1 bytes (byte strides are int64)")
        span = strided_span(shape, strides)
        nbytes = span * itemsize
        limit, limit_text = memory_limit()
        if nbytes > limit:
            # A shape whose strides are its dense ones is too big itself; otherwise the
            # strides leave gaps that make it so.
            blame = "shape" if tuple(strides) == dense_strides(shape) else "stride"
            self.fail(f"{field}.{blame}", f"tensor {tid} of shape {shape}, strides {strides} "
                      f"and dtype {dtype} spans {span} elements ({nbytes} bytes): more than "
                      f"{limit_text}")

    def logical_tensor(self, obj: Any, field: str) -> Any:
        if not _is(obj, dict):
            self.fail(field, "expected an object")
        extra = sorted(set(obj) - set(LT_FIELDS))
        if extra:
            self.fail(f"{field}.{extra[0]}", f"unknown field; a logical tensor has "
                      f"{', '.join(LT_FIELDS)}")
        tid = self.get(obj, "id", field, int)
        dtype = self.get(obj, "dtype", field, str)
        raw_shape = self.int_list(self.get(obj, "shape", field, list), f"{field}.shape")
        raw_stride = self.int_list(self.get(obj, "stride", field, list, [UNKNOWN_DIM]),
                                   f"{field}.stride")
        layout = self.get(obj, "layout_type", field, str, "strided")
        prop = self.get(obj, "property_type", field, str, "undef")
        self.dims(raw_shape, f"{field}.shape", tid, "dims")
        shape, stride = _dims(raw_shape), _dims(raw_stride)
        if layout == "strided" and shape is not None and stride is not None:
            if len(stride) != len(shape):
                self.fail(f"{field}.stride", f"{len(stride)} entries for {len(shape)} dimensions")
            self.dims(raw_stride, f"{field}.stride", tid, "strides")
        strides = stride if layout == "strided" and shape is not None and stride is not None \
            and all(s >= 0 for s in stride) else None
        if strides is not None and all(d >= 0 for d in shape):
            self.memory(field, tid, dtype, shape, strides)
        try:
            return _core.LogicalTensor(tid, dtype, shape, strides, layout, prop)
        except (TypeError, ValueError) as exc:
            self.fail(field, str(exc))

    def attrs(self, kind: str, obj: Any, field: str, rank: int) -> dict[str, Any]:
        if not _is(obj, dict):
            self.fail(field, "expected an object of name: {type, value}")
        known = attr_types(kind)
        out = {}
        for name, entry in obj.items():
            where = f"{field}.{name}"
            if name not in known:
                self.fail(where, f"unknown attribute of {kind}"
                          + (f"; it takes {', '.join(sorted(known))}" if len(known) < 20 else ""))
            if not _is(entry, dict) or set(entry) != {"type", "value"}:
                self.fail(where, 'expected {"type": ..., "value": ...}')
            declared, value = entry["type"], entry["value"]
            if declared != known[name]:
                self.fail(f"{where}.type", f"{declared!r}, but oneDNN stores {name} as "
                          f"{known[name]!r}")
            if not _typed(declared, value):
                self.fail(f"{where}.value", f"{json.dumps(value)[:60]} is not a {declared}")
            if name == "output_padding" and kind in _registry.NAMES and rank >= 1 \
                    and len(value) > rank:
                # oneDNN dumps its DNNL_MAX_NDIMS-long default; only the first
                # spatial-rank entries mean anything, the rest must be zeros.
                if any(value[rank:]):
                    self.fail(f"{where}.value", f"entries past the {rank} spatial axes must be "
                              f"0, got {value}")
                value = value[:rank]
            out[name] = value
        return out

    def quantization(self, field: str, op: str, attrs: dict[str, Any], dtype: str) -> None:
        """Refuse Dequantize / Quantize attributes the runner's reference cannot take (a
        scale of 0 or NaN, a zero point outside the dtype): oneDNN runs them, and the
        check after the run could not say which op they came from."""
        try:  # the very reading of the attributes the graph reference does
            _quant._from_attrs(attrs, dtype)
        except (TypeError, ValueError) as exc:
            self.fail(field, f"{op}: {exc}")

    def dataflow(self, ops: list[_graph.Op]) -> None:
        """Refuse a tensor id described two ways, a tensor that two ops write, and ops
        that read their own results through a cycle (``_impl.dataflow``): oneDNN only
        says it "could not finalize the graph", and the package's own passes over a
        graph (e.g. kept_apart's) assume none of them."""
        twice = _dataflow.described_twice(ops)
        if twice:
            tensor, (i, role, k), described, (j, role_before, m), before = twice
            self.fail(f"graph[{i}].{role}[{k}]", f"tensor {tensor} is "
                      f"{_dataflow.description(described)} here but "
                      f"{_dataflow.description(before)} at graph[{j}].{role_before}[{m}]; "
                      "one id is one tensor")
        writer, written_twice = _dataflow.writers(ops)
        if written_twice:
            tensor, first, second = written_twice
            k = next(k for k, t in enumerate(ops[second].outputs) if t.id == tensor)
            self.fail(f"graph[{second}].outputs[{k}].id", f"tensor {tensor} is written by "
                      f"op {ops[first].id} too")
        cycle = _dataflow.cycle(ops, writer)
        if cycle:
            self.fail(f"graph[{cycle[0]}]", _dataflow.described(ops, cycle))

    def op(self, obj: Any, field: str) -> _graph.Op:
        if not _is(obj, dict):
            self.fail(field, "expected an object")
        kind = self.get(obj, "kind", field, str)
        if kind not in known_kinds():
            self.fail(f"{field}.kind", f"unknown op kind {kind!r}")
        oid = self.get(obj, "id", field, int)
        name = self.get(obj, "name", field, str, "")
        inputs = [self.logical_tensor(t, f"{field}.inputs[{i}]")
                  for i, t in enumerate(self.get(obj, "inputs", field, list))]
        outputs = [self.logical_tensor(t, f"{field}.outputs[{i}]")
                   for i, t in enumerate(self.get(obj, "outputs", field, list))]
        rank = inputs[0].ndim - 2 if inputs else -1
        attrs = self.attrs(kind, self.get(obj, "attrs", field, dict, {}), f"{field}.attrs", rank)
        data = inputs if kind == "Dequantize" else outputs if kind == "Quantize" else []
        if data and "scales" in attrs:
            self.quantization(f"{field}.attrs", f"{kind} op {oid}", attrs, data[0].dtype)
        try:
            return _graph.Op(oid, kind, inputs, outputs, attrs, name)
        except (TypeError, ValueError) as exc:
            message = str(exc)  # "ConvTranspose: ..." says the kind; the op's id goes with it
            if message.startswith(f"{kind}: "):
                message = message[len(kind) + 2:]
            self.fail(field, f"{kind} op {oid}: {message}")


def _is(value: Any, kind: type) -> bool:
    # JSON's true/false are not ints here, and ints are not floats' only form; oneDNN's
    # ints (ids, dims, s64 attributes) are int64.
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool) \
            and _INT64_MIN <= value <= _INT64_MAX
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, kind)


_KIND_NAMES = {int: "an int64", str: "a string", list: "a list", dict: "an object"}


def _typed(declared: str, value: Any) -> bool:
    scalar = {"s64": int, "f32": float, "bool": bool, "string": str}
    if declared.endswith("[]"):
        return _is(value, list) and all(_is(v, scalar[declared[:-2]]) for v in value)
    return _is(value, scalar[declared])


# Unknown dims and strides: oneDNN 3.x's DNNL_GRAPH_UNKNOWN_DIM, and -1 (the package's
# unknown dim, and oneDNN 0.x's DNNL_GRAPH_UNKNOWN_DIM).
_UNKNOWN_MARKERS = (UNKNOWN_DIM, -1)
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _overlapping_axis(shape: list[int], strides: list[int]) -> Optional[tuple[int, int]]:
    """(axis, the stride it needs) for the first axis, innermost first, whose stride
    is below the extent of the axes inside it; None when no two elements share memory.

    oneDNN's rule (``memory_desc_strides_check``): an axis of size 1 is never
    stepped along, so its stride does not matter, and a tensor with a zero dim
    has no elements. Unlike oneDNN, which skips zero strides as broadcasts, a
    zero stride on a longer axis counts as an overlap: the package's
    LogicalTensor refuses zero strides, and an output must never hold two
    elements in one place.
    """
    if 0 in shape:
        return None
    extent = 1
    stepped = [a for a in range(len(shape)) if shape[a] > 1]
    for axis in sorted(stepped, key=lambda a: (strides[a], shape[a], a)):
        if strides[axis] < extent:
            return axis, extent
        extent = strides[axis] * shape[axis]
    return None


def strided_span(shape: Sequence[int], strides: Sequence[int]) -> int:
    """Elements from a strided tensor's first to its last, both included (0 when
    it has none): the length of the buffer that holds it."""
    if 0 in shape:
        return 0
    return 1 + sum((d - 1) * s for d, s in zip(shape, strides))


def memory_limit() -> tuple[int, str]:
    """The most bytes one tensor or case may take, and how to say it: this machine's
    physical memory, or less where the process's address space is limited (``ulimit
    -v``: NumPy then raises MemoryError); at most what int64 (oneDNN's sizes) counts."""
    limits = [(_INT64_MAX, "2**63-1 bytes (oneDNN's sizes are int64)")]
    physical = _physical_memory()
    if physical:
        limits.append((physical, f"this machine's {byte_count(physical)} of memory"))
    address_space = _address_space_limit()
    if address_space:
        limits.append((address_space, f"this process's address space limit of "
                                       f"{byte_count(address_space)} (ulimit -v)"))
    return min(limits)


def byte_count(n: int) -> str:
    """'25276510208 bytes (23.5 GiB)': exact, and readable."""
    return f"{n} bytes ({n / 2**30:.1f} GiB)"


def _physical_memory() -> Optional[int]:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") or None
    except (AttributeError, ValueError, OSError):  # no sysconf (Windows), or no such name
        return None


def _address_space_limit() -> Optional[int]:
    try:
        import resource  # POSIX only
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, AttributeError, ValueError, OSError):
        return None
    return None if soft == resource.RLIM_INFINITY or soft <= 0 else soft


def _dims(values: list[int]) -> Any:
    """oneDNN's dims -> the package's: [INT64_MIN] is an unknown rank, and an
    INT64_MIN entry an unknown dim (-1)."""
    if values == [UNKNOWN_DIM]:
        return None
    return [-1 if v == UNKNOWN_DIM else v for v in values]


def from_json(doc: dict, source: str = "<dict>") -> _graph.Graph:
    """A Graph from an already parsed JSON document; `source` names it in errors."""
    r = _Reader(source)
    if not _is(doc, dict):
        r.fail("(top level)", "expected a JSON object")
    r.version(doc)
    engine_kind = r.get(doc, "engine_kind", "", str, "cpu")
    if engine_kind != "cpu":
        r.fail("engine_kind", f"{engine_kind!r}: the package runs on the CPU engine only")
    fpmath = r.get(doc, "fpmath_mode", "", str, "strict")
    ops = r.get(doc, "graph", "", list)
    if not ops:
        r.fail("graph", "the graph has no ops")
    try:
        graph = _graph.Graph(engine_kind, fpmath)
    except (TypeError, ValueError) as exc:
        r.fail("fpmath_mode", str(exc))
    seen: set[int] = set()
    read: list[_graph.Op] = []
    for i, obj in enumerate(ops):
        op = r.op(obj, f"graph[{i}]")
        if op.id in seen:
            r.fail(f"graph[{i}].id", f"op id {op.id} appears twice")
        seen.add(op.id)
        read.append(op)
        try:
            graph.add_op(op)
        except (TypeError, ValueError) as exc:
            message = str(exc)
            r.fail(f"graph[{i}]", message if message.startswith(op.kind)
                   else f"{op.kind} op {op.id}: {message}")
        except Error as exc:
            if isinstance(exc, UnsupportedError) or exc.status not in _REFUSED_OPS:
                raise  # the file is fine, the linked oneDNN cannot take the op
            r.fail(f"graph[{i}]", f"{op.kind} op {op.id}: oneDNN refuses the op as written "
                   f"(its inputs, outputs or attributes): {exc}")
    r.dataflow(read)
    ids = {t.id for op in graph.ops for t in op.inputs + op.outputs}
    for key in ("input_ports", "output_ports"):
        for j, port in enumerate(r.int_list(doc.get(key, []), key)):
            if port not in ids:
                r.fail(f"{key}[{j}]", f"no logical tensor has id {port}")
    return graph


def load_graph(path_or_dict: PathOrDict) -> _graph.Graph:
    """Read a graph in oneDNN's JSON format.

    Parameters
    ----------
    path_or_dict : str, os.PathLike or dict
        A JSON file written by oneDNN (``ONEDNN_GRAPH_DUMP=graph``), by
        benchdnn's inputs or by :func:`save_graph`, or its parsed content.

    Returns
    -------
    Graph
        Not finalized; its ops keep their ids, names, attributes and logical
        tensors (``output_padding`` trimmed to the spatial rank).

    Raises
    ------
    ValueError
        For an unknown version, op kind or attribute, a wrong attribute type
        or a malformed field, a tensor layout whose elements overlap or that
        this machine cannot hold, quantization attributes the reference cannot
        take, a tensor two ops write, ops in a cycle, or an op oneDNN refuses as
        written; the message names the file and the field (e.g. ``case.json:
        graph[0].attrs.paddings: unknown attribute``).

    Examples
    --------
    >>> import onednn_graph as og
    >>> g = og.load_graph({"version": "3.0.0", "graph": [{"id": 0, "kind": "ConvTranspose",
    ...     "attrs": {"strides": {"type": "s64[]", "value": [2]},
    ...               "pads_begin": {"type": "s64[]", "value": [0]},
    ...               "pads_end": {"type": "s64[]", "value": [0]},
    ...               "dilations": {"type": "s64[]", "value": [1]},
    ...               "data_format": {"type": "string", "value": "NCX"},
    ...               "weights_format": {"type": "string", "value": "IOX"}},
    ...     "inputs": [{"id": 0, "dtype": "f32", "shape": [1, 1, 3], "stride": [3, 3, 1]},
    ...                {"id": 1, "dtype": "f32", "shape": [1, 1, 2], "stride": [2, 2, 1]}],
    ...     "outputs": [{"id": 2, "dtype": "f32", "shape": [1, 1, 6], "stride": [6, 6, 1]}]}]})
    >>> [op.kind for op in g.ops]
    ['ConvTranspose']
    """
    if isinstance(path_or_dict, dict):
        return from_json(path_or_dict)
    source = os.fspath(path_or_dict)
    with open(source, encoding="utf-8") as f:
        try:
            doc = json.load(f)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{source}: not valid JSON: {exc}") from None
    return from_json(doc, source)


def save_graph(graph: _graph.Graph, path: Union[str, "os.PathLike[str]"]) -> None:
    """Write `graph` to `path` in oneDNN's JSON format (see :func:`to_json`).

    >>> import os, tempfile, numpy as np, onednn_graph as og
    >>> from onednn_graph.reproducer import reproducer
    >>> g = og.load_graph(reproducer(og.conv_transpose, np.ones((1, 3, 2), np.float32),
    ...                              np.ones((2, 1, 2), np.float32), strides=2).spec)
    >>> path = os.path.join(tempfile.mkdtemp(), "case.json")
    >>> og.save_graph(g, path)
    >>> og.load_graph(path).to_json() == g.to_json()
    True
    """
    with open(path, "w", encoding="utf-8") as f:
        json.dump(to_json(graph), f, indent=2)
        f.write("\n")


def __dir__() -> list[str]:
    return list(__all__)
