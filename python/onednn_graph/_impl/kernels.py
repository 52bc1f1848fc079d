"""Which kernel the linked oneDNN has, on this CPU, for an op in a dtype.

Which kernels oneDNN has for bf16 and f16 depends on the instruction set it
dispatches to, not only on its version. oneDNN 3.2 runs bf16 only from AVX-512
(``avx512_core``: emulated; native from ``avx512_core_bf16``) and f16 only with
AVX512-FP16 (``avx512_core_fp16``), and even there it has f16 kernels for the
forward-convolution-shaped op alone: ConvTranspose, ConvTransposeBackwardWeights
and ConvolutionBackwardData run its reference kernel (``ref:any``, 255-267 ms
against 0.3-0.6 ms in f32 for one problem on Sapphire Rapids). Nothing here is
a table of what some CPU did: each answer is asked of the linked library on the
machine it runs on (``_core.primitive_impl``, the primitive descriptor the Graph
API's backend builds for the op), once per problem and process.

An op whose kernel is missing (``"none"``) or only the reference one
(``"reference"``) runs in f32 between oneDNN TypeCasts (``_impl.as_f32``).
"""

from __future__ import annotations

import functools
import re
from typing import Any, NamedTuple, Sequence


from .. import _core, shapes
from . import arrays as _arrays, registry as _registry, version as _version
from ..errors import Error

class Kernel(NamedTuple):
    """What oneDNN runs for one problem: ``status`` is ``"native"`` (an optimized
    kernel), ``"reference"`` (only its reference kernel), ``"wrong"`` (an optimized kernel
    that computes wrong values for it: ``probed``) or ``"none"``;
    ``implementation`` is oneDNN's name for it, or why there is none."""

    status: str
    implementation: str


def classify(implementation: str) -> str:
    """"reference" when oneDNN's implementation name is (or wraps) a reference
    kernel (``ref:any``, ``conv:any+ref:any``, ``gemm:ref``), else "native"."""
    tokens = re.split(r"[+:]", implementation)
    return "reference" if any(t.startswith("ref") for t in tokens) else "native"


def _canonical(fmt: str, shape: Sequence[int]) -> list[int]:
    """A data shape as (N, C, spatial...), the primitive API's order."""
    return [shape[0], shapes.data_channels(fmt, shape), *shapes.data_spatial(fmt, shape)]


def _pads(transposed: bool, attrs: dict[str, Any], src: Sequence[int], dst: Sequence[int],
          kernel: Sequence[int]) -> tuple[list[int], list[int]]:
    """(pads_l, pads_r) that make the problem consistent, as oneDNN checks it.

    Explicit pads are the op's; the end pad of a transposed op follows from the
    sizes (its output_padding folds in there). SAME pads are split from the
    total the sizes imply, as the op's auto_pad splits it.
    """
    auto_pad = str(attrs.get("auto_pad", "None")).lower()
    pads_l, pads_r = [], []
    for i, (x, y, k) in enumerate(zip(src[2:], dst[2:], kernel)):
        s, d = attrs["strides"][i], attrs["dilations"][i]
        ek = shapes.effective_kernel(k, d)
        total = s * (x - 1) + ek - y if transposed else (y - 1) * s + ek - x
        if auto_pad in ("none", "valid"):
            begin = attrs["pads_begin"][i] if auto_pad == "none" else 0
            end = total - begin if transposed or auto_pad == "valid" else attrs["pads_end"][i]
        else:
            begin, end = shapes.split_same(max(total, 0), auto_pad)
        pads_l.append(begin)
        pads_r.append(end)
    return pads_l, pads_r


