"""A weights gradient whose kernel taps read only padding, in every dtype.

Where a ConvTransposeBackwardWeights call's src reaches its diff_dst with only some kernel
taps (a src of one position per sample, kernel 4, stride 3, pads 1: a 2-wide diff_dst, the
middle taps only), the other taps' gradient is exactly zero (``_kernels.unreached_taps``).
oneDNN 3.2's bf16 kernel never writes them (they hold whatever its memory held, NaN among
it), and in 3-D writes wrong values in the reached taps too. The package runs such a bf16 or
f16 call in f32 between TypeCasts (``_kernels.probed``: a "wrong" kernel), whose f32 kernel is
right: in the functional API, ``compile_op``, the low-level graph and a converted layer.

What the memory holds depends on the process's history, so the calls run in a child whose
fresh allocations glibc fills with the byte 0xFE (``MALLOC_PERTURB_=1``: bf16 -1.7e38):
on oneDNN's bf16 kernel those taps come back as that, every time. Truth: the float64
reference (those taps exactly 0; the others within the dtype's rounding).
"""

import itertools
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from onednn_graph import shapes
from onednn_graph._impl import kernels as _kernels

CT_BW = "ConvTransposeBackwardWeights"

CHILD = r'''
import json, sys
import numpy as np, ml_dtypes
import onednn_graph as og
CASES = json.loads(sys.argv[1])
DTYPES = {"bf16": ml_dtypes.bfloat16, "f16": np.float16, "f32": np.float32}
rng = np.random.default_rng(0)
out = []
for case in CASES:
    dt = DTYPES[case["dtype"]]
    x = rng.uniform(-1, 1, case["src"]).astype(dt)
    dy = rng.uniform(-1, 1, case["diff_dst"]).astype(dt)
    kw = case["attrs"]
    want = og.reference.conv_transpose_backward_weights(
        x.astype(np.float64), dy.astype(np.float64), case["weights"], **kw)
    got = {"functional": og.conv_transpose_backward_weights(x, dy, case["weights"], **kw)}
    op = og.compile_op("ConvTransposeBackwardWeights", src=x, diff_dst=dy, weights_shape=case["weights"], **kw)
    got["compile_op"] = op(x, dy)
    lts = [og.LogicalTensor(0, case["dtype"], x.shape), og.LogicalTensor(1, case["dtype"], dy.shape)]
    w_lt = og.LogicalTensor(2, case["dtype"], case["weights"])
    g = og.Graph()
    graph_attrs = dict(kw, weights_shape=case["weights"], dilations=[1] * (x.ndim - 2))
    g.add_op(og.Op(0, "ConvTransposeBackwardWeights", lts, [w_lt], graph_attrs))
    g.finalize()
    [p] = g.get_partitions()
    engine = og.Engine()
    cp = p.compile(lts, [w_lt], engine)
    dw = np.empty(case["weights"], dt)
    cp.execute(og.Stream(engine), [og.Tensor(lts[0], engine, x), og.Tensor(lts[1], engine, dy)],
               [og.Tensor(w_lt, engine, dw)])
    got["graph"] = dw
    out.append({k: float(np.abs(v.astype(np.float64) - want).max()) for k, v in got.items()}
               | {"largest": float(np.abs(want).max())})
print(json.dumps(out))
'''


def _case(dtype, src, diff_dst, weights, **attrs):
    return {"dtype": dtype, "src": src, "diff_dst": diff_dst, "weights": weights, "attrs": attrs}


NCX = dict(data_format="NCX", weights_format="IOX")
#: Taps cropped by pads (1-D kernel 4 stride 3 pads 1; a 2-D call cropped on one axis, in
#: NXC with XOI weights); and one whose every tap is reached (nothing to zero).
CASES = [_case(dt, *c[:3], **c[3]) for dt in ("bf16", "f16", "f32") for c in (
    ((4, 16, 1), (4, 16, 2), (16, 16, 4), dict(strides=[3], pads_begin=[1], pads_end=[1], **NCX)),
    ((8, 1, 1, 32), (8, 16, 2, 17), (16, 4, 17, 32),
     dict(strides=[7, 3], pads_begin=[0, 1], pads_end=[0, 1], data_format="NXC", weights_format="XOI")),
    ((4, 16, 3), (4, 16, 6), (16, 16, 4), dict(strides=[2], pads_begin=[1], pads_end=[1], **NCX)),
    # 3-D, a middle axis of one position: oneDNN's bf16 kernel got every tap wrong
    ((2, 64, 5, 1, 8), (2, 2, 7, 2, 10), (64, 2, 3, 4, 3),
     dict(strides=[1, 2, 1], pads_begin=[0, 1, 0], pads_end=[0, 1, 0], **NCX)),
)]


