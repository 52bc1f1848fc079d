"""A converted layer against torch.nn's, alone, across the shapes the default rule of
``onednn_graph.torch._kernel_choice`` covers and their neighbours (issue 46).

    python benchmarks/kernel_choice.py [--train] [--cold] [--out docs/benchmarks/<name>.md]
    ONEDNN_MAX_CPU_ISA=AVX2 python benchmarks/kernel_choice.py   # what an AVX2 CPU gets

2-D and 3-D ConvTranspose with stride 2, kernels 2, 3 and 4, 16 and 64 input channels,
1-32 output channels, batch 1, f32, NCX; inference (``torch.inference_mode``) or, with
``--train``, forward and backward. The converted layer runs with every call held to
oneDNN (``ONEDNN_GRAPH_TORCH_KERNELS=off``: what the rule is decided from); the two layers
alternate in 7 rounds, and the table gives the median of the per-round ratios
oneDNN/torch.nn (above 1: torch.nn's kernel is faster) with the 2nd-6th spread, and
whether the rule gives the shape to torch.nn.

With ``--cold`` each call is timed alone after a neighbour's work, as a layer runs in a
model: a torch.nn convolution of the layer's rank over a 1-4 MB activation (the work of
the op before it, which leaves the caches holding its data, not the layer's code and
tensors); 1-D layers (256 and 512 positions) join the 2-D and 3-D ones.
"""

from __future__ import annotations

import argparse
import copy
import itertools
import os
import platform
import statistics
import time
from typing import Callable

os.environ["ONEDNN_GRAPH_TORCH_KERNELS"] = "off"  # measure oneDNN's kernel at every shape

import torch  # noqa: E402

import onednn_graph as og  # noqa: E402
import onednn_graph.torch as ot  # noqa: E402
from onednn_graph.torch import _kernel_choice  # noqa: E402

GEOMETRIES = [(3, 2, 1, 1), (2, 2, 0, 0), (4, 2, 1, 0)]  # kernel, stride, padding, output_padding


def _seconds(fn: Callable[[], None], n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n


def _call(layer: torch.nn.Module, x: torch.Tensor, train: bool) -> Callable[[], None]:
    def inference() -> None:
        with torch.inference_mode():
            layer(x)

    def step() -> None:
        y = layer(x)
        y.backward(torch.ones_like(y))
    return step if train else inference


def _neighbour(nsp: int) -> Callable[[], None]:
    """The work of an op before the layer in a model: a torch.nn convolution of its rank
    (2 MB of input in 1-D, 4 MB in 2-D; in 3-D 1 MB and a 28 MB columns buffer)."""
    conv, shape = ((torch.nn.Conv1d(128, 128, 7, padding=3), (1, 128, 4096)),
                   (torch.nn.Conv2d(64, 64, 3, padding=1), (1, 64, 128, 128)),
                   (torch.nn.Conv3d(8, 8, 3, padding=1), (1, 8, 32, 32, 32)))[nsp - 1]
    x = torch.randn(shape)

    def run() -> None:
        with torch.inference_mode():
            conv(x)
    return run


def _cold_seconds(fn: Callable[[], None], before: Callable[[], None], n: int) -> float:
    """The median time of `fn` over `n` calls, each right after `before` (not timed)."""
    times = []
    for _ in range(n):
        before()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(nsp: int, geometry: tuple, cin: int, cout: int, size: int, train: bool,
            cold: bool = False) -> tuple[float, float, float, float]:
    k, s, p, op = geometry
    cls = (torch.nn.ConvTranspose1d, torch.nn.ConvTranspose2d, torch.nn.ConvTranspose3d)[nsp - 1]
    stock = cls(cin, cout, k, s, p, output_padding=op)
    ours = ot.convert(copy.deepcopy(stock))
    x = torch.randn((1, cin) + (size,) * nsp, requires_grad=train)
    calls = [_call(stock, x, train), _call(ours, x, train)]
    for fn in calls:
        fn()
        fn()
    neighbour = _neighbour(nsp) if cold else None
    n = 9 if cold else max(1, min(100, int(0.01 / _seconds(calls[0], 2))))
    rounds = []
    for _ in range(7):
        if neighbour is not None:
            theirs = _cold_seconds(calls[0], neighbour, n)
            rounds.append((_cold_seconds(calls[1], neighbour, n) / theirs, theirs))
            continue
        theirs = _seconds(calls[0], n)
        rounds.append((_seconds(calls[1], n) / theirs, theirs))
    rounds.sort()
    return rounds[3][0], rounds[1][0], rounds[5][0], rounds[3][1]


def _onednn() -> str:
    v = og.system.onednn_version()
    return f"{v.major}.{v.minor}.{v.patch}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--train", action="store_true", help="forward and backward")
    parser.add_argument("--cold", action="store_true", help="each call after a neighbour's work, as in a model")
    parser.add_argument("--out")
    args = parser.parse_args()
    torch.set_num_threads(min(2, os.cpu_count() or 1))
    flags = " --train" * args.train + " --cold" * args.cold
    lines = [f"`python benchmarks/kernel_choice.py{flags}` on "
             f"{platform.processor() or platform.machine()} (oneDNN ISA {og.system.cpu_isa()}), "
             f"{torch.get_num_threads()} threads, oneDNN {_onednn()}, PyTorch {torch.__version__}; "
             f"{'forward and backward' if args.train else 'inference'}, f32, batch 1"
             f"{', each call after a neighbour convolution' if args.cold else ''}. "
             "oneDNN/torch.nn: median of 7 per-round ratios (2nd-6th).", "",
             "| layer | input | oneDNN/torch.nn | torch.nn us | rule gives torch.nn |",
             "| --- | --- | --- | --- | --- |"]
    for geometry, cin, cout, nsp, size in itertools.product(GEOMETRIES, [16, 64], [1, 2, 4, 8, 16, 32],
                                                            [3, 2, 1] if args.cold else [3, 2], [8, 16]):
        size = size * (4 if nsp == 2 else 32 if nsp == 1 else 1)
        ratio, low, high, theirs = measure(nsp, geometry, cin, cout, size, args.train, args.cold)
        rule = _kernel_choice.torch_nn_by_default(nsp, (1, cin) + (size,) * nsp,
                                                  (cin, cout) + (geometry[0],) * nsp, (2,) * nsp,
                                                  torch.float32, args.train)
        lines.append(f"| {nsp}-D k{geometry[0]} s{geometry[1]} {cin} -> {cout} | {size}^{nsp} | "
                     f"{ratio:.2f} ({low:.2f}-{high:.2f}) | {theirs * 1e6:.0f} | {'yes' if rule else ''} |")
        print(lines[-1], flush=True)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
