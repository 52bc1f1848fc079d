"""A training step of the example's generator with oneDNN's layers and with PyTorch's.

    python benchmarks/training_step.py [--batch 32] [--rounds 7] [--out docs/benchmarks/<ISA>-training.md]

The generator of examples/train_conv_transpose.py (three ConvTranspose2d, 4x4 -> 32x32
RGB) built twice from one seed, ``onednn_graph.torch.ConvTranspose2d`` and
``torch.nn.ConvTranspose2d``; one step is forward, MSE loss, backward and an Adam
update. Each of f32 and bf16 (the model and data cast), eager and
``torch.compile``d (inductor; its compilation is outside the timing), in rounds that
take turns: the median step time of each, and oneDNN's over PyTorch's.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
from train_conv_transpose import generator  # noqa: E402

import suite  # noqa: E402

import onednn_graph as og  # noqa: E402
import onednn_graph.torch as ot  # noqa: E402
from onednn_graph._impl import version as _version  # noqa: E402

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}


def stepper(layer: Any, dtype: torch.dtype, compiled: bool, batch: int) -> Callable[[], None]:
    torch.manual_seed(0)
    model = generator(layer).to(dtype)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    z = torch.randn(batch, 16, 4, 4).to(dtype)
    target = torch.randn(batch, 3, 32, 32).to(dtype)
    forward = torch.compile(model) if compiled else model

    def step() -> None:
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(forward(z), target).backward()
        optimizer.step()
    for _ in range(3):  # compiles (torch.compile, oneDNN), warms up
        step()
    return step


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=10, help="steps per round and system")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    rows = []
    for dtype in DTYPES:
        for compiled in (False, True):
            systems = {name: stepper(layer, DTYPES[dtype], compiled, args.batch)
                       for name, layer in (("oneDNN", ot.ConvTranspose2d),
                                           ("PyTorch", torch.nn.ConvTranspose2d))}
            times: dict[str, list[float]] = {name: [] for name in systems}
            for r in range(args.rounds):
                for name in (list(systems) if r % 2 == 0 else list(systems)[::-1]):
                    t0 = time.perf_counter()
                    for _ in range(args.steps):
                        systems[name]()
                    times[name].append((time.perf_counter() - t0) / args.steps)
            ours, theirs = (statistics.median(times[n]) for n in ("oneDNN", "PyTorch"))
            rows.append((dtype, "compiled" if compiled else "eager", ours, theirs))
            print(f"{dtype} {rows[-1][1]}: {ours * 1e3:.2f} / {theirs * 1e3:.2f} ms", file=sys.stderr)
    v = og.system.onednn_version()
    lines = [
        f"`python benchmarks/training_step.py --batch {args.batch} --rounds {args.rounds}` on "
        f"{_version.cpu_model()}, CPU ISA {og.system.cpu_isa()}; "
        f"oneDNN {v.major}.{v.minor}.{v.patch} "
        f"({v.cpu_runtime}), PyTorch {torch.__version__}; {time.perf_counter() - start:.0f} s. "
        f"One training step (forward, MSE, backward, Adam) of the example's generator, batch "
        f"{args.batch}; median of {args.rounds} rounds of {args.steps} steps.",
        "",
        "| dtype | mode | oneDNN layers ms | PyTorch layers ms | ratio |",
        "|---|---|---|---|---|",
        *[f"| {d} | {m} | {a * 1e3:.2f} | {b * 1e3:.2f} | {a / b:.2f} |" for d, m, a, b in rows],
    ]
    return suite.publish("\n".join(lines) + "\n", args.out)


if __name__ == "__main__":
    sys.exit(main())
