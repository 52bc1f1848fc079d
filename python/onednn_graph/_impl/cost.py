"""Size of a problem: each op as the ConvTranspose it is equivalent to.

All four operations compute the products of one ConvTranspose: ConvTranspose
itself, ConvTransposeBackwardData (the ConvTranspose whose src is diff_src),
ConvTransposeBackwardWeights (same src, dst = diff_dst) and
ConvolutionBackwardData (a ConvTranspose of diff_dst producing diff_src). Its
FLOP count follows from that one description (the accumulation length the
tolerances need is ``tolerance.accumulation_terms``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from .. import shapes
from . import registry as _registry


@dataclass(frozen=True)
class Problem:
    """The equivalent ConvTranspose: batch, src/dst channels, groups, kernel, src spatial."""

    n: int
    c_src: int
    c_dst: int
    groups: int
    kernel: tuple[int, ...]
    src_spatial: tuple[int, ...]

    @property
    def flops(self) -> int:
        """2 * N * C_src * (C_dst/groups) * prod(K) * prod(src spatial): one
        multiply and one add per product (benchdnn's convention)."""
        return (2 * self.n * self.c_src * (self.c_dst // self.groups)
                * math.prod(self.kernel) * math.prod(self.src_spatial))


def problem(plan: shapes.Plan, input_shapes: Sequence[Sequence[int]]) -> Problem:
    """The equivalent ConvTranspose of a planned op (``shapes.plan``) on these inputs.

    >>> p = shapes.plan("ConvTranspose", [(1, 4, 5), (4, 3, 2)], data_format="NCX",
    ...                 weights_format="IOX")
    >>> problem(p, [(1, 4, 5), (4, 3, 2)]).flops   # 2 * 1 * 4 * 3 * 2 * 5
    240
    """
    a = plan.attrs
    tensors = [tuple(s) for s in input_shapes] + [tuple(plan.output_shape)]
    src, dst = (tensors[i] for i in _registry.SPECS[a.kind].equivalent)
    fmt = a.data_format
    return Problem(src[0], shapes.data_channels(fmt, src), shapes.data_channels(fmt, dst),
                   a.groups, tuple(plan.kernel), tuple(shapes.data_spatial(fmt, src)))


#: Below this many FLOPs a problem runs on one thread. oneDNN 3.2 opens an
#: OpenMP parallel region on every execution; on the 2-core reference machine,
#: one thread ran the four ops 1.1-4x faster up to 0.5 MFLOP and 2 threads won
#: from 2 MFLOP (the C++ program with OMP_NUM_THREADS=1 and 2, NXC f32,
#: C = 8-128; docs/performance.md). compile_op(..., tune=True) measures both.
SMALL_FLOPS = 1 << 20


def threads(problem: Problem) -> int:
    """OpenMP threads to compile and run `problem` on: 1 for a small one, else 0
    (oneDNN's default: all)."""
    return 1 if problem.flops < SMALL_FLOPS else 0
