"""What oneDNN is handed for a spec-level op that it cannot compile as is.

Each rule rewrites the op into one that 3.2 compiles and that computes the
same numbers; none moves data in NumPy. The cases (oneDNN 3.2.0, verified by
tests/api/test_lowering.py against the reference). oneDNN 3.13.2 (PyPI's onednn
2026.1.0) has every one of these gaps too, and refuses negative pads altogether;
tests/native/test_library_gaps.py checks on the linked library that each lowered
feature is still a gap there (docs/onednn-3.13.md):

* auto_pad: the spec spells it ``none``/``same_upper``/...; 3.2 accepts only
  ``None``/``SAME_UPPER``/``SAME_LOWER``/``VALID``.
* output_padding on ConvTranspose when >= stride (3.2 fails to compile it) and
  on ConvTransposeBackwardData/Weights (3.2 rejects it when the op is added):
  it only extends the output geometry, so it folds into ``pads_end``:
  ``pads_end - output_padding``.
* Negative pads: a folded ``pads_end`` below 0, or a negative ``pads_begin`` or
  ``pads_end`` as given (the PyTorch, JAX and ONNX conventions reach them:
  ``onednn_graph.padding``). 3.2's primitives require ``pads_begin >= 0`` and
  ``pads_end > -stride`` (common/convolution.cpp and deconvolution.cpp:
  ``pad_l >= 0 && pad_r + str > 0``), and even within that, a negative
  ``pads_end`` is not safe: its jit_avx2_1x1_convolution_bwd_weights wrote past
  a buffer (valgrind: invalid write; then heap corruption) for a 1x1 kernel,
  strides (3, 2) and pads_end (-2, -1). Handed ConvolutionBackwardData's
  negative pads_end as it is (oneDNN's own CI input v3.2 conv_bwd_d_2d.json:
  1x1 kernel, strides 2, pads_end -1), 3.2 computed f32 right on 800 random
  geometries (1-3 spatial axes, dilations 1-2, kernels 1-3, strides 2-3, floor
  slack, both formats; jit, brgconv_strided, jit_1x1 and gemm kernels) on AVX-512
  and 200 capped at AVX2, and valgrind (whose CPU is AVX2's) found no invalid
  access in oneDNN on 200 of them and the file's case; but its bf16 kernel
  jit_bf16:avx512_core_bf16 (AMD Zen 4) segfaults where pads_end and the floor's
  slack leave more than a stride past the last window (1-D: kernel 3, strides 3,
  pads_begin 1, pads_end -2, a diff_src of 21 positions whose last 4 no window
  reaches; tests/native/test_negative_pads.py), where the cropped view runs. So
  the package never hands oneDNN a negative pad, for any op or dtype (it would
  not know which kernel a CPU dispatches to). The leading and trailing positions
  of the ConvTranspose-geometry tensor (dst of ConvTranspose, diff_src of ConvolutionBackwardData,
  diff_dst of the ConvTranspose backward ops) outside
  ``[0, strides*(X-1) + dilations*(K-1) + 1)`` lie outside every kernel window,
  so the op runs on a view that leaves out just enough of them
  (``NativeOp.crop``) to make both pads >= 0: the backward ops never read them,
  and the left-out outputs are the bias (or zero), which the package writes: on
  arrays ``_impl.call``, in a partition ``spec_graph`` (the view is a strided logical
  tensor of its own there, ``spec_op.View``). When
  no position is left, no kernel window reaches the output at all: the result
  is the bias or zeros, written without oneDNN (``NativeOp.unreached``; the
  functional API only: a partition refuses it).
* ConvolutionBackwardData with groups > 1 (3.2 builds a partition that fails to
  compile): it is a ConvTranspose of diff_dst over the same weights memory,
  OIX read as IOX and XIO as XOI, with ``pads_end`` chosen so the output has
  ``dst_shape``'s size.
* ConvTransposeBackwardData with dilations > 1: 3.2 creates its backward-data
  primitive without the dilations (graph/backend/dnnl/op_executable.cpp,
  deconv_bwd_data_executable_t), which then fails as "not mathematically
  consistent". It is the forward Convolution of diff_dst over the same
  weights memory (IOX read as OIX, XOI as XIO), which 3.2 compiles.
* auto_pad on ConvTransposeBackwardData/Weights: 3.2 resolves SAME pads for
  them with the convolution rule on another tensor's size than ConvTranspose
  uses, so its result is not the gradient of its own ConvTranspose with the
  same attributes. The package resolves the pads as ConvTranspose does
  (shapes.resolve_pads) and passes them explicitly, so the three ops stay
  adjoint.
* ConvolutionBackwardData's output_padding: 3.2 ignores it (dst_shape fixes the
  geometry), so it is not passed.

Those rules make a call compile. A few more only make it faster (``preferred``): a
few kinds of calls run by default as the op ``alternatives`` offers, where 3.2
ran that form faster on nearly every shape measured on the CPU family at hand.
"""

from __future__ import annotations

import math

from dataclasses import dataclass
from typing import Any, Optional, Sequence

from .. import shapes
from . import attrs as _attrs, registry as _registry, version as _version

NATIVE_AUTO_PAD = {"none": "None", "same_upper": "SAME_UPPER",
                   "same_lower": "SAME_LOWER", "valid": "VALID"}
CONV_AS_TRANSPOSE_FORMAT = {"OIX": "IOX", "XIO": "XOI"}
TRANSPOSE_AS_CONV_FORMAT = {v: k for k, v in CONV_AS_TRANSPOSE_FORMAT.items()}


@dataclass(frozen=True)
class NativeOp:
    """An op as oneDNN 3.2 will compile it, and how it was derived."""

    kind: str
    attrs: dict[str, Any]
    lowering: str  # "native" or a short description of the rewrite
    # Per spatial axis, (leading, trailing) positions of the op's crop tensor
    # (``geometry_tensor``) that lie outside every kernel window and that the op
    # is not given: see the module docstring. () when there are none.
    crop: tuple[tuple[int, int], ...] = ()
    # The caller's input positions in the order this op takes them; () = as given.
    input_order: tuple[int, ...] = ()
    # No kernel window reaches any position of the crop tensor: the result is
    # fixed by the geometry alone (zeros, or ConvTranspose's bias); nothing runs.
    unreached: bool = False


#: ``NativeOp.lowering`` of a call that runs on a view without unreached positions.
ON_A_VIEW = "on a view without the positions outside every kernel window"


def _explicit(plan: shapes.Plan, pads_begin: tuple[int, ...], pads_end: tuple[int, ...],
              **extra: Any) -> dict[str, Any]:
    a = plan.attrs
    attrs = dict(strides=list(a.strides), pads_begin=list(pads_begin),
                 pads_end=list(pads_end), dilations=list(a.dilations), auto_pad="None",
                 groups=a.groups, data_format=a.data_format, weights_format=a.weights_format)
    attrs.update(extra)
    return attrs


def geometry_tensor(kind: str) -> int:
    """The tensor a crop applies to, the one of ConvTranspose's output geometry: the
    output (-1: dst, or ConvolutionBackwardData's diff_src) or the input index of
    diff_dst."""
    index = _registry.SPECS[kind].crop_tensor
    assert index is not None, kind  # the spec's ops have one
    return index


def cropped(shape: Sequence[int], data_format: str,
            crop: Sequence[tuple[int, int]]) -> tuple[int, ...]:
    """`shape` without the cropped positions of each spatial axis."""
    spatial = [x - lead - trail for x, (lead, trail) in
               zip(shapes.data_spatial(data_format, shape), crop)] if crop else \
        list(shapes.data_spatial(data_format, shape))
    return shapes.data_shape_for(data_format, shape[0], shapes.data_channels(data_format, shape),
                                 spatial)


