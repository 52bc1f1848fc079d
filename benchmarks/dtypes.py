"""The functional API's time per call of each op in f32, bf16 and f16 on one shape
(4x48x20x20 -> 24 channels, k3 s2 p1, NXC, the `odd-48` shape of
alternative_lowerings.py), and how it ran: f16 ops that oneDNN 3.2 has only a
reference kernel for run in f32 between TypeCasts (onednn_graph._as_f32).

    python benchmarks/dtypes.py      # quiet machine, ~10 s
"""

import time

import numpy as np

from alternative_lowerings import HELD_OUT  # this script's directory is on sys.path
from onednn_graph import _bench, _compiled

CASE = next(c for c in HELD_OUT if c.name == "odd-48")


def main() -> None:
    print("| op | f32 ms | bf16 ms | f16 ms | f16 lowering |")
    print("|---|---|---|---|---|")
    for kind in _bench.OPS:
        ms, how = {}, ""
        for dtype in ("f32", "bf16", "f16"):
            p = _bench.problem(CASE, kind, dtype, "NXC")
            call = lambda: p.function(*p.arrays, **p.kwargs, out=p.out)  # noqa: E731
            n = max(1, int(0.05 / max(1e-6, _bench._timed(call, 1))))
            samples = []
            for _ in range(7):
                time.sleep(0.01)
                samples.append(_bench._timed(call, n))
            ms[dtype] = float(np.median(samples)) * 1e3
            how = _compiled.CACHE.ops()[-1].lowering
        print(f"| {kind} | {ms['f32']:.3f} | {ms['bf16']:.3f} | {ms['f16']:.3f} | {how} |", flush=True)


if __name__ == "__main__":
    main()
