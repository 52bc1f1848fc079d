"""The Python in front of oneDNN per call of a onednn_graph.torch layer (issue 37).

    python benchmarks/layer_overhead.py [--rounds 15] [--threads 1] [--out docs/benchmarks/<name>.md]

For tiny ``ConvTranspose1d/2d/3d(8, 8, 2, stride=2)`` layers on a (1, 8, 4, ...) input
(oneDNN's work a few microseconds), each of these is timed in interleaved rounds
(the best round's per-call time, as the suite reports; medians beside):

* the layer's forward with autograd recording (input and parameters require grad),
  and under ``torch.no_grad()``;
* ``y.backward(g)`` of that forward (input, weight and bias gradients);
* oneDNN alone: the compiled calls the layer runs (ConvTranspose; the backward's
  ConvTransposeBackwardData, ConvTransposeBackwardWeights and the bias sum), each run
  through its native ``DirectCall`` on preallocated NumPy arrays: oneDNN's execute and
  the package's C++ checks, nothing of Python;
* autograd alone: a do-nothing ``torch.autograd.Function`` taking the same tensors and
  returning preallocated results, forward and backward: the cost of any Python layer's
  autograd node in PyTorch, which no package can avoid;
* ``torch.nn``'s layer, for scale.

"Python in front of oneDNN" is the layer's time minus oneDNN alone minus autograd
alone (the no-grad forward has no autograd node): what the package's Python adds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np
import torch

import onednn_graph as og
import onednn_graph.torch as ot
from onednn_graph._impl import compiled as _compiled, version as _version
from onednn_graph.torch import _channel_sum


class _Null(torch.autograd.Function):
    """Autograd's own cost: a node over the same tensors that computes nothing."""

    @staticmethod
    def forward(ctx, x, w, b, out, grads):  # type: ignore[no-untyped-def]
        ctx.save_for_backward(x, w)
        ctx.grads = grads
        return out

    @staticmethod
    def backward(ctx, g):  # type: ignore[no-untyped-def]
        ctx.saved_tensors
        return (*ctx.grads, None, None)


def _prepared(kind: str):  # type: ignore[no-untyped-def]
    """The cached call of `kind` the layer ran (the cache holds only this layer's)."""
    for prepared in _compiled.CACHE.values():
        if getattr(prepared, "op", None) is not None and prepared.op.kind == kind:
            return prepared
    raise LookupError(kind)


def _timers(nsp: int) -> dict[str, Callable[[], object]]:
    torch.manual_seed(0)
    ours = getattr(ot, f"ConvTranspose{nsp}d")(8, 8, 2, stride=2)
    theirs = getattr(torch.nn, f"ConvTranspose{nsp}d")(8, 8, 2, stride=2)
    x = torch.randn(1, 8, *[4] * nsp, requires_grad=True)
    og.cache.clear_cache()
    y = ours(x)
    g = torch.randn(y.shape)
    y.backward(g, retain_graph=True)  # compiles the backward's calls
    y_theirs = theirs(x)
    stream = _compiled.stream()
    a = [t.detach().numpy() for t in (x, ours.weight, ours.bias, y, g)]
    xv, wv, bv, yv, gv = a
    gx, gw, gb = np.empty(xv.shape, np.float32), np.empty(wv.shape, np.float32), np.empty(8, np.float32)
    fwd, bwd_data, bwd_weights = (_prepared(k).direct for k in (
        "ConvTranspose", "ConvTransposeBackwardData", "ConvTransposeBackwardWeights"))
    bias_sum = _channel_sum._sums[(gv.shape, gv.strides, gv.dtype)]
    out, grads = torch.empty(y.shape), (torch.empty(x.shape), torch.empty(ours.weight.shape),
                                        torch.empty(8))
    y_null = _Null.apply(x, ours.weight, ours.bias, out, grads)

    def no_grad() -> object:
        with torch.no_grad():
            return ours(x)

    return {
        "forward": lambda: ours(x),
        "forward, no grad": no_grad,
        "backward": lambda: y.backward(g, retain_graph=True),
        "oneDNN forward": lambda: fwd.run(stream, (xv, wv, bv), yv),
        "oneDNN backward": lambda: (bwd_data.run(stream, (gv, wv), gx),
                                    bwd_weights.run(stream, (xv, gv), gw), bias_sum(gv, gb)),
        "autograd forward": lambda: _Null.apply(x, ours.weight, ours.bias, out, grads),
        "autograd backward": lambda: y_null.backward(g, retain_graph=True),
        "torch.nn forward": lambda: theirs(x),
        "torch.nn backward": lambda: y_theirs.backward(g, retain_graph=True),
    }


def measure(nsp: int, rounds: int, calls: int) -> dict[str, tuple[float, float]]:
    """(best, median) microseconds per call of each timer, in interleaved rounds."""
    timers = _timers(nsp)
    times: dict[str, list[float]] = {k: [] for k in timers}
    for fn in timers.values():  # warm up
        for _ in range(50):
            fn()
    names = list(timers)
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            fn = timers[name]
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            times[name].append((time.perf_counter() - start) / calls * 1e6)
    return {k: (min(v), statistics.median(v)) for k, v in times.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=500, help="calls per round and timer")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    rows = []
    for nsp in (1, 2, 3):
        t = measure(nsp, args.rounds, args.calls)
        best = {k: v[0] for k, v in t.items()}
        fwd = best["forward"] - best["oneDNN forward"] - best["autograd forward"]
        inf = best["forward, no grad"] - best["oneDNN forward"]
        bwd = best["backward"] - best["oneDNN backward"] - best["autograd backward"]
        rows.append((nsp, best, fwd, inf, bwd))
        print(f"{nsp}d: Python forward {fwd:.1f} us, no grad {inf:.1f} us, backward {bwd:.1f} us",
              file=sys.stderr)
    v = og.system.onednn_version()
    lines = [
        f"`python benchmarks/layer_overhead.py --rounds {args.rounds} --threads {args.threads}` on "
        f"{_version.cpu_model()}, CPU ISA {og.system.cpu_isa()}; oneDNN {v.major}.{v.minor}.{v.patch}, "
        f"PyTorch {torch.__version__}; {args.threads} thread(s); best of {args.rounds} interleaved "
        f"rounds of {args.calls} calls, microseconds per call.",
        "",
        "Layer: `ConvTranspose{1,2,3}d(8, 8, 2, stride=2)` on (1, 8, 4, ...). Python = the "
        "layer's time minus oneDNN alone minus autograd alone (target: 10 us forward, 20 us "
        "backward).",
        "",
        "| layer | forward | no grad | backward | oneDNN fwd / bwd | autograd fwd / bwd | "
        "torch.nn fwd / bwd | **Python fwd** | **Python no grad** | **Python bwd** |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for nsp, b, fwd, inf, bwd in rows:
        lines.append(
            f"| {nsp}-D | {b['forward']:.1f} | {b['forward, no grad']:.1f} | {b['backward']:.1f} | "
            f"{b['oneDNN forward']:.1f} / {b['oneDNN backward']:.1f} | "
            f"{b['autograd forward']:.1f} / {b['autograd backward']:.1f} | "
            f"{b['torch.nn forward']:.1f} / {b['torch.nn backward']:.1f} | **{fwd:.1f}** | "
            f"**{inf:.1f}** | **{bwd:.1f}** |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
