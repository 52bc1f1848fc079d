"""The plan of one call: what its signature settles, before anything is compiled.

``plan_call`` checks a call (dtypes, the shape argument, attributes, geometry),
infers what it may, and picks what oneDNN is handed (``lowering``: the op that
compiles, and the formulation run by default). It is pure: nothing is compiled
or run, so the functional API and ``compile_op`` (which then build the plan,
``_impl.call``), reproducers (which write it) and the support probe all share it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np

from .. import shapes
from . import (attrs as _attrs, cost as _cost, dtypes as _dtypes, kernels as _kernels,
               lowering as _lowering, registry as _registry)
from .dtypes import dtype_name, numpy_dtype


@dataclass(frozen=True)
class CallPlan:
    """One call, checked and lowered."""

    #: The op as the caller named it (the legacy name included), and its inputs' names.
    kind: str
    names: tuple[str, ...]
    dtype: np.dtype
    input_shapes: list[tuple[int, ...]]
    #: The geometry of the op in current terms (``shapes.plan``).
    plan: shapes.Plan
    #: What compiles (``lowering.lower``) and what runs by default (``lowering.preferred``).
    native: _lowering.NativeOp
    way: _lowering.NativeOp
    #: Its size as the equivalent ConvTranspose (``cost.problem``): FLOPs, thread count.
    size: _cost.Problem
    #: The result's shape as the caller sees it; the legacy op's is in its filter layout,
    #: and `out_perm` is then the transposition that shows it in the current one.
    result_shape: tuple[int, ...]
    out_perm: Optional[tuple[int, ...]] = None

    @property
    def spec(self) -> _registry.OpSpec:
        return _registry.SPECS[self.plan.attrs.kind]

    @property
    def dtype_name(self) -> str:
        return dtype_name(self.dtype)

    def spec_attrs(self) -> dict[str, Any]:
        """The op's attributes as the spec writes them for this call (what a graph of the
        call as made holds): the shape attribute from the result's shape, and
        output_padding dropped where it is 0 on ops oneDNN 3.2 refuses it on."""
        attrs = self.plan.attrs.as_dict()
        if not self.spec.native_output_padding and not any(attrs["output_padding"]):
            del attrs["output_padding"]
        if self.spec.shape_attr:
            attrs[self.spec.shape_attr] = list(self.plan.output_shape)
        return attrs


def shape_arg(name: str, value: Any) -> Optional[tuple[int, ...]]:
    """weights_shape / dst_shape / filter_shape: a sequence of ints or the spec's 1-D s32 tensor."""
    if value is None:
        return None
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "iu":
            raise TypeError(f"{name} as an array must be int32 (the spec's s32 input), "
                            f"got {value.dtype}")
        if value.ndim != 1:
            raise ValueError(f"{name} must be one-dimensional, got shape {value.shape}")
    return _attrs.check_int_list(name, value, 1)


def _runs_in(way: _lowering.NativeOp, dtype: str, plan: shapes.Plan,
             input_shapes: Sequence[Sequence[int]], flops: int) -> str:
    """The dtype formulation `way` of `plan` (`flops`) runs in on this CPU: `dtype`, or
    f32 where this CPU's oneDNN has no kernel (or only its reference one) for it in
    bf16/f16, or one slower than the f32 chain (``_kernels.runs_in_f32``). The shapes
    are those the op is compiled for: after the crop, in the order `way` takes its
    inputs."""
    if dtype not in _dtypes.LOW_PRECISION or way.unreached:
        return dtype
    if way.kind == _lowering.MATMUL or _lowering.formed(way) in _lowering.F32_ONLY_FORMS:
        return "f32"  # the MatMul's product runs in f32 between the package's casts
    taken, output = [tuple(s) for s in input_shapes], tuple(plan.output_shape)
    if way.crop:
        index = _lowering.geometry_tensor(plan.attrs.kind)
        if index >= 0:
            taken[index] = _lowering.cropped(taken[index], plan.attrs.data_format, way.crop)
        else:
            output = _lowering.cropped(output, plan.attrs.data_format, way.crop)
    if way.input_order:
        taken = [taken[i] for i in way.input_order]
    return "f32" if _kernels.runs_in_f32(way.kind, way.attrs, dtype, taken, output, flops) else dtype


def plan_call(kind: str, names: Sequence[str], inputs: Sequence[Any],
              attrs: dict[str, Any]) -> CallPlan:
    """Check and lower one call of `kind` on `inputs` (named `names`; arrays, or
    anything with ``shape`` and ``dtype``) with the public keywords `attrs`, the
    shape argument included (None when it is to be inferred)."""
    dtypes = {a.dtype for a in inputs}
    if len(dtypes) != 1:
        listing = ", ".join(f"{n}: {a.dtype}" for n, a in zip(names, inputs))
        raise TypeError(f"{kind}: all tensors must share one dtype, got {listing}")
    dtype = numpy_dtype(inputs[0].dtype)  # an array's, or a logical tensor's name
    attrs = dict(attrs)
    given_name = _registry.shape_attr(kind)
    if given_name:
        attrs[given_name] = shape_arg(given_name, attrs.get(given_name))
        if attrs[given_name] is None:
            del attrs[given_name]
    current, attrs, legacy_filter = shapes.current_form(kind, attrs)
    input_shapes = [tuple(a.shape) for a in inputs]
    shape_name = _registry.SPECS[current].shape_attr
    if shape_name and shape_name not in attrs:
        attrs[shape_name] = shapes.infer_output_shape(current, input_shapes, **attrs)
    plan = shapes.plan(current, input_shapes, **attrs)
    native = _lowering.lower(plan, input_shapes)
    size = _cost.problem(plan, input_shapes)
    # The default rules are those of the dtype the op runs in: a bf16/f16 op that this
    # CPU's oneDNN runs as the f32 chain is an f32 problem (unless the rule's
    # formulation has a kernel of its own in the dtype, which f32 timings say nothing of).
    name = dtype_name(dtype)
    runs_in = _runs_in(native, name, plan, input_shapes, size.flops)
    way = _lowering.preferred(plan, input_shapes, native, runs_in, flops=size.flops)
    if runs_in != name and way is not native and (
            _runs_in(way, name, plan, input_shapes, size.flops) == name
            or _lowering.formed(way) in _lowering.F32_ONLY_FORMS):  # they cannot take `name`
        way = _lowering.preferred(plan, input_shapes, native, name, flops=size.flops)
    result_shape, out_perm = tuple(plan.output_shape), None
    if legacy_filter is not None:
        weights_format, rank = attrs["weights_format"], len(result_shape)
        to_legacy = shapes.format_permutation(weights_format, legacy_filter, rank)
        result_shape = tuple(result_shape[p] for p in to_legacy)
        out_perm = shapes.format_permutation(legacy_filter, weights_format, rank)
    return CallPlan(kind, tuple(names), dtype, input_shapes, plan, native, way, size, result_shape,
                    out_perm)
