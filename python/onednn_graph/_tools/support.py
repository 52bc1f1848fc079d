"""What the linked oneDNN does with each op as the spec writes it, and what the package does.

Everything here is measured on the real library, never assumed: a *literal*
probe hands oneDNN the op exactly as the spec writes it (only ``auto_pad``
spelled as 3.2 spells it), compiles it and, if it compiles, runs it and
compares with the reference; the *package* probe runs the same problem through
the public API (the functional API, or the low-level ``Graph`` when the shape
comes as the spec's s32 input) and compares that too. ``scripts/support_matrix.py``
turns a sweep of these probes into ``docs/support-matrix.md``;
``summary()`` is the short form that ``capabilities()`` reports.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional, Union

import numpy as np

from .. import _core, graph as _graph, ops, shapes, tolerance
from .._impl import (as_f32 as _as_f32, attrs as _attrs, compiled as _compiled, arrays as _arrays,
                     kernels as _kernels, lowering as _lowering, plan as _plan,
                     registry as _registry)
from . import runner as _runner
from ..errors import Error, UnsupportedError

def _function(kind: str) -> Callable[..., Any]:
    """`kind`'s function in the functional API."""
    return getattr(ops, _registry.function(kind))


@dataclasses.dataclass(frozen=True)
class Case:
    """One small problem: an op and one value of every dimension of the matrix."""

    kind: str
    dtype: str = "f32"
    rank: int = 2
    data_format: str = "NXC"
    weights_format: Optional[str] = None  # the op's default
    groups: Union[int, str] = 1  # or "depthwise"
    auto_pad: str = "none"
    shape_form: str = "attribute"  # or "s32 input" (ConvTransposeBackwardWeights, ConvolutionBackwardData)
    strides: int = 2
    dilations: int = 1
    pads_begin: int = 1
    pads_end: int = 0
    output_padding: int = 0
    bias: bool = False


@dataclasses.dataclass
class Problem:
    case: Case
    args: list[np.ndarray]  # the functional API's arrays (shape argument excluded)
    kwargs: dict[str, Any]  # its keywords (shape argument included)
    output_shape: tuple[int, ...]
    terms: int


@dataclasses.dataclass
class Outcome:
    """``status`` is "native", "lowered", "unsupported" or "wrong"."""

    status: str
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.status} ({self.detail})" if self.detail else self.status


def problem(case: Case, seed: int = 0) -> Problem:
    """Arrays of random values in [-1, 1) and keywords for `case`."""
    rng = np.random.default_rng(seed)
    numpy_dtype = _arrays.numpy_dtype(case.dtype)
    g = 4 if case.groups == "depthwise" else int(case.groups)
    c_in, c_out = (4, 4) if case.groups == "depthwise" else (2 * g, 3 * g)
    spatial, kernel = (5, 4, 3)[:case.rank], (3, 2, 2)[:case.rank]
    pads = dict(pads_begin=case.pads_begin, pads_end=case.pads_end) if case.auto_pad == "none" else {}
    kw: dict[str, Any] = dict(strides=case.strides, dilations=case.dilations, groups=g,
                              auto_pad=case.auto_pad, output_padding=case.output_padding,
                              data_format=case.data_format, **pads)
    if case.weights_format:
        kw["weights_format"] = case.weights_format
    attrs = _attrs.normalize(case.kind, case.rank, **kw)
    x_shape = shapes.data_shape_for(case.data_format, 2, c_in, spatial)
    w_shape = shapes.weights_shape_for(attrs, c_in, c_out, kernel)

    def rand(shape: tuple[int, ...]) -> np.ndarray:
        return rng.uniform(-1, 1, size=shape).astype(numpy_dtype)

    # The tensors of the equivalent ConvTranspose (registry.OpSpec.equivalent): its src
    # ("small") is x for the ConvTranspose family; for the convolution family x is the
    # forward convolution's src, the larger tensor, and ConvolutionBackwardData its dst_shape.
    spec = _registry.SPECS[case.kind]
    if spec.transposed:
        ct_kw = dict(kw, weights_format=attrs.weights_format)
        small, big = x_shape, shapes.output_shape(_registry.CONV_TRANSPOSE, [x_shape, w_shape], **ct_kw)
    else:
        conv_kw = {k: v for k, v in kw.items() if k != "output_padding"}
        small, big = shapes.plan(_registry.CONVOLUTION, [x_shape, w_shape], **conv_kw).output_shape, x_shape
    if spec.shape_attr:  # ConvolutionBackwardData's dst_shape, a weights gradient's shape
        kw[spec.shape_attr] = w_shape if spec.weights_gradient else big
    shaped = {"small": small, "big": big, "weights": w_shape}
    args = [rand(shaped[spec.roles[i]]) for i in range(spec.required)] + (
        [rand((c_out,))] if spec.has_bias and case.bias else [])
    plan = shapes.plan(case.kind, [a.shape for a in args], **kw)
    shapes_in = [a.shape for a in args]
    return Problem(case, args, kw, plan.output_shape,
                   tolerance.accumulation_terms(plan, shapes_in))


