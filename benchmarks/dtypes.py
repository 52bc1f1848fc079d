"""The functional API's time per call of each op in f32, bf16 and f16 on one shape
(4x48x20x20 -> 24 channels, k3 s2 p1, NXC, the `odd-48` shape of
alternative_lowerings.py), and how each ran on this CPU: natively, or in f32
between oneDNN TypeCasts where its oneDNN has no kernel for the dtype, or only
the reference one (onednn_graph._kernels, onednn_graph._as_f32).

    python benchmarks/dtypes.py      # quiet machine, ~10 s
"""

import time

import numpy as np

from alternative_lowerings import HELD_OUT  # this script's directory is on sys.path
import onednn_graph as og
import suite
from onednn_graph._impl import version as _version

CASE = next(c for c in HELD_OUT if c.name == "odd-48")
DTYPES = ("f32", "bf16", "f16")


def main() -> None:
    v = og.onednn_version()
    print(f"Measured on {_version.cpu_model()} (oneDNN ISA {og.cpu_isa()}); oneDNN {v.major}.{v.minor}.{v.patch}, {CASE.name}, NXC; "
          "median ms per call of 7 batches.\n")
    print("| op | f32 ms | bf16 ms | f16 ms | bf16 runs | f16 runs |")
    print("|---|---|---|---|---|---|")
    for kind in suite.OPS:
        ms, how = {}, {}
        for dtype in DTYPES:
            p = suite.problem(CASE, kind, dtype, "NXC")
            call = lambda: p.function(*p.arrays, **p.kwargs, out=p.out)  # noqa: E731
            n = max(1, int(0.05 / max(1e-6, suite._timed(call, 1))))
            samples = []
            for _ in range(7):
                time.sleep(0.01)
                samples.append(suite._timed(call, n))
            ms[dtype] = float(np.median(samples)) * 1e3
            how[dtype] = og.cached_ops()[-1].lowering
        print(f"| {kind} | {ms['f32']:.3f} | {ms['bf16']:.3f} | {ms['f16']:.3f} | {how['bf16']} | "
              f"{how['f16']} |", flush=True)


if __name__ == "__main__":
    main()
