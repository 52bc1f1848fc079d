"""ConvTranspose with post-ops (onednn_graph.post): fused by oneDNN, checked against
og.reference.post_ops applied to the float64 reference of the op.

The bound. The op's result before the post-ops carries at most the f32 accumulation
error e = terms * 2**-24 * mag (tolerance.py), plus one rounding to the dtype
(2 u |y|) where a chain is split between partitions. A post-op chain f moves that
to at most max |f(y +- e) - f(y)| (each f here is monotonic, or flat, on intervals
this small: evaluated at both ends), and oneDNN's f32 eltwise kernels approximate
the transcendental ones to within 2**-20 relative (their polynomial approximations;
measured: 1.5e-07 for Exp, 8e-06 overall with the op's own error, AVX2); the
result is rounded to the dtype once (2 u |f(y)|).
"""

import numpy as np
import pytest

import onednn_graph as og
from onednn_graph import cli, post
from onednn_graph._impl import compiled as _compiled, fused as _fused
from onednn_graph.tolerance import UNIT_ROUNDOFF, Comparison
from helpers import NUMPY, random

ATTRS = dict(strides=2, pads_begin=1, pads_end=0)
GET_PARTITIONS = og.Graph.get_partitions

UNARY = [post.abs(), post.clamp(-0.5, 0.5), post.elu(0.7), post.exp(), post.gelu(),
         post.hardsigmoid(), post.hardswish(), post.leaky_relu(0.1), post.mish(), post.sigmoid(),
         post.softplus(1.5), post.relu(), post.square(), post.tanh()]


def _check(got, x, w, b, chain, dtype):
    """`got` against the reference chain on the reference op, within the bound above."""
    y = og.reference.conv_transpose(x, w, b, **ATTRS)
    mag = og.reference.conv_transpose(*[np.abs(a.astype(np.float64)) for a in (x, w, b)], **ATTRS)
    terms = x.shape[-1] * 9 + 1
    e = terms * 2.0**-24 * mag + 2 * UNIT_ROUNDOFF[dtype] * np.abs(y)
    ref = og.reference.post_ops(y, chain)
    spread = np.maximum(np.abs(og.reference.post_ops(y - e, chain) - ref),
                        np.abs(og.reference.post_ops(y + e, chain) - ref))
    tol = spread + (2.0**-20 + 2 * UNIT_ROUNDOFF[dtype]) * np.abs(ref) + 1e-30
    result = Comparison(got, ref, tol)
    assert result.ok, str(result)


def _arrays(rng, dtype, scale=0.5):
    x = (random(rng, (2, 4, 5, 8), dtype).astype(np.float64) * scale).astype(NUMPY[dtype])
    w = (random(rng, (3, 3, 4, 8), dtype).astype(np.float64) * scale).astype(NUMPY[dtype])  # XOI
    b = random(rng, (4,), dtype)
    return x, w, b


@pytest.mark.parametrize("p", UNARY, ids=[p.kind for p in UNARY])
def test_each_unary_post_op_is_fused_and_matches_the_reference(rng, p, dtype):
    x, w, b = _arrays(rng, dtype)
    _compiled.CACHE.clear()
    got = og.conv_transpose(x, w, b, **ATTRS, post_ops=[p])
    assert got.dtype == x.dtype
    [fused] = _fused.cached()
    # oneDNN 3.2's convtranspose_post_ops_fusion takes each, in every dtype. 3.13, where
    # it has no kernel for the dtype (bf16/f16 below AVX-512, f16 without AVX512-FP16),
    # returns the op's partition (unsupported: run in f32 between TypeCasts) and the
    # post-op's apart.
    v = og.system.onednn_version()
    split = (v.major, v.minor) >= (3, 13) and fused.runs_in_f32
    assert fused.partitions == (2 if split else 1), (fused, fused.runs_in_f32)
    assert dtype != "f32" or not fused.runs_in_f32
    _check(got, x, w, b, [p], dtype)


@pytest.mark.parametrize("kind", post.BINARY)
def test_each_binary_post_op_with_a_full_or_per_channel_operand(rng, kind, dtype):
    x, w, b = _arrays(rng, dtype)
    shape = og.output_shape("ConvTranspose", [x.shape, w.shape, b.shape], **ATTRS)
    for operand_shape in (shape, (shape[-1],)):  # a skip connection; per channel (NXC)
        operand = (np.abs(random(rng, operand_shape, dtype).astype(np.float64)) + 0.5).astype(NUMPY[dtype])
        chain = [getattr(post, kind.lower())(operand)]
        got = og.conv_transpose(x, w, b, **ATTRS, post_ops=chain)
        _check(got, x, w, b, chain, dtype)


