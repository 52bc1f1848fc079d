"""10,000 calls of each op leak neither native nor Python memory; the compiled-op
cache stays within its capacity and lets go of what it evicts.

The bounds. Each call below allocates a result of 128-256 f32 plus a few
hundred bytes of native objects (logical tensors, oneDNN tensors, the stream's
work), so leaking any one of them on every call grows the process by at least
10,000 x 128 B = 1.28 MB, and leaking a Python object on every call adds
10,000 live blocks. After a warm-up of 2,000 calls (compilation, caches):
- RSS (from /proc/self/statm) may grow at most 1 MiB over the 10,000 calls:
  room for allocator arenas, less than the smallest per-call leak;
- tracemalloc's count of live Python allocations may grow by at most 500
  blocks. Pools of small objects behind the native calls still fill up after
  the warm-up, ever more slowly (measured for the legacy op: +131, +35, +11,
  +10 blocks over four successive runs of 3,000 calls): sub-linear growth
  that stays far below the 10,000 of a per-call leak.
Under AddressSanitizer (scripts/sanitize.sh) the RSS bound is not checked: ASan
holds freed memory in its quarantine (256 MB by default) so that it can catch a
use after free, and RSS then measures the quarantine, not a leak. The
tracemalloc bound still applies there.
"""

import gc
import os
import tracemalloc
import weakref

import numpy as np
import pytest

import onednn_graph as og
from helpers import UNDER_ASAN
from onednn_graph._impl import compiled as _compiled

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs Linux /proc")

CALLS = 10_000
RSS_BOUND = 1024 * 1024
BLOCKS_BOUND = 500

_rng = np.random.default_rng(3)


def _a(*shape):
    return _rng.uniform(-1, 1, shape).astype(np.float32)


# Results of 128-256 f32, NXC, rank 1, stride 1.
X, W, DY = _a(1, 16, 8), _a(1, 16, 8), _a(1, 16, 16)   # ConvTranspose: (1, 16, 16)
WC = _a(1, 8, 16)                                       # XIO: C_in 8, C_out 16
X31, DY32 = _a(1, 31, 8), _a(1, 32, 16)                 # kernel 2: weights (2, 16, 8)
CALLS_BY_OP = {
    "ConvTranspose": lambda: og.conv_transpose(X, W),
    "ConvTransposeBackwardData": lambda: og.conv_transpose_backward_data(DY, W),
    "ConvTransposeBackwardWeights": lambda: og.conv_transpose_backward_weights(X31, DY32, (2, 16, 8)),
    "ConvolutionBackwardData": lambda: og.convolution_backward_data(DY, WC, (1, 16, 8)),
    "ConvTransposeBackpropFilters": lambda: og.conv_transpose_backprop_filters(X31, DY32, (2, 8, 16)),
}


def _rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.parametrize("op", CALLS_BY_OP)
def test_ten_thousand_calls_do_not_grow_memory(op):
    call = CALLS_BY_OP[op]
    tracemalloc.start()
    try:
        for _ in range(2000):  # warm-up: compile, fill caches and the allocator's free lists
            call()
        gc.collect()
        blocks0 = len(tracemalloc.take_snapshot().traces)
        rss0 = _rss()
        for _ in range(CALLS):
            call()
        gc.collect()
        rss1 = _rss()
        blocks1 = len(tracemalloc.take_snapshot().traces)
    finally:
        tracemalloc.stop()
    assert UNDER_ASAN or rss1 - rss0 <= RSS_BOUND, f"RSS grew by {rss1 - rss0} bytes over {CALLS} calls"
    assert blocks1 - blocks0 <= BLOCKS_BOUND, f"{blocks1 - blocks0} more live Python allocations"


def test_cache_stays_within_capacity_and_frees_evicted_ops():
    cache = _compiled.CACHE
    capacity, cache.capacity = cache.capacity, 4
    try:
        cache.clear()
        refs = []
        for n in range(1, 13):  # 12 distinct shapes: 12 compiled ops
            og.conv_transpose(np.ones((1, n, 2), np.float32), np.ones((1, 3, 2), np.float32))
            assert len(cache) <= 4
            refs.extend(weakref.ref(op) for op in cache.values())
        gc.collect()
        alive = {id(r()) for r in refs if r() is not None}
        assert len(alive) <= 4, "evicted compiled ops are still alive"
        assert cache.misses == 12 and cache.hits == 0
    finally:
        cache.capacity = capacity
        cache.clear()
