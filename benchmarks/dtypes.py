"""Each op's time per call in bf16 and f16 against the same call in f32, on the
suite's cases (suite.CASES: 8 shapes x 4 ops x NCX/NXC), and how each ran on this
CPU: natively, or in f32 between TypeCasts where its oneDNN has no kernel for the
dtype (or only the reference one), with the casts converted by oneDNN or by the
package (onednn_graph._impl.as_f32, _impl.casts).

    python benchmarks/dtypes.py                      # quiet machine, about 3 minutes
    python benchmarks/dtypes.py --cases tiny,unet-2 --out docs/benchmarks/<name>.md
    ONEDNN_MAX_CPU_ISA=AVX2 python benchmarks/dtypes.py   # what an AVX2 CPU gets
    python benchmarks/dtypes.py --own-kernels        # also oneDNN's own bf16/f16 kernels

--own-kernels checks _impl.kernels.faster_in_f32 on this CPU: each configuration is
measured again with that rule off (oneDNN's own optimized bf16/f16 kernel wherever it
has one), beside a second f32 run, and the report gives both forms' ratio to f32.

Times are the best of --rounds batches (about 20 ms each), the dtypes of one
configuration measured in turn within each round, so that their ratio is taken side
by side. The report gives, per low-precision dtype, the median and worst ratio to
f32 and the configurations over 2x (issue 27's goals: median at most 1.25, none over
2, the tiny case within 1.25).
"""

import argparse
import contextlib
import sys
import time

import numpy as np

import onednn_graph as og
import suite
from onednn_graph._impl import kernels as _kernels
from onednn_graph._impl import version as _version

DTYPES = ("f32", "bf16", "f16")


def _how(lowering: str) -> str:
    """A lowering text cut to what this report is about."""
    if "TypeCasts" not in lowering:
        return "native"
    return "f32 chain, " + ("package casts" if "by the package" in lowering else "oneDNN casts")


def _measured(case, kind: str, fmt: str, rounds: int) -> tuple[dict[str, float], dict[str, str]]:
    """One configuration in each dtype: the best ms per call of `rounds` side-by-side
    rounds, and how each ran."""
    calls, how = {}, {}
    for dtype in DTYPES:
        p = suite.problem(case, kind, dtype, fmt)
        calls[dtype] = (lambda p=p: p.function(*p.arrays, **p.kwargs, out=p.out))
        calls[dtype]()
        how[dtype] = _how(og.cache.cached_ops()[-1].lowering)
    counts = {d: max(1, int(0.02 / max(1e-6, suite._timed(f, 1)))) for d, f in calls.items()}
    best = {d: float("inf") for d in DTYPES}
    for _ in range(rounds):
        for d in DTYPES:
            best[d] = min(best[d], suite._timed(calls[d], counts[d]))
    return {d: best[d] * 1e3 for d in DTYPES}, how


