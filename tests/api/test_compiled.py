"""The compiled-call cache, compile_op and constant weights.

Truth: the functional API's results (checked against the reference in
test_ops) — the same oneDNN kernels, so equality is exact — and, for constant
weights, the reference itself.
"""

import numpy as np
import pytest

import onednn_graph as og
from onednn_graph import _core, reference
from helpers import assert_matches_reference, random


@pytest.fixture
def fresh_cache():
    og.cache.clear_cache()
    capacity = og.cache.cache_info().capacity
    yield
    og.cache.set_cache_capacity(capacity)
    og.cache.clear_cache()


def test_a_repeated_call_compiles_nothing(rng, fresh_cache):
    x, w = random(rng, (2, 4, 4, 3), "f32"), random(rng, (2, 2, 5, 3), "f32")
    first = og.conv_transpose(x, w, strides=2)
    info = og.cache.cache_info()
    assert (info.hits, info.misses, info.size) == (0, 1, 1) and info.compile_seconds > 0
    for _ in range(3):
        np.testing.assert_array_equal(og.conv_transpose(x, w, strides=2), first)
    info2 = og.cache.cache_info()
    assert (info2.hits, info2.misses, info2.compile_seconds) == (3, 1, info.compile_seconds)
    # Another stride is another signature; so are other strides of the same shape.
    og.conv_transpose(x, w, strides=1)
    og.conv_transpose(np.asfortranarray(x), w, strides=2)
    assert og.cache.cache_info().misses == 3


def test_the_native_signature_tells_calls_apart():
    """_core.call_signature is the cache key of the usual call: equal only for
    calls that prepare() treats alike, None for what it leaves to Python."""
    x, w = np.zeros((1, 4, 3), np.float32), np.zeros((2, 2, 3), np.float32)
    key = _core.call_signature("ConvTranspose", (x, w), None, ((2,), 0, "NXC", None))
    assert key == _core.call_signature("ConvTranspose", (x.copy(), w), None, ([2], 0, "NXC", None))
    others = [
        ("ConvTransposeBackwardData", (x, w), None, ((2,), 0, "NXC", None)),
        ("ConvTranspose", (x.astype(">f4"), w), None, ((2,), 0, "NXC", None)),  # byte order
        ("ConvTranspose", (x.astype(np.int32), w), None, ((2,), 0, "NXC", None)),
        ("ConvTranspose", (np.zeros((1, 3, 4), np.float32).transpose(0, 2, 1), w), None,
         ((2,), 0, "NXC", None)),                                              # strides
        ("ConvTranspose", (x, w), np.zeros((1, 8, 2), np.float32), ((2,), 0, "NXC", None)),
        ("ConvTranspose", (x, w), None, ((2,), 0, "NCX", None)),
        ("ConvTranspose", (x, w), None, ((2, 0), 0, "NXC", None)),
        ("ConvTranspose", (x, w), None, (2, 0, "NXC", None)),                 # int, not a list
    ]
    keys = [_core.call_signature(*o) for o in others]
    assert None not in keys and len(set(keys + [key])) == len(others) + 1
    # Keys past the encoder's stack buffer (1 kB) are built on the heap, alike.
    long, longer = list(range(200)), list(range(201))
    key = _core.call_signature("ConvTranspose", (x, w), None, (long, 0, "NXC", None))
    assert len(key) > 1024
    assert key == _core.call_signature("ConvTranspose", (x, w), None, (tuple(long), 0, "NXC", None))
    assert key != _core.call_signature("ConvTranspose", (x, w), None, (longer, 0, "NXC", None))
    # Left to the Python signature, which keeps the value's type.
    for values in [((True,), 0, "NXC", None), ((2.0,), 0, "NXC", None), (np.int64(2), 0, "NXC", None),
                   (2**64, 0, "NXC", None)]:
        assert _core.call_signature("ConvTranspose", (x, w), None, values) is None
    assert _core.call_signature("ConvTranspose", (x.tolist(), w), None, ()) is None


def test_execute_arrays_refuses_an_output_over_an_input(rng):
    """oneDNN would read what it writes: execute_arrays checks before it runs."""
    x, w = random(rng, (1, 4, 3), "f32"), random(rng, (2, 3, 3), "f32")
    op = og.compile_op("ConvTranspose", src=x, weights=w)
    compiled = op._prepared.op.compiled
    buffer = np.zeros(64, np.float32)
    src, out = buffer[:12].reshape(1, 4, 3), buffer[8:23].reshape(1, 5, 3)
    src[...] = x
    with pytest.raises(ValueError, match="shares memory with input 0"):
        compiled.execute_arrays(og._impl.compiled.stream(), [src, w], [out])
    assert not buffer[12:].any() and np.array_equal(src, x)  # nothing was written
    with pytest.raises(ValueError, match="out shares memory with input 0"):
        op(src, w, out=out)  # the operation's own message


