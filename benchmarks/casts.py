"""The f32 chain's conversions: oneDNN's own TypeCast (a one-op partition, whichever
reorder the linked oneDNN runs for it here) against the package's conversion
(``_core.cast``) and NumPy / ml_dtypes' ``astype``, for each pair and a range of sizes,
C-contiguous, on oneDNN's thread count.

    python benchmarks/casts.py                       # quiet machine, about 20 s
    ONEDNN_MAX_CPU_ISA=AVX2 python benchmarks/casts.py   # what an AVX2 CPU gets

What it decides: ``_impl.casts`` replaces oneDNN's TypeCast where its reorder is not a
``jit:`` one, and for tensors under ``SMALL_ELEMENTS`` whatever it is.
"""

import sys
import time

import ml_dtypes
import numpy as np

import onednn_graph as og
from onednn_graph import _core
from onednn_graph._impl import compiled as _compiled, version as _version

DTYPES = {"f32": np.dtype(np.float32), "bf16": np.dtype(ml_dtypes.bfloat16), "f16": np.dtype(np.float16)}
PAIRS = [("bf16", "f32"), ("f32", "bf16"), ("f16", "f32"), ("f32", "f16")]
SIZES = [1 << 12, 1 << 16, 1 << 20, 1 << 24]


def best_us(fn, seconds=0.2) -> float:
    fn()
    best, end = float("inf"), time.perf_counter() + seconds
    while time.perf_counter() < end:
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best * 1e6


def typecast(source: str, target: str, n: int):
    a, b = _core.LogicalTensor(0, source, [n]), _core.LogicalTensor(1, target, [n])
    graph = _core.Graph("cpu")
    graph.add_op(_core.Op(0, "TypeCast", [a], [b], {}, "TypeCast"))
    graph.finalize()
    [part] = graph.get_partitions()
    return part.compile([a], [b], _compiled.engine())


def main() -> int:
    v = og.system.onednn_version()
    print(f"`python benchmarks/casts.py` on {_version.cpu_model()}, "
          f"oneDNN ISA `{og.system.cpu_isa()}` "
          f"(package casts: `{_core.cast_path()}`), oneDNN {v.major}.{v.minor}.{v.patch}; "
          "best us per conversion, C-contiguous.\n")
    print("| pair | elements | oneDNN reorder | oneDNN TypeCast us | package us | astype us | oneDNN / package |")
    print("|---|---|---|---|---|---|---|")
    stream = _compiled.stream()
    for source, target in PAIRS:
        for n in SIZES:
            x = np.random.default_rng(0).standard_normal(n).astype(DTYPES[source])
            y = np.empty(n, DTYPES[target])
            compiled = typecast(source, target, n)
            theirs = best_us(lambda: compiled.execute_arrays(stream, [x], [y]))
            ours = best_us(lambda: _core.cast(x, y))
            numpy = best_us(lambda: x.astype(DTYPES[target]))
            print(f"| {source} -> {target} | {n} | {_core.reorder_impl(source, target, [n], [1], [1])} | "
                  f"{theirs:.1f} | {ours:.1f} | {numpy:.1f} | {theirs / ours:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