def test_the_decoder_chain_is_one_partition(rng):
    """ConvTranspose + bias + ReLU + skip Add: what a decoder block does, in one partition."""
    x, w, b = _arrays(rng, "f32")
    skip = random(rng, og.output_shape("ConvTranspose", [x.shape, w.shape], **ATTRS), "f32")
    _compiled.CACHE.clear()
    chain = [post.relu(), post.add(skip)]
    got = og.conv_transpose(x, w, b, **ATTRS, post_ops=chain)
    assert [f.partitions for f in _fused.cached()] == [1]
    _check(got, x, w, b, chain, "f32")
    out = np.empty_like(got)
    assert og.conv_transpose(x, w, b, **ATTRS, post_ops=chain, out=out) is out  # cached, in place
    assert len(_fused.cached()) == 1 and np.array_equal(out, got)


def test_log_and_sqrt_after_abs_and_a_four_op_chain(rng):
    x, w, b = _arrays(rng, "f32")
    shape = og.output_shape("ConvTranspose", [x.shape, w.shape], **ATTRS)
    o = (np.abs(random(rng, shape, "f32")) + 0.5).astype(np.float32)
    for chain in ([post.abs(), post.log()], [post.abs(), post.sqrt()],
                  [post.relu(), post.multiply(o), post.subtract(o), post.tanh()]):
        got = og.conv_transpose(x, w, b, **ATTRS, post_ops=chain)
        _check(got, x, w, b, chain, "f32")


def test_a_lowered_op_runs_before_its_post_ops(rng):
    """output_padding >= strides: the op runs on a cropped view (the functional API), and the
    post-ops' own graph takes its result; the bias-filled border gets the post-ops too."""
    x, w, b = _arrays(rng, "f32")
    chain = [post.gelu()]
    attrs = dict(ATTRS, output_padding=2)
    got = og.conv_transpose(x, w, b, **attrs, post_ops=chain)
    ref = og.reference.post_ops(og.reference.conv_transpose(x, w, b, **attrs), chain)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)  # f32, |y| < 10: see _check


@pytest.mark.parametrize("fmt", ["NCX", "NXC"])
@pytest.mark.parametrize("latent", [True, False], ids=["one position", "5 x 8"])
def test_a_strided_bias_with_post_ops(rng, fmt, latent):
    """A bias handed in as a view (every other element of a bigger array) with post-ops,
    where the bias and post-ops run after oneDNN's kernel (stride 1: ``_impl.epilogue_apart``;
    in NCX the bias is read as (C, 1, ...)): the view's step along the channels is the
    bias's own (it was taken as 1: an internal error about "input 1"). f32, |y| < 10, at
    most 100 terms: within 1e-4 (see _check)."""
    # (one position: DCGAN's first layer, 1 x 1 -> 4 x 4, 26 MFLOP: the MatMul by default)
    (n, spatial, o, k) = (16, (1, 1), 512, 4) if latent else (2, (5, 8), 16, 3)
    x = random(rng, (n, 100, *spatial) if fmt == "NCX" else (n, *spatial, 100), "f32")
    w = random(rng, (100, o, k, k), "f32") * 0.1  # IOX
    b = random(rng, (2 * o,), "f32")[::2]
    attrs = dict(strides=1, data_format=fmt, weights_format="IOX")
    chain = [post.relu()]
    got = og.conv_transpose(x, w, b, **attrs, post_ops=chain)
    ref = og.reference.post_ops(og.reference.conv_transpose(x, w, b, **attrs), chain)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
    op = og.compile_op("ConvTranspose", src=x, weights=w, bias=b, **attrs, post_ops=chain)
    np.testing.assert_allclose(op(x, w, b), ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("bad, error, match", [
    (post.relu, TypeError, "post_ops must be a list"),
    ([post.relu], TypeError, r"post_ops\[0\] must be an onednn_graph.post op"),
    ([post.add(np.zeros((3, 3), np.float32))], ValueError, "does not broadcast"),
    ([post.add(np.zeros(4, np.float16))], TypeError, "operand has dtype float16"),
])
def test_bad_post_ops_name_the_entry(rng, bad, error, match):
    x, w, b = _arrays(rng, "f32")
    with pytest.raises(error, match=match):
        og.conv_transpose(x, w, b, **ATTRS, post_ops=bad)


def test_post_op_constructors_check_their_arguments():
    with pytest.raises(ValueError, match="min .* must not exceed max"):
        post.clamp(1, 0)
    with pytest.raises(TypeError, match="alpha must be a number"):
        post.elu("1")
    with pytest.raises(ValueError, match="ReLU takes no operand"):
        post.PostOp("ReLU", operand=np.zeros(1))


def test_the_decoder_chain_matches_pytorchs_eager_sequence(rng):
    """A second truth where PyTorch is installed: conv_transpose2d, bias, ReLU, skip add."""
    torch = pytest.importorskip("torch")
    x, w, b = _arrays(rng, "f32")
    kw = dict(strides=2, pads_begin=1, pads_end=1, output_padding=1, data_format="NCX",
              weights_format="IOX")
    xn, wn = np.ascontiguousarray(x.transpose(0, 3, 1, 2)), np.ascontiguousarray(w.transpose(3, 2, 0, 1))
    y = torch.nn.functional.conv_transpose2d(torch.from_numpy(xn), torch.from_numpy(wn),
                                             torch.from_numpy(b), stride=2, padding=1, output_padding=1)
    skip = random(rng, tuple(y.shape), "f32")
    want = (torch.relu(y) + torch.from_numpy(skip)).numpy()
    got = og.conv_transpose(xn, wn, b, **kw, post_ops=[post.relu(), post.add(skip)])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)  # f32, 72 products: rounding


