"""Each op that oneDNN 3.2 can compute in more than one way, timed both ways:
ConvTranspose (groups = 1, no bias) natively and as a ConvolutionBackwardData,
ConvTransposeBackwardData natively and as the forward Convolution it equals,
ConvTransposeBackwardWeights natively and as the ConvolutionBackwardWeights of
diff_dst and src, ConvolutionBackwardData (groups = 1) natively and as a
ConvTranspose, and each of the four with kernel == stride (no pads, dilation 1)
natively and as one MatMul (onednn_graph._lowering.alternatives; a row per
alternative). Prints per-configuration
medians of interleaved rounds, and whether both results lie within the
package's error bound of the NumPy reference (onednn_graph.tolerance).

    python benchmarks/alternative_lowerings.py                 # the suite's cases, ~7 min
    python benchmarks/alternative_lowerings.py --held-out      # shapes outside the suite
    python benchmarks/alternative_lowerings.py --cases unet-1 --kinds CTBW --dtypes f32

This is the measurement behind the package's default formulation
(``_lowering.preferred``) and compile_op(..., tune=True): neither form wins
everywhere, so the default follows the rows where one form won on every shape,
and tuning measures per problem.
"""

import argparse
import time
from typing import Any

import numpy as np

import suite
from onednn_graph import reference, shapes, tolerance
from onednn_graph._impl import call as _call, lowering as _lowering, registry
from onednn_graph._impl.arrays import dtype_name
from onednn_graph.errors import UnsupportedError

KINDS = {"ConvTranspose": reference.conv_transpose,
         "ConvTransposeBackwardData": reference.conv_transpose_backward_data,
         "ConvTransposeBackwardWeights": reference.conv_transpose_backward_weights,
         "ConvolutionBackwardData": reference.convolution_backward_data}

#: Shapes from other networks than the suite's, to check a rule read off the
#: suite's table on problems it was not read from.
HELD_OUT = [
    suite.Case("resnet-s1", 8, 64, 64, (28, 28), 3, 1, 1),
    suite.Case("k3s2", 8, 256, 128, (14, 14), 3, 2, 1),
    suite.Case("small-batch32", 32, 32, 16, (8, 8), 4, 2, 1),
    suite.Case("wavenet-1d", 8, 128, 64, (512,), 4, 2, 1),
    suite.Case("vnet-3d", 1, 32, 16, (16, 16, 16), 3, 2, 1),
    suite.Case("grouped-4", 8, 64, 64, (32, 32), 4, 2, 1, groups=4),
    suite.Case("depthwise-k3", 4, 128, 128, (16, 16), 3, 1, 1, groups=128),
    suite.Case("wide-2x2", 32, 1024, 512, (2, 2), 4, 2, 1),
    suite.Case("odd-48", 4, 48, 24, (20, 20), 3, 2, 1),
    suite.Case("dcgan-head", 64, 100, 512, (1, 1), 4, 1, 0),
    suite.Case("wide-4x4-s1", 16, 512, 512, (4, 4), 3, 1, 1),
    suite.Case("wide-1x1-s2", 64, 1024, 1024, (1, 1), 2, 2, 0),
    # kernel == stride, where the MatMul formulation applies: channel counts from 1
    # to 512 on the big side, kernels of 2 to 8, 1-D to 3-D.
    suite.Case("patch-1d-k4", 8, 256, 64, (256,), 4, 4, 0),
    suite.Case("upconv-k2-c16", 4, 64, 16, (64, 64), 2, 2, 0),
    suite.Case("stem-k4-c32", 8, 64, 32, (32, 32), 4, 4, 0),
    suite.Case("patch-k8-c8", 4, 256, 8, (16, 16), 8, 8, 0),
    suite.Case("vnet-head-k2-c1", 2, 16, 1, (16, 16, 16), 2, 2, 0),
    suite.Case("decoder-k2-c512", 8, 1024, 512, (8, 8), 2, 2, 0),
    suite.Case("swin-k4-c3-b1", 1, 128, 3, (56, 56), 4, 4, 0),
    # stride 1 with few output channels, where a Convolution can compute several
    # output positions per channel: first-layer data gradients, grayscale, audio.
    suite.Case("first-k3-c3", 8, 64, 3, (112, 112), 3, 1, 1),
    suite.Case("gray-k3-c1", 8, 64, 1, (128, 128), 3, 1, 1),
    suite.Case("stem-k7-c3-s1", 4, 64, 3, (112, 112), 7, 1, 3),
    suite.Case("audio-k15-c2", 8, 128, 2, (4096,), 15, 1, 7),
    suite.Case("k3-c8", 8, 64, 8, (64, 64), 3, 1, 1),
    suite.Case("volume-k3-c3", 1, 32, 3, (48, 64, 64), 3, 1, 1),
    # strided depthwise, where each output phase can be a stride-1 depthwise Convolution
    suite.Case("depthwise-k3-s2", 8, 128, 128, (28, 28), 3, 2, 1, groups=128),
    suite.Case("depthwise-1d-k8-s4", 8, 64, 64, (256,), 8, 4, 2, groups=64),
    suite.Case("depthwise-3d-k4-s2", 2, 32, 32, (8, 16, 16), 4, 2, 1, groups=32),
    # strided with few output channels, where one stride-1 Convolution can compute every
    # output phase as channels (sub-pixel): GAN generators' last layers, volumes, audio
    suite.Case("gan-last-k4-c3", 16, 64, 3, (32, 32), 4, 2, 1),
    suite.Case("gan-last-k4-c1", 8, 128, 1, (32, 32), 4, 2, 1),
    suite.Case("gan-k4-c4", 8, 64, 4, (32, 32), 4, 2, 1),
    suite.Case("gan-k4-c8", 8, 64, 8, (32, 32), 4, 2, 1),
    suite.Case("gan-k4-c16", 8, 64, 16, (32, 32), 4, 2, 1),
    suite.Case("gan-k6-c3", 8, 64, 3, (32, 32), 6, 2, 2),
    suite.Case("volume-k4-c2", 2, 32, 2, (16, 16, 16), 4, 2, 1),
    suite.Case("audio-k8s4-c1", 8, 64, 1, (1024,), 8, 4, 2),
]


