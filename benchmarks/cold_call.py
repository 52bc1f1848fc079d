"""What a converted layer's eval call costs right after a neighbour's work, and how much of
it is the package's Python before the native call.

In a model a layer runs after other ops, whose code and data leave the caches cold for
it (docs/benchmarks/zen4-kernel-choice.md, "In a model"). Each round times, each call
right after a torch.nn convolution of the layer's rank (``kernel_choice._neighbour``):
torch.nn's layer, the converted layer (plain ``convert``, eval, ``inference_mode``), and
that layer's packed call alone (its result, NumPy views and native call: the package's
internals, reached on purpose) as the forward of a module of its own, so that both pay
``Module.__call__``. The converted layer minus its packed call is the package's Python
before the native call: mode and tracing checks, the call's key, the weights' versions.
oneDNN computes the layer here whatever the default rule says
(``ONEDNN_GRAPH_TORCH_KERNELS=off``, set by this script).

    python benchmarks/cold_call.py            # the 3-D U-Net's layer 96 -> 16 at 4^3
    python benchmarks/cold_call.py --rounds 30
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

os.environ["ONEDNN_GRAPH_TORCH_KERNELS"] = "off"  # before the package reads it

import torch  # noqa: E402

import onednn_graph as og  # noqa: E402
import onednn_graph.torch as ot  # noqa: E402
from onednn_graph.torch import _inference  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_choice import _cold_seconds, _neighbour, _onednn  # noqa: E402


class _PackedAlone(torch.nn.Module):
    """A module whose forward is a converted layer's packed call, nothing checked."""

    def __init__(self, packed: object) -> None:
        super().__init__()
        self.packed = packed

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.packed.run(x)  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=20, help="interleaved rounds (median taken)")
    parser.add_argument("--calls", type=int, default=30, help="calls per round (median taken)")
    args = parser.parse_args()
    torch.manual_seed(0)
    stock = torch.nn.ConvTranspose3d(96, 16, 3, stride=2, padding=1, output_padding=1).eval()
    converted = ot.convert(torch.nn.ConvTranspose3d(96, 16, 3, stride=2, padding=1, output_padding=1)).eval()
    x = torch.randn(1, 96, 4, 4, 4)
    neighbour = _neighbour(3)
    with torch.inference_mode():
        for _ in range(3):  # the second call in a row packs the weights
            stock(x), converted(x)
        packed = _PackedAlone(_inference._kept(_inference._packed, converted))
        calls = {"torch.nn": lambda: stock(x), "converted": lambda: converted(x),
                 "packed call alone": lambda: packed(x)}
        times: dict[str, list[float]] = {k: [] for k in calls}
        for _ in range(args.rounds):
            for name, call in calls.items():
                times[name].append(_cold_seconds(call, neighbour, args.calls) * 1e6)
    print(f"ConvTranspose3d(96, 16, 3, stride 2) on (1, 96, 4, 4, 4), f32, eval, each call after a "
          f"Conv3d; oneDNN {_onednn()} (ISA {og.system.cpu_isa()}), PyTorch {torch.__version__}, "
          f"{torch.get_num_threads()} threads; medians of {args.rounds} interleaved rounds of "
          f"{args.calls} calls, us")
    for name, values in times.items():
        print(f"  {name:18s} {statistics.median(values):7.1f}")
    python = [c - p for c, p in zip(times["converted"], times["packed call alone"])]
    print(f"  Python before the native call (converted - packed, per round): {statistics.median(python):.1f} "
          f"({min(python):.1f}-{max(python):.1f})")


if __name__ == "__main__":
    main()
