"""Every op at the channel counts real models use, against the reference (issue 44).

oneDNN 3.2 added ``ConvTranspose2d(512, 256, 4, 2, 1)``'s bias up to 4 times on AMD Zen 4
(``_impl.epilogue_apart``), and no test saw it: none used more than a few dozen
channels. Here the four ops run with 64 to 1024 channels in and out, with and without a
bias, in f32, bf16 and f16, both data formats, for the (kernel, stride, pads) families of
decoders and GANs (k = 2s upsamplers, k = s patch and detection heads, k = s + 1, stride
1), on whatever CPU runs the suite; .ci/run runs this file again capped at AVX2 and at
SSE4.1. ``--wide`` adds a wider grid (1-D and 3-D, groups, dilations, output_padding,
batches, channels up to 2048).

Truth: the float64 reference on exact inputs. The arrays hold small integers
(``tolerance.exact_range``), for which oneDNN's f32 accumulator holds every partial sum
exactly whatever the order of the sum, so its result must be the reference rounded once
to the dtype, bit for bit, in every dtype (the integers are bf16 and f16 values too: one
float64 reference serves the three dtypes and both formats). A bias applied twice, or a
post-op applied to a partial sum, is off by at least 1.
"""

import itertools

import numpy as np
import pytest

import onednn_graph as og
from onednn_graph import _core, post, reference, shapes, tolerance
from onednn_graph._impl import registry
from helpers import NUMPY

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, note, strategies as st  # noqa: E402

TRANSPOSED = {"NCX": "IOX", "NXC": "XOI"}
CONVOLUTION = {"NCX": "OIX", "NXC": "XIO"}
#: Thread counts a call can be compiled for: oneDNN sizes its blocking by them (only
#: where the package sets them: OpenMP; oneDNN 3.13's SYCL runtime takes its own).
THREADS = (1, 2) if _core.can_limit_threads() else ()


class Geometry:
    """One problem in ConvTranspose's terms: the small tensor (src of ConvTranspose,
    diff_dst of ConvolutionBackwardData) has `c_in` channels, the big one `c_out`."""

    def __init__(self, c_in, c_out, kernel, strides, pads, spatial, batch=2, groups=1,
                 dilations=1, output_padding=0):
        rank = len(spatial)
        per_axis = (lambda v: (v,) * rank if isinstance(v, int) else tuple(v))
        self.c_in, self.c_out, self.groups, self.batch = c_in, c_out, groups, batch
        self.kernel, self.spatial = per_axis(kernel), tuple(spatial)
        self.attrs = dict(strides=per_axis(strides), pads_begin=per_axis(pads), pads_end=per_axis(pads),
                          dilations=per_axis(dilations), output_padding=per_axis(output_padding),
                          groups=groups)

    def __repr__(self):
        a = self.attrs
        extra = "".join(f"-{k}{v[0] if isinstance(v, tuple) else v}" for k, v in
                        (("g", self.groups), ("d", a["dilations"]), ("op", a["output_padding"]))
                        if (v[0] if isinstance(v, tuple) else v) != 1 - (k != "g" and k != "d"))
        return (f"{self.c_in}to{self.c_out}-k{self.kernel[0]}s{a['strides'][0]}p{a['pads_begin'][0]}"
                f"-{len(self.spatial)}d{self.spatial[0]}-n{self.batch}{extra}")


# The suite's grid: channels where oneDNN 3.2's strided kernel changes its blocking
# (the weights of one 32-channel block outgrow L2 from 512 input channels with kernel 4 on
# AVX-512, from 1024 on AVX2; from 64 with kernel 8), and the families of real layers.
GRID = [Geometry(ci, co, k, s, p, (4, 4))
        for (ci, co), (k, s, p) in itertools.product(
            [(1024, 256), (512, 512), (256, 1024), (1024, 16)],
            [(4, 2, 1), (2, 2, 0), (3, 2, 1), (3, 1, 1), (4, 4, 0)])] + \
    [Geometry(ci, co, 8, 4, 2, (4, 4)) for ci, co in [(128, 64), (256, 256)]] + \
    [Geometry(512, 256, 4, 2, 1, (8, 8), batch=1), Geometry(1024, 512, 4, 2, 1, (4, 4), batch=1)]

