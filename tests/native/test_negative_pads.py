"""oneDNN 3.2 handed negative pads as they are, and why the package never does that.

3.2's primitives take ``pads_begin >= 0`` and ``pads_end > -stride``; oneDNN's own CI
runs ConvolutionBackwardData with pads_end -1 (benchdnn's v3.2 conv_bwd_d_2d.json),
and in f32 3.2 computes it right. But within those limits a negative pads_end is not
safe on every kernel: below, 3.2's bf16 backward-data kernel on AVX-512 with bf16
(jit_bf16:avx512_core_bf16) crashes where the pads_end and the convolution's floor
slack leave more than a stride of diff_src past the last kernel window, while the
same problem on a view without those positions (what ``_impl.lowering`` hands it)
runs. So the package keeps cropping (``NativeOp.crop``) for every op and dtype.

oneDNN 3.13 refuses a negative pad when the op is added to the graph (by design), so
there the tests below check that refusal instead, asking the linked library which it is.
"""

import subprocess
import sys

import numpy as np
import pytest

import onednn_graph as og
from onednn_graph import _core
from helpers import NUMPY, assert_call_matches_reference, random

#: Whether the linked oneDNN takes negative pads as 3.2 does (3.13 refuses them).
TAKES_NEGATIVE_PADS = tuple(og.system.onednn_version()[:2]) < (3, 13)

NATIVE = """
import numpy as np, ml_dtypes
from onednn_graph import _core
dt, pads_end, x = {dtype!r}, {pads_end}, {x}
types = {{"f32": np.float32, "bf16": ml_dtypes.bfloat16}}
rng = np.random.default_rng(0)
dy = rng.uniform(-1, 1, (2, 16, 6)).astype(types[dt])
w = rng.uniform(-1, 1, (16, 64, 3)).astype(types[dt])
attrs = dict(strides=[3], pads_begin=[1], pads_end=[pads_end], dilations=[1], groups=1,
             data_format="NCX", weights_format="OIX", auto_pad="None", dst_shape=[2, 64, x])
lts = [_core.LogicalTensor(0, dt, dy.shape), _core.LogicalTensor(1, dt, w.shape)]
out = _core.LogicalTensor(2, dt, (2, 64, x))
g = _core.Graph()
g.add_op(_core.Op(0, "ConvolutionBackwardData", lts, [out], attrs))
g.finalize()
[p] = g.get_partitions()
e = _core.Engine()
cp = p.compile(lts, [out], e)
cp.execute_arrays(_core.Stream(e), [dy, w], [np.zeros((2, 64, x), types[dt])])
print("ran")
"""


def _native_in_a_child(dtype, pads_end, x):
    """Run the 1-D problem natively in a fresh interpreter (it may crash)."""
    return subprocess.run([sys.executable, "-c", NATIVE.format(dtype=dtype, pads_end=pads_end, x=x)],
                          capture_output=True, text=True, timeout=120)


def test_f32_convolution_backward_data_takes_the_v32_files_negative_pads_end(rng):
    # conv_bwd_d_2d.json's geometry (1x1 kernel, strides 2, pads_end -1), smaller.
    dy, w = random(rng, (1, 16, 7, 7), "f32"), random(rng, (16, 8, 1, 1), "f32")
    attrs = dict(strides=[2, 2], pads_begin=[0, 0], pads_end=[-1, -1], dilations=[1, 1], groups=1,
                 data_format="NCX", weights_format="OIX", auto_pad="None", dst_shape=[1, 8, 14, 14])
    lts = [_core.LogicalTensor(0, "f32", dy.shape), _core.LogicalTensor(1, "f32", w.shape)]
    out_lt = _core.LogicalTensor(2, "f32", (1, 8, 14, 14))
    g = _core.Graph()
    if not TAKES_NEGATIVE_PADS:
        with pytest.raises(og.Error, match="invalid_graph_op"):
            g.add_op(_core.Op(0, "ConvolutionBackwardData", lts, [out_lt], attrs))
        return
    g.add_op(_core.Op(0, "ConvolutionBackwardData", lts, [out_lt], attrs))
    g.finalize()
    [p] = g.get_partitions()
    e = og.Engine()
    out = np.full((1, 8, 14, 14), np.nan, np.float32)
    p.compile(lts, [out_lt], e).execute_arrays(og.Stream(e), [dy, w], [out])
    kw = {k: v for k, v in attrs.items() if k != "auto_pad"}
    assert_call_matches_reference("ConvolutionBackwardData", [dy, w], kw, out, "f32")


@pytest.mark.skipif(og.system.cpu_isa() != "avx512_core_bf16",
                    reason="the crash was seen in 3.2's jit_bf16:avx512_core_bf16 kernel (AMD Zen 4)")
def test_bf16_negative_pads_end_past_a_stride_crashes_where_the_view_runs(rng):
    # diff_src 21 = 17 (the full output) + 2 (pads_end -2) + 2 (the floor's slack).
    crashed = _native_in_a_child("bf16", -2, 21)
    if TAKES_NEGATIVE_PADS:
        assert crashed.returncode != 0 and "ran" not in crashed.stdout, \
            "oneDNN now runs it: reconsider handing it negative pads (_impl.lowering)"
        assert "ran" in _native_in_a_child("f32", -2, 21).stdout  # f32's kernel takes it
    else:  # refused, not crashed: the package's crop is all that runs such a problem
        assert crashed.returncode == 1 and "invalid_graph_op" in crashed.stderr, crashed.stderr
    # The same problem without the 2 positions outside every window, as the package runs it.
    assert "ran" in _native_in_a_child("bf16", 0, 19).stdout
    dy, w = random(rng, (2, 16, 6), "bf16"), random(rng, (16, 64, 3), "bf16")
    kw = dict(strides=3, pads_begin=1, pads_end=-2, data_format="NCX", weights_format="OIX",
              dst_shape=(2, 64, 21))
    got = og.convolution_backward_data(dy, w, **kw)
    assert got.dtype == NUMPY["bf16"]
    assert_call_matches_reference("ConvolutionBackwardData", [dy, w], kw, got, "bf16")
    # And through a partition (_impl.spec_op.View).
    lts = [og.LogicalTensor(0, "bf16", dy.shape), og.LogicalTensor(1, "bf16", w.shape)]
    out_lt = og.LogicalTensor(2, "bf16", (2, 64, 21))
    graph = og.Graph()
    graph.add_op(og.Op(0, "ConvolutionBackwardData", lts, [out_lt],
                       dict(kw, strides=[3], pads_begin=[1], pads_end=[-2], dilations=[1],
                            dst_shape=[2, 64, 21])))
    graph.finalize()
    [p] = graph.get_partitions()
    e = og.Engine()
    out = np.full((2, 64, 21), np.nan, NUMPY["bf16"])
    p.compile(lts, [out_lt], e).execute(og.Stream(e), [og.Tensor(lts[0], e, dy), og.Tensor(lts[1], e, w)],
                                        [og.Tensor(out_lt, e, out)])
    assert_call_matches_reference("ConvolutionBackwardData", [dy, w], kw, out, "bf16")
