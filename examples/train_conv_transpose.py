"""Train a generator converted to oneDNN's ConvTranspose2d in one call, next to the stock one.

What this shows
    ``onednn_graph.torch.convert(model)``: the same generator (4x4 -> 32x32 RGB, three
    transposed convolutions) is built once with ``torch.nn.ConvTranspose2d`` and
    converted (a copy whose three layers run forward and every gradient on oneDNN:
    ConvTranspose, ConvTransposeBackwardData, ConvTransposeBackwardWeights, the bias's
    sum), and both learn to reproduce a fixed teacher's images with Adam for 300 steps
    on the same batches. It prints both loss curves' largest relative difference and
    each model's median step time, and plots both curves into
    ``train_conv_transpose.png`` (where matplotlib is installed).

Assumptions
    The package is installed (``pip install .``) and so is PyTorch
    (``pip install "onednn-graph[torch]"``); CPU only. ``--steps N`` and
    ``--plot PATH`` change the defaults.

Step times (issue 37)
    ``python examples/train_conv_transpose.py`` on a 2-core AMD EPYC (Zen 4,
    ``og.system.cpu_isa()`` avx512_core_bf16), PyTorch 2.13, median of 300 steps:
    PyTorch 1.86, 2.17 and 2.59 ms, the converted model 1.55, 1.91 and 2.23 ms in three
    runs (0.83-0.88x; the machine's load moved both). Before issue 37 the converted model took 1.10-1.14x PyTorch's time:
    about 40 us of Python per layer call; ``benchmarks/models.py`` has the interleaved
    figures and ``benchmarks/layer_overhead.py`` the Python per call.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import torch

import onednn_graph.torch as ot

STEPS, BATCH, LR = 300, 8, 2e-3
# Both models round f32 sums of up to 32 x 16 products per output in different orders
# (relative error ~1e-6 per layer and step); Adam normalises the steps, so those
# differences do not grow much over 300 steps: the curves stay within 1e-3 (measured:
# about 1e-5 on an AVX2 EPYC, 3.7e-4 on a Zen 4).
TOLERANCE = 1e-3


def generator(layer: Any) -> torch.nn.Sequential:
    """z (N, 16, 4, 4) -> image (N, 3, 32, 32), with transposed convolutions `layer`."""
    return torch.nn.Sequential(
        layer(16, 32, 4, stride=2, padding=1), torch.nn.ReLU(),
        layer(32, 16, 4, stride=2, padding=1), torch.nn.ReLU(),
        layer(16, 3, 4, stride=2, padding=1), torch.nn.Tanh())


def main(steps: int = STEPS, plot: str = "train_conv_transpose.png") -> float:
    torch.manual_seed(0)
    teacher = generator(torch.nn.ConvTranspose2d).requires_grad_(False)
    theirs = generator(torch.nn.ConvTranspose2d)
    ours = ot.convert(theirs)  # a copy on oneDNN: the same start
    models = {"PyTorch": theirs, "oneDNN": ours}
    optimizers = {name: torch.optim.Adam(m.parameters(), lr=LR) for name, m in models.items()}
    losses: dict[str, list[float]] = {name: [] for name in models}
    times: dict[str, list[float]] = {name: [] for name in models}
    for step in range(steps):
        z = torch.randn(BATCH, 16, 4, 4)
        target = teacher(z)
        for name, model in models.items():
            start = time.perf_counter()
            optimizers[name].zero_grad()
            loss = torch.nn.functional.mse_loss(model(z), target)
            loss.backward()
            optimizers[name].step()
            times[name].append(time.perf_counter() - start)
            losses[name].append(loss.item())
    worst = max(abs(a - b) / abs(a) for a, b in zip(losses["PyTorch"], losses["oneDNN"]))
    print(f"{steps} steps: loss {losses['PyTorch'][0]:.4f} -> {losses['PyTorch'][-1]:.4f} (PyTorch), "
          f"{losses['oneDNN'][0]:.4f} -> {losses['oneDNN'][-1]:.4f} (oneDNN)")
    print(f"max relative loss difference {worst:.2e} (tolerance {TOLERANCE:g})")
    for name in models:
        print(f"median step time ({name}): {statistics.median(times[name]) * 1e3:.2f} ms")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot")
    else:
        fig, ax = plt.subplots(figsize=(6, 3.5))
        for name, style in (("PyTorch", "-"), ("oneDNN", "--")):
            ax.plot(losses[name], style, label=f"{name} ConvTranspose2d")
        ax.set(xlabel="step", ylabel="MSE loss", yscale="log",
               title="Generator training: oneDNN layers vs PyTorch's (same seed)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(plot, dpi=100)
        print(f"wrote {plot}")
    assert worst < TOLERANCE, f"loss curves diverge: {worst:.2e}"
    return worst


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--plot", default="train_conv_transpose.png")
    args = parser.parse_args()
    main(args.steps, args.plot)
