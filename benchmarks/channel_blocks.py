"""A strided ConvTranspose's time against its number of output channels: oneDNN's kernels
hold output channels in vector lanes (16 f32 lanes with AVX-512, 8 with AVX2), so a layer
with one channel more than a multiple of a vector (Keypoint R-CNN's 17 keypoints) pays a
whole vector's work for it.

    python benchmarks/channel_blocks.py                 # Keypoint R-CNN's head, 16 RoIs
    python benchmarks/channel_blocks.py --channels 1,4,8,16,17,20,32,33 --rounds 9
    ONEDNN_MAX_CPU_ISA=AVX2 python benchmarks/channel_blocks.py

Per data format (NCX, NXC), the functional API's ``og.conv_transpose`` (IOX weights) on
``(batch, in_channels, size, size)`` for each output channel count, and PyTorch's
``conv_transpose2d`` (if installed) at each count, in interleaved rounds: medians in
milliseconds. "Split" is what the call would take as two calls, the largest multiple
of `--block` channels and the rest (each as the package runs it by default), summed:
below 1.00 such a split would be faster. The package does not split calls (yet): this
is the measurement behind that formulation.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import onednn_graph as og


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
    parser.add_argument("--block", type=int, default=0, help="0: 16 with AVX-512, else 8")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=3)
    args = parser.parse_args(argv)
    isa = og.system.cpu_isa()
    block = args.block or (16 if "avx512" in isa else 8)
    counts = sorted({int(c) for c in args.channels.split(",")})
    parts = {c % block for c in counts if c > block and c % block} | \
        {c - c % block for c in counts if c > block and c % block}
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
          f"{v.major}.{v.minor}.{v.patch}, ISA {isa}, blocks of {block} channels; medians of "
          f"{args.rounds} interleaved rounds of {args.calls} calls, ms\n")
    for fmt in ("NCX", "NXC"):
        data = x if fmt == "NCX" else np.ascontiguousarray(x.transpose(0, 2, 3, 1))
        calls = {}
        for c in sorted(set(counts) | parts):
            w = rng.standard_normal((args.in_channels, c, args.kernel, args.kernel), dtype=np.float32)
            calls[c] = (lambda w=w: og.conv_transpose(data, w, data_format=fmt, **attrs))
            if torch is not None and c in counts:
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
            for name in names[r % len(names):] + names[:r % len(names)]:
                times[name].append(_timed(calls[name], args.calls))
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"{fmt}:\n\n| output channels | ms | split into {block}k + rest, ms | split / whole | "
              "PyTorch ms |\n| --- | --- | --- | --- | --- |")
        for c in counts:
            rest = c % block
            torch_ms = f"{med[('torch', c)]:.2f}" if ("torch", c) in med else "-"
            if c > block and rest:
                split = med[c - rest] + med[rest]
                print(f"| {c} | {med[c]:.2f} | {med[c - rest]:.2f} + {med[rest]:.2f} = {split:.2f} | "
                      f"{split / med[c]:.2f} | {torch_ms} |")
            else:
                print(f"| {c} | {med[c]:.2f} | | | {torch_ms} |")
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
