"""ConvTranspose with post-ops (``onednn_graph.post``): one oneDNN graph, compiled by its
fusion policy, cached per problem.

The graph is the op as ``lower`` hands it to oneDNN, then each post-op on the previous
result (a binary one's operand broadcast NumPy-style). Where the op runs as written
(``NativeOp.lowering == "native"``), the graph starts with it and oneDNN 3.2 fuses the
whole chain into one partition; where it is lowered (a crop, another op), the op runs
through the functional API first and the post-ops' graph takes its result. Either way
every partition oneDNN returns runs, in order, on the caller's arrays and buffers of
this module's own for results between partitions (``Fused.partitions`` counts them).
"""

from __future__ import annotations

import functools
import itertools
import threading
import warnings
from collections import OrderedDict
from typing import Any, Optional, Sequence

import numpy as np

from .. import errors as _errors, graph as _graph, post as _post, quant as _quant
from . import (arrays as _arrays, call as _call, compiled as _compiled, dtypes as _dtypes,
               plan as _plan, version as _version)

# Logical tensor ids: post-op i's output _FIRST_POST_ID + i, its operand _FIRST_OPERAND_ID + i;
# the f32 tensors Dequantize makes from quantized arrays from _FIRST_DEQUANTIZED_ID on.
_FIRST_POST_ID, _FIRST_OPERAND_ID, _FIRST_DEQUANTIZED_ID = 100, 200, 300

#: One array the graph reads or writes: (shape, strides), oneDNN dtype, and for quantized
#: data its quantization (the graph dequantizes what it reads and quantizes what it writes).
Port = tuple[tuple, str, Optional[_quant.Quantization]]


def _chain(head: Optional[tuple[str, dict, list[Port]]], start: Optional[Port],
           posts: Sequence[tuple[str, tuple, Optional[Port]]],
           out: Port, strided: bool = False) -> tuple[Any, list[int], list[int], int]:
    """The finalized graph of `head` (kind, native attrs, its inputs), or of input `start`
    when `head` is None, then `posts` ((kind, attrs, operand or None) each), ending in
    result `out`; and the ids of its inputs, of the post-ops' operands and of its result.
    Values between ops are f32 where an input or the result is quantized, else `out`'s
    dtype, of a layout oneDNN chooses (C-contiguous with `strided`: a graph to write out)."""
    lt = _graph.LogicalTensor
    g = _graph.Graph()
    ports = ([] if head is None else head[2]) + [p for _, _, p in posts if p is not None] + [out] \
        + ([start] if start is not None else [])
    compute = "f32" if any(q is not None for _, _, q in ports) else out[1]
    shape = tuple(out[0][0])
    between = (shape, _arrays.element_strides(np.empty(shape, np.int8))) if strided else (shape,)
    op_ids, dequantized = itertools.count(), itertools.count(_FIRST_DEQUANTIZED_ID)

    def read(tid: int, port: Port, into: Any = None) -> Any:
        """The tensor an op reads for the array of id `tid` (a Dequantize's result, or
        `into`, for quantized data)."""
        meta, dtype, q = port
        raw = lt(tid, dtype, *meta)
        if q is None:
            return raw
        real = into or lt(next(dequantized), "f32",
                          *((meta[0], _arrays.element_strides(np.empty(meta[0], np.int8)))
                            if strided else (meta[0],)))
        g.add_op(_graph.Op(next(op_ids), "Dequantize", [raw], [real], q.attrs))
        return real

    def value(tid: int, last: bool) -> Any:
        """An op's result: the graph's output when it is the last op and `out` is not
        quantized, else an f32 (or `out`-dtype) value of unknown layout."""
        return lt(tid, out[1], *out[0]) if last and out[2] is None else lt(tid, compute, *between)

    if head is not None:
        kind, attrs, metas = head
        ins = [read(i, port) for i, port in enumerate(metas)]
        current = value(_FIRST_POST_ID - 1, not posts)
        g.add_op(_graph.Op(next(op_ids), kind, ins, [current], attrs))
        inputs = list(range(len(metas)))
    else:
        assert start is not None
        alone = not posts and start[2] is not None and out[2] is None  # a lone Dequantize
        current = read(_FIRST_POST_ID - 1, start,
                       lt(_FIRST_POST_ID, out[1], *out[0]) if alone else None)
        inputs = [_FIRST_POST_ID - 1]
    operands: list[int] = []
    for i, (post_kind, post_attrs, operand) in enumerate(posts):
        result = value(_FIRST_POST_ID + i, i == len(posts) - 1)
        ins = [current]
        op_attrs: dict[str, Any] = dict(post_attrs)
        if operand is not None:
            ins.append(read(_FIRST_OPERAND_ID + i, operand))
            operands.append(_FIRST_OPERAND_ID + i)
            op_attrs["auto_broadcast"] = "numpy"
        g.add_op(_graph.Op(next(op_ids), post_kind, ins, [result], op_attrs))
        current = result
    if out[2] is not None:
        result = lt(_FIRST_OPERAND_ID - 1, out[1], *out[0])
        g.add_op(_graph.Op(next(op_ids), "Quantize", [current], [result], out[2].attrs))
        current = result
    g.finalize()
    return g, inputs, operands, current.id


