"""int8 ConvTranspose chains with binary post-ops: fused as one partition, or cut.

    python benchmarks/int8_chains.py [--rounds 7]

The case behind ``_impl.fused.CUT_BEFORE_BINARY``: a u8 src (zero point 0 or 128),
s8 weights, f32 bias, then a post-op chain, with an f32 or u8 result, on a small
problem (2x4x4x64 -> 32 channels, k4 s2, NXC). Each chain runs as the package runs it
on this oneDNN and CPU, and fused as one partition (the rule off); median ms of
`--rounds` calls each. ``add`` is of an f32 operand, ``add u8`` of a u8 skip (dequantized
in the graph). ``ONEDNN_VERBOSE=1`` shows the kernels (jit_uni_int8 or
gemm_s8u8s32 on AVX2).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

import onednn_graph as og
from onednn_graph import post, quant
from onednn_graph._impl import compiled as _compiled, fused as _fused, version as _version


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (2, 4, 4, 64)).astype(np.uint8)
    w = quant.per_tensor(rng.integers(-64, 65, (4, 4, 32, 64)).astype(np.int8), 0.01)
    b = rng.standard_normal(32).astype(np.float32)
    kw = dict(strides=2, pads_begin=1, pads_end=1)
    s = rng.standard_normal(og.output_shape("ConvTranspose", [x.shape, w.data.shape], **kw)
                            ).astype(np.float32)
    q = quant.per_tensor(rng.integers(0, 256, s.shape).astype(np.uint8), 0.03, 5)  # a u8 skip
    chains = {"relu": [post.relu()], "add": [post.add(s)], "relu,add": [post.relu(), post.add(s)],
              "mul": [post.multiply(s)], "add,add": [post.add(s), post.add(s)],
              "max": [post.maximum(s)], "add u8": [post.add(q)],
              "relu,add u8": [post.relu(), post.add(q)]}
    rule = _fused.CUT_BEFORE_BINARY
    v = og.system.onednn_version()
    print(f"`python benchmarks/int8_chains.py --rounds {args.rounds}` on {_version.cpu_model()}, "
          f"CPU ISA {og.system.cpu_isa()}, oneDNN {v.major}.{v.minor}.{v.patch}; "
          "median ms per call, "
          "as the package runs it / fused as one partition\n")
    print("| src zero point | result | " + " | ".join(chains) + " |")
    print("|---|---|" + "---|" * len(chains))
    for zp in (0, 128):
        for result in ("f32", "u8"):
            cells = []
            for chain in chains.values():
                times = []
                for cut in (True, False):
                    _fused.CUT_BEFORE_BINARY = rule if cut else frozenset()
                    _compiled.CACHE.clear()  # so that the call compiles this rule's chain
                    extra = {"quantize": quant.to("u8", 0.05, 0)} if result == "u8" else {}
                    call = lambda: og.conv_transpose(quant.per_tensor(x, 0.02, zp), w, b, **kw,  # noqa: E731
                                                     post_ops=chain, **extra)
                    call()
                    samples = []
                    for _ in range(args.rounds):
                        start = time.perf_counter()
                        call()
                        samples.append(time.perf_counter() - start)
                    times.append(statistics.median(samples) * 1e3)
                cells.append(f"{times[0]:.2f} / {times[1]:.2f}")
            print(f"| {zp} | {result} | " + " | ".join(cells) + " |", flush=True)
    _fused.CUT_BEFORE_BINARY = rule
    return 0


if __name__ == "__main__":
    sys.exit(main())
