"""A decoder block's ConvTranspose + bias + ReLU + skip Add: fused, one by one, and PyTorch.

    python benchmarks/fused.py [--dtypes f32,bf16] [--rounds 5] [--out docs/benchmarks/<ISA>-fused.md]

On the suite's decoder shapes (benchmarks/suite.py: DCGAN and U-Net layers), NXC data,
with a skip tensor of the result's shape, four systems in rounds that take turns:

* ``fused``: ``og.conv_transpose(x, w, b, post_ops=[post.relu(), post.add(skip)])``,
  one oneDNN partition;
* ``one by one``: the same through the package, op by op: the ConvTranspose with its
  bias, then ReLU and Add each as a oneDNN partition of its own (``_impl.fused`` with
  one post-op), through buffers of the result's size;
* ``torch``: PyTorch's eager ``conv_transpose2d`` (channels-last), ``relu``, ``+``;
* ``torch.compile``: the same function compiled by inductor (compilation untimed).

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
from onednn_graph import post
from onednn_graph._impl import compiled as _compiled, dtypes as _dtypes, fused as _fused
from onednn_graph._impl import version as _version

CASES = ("dcgan-1", "dcgan-2", "unet-1", "unet-2")


def systems(c: suite.Case, dtype: str, torch: Any) -> tuple[dict[str, Callable[[], Any]], int]:
    rng = np.random.default_rng(0)
    nd = _dtypes.numpy_dtype(dtype)
    x = rng.standard_normal((c.n, *c.spatial, c.c_in)).astype(nd)
    w = (rng.standard_normal((c.k, c.k, c.c_out, c.c_in)) * 0.1).astype(nd)  # XOI
    b = rng.standard_normal(c.c_out).astype(nd)
    kw = dict(strides=c.s, pads_begin=c.p, pads_end=c.p)
    shape = og.output_shape("ConvTranspose", [x.shape, w.shape, b.shape], **kw)
    skip = rng.standard_normal(shape).astype(nd)
    out, y, z = (np.empty(shape, nd) for _ in range(3))
    chain = [post.relu(), post.add(skip)]
    dt, meta = _dtypes.dtype_name(nd), _compiled.meta(out)
    relu = _fused.Fused(None, meta, dt, [("ReLU", (), None)], meta)
    add = _fused.Fused(None, meta, dt, [("Add", (), _compiled.meta(skip))], meta)

    def one_by_one() -> None:
        og.conv_transpose(x, w, b, **kw, out=y)
        relu.run({relu.inputs[0]: y, relu.output: z})
        add.run({add.inputs[0]: z, add.operands[0]: skip, add.output: out})

    found: dict[str, Callable[[], Any]] = {
        "fused": lambda: og.conv_transpose(x, w, b, **kw, post_ops=chain, out=out),
        "one by one": one_by_one}
    if torch is not None:
        tdt = {"f32": torch.float32, "bf16": torch.bfloat16}[dtype]
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
    parser.add_argument("--dtypes", default="f32,bf16")
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
                order = list(found)[r % len(found):] + list(found)[:r % len(found)]
                for s in order:
                    times[s].append(suite._timed(found[s], batch[s]))
            medians = {s: statistics.median(v) for s, v in times.items()}
            rows.append((name, dtype, medians, nbytes))
            print(f"{name} {dtype}: " + ", ".join(f"{s} {t * 1e3:.3f} ms" for s, t in medians.items()),
                  file=sys.stderr)
    v = og.onednn_version()
    header = ["fused", "one by one", "torch", "torch.compile"]
    lines = [
        f"`python benchmarks/fused.py --dtypes {args.dtypes} --rounds {args.rounds}` on "
        f"{_version.cpu_model()}, CPU ISA {og.cpu_isa()}; oneDNN {v.major}.{v.minor}.{v.patch} "
        f"({v.cpu_runtime}){', PyTorch ' + torch.__version__ if torch else ''}; "
        f"{time.perf_counter() - start:.0f} s. ConvTranspose + bias + ReLU + skip Add, NXC "
        "(PyTorch: channels-last), median ms per call; traffic saved = 2 post-ops x "
        "(read + write) of the result.",
        "",
        "| case | dtype | " + " | ".join(f"{h} ms" for h in header) +
        " | fused / one by one | fused / torch | traffic saved MB |",
        "|---|---|" + "---|" * (len(header) + 3),
    ]
    for name, dtype, m, nbytes in rows:
        cells = [f"{m[h] * 1e3:.3f}" if h in m else "—" for h in header]
        vs_torch = f"{m['fused'] / m['torch']:.2f}" if "torch" in m else "—"
        lines.append(f"| {name} | {dtype} | " + " | ".join(cells) +
                     f" | {m['fused'] / m['one by one']:.2f} | {vs_torch} | {4 * nbytes / 1e6:.1f} |")
    return suite.publish("\n".join(lines) + "\n", args.out)


if __name__ == "__main__":
    sys.exit(main())