class Fused:
    """The compiled partitions of one chain (``_chain``'s arguments)."""

    def __init__(self, head: Optional[tuple[str, dict, list[Port]]], start: Optional[Port],
                 posts: Sequence[tuple[str, tuple, Optional[Port]]], out: Port) -> None:
        g, self.inputs, self.operands, self.output = _chain(head, start, posts, out)
        self.out_meta = out[0]
        self.parts = []
        for p in g.get_partitions("fusion"):
            ins, outs = list(p.input_ports), list(p.output_ports)
            self.parts.append((p.compile(ins, outs, _compiled.engine()), ins, outs))
        self.partitions = len(self.parts)
        self.lock = threading.Lock()

    def run(self, arrays: dict[int, np.ndarray]) -> None:
        """Execute with `arrays` by logical tensor id (inputs, operands, the output)."""
        engine, stream = _compiled.engine(), _compiled.stream()
        held = dict(arrays)
        for compiled, ins, outs in self.parts:
            for t in outs:
                if t.id not in held:  # a result between partitions
                    held[t.id] = _compiled.array_for(t)
            compiled.execute(stream, [_graph.Tensor(t, engine, held[t.id]) for t in ins],
                             [_graph.Tensor(t, engine, held[t.id]) for t in outs])


_CACHE: "OrderedDict[Any, _Call]" = OrderedDict()
_LOCK = threading.Lock()
_CAPACITY = 256


def _get(key: Any, build: Any) -> "_Call":
    with _LOCK:
        fused = _CACHE.get(key)
        if fused is not None:
            _CACHE.move_to_end(key)
            return fused
    fused = build()
    with _LOCK:
        _CACHE[key] = fused
        while len(_CACHE) > _CAPACITY:
            _CACHE.popitem(last=False)
    return fused


def _read(name: str, value: Any) -> tuple[np.ndarray, Optional[_quant.Quantization]]:
    """The array oneDNN reads for `name`, and its quantization when it is quantized data."""
    if not isinstance(value, _quant.Quantized):
        return _arrays.as_input(name, value), None
    data, q = _arrays.to_numpy(name, value.data), value.quantization
    if data.dtype != _quant.DTYPES[q.dtype]:
        raise TypeError(f"{name}: data of dtype {data.dtype} for a {q.dtype} quantization")
    return (data if _arrays.describable(data) else np.ascontiguousarray(data)), q


def _post_ops(post_ops: Any) -> list[tuple[_post.PostOp, Optional[np.ndarray],
                                           Optional[_quant.Quantization]]]:
    """The post-ops, their operands as arrays oneDNN reads and those operands'
    quantizations (types checked)."""
    if isinstance(post_ops, _post.PostOp) or not isinstance(post_ops, (list, tuple)):
        raise TypeError("post_ops must be a list of onednn_graph.post ops (post.relu(), "
                        f"post.add(x), ...), got {type(post_ops).__name__}")
    checked = []
    for i, p in enumerate(post_ops):
        if not isinstance(p, _post.PostOp):
            raise TypeError(f"post_ops[{i}] must be an onednn_graph.post op, got {type(p).__name__}")
        operand, q = (None, None) if p.operand is None else \
            _read(f"post_ops[{i}] ({p.kind}) operand", p.operand)
        checked.append((p, operand, q))
    return checked