def problem(kind: str, attrs: dict[str, Any], input_shapes: Sequence[Sequence[int]],
            output_shape: Sequence[int]) -> tuple[Any, ...]:
    """The primitive problem oneDNN builds for op `kind` with `attrs` (as handed to
    oneDNN) on inputs of `input_shapes` (the op's order) and its output: the
    arguments of ``_core.primitive_impl`` after the primitive and the dtype."""
    spec = _registry.SPECS[kind]
    primitive, (si, wi, di) = spec.primitive, spec.primitive_tensors
    tensors = list(input_shapes) + [output_shape]
    fmt, wfmt, g = attrs["data_format"], attrs["weights_format"], int(attrs.get("groups", 1))
    src, dst, w = (_canonical(fmt, tensors[si]), _canonical(fmt, tensors[di]), tensors[wi])
    kernel = list(w[:-2] if wfmt.startswith("X") else w[2:])
    groups = [g] if g > 1 else []
    weights = groups + [dst[1] // g, src[1] // g] + kernel
    transposed = primitive.startswith("deconvolution")
    pads_l, pads_r = _pads(transposed, attrs, src, dst, kernel)
    dilates = [d - 1 for d in attrs["dilations"]]
    return (src, weights, dst, list(attrs["strides"]), dilates, pads_l, pads_r)


@functools.lru_cache(maxsize=4096)
def _probe(primitive: str, dtype: str, key: tuple[tuple[int, ...], ...]) -> Kernel:
    try:
        name = _core.primitive_impl(primitive, dtype, *[list(k) for k in key])
    except Error as exc:
        return Kernel("none", exc.message)
    return Kernel(classify(name), name)


def for_op(kind: str, attrs: dict[str, Any], dtype: str, input_shapes: Sequence[Sequence[int]],
           output_shape: Sequence[int]) -> Kernel:
    """The kernel oneDNN has on this CPU for op `kind` (of ``_impl.registry``,
    as handed to oneDNN) in `dtype`; see :func:`problem` for the arguments."""
    args = problem(kind, attrs, input_shapes, output_shape)
    return _probe(_registry.SPECS[kind].primitive, dtype, tuple(tuple(int(v) for v in a) for a in args))


def probed(kind: str, attrs: dict[str, Any], dtype: str, input_shapes: Sequence[Sequence[int]],
           output_shape: Sequence[int]) -> Kernel | None:
    """The kernel of a bf16/f16 op of a kind the probe knows (``for_op``), else None.
    Only the low-precision dtypes' kernels depend on the CPU: f32 has optimized
    kernels on every instruction set oneDNN dispatches to (SSE4.1 up) and is never
    probed, nor are other kinds. A weights gradient with kernel taps that read only
    padding (``unreached_taps``) has a "wrong" kernel: the chain runs it."""
    if dtype not in _arrays.LOW_PRECISION or kind not in _registry.SPECS:
        return None
    kernel = for_op(kind, attrs, dtype, input_shapes, output_shape)
    if kernel.status == "native" and _registry.SPECS[kind].weights_gradient \
            and unreached_taps(attrs, input_shapes):
        return Kernel("wrong", kernel.implementation)
    return kernel


def unreached_taps(attrs: dict[str, Any], input_shapes: Sequence[Sequence[int]]) -> tuple[tuple[int, ...], ...]:
    """Per spatial axis, the kernel taps of a ConvTransposeBackwardWeights call (its
    attributes as oneDNN is handed them: explicit pads, weights_shape) that no position of
    its src reaches in its diff_dst, whose gradient is exactly zero; () where every tap is
    reached. A src of one position per sample, kernel 4, stride 3, pads 1 reaches a 2-wide
    diff_dst with the middle taps only. oneDNN 3.2's bf16 kernel (Zen 4, natively and
    capped at AVX512_CORE; 3.13's too) never writes such taps (inf, NaN, 1e-37 where 0 is
    due), and in 3-D writes wrong values in the reached ones too (``ConvTranspose3d(64, 2,
    (3, 4, 3), (1, 2, 1), (0, 1, 0))`` on (2, 64, 5, 1, 8): every tap; PyTorch 2.13's own
    bf16 kernel alike). Its f32 kernels are right there."""
    fmt, wfmt, weights = attrs["data_format"], attrs["weights_format"], attrs["weights_shape"]
    src, dst = shapes.data_spatial(fmt, input_shapes[0]), shapes.data_spatial(fmt, input_shapes[1])
    first = 0 if wfmt[0] == "X" else 2  # XIO/XOI: kernel axes first, IOX/OIX: last
    kernel = weights[first:first + len(src)]
    taps = []
    for x, o, k, s, d, pb in zip(src, dst, kernel, attrs["strides"], attrs["dilations"], attrs["pads_begin"]):
        # tap t writes position s * i - pb + t * d of diff_dst for src position i in [0, x)
        lowest = [max(0, -((t * d - pb) // s)) for t in range(k)]  # the first i at or past 0
        highest = [min(x - 1, (o - 1 + pb - t * d) // s) for t in range(k)]  # the last i before o
        taps.append(tuple(t for t in range(k) if lowest[t] > highest[t]))
    return tuple(taps) if any(taps) else ()


def needs_f32(kind: str, attrs: dict[str, Any], dtype: str, input_shapes: Sequence[Sequence[int]],
              output_shape: Sequence[int]) -> bool:
    """Whether the op runs in f32 between TypeCasts: a bf16/f16 op of a kind the
    probe knows whose kernel here is missing or only the reference one."""
    k = probed(kind, attrs, dtype, input_shapes, output_shape)
    return k is not None and k.status != "native"


#: Where oneDNN's own optimized bf16/f16 kernels were measured slower than the f32 chain
#: (the op in f32 between the package's or oneDNN's casts): (major, minor) -> {oneDNN
#: ISA (``cpu_isa()``): the rule measured there}. "most": every problem from
#: ``F32_FROM_FLOPS`` but grouped backward ops, and NXC weights gradients at every size
#: (bf16 emulated below ``avx512_core_bf16``; Sapphire Rapids without AMX). "grouped":
#: grouped ConvTranspose / ConvolutionBackwardData from ``F32_FROM_FLOPS``, NXC weights
#: gradients grouped or tiny (AMD Zen 4, where the bf16 kernels take about half the f32
#: time). AMX was not measured, so its kernels are kept. ``faster_in_f32`` has the figures.
FASTER_IN_F32: dict[tuple[int, int], dict[str, str]] = {
    (3, 2): {"avx512_core": "most", "avx512_core_vnni": "most", "avx512_core_bf16": "grouped",
             "avx512_core_fp16": "most"},
    (3, 13): {"avx512_core_bf16": "grouped"}}
#: Each rule in words (``faster_in_f32_summary``, ``onednn-graph info``).
RULE_TEXT = {
    "most": "problems of 1 MFLOP or more (groups = 1, or a ConvTranspose) and NXC weights gradients",
    "grouped": "grouped ConvTranspose and ConvolutionBackwardData problems of 1 MFLOP or more, and NXC "
               "weights gradients grouped or under 1 MFLOP",
}
#: Below this many FLOPs an op keeps its own low-precision kernel: the chain's casts
#: and extra partitions cost more there than the f32 kernel saves.
F32_FROM_FLOPS = 1 << 20


def faster_in_f32(kernel: Kernel | None, kind: str, attrs: dict[str, Any], dtype: str, flops: int,
                  isa: str | None = None, onednn: tuple[int, int] | None = None,
                  bias: bool = False) -> bool:
    """Whether a bf16/f16 op that oneDNN runs on an optimized kernel of its own
    (`kernel`) runs faster as the f32 chain: op `kind` with `attrs` (as handed to
    oneDNN: its groups and data format count), of `flops`, on oneDNN ISA `isa`
    (default: this CPU's) with oneDNN `onednn` (default: the linked one's (major,
    minor)), by the rule ``FASTER_IN_F32`` names for them.

    Measured with oneDNN 3.2 on the suite's 64 configurations per dtype, side by
    side, as time over the f32 op's (``python benchmarks/dtypes.py --own-kernels``):

    - "most": on a 2-core Sapphire Rapids VM without AMX (``avx512_core_fp16``), bf16
      natively a median 1.58x (ConvTranspose with groups > 1 13-16x: oneDNN runs
      depthwise as a blocked brg_conv), the chain 1.14x; f16
      ConvTransposeBackwardData (the one op with an f16 kernel) natively 1.04-1.77x,
      the chain 1.03-1.20x. Capped at AVX512_CORE (bf16 emulated) 3.28x against
      1.13x; on a 2-core AMD EPYC Zen 4 capped at AVX512_CORE and AVX512_CORE_VNNI
      2.29-2.30x against 1.06-1.07x. oneDNN's own kernel stays faster on tiny problems
      (the suite's 0.01 MFLOP case: 0.7-1.0x against the chain's 1.03-1.10x) and on
      grouped backward-data ops and NCX backward-weights (depthwise: 0.85-0.90x
      against 1.18-1.25x). Backward weights in NXC lose at every size (tiny
      1.14-1.83x, depthwise 2.7-3.3x, against 1.05-1.42x as the chain).
    - "grouped": on that AMD EPYC Zen 4 natively (``avx512_core_bf16``: AVX512-BF16
      dot products), bf16 natively a median 0.64x, 0.30-0.81x on every groups = 1
      problem from 1 MFLOP but the 3-D U-Net (0.97-1.25x against the chain's
      1.07-1.13x, a draw); grouped ConvTranspose and ConvolutionBackwardData 18-21x
      against 1.41-1.60x; NXC backward weights grouped 3.26x against 1.32x, tiny
      1.79x against 1.08x. (Sapphire Rapids capped at AVX512_CORE_BF16 had measured
      "most"; the CPUs that report this ISA are Zen 4 and Cooper Lake.) oneDNN 3.13.2
      on the same Zen 4 (in its environment, docs/onednn-3.13.md): bf16 natively
      0.44-0.80x f32 on nearly every groups = 1 problem, depthwise ConvTranspose and
      ConvolutionBackwardData 9.7-14x (a blocked brg_deconv where 3.2's f32 runs
      jit_dw), depthwise NXC backward weights 3.20x: "grouped" again.

    Under both rules an op with a bias (`bias`: ConvTranspose's) and stride 1 on every axis
    runs as the chain: oneDNN 3.2 computes it as a convolution's backward data and adds
    the bias in a loop of its own, 3.6-12x the bias-less time in bf16 (issue 37, on the
    Zen 4), where the chain took 0.31-0.74x the native time on all 7 shapes measured
    (1-3 spatial axes, kernels 1-7, 1-64 output channels; ``f32_bias_stride1``).
    """
    if kernel is None or kernel.status != "native" or dtype not in _arrays.LOW_PRECISION:
        return False
    isa = isa or _version.cpu_isa()
    onednn = onednn or _version.linked_version()
    rule = FASTER_IN_F32.get(onednn, {}).get(isa)
    grouped = int(attrs.get("groups", 1)) > 1
    spec = _registry.SPECS[kind]
    weights_nxc = spec.terms == "positions" and attrs.get("data_format") == "NXC"
    if rule is not None and bias and spec.has_bias and flops >= F32_FROM_FLOPS \
            and all(s == 1 for s in attrs.get("strides", (2,))):
        return True  # f32_bias_stride1: oneDNN 3.2 adds the bias in a loop of its own
    if rule == "most":
        if weights_nxc:
            return True  # a weights gradient (it sums over positions), channels-last
        return flops >= F32_FROM_FLOPS and (not grouped or rule in spec.f32_chain_grouped)
    if rule == "grouped":
        if weights_nxc:
            return grouped or flops < F32_FROM_FLOPS
        return flops >= F32_FROM_FLOPS and grouped and rule in spec.f32_chain_grouped
    return False


def faster_in_f32_summary() -> dict[str, Any]:
    """``faster_in_f32``'s rule here: whether one applies (``applies``), which
    (``rule``, of ``FASTER_IN_F32``, and ``text``: the problems it runs as the chain),
    from how many FLOPs (``from_flops``), for this ``isa`` and ``onednn`` version."""
    onednn = _version.linked_version()
    isa = _version.cpu_isa()
    rule = FASTER_IN_F32.get(onednn, {}).get(isa)
    return {"applies": rule is not None, "rule": rule, "text": RULE_TEXT.get(rule or "", ""),
            "from_flops": F32_FROM_FLOPS,
            "isa": isa, "onednn": "{}.{}".format(*onednn)}


def runs_in_f32(kind: str, attrs: dict[str, Any], dtype: str, input_shapes: Sequence[Sequence[int]],
                output_shape: Sequence[int], flops: int) -> bool:
    """Whether the package runs op `kind` (as handed to oneDNN) in f32 between TypeCasts:
    its bf16/f16 kernel here is missing or only the reference one (``needs_f32``), or
    slower than the chain (``faster_in_f32``, for an op of `flops`)."""
    k = probed(kind, attrs, dtype, input_shapes, output_shape)
    if k is None:
        return False
    return k.status != "native" or faster_in_f32(k, kind, attrs, dtype, flops)


def reason(kernel: Kernel | None, dtype: str) -> str:
    """Why an op runs in f32 between TypeCasts (``Operation.lowering``): the probe's
    `kernel`, or None when oneDNN failed to compile the op in `dtype` unforeseen."""
    where = f"oneDNN {version()} on {_version.cpu_isa()}"
    if kernel is None:
        return f"{where} could not compile it in {dtype}"
    if kernel.status == "reference":
        return f"{where} has only its reference kernel for it in {dtype} ({kernel.implementation})"
    if kernel.status == "wrong":
        return (f"{where}'s {dtype} kernel for it ({kernel.implementation}) computes wrong values where "
                "kernel taps read only padding")
    if kernel.status == "native":
        return f"faster than {where}'s own {dtype} kernel for it ({kernel.implementation})"
    return f"{where} has no {dtype} kernel for it"


def version() -> str:
    v = _version.onednn_version()
    return f"{v.major}.{v.minor}"


# A typical problem for summary(): NXC data 2x8x8x16 (16 -> 16 channels), a 3x3 kernel,
# stride 2, pads 1/1, so the ConvTranspose-geometry tensor is 2x15x15x16; each op's
# tensors take their parts in it (registry.OpSpec.roles), its channels-last weights.
_TYPICAL_SHAPES: dict[str, tuple[int, ...]] = {"small": (2, 8, 8, 16), "big": (2, 15, 15, 16),
                                               "weights": (3, 3, 16, 16)}


def _typical(kind: str) -> tuple[str, list[tuple[int, ...]], tuple[int, ...]]:
    spec = _registry.SPECS[kind]
    roles = spec.roles
    inputs = [_TYPICAL_SHAPES[roles[i]] for i in range(spec.required)]
    return spec.weights_formats[0], inputs, _TYPICAL_SHAPES[roles[_registry.OUTPUT]]


TYPICAL = {kind: _typical(kind) for kind in _registry.KINDS}
TYPICAL_TEXT = "NXC 2x8x8x16 -> 16 channels, kernel 3x3, stride 2, pads 1/1"


def summary() -> list[dict[str, str]]:
    """Per op and dtype, on a typical problem (``TYPICAL_TEXT``): the kernel the
    linked oneDNN has on this CPU (``kernel``: native, reference or none;
    ``implementation``: oneDNN's name for it, or why there is none) and how the
    package runs the op (``runs``: ``"native"`` or ``"f32 chain"``, in f32 between
    TypeCasts). Other problems may differ (a probe answers each one)."""
    rows = []
    for kind, (weights_format, inputs, output) in TYPICAL.items():
        attrs = dict(strides=[2, 2], dilations=[1, 1], pads_begin=[1, 1], pads_end=[1, 1],
                     auto_pad="None", groups=1, data_format="NXC", weights_format=weights_format)
        for dtype in _arrays.FLOATING:
            k = for_op(kind, attrs, dtype, inputs, output)
            chain = dtype in _arrays.LOW_PRECISION and k.status != "native"
            rows.append({"op": kind, "dtype": dtype, "kernel": k.status,
                         "implementation": k.implementation,
                         "runs": "f32 chain" if chain else "native"})
    return rows
