"""The int8 form of ConvTranspose (onednn_graph.quant): quantized u8/s8 src and s8
weights, the op, its epilogue and Quantize, fused by oneDNN and checked against
og.reference's quantization arithmetic.

The bound. The reference dequantizes, sums and quantizes in float64. oneDNN sums
the integer products exactly in s32 (the inputs here keep every int8 kernel exact:
weights within [-64, 64], even where src is s8; see fused._WITHOUT_VNNI) and
scales in f32, so its f32 result is within a few f32 roundings of the reference
(_f32_bound) and its quantized result rounds that to the same integer or, where the
value lies within that distance of a rounding boundary, to a neighbour: exact or
within one unit, and the test counts how many are off by one.
"""

import warnings

import numpy as np
import pytest

import onednn_graph as og
from onednn_graph import post, quant
from onednn_graph._impl import compiled as _compiled, fused as _fused

ATTRS = dict(strides=2, pads_begin=1, pads_end=0)
N, H, W, IC, OC, K = 2, 5, 5, 8, 16, 3


def _data(rng, src_dtype="u8", even=False):
    lo, hi = (0, 256) if src_dtype == "u8" else (-128, 128)
    x = rng.integers(lo, hi, (N, H, W, IC)).astype(quant.DTYPES[src_dtype])
    w = rng.integers(-32, 33, (K, K, OC, IC)) * (2 if even else 1)      # XOI, within s7
    b = rng.standard_normal(OC).astype(np.float32)
    return x, w.astype(np.int8), b


def _f32_bound(args, kw, skip):
    """oneDNN sums the integer products exactly in s32; the rest is f32 arithmetic: the
    two scales rounded to f32 and multiplied, the sum scaled, the bias and the skip added
    (ReLU is exact): six roundings, each within 2**-24 of the magnitude the reference
    reaches on absolute values (measured: at most 2 of them on 20 seeds)."""
    mag = og.reference.conv_transpose(*[np.abs(og.reference.dequantize(a)) if isinstance(a, quant.Quantized)
                                        else np.abs(a.astype(np.float64)) for a in args],
                                      **{k: v for k, v in kw.items() if k not in ("post_ops", "quantize")})
    return 6 * 2.0**-24 * (mag + np.abs(skip))


def _check_quantized(got, ref):
    """Exact, or one unit off where the f32 value sits on a rounding boundary (rare)."""
    assert got.dtype == ref.dtype
    off = np.abs(got.astype(np.int64) - ref.astype(np.int64))
    assert off.max() <= 1, off.max()
    assert (off == 1).mean() < 0.01, (off == 1).sum()


@pytest.mark.parametrize("src_dtype", ["u8", "s8"])
@pytest.mark.parametrize("out_dtype", ["u8", "s8"])
@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
def test_int8_conv_transpose_relu_quantize_is_one_partition(rng, src_dtype, out_dtype, per_channel):
    x, w, b = _data(rng, src_dtype, even=src_dtype == "s8")
    zp = 128 if src_dtype == "u8" else 3
    wq = quant.per_channel(w, 0.01 + 0.001 * np.arange(OC), axis=2) if per_channel \
        else quant.per_tensor(w, 0.01)
    args = (quant.per_tensor(x, 0.02, zp), wq, b)
    kw = dict(ATTRS, post_ops=[post.relu()], quantize=quant.to(out_dtype, 0.05, 2))
    _compiled.CACHE.clear()
    got = og.conv_transpose(*args, **kw)
    assert [f.partitions for f in _fused.cached()] == [1]
    _check_quantized(got, og.reference.conv_transpose(*args, **kw))


def test_int8_with_an_f32_result_and_a_skip_add(rng):
    x, w, b = _data(rng)
    args = (quant.per_tensor(x, 0.02, 128), quant.per_tensor(w, 0.01), b)
    shape = og.output_shape("ConvTranspose", [x.shape, w.shape], **ATTRS)
    skip = rng.standard_normal(shape).astype(np.float32)
    kw = dict(ATTRS, post_ops=[post.relu(), post.add(skip)])
    got = og.conv_transpose(*args, **kw)
    ref = og.reference.conv_transpose(*args, **kw)
    assert got.dtype == np.float32
    assert np.all(np.abs(got - ref) <= _f32_bound(args, kw, skip) + 1e-30)


