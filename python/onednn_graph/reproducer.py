"""Reproducers: a functional-API call, a compiled op or a Graph as a JSON case
plus the ``benchdnn --graph`` command line that replays it.

The oneDNN 3.2 wheels are built without ``ONEDNN_GRAPH_DUMP``, so the package
writes the file itself (``graph_json``). A functional-API call is described,
not executed: ``reproducer(og.conv_transpose, x, w, strides=2)`` plans the
call (its checks and lowering, ``_impl.plan``) and compiles nothing, so a call
that fails in oneDNN still gets its reproducer. Two documents come out: ``spec``, the
op as the user called it, and ``native``, what the package hands oneDNN 3.2
after its lowerings (``_impl/lowering.py``); they differ only for lowered calls.
"""

from __future__ import annotations

import inspect
import json
import os
from dataclasses import dataclass
from typing import Any, Optional, Sequence, Union

import numpy as np

from . import _core, graph as _graph, graph_json, ops, quant as _quant
from ._impl import (arrays as _arrays, as_f32 as _as_f32, call as _call, compiled as _compiled,
                    formed as _formed, fused as _fused, kernels as _kernels, lowering as _lowering,
                    plan as _plan, registry as _registry, unreached as _unreached)
from .operation import FusedOperation, Operation

__all__ = ["Reproducer", "reproducer", "benchdnn_command"]

