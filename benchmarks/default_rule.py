"""Whole models converted with the default rule of whose kernel runs a call, against the
same models with every call held to oneDNN, each against stock, in one process (issue 46).

    pip install -c benchmarks/constraints.txt ".[models]"
    python benchmarks/default_rule.py [--models gan,encodec] [--rounds 21] [--inference] [--autocast]

The default rule (``onednn_graph/torch/_kernel_choice.py``) gives some calls torch.nn's
kernel where, in a model, it costs less than oneDNN's; a layer timed alone cannot show that
(its caches stay warm), so the rule is decided from whole models: built as
``benchmarks/models.py`` builds them, converted twice (once while
``ONEDNN_GRAPH_TORCH_KERNELS=off`` holds every call to oneDNN: each layer decides on its
first call), run in interleaved rounds of two calls (a training step by default: forward,
mean-square loss, backward, SGD step). Per model: the median of the per-round ratios
against stock, with the middle half of the rounds, and how many layers the rule moved.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import models  # noqa: E402  (the model builders and their runner)
import suite  # noqa: E402  (round_order)
import torch  # noqa: E402

import onednn_graph.torch as ot  # noqa: E402
from onednn_graph.torch import _kernel_choice  # noqa: E402


def measure(build, train: bool, autocast: bool, rounds: int) -> tuple[dict[str, list[float]], int, int]:
    """Milliseconds per call of stock, the rule's conversion and the held one, per round;
    the layers on torch.nn's kernel, of all."""
    stock, inputs, loss = build()
    if not train:
        stock.eval()
    os.environ[_kernel_choice.ENV] = "off"
    try:
        held = models._runner(ot.convert(stock), inputs, loss, train, autocast)
        held()  # decided now, while the environment holds it
    finally:
        del os.environ[_kernel_choice.ENV]
    converted = ot.convert(stock)
    runs = {"stock": models._runner(stock, inputs, loss, train, autocast),
            "rule": models._runner(converted, inputs, loss, train, autocast), "held to oneDNN": held}
    for fn in runs.values():
        for _ in range(3):
            fn()
    rows = ot.report(converted)
    moved = sum(row.runs_on == _kernel_choice.TORCH_NN for row in rows)
    times: dict[str, list[float]] = {k: [] for k in runs}
    names = list(runs)
    for r in range(rounds):
        for name in suite.round_order(names, r):
            start = time.perf_counter()
            for _ in range(2):
                runs[name]()
            times[name].append((time.perf_counter() - start) / 2 * 1e3)
    return times, moved, len(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="gan,encodec,oobleck,hifigan,unet-2d,basic-unet-2d,sam,dpt")
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--inference", action="store_true", help="eval under no_grad, not a training step")
    parser.add_argument("--autocast", action="store_true", help="under torch.autocast(bfloat16)")
    args = parser.parse_args(argv)
    missing: list[str] = []
    print(f"| model | layers on torch.nn's kernel | rule / stock | held to oneDNN / stock |\n"
          f"| --- | --- | --- | --- |")
    for key, title, build in models._available(args.models, missing):
        torch.manual_seed(0)
        times, moved, layers = measure(build, not args.inference, args.autocast, args.rounds)
        cells = []
        for name in ("rule", "held to oneDNN"):
            ratios = sorted(a / b for a, b in zip(times[name], times["stock"]))
            n = len(ratios)
            cells.append(f"{statistics.median(ratios):.3f} ({ratios[n // 4]:.3f}-{ratios[3 * n // 4]:.3f})")
        print(f"| {title} | {moved} of {layers} | {cells[0]} | {cells[1]} |", flush=True)
    for line in missing:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