def test_capacity_bounds_the_cache(rng, fresh_cache):
    og.cache.set_cache_capacity(2)
    x, w = random(rng, (1, 4, 3), "f32"), random(rng, (2, 2, 3), "f32")
    for s in (1, 2, 3):
        og.conv_transpose(x, w, strides=s)
    assert og.cache.cache_info().size == 2
    og.cache.set_cache_capacity(0)
    og.conv_transpose(x, w, strides=1)
    assert og.cache.cache_info().size == 0
    with pytest.raises(ValueError, match="capacity"):
        og.cache.set_cache_capacity(-1)


def test_the_least_recently_used_call_goes_first(rng, fresh_cache):
    og.cache.set_cache_capacity(2)
    x, w = random(rng, (1, 4, 3), "f32"), random(rng, (2, 2, 3), "f32")
    for s in (1, 2, 1, 3):  # strides 1 is used again before 3 comes: 2 is the one to go
        og.conv_transpose(x, w, strides=s)
    before = og.cache.cache_info()
    og.conv_transpose(x, w, strides=1)
    og.conv_transpose(x, w, strides=3)
    assert og.cache.cache_info().hits == before.hits + 2
    og.conv_transpose(x, w, strides=2)
    assert og.cache.cache_info().misses == before.misses + 1


def test_a_refused_cached_call_writes_nothing_and_counts_once(rng, fresh_cache):
    """The native hot path refuses what the signature does not settle (a read-only
    `out`, an `out` over an input) before anything runs; the checked path then
    names the argument. The call counts one hit, not two."""
    x, w = random(rng, (1, 4, 3), "f32"), random(rng, (2, 2, 3), "f32")
    out = og.conv_transpose(x, w, strides=2)
    og.conv_transpose(x, w, strides=2, out=out)  # cached with this `out` layout
    read_only = np.full_like(out, np.nan)
    read_only.flags.writeable = False
    info = og.cache.cache_info()
    with pytest.raises(ValueError, match="out is read-only"):
        og.conv_transpose(x, w, strides=2, out=read_only)
    assert np.isnan(read_only).all()
    assert og.cache.cache_info()[:2] == (info.hits + 1, info.misses)


def test_direct_call_runs_or_refuses_without_running(rng):
    """DirectCall, the native hot path: the result of the checked path, or None
    (nothing written) for anything the compiled op does not take as it is."""
    x, w = random(rng, (1, 4, 3), "f32"), random(rng, (2, 2, 3), "f32")
    op = og.compile_op("ConvTranspose", src=x, weights=w, strides=2)
    want, stream = op(x, w), og._impl.compiled.stream()
    partition = op._prepared.op.compiled
    direct = _core.DirectCall(partition, (), want.shape, want.dtype)
    np.testing.assert_array_equal(direct.run(stream, (x, w), None), want)
    out = np.zeros_like(want)
    assert direct.run(stream, [x, w], out) is out  # a list is taken too
    np.testing.assert_array_equal(out, want)
    # The inputs in another order: the partition's input j is the caller's order[j].
    np.testing.assert_array_equal(_core.DirectCall(partition, (1, 0), want.shape, want.dtype).run(
        stream, (w, x), None), want)
    untouched = np.full_like(want, np.nan)
    read_only = np.full_like(want, np.nan)
    read_only.flags.writeable = False
    refused = [((x,), untouched), ((x, w, w), untouched), ((x.astype(np.float64), w), untouched),
               ((np.asfortranarray(x), w), untouched), ((x.tolist(), w), untouched),
               ((x, w), np.full(want.shape, np.nan)), ((x, w), np.full((2,) + want.shape[1:], np.nan, np.float32)),
               ((x, w), read_only), ((x, w), np.ma.masked_array(untouched))]
    for arrays, target in refused:
        assert direct.run(stream, arrays, target) is None
        assert np.isnan(np.asarray(target)).all()
    for order in [(0,), (0, 2), (1, 1)]:
        with pytest.raises(ValueError, match="order"):
            _core.DirectCall(partition, order, want.shape, want.dtype)


