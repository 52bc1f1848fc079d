"""NCX layers on channels-last copies, against the same layers on NCX data: where the default
rule (``onednn_graph.torch._via_nxc.routed``) should route a converted layer's calls.

    python benchmarks/nxc_route.py                 # the shapes below, 9 rounds
    python benchmarks/nxc_route.py --rounds 15

For each f32 ``ConvTranspose2d``/``3d`` (detection and keypoint heads, k == s decoders,
DCGAN and U-Net upsamplers), three calls of a converted layer, each with the route on and
off in one process, interleaved: an inference call in eval under ``no_grad`` (its weights
packed), a training step with the input's gradient (forward, both gradients, the bias
sum), and one without it (a head on inputs that need no gradient). Per call: the median of
the per-round ratios routed / not routed with the lowest and highest round, the time not
routed, and where the default rule routes the layer on this CPU: ``*`` every call, ``+``
only calls with the input's gradient (a forward alone is not routed past
``ROUTED_ALONE_TO_FLOPS``).
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time
from typing import Any, Callable

import torch

import onednn_graph as og
import onednn_graph.torch as ot
from onednn_graph.torch import _eager, _via_nxc

#: (what, batch, input channels, output channels, kernel, stride, pad, spatial input)
LAYERS = [
    ("Mask R-CNN head, 8 RoIs", 8, 256, 256, 2, 2, 0, (14, 14)),
    ("Mask R-CNN head, 32 RoIs", 32, 256, 256, 2, 2, 0, (14, 14)),
    ("Mask R-CNN head, 100 RoIs", 100, 256, 256, 2, 2, 0, (14, 14)),
    ("k == s, 128 channels", 32, 128, 128, 2, 2, 0, (14, 14)),
    ("k == s, 512 -> 256", 32, 512, 256, 2, 2, 0, (14, 14)),
    ("DPT-style k == s == 4", 2, 256, 256, 4, 4, 0, (16, 16)),
    ("Keypoint R-CNN head, 16 RoIs", 16, 512, 17, 4, 2, 1, (14, 14)),
    ("Keypoint R-CNN head, 8 RoIs", 8, 512, 17, 4, 2, 1, (14, 14)),
    ("k4s2, 512 -> 8", 16, 512, 8, 4, 2, 1, (14, 14)),
    ("k4s2, 64 -> 32 at 64 x 64", 4, 64, 32, 4, 2, 1, (64, 64)),
    ("DCGAN 256 -> 128, batch 16", 16, 256, 128, 4, 2, 1, (8, 8)),
    ("DCGAN 128 -> 64, batch 16", 16, 128, 64, 4, 2, 1, (16, 16)),
    ("U-Net k3s2, 128 -> 64", 2, 128, 64, 3, 2, 1, (64, 64)),
    ("3-D k == s, 128 -> 64", 2, 128, 64, 2, 2, 0, (16, 16, 16)),
    ("3-D k == s, 64 -> 32", 1, 64, 32, 2, 2, 0, (16, 16, 16)),
    ("3-D k4s2, 32 -> 16", 1, 32, 16, 4, 2, 1, (16, 16, 16)),
]


def _calls(layer: torch.nn.Module, x: torch.Tensor, gy: torch.Tensor) -> dict[str, Callable[[], Any]]:
    def inference() -> None:
        with torch.no_grad():
            layer(x)

    def training() -> None:
        layer(x.requires_grad_()).backward(gy)

    def weights_only() -> None:
        layer(x.detach()).backward(gy)

    return {"inference (eval)": inference, "training step": training, "training, no input gradient": weights_only}


def _routed_by_default(layer: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> str:
    k, s, p = layer.kernel_size, layer.stride, layer.padding
    attrs = (list(s), list(p), list(p), [0] * len(s), [1] * len(s), 1)
    call = _eager.make_call(attrs, tuple(y.shape), tuple(x.shape), tuple(layer.weight.shape))
    if _via_nxc.routed(call, tuple(layer.weight.shape), alone=True):
        return "*"
    return "+" if _via_nxc.routed(call, tuple(layer.weight.shape)) else " "


def measure(rounds: int) -> list[str]:
    lines = []
    for what, n, c_in, c_out, k, s, p, spatial in LAYERS:
        cls = torch.nn.ConvTranspose2d if len(spatial) == 2 else torch.nn.ConvTranspose3d
        torch.manual_seed(0)
        stock = cls(c_in, c_out, k, s, p)
        x = torch.randn(n, c_in, *spatial)
        with torch.no_grad():
            y = stock(x)
        gy = torch.randn_like(y)
        default = _routed_by_default(stock, x, y)
        flops = 2 * x.numel() * c_out * k ** len(spatial)
        cells = []
        for name in _calls(stock, x, gy):
            layers = {}
            for route in ("0", "1"):  # each layer keeps the route its first call found
                _via_nxc.FORCED = route
                layers[route] = ot.convert(copy.deepcopy(stock)).train(name != "inference (eval)")
                call = _calls(layers[route], x, gy)[name]
                for _ in range(3):
                    call()
            off, on = (_calls(layers[r], x, gy)[name] for r in ("0", "1"))
            ratios, times = [], []
            for _ in range(rounds):
                t0 = time.perf_counter()
                off()
                t1 = time.perf_counter()
                on()
                t2 = time.perf_counter()
                ratios.append((t2 - t1) / (t1 - t0))
                times.append(t1 - t0)
            cells.append(f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f}), "
                         f"{statistics.median(times) * 1e3:.1f} ms")
        lines.append(f"| {default} {what} | {flops / 1e6:.0f} | " + " | ".join(cells) + " |")
        print(lines[-1], flush=True)
    _via_nxc.FORCED = ""
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    print(f"`python benchmarks/nxc_route.py --rounds {args.rounds}` on {og.system.cpu_isa()}, "
          f"{torch.get_num_threads()} threads, oneDNN {og.system.onednn_version()}, PyTorch {torch.__version__}.")
    print("Routed / not routed, median of per-round ratios (lowest-highest round), and the time "
          "not routed; the default rule routes here * every call, + calls with the input's gradient.\n")
    print("| layer | MFLOP | inference (eval) | training step | training, no input gradient |")
    print("| --- | --- | --- | --- | --- |")
    measure(args.rounds)


if __name__ == "__main__":
    main()
