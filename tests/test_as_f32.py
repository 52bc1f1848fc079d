"""f16 ConvTranspose, ConvTransposeBackwardWeights and ConvolutionBackwardData run
in f32 between oneDNN TypeCasts (_as_f32.F32Chain): oneDNN 3.2 has only its
reference kernel for them in f16 (README, Performance).

Truth: the NumPy reference, with the package's f16 bound (the chain rounds once,
like an f16 kernel that accumulates in f32). Every step is a oneDNN partition:
the tests check that the chain, not the f16 op, ran.
"""

import numpy as np
import pytest

import onednn_graph as og
from onednn_graph import _as_f32, _compiled, _support
from conftest import random

KINDS = ["ConvTranspose", "ConvTransposeBackwardWeights", "ConvolutionBackwardData"]


def _problem(kind, data_format, groups=1, output_padding=0):
    return _support.problem(_support.Case(kind, "f16", data_format=data_format, groups=groups,
                                          output_padding=output_padding))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("data_format", ["NCX", "NXC"])
@pytest.mark.parametrize("groups, output_padding", [(1, 0), (2, 1), ("depthwise", 3)])
def test_f16_runs_in_f32_between_typecasts(kind, data_format, groups, output_padding):
    if kind == "ConvolutionBackwardData" and output_padding:
        output_padding = 0  # ignored there (test_ops)
    p = _problem(kind, data_format, groups, output_padding)
    og.clear_cache()
    got = og.operation._FUNCTIONS[kind][0](*p.args, **p.kwargs)
    [op] = _compiled.CACHE.ops()
    assert isinstance(op, _as_f32.F32Chain) and op.op.dtype == "f32"
    assert op.lowering.endswith("in f32 between TypeCasts (oneDNN 3.2's f16 kernel for it is ref:any)")
    assert got.dtype == np.float16
    result = _support._check(p, got)
    assert result.ok, str(result)


def test_backward_data_keeps_its_f16_kernel():
    """ConvTransposeBackwardData has an optimized f16 kernel in 3.2: no chain."""
    p = _problem("ConvTransposeBackwardData", "NXC")
    og.clear_cache()
    og.conv_transpose_backward_data(*p.args, **p.kwargs)
    [op] = _compiled.CACHE.ops()
    assert isinstance(op, _compiled.CompiledOp) and op.dtype == "f16"


def test_a_chain_writes_a_strided_out_and_refuses_what_it_cannot_take(rng):
    x, w = random(rng, (2, 5, 4, 6), "f16"), random(rng, (3, 3, 4, 6), "f16")  # NXC, XOI
    expected = og.conv_transpose(x.astype(np.float32), w.astype(np.float32), strides=2)
    out = np.full(expected.shape[::-1], np.nan, np.float16).T  # Fortran order
    got = og.conv_transpose(x, w, strides=2, out=out)
    assert got is out
    # The same f32 kernel on the same values, then one rounding to nearest (oneDNN's
    # TypeCast, NumPy's astype): equal.
    np.testing.assert_array_equal(out, expected.astype(np.float16))
    before = out.copy()
    with pytest.raises(ValueError, match="out"):
        og.conv_transpose(x, w, strides=2, out=out[:1])
    with pytest.raises(TypeError, match="weights"):
        og.conv_transpose(x, w.astype(np.float32), strides=2, out=out)
    np.testing.assert_array_equal(out, before)


def test_constant_weights_are_cast_once(rng):
    x, w = random(rng, (1, 4, 4, 3), "f16"), random(rng, (2, 2, 5, 3), "f16")
    op = og.compile_op("ConvTranspose", src=x, weights=w, strides=2, constant_weights=True)
    chain = op._prepared.op
    assert isinstance(chain, _as_f32.F32Chain) and set(chain.op.constants) == {1}
    expected = og.conv_transpose(x, w, strides=2)
    w[...] = 0  # the operation owns its weights
    np.testing.assert_array_equal(op(x), expected)
    assert op.weights.dtype == np.float16 and not op.weights.flags.writeable


def test_the_reproducer_writes_the_chain(rng):
    x, w = random(rng, (1, 4, 4, 3), "f16"), random(rng, (2, 2, 5, 3), "f16")
    r = og.reproducer(og.conv_transpose, x, w, strides=2)
    assert [op["kind"] for op in r.spec["graph"]] == ["ConvTranspose"]
    ops = r.native["graph"]
    assert [op["kind"] for op in ops] == ["TypeCast", "TypeCast", "ConvTranspose", "TypeCast"]
    # Each TypeCast's output feeds the f32 op; the last one writes the f16 result.
    f32_in = [t["id"] for t in ops[2]["inputs"]]
    assert f32_in == [ops[0]["outputs"][0]["id"], ops[1]["outputs"][0]["id"]]
    assert ops[3]["inputs"][0]["id"] == ops[2]["outputs"][0]["id"]
    assert [t["dtype"] for t in ops[2]["inputs"]] == ["f32", "f32"]
    assert ops[3]["outputs"][0]["dtype"] == "f16"
    g = og.load_graph(r.native)
    assert [op.kind for op in g.ops] == ["TypeCast", "TypeCast", "ConvTranspose", "TypeCast"]
    op = og.compile_op("ConvTranspose", src=x, weights=w, strides=2)
    assert og.reproducer(op).native == r.native
