"""The plan of one call: what its signature settles, before anything is compiled.

``plan_call`` checks a call (dtypes, the shape argument, attributes, geometry),
infers what it may, sizes it (``problem``: its FLOPs, counted once here for the
thread and lowering choices, the CLI and the benchmarks) and picks what oneDNN is
handed (``lowering``: the op that compiles, and the formulation run by default). It
is pure: nothing is compiled or run, so the functional API and ``compile_op`` (which
then build the plan, ``_impl.call``), reproducers (which write it) and the support
probe all share it.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import Any, Optional, Sequence

import numpy as np

from .. import shapes
from . import (arrays as _arrays, attrs as _attrs, kernels as _kernels, lowering as _lowering,
               registry as _registry)
from .arrays import dtype_name, numpy_dtype


# --------------------------------------------------------------------------
# The size of a problem: each op as the ConvTranspose it is equivalent to.
#
# All four operations compute the products of one ConvTranspose: ConvTranspose
# itself, ConvTransposeBackwardData (the ConvTranspose whose src is diff_src),
# ConvTransposeBackwardWeights (same src, dst = diff_dst) and
# ConvolutionBackwardData (a ConvTranspose of diff_dst producing diff_src). Its
# FLOP count follows from that one description (the accumulation length the
# tolerances need is ``tolerance.accumulation_terms``): it counts the products
# whose two operands are both inside the tensors, so products that pads crop
# away (a ConvTranspose's ``pads_end`` of 41 keeps 16 of 57 positions) are not
# work. The CLI, the benchmarks and the thread and lowering choices use it.
# --------------------------------------------------------------------------


def products_along(src: int, dst: int, kernel: int, stride: int, dilation: int,
                   pad_begin: int) -> int:
    """The (src position i, kernel tap t) pairs of one spatial axis of a ConvTranspose
    whose dst position ``i*stride - pad_begin + t*dilation`` lies in ``[0, dst)``:
    the products that reach the output (the others fall in the cropped pads). In
    closed form (``_positions_below``), as sizes may be near 2**63.

    >>> products_along(3, 6, 2, 2, 1, 0)    # stride 2, nothing cropped: 3 * 2
    6
    >>> products_along(3, 4, 2, 2, 1, 1)    # one position cropped at each end
    4
    """
    if pad_begin <= 0 and (src - 1) * stride + (kernel - 1) * dilation - pad_begin < dst:
        return src * kernel  # no product cropped: the first call's common case, at no cost
    # For tap t, the i with i*stride < c - t*dilation number clamp(ceil((c - t*d)/s), 0, src):
    # c = dst + pad_begin bounds the end, c = pad_begin the start.
    return (_positions_below(dst + pad_begin, src, kernel, stride, dilation)
            - _positions_below(pad_begin, src, kernel, stride, dilation))


def _positions_below(c: int, src: int, kernel: int, stride: int, dilation: int) -> int:
    """sum over taps t < kernel of clamp(ceil((c - t*dilation) / stride), 0, src)."""
    # Taps before `full` count all src positions, from `empty` on none; between, a floor sum.
    full = min(max(-(((src - 1) * stride - c) // dilation), 0), kernel)  # ceil((c-(src-1)s)/d)
    empty = min(max(-(-c // dilation), 0), kernel)                      # ceil(c/d)
    between = max(empty - full, 0)
    return full * src + _floor_sum(between, stride, -dilation, c + stride - 1 - full * dilation)


def _floor_sum(n: int, m: int, a: int, b: int) -> int:
    """sum_{j < n} floor((a*j + b) / m) for m >= 1, in O(log) steps (the Euclidean-like
    algorithm of AtCoder Library's floor_sum)."""
    total = 0
    if a < 0 or a >= m:
        total += n * (n - 1) // 2 * (a // m)
        a %= m
    if b < 0 or b >= m:
        total += n * (b // m)
        b %= m
    while True:
        if a >= m:
            total += n * (n - 1) // 2 * (a // m)
            a %= m
        if b >= m:
            total += n * (b // m)
            b %= m
        y_max = a * n + b
        if y_max < m:
            return total
        n, b, m, a = y_max // m, y_max % m, a, m


@dataclass(frozen=True)
class Problem:
    """The equivalent ConvTranspose: batch, src/dst channels, groups, kernel, src and
    dst spatial sizes, and the geometry (strides, dilations, pads_begin) that places
    each product in dst."""

    n: int
    c_src: int
    c_dst: int
    groups: int
    kernel: tuple[int, ...]
    src_spatial: tuple[int, ...]
    dst_spatial: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pads_begin: tuple[int, ...]

    @functools.cached_property  # a plan's thread and lowering choices each read it
    def flops(self) -> int:
        """2 * N * C_src * (C_dst/groups) * the (position, tap) pairs landing inside dst
        (``products_along``, per axis): one multiply and one add per product that is
        computed (benchdnn's convention, on the output that is kept)."""
        pairs = math.prod(products_along(*axis) for axis in zip(
            self.src_spatial, self.dst_spatial, self.kernel, self.strides, self.dilations,
            self.pads_begin))
        return 2 * self.n * self.c_src * (self.c_dst // self.groups) * pairs


def problem(plan: shapes.Plan, input_shapes: Sequence[Sequence[int]]) -> Problem:
    """The equivalent ConvTranspose of a planned op (``shapes.plan``) on these inputs.

    >>> p = shapes.plan("ConvTranspose", [(1, 4, 5), (4, 3, 2)], data_format="NCX",
    ...                 weights_format="IOX")
    >>> problem(p, [(1, 4, 5), (4, 3, 2)]).flops   # 2 * 1 * 4 * 3 * 2 * 5
    240
    """
    a = plan.attrs
    tensors = [tuple(s) for s in input_shapes] + [tuple(plan.output_shape)]
    src, dst = (tensors[i] for i in _registry.SPECS[a.kind].equivalent)
    fmt = a.data_format
    return Problem(src[0], shapes.data_channels(fmt, src), shapes.data_channels(fmt, dst),
                   a.groups, tuple(plan.kernel), tuple(shapes.data_spatial(fmt, src)),
                   tuple(shapes.data_spatial(fmt, dst)), tuple(a.strides), tuple(a.dilations),
                   tuple(plan.pads_begin))


#: Below this many FLOPs a problem runs on one thread. oneDNN 3.2 opens an
#: OpenMP parallel region on every execution; on the 2-core reference machine,
#: one thread ran the four ops 1.1-4x faster up to 0.5 MFLOP and 2 threads won
#: from 2 MFLOP (the C++ program with OMP_NUM_THREADS=1 and 2, NXC f32,
#: C = 8-128; docs/performance.md). compile_op(..., tune=True) measures both.
SMALL_FLOPS = 1 << 20


def threads(problem: Problem) -> int:
    """OpenMP threads to compile and run `problem` on: 1 for a small one, else 0
    (oneDNN's default: all)."""
    return 1 if problem.flops < SMALL_FLOPS else 0


# --------------------------------------------------------------------------
# The plan of one call
# --------------------------------------------------------------------------


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
    #: Its size as the equivalent ConvTranspose (``problem``): FLOPs, thread count.
    size: Problem
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
    if dtype not in _arrays.LOW_PRECISION or way.unreached:
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


def with_constant_weights(cp: CallPlan) -> CallPlan:
    """`cp` for weights compiled in as constant (packed once): its way as
    ``_lowering.constant_weights_way`` says for the dtype the op runs in."""
    runs_in = _runs_in(cp.native, dtype_name(cp.dtype), cp.plan, cp.input_shapes, cp.size.flops)
    way = _lowering.constant_weights_way(cp.plan, cp.input_shapes, cp.native, cp.way, runs_in, cp.size.flops)
    return cp if way is cp.way else replace(cp, way=way)


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
    given_name = _registry.SHAPE_ATTRS[kind]
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
    size = problem(plan, input_shapes)
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
