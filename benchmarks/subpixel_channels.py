"""The sub-pixel form against the native op, by output channels: where the default rule
(``_impl.lowering.SUBPIXEL_CHANNELS``) should take it.

    python benchmarks/subpixel_channels.py                    # ConvTranspose, the shapes below
    python benchmarks/subpixel_channels.py --kind ConvolutionBackwardData
    ONEDNN_MAX_CPU_ISA=AVX2 python benchmarks/subpixel_channels.py

A strided ConvTranspose (or ConvolutionBackwardData) with few output channels leaves most
of the vector lanes of oneDNN 3.2's kernels empty; the sub-pixel form
(``_impl.subpixel_form``) computes every output phase as channels of one stride-1
Convolution. For each problem (GAN and U-Net upsamplers, k4s2 in 2-D with 64, 256 and 512
input channels, in 3-D with 16 and 32; a 1-D vocoder's k8s4), data format and output
channel count: the sub-pixel form's time over the native op's, the median of interleaved
rounds with the lowest and highest, each run through the package's prepared call on the
same f32 arrays (the sub-pixel form's per-call gathering of the weights included), its
MFLOP, and ``*`` where the default rule on this CPU takes the form.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time

import numpy as np

import onednn_graph as og
from onednn_graph._impl import call as _call, lowering as _lowering, plan as _plan

#: (batch, input channels, spatial sizes, kernel, stride, pad)
PROBLEMS = [(1, 64, (32, 32), 4, 2, 1), (4, 64, (32, 32), 4, 2, 1), (16, 64, (32, 32), 4, 2, 1),
            (2, 256, (16, 16), 4, 2, 1), (8, 256, (16, 16), 4, 2, 1),
            (4, 512, (14, 14), 4, 2, 1), (16, 512, (14, 14), 4, 2, 1),
            (1, 32, (16, 16, 16), 4, 2, 1), (1, 16, (32, 32, 32), 4, 2, 1), (1, 128, (1024,), 8, 4, 2)]


def _ratio(kind: str, problem: tuple, channels: int, fmt: str, rounds: int,
           rng: np.random.Generator) -> tuple[float, float, float, float, bool]:
    """(median, lowest, highest sub-pixel / native time, MFLOP, whether the default takes it)."""
    n, c, spatial, k, s, p = problem
    x = rng.standard_normal((n, *spatial, c) if fmt == "NXC" else (n, c, *spatial), dtype=np.float32)
    w = rng.standard_normal((c, channels, *([k] * len(spatial))), dtype=np.float32)
    kw: dict = dict(strides=s, pads_begin=p, pads_end=p, data_format=fmt)
    if kind == "ConvTranspose":
        names, kw["weights_format"] = ("src", "weights"), "IOX"
    else:  # (the Convolution's weights: O is the small side's channels)
        big = [s * (v - 1) + k - 2 * p for v in spatial]
        names, kw["weights_format"] = ("diff_dst", "weights"), "OIX"
        kw["dst_shape"] = (n, *big, channels) if fmt == "NXC" else (n, channels, *big)
    arrays = [x, w]
    cp = _plan.plan_call(kind, names, arrays, dict(kw))
    way = _lowering.subpixel_way(cp.plan, cp.input_shapes, cp.native)
    runs = [_call.prepare(dataclasses.replace(cp, way=v), arrays) for v in (cp.native, way)]
    out = np.empty(cp.result_shape, np.float32)
    start = time.perf_counter()
    for r in runs:
        r.run(arrays, out)
    calls = min(20, max(1, int(0.02 / max(time.perf_counter() - start, 1e-5))))
    times: list[list[float]] = [[], []]
    for i in range(rounds):
        for j in ((0, 1) if i % 2 else (1, 0)):
            start = time.perf_counter()
            for _ in range(calls):
                runs[j].run(arrays, out)
            times[j].append(time.perf_counter() - start)
    ratios = [b / a for a, b in zip(*times)]
    return (statistics.median(ratios), min(ratios), max(ratios), cp.size.flops / 1e6,
            _lowering.formed(cp.way) == "subpixel")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", default="ConvTranspose", choices=["ConvTranspose", "ConvolutionBackwardData"])
    parser.add_argument("--channels", default="1,2,3,4,6,8,12")
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args(argv)
    counts = [int(c) for c in args.channels.split(",")]
    rng = np.random.default_rng(0)
    v = og.system.onednn_version()
    print(f"{args.kind}, f32, oneDNN {v[0]}.{v[1]}.{v[2]} on {og.system.cpu_isa()}: the sub-pixel form's time "
          f"over the native op's (median of {args.rounds} interleaved rounds, lowest-highest), its MFLOP; "
          "* where the default rule takes it\n")
    print("| format | batch, input channels, size, kernel / stride | "
          + " | ".join(f"{c} channel{'s' * (c > 1)}" for c in counts) + " |")
    print("| --- | --- |" + " --- |" * len(counts))
    for fmt in ("NXC", "NCX"):
        for problem in PROBLEMS:
            n, c, spatial, k, s, _ = problem
            cells = []
            for channels in counts:
                med, lo, hi, mflop, default = _ratio(args.kind, problem, channels, fmt, args.rounds, rng)
                cells.append(f"{med:.2f}{'*' if default else ''} ({lo:.2f}-{hi:.2f}), {mflop:.0f} M")
            print(f"| {fmt} | {n}, {c}, {'x'.join(map(str, spatial))}, k{k}s{s} | " + " | ".join(cells) + " |",
                  flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