def _check_operands(posts: Sequence[tuple[_post.PostOp, Optional[np.ndarray], Any]],
                    shape: tuple, dtype: np.dtype) -> None:
    for i, (p, operand, q) in enumerate(posts):
        if operand is None:
            continue
        if q is None and operand.dtype != dtype:
            raise TypeError(f"post_ops[{i}] ({p.kind}): the operand has dtype {operand.dtype}, "
                            f"the result {dtype}")
        try:
            if np.broadcast_shapes(operand.shape, shape) != shape:
                raise ValueError
        except ValueError:
            raise ValueError(f"post_ops[{i}] ({p.kind}): an operand of shape {operand.shape} "
                             f"does not broadcast to the result's {shape}") from None


def _check_int8(quants: Sequence[Optional[_quant.Quantization]], inputs: Sequence[np.ndarray],
                attrs: dict, quantize: Optional[_quant.Quantization]) -> None:
    """The int8 forms oneDNN 3.2's ConvTranspose computes (measured, docs/user-guide.md
    "int8"); anything else is refused before it is built."""
    src, weights = quants[0], quants[1]
    if (src is None) != (weights is None):
        raise ValueError("src and weights are both quantized (onednn_graph.quant) or neither; "
                         f"got a quantized {'src' if src else 'weights'} only")
    if src is None:
        if quantize is not None and inputs[0].dtype != np.float32:
            raise _errors.UnsupportedError(f"quantize=: oneDNN's Quantize takes an f32 result, "
                                           f"this one is {inputs[0].dtype}")
        return
    assert weights is not None
    if src.axis is not None:
        raise _errors.UnsupportedError("src: oneDNN's int8 ConvTranspose takes one scale and "
                                       "zero point for src (quant.per_tensor)")
    if weights.dtype != "s8" or any(weights.zero_points):
        raise _errors.UnsupportedError("weights: oneDNN's int8 ConvTranspose takes s8 weights "
                                       "with zero point 0 (symmetric); got "
                                       f"{weights.dtype}, zero points {set(weights.zero_points)}")
    o_axis = 1 if str(attrs.get("weights_format", "XOI")).upper() == "IOX" else inputs[1].ndim - 2
    if weights.axis is not None and weights.axis != o_axis:
        raise ValueError(f"weights: per-channel scales go on the output-channel axis, axis "
                         f"{o_axis} of {attrs.get('weights_format', 'XOI')} weights, not axis "
                         f"{weights.axis} (oneDNN 3.2 reads them as per output channel whatever "
                         "the axis says)")
    if len(inputs) > 2 and inputs[2].dtype != np.float32:
        raise TypeError(f"bias: an int8 ConvTranspose takes an f32 bias, got {inputs[2].dtype}")


#: oneDNN ISAs whose int8 kernels multiply u8 by s8 with VPMADDUBSW (no VNNI): the sum of
#: two products saturates at 16 bits, and for s8 src they halve the weights
#: (oneDNN's docs/advanced/int8_computations.md; seen as ``sa0.5`` in ONEDNN_VERBOSE).
_WITHOUT_VNNI = ("sse41", "avx", "avx2", "avx512_core")


def _warn_inexact(src: _quant.Quantization, weights: np.ndarray) -> None:
    """A RuntimeWarning when this CPU's int8 kernel cannot compute these weights exactly."""
    isa = _version.cpu_isa()
    if isa not in _WITHOUT_VNNI:
        return
    if src.dtype == "u8" and (int(weights.min()) < -64 or int(weights.max()) > 64):
        why = ("u8 src times s8 weights may saturate in 16 bits (pairs of products beyond "
               "32767): keep weights within [-64, 64] (7 bits)")
    elif src.dtype == "s8" and bool(np.bitwise_and(weights, 1).any()):
        why = ("for s8 src oneDNN halves the weights (rounding odd ones): use u8 src, or "
               "even weights")
    else:
        return
    warnings.warn(f"int8 ConvTranspose on {isa} (no VNNI): {why}; the result may differ from "
                  "the exact one", RuntimeWarning, stacklevel=4)


