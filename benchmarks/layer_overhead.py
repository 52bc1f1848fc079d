"""The Python in front of oneDNN per call of a onednn_graph.torch layer (issue 37).

    python benchmarks/layer_overhead.py [--rounds 15] [--threads 1] [--out docs/benchmarks/<name>.md]

For tiny ``ConvTranspose1d/2d/3d(8, 8, 2, stride=2)`` layers on a (1, 8, 4, ...) input
(oneDNN's work a few microseconds), in interleaved rounds (the best round's per-call
time, as the suite reports):

* ``forward``: ``layer(x)`` with autograd recording (input and parameters require grad),
  and ``no grad`` under ``torch.no_grad()``;
* ``backward``: ``y.backward(g)`` of that forward (input, weight and bias gradients),
  and ``in backward()``: the time inside the layer's autograd ``backward`` alone;
* ``oneDNN``: the time inside the native calls the layer ran (the op; ConvTransposeBackward-
  Data, ConvTransposeBackwardWeights and the bias sum), measured in the same calls
  (oneDNN's execute and the package's C++ checks, in place, caches as the layer leaves
  them);
* ``autograd``: a do-nothing ``torch.autograd.Function`` over the same tensors returning
  preallocated results: the cost of any Python layer's autograd node in PyTorch
  (recording it, and running backward around it), which no package avoids;
* ``module call``: ``torch.nn.Identity()(x)``, what ``torch.nn.Module.__call__`` costs any
  layer (its hooks' bookkeeping), torch.nn's own included;
* ``torch.nn``'s layer, for scale;
* ``as converted``: a layer as ``convert`` leaves it, whose default rule gives calls this
  tiny to torch.nn's kernel (``onednn_graph.torch._kernel_choice``); the layer measured
  above is held to oneDNN (``ONEDNN_GRAPH_TORCH_KERNELS=off`` while its calls decide).

The package's Python in front of oneDNN is, per forward, ``forward - oneDNN - autograd -
module call`` (without autograd: ``no grad - oneDNN - module call``), and per backward
``in backward() - oneDNN``; the
rest of a backward is PyTorch's (``backward - in backward() - autograd``: its engine
around the node, slower beside oneDNN's kernels than beside a node that computes
nothing). The targets: 10 us a forward, 20 us a backward.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import suite  # round_order (the benchmarks' folder is the script's)
import torch

import onednn_graph as og
import onednn_graph.torch as ot
from onednn_graph._impl import version as _version
from onednn_graph.torch import _eager, _kernel_choice, _layer


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


class _Clock:
    """Nanoseconds spent inside wrapped callables, summed."""

    def __init__(self) -> None:
        self.ns = 0

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any) -> Any:
            start = time.perf_counter_ns()
            try:
                return fn(*args)
            finally:
                self.ns += time.perf_counter_ns() - start
        return timed


class _TimedCall:
    """A native call (``DirectCall`` or compiled sum) whose time a clock counts."""

    def __init__(self, call: Any, clock: _Clock) -> None:
        self.call, self.clock = call, clock

    def __call__(self, *args: Any) -> Any:
        start = time.perf_counter_ns()
        try:
            return self.call(*args)
        finally:
            self.clock.ns += time.perf_counter_ns() - start

    def run(self, *args: Any) -> Any:
        start = time.perf_counter_ns()
        try:
            return self.call.run(*args)
        finally:
            self.clock.ns += time.perf_counter_ns() - start


def _per_call(fn: Callable[[], object], clocks: list[_Clock], grad: bool,
              calls: int) -> tuple[float, ...]:
    """Microseconds per call of `fn` (with autograd recording or not), and of each clock's
    share, over `calls` calls."""
    for c in clocks:
        c.ns = 0
    with torch.set_grad_enabled(grad):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        total = (time.perf_counter() - start) / calls * 1e6
    return (total, *(c.ns / calls / 1e3 for c in clocks))


def measure(nsp: int, rounds: int, calls: int) -> dict[str, Any]:
    """Microseconds per call (the best round of each), in interleaved rounds, and the
    converted layer's ratios to torch.nn's (``_converted_ratios``)."""
    torch.manual_seed(0)
    ours = getattr(ot, f"ConvTranspose{nsp}d")(8, 8, 2, stride=2)
    theirs = getattr(torch.nn, f"ConvTranspose{nsp}d")(8, 8, 2, stride=2)
    x = torch.randn(1, 8, *[4] * nsp, requires_grad=True)
    os.environ[_kernel_choice.ENV] = "off"  # this layer's calls on oneDNN
    try:
        y = ours(x)
        with torch.no_grad():
            ours(x)
    finally:
        del os.environ[_kernel_choice.ENV]
    g = torch.randn(y.shape)
    y.backward(g, retain_graph=True)  # compiles the gradients; the layer's runner holds them
    converted = ot.convert(theirs)  # as convert leaves it: the default rule decides
    y_converted = converted(x)
    runner = _layer._plans[id(ours)][1].runner
    fwd_clock, bwd_clock, body_clock = _Clock(), _Clock(), _Clock()
    runner.forward = _TimedCall(runner.forward, fwd_clock)
    for slot in ("backward_data", "backward_weights", "bias_sum"):
        setattr(runner, slot, _TimedCall(getattr(runner, slot), bwd_clock))
    real_backward = _eager._Function.backward
    _eager._Function.backward = staticmethod(body_clock.wrap(real_backward))
    y_theirs = theirs(x)
    out, grads = torch.empty(y.shape), (torch.empty(x.shape), torch.empty(ours.weight.shape),
                                        torch.empty(8))
    y_null = _Null.apply(x, ours.weight, ours.bias, out, grads)

    identity = torch.nn.Identity()
    timers: dict[str, tuple[Callable[[], object], list[_Clock], bool]] = {
        "forward": (lambda: ours(x), [fwd_clock], True),
        "no grad": (lambda: ours(x), [fwd_clock], False),
        "backward": (lambda: y.backward(g, retain_graph=True), [bwd_clock, body_clock], True),
        "autograd forward": (lambda: _Null.apply(x, ours.weight, ours.bias, out, grads), [], True),
        "autograd backward": (lambda: y_null.backward(g, retain_graph=True), [], True),
        "module call": (lambda: identity(x), [], True),
        "torch.nn forward": (lambda: theirs(x), [], True),
        "torch.nn no grad": (lambda: theirs(x), [], False),
        "torch.nn backward": (lambda: y_theirs.backward(g, retain_graph=True), [], True),
        "converted forward": (lambda: converted(x), [], True),
        "converted no grad": (lambda: converted(x), [], False),
        "converted backward": (lambda: y_converted.backward(g, retain_graph=True), [], True),
    }
    best: dict[str, tuple[float, ...]] = {}
    each: dict[str, list[float]] = {name: [] for name in timers}  # every round's time
    try:
        names = list(timers)
        for r in range(rounds + 1):  # the first round warms up
            for name in suite.round_order(names, r - 1):  # (the measured rounds in whole pairs)
                got = _per_call(*timers[name], calls)
                if r:
                    each[name].append(got[0])
                if r and (name not in best or got[0] < best[name][0]):
                    best[name] = got
    finally:
        _eager._Function.backward = real_backward
    return {**_converted_ratios(each), "forward": best["forward"][0], "oneDNN forward": best["forward"][1],
            "no grad": best["no grad"][0], "oneDNN no grad": best["no grad"][1],
            "backward": best["backward"][0], "oneDNN backward": best["backward"][1],
            "in backward()": best["backward"][2],
            **{k: best[k][0] for k in ("autograd forward", "autograd backward", "module call",
                                       "torch.nn forward", "torch.nn no grad", "torch.nn backward",
                                       "converted forward",
                                       "converted no grad", "converted backward")}}


def _converted_ratios(each: dict[str, list[float]]) -> dict[str, tuple[float, float, float]]:
    """The converted layer's time over torch.nn's, per round: (median, lowest, highest) for
    inference (no grad) and a training step (forward + backward)."""
    def spread(ours: list[float], theirs: list[float]) -> tuple[float, float, float]:
        ratios = [a / b for a, b in zip(ours, theirs)]
        return statistics.median(ratios), min(ratios), max(ratios)
    step = [f + b for f, b in zip(each["converted forward"], each["converted backward"])]
    stock_step = [f + b for f, b in zip(each["torch.nn forward"], each["torch.nn backward"])]
    return {"ratio no grad": spread(each["converted no grad"], each["torch.nn no grad"]),
            "ratio step": spread(step, stock_step)}


def _ratio(r: tuple[float, float, float]) -> str:
    return f"**{r[0]:.2f}** ({r[1]:.2f}-{r[2]:.2f})"


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
        python = {"forward": t["forward"] - t["oneDNN forward"] - t["autograd forward"]
                  - t["module call"],
                  "no grad": t["no grad"] - t["oneDNN no grad"] - t["module call"],
                  "backward": t["in backward()"] - t["oneDNN backward"],
                  "engine": t["backward"] - t["in backward()"] - t["autograd backward"]}
        rows.append((nsp, t, python))
        print(f"{nsp}d: Python forward {python['forward']:.1f} us, no grad {python['no grad']:.1f} "
              f"us, backward {python['backward']:.1f} us", file=sys.stderr)
    v = og.system.onednn_version()
    lines = [
        f"`python benchmarks/layer_overhead.py --rounds {args.rounds} --threads {args.threads}` on "
        f"{_version.cpu_model()} (oneDNN ISA {og.system.cpu_isa()}), oneDNN "
        f"{v.major}.{v.minor}.{v.patch}, PyTorch {torch.__version__}, {args.threads} thread(s): "
        f"best of {args.rounds} interleaved rounds of {args.calls} calls, microseconds per call.",
        "",
        "Layer `ConvTranspose{1,2,3}d(8, 8, 2, stride=2)` on (1, 8, 4, ...). **Python** is the "
        "package's: forward - oneDNN - autograd - module call (no grad: - oneDNN - module call), "
        "backward: the time in the "
        "layer's backward() - oneDNN in it. *Engine* is PyTorch's around the node beyond a "
        "do-nothing node's (backward - in backward() - autograd). Targets: 10 us a forward, "
        "20 us a backward.",
        "",
        "| layer | forward (oneDNN) | no grad (oneDNN) | backward (in backward(); oneDNN) | "
        "autograd fwd / bwd | module call | torch.nn fwd / no grad / bwd | **Python fwd** | "
        "**Python no grad** | **Python bwd** | *engine* | as converted fwd / no grad / bwd | "
        "**as converted / torch.nn**: no grad; training step (median of per-round ratios, range) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for nsp, t, p in rows:
        lines.append(
            f"| {nsp}-D | {t['forward']:.1f} ({t['oneDNN forward']:.1f}) | {t['no grad']:.1f} "
            f"({t['oneDNN no grad']:.1f}) | {t['backward']:.1f} ({t['in backward()']:.1f}; "
            f"{t['oneDNN backward']:.1f}) | {t['autograd forward']:.1f} / "
            f"{t['autograd backward']:.1f} | {t['module call']:.1f} | {t['torch.nn forward']:.1f} / "
            f"{t['torch.nn no grad']:.1f} / {t['torch.nn backward']:.1f} | **{p['forward']:.1f}** | **{p['no grad']:.1f}** | "
            f"**{p['backward']:.1f}** | *{p['engine']:.1f}* | {t['converted forward']:.1f} / "
            f"{t['converted no grad']:.1f} / {t['converted backward']:.1f} | "
            f"{_ratio(t['ratio no grad'])}; {_ratio(t['ratio step'])} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
