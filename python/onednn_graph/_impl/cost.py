"""Size of a problem: each op as the ConvTranspose it is equivalent to.

All four operations compute the products of one ConvTranspose: ConvTranspose
itself, ConvTransposeBackwardData (the ConvTranspose whose src is diff_src),
ConvTransposeBackwardWeights (same src, dst = diff_dst) and
ConvolutionBackwardData (a ConvTranspose of diff_dst producing diff_src). Its
FLOP count follows from that one description (the accumulation length the
tolerances need is ``tolerance.accumulation_terms``): it counts the products
whose two operands are both inside the tensors, so products that pads crop
away (a ConvTranspose's ``pads_end`` of 41 keeps 16 of 57 positions) are not
work. The CLI, the benchmarks and the thread and lowering choices use it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from .. import shapes
from . import registry as _registry


def products_along(src: int, dst: int, kernel: int, stride: int, dilation: int,
                   pad_begin: int) -> int:
    """The (src position i, kernel tap t) pairs of one spatial axis of a ConvTranspose
    whose dst position ``i*stride - pad_begin + t*dilation`` lies in ``[0, dst)``:
    the products that reach the output (the others fall in the cropped pads). In
    closed form (``_positions_below``), as sizes may be near 2**63.

    >>> products_along(3, 6, 2, 2, 1, 0)    # stride 2, nothing cropped: 3 * 2
    6
    >>> products_along(3, 4, 2, 2, 1, 1)    # one position cropped at each end
    4
    """
    # For tap t, the i with i*stride < c - t*dilation number clamp(ceil((c - t*d)/s), 0, src):
    # c = dst + pad_begin bounds the end, c = pad_begin the start.
    return (_positions_below(dst + pad_begin, src, kernel, stride, dilation)
            - _positions_below(pad_begin, src, kernel, stride, dilation))


def _positions_below(c: int, src: int, kernel: int, stride: int, dilation: int) -> int:
    """sum over taps t < kernel of clamp(ceil((c - t*dilation) / stride), 0, src)."""
    # Taps before `full` count all src positions, from `empty` on none; between, a floor sum.
    full = min(max(-(((src - 1) * stride - c) // dilation), 0), kernel)  # ceil((c-(src-1)s)/d)
    empty = min(max(-(-c // dilation), 0), kernel)                      # ceil(c/d)
    between = max(empty - full, 0)
    return full * src + _floor_sum(between, stride, -dilation, c + stride - 1 - full * dilation)


def _floor_sum(n: int, m: int, a: int, b: int) -> int:
    """sum_{j < n} floor((a*j + b) / m) for m >= 1, in O(log) steps (the Euclidean-like
    algorithm of AtCoder Library's floor_sum)."""
    total = 0
    if a < 0 or a >= m:
        total += n * (n - 1) // 2 * (a // m)
        a %= m
    if b < 0 or b >= m:
        total += n * (b // m)
        b %= m
    while True:
        if a >= m:
            total += n * (n - 1) // 2 * (a // m)
            a %= m
        if b >= m:
            total += n * (b // m)
            b %= m
        y_max = a * n + b
        if y_max < m:
            return total
        n, b, m, a = y_max // m, y_max % m, a, m


@dataclass(frozen=True)
class Problem:
    """The equivalent ConvTranspose: batch, src/dst channels, groups, kernel, src and
    dst spatial sizes, and the geometry (strides, dilations, pads_begin) that places
    each product in dst."""

    n: int
    c_src: int
    c_dst: int
    groups: int
    kernel: tuple[int, ...]
    src_spatial: tuple[int, ...]
    dst_spatial: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pads_begin: tuple[int, ...]

    @property
    def flops(self) -> int:
        """2 * N * C_src * (C_dst/groups) * the (position, tap) pairs landing inside dst
        (``products_along``, per axis): one multiply and one add per product that is
        computed (benchdnn's convention, on the output that is kept)."""
        pairs = math.prod(products_along(*axis) for axis in zip(
            self.src_spatial, self.dst_spatial, self.kernel, self.strides, self.dilations,
            self.pads_begin))
        return 2 * self.n * self.c_src * (self.c_dst // self.groups) * pairs


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
                   a.groups, tuple(plan.kernel), tuple(shapes.data_spatial(fmt, src)),
                   tuple(shapes.data_spatial(fmt, dst)), tuple(a.strides), tuple(a.dilations),
                   tuple(plan.pads_begin))


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
