"""Single-op and fused calls share the functional API's one call cache.

Truth: the cache's own statistics and listing, against the calls made (what was
compiled once and what was found again); a fused call's reproducer against the
functional-API call's own. The cache functions are taken from ``_impl.compiled``,
where the public names (``og.cache.cache_info`` and the rest) come from.
"""

import numpy as np
import pytest

import onednn_graph as og
from onednn_graph import post
from onednn_graph._impl import compiled as _compiled, fused as _fused
from onednn_graph.reproducer import reproducer

# A ConvTranspose oneDNN 3.2 runs as written (not lowered): its fused call is one
# cache entry, without a single-op entry for the op run alone.
ATTRS = dict(strides=2, data_format="NCX", weights_format="IOX")


@pytest.fixture
def fresh_cache():
    _compiled.clear_cache()
    capacity = _compiled.cache_info().capacity
    yield
    _compiled.set_cache_capacity(capacity)
    _compiled.clear_cache()


@pytest.fixture
def arrays(rng):
    x = rng.standard_normal((1, 4, 5, 5), dtype=np.float32)
    w = rng.standard_normal((4, 6, 3, 3), dtype=np.float32)
    return x, w


def single(x, w):
    return og.conv_transpose(x, w, **ATTRS)


def fused(x, w):
    return og.conv_transpose(x, w, **ATTRS, post_ops=[post.relu()])


def kinds(ops):
    """Each cached op as 'single' or 'fused', least recently used first."""
    return ["fused" if isinstance(op, _fused._Call) else "single" for op in ops]


def test_a_fused_and_a_single_op_call_both_show(arrays, fresh_cache):
    fused(*arrays)
    single(*arrays)
    info = _compiled.cache_info()
    assert (info.size, info.single, info.fused, info.hits, info.misses) == (2, 1, 1, 0, 2)
    ops = _compiled.cached_ops()
    assert kinds(ops) == ["fused", "single"]
    assert ops[0].kind == "ConvTranspose" and ops[0].partitions == 1
    # Both compiles are counted: the total is each entry's own, summed.
    assert info.compile_seconds == pytest.approx(ops[0].compile_seconds + ops[1].compile_seconds)


def test_fused_hits_and_misses_are_counted(arrays, fresh_cache):
    first = fused(*arrays)
    for _ in range(3):
        np.testing.assert_array_equal(fused(*arrays), first)
    info = _compiled.cache_info()
    assert (info.hits, info.misses, info.fused) == (3, 1, 1)
    og.conv_transpose(*arrays, **ATTRS, post_ops=[post.sigmoid()])  # another chain
    info = _compiled.cache_info()
    assert (info.hits, info.misses, info.fused) == (3, 2, 2)
    assert info.compile_seconds > 0


def test_capacity_one_keeps_the_last_call_of_either_kind(arrays, fresh_cache):
    _compiled.set_cache_capacity(1)
    fused(*arrays)
    assert kinds(_compiled.cached_ops()) == ["fused"]
    single(*arrays)  # evicts the fused call
    assert kinds(_compiled.cached_ops()) == ["single"]
    before = _compiled.cache_info()
    fused(*arrays)  # compiled again, and evicts the single-op call
    after = _compiled.cache_info()
    assert (after.misses, after.hits) == (before.misses + 1, before.hits)
    assert (after.size, after.single, after.fused) == (1, 0, 1)
    single(*arrays)
    assert _compiled.cache_info().misses == after.misses + 1
    assert kinds(_compiled.cached_ops()) == ["single"]


def test_the_least_recently_used_goes_first_whichever_kind(arrays, fresh_cache):
    _compiled.set_cache_capacity(2)
    x, w = arrays
    fused(x, w)
    single(x, w)
    fused(x, w)  # the fused call is used again: the single-op call is the oldest
    og.conv_transpose(x, w, strides=1, data_format="NCX", weights_format="IOX")
    assert kinds(_compiled.cached_ops()) == ["fused", "single"]
    before = _compiled.cache_info()
    fused(x, w)
    assert _compiled.cache_info().hits == before.hits + 1
    single(x, w)  # the one that went
    assert _compiled.cache_info().misses == before.misses + 1


def test_clear_cache_empties_both(arrays, fresh_cache):
    fused(*arrays)
    single(*arrays)
    _compiled.clear_cache()
    assert _compiled.cache_info()[:5] == (0, 0, 0, _compiled.cache_info().capacity, 0.0)
    assert (_compiled.cache_info().single, _compiled.cache_info().fused) == (0, 0)
    assert _compiled.cached_ops() == [] and _fused.cached() == []
    fused(*arrays)
    assert _compiled.cache_info().misses == 1


def test_capacity_zero_keeps_no_fused_call(arrays, fresh_cache):
    _compiled.set_cache_capacity(0)
    first = fused(*arrays)
    np.testing.assert_array_equal(fused(*arrays), first)
    info = _compiled.cache_info()
    assert (info.size, info.hits, info.misses) == (0, 0, 2)


def test_compile_op_with_post_ops_is_a_fused_entry(arrays, fresh_cache):
    x, w = arrays
    op = og.compile_op("ConvTranspose", src=x, weights=w, **ATTRS, post_ops=[post.relu()])
    [entry] = _compiled.cached_ops()
    assert entry is op._call and _compiled.cache_info().fused == 1
    np.testing.assert_array_equal(op(x, w), fused(x, w))


def test_a_fused_entry_is_written_as_its_call(arrays, fresh_cache):
    """A fused call's entry (and a FusedOperation) writes the graph the functional-API
    call's reproducer writes: the op as called, then its post-ops."""
    x, w = arrays
    fused(x, w)
    [entry] = _compiled.cached_ops()
    want = reproducer(og.conv_transpose, x, w, **ATTRS, post_ops=[post.relu()])
    got = reproducer(entry)
    assert (got.spec, got.native) == (want.spec, want.native)
    assert [op["kind"] for op in got.spec["graph"]] == ["ConvTranspose", "ReLU"]
    op = og.compile_op("ConvTranspose", src=x, weights=w, **ATTRS, post_ops=[post.relu()])
    assert reproducer(op).spec == want.spec
    with pytest.raises(TypeError, match="no further arguments"):
        reproducer(entry, x)


def test_cache_info_stays_a_five_field_tuple_first():
    """Code that built or unpacked CacheInfo by its five fields still works."""
    info = _compiled.CacheInfo(1, 2, 3, 4, 0.5)
    hits, misses, size, capacity, seconds = info[:5]
    assert (hits, misses, size, capacity, seconds) == (1, 2, 3, 4, 0.5)
    assert (info.single, info.fused) == (0, 0)
    assert _compiled.CacheInfo._fields[:5] == ("hits", "misses", "size", "capacity",
                                               "compile_seconds")