def test_a_bool_never_hits_the_entry_of_an_int(rng, fresh_cache):
    # True == 1 and hash(True) == hash(1): the cache key must still tell them apart.
    x, w = random(rng, (1, 4, 3), "f32"), random(rng, (2, 2, 3), "f32")
    og.conv_transpose(x, w, strides=1, groups=1)
    with pytest.raises(TypeError, match="strides"):
        og.conv_transpose(x, w, strides=True, groups=1)
    with pytest.raises(TypeError, match="groups"):
        og.conv_transpose(x, w, strides=1, groups=True)


CASES = [
    ("ConvTranspose", dict(src=(2, 5, 4), weights=(3, 6, 4), bias=(6,)), dict(strides=2)),
    ("ConvTransposeBackwardData", dict(diff_dst=(2, 11, 6), weights=(3, 6, 4)), dict(strides=2)),
    ("ConvTransposeBackwardWeights", dict(src=(2, 5, 4), diff_dst=(2, 11, 6)),
     dict(strides=2, weights_shape=(3, 6, 4))),
    ("ConvolutionBackwardData", dict(diff_dst=(2, 3, 6), weights=(3, 4, 6)),
     dict(strides=2, dst_shape=(2, 7, 4))),
    ("ConvTransposeBackpropFilters", dict(input_forward=(2, 5, 4), output_delta=(2, 11, 6)),
     dict(strides=2, filter_shape=(3, 4, 6))),
    # output_padding >= strides + pads_end: the view lowering, on ConvTranspose with bias
    ("ConvTranspose", dict(src=(1, 4, 2), weights=(2, 3, 2), bias=(3,)),
     dict(strides=2, output_padding=3)),
]
FUNCTIONS = {"ConvTranspose": og.conv_transpose,
             "ConvTransposeBackwardData": og.conv_transpose_backward_data,
             "ConvTransposeBackwardWeights": og.conv_transpose_backward_weights,
             "ConvolutionBackwardData": og.convolution_backward_data,
             "ConvTransposeBackpropFilters": og.conv_transpose_backprop_filters}