def test_a_fused_call_is_written_and_replayed_by_the_driver(rng, tmp_path, capsys):
    """The reproducer of a fused call is its graph (the op as called with its bias, then
    the post-ops); onednn-graph run replays it and checks the output against the whole
    graph's reference (graph_reference's bound carried through the chain)."""
    from onednn_graph._tools import runner
    x, w, b = _arrays(rng, "f32")
    skip = random(rng, og.output_shape("ConvTranspose", [x.shape, w.shape], **ATTRS), "f32")
    r = og.reproducer.reproducer(og.conv_transpose, x, w, b, **ATTRS,
                                 post_ops=[post.relu(), post.add(skip)])
    assert [op["kind"] for op in r.spec["graph"]] == ["ConvTranspose", "ReLU", "Add"]
    r.save(tmp_path / "case.json")
    result = runner.run(og.load_graph(tmp_path / "case.json"))
    assert result.passed, [str(c.comparison) for c in result.checks]
    assert [c.kind for c in result.checks] == ["Add"]
    for dt in ("f32", "bf16", "f16"):  # the command, with the dtype changed as benchdnn's --dt does
        # Where this oneDNN has no kernel for the dtype, 3.13 returns the chain op by op
        # (each run in f32 between TypeCasts; 3.2 keeps one partition): benchdnn's count
        # check fails, says so and what to pass, and the values pass with that count.
        low = [a.astype(NUMPY[dt]) for a in (x, w, b, skip)]
        fused = og.compile_op("ConvTranspose", src=low[0], weights=low[1], bias=low[2],
                              **ATTRS, post_ops=[post.relu(), post.add(low[3])])
        v = og.system.onednn_version()
        split = (v.major, v.minor) >= (3, 13) and fused.compute_dtype == np.float32 and dt != "f32"
        argv = ["run", str(tmp_path / "case.json"), "--dt", dt]
        if split:
            assert cli.main(argv) == cli.EXIT_FAIL
            assert "pass --expected-n-partitions=3 to check the values of this split" in \
                capsys.readouterr().out
            argv += ["--expected-n-partitions", "3"]
        assert cli.main(argv) == cli.EXIT_PASS, capsys.readouterr().out