def _pads_and_crop(plan: shapes.Plan, input_shapes: Sequence[Sequence[int]]
                   ) -> tuple[tuple[int, ...], tuple[int, ...], tuple[tuple[int, int], ...], bool]:
    """(pads_begin, pads_end, crop, unreached): the pads oneDNN is handed, never
    negative (see the module docstring), output_padding folded into pads_end where
    it is not passed natively, and the crop that makes them so.

    Position ``j`` of the crop tensor is position ``j + pads_begin`` of the full
    output ``s*(x-1) + ek``: a negative pads_begin puts that many positions before
    it, a negative (folded) pads_end that many after it, and no kernel window
    reaches them. They are left out of the view the op runs on; what is left after
    that is empty when no position is reached at all (`unreached`).
    ConvolutionBackwardData keeps the convolution's own pads_end, which may exceed
    the full output's crop by up to stride - 1 (floor's slack, which its
    primitives take).
    """
    a = plan.attrs
    folds = a.kind != _registry.CONV_BWD_DATA and not native_output_padding(plan)
    ends = tuple(pe - op for pe, op in zip(plan.pads_end, a.output_padding)) if folds else plan.pads_end
    lead = tuple(max(0, -pb) for pb in plan.pads_begin)
    trail = tuple(max(0, -pe) for pe in ends)
    pads_begin = tuple(pb + c for pb, c in zip(plan.pads_begin, lead))
    pads_end = tuple(pe + c for pe, c in zip(ends, trail))
    if not any(lead) and not any(trail):
        return pads_begin, pads_end, (), False
    crop = tuple(zip(lead, trail))
    index = geometry_tensor(a.kind)
    full = plan.output_shape if index < 0 else input_shapes[index]
    unreached = any(x < 1 for x in shapes.data_spatial(a.data_format, cropped(full, a.data_format, crop)))
    return pads_begin, pads_end, crop, unreached


def native_output_padding(plan: shapes.Plan) -> bool:
    """Whether ConvTranspose's output_padding goes to oneDNN 3.2 as it is: below the
    stride, with pads >= 0 (its backend lets the primitive absorb it)."""
    a = plan.attrs
    return a.kind == _registry.CONV_TRANSPOSE and all(
        op < s for op, s in zip(a.output_padding, a.strides)) and min(
        plan.pads_begin + plan.pads_end, default=0) >= 0


def lower(plan: shapes.Plan, input_shapes: Sequence[Sequence[int]]) -> NativeOp:
    """The op oneDNN 3.2 compiles for a checked, resolved call `plan` on inputs of `input_shapes`."""
    a = plan.attrs
    kind = a.kind
    pads_begin, pads_end, crop, unreached = _pads_and_crop(plan, input_shapes)
    if unreached:
        what = "the bias" if kind == _registry.CONV_TRANSPOSE and len(input_shapes) > 2 else "zeros"
        return NativeOp(kind, {}, f"no kernel window reaches the output: it is {what}",
                        crop, unreached=True)
    if kind == _registry.CONV_BWD_DATA:
        if a.groups > 1:
            return _cbd_as_conv_transpose(plan, input_shapes, pads_begin, pads_end, crop,
                                          "groups > 1")
        if crop:
            return NativeOp(kind, _explicit(plan, pads_begin, pads_end, dst_shape=list(
                cropped(plan.output_shape, a.data_format, crop))), ON_A_VIEW, crop)
        attrs = spelled_natively(a)
        del attrs["output_padding"]
        attrs["dst_shape"] = list(plan.output_shape)
        return NativeOp(kind, attrs, "native")
    if kind == _registry.CONV_TRANSPOSE_BWD_DATA and any(d > 1 for d in a.dilations):
        return _ctbd_as_convolution(plan, pads_begin, pads_end, crop, "dilations > 1")
    needs_fold = any(a.output_padding) and not native_output_padding(plan)
    shape_attr = _registry.SPECS[kind].shape_attr  # weights_shape of the backward weights
    extra = {shape_attr: list(plan.output_shape)} if shape_attr else {}
    if crop:
        fold = "output_padding folded into pads_end, " if any(a.output_padding) else ""
        return NativeOp(kind, _explicit(plan, pads_begin, pads_end, **extra), fold + ON_A_VIEW, crop)
    if kind != _registry.CONV_TRANSPOSE and a.auto_pad != "none":
        return NativeOp(kind, _explicit(plan, pads_begin, pads_end, **extra),
                        "auto_pad resolved as ConvTranspose does")
    if needs_fold:
        return NativeOp(kind, _explicit(plan, pads_begin, pads_end, **extra),
                        "output_padding folded into pads_end")
    attrs = spelled_natively(a)
    if kind != _registry.CONV_TRANSPOSE:
        del attrs["output_padding"]
    attrs.update(extra)
    return NativeOp(kind, attrs, "native")


def _cbd_as_conv_transpose(plan: shapes.Plan, input_shapes: Sequence[Sequence[int]],
                           pads_begin: tuple[int, ...], pads_end: tuple[int, ...],
                           crop: tuple[tuple[int, int], ...], why: str) -> NativeOp:
    """ConvolutionBackwardData as the ConvTranspose of diff_dst over the same weights,
    writing the view of diff_src without `crop`. The convolution's pads_end may
    exceed the full output's crop by its floor's slack (< stride): that slack is
    ConvTranspose's output_padding, which 3.2 takes below the stride."""
    a = plan.attrs
    in_spatial = shapes.data_spatial(a.data_format, input_shapes[0])
    out_spatial = shapes.data_spatial(a.data_format, cropped(plan.output_shape, a.data_format, crop))
    # y = ConvTranspose(dy): full size s*(Y-1) + ek; crop pb and pe, add the slack.
    slack = tuple(
        x - (s * (y - 1) + shapes.effective_kernel(k, d) - pb - pe)
        for s, d, k, pb, pe, y, x in zip(a.strides, a.dilations, plan.kernel,
                                         pads_begin, pads_end, in_spatial, out_spatial))
    lowering = f"ConvTranspose over the same weights ({why})" + (f", {ON_A_VIEW}" if crop else "")
    return NativeOp(_registry.CONV_TRANSPOSE, _explicit(
        plan, pads_begin, pads_end, weights_format=CONV_AS_TRANSPOSE_FORMAT[a.weights_format],
        output_padding=list(slack)), lowering, crop)


def _ctbd_as_convolution(plan: shapes.Plan, pads_begin: tuple[int, ...], pads_end: tuple[int, ...],
                         crop: tuple[tuple[int, int], ...], why: str) -> NativeOp:
    """ConvTransposeBackwardData as the forward Convolution of diff_dst over the same weights."""
    return NativeOp("Convolution", _explicit(
        plan, pads_begin, pads_end, weights_format=TRANSPOSE_AS_CONV_FORMAT[plan.attrs.weights_format]),
        f"Convolution over the same weights ({why})", crop)


def alternatives(plan: shapes.Plan, input_shapes: Sequence[Sequence[int]],
                 chosen: NativeOp, why: str = "chosen by measurement") -> list[NativeOp]:
    """Other formulations that compute what `chosen` (``lower``'s answer) computes, with
    the same crop: candidates for ``compile_op(..., tune=True)``, which keeps the
    fastest. The rewrites into another convolution-family op (``_rewrites``); for
    kernel == stride without pads or dilation, one MatMul (``matmul_way``); for a
    stride-1 op with few output channels, the Convolution that computes several
    positions per channel (``packed_way``); for a strided one, a stride-1 Convolution per
    output phase (``polyphase_way``) and one for all phases (``subpixel_way``); where the
    output channels are not a multiple of this CPU's vector, the multiple and the rest as
    two calls (``channel_split_way``)."""
    ways = _rewrites(plan, input_shapes, chosen, why)
    matmul = None if _bias_along_rows(plan, input_shapes) else matmul_way(plan, input_shapes, chosen, why)
    block = SPLIT_CHANNELS.get((LINKED, HOST_ISA), (16 if avx512(HOST_ISA) else 8,))[0]
    for way in (matmul, packed_way(plan, input_shapes, chosen, why),
                polyphase_way(plan, input_shapes, chosen, why), subpixel_way(plan, input_shapes, chosen, why),
                channel_split_way(plan, input_shapes, chosen, block, why)):
        if way is not None:
            ways.append(way)
    return ways


#: ``NativeOp.kind`` of the MatMul formulation (``_impl.matmul_form``; its ``attrs``
#: describe the op it computes), and its ``lowering``.
MATMUL = "MatMul"
AS_MATMUL = "one MatMul (no two kernel windows overlap)"


def _bias_along_rows(plan: shapes.Plan, input_shapes: Sequence[Sequence[int]]) -> bool:
    """Whether the MatMul would take a bias along its rows: ConvTranspose with a bias, in
    NCX, where the MatMul runs one matrix per sample with the channels as rows
    (``_impl.matmul_form.orientation``). oneDNN 3.2's MatMul runs a bias along rows on its
    reference kernel (``ref:any``): 14-155 ms where the native op takes 0.07-0.54 ms
    (2-D, kernel 2 and 4, 3-16 channels, measured on AMD Zen 4, natively and capped at
    AVX2). Neither the default nor tuning offers the MatMul there. (With one input position
    per sample the MatMul runs over the whole batch, its bias along columns.)"""
    return plan.attrs.kind == _registry.CONV_TRANSPOSE and len(input_shapes) > 2 \
        and plan.attrs.data_format == "NCX" and math.prod(shapes.data_spatial("NCX", input_shapes[0])) > 1