@pytest.mark.parametrize("skip_dtype, out_dtype", [("u8", "u8"), ("s8", "s8"), ("u8", "s8"), ("s8", "u8")])
def test_a_quantized_skip_connection(rng, skip_dtype, out_dtype):
    """A skip add of quantized data (Dequantize in the graph). oneDNN 3.2 fuses it as a sum
    post-op that reads the skip as the result's dtype, wrong where they differ (off by up
    to 77 when measured); the package dequantizes such a skip apart, and the result is
    right in all four pairings."""
    x, w, b = _data(rng)
    shape = og.output_shape("ConvTranspose", [x.shape, w.shape], **ATTRS)
    lo, hi = (0, 256) if skip_dtype == "u8" else (-128, 128)
    skip = quant.per_tensor(rng.integers(lo, hi, shape).astype(quant.DTYPES[skip_dtype]), 0.03, 5)
    args = (quant.per_tensor(x, 0.02, 128), quant.per_tensor(w, 0.01), b)
    kw = dict(ATTRS, post_ops=[post.add(skip)], quantize=quant.to(out_dtype, 0.05, 3))
    _check_quantized(og.conv_transpose(*args, **kw), og.reference.conv_transpose(*args, **kw))


def test_the_int8_replay_and_reproducer(rng, tmp_path):
    """A reproducer writes the fused int8 graph; the driver replays it and checks its output
    against the graph's reference."""
    from onednn_graph._tools import runner
    x, w, b = _data(rng)
    args = (quant.per_tensor(x, 0.02, 128), quant.per_channel(w, 0.01 + 0.001 * np.arange(OC), axis=2), b)
    r = og.reproducer.reproducer(og.conv_transpose, *args, **ATTRS, post_ops=[post.relu()],
                      quantize=quant.to("u8", 0.05, 3))
    kinds = [op["kind"] for op in r.spec["graph"]]
    assert kinds == ["Dequantize", "Dequantize", "ConvTranspose", "ReLU", "Quantize"]
    r.save(tmp_path / "int8.json")
    result = runner.run(og.load_graph(tmp_path / "int8.json"))
    assert result.passed and [c.kind for c in result.checks] == ["Quantize"]


@pytest.mark.parametrize("bad, error, match", [
    (lambda x, w, b: (quant.per_tensor(x, 0.02, 128), w.astype(np.float32), b), ValueError,
     "both quantized .* or neither"),
    (lambda x, w, b: (quant.per_tensor(x, 0.02, 128), quant.per_tensor(w, 0.01, 1), b),
     og.UnsupportedError, "zero point 0"),
    (lambda x, w, b: (quant.per_tensor(x, 0.02, 128), quant.per_channel(w, np.ones(IC), axis=3), b),
     ValueError, "output-channel axis, axis 2 of XOI"),
    (lambda x, w, b: (quant.per_channel(x, np.ones(IC), axis=3), quant.per_tensor(w, 0.01), b),
     og.UnsupportedError, "one scale and zero point for src"),
    (lambda x, w, b: (quant.per_tensor(x, 0.02, 128), quant.per_tensor(w, 0.01), b.astype(np.float16)),
     TypeError, "f32 bias"),
    (lambda x, w, b: (x, w, b), TypeError, "src: dtype uint8 is quantized data"),
])
def test_int8_calls_oneDNN_cannot_make_are_refused_by_name(rng, bad, error, match):
    x, w, b = _data(rng)
    with pytest.raises(error, match=match):
        og.conv_transpose(*bad(x, w, b), **ATTRS)


def test_quantizations_check_their_arguments(rng):
    x = np.zeros((2, 3), np.uint8)
    with pytest.raises(ValueError, match="finite and > 0"):
        quant.per_tensor(x, 0.0)
    with pytest.raises(ValueError, match=r"zero points of u8 data must be in \[0, 255\]"):
        quant.per_tensor(x, 1.0, 300)
    with pytest.raises(ValueError, match="2 scales for axis 1 of size 3"):
        quant.per_channel(x, [1.0, 2.0], axis=1)
    with pytest.raises(TypeError, match="uint8 or int8"):
        quant.per_tensor(x.astype(np.float32), 1.0)
    with pytest.raises(ValueError, match="u8 or s8"):
        quant.to("s32", 1.0)


def test_weights_this_cpu_cannot_compute_exactly_warn(rng, monkeypatch):
    """On an ISA without VNNI (oneDNN's docs/advanced/int8_computations.md), u8 x s8 pairs
    saturate at 16 bits: weights beyond [-64, 64] warn, within do not."""
    monkeypatch.setattr(og._impl.version, "cpu_isa", lambda: "avx2")
    x, w, b = _data(rng)
    args = (quant.per_tensor(x, 0.02, 128), b)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        og.conv_transpose(args[0], quant.per_tensor(w, 0.01), b, **ATTRS)
    w[0, 0, 0, 0] = 100
    with pytest.warns(RuntimeWarning, match="may saturate in 16 bits"):
        og.conv_transpose(args[0], quant.per_tensor(w, 0.01), b, **ATTRS)