class _Call:
    """What one kind of fused call settled when it was first made: its result's shape,
    the compiled chain, and whether the op runs alone first (it is lowered)."""

    def __init__(self, names: Sequence[str], inputs: Sequence[np.ndarray],
                 quants: Sequence[Optional[_quant.Quantization]], attrs: dict,
                 posts: Sequence[tuple[_post.PostOp, Optional[np.ndarray], Any]],
                 post_key: tuple, out: Optional[tuple],
                 quantize: Optional[_quant.Quantization]) -> None:
        _check_int8(quants, inputs, attrs, quantize)
        self.int8 = quants[0] is not None
        # The plan checks the call; quantized data is planned as the f32 it stands for.
        planned = [np.empty(a.shape, np.float32) if q else a for a, q in zip(inputs, quants)]
        cp = _plan.plan_call("ConvTranspose", names, planned, attrs)
        compute = np.dtype(np.float32) if self.int8 else inputs[0].dtype
        self.shape = tuple(cp.plan.output_shape)
        self.dtype = _quant.DTYPES[quantize.dtype] if quantize else compute
        _check_operands(posts, self.shape, compute)
        meta = out or _compiled.meta(np.empty(self.shape, self.dtype))
        native = cp.native
        self.lowered = not (native.kind == "ConvTranspose" and native.lowering == "native"
                            and not native.crop)
        if self.lowered and self.int8:
            raise _errors.UnsupportedError(
                f"int8 ConvTranspose: oneDNN {_version.onednn_version()} computes this problem "
                f"only as {native.lowering}, which the int8 form does not take")
        result: Port = (meta, _dtypes.dtype_name(self.dtype), quantize)
        # oneDNN 3.2 fuses a quantized operand as a sum post-op that reads it as the
        # result's dtype: one of another dtype (u8 into s8, s8 into u8) comes out wrong
        # (measured: off by up to 77). Such an operand is dequantized by oneDNN apart.
        self.apart = {i: Fused(None, port, [], (_compiled.meta(np.empty(port[0][0], np.float32)), "f32", None))
                      for i, (_, _, port) in enumerate(post_key)
                      if port is not None and port[2] is not None and quantize is not None
                      and port[2].dtype != quantize.dtype}
        post_key = tuple((k, a, (self.apart[i].out_meta, "f32", None) if i in self.apart else op)
                         for i, (k, a, op) in enumerate(post_key))
        if self.lowered:  # the op runs alone, the post-ops' graph takes its result
            start: Port = (_compiled.meta(np.empty(self.shape, compute)),
                           _dtypes.dtype_name(compute), None)
            self.fused = Fused(None, start, post_key, result)
        else:
            ports = [(_compiled.meta(a), _dtypes.dtype_name(a.dtype), q) for a, q in zip(inputs, quants)]
            self.fused = Fused(("ConvTranspose", native.attrs, ports), None, post_key, result)


def conv_transpose(run_op: Any, names: Sequence[str], arrays: Sequence[Any], attrs: dict,
                   post_ops: Any, out: Any, quantize: Any = None) -> Any:
    """ConvTranspose of `arrays` with `attrs` (the functional API's keywords), then
    `post_ops` and `quantize`; `run_op(out)` runs the op alone through the functional
    API. The call is planned and compiled once per kind of call (dtypes, shapes, strides,
    attributes, quantizations)."""
    if quantize is not None and not isinstance(quantize, _quant.Quantization):
        raise TypeError(f"quantize must be a quantization, onednn_graph.quant.to(dtype, scale, "
                        f"zero_point), got {type(quantize).__name__}")
    read = [_read(n, a) for n, a in zip(names, arrays)]
    inputs, quants = [a for a, _ in read], [q for _, q in read]
    posts = _post_ops(post_ops or [])
    post_key = tuple((p.kind, p.attrs, None if o is None else
                      (_compiled.meta(o), _dtypes.dtype_name(o.dtype), q)) for p, o, q in posts)
    out_view = None if out is None else _arrays.to_numpy("out", out)
    # A C-contiguous `out` is laid out as the result the call allocates without one.
    out_meta = None if out_view is None or out_view.flags.c_contiguous else _compiled.meta(out_view)
    key = (tuple((_compiled.meta(a), a.dtype.str, q) for a, q in read),
           tuple((k, _call._freeze(v)) for k, v in attrs.items()), post_key, out_meta, quantize)
    call = _get(key, lambda: _Call(names, inputs, quants, attrs, posts, post_key, out_meta,
                                   quantize))
    if quants[0] is not None:
        _warn_inexact(quants[0], inputs[1])
    operands = [o if i not in call.apart else _dequantized(call.apart[i], o)
                for i, (_, o, _) in enumerate(posts) if o is not None]
    if out is None:
        target = result = np.empty(call.shape, call.dtype)
    else:
        target = _arrays.check_out(out, call.shape, call.dtype, inputs + operands)
        result = out
    fused = call.fused
    if call.lowered:
        y = np.empty(call.shape, inputs[0].dtype)
        run_op(y)
        held = {fused.inputs[0]: y}
    else:
        held = dict(enumerate(inputs))
    for op_id, operand in zip(fused.operands, operands):
        held[op_id] = operand
    held[fused.output] = target
    with fused.lock:
        fused.run(held)
    return result


