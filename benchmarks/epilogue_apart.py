"""What running a ConvTranspose's epilogue after the kernel costs, where oneDNN 3.2 would
apply it more than once (issue 44, ``_impl.epilogue_apart``).

    python benchmarks/epilogue_apart.py [--rounds 15] [--out docs/benchmarks/<cpu>-epilogue-apart.md]

On real decoder layers with a bias (DCGAN, pix2pix, a 3-D decoder, a k = s head, a U-Net), f32,
NCX and NXC, each with the bias alone and with ReLU + a skip Add after it, three systems
take turns in every round:

* ``one partition``: the op with its epilogue as oneDNN 3.2 fuses it (the raw binding,
  no workaround): the time of a kernel that gets these layers wrong where the probe
  says so;
* ``package``: ``og.conv_transpose(x, w, b[, post_ops=...], out=y)``, which runs the
  epilogue after the kernel there (a BiasAdd in place; the post-ops' partitions);
* ``kernel alone``: the op without bias or post-ops (the floor of any workaround).

Each row gives the median over the rounds of the per-round ratio package / one
partition, with the spread (lowest-highest), and whether the probe finds the kernel
repeating the epilogue (where it does not, the package runs the one partition).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any, Callable

import numpy as np

import onednn_graph as og
from onednn_graph import _core, post
from onednn_graph._impl import compiled as _compiled, epilogue_apart as _apart, version as _version
from onednn_graph._impl.plan import plan_call

# (name, batch, C_in, C_out, spatial, kernel, stride, pads)
LAYERS = [
    ("dcgan-1", 16, 512, 256, (4, 4), 4, 2, 1),
    ("pix2pix-up-2", 1, 1024, 512, (4, 4), 4, 2, 1),
    ("pix2pix-up-4", 1, 1024, 256, (16, 16), 4, 2, 1),
    ("decoder-3d", 1, 256, 128, (8, 8, 8), 4, 2, 1),
    ("head-k4s4", 8, 1024, 256, (7, 7), 4, 4, 0),
    # where oneDNN 3.2 is right (on Zen 4): the package runs the one partition
    ("dcgan-2", 16, 128, 64, (16, 16), 4, 2, 1),
    ("unet-1", 4, 256, 128, (32, 32), 2, 2, 0),
]


def _arrays(layer: tuple, fmt: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
    _, n, ci, co, spatial, k, s, p = layer
    rng = np.random.default_rng(0)
    x_shape = (n, ci) + spatial if fmt == "NCX" else (n,) + spatial + (ci,)
    w_shape = (ci, co) + (k,) * len(spatial) if fmt == "NCX" else (k,) * len(spatial) + (co, ci)
    kw = dict(strides=s, pads_begin=p, pads_end=p, data_format=fmt, weights_format="IOX" if fmt == "NCX" else "XOI")
    return (rng.standard_normal(x_shape, dtype=np.float32), rng.standard_normal(w_shape, dtype=np.float32) * 0.05,
            rng.standard_normal(co).astype(np.float32), kw)


def _one_partition(x: np.ndarray, w: np.ndarray, b: np.ndarray, y: np.ndarray, skip: Any,
                   native: dict[str, Any]) -> Callable[[], None]:
    """The op with its bias (and ReLU + Add of `skip`) as oneDNN fuses it: one partition,
    compiled on the raw binding."""
    def lt(i: int, a: np.ndarray) -> Any:
        return _core.LogicalTensor(i, "f32", a.shape, _compiled.meta(a)[1])
    g = _core.Graph("cpu", "strict")
    ins = [lt(0, x), lt(1, w), lt(2, b)]
    out = lt(10, y)
    if skip is None:
        g.add_op(_core.Op(0, "ConvTranspose", ins, [out], native))
        arrays = [x, w, b]
    else:
        conv, relu = lt(3, y), lt(4, y)
        g.add_op(_core.Op(0, "ConvTranspose", ins, [conv], native))
        g.add_op(_core.Op(1, "ReLU", [conv], [relu], {}))
        g.add_op(_core.Op(2, "Add", [relu, lt(5, skip)], [out], {"auto_broadcast": "numpy"}))
        arrays = [x, w, b, skip]
    g.finalize()
    [p] = g.get_partitions("fusion")
    order = [t.id for t in p.input_ports]
    by_id = dict(zip([0, 1, 2, 5], arrays))
    compiled = p.compile(p.input_ports, p.output_ports, _compiled.engine(), 0)
    stream = _compiled.stream()
    taken = [by_id[i] for i in order]
    return lambda: compiled.execute_arrays(stream, taken, [y])


def _first_calls(rounds: int) -> list[str]:
    """A layer's first call with a bias (from empty caches: the package's and oneDNN's),
    with the probe and with its answer taken as 1 (what a first call cost before it):
    medians of `rounds`, NCX."""
    lines = ["", f"First calls (ms, empty caches, median of {rounds}): the package asks the kernel "
             "where the defect can be (the probe), which costs about one call", "",
             "| layer | with the probe | without | one call |", "|---|---|---|---|"]
    probe = _apart._probe
    for layer in LAYERS:
        x, w, b, kw = _arrays(layer, "NCX")
        seconds: dict[bool, list[float]] = {True: [], False: []}
        for r in range(2 * rounds):
            asked = r % 2 == 0
            _apart._probe = probe if asked else (lambda *a: 1)  # type: ignore[assignment]
            probe.cache_clear()
            og.cache.clear_cache()
            _core.clear_onednn_caches()
            start = time.perf_counter()
            og.conv_transpose(x, w, b, **kw)
            seconds[asked].append(time.perf_counter() - start)
        _apart._probe = probe  # type: ignore[assignment]
        start = time.perf_counter()
        og.conv_transpose(x, w, b, **kw)
        once = time.perf_counter() - start
        lines.append(f"| {layer[0]} | {1e3 * statistics.median(seconds[True]):.1f} | "
                     f"{1e3 * statistics.median(seconds[False]):.1f} | {1e3 * once:.1f} |")
        print(lines[-1], flush=True)
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--out", help="also write the table to this Markdown file")
    args = parser.parse_args(argv)
    threads, _ = _version.onednn_threads()
    v = og.system.onednn_version()
    lines = [f"{_version.cpu_model()}, oneDNN {v.major}.{v.minor}.{v.patch} on {og.system.cpu_isa()}, "
             f"{threads} threads, f32; per-round ratios over {args.rounds} rounds: median (lowest-highest)",
             "", "| layer | format | epilogue | repeated | one partition ms | package ms | kernel alone ms "
             "| package / one partition |", "|---" * 8 + "|"]
    print("\n".join(lines), flush=True)
    ratios = []
    for layer in LAYERS:
        for fmt in ("NCX", "NXC"):
            x, w, b, kw = _arrays(layer, fmt)
            y = og.conv_transpose(x, w, b, **kw)
            attrs = plan_call("ConvTranspose", ("src", "weights", "bias"), [x, w, b], kw).native.attrs
            repeats = _apart.repeats("ConvTranspose", attrs, [x.shape, w.shape], y.shape, ("f32",) * 4, 0)
            for epilogue in ("bias", "bias+ReLU+Add"):
                skip = None if epilogue == "bias" else np.random.default_rng(1).standard_normal(y.shape, dtype=np.float32)
                posts = [] if skip is None else [post.relu(), post.add(skip)]
                out = np.empty_like(y)
                systems = {
                    "one partition": _one_partition(x, w, b, out, skip, attrs),
                    "package": (lambda: og.conv_transpose(x, w, b, out=out, **kw)) if skip is None else
                    (lambda: og.conv_transpose(x, w, b, post_ops=posts, out=out, **kw)),
                    "kernel alone": lambda: og.conv_transpose(x, w, out=out, **kw),
                }
                for call in systems.values():
                    call(), call()
                start = time.perf_counter()
                systems["one partition"]()
                n = max(3, min(200, int(0.05 / max(time.perf_counter() - start, 1e-6))))
                seconds: dict[str, list[float]] = {name: [] for name in systems}
                for r in range(args.rounds):
                    names = list(systems) if r % 2 == 0 else list(reversed(systems))
                    for name in names:
                        start = time.perf_counter()
                        for _ in range(n):
                            systems[name]()
                        seconds[name].append((time.perf_counter() - start) / n)
                per_round = [p / o for p, o in zip(seconds["package"], seconds["one partition"])]
                ratio = statistics.median(per_round)
                ratios.append(ratio)
                line = (f"| {layer[0]} | {fmt} | {epilogue} | {'up to ' + str(repeats) + 'x' if repeats > 1 else 'no'} | "
                        + " | ".join(f"{1e3 * statistics.median(seconds[s]):.3f}" for s in systems)
                        + f" | {ratio:.2f} ({min(per_round):.2f}-{max(per_round):.2f}) |")
                lines.append(line)
                print(line, flush=True)
    summary = f"\n{len(ratios)} rows: package / one partition {min(ratios):.2f}-{max(ratios):.2f}, " \
              f"geometric mean {statistics.geometric_mean(ratios):.2f}"
    lines.append(summary)
    print(summary)
    lines += _first_calls(args.rounds // 3)
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