# --wide: more of everything (minutes).
WIDE = [Geometry(ci, co, k, s, p, (5, 5), batch=n)
        for (ci, co), (k, s, p), n in itertools.product(
            [(64, 64), (384, 192), (768, 384), (2048, 128), (96, 1024)],
            [(4, 2, 1), (6, 2, 2), (3, 2, 1), (5, 1, 2), (4, 4, 0), (6, 3, 1), (8, 4, 2)], [1, 3])] + \
    [Geometry(ci, co, k, s, p, (6,), batch=2) for ci, co in [(512, 256), (1024, 512)]
     for k, s, p in [(4, 2, 1), (16, 8, 4), (8, 4, 2)]] + \
    [Geometry(ci, co, k, s, p, (3, 3, 3), batch=1) for ci, co in [(512, 256), (256, 128)]
     for k, s, p in [(4, 2, 1), (2, 2, 0), (3, 2, 1)]] + \
    [Geometry(1024, 512, 4, 2, 1, (4, 4), groups=2), Geometry(512, 512, 4, 2, 1, (4, 4), groups=512),
     Geometry(1024, 256, 3, 2, 1, (4, 4), dilations=2), Geometry(1024, 256, 3, 2, 1, (4, 4), output_padding=1),
     Geometry(512, 256, 4, 2, 1, (4, 4), batch=8)]

KINDS = ["ConvTranspose", "ConvTransposeBackwardData", "ConvTransposeBackwardWeights",
         "ConvolutionBackwardData"]