def graph_of(names: Sequence[str], arrays: Sequence[Any], attrs: dict, post_ops: Any,
             quantize: Any = None) -> Any:
    """The graph of a fused call as it was made: the op with the attributes it was given,
    its epilogue, C-contiguous values between ops (what its reproducer writes; the
    package's Graph lowers the op as a call would)."""
    read = [_read(n, a) for n, a in zip(names, arrays)]
    inputs, quants = [a for a, _ in read], [q for _, q in read]
    posts = _post_ops(post_ops or [])
    _check_int8(quants, inputs, attrs, quantize)
    planned = [np.empty(a.shape, np.float32) if q else a for a, q in zip(inputs, quants)]
    cp = _plan.plan_call("ConvTranspose", names, planned, attrs)
    compute = np.dtype(np.float32) if quants[0] else inputs[0].dtype
    shape = tuple(cp.plan.output_shape)
    _check_operands(posts, shape, compute)
    dtype = _quant.DTYPES[quantize.dtype] if quantize else compute
    ports = [(_compiled.meta(a), _dtypes.dtype_name(a.dtype), q) for a, q in zip(inputs, quants)]
    post_key = tuple((p.kind, p.attrs, None if o is None else
                      (_compiled.meta(o), _dtypes.dtype_name(o.dtype), q)) for p, o, q in posts)
    result: Port = (_compiled.meta(np.empty(shape, dtype)), _dtypes.dtype_name(dtype), quantize)
    return _chain(("ConvTranspose", cp.plan.attrs.as_dict(), ports), None, post_key, result,
                  strided=True)[0]


def _dequantized(dequantize: Fused, data: np.ndarray) -> np.ndarray:
    """`data` dequantized to f32 by oneDNN (the lone Dequantize `dequantize`)."""
    real = np.empty(data.shape, np.float32)
    with dequantize.lock:
        dequantize.run({dequantize.inputs[0]: data, dequantize.output: real})
    return real


def cached() -> list[Fused]:
    """The fused calls compiled so far, least recently used first."""
    with _LOCK:
        return [call.fused for call in _CACHE.values()]


@functools.lru_cache(maxsize=None)
def fusable() -> dict[str, list[str]]:
    """Which post-ops (``onednn_graph.post``) the linked oneDNN fuses after a ConvTranspose
    with bias, into one partition with it, in f32: asked of its fusion policy on a small
    NXC problem, once per process (nothing is compiled). ``fused`` and ``apart`` list
    oneDNN's op kinds."""
    found: dict[str, list[str]] = {"fused": [], "apart": []}
    x, w, b, y = ((1, 4, 4, 4), (1, 16, 4, 1)), ((2, 2, 4, 4), (32, 16, 4, 1)), ((4,), (1,)), \
        ((1, 8, 8, 4), (256, 32, 4, 1))
    head: tuple[str, dict, list[Port]] = ("ConvTranspose", {"strides": [2, 2], "pads_begin": [0, 0], "pads_end": [0, 0],
                              "dilations": [1, 1], "data_format": "NXC", "weights_format": "XOI"},
            [(x, "f32", None), (w, "f32", None), (b, "f32", None)])
    for kind in _post.UNARY + _post.BINARY:
        binary = kind in _post.BINARY
        post = (kind, _post.of_kind(kind, 0.0 if binary else None).attrs,
                (y, "f32", None) if binary else None)
        g = _chain(head, None, [post], (y, "f32", None))[0]
        found["fused" if len(g.get_partitions("fusion")) == 1 else "apart"].append(kind)
    return found