def windows_apart(kind: str, kernel: Sequence[int], strides: Sequence[int], dilations: Sequence[int],
                  pads_begin: Sequence[int], pads_end: Sequence[int], output_padding: Sequence[int],
                  small_spatial: Sequence[int], big_spatial: Sequence[int]) -> bool:
    """Whether op `kind` of this geometry has no overlapping and no partial window: dilation 1,
    no pads, no output_padding, the big tensor (ConvTranspose's dst) exactly ``kernel *
    small`` per axis (ConvolutionBackwardData's floor leaves none over), and along each axis
    kernel == stride or a small tensor of one position (one window: a latent vector made a
    feature map, whatever the stride)."""
    return kind in _registry.SPECS and \
        all(k == s or x == 1 for k, s, x in zip(kernel, strides, small_spatial)) and \
        all(d == 1 for d in dilations) and not any(pads_begin) and not any(pads_end) and \
        not any(output_padding) and \
        all(b == k * x for b, k, x in zip(big_spatial, kernel, small_spatial))


def matmul_way(plan: shapes.Plan, input_shapes: Sequence[Sequence[int]], chosen: NativeOp,
               why: str = "chosen by measurement") -> Optional[NativeOp]:
    """The call as one oneDNN MatMul and the package's rearrangement (``_impl.matmul_form``),
    where kernel == stride (or one input position), no pads, dilation 1 and no
    output_padding make each window its own block of the output (``windows_apart``); None
    elsewhere."""
    a = plan.attrs
    if chosen.unreached or chosen.crop:
        return None
    fmt = a.data_format
    small, big = (input_shapes[0], plan.output_shape) if a.kind in (
        _registry.CONV_TRANSPOSE, _registry.CONV_BWD_DATA) else (
        (plan.output_shape, input_shapes[0]) if a.kind == _registry.CONV_TRANSPOSE_BWD_DATA
        else (input_shapes[0], input_shapes[1]))
    if not windows_apart(a.kind, plan.kernel, a.strides, a.dilations, plan.pads_begin,
                                plan.pads_end, a.output_padding, shapes.data_spatial(fmt, small),
                                shapes.data_spatial(fmt, big)):
        return None
    # (`kernel`: the block of the big tensor each small position feeds)
    attrs = dict(form="matmul", op=a.kind, strides=list(a.strides), kernel=list(plan.kernel), groups=a.groups,
                 data_format=fmt, weights_format=a.weights_format)
    return NativeOp(MATMUL, attrs, f"{AS_MATMUL} ({why})")


#: ``NativeOp.lowering`` of the few-channel formulation (``_impl.packed_form``); its
#: ``attrs`` hold ``positions``: output positions per channel of its Convolution.
AS_PACKED = "a Convolution computing several output positions per channel (few output channels)"
#: Output channels a vector holds in the kernels of oneDNN 3.2 that the packing fills (16
#: f32 lanes of AVX-512; two AVX2 registers).
PACKED_LANES = 16


