"""A strided ConvTranspose's time against its number of output channels: oneDNN's kernels
hold output channels in vector lanes (16 f32 lanes with AVX-512, 8 with AVX2), so a layer
with one channel more than a multiple of a vector (Keypoint R-CNN's 17 keypoints) pays a
whole vector's work for it.

    python benchmarks/channel_blocks.py                 # Keypoint R-CNN's head, 16 RoIs
    python benchmarks/channel_blocks.py --channels 1,4,8,16,17,20,32,33 --rounds 9
    ONEDNN_MAX_CPU_ISA=AVX2 python benchmarks/channel_blocks.py

Per data format (NCX, NXC), for each output channel count, on ``(batch, in_channels,
size, size)`` (IOX weights), in interleaved rounds (medians, ms): the op as one oneDNN
call (its native formulation, whatever the package's default), the functional API's
``og.conv_transpose`` as the package runs it by default (for a few channels over a
multiple of a vector: as two calls, ``_impl.split_form``), and PyTorch's
``conv_transpose2d`` (if installed), and how the package ran it by default.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time

import numpy as np
import suite  # round_order (the benchmarks' folder is the script's)

import onednn_graph as og
from onednn_graph._impl import call as _call, plan as _plan


def _timed(fn, calls: int) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1e3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--in-channels", type=int, default=512)
    parser.add_argument("--size", type=int, default=14)
    parser.add_argument("--kernel", type=int, default=4)
    parser.add_argument("--stride", type=int, default=2)
    parser.add_argument("--pad", type=int, default=1)
    parser.add_argument("--channels", default="1,2,4,5,8,16,17,20,32,33")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=3)
    args = parser.parse_args(argv)
    isa = og.system.cpu_isa()
    counts = sorted({int(c) for c in args.channels.split(",")})
    rng = np.random.default_rng(0)
    x = rng.standard_normal((args.batch, args.in_channels, args.size, args.size), dtype=np.float32)
    attrs = dict(strides=args.stride, pads_begin=args.pad, pads_end=args.pad, weights_format="IOX")
    try:
        import torch
    except ImportError:
        torch = None
    v = og.system.onednn_version()
    print(f"ConvTranspose {args.in_channels} -> C, kernel {args.kernel}, stride {args.stride}, pad "
          f"{args.pad} on ({args.batch}, {args.in_channels}, {args.size}, {args.size}), f32; oneDNN "
          f"{v.major}.{v.minor}.{v.patch}, ISA {isa}; medians of "
          f"{args.rounds} interleaved rounds of {args.calls} calls, ms\n")
    for fmt in ("NCX", "NXC"):
        lowering: dict = {}
        data = x if fmt == "NCX" else np.ascontiguousarray(x.transpose(0, 2, 3, 1))
        calls = {}
        for c in counts:
            w = rng.standard_normal((args.in_channels, c, args.kernel, args.kernel), dtype=np.float32)
            cp = _plan.plan_call("ConvTranspose", ("src", "weights"), [data, w], dict(attrs, data_format=fmt))
            one = _call.prepare(dataclasses.replace(cp, way=cp.native), [data, w])  # one oneDNN call
            out = np.empty(cp.result_shape, np.float32)
            calls[("one", c)] = (lambda one=one, w=w, out=out: one.run([data, w], out))
            calls[("default", c)] = (lambda w=w: og.conv_transpose(data, w, data_format=fmt, **attrs))
            lowering[c] = cp.way.lowering
            if torch is not None:
                tx = torch.from_numpy(x)
                if fmt == "NXC":
                    tx = tx.contiguous(memory_format=torch.channels_last)
                calls[("torch", c)] = (lambda tx=tx, tw=torch.from_numpy(w): torch.conv_transpose2d(
                    tx, tw, None, args.stride, args.pad))
        for fn in calls.values():
            fn()
        times: dict = {k: [] for k in calls}
        for r in range(args.rounds):
            names = list(calls)
            for name in suite.round_order(names, r):
                times[name].append(_timed(calls[name], args.calls))
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"{fmt}:\n\n| output channels | one call ms | default ms | default / one call | PyTorch ms | "
              "default formulation |\n| --- | --- | --- | --- | --- | --- |")
        for c in counts:
            torch_ms = f"{med[('torch', c)]:.2f}" if ("torch", c) in med else "-"
            print(f"| {c} | {med[('one', c)]:.2f} | {med[('default', c)]:.2f} | "
                  f"{med[('default', c)] / med[('one', c)]:.2f} | {torch_ms} | {lowering[c].split(' (')[0]} |")
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