@dataclass(frozen=True)
class Reproducer:
    """A case in oneDNN's JSON format, as called (``spec``) and as run (``native``)."""

    spec: dict
    native: dict

    def command(self, path: str, native: bool = False) -> str:
        """The benchdnn command line that replays the file at `path`."""
        return benchdnn_command(self.native if native else self.spec, path)

    def save(self, path: Union[str, "os.PathLike[str]"], native: bool = False) -> str:
        """Write the JSON case to `path`; return the benchdnn command line replaying it."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.native if native else self.spec, f, indent=2)
            f.write("\n")
        return self.command(os.fspath(path), native)


def _dims(values: Sequence[int]) -> str:
    return "x".join(str(v) for v in values)


def _value(attr: dict) -> str:
    value = attr["value"]
    if isinstance(value, list):
        return _dims(value)
    return str(value).lower() if isinstance(value, bool) else str(value)


def benchdnn_command(doc: dict, path: str) -> str:
    """``benchdnn --graph`` with --dt, --in-shapes and --op-attrs restating `doc`.

    The file already holds every value; the options spell them out so that a
    reader sees the case at a glance and can vary it.
    """
    ops = doc["graph"]
    inputs = {t["id"]: t for op in ops for t in op["inputs"] if t["id"] in doc["input_ports"]}
    dtypes = sorted({t["dtype"] for op in ops for t in op["inputs"] + op["outputs"]})
    in_shapes = "+".join(f"{tid}:{_dims(t['shape'])}*{_dims(t['stride'])}"
                         for tid, t in inputs.items())
    op_attrs = "+".join(f"{op['id']}:" + "*".join(f"{n}:{_value(a)}" for n, a in op["attrs"].items())
                        for op in ops if op["attrs"])
    parts = ["./benchdnn", "--graph", "--mode=C"]
    if len(dtypes) == 1:
        parts.append(f"--dt={dtypes[0]}")
    parts += [f"--in-shapes={in_shapes}", f"--op-attrs={op_attrs}", f"--case={path}"]
    return " ".join(parts)


def describe(cp: _plan.CallPlan, inputs: Sequence[np.ndarray]) -> Reproducer:
    """The reproducer of one planned functional-API call (``_plan.plan_call``) on `inputs`."""
    kind, plan, way = cp.spec.kind, cp.plan, cp.way
    dtype = cp.dtype_name
    lts = [_core.LogicalTensor(i, dtype, a.shape, _arrays.element_strides(a))
           for i, a in enumerate(inputs)]
    out_shape = plan.output_shape
    out = _core.LogicalTensor(len(inputs), dtype, out_shape,
                              _arrays.element_strides(np.empty(out_shape, np.int8)))
    spec = _graph.Op(0, kind, lts, [out], cp.spec_attrs(), kind)
    if way.unreached:  # the geometry fixes the result; oneDNN runs nothing (_impl.unreached)
        return Reproducer(graph_json.document([spec]), graph_json.document([spec]))
    if _lowering.formed(way) is not None:  # one op on the package's views of the arrays
        form = _call.formed_op(way, dtype, [_compiled.meta(a) for a in inputs],
                               (out_shape, tuple(out.strides)), compile=False)
        return Reproducer(graph_json.document([spec]), graph_json.document(form.graph_ops()))
    taken = [lts[i] for i in way.input_order] if way.input_order else lts
    run = _core.Op(0, way.kind, taken, [out], way.attrs, way.kind)
    if _kernels.runs_in_f32(way.kind, way.attrs, dtype, [t.shape for t in taken], out_shape,
                            cp.size.flops):
        # This CPU's oneDNN runs it in f32 between TypeCasts (_impl.as_f32)
        return Reproducer(graph_json.document([spec]),
                          graph_json.document(_as_f32.widen([run], lts, [out])))
    return Reproducer(graph_json.document([spec]), graph_json.document([run]))


def _call_plan(function: Any, args: tuple, kwargs: dict) -> Optional[Reproducer]:
    """The reproducer of ``function(*args, **kwargs)`` for a functional-API `function`,
    planned as the call would be (checks and lowering included) and not run; None
    for any other callable."""
    kind = next((k for k in _registry.NAMES
                 if getattr(ops, _registry.function(k)) is function), None)
    if kind is None:
        return None
    bound = inspect.signature(function).bind(*args, **kwargs)
    bound.apply_defaults()
    given = bound.arguments
    names = tuple(n for n in _registry.input_names(kind) if given[n] is not None)
    attrs = {k: v for k, v in given.items()
             if k not in _registry.input_names(kind) and k not in ("out", "post_ops", "quantize")}
    if given.get("post_ops") or given.get("quantize") is not None \
            or any(isinstance(given[n], _quant.Quantized) for n in names):
        # A fused call: the op as called, its epilogue and quantization, as one graph.
        return reproducer(_fused.graph_of(kind, names, [given[n] for n in names], attrs,
                                          given.get("post_ops"), given.get("quantize")))
    inputs = [_arrays.as_input(n, given[n]) for n in names]
    return describe(_plan.plan_call(kind, names, inputs, attrs), inputs)


def reproducer(target: Any, *args: Any, **kwargs: Any) -> Reproducer:
    """The JSON case and benchdnn command of a call, a compiled op or a Graph.

    Parameters
    ----------
    target : callable, Graph, Operation or compiled op
        A functional-API function (``og.conv_transpose``, ...) called with
        ``*args, **kwargs`` (described, not executed); a spec-level
        :class:`Graph`; an :class:`Operation` from ``og.compile_op``; or an
        entry of the compiled-op cache (``og.cache.cached_ops()``). A
        compiled op is written as it was handed to oneDNN (``spec`` equals
        ``native``); a fused call (a ``FusedOperation``, or its entry in
        ``og.cache.cached_ops()``) as its graph, as the functional-API call with its
        ``post_ops`` / ``quantize`` would be.

    Examples
    --------
    >>> import numpy as np, onednn_graph as og
    >>> from onednn_graph.reproducer import reproducer
    >>> x = np.ones((1, 8, 5, 5), np.float32)
    >>> w = np.ones((8, 4, 3, 3), np.float32)
    >>> r = reproducer(og.conv_transpose, x, w, strides=2, data_format="NCX",
    ...                weights_format="IOX")
    >>> r.spec["graph"][0]["outputs"][0]["shape"]
    [1, 4, 11, 11]
    >>> r.command("case.json").split()[:4]
    ['./benchdnn', '--graph', '--mode=C', '--dt=f32']
    """
    if isinstance(target, _graph.Graph):
        if args or kwargs:
            raise TypeError("reproducer(graph) takes no further arguments")
        return Reproducer(target.to_json(), graph_json.document(
            [n.op for n in target._ops], target.engine_kind, target.fpmath_mode))
    if isinstance(target, FusedOperation):  # og.compile_op(..., post_ops=...)'s result
        target = target._call
    elif isinstance(target, Operation):  # og.compile_op(...)'s result
        target = target._prepared.op
    if isinstance(target, _fused._Call):  # a fused call's cache entry: its graph as made
        if args or kwargs:
            raise TypeError("reproducer(fused call) takes no further arguments")
        return reproducer(target.graph())
    if isinstance(target, _unreached.Unreached):
        raise ValueError("reproducer: no kernel window reaches this op's output, so oneDNN runs "
                         "nothing for it; give the functional-API call instead")
    if isinstance(target, (_compiled.CompiledOp, _as_f32.ChainOp, _formed.Formed)):
        if args or kwargs:
            raise TypeError("reproducer(compiled_op) takes no further arguments")
        ops_ = target.graph_ops() if not isinstance(target, _compiled.CompiledOp) else [
            _core.Op(0, target.kind, target.inputs, [target.output], target.attrs, target.kind)]
        doc = graph_json.document(ops_)
        return Reproducer(doc, doc)
    result = _call_plan(target, args, kwargs) if callable(target) else None
    if result is None:
        raise TypeError(f"reproducer takes a function of onednn_graph's functional API, a Graph, "
                        f"an Operation or a compiled op, got {getattr(target, '__name__', target)!r}")
    return result


def __dir__() -> list[str]:
    return list(__all__)
