"""An op's batch in parts against the whole batch at once, side by side.

    OMP_NUM_THREADS=1 python benchmarks/batch_parts.py [--rounds 9] [--out FILE.md]
    OMP_NUM_THREADS=2 python benchmarks/batch_parts.py --any --dtypes f32,bf16 --formats NCX,NXC

For each configuration (the suite's cases and a few memory-bound ones of its own; every
op whose result has the batch axis), the functional call is compiled twice, once as
the package's rule decides (``_impl.batch_parts.op_rows``: the batch in parts where it
pays) and once with the batch at once, and the two are timed in turns, round after
round, in one process: only configurations the rule runs in parts are listed. `--any`
widens the rule to every dtype, data format and oneDNN build and to any FLOPs per byte
(the data it was drawn from). Each row says whether the two results are equal bit for
bit. Run it on a quiet machine, once per thread count (OMP_NUM_THREADS): the rule
sizes parts by the threads a call runs on (one on a busy machine).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any

import numpy as np

import suite

#: Memory-bound problems beside the suite's: depthwise, grouped, few channels.
EXTRA = [
    suite.Case("dw32-n32", 32, 32, 32, (32, 32), 4, 2, 1, groups=32),
    suite.Case("dw128-k3s1", 8, 128, 128, (32, 32), 3, 1, 1, groups=128),
    suite.Case("grp32-256", 8, 256, 256, (16, 16), 4, 2, 1, groups=32),
    suite.Case("dense-16", 8, 16, 16, (64, 64), 4, 2, 1),
    suite.Case("dense-64-32", 8, 64, 32, (32, 32), 4, 2, 1),
    suite.Case("unet-128-n4", 4, 128, 64, (64, 64), 2, 2, 0),
    suite.Case("small-n32", 32, 256, 128, (8, 8), 4, 2, 1),
    suite.Case("dw-1d", 16, 256, 256, (1024,), 8, 4, 2, groups=256),
    suite.Case("dw-3d", 4, 32, 32, (8, 16, 16), 4, 2, 1, groups=32),
]


def _prepared(p: suite.Problem, parts: bool) -> Any:
    """The call of `p` compiled with the rule on (`parts`) or off."""
    import onednn_graph as og
    from onednn_graph._impl import batch_parts, compiled
    og.cache.clear_cache()
    batch_parts.OP_PARTS = parts
    p.function(*p.arrays, **p.kwargs, out=p.out)
    [prepared] = compiled.CACHE.values()
    return prepared


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtypes", default="f32")
    parser.add_argument("--formats", default="NCX")
    parser.add_argument("--cases", default="", help="comma-separated case names (default: all)")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--any", action="store_true",
                        help="parts wherever the budget alone allows (to measure the rule)")
    parser.add_argument("--out", help="also write the table to this Markdown file")
    args = parser.parse_args(argv)
    import onednn_graph as og
    from onednn_graph._impl import batch_parts, lowering, version
    if args.any:
        batch_parts.OP_PARTS_MEASURED = frozenset({(lowering.LINKED, lowering.HOST_ISA)})
        batch_parts.OP_PARTS_DTYPES = ("f32", "bf16", "f16")
        batch_parts.OP_PARTS_FORMATS = ("NCX", "NXC")
        batch_parts.OP_BELOW_FLOPS_PER_BYTE = {1: float("inf"), 2: float("inf")}
    threads, _ = version.onednn_threads()
    v = og.system.onednn_version()
    lines = [f"{version.cpu_model()}, oneDNN {v.major}.{v.minor}.{v.patch} on {og.system.cpu_isa()}, "
             f"{threads} thread{'s' * (threads > 1)}; median of {args.rounds} rounds", "",
             "| case | op | dtype | format | samples per part | FLOPs/byte | whole ms | parts ms "
             "| parts/whole | equal |", "|---" * 10 + "|"]
    print("\n".join(lines), flush=True)
    wanted = set(filter(None, args.cases.split(",")))
    cases = [c for c in suite.CASES + EXTRA if c.name != "tiny" and (not wanted or c.name in wanted)]
    ratios = []
    for c in cases:
        for kind in suite.OPS:
            if kind == "ConvTransposeBackwardWeights":
                continue  # sums over the batch: never in parts
            for dtype in args.dtypes.split(","):
                for fmt in args.formats.split(","):
                    p = suite.problem(c, kind, dtype, fmt)
                    runs = {on: _prepared(p, on) for on in (False, True)}
                    rows = getattr(runs[True].op, "rows", 0)
                    if not rows:
                        continue
                    results = []
                    for on in (False, True):
                        runs[on].run(list(p.arrays), p.out)
                        results.append(p.out.copy())
                    equal = np.array_equal(results[0].view(np.uint8), results[1].view(np.uint8))
                    calls = {on: (lambda r=r: r.run_direct(p.arrays, p.out)) for on, r in runs.items()}
                    once = suite._timed(calls[False], 3)
                    n = max(3, min(500, int(0.04 / max(once, 1e-6))))
                    seconds: dict[bool, list[float]] = {False: [], True: []}
                    for r in range(args.rounds):
                        for on in ((False, True) if r % 2 == 0 else (True, False)):
                            start = time.perf_counter()
                            for _ in range(n):
                                calls[on]()
                            seconds[on].append((time.perf_counter() - start) / n)
                    whole, parts = (statistics.median(seconds[on]) for on in (False, True))
                    data = p.out.itemsize * (p.arrays[0].size + p.out.size)
                    ratios.append(parts / whole)
                    line = (f"| {c.name} | {suite.SHORT[kind]} | {dtype} | {fmt} | {rows} of {c.n} | "
                            f"{suite.flops(p) / data:.1f} | {1e3 * whole:.3f} | {1e3 * parts:.3f} | "
                            f"{parts / whole:.2f} | {'yes' if equal else 'NO'} |")
                    lines.append(line)
                    print(line, flush=True)
    if ratios:
        summary = (f"\n{len(ratios)} configurations: parts/whole {min(ratios):.2f}-{max(ratios):.2f}, "
                   f"geometric mean {statistics.geometric_mean(ratios):.2f}")
        lines.append(summary)
        print(summary)
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