def test_the_unreached_taps_are_the_ones_no_src_position_reaches():
    """``unreached_taps`` against its definition, by brute force over small geometries:
    tap t of an axis is unreached where s * i - pads_begin + t * d falls outside the
    diff_dst for every src position i."""
    for x, k, s, d, pb, pe in itertools.product([1, 2, 3], [1, 2, 3, 4, 5], [1, 2, 3, 4], [1, 2],
                                                [0, 1, 2, 3], [0, 1, 2]):
        o = s * (x - 1) + d * (k - 1) + 1 - pb - pe
        if o < 1:
            continue
        shapes_ = [(1, 2, x), (1, 3, o)]
        shapes.plan(CT_BW, shapes_, weights_shape=(2, 3, k), strides=[s], dilations=[d],
                    pads_begin=[pb], pads_end=[pe], **NCX)  # (a valid call)
        attrs = dict(NCX, weights_shape=[2, 3, k], strides=[s], dilations=[d], pads_begin=[pb], pads_end=[pe])
        want = tuple(t for t in range(k) if not any(0 <= s * i - pb + t * d < o for i in range(x)))
        assert _kernels.unreached_taps(attrs, shapes_) == ((want,) if want else ()), (x, k, s, d, pb, pe)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="MALLOC_PERTURB_ is glibc's")
def test_taps_no_product_reaches_are_zeros_in_every_dtype():
    """Functional API, compile_op and the low-level graph, in a child whose fresh memory is
    a non-zero pattern: every result within its dtype's rounding of the reference (one
    rounding of sums of at most 140 products of numbers in [-1, 1) (the 3-D case): 16 *
    2^-8 of the largest for bf16, whose inputs are the reference's too), the unreached taps
    (exactly 0) included."""
    env = dict(os.environ, MALLOC_PERTURB_="1")
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(CASES)], capture_output=True,
                          text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    for case, errors in zip(CASES, json.loads(done.stdout)):
        bound = {"bf16": 2 ** -8, "f16": 2 ** -11, "f32": 2 ** -20}[case["dtype"]] * 16 * max(errors["largest"], 1)
        for path in ("functional", "compile_op", "graph"):
            assert errors[path] <= bound, (case, path, errors)


TORCH_CHILD = r'''
import torch
import onednn_graph.torch as ot
torch.manual_seed(0)
stock = torch.nn.ConvTranspose1d(16, 16, 4, stride=3, padding=1)
layer = ot.convert(torch.nn.Sequential(stock))[0]
x = torch.randn(4, 16, 1)
with torch.autocast("cpu", torch.bfloat16):
    y = layer(x)
y.float().square().sum().backward()
print(float(layer.weight.grad[..., [0, 3]].abs().max()), float(layer.weight.grad.abs().max()))
'''


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="MALLOC_PERTURB_ is glibc's")
def test_a_converted_layers_bf16_weight_gradient_has_them_zero():
    """A converted ``ConvTranspose1d(16, 16, 4, stride=3, padding=1)`` on one position per
    sample under bf16 autocast, held on oneDNN's kernel (``ONEDNN_GRAPH_TORCH_KERNELS=off``):
    its weight gradient's taps 0 and 3 are exactly zero (the layer's backward calls the
    same prepared call)."""
    pytest.importorskip("torch")
    env = dict(os.environ, MALLOC_PERTURB_="1", ONEDNN_GRAPH_TORCH_KERNELS="off")
    done = subprocess.run([sys.executable, "-c", TORCH_CHILD], capture_output=True, text=True, env=env,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    unreached, largest = map(float, done.stdout.split())
    assert unreached == 0.0 and 0 < largest < 1e3, done.stdout
