"""FLOPs are counted once (``_impl.plan.problem``), over the output that is really computed.

Each op's count here is written by hand, in that op's own direction: the
multiply-adds whose two operands are both inside the tensors, times 2. Pads that
crop the output (``pads_end`` 41 keeps 16 of a ConvTranspose's 57 positions) remove
the products that would land in them; issue 31 found the CLI reporting 3x this
CPU's peak because it counted them.
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Iterator

import pytest

from onednn_graph import shapes
from onednn_graph._impl import plan as _plan

CASES = {  # id: (N, C_in, C_out, groups, src spatial, kernel, strides, dilations, pads_begin, pads_end)
    "cropped-1d": (1, 2, 3, 1, (28,), (3,), (2,), (1,), (0,), (41,)),
    "cropped-2d": (2, 2, 2, 1, (9, 7), (3, 2), (2, 1), (1, 1), (3, 0), (9, 1)),
    "grouped-g2": (1, 4, 6, 2, (5, 4), (2, 3), (2, 2), (1, 1), (1, 0), (1, 2)),
    "dilated": (1, 3, 2, 1, (6,), (3,), (1,), (3,), (2,), (4,)),
    "3d": (1, 2, 2, 2, (3, 4, 2), (2, 2, 3), (2, 1, 2), (1, 2, 1), (1, 0, 1), (0, 1, 2)),
}


def positions(spatial: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
    return itertools.product(*(range(v) for v in spatial))


def inside(index: tuple[int, ...], spatial: tuple[int, ...]) -> bool:
    return all(0 <= i < v for i, v in zip(index, spatial))


def geometry(case: tuple[Any, ...]) -> dict[str, Any]:
    n, c_in, c_out, g, x_sp, k, s, d, pb, pe = case
    attrs = dict(strides=s, dilations=d, pads_begin=pb, pads_end=pe, groups=g, data_format="NCX")
    x = (n, c_in, *x_sp)
    w = (c_in, c_out // g, *k)  # IOX for ConvTranspose, OIX for the convolution of y to x
    y = shapes.output_shape("ConvTranspose", [x, w], weights_format="IOX", **attrs)
    return dict(attrs=attrs, x=x, w=w, y=y, x_sp=x_sp, y_sp=y[2:], k=k, s=s, d=d, pb=pb,
                channel_products=n * c_in * (c_out // g))


def hand_count(kind: str, g: dict[str, Any]) -> int:
    """2 * the multiply-adds of `kind` with both operands inside, by walking its loops."""
    s, d, pb, k = g["s"], g["d"], g["pb"], g["k"]

    def dst_of(i: tuple[int, ...], t: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(ii * ss - p + tt * dd for ii, tt, ss, dd, p in zip(i, t, s, d, pb))

    macs = 0
    if kind == "ConvTranspose":  # dst[i*s - pb + t*d] += src[i] * w[t]
        macs = sum(inside(dst_of(i, t), g["y_sp"]) for i in positions(g["x_sp"]) for t in positions(k))
    elif kind == "ConvTransposeBackwardData":  # diff_src[i] += diff_dst[i*s - pb + t*d] * w[t]
        macs = sum(inside(dst_of(i, t), g["y_sp"]) for i in positions(g["x_sp"]) for t in positions(k))
    elif kind == "ConvTransposeBackwardWeights":  # diff_w[t] += src[i] * diff_dst[i*s - pb + t*d]
        macs = sum(inside(dst_of(i, t), g["y_sp"]) for t in positions(k) for i in positions(g["x_sp"]))
    else:  # ConvolutionBackwardData, the convolution y -> x: diff_src[j*s - pb + t*d] += diff_dst[j] * w[t]
        macs = sum(inside(dst_of(j, t), g["y_sp"]) for j in positions(g["x_sp"]) for t in positions(k))
    return 2 * g["channel_products"] * macs


def planned(kind: str, g: dict[str, Any]) -> tuple[shapes.Plan, list[tuple[int, ...]]]:
    a, x, w, y = g["attrs"], g["x"], g["w"], g["y"]
    if kind == "ConvTranspose":
        inputs, extra = [x, w], dict(weights_format="IOX")
    elif kind == "ConvTransposeBackwardData":
        inputs, extra = [y, w], dict(weights_format="IOX")
    elif kind == "ConvTransposeBackwardWeights":
        inputs, extra = [x, y], dict(weights_format="IOX", weights_shape=w)
    else:
        inputs, extra = [x, w], dict(weights_format="OIX", dst_shape=y)
    return shapes.plan(kind, inputs, **a, **extra), inputs


@pytest.mark.parametrize("kind", shapes.KINDS)
@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_flops_match_a_hand_count(kind: str, case: str) -> None:
    g = geometry(CASES[case])
    plan, inputs = planned(kind, g)
    assert _plan.problem(plan, inputs).flops == hand_count(kind, g)


def test_the_issue_crop_counts_16_of_57_positions() -> None:
    """src 28 x 28, 3x3 taps, stride 2: 57 x 57 positions, pads_end 41 keeps 16 x 16."""
    case = (1, 1, 1, 1, (28, 28), (3, 3), (2, 2), (1, 1), (0, 0), (41, 41))
    g = geometry(case)
    assert g["y_sp"] == (16, 16)
    plan, inputs = planned("ConvTranspose", g)
    uncropped = 2 * math.prod((28, 28, 3, 3))
    assert _plan.problem(plan, inputs).flops == hand_count("ConvTranspose", g) < uncropped / 3


def test_one_axis_matches_its_loop_over_many_geometries() -> None:
    """``products_along`` is a closed form (with a shortcut where nothing is cropped,
    negative pads included); here it meets the loop it replaces."""
    for src, dst, k, s, d, pb in itertools.product(range(1, 6), range(1, 12), range(1, 4),
                                                    range(1, 4), range(1, 4), range(-3, 7)):
        loop = sum(0 <= i * s - pb + t * d < dst for i in range(src) for t in range(k))
        assert _plan.products_along(src, dst, k, s, d, pb) == loop, (src, dst, k, s, d, pb)


def test_sizes_near_int64_are_counted_at_once() -> None:
    """The count runs on every call's plan: a kernel of 2**40 taps must not loop."""
    assert _plan.products_along(2**40, 2**41, 2**40, 1, 1, 0) == 2**80
