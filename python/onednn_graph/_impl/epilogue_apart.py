"""Where a ConvTranspose's epilogue (its bias and post-ops) runs after its kernel instead
of in it, and how: for the right numbers, and for speed, each asked of the linked oneDNN.

**Wrong results** (``repeats``; oneDNN 3.2.0 and 3.2.1, fixed in 3.3 by e127e9b8c8, on
main 56825411fc "cpu: x64: fix kd/kh blocking for brg deconv"). A strided ConvTranspose
runs on ``brgconv_strided`` (on AVX2, AVX-512 and AMX; f32, bf16 and int8), which walks
the kernel's rows (and, in 3-D, its planes) in groups. Its blocking heuristic chooses
groups of the whole kernel or of one row; with one row and a stride of 2 or more, a
group whose row has the other stride phase holds no tap for an output row, and the
kernel still makes its brgemm call with the post-ops for it
(jit_brgemm_conv_bwd_strided.cpp, ``call_brgemm_kernel``: ``do_skip_accm``). Where the
kernel writes the destination directly (an f32 one: no accumulation buffer), each such
call adds the bias again and applies the post-ops to a partial sum: the bias came out
1-4 times per output for ``ConvTranspose2d(512, 256, 4, 2, 1)`` and up to 12 times with
kernel 8, stride 4; a ReLU after it cut partial sums. A "sum" post-op (an Add of a
full-size tensor, which reads the destination) goes wrong even through the buffer, in
int8 too. A bf16 or int8 destination without one is written once at the end: right.

The heuristic weighs the channels, the kernel, the batch, the spatial sizes, the thread
count and the CPU's cache sizes (one-row groups won where the weights overflow L2: from
512 input channels with kernel 4 on AMD Zen 4, from 1024 capped at AVX2, from 64 with
kernel 8 stride 4, and not again from 2048 on), so the package does not predict it: it
asks the kernel. ``repeats`` runs the primitive the Graph API's backend builds for the
problem once on data whose right answer is known (``_core.epilogue_repeats``: zeros and
a bias of ones, so every output is 1) and counts, once per problem, dtypes and thread
count. It asks only where the defect can be (``possible``): oneDNN before 3.3, and an
axis with a stride above 1 and a kernel of more than one row (kernel == stride too: an
output row then has one tap, and the other rows' groups are empty); the probe runs
nothing where oneDNN picks another implementation. On a 2-core Zen 4 its answer matched
the kernel on every problem tested (tests/native/test_library_gaps.py).

**Speed** (``slow_epilogue``). The deconvolution oneDNN runs on its older jit kernels,
not brgemm ones (``conv:any+jit:avx512_core``, ``jit_bf16``, ``jit:avx2``: stride 1,
1x1 inputs, odd sizes), computes a bias and post-ops far slower than the op alone, in
3.2 and 3.13 alike: on AMD Zen 4 a bias took 1.3-2.4x the op's time in f32 and 4-15x in
bf16, a bias and a ReLU 4-8x in f32 and up to 36x in bf16 (natively and capped at
AVX2), where apart they cost a pass over the result. Its brgemm kernels take them at
no cost. So on those kernels (``_kernels.for_op`` names the implementation) the
epilogue runs apart too.

**How** (``split``): the ConvTranspose without its bias writes its result, kept out of
any fused partition (as oneDNN's End op keeps a value, ``_impl.kept_apart``), and the
bias follows as a BiasAdd (in place where oneDNN allows it), or with post-ops as an Add
of the bias broadcast over the channels that oneDNN fuses with them into one jit kernel.
``_impl.as_f32.Chain`` runs such ops; the functional API, ``compile_op``, graphs, fused
calls and ``onednn_graph.torch``'s layers reach it.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from .. import _core, shapes
from . import kernels as _kernels, registry as _registry, version as _version

#: The first oneDNN release without the defect.
FIXED_IN = (3, 3)
#: The primitive whose kernel has it: ConvTranspose's (the registry says which op builds it).
PRIMITIVE = "deconvolution_forward"


def on_deconvolution(kind: str) -> bool:
    """Whether oneDNN builds op `kind` as the primitive with the defect."""
    spec = _registry.SPECS.get(kind)
    return spec is not None and spec.primitive == PRIMITIVE


def possible(attrs: dict[str, Any], weights_shape: Sequence[int]) -> bool:
    """Whether a ConvTranspose with oneDNN attributes `attrs` and weights of
    `weights_shape` can meet the defect: oneDNN before ``FIXED_IN``, and an axis with a
    stride above 1 and more than one kernel row (the kernel can then be walked one row
    at a time, and an output row has no tap in every row: kernel == stride too)."""
    if _version.linked_version() >= FIXED_IN:
        return False
    rank = len(attrs["strides"])
    kernel = weights_shape[:rank] if attrs["weights_format"].startswith("X") else weights_shape[-rank:]
    return any(s > 1 and k > 1 for s, k in zip(attrs["strides"], kernel))


@functools.lru_cache(maxsize=1024)
def _probe(dtypes: tuple[str, str, str, str], problem: tuple[tuple[int, ...], ...], threads: int,
           with_sum: bool) -> int:
    src, weights, dst, strides, dilates, pads_l, pads_r = (list(p) for p in problem)
    return _core.epilogue_repeats(*dtypes, src, weights, dst, strides, dilates, pads_l, pads_r,
                                  threads, with_sum)


def repeats(kind: str, attrs: dict[str, Any], input_shapes: Sequence[Sequence[int]],
            output_shape: Sequence[int], dtypes: tuple[str, str, str, str], threads: int,
            sums: Sequence[bool] = (False,)) -> int:
    """How many times oneDNN adds the bias of op `kind` (a ConvTranspose: ``on_deconvolution``;
    oneDNN attributes `attrs`, src and weights of `input_shapes`) to an output at most, compiled on
    `threads` (0: oneDNN's count) for (src, weights, bias, dst) `dtypes`, the most over
    `sums` (with and/or without a sum post-op): 1 where it is right."""
    if not possible(attrs, input_shapes[1]):
        return 1
    problem = _kernels.problem(kind, attrs, input_shapes[:2], output_shape)
    key = tuple(tuple(int(v) for v in p) for p in problem)
    count = threads or _version.onednn_threads()[0]  # what oneDNN compiles for now
    return max(_probe(dtypes, key, count, s) for s in sums)


def why(count: int) -> str:
    """``Operation.lowering``'s words for an epilogue apart because it repeats."""
    return (f"its bias and post-ops after it (oneDNN {_kernels.version()}'s brgconv_strided "
            f"applies them up to {count} times here)")


#: ``Operation.lowering``'s words for an epilogue apart for speed (``slow_epilogue``).
SLOW = "its bias and post-ops after it (oneDNN's jit deconvolution runs them several times slower)"
#: The dtypes whose kernels ``slow_epilogue`` was measured in.
MEASURED_DTYPES = ("f32", "bf16", "f16")
#: Below this many products an f32 epilogue stays in the jit kernel: apart, its own
#: partition costs about 1-1.5 us, more than the kernel loses at that size (on Zen 4 apart
#: took 0.9-1.3x fused up to 0.3 MFLOP, 0.45-0.8x above; bf16 apart 0.25-0.8x at every size).
SLOW_FROM_PRODUCTS = 1 << 17


def slow_epilogue(kind: str, attrs: dict[str, Any], dtype: str, input_shapes: Sequence[Sequence[int]],
                  output_shape: Sequence[int]) -> bool:
    """Whether oneDNN runs op `kind` (a ConvTranspose in `dtype`, oneDNN attributes `attrs`)
    on a jit kernel that computes an epilogue far slower than apart (module docstring): an
    implementation named jit, not brgemm."""
    if dtype not in MEASURED_DTYPES:
        return False
    src, weights = input_shapes[:2]
    products = math.prod(src) * math.prod(weights) // max(shapes.data_channels(attrs["data_format"], src), 1)
    if dtype == "f32" and products < SLOW_FROM_PRODUCTS:
        return False
    name = _kernels.for_op(kind, attrs, dtype, input_shapes[:2], output_shape).implementation
    return "jit" in name and "brg" not in name


def reason(kind: str, attrs: dict[str, Any], input_shapes: Sequence[Sequence[int]],
           output_shape: Sequence[int], dtypes: tuple[str, str, str, str], threads: int,
           sums: Sequence[bool] = (False,)) -> Optional[str]:
    """Why the epilogue of this ConvTranspose (``repeats``' arguments) runs apart, or None
    where it runs in the kernel."""
    count = repeats(kind, attrs, input_shapes, output_shape, dtypes, threads, sums)
    if count > 1:
        return why(count)
    if dtypes[0] == dtypes[1] and slow_epilogue(kind, attrs, dtypes[0], input_shapes, output_shape):
        return SLOW
    return None


@dataclass(frozen=True)
class Split:
    """Ops rewritten so that a ConvTranspose's epilogue runs after it (``split``)."""

    ops: list[Any]
    #: The values to keep out of fused partitions (oneDNN's End op): each split
    #: ConvTranspose's own result, and the results of the unary post-ops that lead its
    #: epilogue (see ``split``).
    kept_apart: list[Any]
    #: New logical tensors that view an input's memory in another shape: id -> (the
    #: input's id, the view's shape). The bias of an NCX op, (C, 1, ...), for its Add.
    views: dict[int, tuple[int, tuple[int, ...]]]
    #: Why, for each ConvTranspose split (``reason``).
    reasons: tuple[str, ...]

    @property
    def why(self) -> str:
        return "; ".join(dict.fromkeys(self.reasons))


def _known(lt: Any) -> bool:
    return lt.shape is not None and all(d >= 0 for d in lt.shape)


def _epilogue(ops: Sequence[Any], value: Any) -> list[Any]:
    """The ops of `ops` after `value`, each the one reader of the last one's result: what
    oneDNN fuses after the op that writes it."""
    readers: dict[int, list[Any]] = {}
    for op in ops:
        for t in op.inputs:
            readers.setdefault(t.id, []).append(op)
    chain = []
    while len(after := readers.get(value.id, [])) == 1 and after[0].outputs:
        chain.append(after[0])
        value = after[0].outputs[0]
    return chain


def _config(ops: Sequence[Any], conv: Any) -> tuple[tuple[str, str, str, str], tuple[bool, ...]]:
    """The (src, weights, bias, dst) dtypes of the kernel oneDNN fuses `conv` into with the
    rest of `ops` (one partition's), and whether it may take a sum post-op: a quantized
    input through a Dequantize of the partition is the kernel's (int8), the destination is
    the last value of its epilogue, and an Add of a full-size tensor there may be run as a
    sum (asked both ways)."""
    made = {t.id: op for op in ops for t in op.outputs}

    def source(lt: Any) -> str:
        op = made.get(lt.id)
        return op.inputs[0].dtype if op is not None and op.kind == "Dequantize" else lt.dtype

    y, epilogue = conv.outputs[0], _epilogue(ops, conv.outputs[0])
    with_sum = any(op.kind == "Add" and all(t.shape == y.shape for t in op.inputs) for op in epilogue)
    bias = conv.inputs[2].dtype if len(conv.inputs) > 2 else "f32"
    dst = epilogue[-1].outputs[0].dtype if epilogue else y.dtype
    return (source(conv.inputs[0]), source(conv.inputs[1]), bias, dst), (False, True) if with_sum else (False,)


def split(ops: Sequence[Any], threads: int = 0) -> Optional[Split]:
    """`ops` (native ops, one partition's or one op's) with each ConvTranspose whose
    epilogue runs apart (``reason``) written as the op without it, its result kept apart;
    None where none does. A ConvTranspose has an epilogue where it has a
    bias or another of `ops` reads its result. Where its shapes are unknown the kernel
    cannot be asked: it is split where the defect is ``possible``.

    The epilogue then runs as oneDNN's jit kernels run it. A bias alone is a BiasAdd (in
    place: 1.00-1.02x the one partition's time). A bias before post-ops is an Add of the
    bias broadcast over the channels, which oneDNN 3.2 fuses with them into one jit binary
    kernel; its BiasAdd fuses with nothing, and a partition that starts with an eltwise
    op and has a binary one after it runs on its reference kernel (``ref:any``: 56 ms
    where the binary-led one took 0.33 ms, Zen 4). So without a bias the leading unary
    post-ops are kept apart too: each runs alone, and the binary op after them leads."""
    ops = list(ops)
    ids = [t.id for op in ops for t in op.inputs + op.outputs]
    next_tensor, next_op = max(ids, default=0) + 1, max((op.id for op in ops), default=0) + 1
    readers = {t.id for op in ops for t in op.inputs}
    result: list[Any] = []
    kept: list[Any] = []
    views: dict[int, tuple[int, tuple[int, ...]]] = {}
    reasons = []
    for op in ops:
        if not on_deconvolution(op.kind) or (len(op.inputs) < 3 and op.outputs[0].id not in readers):
            result.append(op)
            continue
        x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
        if all(_known(t) for t in (x, w, y)):
            dtypes, sums = _config(ops, op)
            why_apart = reason(op.kind, op.attrs, [x.shape, w.shape], y.shape, dtypes, threads, sums)
        else:  # the kernel cannot be asked: apart wherever it may repeat
            why_apart = why(2) if _known(w) and possible(op.attrs, w.shape) else None
        if why_apart is None:
            result.append(op)
            continue
        reasons.append(why_apart)
        if len(op.inputs) < 3:  # post-ops only: the result stays, kept apart with the unary ones
            result.append(op)
            kept.append(y)
            for after in _epilogue(ops, y):
                if len(after.inputs) > 1:
                    break
                kept.append(after.outputs[0])
            continue
        own = _core.LogicalTensor(next_tensor, y.dtype, y.shape, y.strides) if _known(y) \
            else _core.LogicalTensor(next_tensor, y.dtype, y.shape)
        next_tensor += 1
        result.append(_core.Op(op.id, op.kind, [x, w], [own], op.attrs, op.name))
        bias, fmt = op.inputs[2], op.attrs["data_format"]
        if y.id not in readers:
            result.append(_core.Op(next_op, "BiasAdd", [own, bias], [y], {"data_format": fmt}, "BiasAdd"))
        else:
            if fmt == "NCX":  # (C,) broadcasts along the last axis: (C, 1, ...) along NCX's channels
                shape = (bias.shape[0],) + (1,) * len(op.attrs["strides"])
                # (its step along the channels is the bias's own: a caller's strided bias)
                step = bias.strides[0] if _known(bias) and bias.strides else 1
                view = _core.LogicalTensor(next_tensor, bias.dtype, shape, (step,) + (1,) * (len(shape) - 1))
                views[view.id] = (bias.id, shape)
                bias, next_tensor = view, next_tensor + 1
            result.append(_core.Op(next_op, "Add", [own, bias], [y], {"auto_broadcast": "numpy"}, "Add"))
        kept.append(own)
        next_op += 1
    return Split(result, kept, views, tuple(reasons)) if kept else None