def compiled(p: suite.Problem, native: _lowering.NativeOp) -> Any:
    """`native` compiled as the package compiles it on this CPU: a CompiledOp, or an
    ChainOp where this CPU's oneDNN has no kernel for the dtype (or only its
    reference one)."""
    assert not native.crop, "the suite's cases need no crop"
    return _call._compile(native, dtype_name(p.arrays[0].dtype), list(p.arrays), p.out, None, 0)


def within_bound(p: suite.Problem, got: np.ndarray, dtype: str, terms: int) -> bool:
    kwargs = dict(p.kwargs)
    shape = kwargs.pop(registry.SPECS[p.kind].shape_attr or "", None)
    args = list(p.arrays) + ([shape] if shape is not None else [])
    return tolerance.compare(got, KINDS[p.kind], args, kwargs, dtype, terms).ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--held-out", action="store_true", help="the shapes outside the suite")
    parser.add_argument("--cases", help="comma-separated case names")
    parser.add_argument("--kinds", default="CT,CTBD,CTBW,CBD")
    parser.add_argument("--dtypes", default="f32,bf16")
    parser.add_argument("--formats", default="NCX,NXC")
    parser.add_argument("--forms", help="comma-separated alternatives to time (matmul, packed, "
                        "polyphase, subpixel, rewrite); default: all")
    args = parser.parse_args()
    cases = HELD_OUT if args.held_out else suite.CASES
    wanted = set(args.cases.split(",")) if args.cases else None
    kinds = [k for k in KINDS if suite.SHORT[k] in args.kinds.split(",")]
    print("| case | op | dtype | format | alternative | native ms | alternative ms | ratio | "
          "both within the bound |")
    print("|---|---|---|---|---|---|---|---|---|")
    for case in cases:
        if wanted and case.name not in wanted:
            continue
        for kind in kinds:
            for dtype in args.dtypes.split(","):
                for fmt in args.formats.split(","):
                    p = suite.problem(case, kind, dtype, fmt)
                    input_shapes = [a.shape for a in p.arrays]
                    plan = shapes.plan(kind, input_shapes, **p.kwargs)
                    native = _lowering.lower(plan, input_shapes)
                    others = _lowering.alternatives(plan, input_shapes, native)
                    if not others:
                        continue  # e.g. ConvolutionBackwardData with groups > 1
                    for other in others:
                        if args.forms and (_lowering.formed(other) or "rewrite") not in args.forms.split(","):
                            continue
                        measure(p, case, dtype, fmt, plan, input_shapes, native, other)


def measure(p: suite.Problem, case: suite.Case, dtype: str, fmt: str, plan: Any,
            input_shapes: list, native: _lowering.NativeOp, other: _lowering.NativeOp) -> None:
    """One row: `native` and `other` in interleaved rounds, and both against the reference."""
    try:
        ops = [compiled(p, native), compiled(p, other)]
    except UnsupportedError as exc:
        print(f"| {case.name} | {suite.SHORT[p.kind]} | {dtype} | {fmt} | {other.lowering} | "
              f"cannot compile: {exc.message} | | | |", flush=True)
        return
    terms = tolerance.accumulation_terms(plan, input_shapes)
    ok = True
    for op in ops:
        y = np.empty_like(p.out)
        op.execute(list(p.arrays), y)
        ok &= within_bound(p, y, dtype, terms)
    run = [lambda n, op=op: suite._timed(lambda: op.execute(list(p.arrays), p.out), n)
           for op in ops]
    n = max(1, int(0.05 / max(1e-6, run[0](2))))
    samples: list[list[float]] = [[], []]
    for _ in range(7):
        for i in (0, 1):
            time.sleep(0.01)
            samples[i].append(run[i](n))
    a, b = (float(np.median(s)) for s in samples)
    form = {"matmul": "MatMul", "packed": f"packed x{other.attrs.get('positions')}",
            "polyphase": "polyphase", "subpixel": "sub-pixel"}.get(
        _lowering.formed(other) or "", other.lowering.split(" (")[0])
    print(f"| {case.name} | {suite.SHORT[p.kind]} | {dtype} | {fmt} | {form} | {a * 1e3:.3f} | "
          f"{b * 1e3:.3f} | {b / a:.2f} | {'yes' if ok else 'NO'} |", flush=True)

if __name__ == "__main__":
    main()