def packed_way(plan: shapes.Plan, input_shapes: Sequence[Sequence[int]], chosen: NativeOp,
               why: str = "chosen by measurement") -> Optional[NativeOp]:
    """The call as one Convolution whose output channels are r output positions of the
    op's few channels each (``_impl.packed_form``): a ConvTranspose or
    ConvolutionBackwardData with stride 1, dilation 1, groups 1, either data format,
    at most ``PACKED_LANES / 2`` output channels, pads at most the kernel less one
    (the Convolution's pads are the kernel less one less them), and a last output axis
    that r divides: r is the most positions whose channels fit ``PACKED_LANES``. None
    elsewhere."""
    a = plan.attrs
    if chosen.unreached or chosen.crop or a.kind not in (_registry.CONV_TRANSPOSE, _registry.CONV_BWD_DATA) \
            or a.groups != 1 or any(s != 1 for s in a.strides) \
            or any(d != 1 for d in a.dilations) or any(a.output_padding):
        return None
    k = plan.kernel
    if any(not 0 <= p <= kk - 1 for p, kk in zip(plan.pads_begin + plan.pads_end, k + k)):
        return None
    channels = shapes.data_channels(a.data_format, plan.output_shape)
    last = shapes.data_spatial(a.data_format, plan.output_shape)[-1]
    fits = [r for r in range(2, PACKED_LANES // channels + 1) if last % r == 0]
    if not fits:
        return None
    attrs = dict(form="packed", op=a.kind, positions=max(fits), data_format=a.data_format,
                 weights_format=a.weights_format,
                 pads_begin=[kk - 1 - p for kk, p in zip(k, plan.pads_begin)],
                 pads_end=[kk - 1 - p for kk, p in zip(k, plan.pads_end)])
    return NativeOp("Convolution", attrs, f"{AS_PACKED} ({why})")


#: ``NativeOp.lowering`` of the polyphase formulation (``_impl.polyphase_form``).
AS_POLYPHASE = "a stride-1 Convolution per output phase"


def phase_geometry(stride: int, kernel: int, pad_begin: int, small: int, big: int, phase: int
                   ) -> Optional[tuple[list[int], int, int, int]]:
    """Phase `phase` of one axis: (its taps, reversed: the kernel positions its stride-1
    Convolution reads, first to last; its pads begin and end; its output size), or None
    where it has no tap, no position or would need a negative pad."""
    first = (phase + pad_begin) % stride
    taps = (kernel - first + stride - 1) // stride
    size = (big - phase + stride - 1) // stride
    if taps < 1 or size < 1:
        return None
    shift = (phase + pad_begin - first) // stride
    begin = taps - 1 - shift
    end = size - 1 + taps - small - begin
    if begin < 0 or end < 0:
        return None
    return [first + stride * (taps - 1 - u) for u in range(taps)], begin, end, size


def polyphase_way(plan: shapes.Plan, input_shapes: Sequence[Sequence[int]], chosen: NativeOp,
                  why: str = "chosen by measurement") -> Optional[NativeOp]:
    """The call as one stride-1 Convolution per output phase (``_impl.polyphase_form``):
    a ConvTranspose or ConvolutionBackwardData with a stride above 1, dilation 1, an
    output the strides divide, and in every phase of every axis at least one tap and
    pads >= 0 (``phase_geometry``); None elsewhere."""
    a = plan.attrs
    if chosen.unreached or chosen.crop or a.kind not in (_registry.CONV_TRANSPOSE, _registry.CONV_BWD_DATA) \
            or all(s == 1 for s in a.strides) or any(d != 1 for d in a.dilations):
        return None
    small = shapes.data_spatial(a.data_format, input_shapes[0])
    big = shapes.data_spatial(a.data_format, plan.output_shape)
    for s, k, pb, x, y in zip(a.strides, plan.kernel, plan.pads_begin, small, big):
        # Every phase as long as the next: oneDNN refuses a view whose axes interleave
        # (an odd-sized output's even phase, one row longer than its channel's stride allows).
        if y % s or any(phase_geometry(s, k, pb, x, y, p) is None for p in range(s)):
            return None
    attrs = dict(form="polyphase", op=a.kind, strides=list(a.strides), pads_begin=list(plan.pads_begin),
                 groups=a.groups, data_format=a.data_format, weights_format=a.weights_format)
    return NativeOp("Convolution", attrs, f"{AS_POLYPHASE} ({why})")


#: ``NativeOp.lowering`` of the sub-pixel formulation (``_impl.subpixel_form``).
AS_SUBPIXEL = "one stride-1 Convolution computing every output phase as channels (sub-pixel)"


def subpixel_geometry(stride: int, kernel: int, pad_begin: int, small: int, big: int
                      ) -> Optional[tuple[list[list[int]], int, int, int, int]]:
    """One axis of the sub-pixel formulation. With ``e = pad_begin % stride`` and ``c =
    pad_begin - e``, output position ``stride*q + r - e`` is the sum over m of ``small[q - m]
    * w[stride*m + r + c]``: phases counted from position -e, where each phase's kernel
    positions start on a multiple of the stride, so the union of the phases' taps is
    ``ceil(kernel / stride)`` (the fewest; counted from position 0 it is one more wherever e
    > 0: 3 for kernel 4, stride 2, pad 1, where 2 hold every product). One stride-1
    Convolution whose taps j stand for ``m = m_hi - j`` (m_lo <= m <= m_hi) then computes
    every phase r as channels, over ``ceil((big + e) / stride)`` positions q, of which the
    package's copy keeps those in the output. Returns (per phase r, the kernel position
    each tap j reads, or `kernel` where none does: a zero weight; the Convolution's pads
    begin and end; its output size q; e), or None where a pad would be negative."""
    e = pad_begin % stride
    c = pad_begin - e
    m_hi = (kernel - 1 - c) // stride
    m_lo = -(c // stride)
    q = -(-(big + e) // stride)
    end = q - small - m_lo
    if m_hi < 0 or end < 0:
        return None
    taps = [[t if 0 <= t < kernel else kernel
             for t in (stride * (m_hi - j) + r + c for j in range(m_hi - m_lo + 1))]
            for r in range(stride)]
    return taps, m_hi, end, q, e


def subpixel_way(plan: shapes.Plan, input_shapes: Sequence[Sequence[int]], chosen: NativeOp,
                 why: str = "chosen by measurement") -> Optional[NativeOp]:
    """The call as one stride-1 Convolution whose output channels are every output
    phase's channels, and the package's copy of them into place (``_impl.subpixel_form``):
    a ConvTranspose or ConvolutionBackwardData with a stride above 1, dilation 1, groups
    1, and on every axis pads of the Convolution >= 0 (``subpixel_geometry``); None
    elsewhere."""
    a = plan.attrs
    if chosen.unreached or chosen.crop or a.kind not in (_registry.CONV_TRANSPOSE, _registry.CONV_BWD_DATA) \
            or all(s == 1 for s in a.strides) or any(d != 1 for d in a.dilations) or a.groups != 1:
        return None
    small = shapes.data_spatial(a.data_format, input_shapes[0])
    big = shapes.data_spatial(a.data_format, plan.output_shape)
    if any(subpixel_geometry(s, k, pb, x, y) is None
           for s, k, pb, x, y in zip(a.strides, plan.kernel, plan.pads_begin, small, big)):
        return None
    attrs = dict(form="subpixel", op=a.kind, strides=list(a.strides), pads_begin=list(plan.pads_begin),
                 data_format=a.data_format, weights_format=a.weights_format)
    return NativeOp("Convolution", attrs, f"{AS_SUBPIXEL} ({why})")


#: ``NativeOp.lowering`` of the channel split (``_impl.split_form``).
AS_SPLIT = "two calls on views of the arrays: the output channels in whole vectors, then the rest"


def channel_split_way(plan: shapes.Plan, input_shapes: Sequence[Sequence[int]], chosen: NativeOp,
                      block: int, why: str = "chosen by measurement") -> Optional[NativeOp]:
    """The call as two calls on views of the weights, bias and output
    (``_impl.split_form``): its output channels in the largest multiple of `block`, and
    the rest, each as the package runs it by default: a ConvTranspose or
    ConvolutionBackwardData with groups 1 whose output channels are a multiple of `block`
    and more (a ConvTransposeBackwardWeights: its diff_dst's channels, over views of
    diff_dst and the weights gradient); None elsewhere. Each output channel is its own sum
    over the input channels and the kernel, so the two calls compute what the one
    computes."""
    a = plan.attrs
    weights_grad = a.kind == _registry.CONV_TRANSPOSE_BWD_WEIGHTS  # (split over diff_dst's channels)
    channels = shapes.data_channels(a.data_format, input_shapes[1] if weights_grad else plan.output_shape)
    rest = channels % block
    if chosen.unreached or chosen.crop or a.groups != 1 or channels < block or rest == 0 or \
            a.kind not in (_registry.CONV_TRANSPOSE, _registry.CONV_BWD_DATA, _registry.CONV_TRANSPOSE_BWD_WEIGHTS):
        return None
    # The parts are planned from these (the pads resolved: no auto_pad to apply again).
    attrs = dict(a.as_dict(), pads_begin=list(plan.pads_begin), pads_end=list(plan.pads_end),
                 auto_pad="none", form="split", op=a.kind, split=channels - rest)
    return NativeOp(a.kind, attrs, f"{AS_SPLIT} ({why})")


#: The formulations that run in f32 only (_impl.packed_form, _impl.polyphase_form,
#: _impl.subpixel_form, _impl.split_form): a bf16/f16 call never takes them, even where it
#: runs as the f32 chain.
F32_ONLY_FORMS = ("packed", "polyphase", "subpixel", "split")


def formed(way: NativeOp) -> Optional[str]:
    """Which of the package's formulations on views of the arrays `way` is: "matmul"
    (``matmul_way``), "packed" (``packed_way``), "polyphase" (``polyphase_way``),
    "subpixel" (``subpixel_way``), "split" (``channel_split_way``), or None
    (an op on the arrays as they are). Their ``attrs`` name it (``form``)."""
    return way.attrs.get("form")


def _rewrites(plan: shapes.Plan, input_shapes: Sequence[Sequence[int]],
                 chosen: NativeOp, why: str = "chosen by measurement") -> list[NativeOp]:
    """The other single ops that compute what `chosen` computes (``alternatives``).

    ConvTranspose without bias and groups = 1 can run as a ConvolutionBackwardData,
    ConvTransposeBackwardData always as a forward Convolution,
    ConvTransposeBackwardWeights as the ConvolutionBackwardWeights of diff_dst
    (as src) and src (as diff_dst), and ConvolutionBackwardData with groups = 1
    as a ConvTranspose; which is faster depends on the problem
    (benchmarks/alternative_lowerings.py).
    """
    a = plan.attrs
    if chosen.unreached:
        return []  # nothing to compute
    if a.kind == _registry.CONV_TRANSPOSE and chosen.kind == a.kind and a.groups == 1 \
            and len(input_shapes) == 2 and not chosen.crop:
        # ConvTranspose(x, W) is the backward data of Convolution over the same
        # weights memory; 3.2 compiles that for groups = 1 (see the module
        # docstring) and it has no bias input.
        # Without a crop, the pads are >= 0 and output_padding < stride: the
        # convolution's floor takes it (dst_shape says the size).
        pads_begin, pads_end, _, _ = _pads_and_crop(plan, input_shapes)
        return [NativeOp(_registry.CONV_BWD_DATA, _explicit(
            plan, pads_begin, pads_end, weights_format=TRANSPOSE_AS_CONV_FORMAT[a.weights_format],
            dst_shape=list(plan.output_shape)),
            f"ConvolutionBackwardData over the same weights ({why})")]
    if a.kind == _registry.CONV_TRANSPOSE_BWD_WEIGHTS and chosen.kind == a.kind:
        # ConvTranspose(x, W) is the backward data of Convolution(y, W) over the
        # same weights memory (IOX read as OIX, XOI as XIO), so their weight
        # gradients are one: conv's src is diff_dst, its diff_dst is src.
        attrs = dict(chosen.attrs, weights_format=TRANSPOSE_AS_CONV_FORMAT[chosen.attrs["weights_format"]])
        return [NativeOp("ConvolutionBackwardWeights", attrs,
                         f"ConvolutionBackwardWeights of diff_dst and src ({why})",
                         chosen.crop, input_order=(1, 0))]
    if a.kind == _registry.CONV_TRANSPOSE_BWD_DATA and chosen.kind == a.kind:
        # lower() hands this op explicit pads (auto_pad "None"), folded and cropped.
        pads_begin, pads_end, _, _ = _pads_and_crop(plan, input_shapes)
        return [_ctbd_as_convolution(plan, pads_begin, pads_end, chosen.crop, why)]
    if a.kind == _registry.CONV_BWD_DATA and chosen.kind == a.kind:
        pads_begin, pads_end, _, _ = _pads_and_crop(plan, input_shapes)
        return [_cbd_as_conv_transpose(plan, input_shapes, pads_begin, pads_end, chosen.crop, why)]
    return []


def avx512(isa: str) -> bool:
    """Whether oneDNN ISA `isa` (``cpu_isa()``) is of the AVX-512 family, where the
    default rules below were measured on Sapphire Rapids; below it, on an AVX2 EPYC."""
    return isa.startswith("avx512")


#: The oneDNN versions (major, minor) and CPU families (``avx512(isa)``) on which the
#: default rules of ``preferred`` were measured: 3.2 on Sapphire Rapids and AMD Zen 4
#: (AVX-512) and on an AVX2 EPYC, 3.13.2 (PyPI's onednn 2026.1.0) on the AVX2 EPYC, where every rule
#: measured on 3.2 there held again (docs/onednn-3.13.md). On any other version and
#: family the op runs as the spec writes it (after ``lower``), and ``tune=True``
#: measures: a rule read off one library's kernels is not assumed of another's.
MEASURED: frozenset[tuple[tuple[int, int], bool]] = frozenset({
    ((3, 2), True), ((3, 2), False), ((3, 13), False)})
#: (oneDNN version, ISA) pairs measured on one CPU of a family, not the family: 3.13.2
#: on AMD Zen 4 (``python benchmarks/alternative_lowerings.py --dtypes f32`` in the 3.13
#: environment, docs/onednn-3.13.md): every AVX-512 rule below held there (NXC
#: ConvTransposeBackwardWeights as ConvolutionBackwardWeights 0.29-1.04x, backward data
#: as the forward Convolution 0.22-0.91x on 9 of 10 shapes, the tiny ConvTranspose
#: 0.90-0.96x), and so did the MatMul for few output channels (0.16-0.54x).
MEASURED_ON: frozenset[tuple[tuple[int, int], str]] = frozenset({((3, 13), "avx512_core_bf16")})


def measured(version: tuple[int, int], isa: str) -> bool:
    """Whether ``preferred``'s rules were measured for oneDNN `version` on `isa`."""
    return (version, avx512(isa)) in MEASURED or (version, isa) in MEASURED_ON


#: The linked oneDNN's (major, minor) and the ISA it dispatches to, which every call's
#: ``preferred`` asks: read once, at import, as both are fixed for the process (oneDNN
#: reads ONEDNN_MAX_CPU_ISA when first used, and the package never sets it).
LINKED = _version.linked_version()
HOST_ISA = _version.cpu_isa()


#: AVX-512 (oneDNN version, ISA) pairs where f32 NXC ConvTransposeBackwardData with
#: groups = 1 runs as the forward Convolution too, as below AVX-512: AMD Zen 4, where
#: it took 0.32-0.96x the native time on 18 of 20 shapes (1.09x on the DCGAN head,
#: 1.12x on wide-1x1-s2; docs/alternative-lowerings.md). Sapphire Rapids lost on four.
F32_DATA_AS_CONVOLUTION: frozenset[tuple[tuple[int, int], str]] = frozenset({
    ((3, 2), "avx512_core_bf16"), ((3, 13), "avx512_core_bf16")})

#: (oneDNN version, ISA) pairs where ConvTranspose and ConvolutionBackwardData with kernel
#: == stride (no pads, dilation 1) and fewer than ``MATMUL_BELOW_CHANNELS`` output
#: channels per group run in f32 as one MatMul (``_impl.matmul_form``), in NCX (not with
#: a bias: ``_bias_along_rows``) or with more than ``MATMUL_NXC_ABOVE_POSITIONS`` kernel
#: positions: measured on AMD Zen 4, natively and capped at AVX2 (``preferred`` has the
#: figures).
MATMUL_FEW_CHANNELS: frozenset[tuple[tuple[int, int], str]] = frozenset({
    ((3, 2), "avx512_core_bf16"), ((3, 2), "avx2"), ((3, 13), "avx512_core_bf16")})
MATMUL_BELOW_CHANNELS = 4
MATMUL_NXC_ABOVE_POSITIONS = 4
#: (oneDNN version, ISA) pairs where channels-last ConvTranspose and
#: ConvolutionBackwardData with kernel == stride == 2 on every axis and at least
#: ``MATMUL_WIDE_FROM_CHANNELS`` output channels per group (U-Net's up-convolution) run
#: as the MatMul too: AVX2, measured on AMD Zen 4 capped at AVX2 (``preferred``).
MATMUL_WIDE_NXC: frozenset[tuple[tuple[int, int], str]] = frozenset({((3, 2), "avx2")})
MATMUL_WIDE_FROM_CHANNELS = 32
#: (oneDNN version, ISA) pairs where f32 ConvTranspose, ConvolutionBackwardData and
#: ConvTransposeBackwardWeights (``MATMUL_ONE_POSITION_OPS``) whose small tensor is one
#: position per sample (a latent vector made a feature map: DCGAN's first layer) run as the
#: MatMul from ``MATMUL_ONE_POSITION_FROM_FLOPS``, in either data format: measured on AMD
#: Zen 4, natively and capped at AVX2 (``preferred``).
MATMUL_ONE_POSITION: frozenset[tuple[tuple[int, int], str]] = frozenset({
    ((3, 2), "avx512_core_bf16"), ((3, 2), "avx2")})
MATMUL_ONE_POSITION_OPS = (_registry.CONV_TRANSPOSE, _registry.CONV_BWD_DATA, _registry.CONV_TRANSPOSE_BWD_WEIGHTS)
MATMUL_ONE_POSITION_FROM_FLOPS = 6 << 20
#: (oneDNN version, ISA) pairs where a bf16 ConvTranspose of one input position whose
#: weights are constant runs as the MatMul from ``MATMUL_ONE_POSITION_BF16_FROM_FLOPS``
#: (``constant_weights_way``): AMD Zen 4, whose bf16 kernels oneDNN 3.2 runs natively.
MATMUL_ONE_POSITION_BF16: frozenset[tuple[tuple[int, int], str]] = frozenset({((3, 2), "avx512_core_bf16")})
MATMUL_ONE_POSITION_BF16_FROM_FLOPS = 16 << 20
#: Below this many FLOPs neither formulation on the package's views (the MatMul, the
#: packed Convolution) is the default: their Python path and package copies cost tens
#: of microseconds a call.
MATMUL_FROM_FLOPS = 1 << 20
#: (oneDNN version, ISA) -> data format -> the ops that run as the packed Convolution
#: (``packed_way``) by default, in f32, where it applies (in NCX only with at most
#: ``PACKED_NCX_CHANNELS`` output channels and two spatial axes or more): AMD Zen 4
#: natively and capped at AVX2 (``preferred`` has the figures).
PACKED_BY_DEFAULT: dict[tuple[tuple[int, int], str], dict[str, tuple[str, ...]]] = {
    ((3, 2), "avx512_core_bf16"): {"NXC": (_registry.CONV_TRANSPOSE, _registry.CONV_BWD_DATA),
                                   "NCX": (_registry.CONV_TRANSPOSE, _registry.CONV_BWD_DATA)},
    ((3, 2), "avx2"): {"NXC": (_registry.CONV_TRANSPOSE,)}}
PACKED_NCX_CHANNELS = 4
#: The packed form by default only where its Convolution's last output axis has at least
#: this many positions (the op's last output extent over the positions packed): with one,
#: 3-D 1-channel problems of 16^3 took 1.48-1.74x the native time in either format
#: (6-12 MFLOP; ``preferred``).
PACKED_ROWS_FROM = 2
#: (oneDNN version, ISA) pairs where a depthwise (one channel per group in and out)
#: channels-last ConvTranspose / ConvolutionBackwardData with a stride above 1 runs in
#: f32 as one stride-1 Convolution per output phase (``polyphase_way``): AMD Zen 4
#: (``preferred`` has the figures).
POLYPHASE_DEPTHWISE: frozenset[tuple[tuple[int, int], str]] = frozenset({((3, 2), "avx512_core_bf16")})
#: (oneDNN version, ISA) -> data format -> (most output channels, from how many FLOPs)
#: with which a strided ConvTranspose / ConvolutionBackwardData (groups 1) runs in f32 as
#: the sub-pixel Convolution (``subpixel_way``) by default: AMD Zen 4 natively (a vector's
#: 16 lanes hold 4 phases of 4 channels) and capped at AVX2 (8 lanes). Below the FLOPs
#: the package's per-call gathering of the weights costs more than it saves (``preferred``
#: has the figures).
SUBPIXEL_CHANNELS: dict[tuple[tuple[int, int], str], dict[str, tuple[tuple[int, int], ...]]] = {
    ((3, 2), "avx512_core_bf16"): {"NXC": ((3, 1 << 23), (4, 1 << 24), (8, 1 << 27)),
                                   "NCX": ((3, 1 << 23), (4, 1 << 25))},
    ((3, 2), "avx2"): {"NXC": ((2, 1 << 23), (4, 3 << 23)),
                       "NCX": ((2, 1 << 23), (4, 7 << 23))}}
#: (oneDNN version, ISA) -> (the output channels a vector of oneDNN's strided kernels holds
#: in f32: 16 with AVX-512, 8 with AVX2; the data formats; the most channels over a
#: multiple of it) where a ConvTranspose / ConvolutionBackwardData (groups 1) with that few
#: channels over a multiple, few enough for the sub-pixel form (``SUBPIXEL_CHANNELS``),
#: runs as the multiple and the rest (``channel_split_way``): the one call pays a whole
#: vector's time for the rest (``preferred`` has the figures).
SPLIT_CHANNELS: dict[tuple[tuple[int, int], str], tuple[int, tuple[str, ...], int]] = {
    ((3, 2), "avx512_core_bf16"): (16, ("NCX", "NXC"), 4), ((3, 2), "avx2"): (8, ("NXC",), 2)}
#: The same for ConvTransposeBackwardWeights (split over diff_dst's channels, the weights'
#: O), in f32 with groups 1: its NCX kernel on AMD Zen 4 takes a whole vector's time for
#: 1-2 channels over a multiple of 16, which alone take a fifth of it (``preferred``).
SPLIT_WEIGHTS_CHANNELS: dict[tuple[tuple[int, int], str], tuple[int, tuple[str, ...], int]] = {
    ((3, 2), "avx512_core_bf16"): (16, ("NCX",), 2)}

#: Below this many FLOPs (``_plan.Problem.flops``) a ConvTranspose without bias and
#: with groups = 1 runs as the ConvolutionBackwardData over the same weights: at that
#: size a call's fixed cost decides, and 3.2's deconvolution, a wrapper around the
#: convolution's backward data, adds to it (``preferred``).
TINY_FLOPS = 1 << 19


def preferred(plan: shapes.Plan, input_shapes: Sequence[Sequence[int]], chosen: NativeOp,
              dtype: str, isa: Optional[str] = None, flops: Optional[int] = None,
              version: Optional[tuple[int, int]] = None) -> NativeOp:
    """What the package runs by default for `chosen` (``lower``'s answer) running in
    `dtype` (a bf16/f16 call that runs as the f32 chain runs in f32: ``_impl.plan``)
    on a CPU where oneDNN dispatches to `isa` (default: this one's), for a problem
    of `flops` (None: unknown), with oneDNN `version` (default: the linked one): `chosen`,
    or the alternative that this oneDNN ran faster there on nearly every shape
    measured (``python benchmarks/alternative_lowerings.py`` on the suite's 8 cases,
    with ``--held-out`` on 12 others; docs/alternative-lowerings.md), where the
    version and CPU family were measured (``MEASURED``). The CPU family
    matters, because the kernels oneDNN has for each formulation differ; the figures
    below are oneDNN 3.2's (3.13 on the AVX2 EPYC: docs/onednn-3.13.md):

    * ConvTransposeBackwardWeights, f32, NXC, as ConvolutionBackwardWeights.
      AVX-512 (Sapphire Rapids): 3.2 runs the native op (jit:avx512_core) on
      aBcd16b-blocked copies of both inputs, the convolution on the caller's
      channels-last buffers: 0.24-0.86x the native time on 15 of 20 shapes,
      0.97-1.05x on 4, 1.12x on one. Below AVX-512 (AVX2 EPYC) only with groups > 1
      (0.38, 0.74 and 1.04x on the 3 grouped shapes): with groups = 1 it took
      1.20-1.97x on 4 of 17 shapes (U-Net-1 and -2, k3s2, WaveNet).
    * ConvTransposeBackwardData, NXC, f32 and bf16, as the forward Convolution, with
      groups > 1 everywhere: its brdgmm_dw / brgconv kernels read channels-last data
      in place, where the native op reorders diff_dst into blocks (0.32-0.97x on all 3
      grouped shapes in both dtypes on AVX-512; 0.28-0.74x in f32 on AVX2). Not f16:
      there the Convolution took 0.89-2.40x. Below AVX-512 also with groups = 1 in
      f32: 0.63-0.89x on 15 of 17 shapes, 1.08x (HiFi-GAN) and 1.23x (wide-2x2) on the
      other two. On AVX-512 it is not the default with groups = 1 (Sapphire Rapids:
      0.32-0.92x on 16 shapes, but 1.36-2.36x on the DCGAN head and three wide layers
      on 1-16 positions), except on AMD Zen 4 (``avx512_core_bf16``,
      ``F32_DATA_AS_CONVOLUTION``): 0.32-0.96x on 18 of 20, 1.09x and 1.12x on two.
      There the other AVX-512 rules held: ConvTransposeBackwardWeights as
      ConvolutionBackwardWeights 0.27-0.93x on 12 of 20 shapes, 0.98-1.03x on 4,
      1.05-1.13x on 4; bf16 grouped backward data 0.40-0.67x; the tiny ConvTranspose
      0.92-0.95x.

    * ConvTranspose and ConvolutionBackwardData with kernel == stride (no pads,
      dilation 1), at most 3 output channels per group, from 1 MFLOP, in NCX without a
      bias or with more than 4 kernel positions, as one MatMul (``matmul_way``; its
      product runs in f32 whatever the dtype) on AMD Zen 4, natively and capped at AVX2
      (``MATMUL_FEW_CHANNELS``): natively in f32 0.13-0.50x the native time in NXC and
      0.16-0.56x in NCX on all 5 such shapes (ViT-B/16 and ConvNeXt-T patch embeddings,
      1-8 channels, kernels 2-16, 1-3 spatial axes), where 16-512 channels took
      0.93-1.55x; bf16 and f16 0.14-0.79x (the two patch embeddings). Issue 37's sweep
      (2-D, 1, 3 and 8 output channels, 8 and 64 input channels, kernels 2, 4 and 8, both
      layouts, both ISAs) narrowed it: with 1-3 channels 0.21-0.79x except NXC kernel 2
      (0.89-1.48x), with 8 channels 0.95-3.73x except kernel 8 (0.46-1.30x), 15 channels
      1.02-1.57x; a bias in NCX lies along the MatMul's rows, which 3.2 runs on its
      reference kernel (``_bias_along_rows``: 146-172x the native time). Capped at AVX2,
      f32: 0.22-0.79x on the same 5 shapes in both layouts; and in NXC with kernel 2 and 32-512 channels
      (``MATMUL_WIDE_NXC``: U-Net-1, -2, -3D, a 512-channel decoder) 0.78-0.98x on all
      8 rows, where a 16-channel and two kernel-4 shapes took 1.01-1.15x. Its other uses
      (ConvTransposeBackwardData and -Weights, more channels) won on some shapes and
      lost up to 15x on others: ``tune=True`` measures them.
    * ConvTranspose, ConvolutionBackwardData and ConvTransposeBackwardWeights whose small
      tensor has one position per sample (no pads, dilation 1, any stride: a latent vector
      made a feature map), f32, either data format, from 6 MFLOP, as one MatMul
      (``matmul_way``; ``MATMUL_ONE_POSITION``). In NCX its matrices are the arrays as they
      lie (the batch's rows, the channel before the kernel positions: ``matmul_form``'s
      "rows-ok"), where oneDNN 3.2 runs a per-sample deconvolution on blocked copies. On
      AMD Zen 4 (tuning's timings, 13 shapes: 1-3 spatial axes, kernels 4-16, 64-512 input
      channels, batch 1-64; DCGAN's 100 -> 512 k4 at batch 16: 26 MFLOP) from 6.6 MFLOP
      in NXC 0.23-0.82x the native time but 0.94-1.07x on a k7 layer (128 -> 256, 51 MFLOP),
      in NCX 0.20-0.47x; ConvolutionBackwardData 0.28-0.90x and 0.18-0.52x; the weight
      gradient 0.16-0.61x and 0.11-0.39x. Capped at AVX2: 0.12-0.85x on every such row of
      the six (NXC CT 0.36-0.70x). Below 6 MFLOP NXC lost on some shapes (1-3 MFLOP:
      CT 1.03-1.48x, the weight gradient 1.06-2.19x) where NCX mostly won (0.30-1.04x).
      Not ConvTransposeBackwardData (reading the big tensor: 0.65-4.1x), not bf16 (the
      MatMul's f32 product: 0.60-3.2x natively).
    * ConvTranspose and ConvolutionBackwardData with stride 1, groups 1, NXC, f32, and
      few output channels, from 1 MFLOP, as the Convolution that computes several
      output positions per channel (``packed_way``): on AMD Zen 4 in NXC 0.12-0.92x
      the native time on all 6 shapes measured (1-8 channels, kernels 3-15, 1-3
      spatial axes), in NCX 0.38-0.86x on the 4 with at most 3 channels and 2-3
      spatial axes, where the 1-D and 8-channel ones took 0.86-1.11x; capped at AVX2,
      NXC ConvTranspose alone (0.23-0.94x on all 6), where ConvolutionBackwardData,
      whose native kernel is already the forward convolution's, took 0.65-1.35x
      (``PACKED_BY_DEFAULT``). oneDNN's own conv_bwd_d_3d.json problem (32 -> 3
      channels, 3x3x3) took 70 ms against 120 ms natively in NXC, 151 against 204 in NCX.
      Not where the last output axis holds fewer than two packed rows
      (``PACKED_ROWS_FROM``): a later sweep (ConvTranspose with bias, 1-3 channels, kernel
      3, Zen 4, 9 interleaved rounds) had 1 -> 16^3 at batch 1-2 (6-12 MFLOP, 16 positions
      packed, one row) at 1.48-1.74x in both formats, where 32^3 (two rows) took 0.79-0.82x
      and 3 channels at 16^3 (4 positions) 0.55-0.79x. It also had 2-D NCX 32 x 32 with 1-3
      channels at 1.0-1.3x (2-27 MFLOP; 64 x 64: 0.50-0.88x) and NXC with 64 input
      channels and 3 output 1.11-1.19x: mixed by shape, left to ``tune=True``.
    * Depthwise ConvTranspose and ConvolutionBackwardData with a stride above 1, NXC,
      f32, from 1 MFLOP, as one stride-1 Convolution per output phase
      (``polyphase_way``) on AMD Zen 4 (``POLYPHASE_DEPTHWISE``): 0.70-0.95x the
      native time on all 4 depthwise shapes measured (1-3 spatial axes, kernels 4-8,
      strides 2-4), where 3.2's own kernel runs jit_dw on blocked copies; in NCX
      0.91-2.43x, on dense shapes 1.12-8.8x (the strided output views cost there), and
      capped at AVX2 0.62-2.30x: as written there, and ``tune=True`` measures.
    * ConvTranspose and ConvolutionBackwardData with a stride above 1, groups 1, f32,
      as one stride-1 Convolution with every output phase as channels (``subpixel_way``;
      its phases counted where each needs the fewest taps: ``subpixel_geometry``), on AMD
      Zen 4 natively in NXC with at most 3 output channels from 8 MFLOP, 4 from 16 and 8
      from 134, in NCX 3 from 8 and 4 from 32; capped at AVX2 in NXC 2 from 8 and 4 from
      25 MFLOP, in NCX 2 from 8 and 4 from 59 (``SUBPIXEL_CHANNELS``).
      ``python benchmarks/subpixel_channels.py`` (k4s2 2-D with 64, 256 and 512 input
      channels at batch 1-16, 3-D k4s2 with 16-32, 1-D k8s4 with 128; 1-12 output
      channels; docs/benchmarks/zen4-subpixel.md, since the copy writes whole rows): every
      shape the rule takes ran 0.22-0.76x the native op's time natively (ConvTranspose, 61
      shapes; ConvolutionBackwardData 0.24-1.00x) and 0.21-1.18x capped at AVX2 (47; over
      1.00 only NXC 3-4 channels with 512 input channels at 36-48 MFLOP, 0.86-1.18x by run
      as the native op's time moves). Left: natively NXC 6-8 channels
      under 134 MFLOP (0.67-1.54x, mixed by shape), NCX 4 under 32 MFLOP (0.87-1.20x) and
      6 or more; capped at AVX2 NXC 3-4 under 25 MFLOP (0.89-1.33x), 6-8 (0.67-1.99x), NCX
      3-4 under 59 MFLOP (512 input channels at 36-48 MFLOP: 1.07-1.18x). Since the copy
      writes whole rows (``subpixel_form.row_blocks``), NCX 6 channels ran 0.66-1.01x from
      90 MFLOP natively and 8 channels 0.68-1.05x to 382 MFLOP but 1.10-1.30x at 512 (3-D),
      over five runs of the two ops: not taken. Before the fewest taps (three
      per axis at k4s2p1 where two hold every product), 3-4 channels lost capped at AVX2
      with 256-512 input channels (1.08-1.34x) and more than 4 nowhere won. In a converted
      torch layer at batch 1 (``benchmarks/kernel_choice.py``, k2-k4 s2, 16 and 64 input
      channels) it lost below 8 MFLOP (1-5 MFLOP: up to 1.8x the native op's time, the
      per-call gathering of the weights).
    * ConvTranspose and ConvolutionBackwardData with groups 1, f32, whose output channels
      are 1-4 over a multiple of 16 on AMD Zen 4 natively (either data format), 1-2 over a
      multiple of 8 capped at AVX2 (NXC), where the rest alone would run in the sub-pixel
      form, as two calls: the multiple natively and the rest in its form
      (``channel_split_way``, ``SPLIT_CHANNELS``). oneDNN's strided kernels take a whole
      vector's time for the rest: Keypoint R-CNN's ``ConvTranspose2d(512, 17, 4, 2, 1)``
      on 16 RoIs of 14 x 14 took 7.97 ms where 16 channels took 4.13
      (``benchmarks/channel_blocks.py``). Split, against the one call (in-process, 15
      interleaved rounds): 17 channels at 16 and 4 RoIs 0.89-0.90x in NCX, 0.80-0.84x in
      NXC; 19 and 20 channels 0.89-0.93x and 0.82-0.84x; 33 channels (256 in) 0.93x and
      0.89x; 128 -> 17 at 32 x 32 0.96x and 0.89x; ConvolutionBackwardData with 17
      channels 0.85x and 0.81x. Capped at AVX2: 17 channels NXC 0.80x, 9 channels 0.84x,
      18 0.81x; in NCX 0.97x and 0.99x, and 19 channels (3 over 16, whose sub-pixel form
      is slower there) 1.09x: not taken.
    * ConvTransposeBackwardWeights with groups 1, f32, NCX, whose diff_dst has 1-2
      channels over a multiple of 16 on AMD Zen 4, as two calls over views of diff_dst and
      the weights gradient (``channel_split_way``, ``SPLIT_WEIGHTS_CHANNELS``): 3.2's NCX
      kernel takes a whole vector's time for the rest, where 1-2 channels alone take a
      fifth of it (512 -> 17 on 16 RoIs of 14 x 14: 16 channels 4.26 ms, 17 7.91, 1 0.84).
      Split, against the one call (in-process, 11 rounds): Keypoint R-CNN's 0.68x, 128 ->
      17 at 32 x 32 0.57x, 64 -> 18 0.61x, 256 -> 33 0.74x; with 4 over 16 the rest alone
      costs most of a vector (3.0 ms), and NXC has no step (17 channels 4.26 ms, 16 3.83;
      its default is the ConvolutionBackwardWeights rewrite).
    * ConvTranspose under ``TINY_FLOPS``, without bias, groups = 1, either data format,
      as the ConvolutionBackwardData over the same weights: on one thread 0.78-0.90x the
      native time at 0.01 and 0.29 MFLOP on the AVX2 EPYC (NCX and NXC; at 1-2 MFLOP
      0.91-1.07x), 0.64-0.79x on the suite's tiny case (0.01 MFLOP) on Sapphire Rapids.

    Elsewhere neither form wins consistently, so the op runs as written and
    ``tune=True`` measures.
    """
    a = plan.attrs
    isa = isa or HOST_ISA
    version = version or LINKED
    on_views = _formed_by_default(plan, input_shapes, chosen, dtype, isa, version, flops)
    if on_views is not None:
        return on_views
    if chosen.kind != a.kind or chosen.unreached:
        return chosen  # already rewritten so that this oneDNN compiles it
    wide = avx512(isa)
    if not measured(version, isa):
        return chosen
    library = f"oneDNN {version[0]}.{version[1]}"
    if a.kind == _registry.CONV_TRANSPOSE and flops is not None and flops < TINY_FLOPS:
        faster = _rewrites(plan, input_shapes, chosen, f"faster on {library} for a tiny problem")
        return faster[0] if faster else chosen  # with bias, groups > 1 or a crop: none
    if a.data_format != "NXC":
        return chosen
    grouped = a.groups > 1
    if (a.kind == _registry.CONV_TRANSPOSE_BWD_WEIGHTS and dtype == "f32" and (wide or grouped)) or \
            (a.kind == _registry.CONV_TRANSPOSE_BWD_DATA and dtype != "f16"
             and (grouped or (dtype == "f32" and (not wide or (version, isa) in F32_DATA_AS_CONVOLUTION)))):
        why = f"faster on {library} for {dtype} NXC" + (" with groups > 1" if grouped else "") + \
            f" on {isa}"
        return _rewrites(plan, input_shapes, chosen, why)[0]
    return chosen


def constant_weights_way(plan: shapes.Plan, input_shapes: Sequence[Sequence[int]], chosen: NativeOp,
                         way: NativeOp, dtype: str, flops: int, isa: Optional[str] = None,
                         version: Optional[tuple[int, int]] = None) -> NativeOp:
    """`way` (``preferred``'s answer for `chosen` running in `dtype`) where the weights are
    compiled in as constant (``compile_op(..., constant_weights=True)``, a converted layer
    in inference): a bf16 ConvTranspose of one input position per sample from
    ``MATMUL_ONE_POSITION_BF16_FROM_FLOPS`` runs as one MatMul (its f32 product on weights
    made f32 once; ``MATMUL_ONE_POSITION_BF16``). With its weights converted on every
    call the MatMul lost to oneDNN 3.2's bf16 kernel on AMD Zen 4 (``preferred``); with them
    constant (tuning's timings, the 13 shapes of ``MATMUL_ONE_POSITION``'s measurement)
    it took 0.26-0.82x the native time from 16.8 MFLOP in both data formats, 0.74-1.05x
    at 6.6-8.4 MFLOP, 0.97-2.57x below. DCGAN's first block under bf16 autocast in the
    inference mode: 0.25 ms against 0.43 at batch 16, 0.68 against 1.78 at batch 64."""
    a, version, isa = plan.attrs, version or LINKED, isa or HOST_ISA
    if (version, isa) not in MATMUL_ONE_POSITION_BF16 or dtype != "bf16" \
            or a.kind != _registry.CONV_TRANSPOSE or formed(way) is not None \
            or flops < MATMUL_ONE_POSITION_BF16_FROM_FLOPS \
            or any(x != 1 for x in shapes.data_spatial(a.data_format, input_shapes[0])):
        return way
    return matmul_way(plan, input_shapes, chosen, f"faster on oneDNN {version[0]}.{version[1]} for one input "
                      f"position and constant bf16 weights on {isa}") or way


def _formed_by_default(plan: shapes.Plan, input_shapes: Sequence[Sequence[int]], chosen: NativeOp,
                       dtype: str, isa: str, version: tuple[int, int],
                       flops: Optional[int]) -> Optional[NativeOp]:
    """The packed Convolution where ``PACKED_BY_DEFAULT`` makes it the default (f32), the
    MatMul where ``MATMUL_FEW_CHANNELS`` does, else None."""
    a = plan.attrs
    if flops is None or flops < MATMUL_FROM_FLOPS:
        return None
    channels = shapes.data_channels(a.data_format, plan.output_shape)
    ncx_fits = channels <= PACKED_NCX_CHANNELS and len(plan.kernel) >= 2
    if dtype == "f32" and a.kind in PACKED_BY_DEFAULT.get((version, isa), {}).get(a.data_format, ()) \
            and (a.data_format == "NXC" or ncx_fits):
        packed = packed_way(plan, input_shapes, chosen,
                            f"faster on oneDNN {version[0]}.{version[1]} for few output channels on {isa}")
        if packed is not None and shapes.data_spatial(a.data_format, plan.output_shape)[-1] \
                >= PACKED_ROWS_FROM * packed.attrs["positions"]:
            return packed
    depthwise = a.groups > 1 and channels == a.groups and \
        shapes.data_channels(a.data_format, input_shapes[0]) == a.groups
    if dtype == "f32" and depthwise and a.data_format == "NXC" and (version, isa) in POLYPHASE_DEPTHWISE:
        polyphase = polyphase_way(plan, input_shapes, chosen,
                                  f"faster on oneDNN {version[0]}.{version[1]} for depthwise NXC on {isa}")
        if polyphase is not None:
            return polyphase
    if (version, isa) in MATMUL_ONE_POSITION and dtype == "f32" and a.kind in MATMUL_ONE_POSITION_OPS \
            and flops >= MATMUL_ONE_POSITION_FROM_FLOPS \
            and all(x == 1 for x in shapes.data_spatial(a.data_format, input_shapes[0])):
        matmul = matmul_way(plan, input_shapes, chosen, f"faster on oneDNN {version[0]}.{version[1]} for one "
                            f"input position on {isa}")
        if matmul is not None:
            return matmul
    if a.kind == _registry.CONV_TRANSPOSE_BWD_WEIGHTS:
        return _weights_grad_split(plan, input_shapes, chosen, dtype, isa, version)
    if a.kind not in (_registry.CONV_TRANSPOSE, _registry.CONV_BWD_DATA):
        return None
    library = f"oneDNN {version[0]}.{version[1]}"
    # (measured with kernel == stride: where only the one input position keeps the windows
    # apart, the rule above decides)
    kernel_is_stride = tuple(plan.kernel) == tuple(a.strides)
    per_group = channels // a.groups
    if kernel_is_stride and (version, isa) in MATMUL_FEW_CHANNELS and per_group < MATMUL_BELOW_CHANNELS \
            and not _bias_along_rows(plan, input_shapes) \
            and (a.data_format == "NCX" or math.prod(plan.kernel) > MATMUL_NXC_ABOVE_POSITIONS):
        matmul = matmul_way(plan, input_shapes, chosen, f"faster on {library} for few output channels on {isa}")
        if matmul is not None:
            return matmul
    if kernel_is_stride and (version, isa) in MATMUL_WIDE_NXC and a.data_format == "NXC" \
            and all(k == 2 for k in plan.kernel) \
            and per_group >= MATMUL_WIDE_FROM_CHANNELS:
        return matmul_way(plan, input_shapes, chosen, f"faster on {library} for NXC kernel 2 on {isa}")
    if dtype == "f32" and _few_enough(channels, flops, a.data_format, version, isa):
        return subpixel_way(plan, input_shapes, chosen, f"faster on {library} for few output channels on {isa}")
    block, formats, most = SPLIT_CHANNELS.get((version, isa), (0, (), 0))
    rest = channels % block if block else 0
    if dtype == "f32" and a.data_format in formats and a.groups == 1 and channels > block \
            and 0 < rest <= most and _few_enough(rest, flops * rest // channels, a.data_format, version, isa) \
            and subpixel_way(plan, input_shapes, chosen) is not None:
        return channel_split_way(plan, input_shapes, chosen, block,
                                 f"faster on {library} for {rest} channel{'s' * (rest > 1)} over "
                                 f"{channels - rest} on {isa}")
    return None


def _weights_grad_split(plan: shapes.Plan, input_shapes: Sequence[Sequence[int]], chosen: NativeOp,
                        dtype: str, isa: str, version: tuple[int, int]) -> Optional[NativeOp]:
    """The channel split of an f32 ConvTransposeBackwardWeights where
    ``SPLIT_WEIGHTS_CHANNELS`` makes it the default, else None."""
    a = plan.attrs
    block, formats, most = SPLIT_WEIGHTS_CHANNELS.get((version, isa), (0, (), 0))
    channels = shapes.data_channels(a.data_format, input_shapes[1])
    rest = channels % block if block else 0
    if dtype != "f32" or a.data_format not in formats or not 0 < rest <= most or channels < block:
        return None
    return channel_split_way(plan, input_shapes, chosen, block,
                             f"faster on oneDNN {version[0]}.{version[1]} for {rest} channel{'s' * (rest > 1)} "
                             f"over {channels - rest} on {isa}")


def _few_enough(channels: int, flops: int, data_format: str, version: tuple[int, int], isa: str) -> bool:
    """Whether a strided problem of `channels` output channels and `flops` in
    `data_format` runs in the sub-pixel form by default (``SUBPIXEL_CHANNELS``)."""
    return channels > 0 and any(channels <= most and flops >= least for most, least in
                                SUBPIXEL_CHANNELS.get((version, isa), {}).get(data_format, ()))


def spelled_natively(a: _attrs.ConvAttrs) -> dict[str, Any]:
    """The attributes as given, with auto_pad in oneDNN's spelling (nothing lowered).
    Under an auto_pad other than ``none`` the op ignores the pads, so they go as
    zeros: oneDNN 3.13 refuses a negative pad even there (3.2 took it)."""
    attrs = a.as_dict()
    attrs["auto_pad"] = NATIVE_AUTO_PAD[a.auto_pad]
    if a.auto_pad != "none":
        attrs["pads_begin"] = [0] * len(a.pads_begin)
        attrs["pads_end"] = [0] * len(a.pads_end)
    return attrs
