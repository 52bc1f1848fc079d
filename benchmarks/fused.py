"""A decoder block's ConvTranspose + bias + ReLU + skip Add: fused, one by one, and PyTorch.

    python benchmarks/fused.py [--dtypes f32,bf16,int8] [--rounds 5] [--out docs/benchmarks/<ISA>-fused.md]

On the suite's decoder shapes (benchmarks/suite.py: DCGAN and U-Net layers), NXC data,
with a skip tensor of the result's shape, four systems in rounds that take turns:

* ``fused``: ``og.conv_transpose(x, w, b, post_ops=[post.relu(), post.add(skip)])``,
  one oneDNN partition;
* ``one by one``: the same through the package, op by op: the ConvTranspose with its
  bias, then ReLU and Add each as a oneDNN partition of its own (``_impl.fused`` with
  one post-op), through buffers of the result's size;
* ``torch``: PyTorch's eager ``conv_transpose2d`` (channels-last), ``relu``, ``+``;
* ``torch.compile``: the same function compiled by inductor (compilation untimed).

``int8`` is the quantized form (``onednn_graph.quant``), fused only: u8 src, s8 weights
per output channel, f32 bias, ReLU, a u8 skip dequantized in the graph, the result
quantized to u8; its last column compares it with the f32 fused call.

Memory traffic the fusion saves per call: each post-op run alone reads and writes the
whole result once more, 2 x 2 x result bytes for the two post-ops.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any, Callable

import numpy as np

import suite
import onednn_graph as og
from onednn_graph import post, quant
from onednn_graph._impl import compiled as _compiled, arrays as _arrays, fused as _fused
from onednn_graph._impl import version as _version

CASES = ("dcgan-1", "dcgan-2", "unet-1", "unet-2")


def int8_system(c: suite.Case) -> tuple[dict[str, Callable[[], Any]], int]:
    rng = np.random.default_rng(0)
    x = quant.per_tensor(rng.integers(0, 256, (c.n, *c.spatial, c.c_in)).astype(np.uint8), 0.02, 128)
    w = quant.per_channel(rng.integers(-64, 65, (c.k, c.k, c.c_out, c.c_in)).astype(np.int8),
                          np.full(c.c_out, 0.01), axis=2)  # XOI; exact on every ISA
    b = rng.standard_normal(c.c_out).astype(np.float32)
    kw = dict(strides=c.s, pads_begin=c.p, pads_end=c.p)
    shape = og.output_shape("ConvTranspose", [x.data.shape, w.data.shape, b.shape], **kw)
    skip = quant.per_tensor(rng.integers(0, 256, shape).astype(np.uint8), 0.05, 0)
    out = np.empty(shape, np.uint8)
    chain, q = [post.relu(), post.add(skip)], quant.to("u8", 0.05, 0)
    return {"fused": lambda: og.conv_transpose(x, w, b, **kw, post_ops=chain, quantize=q,
                                               out=out)}, out.nbytes


def systems(c: suite.Case, dtype: str, torch: Any) -> tuple[dict[str, Callable[[], Any]], int]:
    if dtype == "int8":
        return int8_system(c)
    rng = np.random.default_rng(0)
    nd = _arrays.numpy_dtype(dtype)
    x = rng.standard_normal((c.n, *c.spatial, c.c_in)).astype(nd)
    w = (rng.standard_normal((c.k, c.k, c.c_out, c.c_in)) * 0.1).astype(nd)  # XOI
    b = rng.standard_normal(c.c_out).astype(nd)
    kw = dict(strides=c.s, pads_begin=c.p, pads_end=c.p)
    shape = og.output_shape("ConvTranspose", [x.shape, w.shape, b.shape], **kw)
    skip = rng.standard_normal(shape).astype(nd)
    out, y, z = (np.empty(shape, nd) for _ in range(3))
    chain = [post.relu(), post.add(skip)]
    port = (_compiled.meta(out), _arrays.dtype_name(nd), None)
    relu = _fused.Fused(None, port, [("ReLU", (), None)], port)
    add = _fused.Fused(None, port, [("Add", (), (_compiled.meta(skip), port[1], None))], port)

    def one_by_one() -> None:
        og.conv_transpose(x, w, b, **kw, out=y)
        relu.run({relu.inputs[0]: y, relu.output: z})
        add.run({add.inputs[0]: z, add.operands[0]: skip, add.output: out})

    found: dict[str, Callable[[], Any]] = {
        "fused": lambda: og.conv_transpose(x, w, b, **kw, post_ops=chain, out=out),
        "one by one": one_by_one}
    if torch is not None:
        tdt = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[dtype]
        tx = torch.from_numpy(x.astype(np.float32)).to(tdt).permute(0, 3, 1, 2)  # NCHW view, NHWC memory
        tw = torch.from_numpy(np.ascontiguousarray(w.astype(np.float32).transpose(3, 2, 0, 1))).to(tdt)
        tb = torch.from_numpy(b.astype(np.float32)).to(tdt)
        ts = torch.from_numpy(skip.astype(np.float32)).to(tdt).permute(0, 3, 1, 2)

        def block(x: Any) -> Any:
            y = torch.nn.functional.conv_transpose2d(x, tw, tb, stride=c.s, padding=c.p)
            return torch.relu(y) + ts
        compiled = torch.compile(block)
        found["torch"] = lambda: block(tx)
        found["torch.compile"] = lambda: compiled(tx)
    return found, out.nbytes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtypes", default="f32,bf16,int8")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--target-ms", type=float, default=20.0)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    try:
        import torch
    except ImportError:
        torch = None
    start = time.perf_counter()
    rows = []
    for name in CASES:
        c = next(c for c in suite.CASES if c.name == name)
        for dtype in args.dtypes.split(","):
            found, nbytes = systems(c, dtype, torch)
            batch = {}
            for s, fn in found.items():  # compile, warm up, size the batches
                fn()
                batch[s] = max(1, int(args.target_ms * 1e-3 / max(suite._timed(fn, 2), 1e-7)))
            times: dict[str, list[float]] = {s: [] for s in found}
            for r in range(args.rounds):
                order = suite.round_order(list(found), r)
                for s in order:
                    times[s].append(suite._timed(found[s], batch[s]))
            medians = {s: statistics.median(v) for s, v in times.items()}
            rows.append((name, dtype, medians, nbytes))
            print(f"{name} {dtype}: " + ", ".join(f"{s} {t * 1e3:.3f} ms" for s, t in medians.items()),
                  file=sys.stderr)
    v = og.system.onednn_version()
    header = ["fused", "one by one", "torch", "torch.compile"]
    lines = [
        f"`python benchmarks/fused.py --dtypes {args.dtypes} --rounds {args.rounds}` on "
        f"{_version.cpu_model()}, CPU ISA {og.system.cpu_isa()}; "
        f"oneDNN {v.major}.{v.minor}.{v.patch} "
        f"({v.cpu_runtime}){', PyTorch ' + torch.__version__ if torch else ''}; "
        f"{time.perf_counter() - start:.0f} s. ConvTranspose + bias + ReLU + skip Add, NXC "
        "(PyTorch: channels-last), median ms per call; traffic saved = 2 post-ops x "
        "(read + write) of the result. int8: u8 src, s8 weights per channel, u8 skip "
        "and result, fused only.",
        "",
        "| case | dtype | " + " | ".join(f"{h} ms" for h in header) +
        " | fused / one by one | fused / torch | fused / torch.compile | traffic saved MB "
        "| fused / f32 fused |",
        "|---|---|" + "---|" * (len(header) + 5),
    ]
    f32 = {name: m["fused"] for name, dtype, m, _ in rows if dtype == "f32"}

    def ratio(m: dict[str, float], a: str, b: str) -> str:
        return f"{m[a] / m[b]:.2f}" if a in m and b in m else "—"
    for name, dtype, m, nbytes in rows:
        cells = [f"{m[h] * 1e3:.3f}" if h in m else "—" for h in header]
        vs_f32 = f"{m['fused'] / f32[name]:.2f}" if name in f32 else "—"
        saved = "—" if dtype == "int8" else f"{4 * nbytes / 1e6:.1f}"  # no one-by-one int8 run
        lines.append(f"| {name} | {dtype} | " + " | ".join(cells) +
                     f" | {ratio(m, 'fused', 'one by one')} | {ratio(m, 'fused', 'torch')} | "
                     f"{ratio(m, 'fused', 'torch.compile')} | {saved} | {vs_f32} |")
    return suite.publish("\n".join(lines) + "\n", args.out)


if __name__ == "__main__":
    sys.exit(main())
