"""``compile_op(..., tune=True)``: run each way of computing a problem and keep
the fastest.

oneDNN 3.2's kernel choice differs between formulations of the same problem:
ConvTransposeBackwardData as a forward Convolution took 0.23-0.34x the native
time for depthwise NXC but up to 1.9x for some NCX f32 problems
(benchmarks/alternative_lowerings.py), and the ratio moved by up to 1.8x between
runs on one machine. So the choice is measured per problem, on the problem's own
arrays, in interleaved rounds; every candidate computes the same numbers within
the package's error bound (tests/api/test_tuning.py).

A busy machine must not decide: a concurrent build once made one formulation read
30 ms against 0.36 ms, and that decision was kept. So samples far over their
candidate's best are thrown out (and rounds added), a formulation replaces the
default only when it wins clearly, side by side, in most rounds, and nothing is
stored when other processes took a share of the CPU while the candidates ran
(``verdict``).
"""

from __future__ import annotations

import contextlib
import statistics
import time
from dataclasses import dataclass
from typing import Any, Iterator, Optional, Sequence

import numpy as np

from . import machine_load as _machine_load

# Under ``recheck()`` (``onednn-graph tune``), a stored decision for a formulation other
# than the default is measured again, all candidates, instead of being trusted: a
# decision that a later measurement finds no faster than the default is replaced.
# Elsewhere a stored decision compiles one formulation and times nothing.
_recheck = False


@contextlib.contextmanager
def recheck() -> Iterator[None]:
    """Within the block, tuning measures again every problem whose stored decision
    chose another formulation than the default (``_call.prepare``)."""
    global _recheck
    saved, _recheck = _recheck, True
    try:
        yield
    finally:
        _recheck = saved


def rechecking() -> bool:
    return _recheck


ROUNDS = 5
#: Rounds added, up to this many in all, where a candidate's samples were thrown out.
MAX_ROUNDS = 12
SECONDS_PER_ROUND = 0.01  # per candidate; at least one call each
#: A sample over this many times its candidate's fastest sample was disturbed (another
#: process, an interrupt, a page fault; interference only ever adds time): thrown out.
OUTLIER = 1.5
#: A candidate beats the default clearly when the median of its per-round ratios to the
#: default (taken side by side: the rounds interleave the candidates) is under
#: 1 - CLEAR_MARGIN and it was faster in at least CLEAR_ROUNDS of the rounds.
CLEAR_MARGIN = 0.03
CLEAR_ROUNDS = 0.8
#: Other processes and the hypervisor (steal) used more than this share of the
#: machine's CPU time while the candidates ran: the machine was busy, and what it
#: measured is not stored. 2 cores and one concurrent compiler: about 0.5.
BUSY_SHARE = 0.15


@dataclass
class Verdict:
    """What tuning measured: the op to run (`op`: the clear winner, else the default),
    every candidate's median seconds per call over its kept samples (`seconds`, by
    label), whether the measurement may be stored (`stored`: the machine was quiet)
    and how it was decided, in words (`why`)."""

    op: Any
    seconds: dict[str, float]
    stored: bool
    why: str


def _timed(op: Any, inputs: list[np.ndarray], target: np.ndarray, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        op.execute(inputs, target)
    return (time.perf_counter() - start) / n


def _kept(sample: Sequence[float]) -> list[Optional[float]]:
    """`sample` with the disturbed values (over ``OUTLIER`` times its fastest) as None."""
    fastest_one = min(sample)
    return [x if x <= OUTLIER * fastest_one else None for x in sample]


def verdict(labels: Sequence[str], samples: Sequence[Sequence[float]],
            others: Optional[float]) -> tuple[Optional[int], dict[str, float], bool, str]:
    """The decision from per-round `samples` (seconds; samples[i][r]: candidate i in
    round r, candidate 0 the default) and the share of CPU time `others` took:
    (index of the clear winner or None, median seconds per label, stored, why)."""
    kept = [_kept(s) for s in samples]
    seconds = {label: statistics.median([x for x in s if x is not None])
               for label, s in zip(labels, kept)}
    if others is not None and others > BUSY_SHARE:
        return None, seconds, False, (f"the machine was busy (other processes took "
                                      f"{others:.0%} of its CPU time): nothing stored, "
                                      f"the default stands")
    best = min(range(len(labels)), key=lambda i: seconds[labels[i]])
    if best == 0:
        return None, seconds, True, "the default was fastest"
    rounds = [(c, d) for c, d in zip(kept[best], kept[0]) if c is not None and d is not None]
    ratios = [c / d for c, d in rounds]
    wins = sum(r < 1 for r in ratios)
    if not ratios or statistics.median(ratios) > 1 - CLEAR_MARGIN or wins < CLEAR_ROUNDS * len(ratios):
        ratio = f"{statistics.median(ratios):.2f}x the default's time" if ratios else "no round"
        return None, seconds, True, (f"no clear winner ({labels[best]}: {ratio}, faster in "
                                     f"{wins} of {len(ratios)} rounds): the default stands")
    return best, seconds, True, (f"{statistics.median(ratios):.2f}x the default's time, faster in "
                                 f"{wins} of {len(ratios)} rounds")


def fastest(ops: Sequence[Any], inputs: list[np.ndarray], target: np.ndarray) -> Verdict:
    """Time `ops` (the default first) on `inputs` writing `target`, in interleaved
    rounds, and decide (``verdict``): rounds are added, up to ``MAX_ROUNDS``, while
    any candidate has fewer than ``ROUNDS`` samples left after outliers."""
    calls = []
    for op in ops:
        op.execute(inputs, target)  # warm-up: first execution (constants, scratchpad)
        once = _timed(op, inputs, target, 1)
        calls.append(max(1, min(100, int(SECONDS_PER_ROUND / max(once, 1e-7)))))
    samples: list[list[float]] = [[] for _ in ops]
    with _machine_load.OthersLoad() as load:
        for done in range(MAX_ROUNDS):
            for op, n, sample in zip(ops, calls, samples):
                sample.append(_timed(op, inputs, target, n))
            if done + 1 >= ROUNDS and all(
                    sum(x is not None for x in _kept(s)) >= ROUNDS for s in samples):
                break
    labels = [op.label for op in ops]
    best, seconds, stored, why = verdict(labels, samples, load.share)
    return Verdict(ops[0] if best is None else ops[best], seconds, stored, why)