@pytest.mark.parametrize("kind, inputs, attrs", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_compile_op_equals_the_functional_api(rng, kind, inputs, attrs, dtype):
    arrays = [random(rng, shape, dtype) for shape in inputs.values()]
    op = og.compile_op(kind, **dict(zip(inputs, arrays)), **attrs)
    want = FUNCTIONS[kind](*arrays, **attrs)
    got = op(*arrays)
    np.testing.assert_array_equal(got, want)
    out = np.full(op.output_shape, np.nan, got.dtype)
    assert op(*arrays, out=out) is out
    np.testing.assert_array_equal(out, want)
    # Compiled from shapes alone, it runs the same.
    by_shape = og.compile_op(kind, dtype=dtype, **inputs, **attrs)
    np.testing.assert_array_equal(by_shape(*arrays), want)


def test_compile_op_refuses_what_it_was_not_compiled_for(rng):
    x, w = random(rng, (1, 4, 3), "f32"), random(rng, (2, 2, 3), "f32")
    op = og.compile_op("ConvTranspose", src=x, weights=w, strides=2)
    out = np.full(op.output_shape, 7.0, np.float32)
    with pytest.raises(TypeError, match="float16"):
        op(x.astype(np.float16), w.astype(np.float16), out=out)
    with pytest.raises(ValueError, match="shape"):
        op(random(rng, (1, 5, 3), "f32"), w)
    with pytest.raises(ValueError, match="out has shape"):
        op(x, w, out=out[:, :-1])
    with pytest.raises(TypeError, match="takes 2 inputs"):
        op(x)
    assert np.all(out == 7.0)
    with pytest.raises(TypeError, match="no input or attribute"):
        og.compile_op("ConvTranspose", src=x, weights=w, stride=2)
    with pytest.raises(TypeError, match="needs the inputs"):
        og.compile_op("ConvTranspose", src=x, strides=2)
    with pytest.raises(TypeError, match="dtype="):
        og.compile_op("ConvTranspose", src=(1, 4, 3), weights=(2, 2, 3))
    with pytest.raises(ValueError, match="constant_weights"):
        og.compile_op("ConvTransposeBackwardWeights", src=x, diff_dst=x, weights_shape=(1, 1, 3),
                      constant_weights=True)


@pytest.mark.parametrize("layout", ["transposed", "sliced", "first kernel axis fastest"])
@pytest.mark.parametrize("latent", [True, False], ids=["one position (a MatMul)", "4 x 4"])
def test_constant_weights_of_any_layout(rng, dtype, layout, latent):
    """Constant weights handed in as a view (PyTorch's IOX weights transposed to XOI, every
    8th input channel of a bigger array, the same values with the first kernel axis
    fastest) are compiled in as the op's C-ordered copy: the op is planned for that copy,
    not for the view's strides (before, the one-position MatMul read the copy with the
    view's strides: wrong numbers or a crash; other calls refused every call)."""
    spatial, o = ((1, 1), 64) if latent else ((4, 4), 16)  # (DCGAN's first layer: 26 MFLOP)
    x = random(rng, (16, *spatial, 100), dtype)
    iox = random(rng, (100 * (8 if layout == "sliced" else 1), o, 4, 4), dtype)
    w = iox.transpose(2, 3, 1, 0) if layout != "sliced" else iox[::8].transpose(2, 3, 1, 0)
    if layout == "first kernel axis fastest":
        w = np.moveaxis(np.ascontiguousarray(np.moveaxis(w, 0, -1)), -1, 0)
    assert not w.flags.c_contiguous
    kw = dict(strides=1 if latent else 2)
    op = og.compile_op("ConvTranspose", src=x, weights=w, constant_weights=True, **kw)
    np.testing.assert_array_equal(op.weights, w)
    for _ in range(2):  # (the second call reads oneDNN's packed copy)
        assert_matches_reference(op(x), reference.conv_transpose, (x, w), kw, dtype, 100 * 16)


def test_constant_weights_are_the_operations_own(rng, dtype):
    # oneDNN 3.2 caches a constant's reordered copy per compiled kernel, keyed
    # by the kernel, not the data. The operation owns a read-only copy of the
    # weights, so changing the caller's array cannot make its results stale.
    x = random(rng, (2, 5, 5, 8), dtype)
    w1, w2 = random(rng, (3, 3, 16, 8), dtype), random(rng, (3, 3, 16, 8), dtype)
    op1 = og.compile_op("ConvTranspose", src=x, weights=w1, strides=2, constant_weights=True)
    op2 = og.compile_op("ConvTranspose", src=x, weights=w2, strides=2, constant_weights=True)
    assert op1.input_names == ("src",)
    want1 = og.conv_transpose(x, w1, strides=2)
    want2 = og.conv_transpose(x, w2, strides=2)
    for _ in range(2):  # the second call reads oneDNN's cached constant
        np.testing.assert_array_equal(op1(x), want1)
        np.testing.assert_array_equal(op2(x), want2)
    w1[...] = 0
    np.testing.assert_array_equal(op1(x), want1)
    assert not op1.weights.flags.writeable
    with pytest.raises(ValueError):
        op1.weights[...] = 0
    kw = dict(strides=2)
    assert_matches_reference(op2(x), reference.conv_transpose, (x, w2), kw, dtype, 16 * 9)


def test_the_hazard_constant_weights_guards_against_is_real(rng):
    # With the low-level API, a constant logical tensor whose data changes
    # gives the old result: this is why compile_op copies the weights.
    if not _core.get_constant_tensor_cache():
        pytest.skip("oneDNN's constant-tensor cache is off")
    x = random(rng, (1, 4, 4, 8), "f32")
    w = random(rng, (2, 2, 16, 8), "f32")
    engine = og.Engine()
    lts = [og.LogicalTensor(0, "f32", x.shape),
           og.LogicalTensor(1, "f32", w.shape, None, "strided", "constant")]
    y_lt = og.LogicalTensor(2, "f32", (1, 8, 8, 16))
    g = og.Graph()
    g.add_op(og.Op(0, "ConvTranspose", lts, [y_lt], dict(strides=[2, 2], pads_begin=[0, 0],
                                                         pads_end=[0, 0], dilations=[1, 1])))
    g.finalize()
    [p] = g.get_partitions()
    cp = p.compile(lts, [y_lt], engine)
    stream = og.Stream(engine)
    first = np.empty((1, 8, 8, 16), np.float32)
    cp.execute(stream, [og.Tensor(lts[0], engine, x), og.Tensor(lts[1], engine, w)],
               [og.Tensor(y_lt, engine, first)])
    w *= 2
    second = np.empty_like(first)
    cp.execute(stream, [og.Tensor(lts[0], engine, x), og.Tensor(lts[1], engine, w)],
               [og.Tensor(y_lt, engine, second)])
    np.testing.assert_array_equal(second, first)  # stale: not 2 * first