def test_a_split_low_precision_chain_carries_the_convolutions_bound(rng, monkeypatch):
    """A bf16 chain ConvTranspose -> ReLU -> Add split op by op (as oneDNN 3.13 returns it
    where it has no bf16 kernel; here every build is made to, with oneDNN's "debug"
    partition policy) writes each op's result in bf16 between partitions. The driver
    checks the Add against the bound carried from the convolution's f32 terms and
    roundings through the ReLU (graph_reference), which holds; the same result against
    the bound a check of the last partition alone would give (its inputs taken as
    exact: the convolution's terms lost) fails where the skip cancels the convolution."""
    from onednn_graph._tools import graph_reference, runner
    x, w, b = _arrays(rng, "f32")
    skip = random(rng, og.output_shape("ConvTranspose", [x.shape, w.shape], **ATTRS), "f32")
    r = og.reproducer.reproducer(og.conv_transpose, x, w, b, **ATTRS,
                                 post_ops=[post.relu(), post.add(skip)])
    monkeypatch.setattr(og.Graph, "get_partitions",
                        lambda self, policy="fusion": GET_PARTITIONS(self, "debug"))

    def bf16_graph():  # as `onednn-graph run --dt bf16` reads the reproducer's file
        return og.overrides.apply(og.load_graph(r.spec), dt="bf16")

    graph = bf16_graph()
    result = runner.run(graph)
    assert result.partitions == 3
    [check] = result.checks
    terms = runner._call(next(op for op in graph.ops if op.kind == "ConvTranspose")).terms
    assert check.kind == "Add" and check.terms == terms > 0
    assert result.passed, str(check.comparison)
    evaluate = graph_reference.evaluate

    def inputs_as_exact(op, values, bounds, call=None):
        return evaluate(op, values, [np.zeros_like(e) for e in bounds], call)

    monkeypatch.setattr(graph_reference, "evaluate", inputs_as_exact)
    lost = runner.run(bf16_graph())
    assert lost.passed is False, "the split chain passed a bound without the convolution's terms"


def test_the_driver_fails_a_wrong_fused_result(rng, tmp_path, monkeypatch):
    """The graph check can fail: a reference ReLU that is not oneDNN's is caught."""
    from onednn_graph._tools import runner
    x, w, b = _arrays(rng, "f32")
    r = og.reproducer.reproducer(og.conv_transpose, x, w, b, **ATTRS, post_ops=[post.relu()])
    g = og.load_graph(r.spec)
    monkeypatch.setitem(og.reference._UNARY, "ReLU", lambda y, a: np.maximum(y, 0.01))
    result = runner.run(g)
    assert result.passed is False


def test_compile_op_with_post_ops_is_the_fused_call(rng):
    """compile_op(..., post_ops=...) compiles the chain once; called with the inputs and the
    operands, it gives the functional API's result bit for bit, in one partition."""
    x, w, b = _arrays(rng, "f32")
    skip = random(rng, og.output_shape("ConvTranspose", [x.shape, w.shape], **ATTRS), "f32")
    chain = [post.relu(), post.add(skip)]
    op = og.compile_op("ConvTranspose", src=x, weights=w, bias=b, **ATTRS, post_ops=chain)
    assert isinstance(op, og.FusedOperation) and op.partitions == 1
    other = random(rng, skip.shape, "f32")
    want = og.conv_transpose(x, w, b, **ATTRS, post_ops=[post.relu(), post.add(other)])
    out = np.empty_like(want)
    assert op(x, w, b, other, out=out) is out
    np.testing.assert_array_equal(out, want)
    with pytest.raises(TypeError, match="takes 4 arrays"):
        op(x, w, b)
    with pytest.raises(TypeError, match="post_ops and quantize are taken by ConvTranspose, "):
        og.compile_op("ConvTransposeBackwardWeights", src=x, diff_dst=skip, **ATTRS,
                      post_ops=[post.relu()])
    with pytest.raises(TypeError, match="tune is not taken with post_ops"):
        og.compile_op("ConvTranspose", src=x, weights=w, **ATTRS, post_ops=[post.relu()], tune=True)


def test_capabilities_list_what_this_onednn_fuses_and_calls_agree(rng):
    """og.system.capabilities()["fusion"] is asked of oneDNN's fusion policy; every post-op it
    lists as fused gives a one-partition call here (f32), and oneDNN 3.2's pattern takes
    all 23."""
    fusion = og.system.capabilities()["fusion"]["ConvTranspose"]
    assert sorted(fusion["fused"] + fusion["apart"]) == sorted(post.UNARY + post.BINARY)
    if tuple(og.system.onednn_version()[:2]) == (3, 2):
        assert fusion["apart"] == []
    x, w, b = _arrays(rng, "f32")
    shape = og.output_shape("ConvTranspose", [x.shape, w.shape, b.shape], **ATTRS)
    one = np.ones(shape, np.float32)
    for kind in fusion["fused"]:
        p = post.of_kind(kind, one if kind in post.BINARY else None)
        _compiled.CACHE.clear()
        og.conv_transpose(x, w, b, **ATTRS, post_ops=[p])
        assert [f.partitions for f in _fused.cached()] == [1], kind


