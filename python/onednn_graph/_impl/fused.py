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
from . import arrays as _arrays, compiled as _compiled, dtypes as _dtypes, plan as _plan

_FIRST_POST_ID = 100  # logical tensor ids: post-op i's output 100 + i, its operand 200 + i


class Fused:
    """The compiled partitions of one graph: an optional head op, then post-ops."""

    def __init__(self, head: Optional[tuple[str, dict, list[tuple]]], start: tuple,
                 dtype: str, posts: Sequence[tuple[str, tuple, Optional[tuple]]],
                 out: tuple) -> None:
        """`head`: (kind, native attrs, [(shape, strides)] of its inputs) or None, when
        the chain starts from an array of meta `start`; `posts`: (kind, attrs, operand
        meta or None) each; `out`: the result's (shape, strides)."""
        lt = _graph.LogicalTensor
        g = _graph.Graph()
        shape = tuple(out[0])
        if head is not None:
            kind, attrs, metas = head
            ins = [lt(i, dtype, s, st) for i, (s, st) in enumerate(metas)]
            current = lt(_FIRST_POST_ID - 1, dtype, shape) if posts else lt(_FIRST_POST_ID - 1, dtype, *out)
            g.add_op(_graph.Op(0, kind, ins, [current], attrs))
            self.inputs = [t.id for t in ins]
        else:
            current = lt(_FIRST_POST_ID - 1, dtype, *start)
            self.inputs = [current.id]
        self.operands: list[int] = []
        for i, (post_kind, post_attrs, operand) in enumerate(posts):
            last = i == len(posts) - 1
            result = lt(_FIRST_POST_ID + i, dtype, *out) if last else lt(_FIRST_POST_ID + i, dtype, shape)
            ins = [current]
            op_attrs: dict[str, Any] = dict(post_attrs)
            if operand is not None:
                ins.append(lt(200 + i, dtype, *operand))
                self.operands.append(200 + i)
                op_attrs["auto_broadcast"] = "numpy"
            g.add_op(_graph.Op(1 + i, post_kind, ins, [result], op_attrs))
            current = result
        self.output = current.id
        g.finalize()
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


_CACHE: "OrderedDict[Any, Fused]" = OrderedDict()
_LOCK = threading.Lock()
_CAPACITY = 256


def _get(key: Any, build: Any) -> Fused:
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


def _post_ops(post_ops: Any, shape: tuple, dtype: np.dtype) -> list[tuple[_post.PostOp, Optional[np.ndarray]]]:
    if isinstance(post_ops, _post.PostOp) or not isinstance(post_ops, (list, tuple)):
        raise TypeError("post_ops must be a list of onednn_graph.post ops (post.relu(), "
                        f"post.add(x), ...), got {type(post_ops).__name__}")
    checked = []
    for i, p in enumerate(post_ops):
        if not isinstance(p, _post.PostOp):
            raise TypeError(f"post_ops[{i}] must be an onednn_graph.post op, got {type(p).__name__}")
        operand = None
        if p.operand is not None:
            operand = _arrays.as_input(f"post_ops[{i}] ({p.kind}) operand", p.operand)
            if operand.dtype != dtype:
                raise TypeError(f"post_ops[{i}] ({p.kind}): the operand has dtype {operand.dtype}, "
                                f"the result {dtype}")
            try:
                if np.broadcast_shapes(operand.shape, shape) != shape:
                    raise ValueError
            except ValueError:
                raise ValueError(f"post_ops[{i}] ({p.kind}): an operand of shape {operand.shape} "
                                 f"does not broadcast to the result's {shape}") from None
        checked.append((p, operand))
    return checked


def conv_transpose(run_op: Any, names: Sequence[str], arrays: Sequence[Any], attrs: dict,
                   post_ops: Any, out: Any) -> Any:
    """ConvTranspose of `arrays` with `attrs` (the functional API's keywords), then
    `post_ops`; `run_op(out)` runs the op alone through the functional API."""
    inputs = [_arrays.as_input(n, a) for n, a in zip(names, arrays)]
    cp = _plan.plan_call("ConvTranspose", names, inputs, attrs)
    shape, dtype = tuple(cp.plan.output_shape), inputs[0].dtype
    posts = _post_ops(post_ops, shape, dtype)
    if out is None:
        target = np.empty(shape, dtype)
        result: Any = target
    else:
        target = _arrays.check_out(out, shape, dtype, inputs + [o for _, o in posts if o is not None])
        result = out
    dt = _dtypes.dtype_name(dtype)
    meta = _compiled.meta(target)
    post_key = tuple((p.kind, p.attrs, None if o is None else _compiled.meta(o)) for p, o in posts)
    native = cp.native
    if native.kind == "ConvTranspose" and native.lowering == "native" and not native.crop:
        metas = [_compiled.meta(a) for a in inputs]
        key: Any = ("ConvTranspose", tuple(sorted((k, repr(v)) for k, v in native.attrs.items())),
                    dt, tuple(metas), post_key, meta)
        fused = _get(key, lambda: Fused(("ConvTranspose", native.attrs, metas), (), dt,
                                        post_key, meta))
        held: dict[int, np.ndarray] = dict(enumerate(inputs))
    else:  # the op lowered: it runs alone, the post-ops' graph takes its result
        y = np.empty(shape, dtype)
        run_op(y)
        key = ("post-ops", dt, _compiled.meta(y), post_key, meta)
        fused = _get(key, lambda: Fused(None, _compiled.meta(y), dt, post_key, meta))
        held = {fused.inputs[0]: y}
    for op_id, operand in zip(fused.operands, [o for _, o in posts if o is not None]):
        held[op_id] = operand
    held[fused.output] = target
    with fused.lock:
        fused.run(held)
    return result


def cached() -> list[Fused]:
    """The fused calls compiled so far, least recently used first."""
    with _LOCK:
        return list(_CACHE.values())


@functools.lru_cache(maxsize=None)
def fusable() -> dict[str, list[str]]:
    """Which post-ops (``onednn_graph.post``) the linked oneDNN fuses after a ConvTranspose
    with bias, into one partition with it, in f32: asked of its fusion policy on a small
    NXC problem, once per process (nothing is compiled). ``fused`` and ``apart`` list
    oneDNN's op kinds."""
    lt = _graph.LogicalTensor
    found: dict[str, list[str]] = {"fused": [], "apart": []}
    for kind in _post.UNARY + _post.BINARY:
        ins = [lt(0, "f32", (1, 4, 4, 4)), lt(1, "f32", (2, 2, 4, 4)), lt(2, "f32", (4,))]
        y, z = lt(3, "f32", (1, 8, 8, 4)), lt(4, "f32", (1, 8, 8, 4))
        g = _graph.Graph()
        g.add_op(_graph.Op(0, "ConvTranspose", ins, [y], {"strides": [2, 2], "pads_begin": [0, 0], "pads_end": [0, 0], "dilations": [1, 1],
             "data_format": "NXC", "weights_format": "XOI"}))
        binary = kind in _post.BINARY
        attrs: dict[str, Any] = dict(_post.of_kind(kind, 0.0 if binary else None).attrs)
        if binary:
            attrs["auto_broadcast"] = "numpy"
        g.add_op(_graph.Op(1, kind, [y] + ([lt(5, "f32", (1, 8, 8, 4))] if binary else []), [z], attrs))
        g.finalize()
        found["fused" if len(g.get_partitions("fusion")) == 1 else "apart"].append(kind)
    return found
