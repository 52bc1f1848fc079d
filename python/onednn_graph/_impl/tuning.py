"""``compile_op(..., tune=True)``: run each way of computing a problem and keep
the fastest.

oneDNN 3.2's kernel choice differs between formulations of the same problem:
ConvTransposeBackwardData as a forward Convolution took 0.23-0.34x the native
time for depthwise NXC but up to 1.9x for some NCX f32 problems
(benchmarks/alternative_lowerings.py), and the ratio moved by up to 1.8x between
runs on one machine. So the choice is measured per problem, on the problem's own
arrays, in interleaved rounds; every candidate computes the same numbers within
the package's error bound (tests/api/test_tuning.py).
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Sequence

import numpy as np

from .compiled import CompiledOp

# og.set_tuning(True): the functional API tunes each new problem too (like
# torch.backends.cudnn.benchmark). Off by default: it multiplies a first call's
# cost (unless the tuning database holds the problem), and a problem's result may
# then differ in rounding from an untuned run. ONEDNN_GRAPH_TUNING=1 turns it on
# for a program that does not call set_tuning.
ENV = "ONEDNN_GRAPH_TUNING"
_functional = os.environ.get(ENV, "").strip().lower() not in ("", "0", "off", "false", "no")


def set_tuning(enabled: bool) -> None:
    """Let the functional API measure every lowering of a new problem and keep the
    fastest, as ``compile_op(..., tune=True)`` does (cached calls are unaffected).
    Decisions are kept in the tuning database (``tuning_database()``), so a
    problem is measured once per machine. At import, ``ONEDNN_GRAPH_TUNING=1``
    sets it on.

    Examples
    --------
    >>> import onednn_graph as og
    >>> og.set_tuning(True); og.tuning_enabled()
    True
    >>> og.set_tuning(False)
    """
    global _functional
    if not isinstance(enabled, bool):
        raise TypeError(f"set_tuning takes a bool, got {type(enabled).__name__}")
    _functional = enabled


def tuning_enabled() -> bool:
    """Whether the functional API tunes new problems (``set_tuning``)."""
    return _functional


ROUNDS = 3
SECONDS_PER_ROUND = 0.01  # per candidate; at least one call each


def fastest(ops: Sequence[CompiledOp], inputs: list[np.ndarray],
            target: np.ndarray) -> tuple[CompiledOp, dict[str, float]]:
    """The op of `ops` with the smallest median time on `inputs` writing `target`,
    and every candidate's median seconds per call, by its ``label``."""
    calls = []
    for op in ops:
        op.execute(inputs, target)  # warm-up: first execution (constants, scratchpad)
        start = time.perf_counter()
        op.execute(inputs, target)
        once = time.perf_counter() - start
        calls.append(max(1, min(100, int(SECONDS_PER_ROUND / max(once, 1e-7)))))
    samples: list[list[float]] = [[] for _ in ops]
    for _ in range(ROUNDS):
        for op, n, sample in zip(ops, calls, samples):
            start = time.perf_counter()
            for _ in range(n):
                op.execute(inputs, target)
            sample.append((time.perf_counter() - start) / n)
    medians = [statistics.median(s) for s in samples]
    best = min(range(len(ops)), key=medians.__getitem__)
    return ops[best], {op.label: m for op, m in zip(ops, medians)}