def test_capabilities_list_each_chain_as_the_patterns_of_this_onednn_say(rng):
    """The int8 chain (Dequantize, ConvTranspose, bias, the post-op, Quantize) and the
    backward-data ops, asked of the fusion policy: oneDNN 3.2's and 3.13's int8 pattern
    takes every post-op, their backward-data ops match single-op patterns only."""
    fusion = og.system.capabilities()["fusion"]
    assert set(fusion) == {"ConvTranspose", "ConvTranspose int8", "ConvTransposeBackwardData",
                           "ConvolutionBackwardData"}
    for chain in fusion.values():
        assert sorted(chain["fused"] + chain["apart"]) == sorted(post.UNARY + post.BINARY)
    if tuple(og.system.onednn_version()[:2]) in ((3, 2), (3, 13)):
        assert fusion["ConvTranspose int8"]["apart"] == []
        assert fusion["ConvTransposeBackwardData"]["fused"] == []
        assert fusion["ConvolutionBackwardData"]["fused"] == []


@pytest.mark.parametrize("kind", ["ConvTransposeBackwardData", "ConvolutionBackwardData"])
def test_the_backward_data_ops_take_post_ops_as_partitions_of_their_own(rng, kind):
    """oneDNN 3.2 (and 3.13) match the backward-data ops with single-op patterns: their
    post-ops (an activation's mask, a gradient added in) run after them as a partition of
    their own; the result is the reference chain's and compile_op says 2 partitions."""
    x, w, b = _arrays(rng, "f32")
    y_shape = og.output_shape("ConvTranspose", [x.shape, w.shape], **ATTRS)
    if kind == "ConvTransposeBackwardData":  # diff_dst of ConvTranspose's result's shape
        fn, ref, kw = og.conv_transpose_backward_data, og.reference.conv_transpose_backward_data, ATTRS
        dy, result_shape = random(rng, y_shape, "f32"), x.shape
    else:  # a convolution's diff_dst of x's shape, its weights XIO = w: ConvTranspose's problem
        fn, ref = og.convolution_backward_data, og.reference.convolution_backward_data
        kw = dict(ATTRS, dst_shape=y_shape)
        dy, result_shape = x, y_shape
    mask = (random(rng, result_shape, "f32") > 0).astype(np.float32)
    extra = random(rng, result_shape, "f32")
    chain = [post.multiply(mask), post.add(extra)]
    got = fn(dy, w, **kw, post_ops=chain)
    # f32: the op's accumulation bound (tolerance.py) on at most 72 products of |values|
    # < 1, then a multiply by 0/1 and an add of |values| < 1: 1e-5 covers both with room.
    np.testing.assert_allclose(got, ref(dy, w, **kw, post_ops=chain), rtol=1e-5, atol=1e-5)
    op = og.compile_op(kind, diff_dst=dy, weights=w, **kw, post_ops=chain)
    assert op.partitions == 2
    np.testing.assert_array_equal(op(dy, w, mask, extra), got)


def test_the_driver_checks_a_graph_with_biasadd_relu_and_add(rng):
    """The issue's graph as a model dump has it: ConvTranspose, BiasAdd (NCX), ReLU and a
    skip Add, every tensor strided: one partition, its output checked (and a Clamp chain)."""
    from onednn_graph._tools import runner
    lt = og.LogicalTensor

    def strided(i, shape):
        return lt(i, "f32", shape, list(np.empty(shape, np.int8).strides))
    y_shape = (1, 2, 11, 11)
    for tail in ("ReLU", "Clamp"):
        x, w, b = strided(0, (1, 4, 5, 5)), strided(1, (4, 2, 3, 3)), strided(2, (2,))
        y, z, r, skip, out = (strided(i, y_shape) for i in (3, 4, 5, 6, 7))
        g = og.Graph()
        g.add_op(og.Op(0, "ConvTranspose", [x, w], [y], {
            "strides": [2, 2], "pads_begin": [0, 0], "pads_end": [0, 0], "dilations": [1, 1],
            "data_format": "NCX", "weights_format": "IOX"}))
        g.add_op(og.Op(1, "BiasAdd", [y, b], [z], {"data_format": "NCX"}))
        g.add_op(og.Op(2, tail, [z], [r], {"min": -0.5, "max": 0.5} if tail == "Clamp" else {}))
        g.add_op(og.Op(3, "Add", [r, skip], [out], {"auto_broadcast": "numpy"}))
        result = runner.run(g)
        assert result.passed and [(c.op_id, c.kind) for c in result.checks] == [(3, "Add")]
        assert len(g.get_partitions()) == 1