@contextlib.contextmanager
def _own_kernels():
    """The faster_in_f32 rule off: oneDNN's own optimized bf16/f16 kernels wherever it
    has them. The call cache is cleared on the way in and out, so that no call keeps
    the other form."""
    saved = dict(_kernels.FASTER_IN_F32)
    _kernels.FASTER_IN_F32.clear()
    og.cache.clear_cache()
    try:
        yield
    finally:
        _kernels.FASTER_IN_F32.update(saved)
        og.cache.clear_cache()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/dtypes.py", description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="", help="comma-separated case names (default all)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", default=None, help="also write the report here")
    parser.add_argument("--own-kernels", action="store_true",
                        help="also measure oneDNN's own bf16/f16 kernels (the faster_in_f32 rule off)")
    args = parser.parse_args(argv)
    wanted = set(filter(None, args.cases.split(",")))
    cases = [c for c in suite.CASES if not wanted or c.name in wanted]
    v = og.system.onednn_version()
    start = time.perf_counter()
    rows = []
    for c in cases:
        for kind in suite.OPS:
            for fmt in suite.FORMATS:
                ms, how = _measured(c, kind, fmt, args.rounds)
                row = dict(case=c.name, kind=kind, format=fmt, ms=ms, how=how)
                if args.own_kernels:
                    with _own_kernels():
                        own_ms, own_how = _measured(c, kind, fmt, args.rounds)
                    row["own"] = {d: own_ms[d] / own_ms["f32"] for d in DTYPES[1:]}
                    row["own_how"] = own_how
                rows.append(row)
                print(f"{c.name} {suite.SHORT[kind]} {fmt}: " + ", ".join(
                    f"{d} {ms[d]:.3f} ms ({how[d]})" for d in DTYPES)
                    + ("; own kernels " + ", ".join(f"{d} {row['own'][d]:.2f}x f32 ({own_how[d]})"
                                                    for d in DTYPES[1:]) if args.own_kernels else ""),
                    file=sys.stderr)
    lines = [f"`python benchmarks/dtypes.py` on {_version.cpu_model()}, 2 threads, oneDNN ISA "
             f"`{og.system.cpu_isa()}` (package casts: `{og._core.cast_path()}`), oneDNN "
             f"{v.major}.{v.minor}.{v.patch}; {len(rows)} configurations in "
             f"{time.perf_counter() - start:.0f} s; best of {args.rounds} side-by-side rounds.", ""]
    for dtype in DTYPES[1:]:
        ratios = [(r["ms"][dtype] / r["ms"]["f32"], r) for r in rows]
        q = [x for x, _ in ratios]
        over = sorted(((x, r) for x, r in ratios if x > 2), key=lambda t: -t[0])
        tiny = [x for x, r in ratios if r["case"] == "tiny"]
        runs = sorted({r["how"][dtype] for r in rows})
        lines.append(f"* {dtype} / f32: median {float(np.median(q)):.2f}, worst {max(q):.2f}, over 2x "
                     f"{len(over)} of {len(q)}" + (" (" + ", ".join(
                         f"{r['case']} {suite.SHORT[r['kind']]} {r['format']} {x:.2f}x" for x, r in over)
                         + ")" if over else "") + (f"; tiny {min(tiny):.2f}-{max(tiny):.2f}" if tiny else "")
                     + f"; runs as: {', '.join(runs)}.")
        if args.own_kernels:
            own = [r["own"][dtype] for r in rows]
            lost = sorted(((r["own"][dtype] / (r["ms"][dtype] / r["ms"]["f32"]), r) for r in rows
                           if r["how"][dtype] != r["own_how"][dtype]), key=lambda t: t[0])
            lines.append(f"  * {dtype} with oneDNN's own kernels (the faster_in_f32 rule off): median "
                         f"{float(np.median(own)):.2f}, worst {max(own):.2f}; where the rule chose the "
                         f"chain ({len(lost)} configurations) own kernel / chain "
                         + (f"{lost[0][0]:.2f}-{lost[-1][0]:.2f}" if lost else "-")
                         + (" (own faster: " + ", ".join(
                             f"{r['case']} {suite.SHORT[r['kind']]} {r['format']} {x:.2f}"
                             for x, r in lost if x < 0.95) + ")" if any(x < 0.95 for x, _ in lost)
                            else "") + ".")
    own_head = " own bf16/f32 | own f16/f32 |" if args.own_kernels else ""
    lines += ["", "| case | op | format | f32 ms | bf16 ms | f16 ms | bf16/f32 | f16/f32 | bf16 runs | "
              "f16 runs |" + own_head, "|" + "---|" * (10 + 2 * args.own_kernels)]
    for r in rows:
        ms = r["ms"]
        own = f" {r['own']['bf16']:.2f} | {r['own']['f16']:.2f} |" if args.own_kernels else ""
        lines.append(f"| {r['case']} | {suite.SHORT[r['kind']]} | {r['format']} | {ms['f32']:.3f} | "
                     f"{ms['bf16']:.3f} | {ms['f16']:.3f} | {ms['bf16'] / ms['f32']:.2f} | "
                     f"{ms['f16'] / ms['f32']:.2f} | {r['how']['bf16']} | {r['how']['f16']} |" + own)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
