"""The float64 reference of a whole graph, and how far oneDNN may be from it.

A fused partition never writes the values between its ops, so a graph of an op
and its epilogue (BiasAdd, ``onednn_graph.post`` ops, Dequantize / Quantize) is
checked at its outputs: every op's reference is applied, in order, to the
reference values of its inputs, and each value carries a bound ``e`` (per
element) on oneDNN's distance from it:

- a convolution-family op: the package's bound (``tolerance``: two roundings to
  the dtype and the f32 accumulation), plus its inputs' bounds carried through
  the op (``op(e_x, |w|) + op(|x|, e_w)``: the ops are bilinear);
- BiasAdd, a unary or binary op: the spread of its reference over its inputs'
  intervals (evaluated at their ends: every such op here is monotonic, or flat,
  on intervals this small) and one rounding to the dtype; for a unary op also
  2**-20 of ``max(|f(y)|, |y|)`` for oneDNN's f32 eltwise approximations (GELU,
  Mish, HardSwish are ``y`` times an approximated factor: their error scales with
  ``|y|``, e.g. 7e-07 on GELU(-5) = 4e-07);
- Dequantize: one f32 rounding; Quantize: every integer the interval rounds to
  (so a value near a rounding boundary may come out one unit either way).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .. import post as _post, quant as _quant, reference, tolerance

#: The epilogue ops a checked graph may hold besides the convolution-family ones.
EPILOGUE = ("BiasAdd", "Dequantize", "Quantize") + _post.UNARY + _post.BINARY

_ELTWISE = 2.0**-20  # oneDNN's f32 eltwise approximations, relative (test_post_ops.py)


def _rounding(dtype: str) -> float:
    return 2 * tolerance.UNIT_ROUNDOFF.get(dtype, 0.0)


def _spread(f: Callable[..., np.ndarray], values: list[np.ndarray],
            bounds: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """f at `values`, and the most it moves over the corners of values +- bounds."""
    ref = f(*values)
    worst = np.zeros_like(ref)
    corners = [[]]  # type: list[list[np.ndarray]]
    for v, e in zip(values, bounds):
        corners = [c + [v - e] for c in corners] + [c + [v + e] for c in corners]
    with np.errstate(all="ignore"):
        for c in corners:
            moved = np.abs(f(*c) - ref)
            worst = np.fmax(worst, np.where(np.isnan(moved), np.inf, moved))
    return ref, worst


def evaluate(op: Any, values: list[np.ndarray], bounds: list[np.ndarray],
             call: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """The reference value of `op`'s output from its inputs' reference `values`, and its
    bound; `call` is the runner's reference call of a convolution-family op."""
    kind, attrs, out = op.kind, op.attrs, op.outputs[0]
    if call is not None:
        ref = call.fn(*values, **call.kwargs).astype(np.float64)
        mags = [np.abs(v) for v in values]
        e = tolerance.bound(ref, call.fn(*mags, **call.kwargs), out.dtype, call.terms)
        for i, b in enumerate(bounds):
            if np.any(b):
                e = e + np.abs(call.fn(*[b if j == i else m for j, m in enumerate(mags)], **call.kwargs))
        return ref, e
    if kind == "Dequantize":
        q = _quant._from_attrs(attrs, op.inputs[0].dtype)
        ref = reference.dequantize(_quant.Quantized(values[0].astype(_quant.DTYPES[q.dtype]), q))
        return ref, _rounding("f32") * np.abs(ref)
    if kind == "Quantize":
        q = _quant._from_attrs(attrs, out.dtype)
        slack = bounds[0] + _rounding("f32") * np.abs(values[0])  # and the f32 division by the scale
        ref = reference.quantize(values[0], q).astype(np.float64)
        lo = reference.quantize(values[0] - slack, q).astype(np.float64)
        hi = reference.quantize(values[0] + slack, q).astype(np.float64)
        return ref, np.maximum(ref - lo, hi - ref)
    if kind == "BiasAdd":
        channel_last = attrs.get("data_format", "NXC") == "NXC"
        shape = [1] * values[0].ndim
        shape[-1 if channel_last else 1] = -1
        ref, spread = _spread(lambda x, b: x + b.reshape(shape), values, bounds)
        return ref, spread + _rounding(out.dtype) * np.abs(ref)
    if kind in _post.BINARY:  # IEEE operations: one rounding
        def f(a: np.ndarray, b: np.ndarray) -> np.ndarray:
            return reference.post_ops(a, [_post.PostOp(kind, operand=b)])
        ref, spread = _spread(f, values, bounds)
    else:
        p = _post.PostOp(kind, tuple((k, float(v)) for k, v in sorted(attrs.items())
                                     if isinstance(v, (int, float)) and not isinstance(v, bool)))
        ref, spread = _spread(lambda y: reference.post_ops(y, [p]), values, bounds)
        spread = spread + _ELTWISE * np.fmax(np.abs(ref), np.abs(values[0]))
    return ref, spread + _rounding(out.dtype) * np.abs(ref)
