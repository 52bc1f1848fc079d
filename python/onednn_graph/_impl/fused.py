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
import threading
from collections import OrderedDict
from typing import Any, Optional, Sequence

import numpy as np

from .. import graph as _graph, post as _post
from . import (arrays as _arrays, call as _call, compiled as _compiled, dtypes as _dtypes,
               plan as _plan)

# Logical tensor ids: post-op i's output _FIRST_POST_ID + i, its operand _FIRST_OPERAND_ID + i.
_FIRST_POST_ID, _FIRST_OPERAND_ID = 100, 200


def _chain(head: Optional[tuple[str, dict, list[tuple]]], start: tuple, dtype: str,
           posts: Sequence[tuple[str, tuple, Optional[tuple]]],
           out: tuple) -> tuple[Any, list[int], list[int], int]:
    """The finalized graph of `head` (kind, native attrs, [(shape, strides)] of its inputs),
    or of an input of meta `start` when `head` is None, then `posts` ((kind, attrs, operand
    meta or None) each), ending in a result of meta `out`; and the ids of its inputs, of
    the post-ops' operands and of its result."""
    lt = _graph.LogicalTensor
    g = _graph.Graph()
    shape = tuple(out[0])
    if head is not None:
        kind, attrs, metas = head
        ins = [lt(i, dtype, s, st) for i, (s, st) in enumerate(metas)]
        current = lt(_FIRST_POST_ID - 1, dtype, shape) if posts else lt(_FIRST_POST_ID - 1, dtype, *out)
        g.add_op(_graph.Op(0, kind, ins, [current], attrs))
        inputs = [t.id for t in ins]
    else:
        current = lt(_FIRST_POST_ID - 1, dtype, *start)
        inputs = [current.id]
    operands: list[int] = []
    for i, (post_kind, post_attrs, operand) in enumerate(posts):
        last = i == len(posts) - 1
        result = lt(_FIRST_POST_ID + i, dtype, *out) if last else lt(_FIRST_POST_ID + i, dtype, shape)
        ins = [current]
        op_attrs: dict[str, Any] = dict(post_attrs)
        if operand is not None:
            ins.append(lt(_FIRST_OPERAND_ID + i, dtype, *operand))
            operands.append(_FIRST_OPERAND_ID + i)
            op_attrs["auto_broadcast"] = "numpy"
        g.add_op(_graph.Op(1 + i, post_kind, ins, [result], op_attrs))
        current = result
    g.finalize()
    return g, inputs, operands, current.id


class Fused:
    """The compiled partitions of one chain (``_chain``'s arguments)."""

    def __init__(self, head: Optional[tuple[str, dict, list[tuple]]], start: tuple,
                 dtype: str, posts: Sequence[tuple[str, tuple, Optional[tuple]]],
                 out: tuple) -> None:
        g, self.inputs, self.operands, self.output = _chain(head, start, dtype, posts, out)
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


def _post_ops(post_ops: Any) -> list[tuple[_post.PostOp, Optional[np.ndarray]]]:
    """The post-ops and their operands as arrays oneDNN reads (types checked)."""
    if isinstance(post_ops, _post.PostOp) or not isinstance(post_ops, (list, tuple)):
        raise TypeError("post_ops must be a list of onednn_graph.post ops (post.relu(), "
                        f"post.add(x), ...), got {type(post_ops).__name__}")
    checked = []
    for i, p in enumerate(post_ops):
        if not isinstance(p, _post.PostOp):
            raise TypeError(f"post_ops[{i}] must be an onednn_graph.post op, got {type(p).__name__}")
        operand = None if p.operand is None else \
            _arrays.as_input(f"post_ops[{i}] ({p.kind}) operand", p.operand)
        checked.append((p, operand))
    return checked