def problem(geo, kind, bias, rng):
    """The NCX arrays of `kind` on `geo` (small integers), its keywords in NCX, and the
    accumulation length of one output (for the integer range)."""
    a = dict(geo.attrs)
    x_shape = (geo.batch, geo.c_in) + geo.spatial
    w_shape = (geo.c_in, geo.c_out // geo.groups) + geo.kernel  # IOX
    y_shape = shapes.output_shape("ConvTranspose", [x_shape, w_shape], data_format="NCX",
                                  weights_format="IOX", **a)
    kw = dict(a, data_format="NCX", weights_format="IOX")
    if kind == "ConvTranspose":
        names, arrays = [x_shape, w_shape] + ([(geo.c_out,)] if bias else []), None
        terms = geo.c_in // geo.groups * int(np.prod(geo.kernel)) + bias
    elif kind == "ConvTransposeBackwardData":
        names, terms = [y_shape, w_shape], geo.c_out // geo.groups * int(np.prod(geo.kernel))
    elif kind == "ConvTransposeBackwardWeights":
        names, terms = [x_shape, y_shape], geo.batch * int(np.prod(y_shape[2:]))
        kw["weights_shape"] = w_shape
    else:  # the convolution whose backward data is that ConvTranspose: OIX weights
        names, terms = [x_shape, w_shape], geo.c_in // geo.groups * int(np.prod(geo.kernel))
        # Its pads_end: the convolution from the big tensor back to the small one.
        kw = dict(kw, weights_format="OIX", dst_shape=y_shape)
        kw["pads_end"] = tuple(pe - op for pe, op in zip(a["pads_end"], kw.pop("output_padding")))
    r = tolerance.exact_range(terms)
    arrays = [rng.integers(-r, r + 1, s).astype(np.float64) for s in names]
    return arrays, kw


def in_format(arrays, kw, kind, fmt):
    """The NCX arrays and keywords in data format `fmt` (and its weights format)."""
    if fmt == "NCX":
        return arrays, kw
    weights = CONVOLUTION if kind == "ConvolutionBackwardData" else TRANSPOSED
    kw = dict(kw, data_format="NXC", weights_format=weights["NXC"])
    moved = []
    for i, a in enumerate(arrays):
        role = registry.SPECS[kind].inputs[i]
        if a.ndim == 1:
            moved.append(a)
        elif role == "weights":  # IOX -> XOI, OIX -> XIO: the two leading axes go last, swapped
            moved.append(np.moveaxis(a, (0, 1), (-1, -2)))
        else:
            moved.append(np.moveaxis(a, 1, -1))
    for name in ("weights_shape", "dst_shape"):
        if name in kw:
            s = kw[name]
            kw[name] = (tuple(s[2:]) + (s[1], s[0])) if name == "weights_shape" else \
                (s[0],) + tuple(s[2:]) + (s[1],)
    return moved, kw


def result_in(expected, kind, fmt):
    """The NCX/IOX reference result laid out as `fmt` returns it."""
    if fmt == "NCX":
        return expected
    if kind == "ConvTransposeBackwardWeights":
        return np.moveaxis(expected, (0, 1), (-1, -2))
    return np.moveaxis(expected, 1, -1)


def check(geo, kind, bias, rng, dtypes=("f32", "bf16", "f16"), formats=("NCX", "NXC"), threads=(None,)):
    """`kind` on `geo` in each dtype, format and thread count: every result the reference's,
    rounded to the dtype, exactly. Returns the failures (one line each)."""
    arrays, kw = problem(geo, kind, bias, rng)
    fn = getattr(og, registry.function(kind))
    expected64 = getattr(reference, registry.function(kind))(*arrays, **kw)
    failures = []
    for fmt in formats:
        args, fkw = in_format(arrays, kw, kind, fmt)
        want64 = result_in(expected64, kind, fmt)
        for dtype, n in itertools.product(dtypes, threads):
            typed = [a.astype(NUMPY[dtype]) for a in args]
            if n is None:
                got = fn(*typed, **fkw)
            else:
                names = registry.input_names(kind)[:len(typed)]
                op = og.compile_op(kind, threads=n, **dict(zip(names, typed)), **fkw)
                got = op(*typed)
            want = want64.astype(NUMPY[dtype])
            if got.shape != want.shape or not np.array_equal(got, want):
                bad = np.abs(got.astype(np.float64) - want.astype(np.float64))
                failures.append(f"{kind}{'+bias' if bias else ''} {geo} {dtype} {fmt} threads={n}: "
                                f"{int((bad > 0).sum())} of {bad.size} differ, most by {bad.max():g}")
    return failures


CASES = [(geo, kind, bias) for geo in GRID for kind in KINDS
         for bias in ((False, True) if kind == "ConvTranspose" else (False,))]


@pytest.mark.parametrize("geo, kind, bias", CASES,
                         ids=[f"{k}{'-bias' if b else ''}-{g}" for g, k, b in CASES])
def test_real_channel_counts_match_the_reference(geo, kind, bias, rng):
    # f32 NCX also on one thread and two: oneDNN 3.2 sizes its blocking by the thread count.
    failures = check(geo, kind, bias, rng)
    failures += check(geo, kind, bias, rng, dtypes=("f32",), formats=("NCX",), threads=THREADS)
    assert not failures, "\n".join(failures)


WIDE_CASES = [(geo, kind, bias) for geo in WIDE for kind in KINDS
              for bias in ((False, True) if kind == "ConvTranspose" else (False,))]


@pytest.mark.wide
@pytest.mark.parametrize("geo, kind, bias", WIDE_CASES,
                         ids=[f"{k}{'-bias' if b else ''}-{g}" for g, k, b in WIDE_CASES])
def test_wider_channel_counts_match_the_reference(geo, kind, bias, rng):
    failures = check(geo, kind, bias, rng, threads=(None,) + THREADS[:1])
    assert not failures, "\n".join(failures)


# ConvTranspose's epilogue (bias, post-ops) at the geometry oneDNN 3.2 got wrong on Zen 4
# (and at 1024 input channels, which it got wrong capped at AVX2 too): fused post-ops,
# int8, graphs and compiled calls.
EPILOGUE_GEOMETRIES = [Geometry(512, 256, 4, 2, 1, (4, 4)), Geometry(1024, 256, 4, 2, 1, (4, 4)),
                       Geometry(128, 64, 8, 4, 2, (4, 4))]


def _conv_transpose_inputs(geo, rng, dtype="f32"):
    (x, w, b), kw = problem(geo, "ConvTranspose", True, rng)
    return [a.astype(NUMPY[dtype]) for a in (x, w, b)], kw


@pytest.mark.parametrize("geo", EPILOGUE_GEOMETRIES, ids=repr)
@pytest.mark.parametrize("posts", ["relu", "add", "relu+add", "multiply"])
def test_fused_post_ops_apply_once(geo, posts, rng):
    (x, w, b), kw = _conv_transpose_inputs(geo, rng)
    out_shape = og.output_shape("ConvTranspose", [x.shape, w.shape], **kw)
    skip = rng.integers(-3, 4, out_shape).astype(np.float32)
    chosen = {"relu": [post.relu()], "add": [post.add(skip)], "relu+add": [post.relu(), post.add(skip)],
              "multiply": [post.multiply(skip)]}[posts]
    want = reference.conv_transpose(x, w, b, post_ops=chosen, **kw)
    for with_bias in (True, False):
        args = (x, w, b) if with_bias else (x, w)
        expected = want if with_bias else reference.conv_transpose(x, w, post_ops=chosen, **kw)
        got = og.conv_transpose(*args, post_ops=chosen, **kw)
        np.testing.assert_array_equal(got, expected, err_msg=f"bias {with_bias}")
        op = og.compile_op("ConvTranspose", src=x, weights=w, **({"bias": b} if with_bias else {}),
                           post_ops=chosen, **kw)
        np.testing.assert_array_equal(op(*args, *[p.operand for p in chosen if p.operand is not None]),
                                      expected)


@pytest.mark.parametrize("geo", EPILOGUE_GEOMETRIES, ids=repr)
def test_compiled_calls_add_the_bias_once(geo, rng):
    """compile_op with constant weights, on one thread and on two, and a batch that runs in
    parts: each the reference; Operation.lowering names the workaround where it applies."""
    (x, w, b), kw = _conv_transpose_inputs(geo, rng)
    want = reference.conv_transpose(x, w, b, **kw)
    for threads in (None,) + THREADS:
        op = og.compile_op("ConvTranspose", src=x, weights=w, bias=b, threads=threads, **kw)
        np.testing.assert_array_equal(op(x, w, b), want, err_msg=f"threads {threads}: {op.lowering}")
        fixed = og.compile_op("ConvTranspose", src=x, weights=w, bias=b, constant_weights=True,
                              threads=threads, **kw)
        np.testing.assert_array_equal(fixed(x, b), want, err_msg=f"constant weights: {fixed.lowering}")
        out = np.full_like(want, np.nan)
        assert fixed(x, b, out=out) is out
        np.testing.assert_array_equal(out, want)
        assert _names_why_apart(op.lowering)
    big = np.concatenate([x] * 16)
    np.testing.assert_array_equal(og.conv_transpose(big, w, b, **kw), np.concatenate([want] * 16))


def _names_why_apart(lowering):
    """An epilogue run after the kernel is said to be, with its reason: the kernel that
    repeats it (brgconv_strided) or the jit kernel that runs it slower (which one oneDNN
    picks depends on the CPU: AVX2 takes jit where AVX-512 takes brgemm)."""
    apart = "bias and post-ops after it" in lowering
    return apart == ("brgconv_strided" in lowering or "jit deconvolution" in lowering)


def test_bf16_and_f16_through_the_f32_chain_add_the_bias_once(rng):
    geo = Geometry(1024, 256, 4, 2, 1, (4, 4))
    for dtype in ("bf16", "f16"):
        (x, w, b), kw = _conv_transpose_inputs(geo, rng, dtype)
        want = reference.conv_transpose(x, w, b, **kw)
        op = og.compile_op("ConvTranspose", src=x, weights=w, bias=b, **kw)
        np.testing.assert_array_equal(op(x, w, b), want, err_msg=op.lowering)


def test_int8_with_a_sum_adds_the_bias_once(rng):
    """The int8 kernel writes an f32 result through a buffer (right), except with a "sum"
    post-op (an Add of a full-size tensor), which reads the destination: wrong at 1024
    channels on Zen 4 before the workaround."""
    from onednn_graph import quant
    geo = Geometry(1024, 256, 4, 2, 1, (4, 4), batch=1)
    (x, w, b), kw = problem(geo, "ConvTranspose", True, rng)
    xq = (x + 4).astype(np.uint8)  # zero point 4
    wq = w.astype(np.int8)
    skip = rng.integers(-3, 4, og.output_shape("ConvTranspose", [x.shape, w.shape], **kw)).astype(np.float32)
    got = og.conv_transpose(quant.per_tensor(xq, 0.5, 4), quant.per_tensor(wq, 0.25), b.astype(np.float32),
                            post_ops=[post.add(skip)], **kw)
    want = reference.conv_transpose(x * 0.5, w * 0.25, b, **kw) + skip
    np.testing.assert_array_equal(got, want.astype(np.float32))


def _graph(geo, kw, with_relu):
    """ConvTranspose with its bias (and a ReLU) as oneDNN's objects, NCX/IOX."""
    x_shape = (geo.batch, geo.c_in) + geo.spatial
    w_shape = (geo.c_in, geo.c_out) + geo.kernel
    y_shape = og.output_shape("ConvTranspose", [x_shape, w_shape], **kw)
    lts = [og.LogicalTensor(i, "f32", s) for i, s in enumerate([x_shape, w_shape, (geo.c_out,), y_shape])]
    attrs = {k: list(v) if isinstance(v, tuple) else v for k, v in kw.items()}
    g = og.Graph()
    g.add_op(og.Op(0, "ConvTranspose", lts[:3], [lts[3]], attrs))
    out = lts[3]
    if with_relu:
        out = og.LogicalTensor(4, "f32", y_shape)
        g.add_op(og.Op(1, "ReLU", [lts[3]], [out]))
    g.finalize()
    return g, lts[:3], out


@pytest.mark.parametrize("with_relu", [False, True], ids=["bias", "bias+relu"])
def test_graphs_add_the_bias_once(with_relu, rng):
    geo = Geometry(1024, 256, 4, 2, 1, (4, 4))
    (x, w, b), kw = _conv_transpose_inputs(geo, rng)
    g, inputs, out = _graph(geo, kw, with_relu)
    [p] = g.get_partitions()
    e = og.Engine()
    cp = p.compile(inputs, [out], e)
    y = np.full(out.shape, np.nan, np.float32)
    cp.execute(og.Stream(e), [og.Tensor(lt, e, a) for lt, a in zip(inputs, (x, w, b))], [og.Tensor(out, e, y)])
    want = reference.conv_transpose(x, w, b, post_ops=[post.relu()] if with_relu else None, **kw)
    np.testing.assert_array_equal(y, want)
    assert cp.runs_in_f32 is False


@pytest.mark.parametrize("with_relu", [False, True], ids=["bias", "bias+relu"])
def test_a_graph_file_replayed_as_written_passes(with_relu, tmp_path, rng):
    """The JSON runner (``onednn-graph run``) on a saved graph of the layer with a bias (in
    exact mode: results equal the reference's) and with a ReLU after it (the bound carried
    through the graph): both FAILed on oneDNN 3.2 as written."""
    from onednn_graph import graph_json
    from onednn_graph._tools import runner
    geo = Geometry(1024, 256, 4, 2, 1, (4, 4))
    _, kw = _conv_transpose_inputs(geo, rng)
    path = tmp_path / "deconv.json"
    graph_json.save_graph(_graph(geo, kw, with_relu)[0], path)
    result = runner.run(graph_json.load_graph(path), exact=not with_relu)
    assert result.passed, result
    assert all(_names_why_apart(line) for line in result.lowerings)


# Property-based: whole problems with wide channel counts drawn by Hypothesis (the
# "ci" profile's examples, a fixed sequence; tests/conftest.py). Each example runs its
# geometry as ConvTranspose with a bias (the epilogue oneDNN 3.2 got wrong) and as one
# other op, in every dtype.
@st.composite
def wide_problems(draw):
    rank = draw(st.sampled_from([1, 2, 2, 3]))
    stride = draw(st.sampled_from([1, 2, 2, 3, 4]))
    # the decoder families (an output the stride divides), or any kernel and pads
    family = draw(st.sampled_from(["k = s (patches, heads)", "k = 2s (GAN, U-Net)", "any"]))
    kernel, pads = (stride, 0) if family.startswith("k = s ") else \
        (2 * stride, stride // 2) if family.startswith("k = 2s") else (None, None)
    if kernel is None:
        kernel = draw(st.integers(1, 2 * stride + 1))
        pads = draw(st.integers(0, (kernel - 1) // 2))
    wide = st.sampled_from([64, 128, 256, 384, 512, 640, 768, 1024])
    c_in = draw(st.one_of(st.integers(1, 16), wide, wide))
    # A size a CI machine computes in milliseconds: at most 4M weights.
    c_out = max(1, min(draw(st.one_of(st.integers(1, 16), wide, wide)), (1 << 22) // (c_in * kernel ** rank)))
    spatial = tuple(draw(st.integers(1, 4 if rank < 3 else 3)) for _ in range(rank))
    geo = Geometry(c_in, c_out, kernel, stride, pads, spatial, batch=draw(st.integers(1, 3)))
    return geo, draw(st.sampled_from(KINDS)), draw(st.sampled_from(["NCX", "NXC"]))


@given(wide_problems(), st.integers(0, 2**32 - 1))
def test_wide_problems_match_the_reference(case, seed):
    geo, kind, fmt = case
    note(f"{geo} {fmt}, ConvTranspose with a bias and {kind}")
    rng = np.random.default_rng(seed)
    failures = check(geo, "ConvTranspose", True, rng, formats=(fmt,))
    failures += check(geo, kind, False, rng, formats=(fmt,))
    assert not failures, "\n".join(failures)
