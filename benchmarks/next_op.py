"""How long a torch convolution takes right after other work: after nothing, after stock's
ConvTranspose2d, after the converted one, and after controls that run neither (issue 46:
"where a torch op after a converted layer runs slower than after torch.nn's, find out why").

    python benchmarks/next_op.py [--size small|large] [--rounds N]

Each round times one ``Conv2d`` forward (without gradients) on a fixed input right after
each "before" call, in an order balanced over the rounds (``suite.round_order``); the
table gives the median per "before" and its difference from the median after nothing.
The Conv2d reads neither call's result, so a difference is what the earlier call left
behind: in caches, branch predictors, the heap, the threads. The controls separate those: NumPy's FFT and
torch.sort run other code on little data; writing 12 MB moves data and runs little code;
each layer followed by a 2 ms sleep asks whether the difference fades (the sleep
itself costs: OpenMP's waiting thread falls asleep and must be woken).

``small``: ConvTranspose2d(64, 32, 3, stride 2) on (8, 64, 8, 8), then Conv2d(32, 32, 3) on
its output's shape (about 0.25 ms); ``large``: 256 channels in, 14 x 14 (about 8.5 ms).
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Callable

import numpy as np
import suite  # round_order (the benchmarks' folder is the script's)
import torch

import onednn_graph as og
import onednn_graph.torch as ot

SIZES = {"small": (64, 8, 8), "large": (256, 8, 14)}  # in-channels, batch, side


def befores(channels: int, batch: int, side: int) -> tuple[dict[str, Callable[[], object]], torch.Tensor]:
    """The calls a round times the convolution after, and the convolution's input."""
    torch.manual_seed(0)
    stock = torch.nn.ConvTranspose2d(channels, channels // 2, 3, 2, 1, 1)
    converted = ot.convert(torch.nn.Sequential(torch.nn.ConvTranspose2d(channels, channels // 2, 3, 2, 1, 1)))[0]
    converted.load_state_dict(stock.state_dict())
    x = torch.randn(batch, channels, side, side)
    x_array, w_array = x.numpy(), stock.weight.detach().numpy().copy()
    with torch.no_grad():
        y = stock(x)
    square, written = np.random.rand(64, 64), torch.empty(3 << 20)  # 12 MB of float32

    def then_sleep(layer: torch.nn.Module) -> Callable[[], None]:
        def call() -> None:
            layer(x)
            time.sleep(2e-3)
        return call

    calls: dict[str, Callable[[], object]] = {
        "nothing": lambda: None,
        "stock ConvTranspose2d": lambda: stock(x),
        "converted ConvTranspose2d": lambda: converted(x),
        "og.conv_transpose on NumPy arrays": lambda: og.conv_transpose(
            x_array, w_array, strides=[2, 2], pads_begin=[1, 1], pads_end=[1, 1],
            output_padding=[1, 1], data_format="NCX", weights_format="IOX"),
        "stock, then 2 ms asleep": then_sleep(stock),
        "converted, then 2 ms asleep": then_sleep(converted),
        "np.fft.fft2 (64 x 64)": lambda: np.fft.fft2(square),
        "torch.sort (4096 values)": lambda: torch.sort(y.view(-1)[:4096]),
        "writing 12 MB (torch fill_)": lambda: written.fill_(1.0),
    }
    return calls, y


def measure(size: str, rounds: int) -> dict[str, list[float]]:
    """Microseconds of the convolution after each call, per round."""
    calls, y = befores(*SIZES[size])
    conv = torch.nn.Conv2d(y.shape[1], y.shape[1], 3, 1, 1)

    def timed(before: Callable[[], object]) -> float:
        with torch.no_grad():
            before()
            start = time.perf_counter()
            conv(y)
            return (time.perf_counter() - start) * 1e6

    for before in calls.values():  # warm up
        timed(before), timed(before)
    times: dict[str, list[float]] = {name: [] for name in calls}
    names = list(calls)
    for r in range(rounds):
        for name in suite.round_order(names, r):
            times[name].append(timed(calls[name]))
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, help="default: 1000 small, 200 large")
    parser.add_argument("--size", choices=sorted(SIZES), default="small")
    args = parser.parse_args()
    og.system.keep_freed_memory()  # the heap held still: no call returns memory to the system
    rounds = args.rounds or {"small": 1000, "large": 200}[args.size]
    times = measure(args.size, rounds)
    after_nothing = statistics.median(times["nothing"])
    v = og.system.onednn_version()
    print(f"CPU: {og.system.cpu_isa()}, oneDNN {v.major}.{v.minor}.{v.patch}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads; {args.size}, {rounds} rounds\n")
    print("| before the Conv2d | its median (us) | minus after nothing (us) |")
    print("| --- | --- | --- |")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"| {name} | {median:.1f} | {median - after_nothing:+.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