def _check_operands(posts: Sequence[tuple[_post.PostOp, Optional[np.ndarray]]], shape: tuple,
                    dtype: np.dtype) -> None:
    for i, (p, operand) in enumerate(posts):
        if operand is None:
            continue
        if operand.dtype != dtype:
            raise TypeError(f"post_ops[{i}] ({p.kind}): the operand has dtype {operand.dtype}, "
                            f"the result {dtype}")
        try:
            if np.broadcast_shapes(operand.shape, shape) != shape:
                raise ValueError
        except ValueError:
            raise ValueError(f"post_ops[{i}] ({p.kind}): an operand of shape {operand.shape} "
                             f"does not broadcast to the result's {shape}") from None


class _Call:
    """What one kind of fused call settled when it was first made: its result's shape,
    the compiled chain, and whether the op runs alone first (it is lowered)."""

    def __init__(self, names: Sequence[str], inputs: Sequence[np.ndarray], attrs: dict,
                 posts: Sequence[tuple[_post.PostOp, Optional[np.ndarray]]],
                 post_key: tuple, out: Optional[tuple]) -> None:
        cp = _plan.plan_call("ConvTranspose", names, inputs, attrs)  # checks the call
        self.shape, dtype = tuple(cp.plan.output_shape), inputs[0].dtype
        _check_operands(posts, self.shape, dtype)
        dt = _dtypes.dtype_name(dtype)
        meta = out or _compiled.meta(np.empty(self.shape, dtype))
        native = cp.native
        self.lowered = not (native.kind == "ConvTranspose" and native.lowering == "native"
                            and not native.crop)
        if self.lowered:  # the op runs alone, the post-ops' graph takes its result
            self.fused = Fused(None, meta, dt, post_key, meta)
        else:
            self.fused = Fused(("ConvTranspose", native.attrs, [_compiled.meta(a) for a in inputs]),
                               (), dt, post_key, meta)


def conv_transpose(run_op: Any, names: Sequence[str], arrays: Sequence[Any], attrs: dict,
                   post_ops: Any, out: Any) -> Any:
    """ConvTranspose of `arrays` with `attrs` (the functional API's keywords), then
    `post_ops`; `run_op(out)` runs the op alone through the functional API. The call is
    planned and compiled once per kind of call (dtypes, shapes, strides, attributes)."""
    inputs = [_arrays.as_input(n, a) for n, a in zip(names, arrays)]
    posts = _post_ops(post_ops)
    post_key = tuple((p.kind, p.attrs, None if o is None else _compiled.meta(o)) for p, o in posts)
    out_view = None if out is None else _arrays.to_numpy("out", out)
    # A C-contiguous `out` is laid out as the result the call allocates without one.
    out_meta = None if out_view is None or out_view.flags.c_contiguous else _compiled.meta(out_view)
    key = (tuple((_compiled.meta(a), a.dtype.str) for a in inputs),
           tuple((k, _call._freeze(v)) for k, v in attrs.items()), post_key, out_meta)
    call = _get(key, lambda: _Call(names, inputs, attrs, posts, post_key, out_meta))
    dtype = inputs[0].dtype
    if out is None:
        target = result = np.empty(call.shape, dtype)
    else:
        target = _arrays.check_out(out, call.shape, dtype, inputs + [o for _, o in posts if o is not None])
        result = out
    fused = call.fused
    if call.lowered:
        y = np.empty(call.shape, dtype)
        run_op(y)
        held = {fused.inputs[0]: y}
    else:
        held = dict(enumerate(inputs))
    for op_id, operand in zip(fused.operands, [o for _, o in posts if o is not None]):
        held[op_id] = operand
    held[fused.output] = target
    with fused.lock:
        fused.run(held)
    return result


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
    head = ("ConvTranspose", {"strides": [2, 2], "pads_begin": [0, 0], "pads_end": [0, 0],
                              "dilations": [1, 1], "data_format": "NXC", "weights_format": "XOI"},
            [x, w, b])
    for kind in _post.UNARY + _post.BINARY:
        binary = kind in _post.BINARY
        post = (kind, _post.of_kind(kind, 0.0 if binary else None).attrs, y if binary else None)
        g = _chain(head, (), "f32", [post], y)[0]
        found["fused" if len(g.get_partitions("fusion")) == 1 else "apart"].append(kind)
    return found