def _reference_call(p: Problem) -> tuple[Any, list[np.ndarray], dict[str, Any]]:
    ref_fn = _runner.reference_of(p.case.kind)
    kw = dict(p.kwargs)
    shape_arg = kw.pop(_registry.spec(p.case.kind).shape_attr or "", None)
    args = p.args + ([shape_arg] if shape_arg is not None else [])
    return ref_fn, args, kw


def _check(p: Problem, got: np.ndarray) -> tolerance.Comparison:
    ref_fn, args, kw = _reference_call(p)
    return tolerance.compare(got, ref_fn, args, kw, p.case.dtype, p.terms)


def literal(p: Problem) -> Outcome:
    """Compile and run the op on oneDNN exactly as the spec writes it."""
    case = p.case
    plan = shapes.plan(case.kind, [a.shape for a in p.args], **p.kwargs)
    attrs = plan.attrs.as_dict()
    attrs["auto_pad"] = _lowering.NATIVE_AUTO_PAD[plan.attrs.auto_pad]
    if not any(plan.attrs.output_padding):  # optional: only written when used
        del attrs["output_padding"]
    shape_name = _registry.spec(case.kind).shape_attr
    if shape_name and case.shape_form == "attribute":
        attrs[shape_name] = list(p.kwargs[shape_name])
    dtype = case.dtype
    n = len(p.args)
    inputs = [_core.LogicalTensor(i, dtype, a.shape, list(np.array(a.strides) // a.itemsize))
              for i, a in enumerate(p.args)]
    if shape_name and case.shape_form == "s32 input":
        inputs.append(_core.LogicalTensor(n, "s32", [len(p.output_shape)]))
    output = _core.LogicalTensor(n + 1, dtype, p.output_shape)
    try:
        graph = _core.Graph("cpu", "strict")
        graph.add_op(_core.Op(0, case.kind, inputs, [output], attrs))
        graph.finalize()
        partitions = graph.get_partitions()
        if len(partitions) != 1 or not partitions[0].is_supported:
            return Outcome("unsupported", "no partition takes the op")
        compiled = partitions[0].compile(inputs, [output], _compiled.engine())
        got = np.empty(p.output_shape, p.args[0].dtype)
        engine = _compiled.engine()
        tensors = [_core.Tensor(lt, engine, a) for lt, a in zip(inputs, p.args)]
        if len(inputs) > n:
            tensors.append(_core.Tensor(inputs[n], engine, np.array(p.output_shape, np.int32)))
        compiled.execute(_compiled.stream(), tensors, [_core.Tensor(output, engine, got)])
    except Error as exc:
        return Outcome("unsupported", f"{exc.status}")
    except ValueError as exc:  # oneDNN inferred another output shape than the spec's
        return Outcome("unsupported", str(exc).split(":")[0])
    result = _check(p, got)
    # The size of a wrong answer depends on the cell; the matrix groups by kind.
    return Outcome("native") if result.ok else Outcome("wrong", "not the reference's numbers")


_NO_KERNEL = f"in f32 between TypeCasts: no kernel for the dtype on {_core.cpu_isa()}"


def package(p: Problem) -> Outcome:
    """Run the problem through the package and compare with the reference."""
    case = p.case
    try:
        if case.shape_form == "s32 input":
            got, how = _through_graph(p)
            how = "s32 shape input read into the attribute" + ("" if how == "native" else f"; {how}")
        else:
            names = _registry.input_names(case.kind)[:len(p.args)]
            how = _plan.plan_call(case.kind, names, p.args, p.kwargs).native.lowering
            _compiled.CACHE.clear()  # so that the call compiles, and the cache holds its op
            got = _function(case.kind)(*p.args, **p.kwargs)
            [op] = _compiled.CACHE.ops()
            if op.runs_in_f32 and op.needed:  # not when only faster
                how = ("" if how == "native" else f"{how}; ") + _NO_KERNEL
    except UnsupportedError as exc:
        return Outcome("unsupported", str(exc))
    result = _check(p, got)
    if not result.ok:
        return Outcome("wrong", str(result))
    return Outcome("native") if how == "native" else Outcome("lowered", how)


def _through_graph(p: Problem) -> tuple[np.ndarray, str]:
    """The low-level path with the shape as the spec's s32 input tensor."""
    case = p.case
    dtype, n = case.dtype, len(p.args)
    kw = dict(p.kwargs)
    shape_name = _registry.spec(case.kind).shape_attr
    assert shape_name is not None  # only ops with a shape attribute take it as an input
    shape_value = kw.pop(shape_name)
    attrs = _attrs.normalize(case.kind, case.rank, **kw).as_dict()
    inputs = [_core.LogicalTensor(i, dtype, a.shape) for i, a in enumerate(p.args)]
    inputs.append(_core.LogicalTensor(n, "s32", [len(shape_value)]))
    output = _core.LogicalTensor(n + 1, dtype, p.output_shape)
    op = _graph.Op(0, case.kind, inputs, [output], attrs)
    graph = _graph.Graph()
    graph.add_op(op)
    graph.finalize()
    [part] = graph.get_partitions()
    engine = _compiled.engine()
    compiled = part.compile(inputs, [output], engine)
    got = np.empty(p.output_shape, p.args[0].dtype)
    tensors = [_core.Tensor(lt, engine, a) for lt, a in zip(inputs, p.args)]
    tensors.append(_core.Tensor(inputs[n], engine, np.array(shape_value, np.int32)))
    compiled.execute(_compiled.stream(), tensors, [_core.Tensor(output, engine, got)])
    how = graph._ops[0].lowering
    native = graph._ops[0].op
    kernel = _kernels.probed(native.kind, native.attrs, dtype, [t.shape for t in native.inputs],
                             native.outputs[0].shape)
    if compiled.runs_in_f32 and (kernel is None or kernel.status == "none"):  # not when only faster
        how = ("" if how == "native" else f"{how}; ") + _NO_KERNEL
    return got, how


#: The features ``summary()`` probes, each a change from the default Case.
FEATURES: dict[str, dict[str, Any]] = {
    "plain (stride 2, pads 1/0)": {},
    "groups > 1": dict(groups=2),
    "depthwise": dict(groups="depthwise"),
    "dilations > 1": dict(dilations=2),
    "auto_pad same_upper": dict(auto_pad="same_upper"),
    "output_padding < strides": dict(output_padding=1),
    "output_padding >= strides": dict(output_padding=2, pads_end=1),
    "output_padding >= strides + pads_end": dict(output_padding=3),
    "shape as s32 input": dict(shape_form="s32 input"),
}


def summary() -> list[dict[str, Any]]:
    """Per op and feature: what oneDNN does with it literally and what the package does."""
    rows = []
    for kind in _registry.KINDS:
        for feature, change in FEATURES.items():
            if change.get("shape_form") and not _registry.spec(kind).shape_attr:
                continue
            p = problem(Case(kind, **change))
            lit, pkg = literal(p), package(p)
            rows.append({"op": kind, "feature": feature, "native": lit.status == "native",
                         "literal": str(lit), "package": str(pkg)})
    return rows