def test_the_reference_quantization_arithmetic():
    """Round half to even, then saturate; dequantize per channel along the axis."""
    q = quant.to("s8", 0.5, 1)
    got = og.reference.quantize(np.array([0.25, 0.75, -100.0, 100.0]), q)
    np.testing.assert_array_equal(got, np.array([1, 3, -128, 127], np.int8))  # 0.5->0, 1.5->2
    d = og.reference.dequantize(quant.per_channel(np.array([[1, 2], [3, 4]], np.int8), [1.0, 0.5], axis=0))
    np.testing.assert_array_equal(d, [[1.0, 2.0], [1.5, 2.0]])


@pytest.mark.parametrize("cut", [True, False], ids=["cut", "fused"])
def test_a_chain_cut_before_its_binary_post_op_gives_the_same_result(rng, monkeypatch, cut):
    """Where oneDNN fuses an int8 chain with a full-size binary post-op into a slow kernel
    (fused.CUT_BEFORE_BINARY: 3.2 and 3.13 on AVX2), the chain is cut before it; both
    ways give the reference's integers (exact or one unit off)."""
    from onednn_graph._impl import lowering, version
    here = (version.linked_version(), lowering.avx512(version.cpu_isa()))
    monkeypatch.setattr(_fused, "CUT_BEFORE_BINARY", frozenset({here}) if cut else frozenset())
    x, w, b = _data(rng)
    shape = og.output_shape("ConvTranspose", [x.shape, w.shape], **ATTRS)
    m = rng.uniform(0.5, 1.5, shape).astype(np.float32)
    args = (quant.per_tensor(x, 0.02, 128), quant.per_tensor(w, 0.01), b)
    kw = dict(ATTRS, post_ops=[post.relu(), post.multiply(m), post.tanh()], quantize=quant.to("s8", 0.01))
    _compiled.CACHE.clear()
    got = og.conv_transpose(*args, **kw)
    [call] = _fused.cached()
    # cut: the op's partition, then the rest (oneDNN 3.2 returns the Multiply and Tanh as
    # one partition and the Quantize as another: 3 in all)
    assert call.partitions > 1 if cut else call.partitions == 1
    _check_quantized(got, og.reference.conv_transpose(*args, **kw))


def test_a_graph_with_a_skip_of_another_dtype_replays_right(rng):
    """The low-level Graph keeps a dequantized u8 skip out of the partition of an int8
    ConvTranspose with an s8 result (kept_apart; oneDNN would read the skip as s8), so
    the driver's replay of that graph passes against the reference."""
    from onednn_graph._tools import runner
    x, w, b = _data(rng)
    shape = og.output_shape("ConvTranspose", [x.shape, w.shape], **ATTRS)
    skip = quant.per_tensor(rng.integers(0, 256, shape).astype(np.uint8), 0.03, 5)
    g = og.load_graph(og.reproducer.reproducer(og.conv_transpose, quant.per_tensor(x, 0.02, 128),
                                    quant.per_tensor(w, 0.01), b, **ATTRS, post_ops=[post.add(skip)],
                                    quantize=quant.to("s8", 0.05, 3)).spec)
    result = runner.run(g)
    assert result.passed, [str(c.comparison) for c in result.checks]
    assert len(g.get_partitions()) == 2  # the skip's Dequantize, then the rest fused


@pytest.mark.parametrize("groups", [2, 4])
def test_grouped_int8_with_per_channel_scales(rng, groups):
    """With groups, XOI weights hold C_out/groups output channels on axis O; per-channel
    scales along it apply in every group, as the reference reads them."""
    x = rng.integers(0, 256, (2, 5, 5, 8)).astype(np.uint8)
    w = rng.integers(-64, 65, (3, 3, 16 // groups, 8)).astype(np.int8)  # XOI: I holds all of C_in
    b = rng.standard_normal(16).astype(np.float32)
    for wq in (quant.per_tensor(w, 0.01), quant.per_channel(w, 0.01 + 0.001 * np.arange(16 // groups), axis=2)):
        args = (quant.per_tensor(x, 0.02, 128), wq, b)
        kw = dict(strides=2, groups=groups, post_ops=[post.relu()], quantize=quant.to("u8", 0.05, 3))
        _check_quantized(og.conv_transpose(*args, **kw), og.reference.conv_transpose(*args, **kw))
