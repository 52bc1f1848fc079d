"""Python threads calling oneDNN at once: correct results, no deadlock, and the
GIL really is released while oneDNN executes.

Every wait has a timeout, so a deadlock fails the test instead of hanging it.
oneDNN runs each call on its own OpenMP team (2 threads on the CI machine);
the tests only assume that the OS eventually schedules every thread.
"""

import threading
import time

import numpy as np
import pytest

import onednn_graph as og
from onednn_graph import reference as R
from helpers import assert_matches_reference, random, run_python

TIMEOUT = 120  # seconds; far above the few seconds these tests take


def _problems(rng):
    """(name, call, reference, args, kwargs, terms) of each op, small, NCX rank 2."""
    kw = dict(strides=2, pads_begin=1, data_format="NCX", weights_format="IOX")
    x = random(rng, (2, 4, 6, 5), "f32")
    w = random(rng, (4, 3, 3, 3), "f32")
    dy = random(rng, og.output_shape("ConvTranspose", [x.shape, w.shape], **kw), "f32")
    wc = random(rng, (3, 4, 3, 3), "f32")  # OIX: C_out 3, C_in 4
    kc = dict(kw, weights_format="OIX")
    dyc = random(rng, og.shapes.plan("Convolution", [x.shape, wc.shape], **kc).output_shape, "f32")
    return [
        ("ct", og.conv_transpose, R.conv_transpose, (x, w), kw, 4 * 9),
        ("ctbd", og.conv_transpose_backward_data, R.conv_transpose_backward_data, (dy, w), kw, 3 * 9),
        ("ctbw", og.conv_transpose_backward_weights, R.conv_transpose_backward_weights, (x, dy),
         dict(kw, weights_shape=w.shape), 2 * int(np.prod(dy.shape[2:]))),
        ("cbd", og.convolution_backward_data, R.convolution_backward_data, (dyc, wc),
         dict(kc, dst_shape=x.shape), 3 * 9),
    ]


def _run_all(jobs, workers):
    """Run the jobs on `workers` daemon threads; a deadlock fails after TIMEOUT
    instead of hanging the run (a thread pool would join a stuck worker forever)."""
    results, lock, todo = [None] * len(jobs), threading.Lock(), list(enumerate(jobs))

    def worker():
        while True:
            with lock:
                if not todo:
                    return
                i, job = todo.pop()
            try:
                results[i] = job()
            except BaseException as exc:  # handed to the main thread below
                results[i] = exc

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(workers)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + TIMEOUT
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    assert not any(t.is_alive() for t in threads), "deadlock: a thread is stuck"
    for r in results:
        if isinstance(r, BaseException):
            raise r
    return results


def test_threads_share_one_compiled_op(rng):
    name, call, ref, args, kw, terms = _problems(rng)[0]
    inputs = [(random(rng, args[0].shape, "f32"), args[1]) for _ in range(16)]
    results = _run_all([lambda a=a: [call(*a, **kw) for _ in range(5)] for a in inputs], workers=8)
    for a, outs in zip(inputs, results):
        for got in outs:
            assert_matches_reference(got, ref, a, kw, "f32", terms)


def test_threads_run_different_ops_at_once(rng):
    problems = _problems(rng) * 4
    results = _run_all([lambda p=p: p[1](*p[3], **p[4]) for p in problems], workers=8)
    for (name, call, ref, args, kw, terms), got in zip(problems, results):
        assert_matches_reference(got, ref, args, kw, "f32", terms)


def test_threads_share_one_backward_weights_op(rng):
    """The same compiled ConvTransposeBackwardWeights from 8 threads at once. Its
    kernel synchronizes its OpenMP threads with a spin barrier; oneDNN 3.2 hung
    in it when one compiled partition ran on two threads at once, so the package
    runs each compiled partition on one thread at a time (different ones in
    parallel)."""
    name, call, ref, args, kw, terms = _problems(rng)[2]
    want = call(*args, **kw)
    results = _run_all([lambda: [call(*args, **kw) for _ in range(10)] for _ in range(16)], workers=8)
    for outs in results:
        for got in outs:
            np.testing.assert_array_equal(got, want)  # same kernel, same inputs: same bits


def test_threads_writing_into_their_own_out(rng):
    """One compiled op, many threads, each writing in place into its own `out`."""
    name, call, ref, args, kw, terms = _problems(rng)[1]
    want = call(*args, **kw)
    outs = [np.full_like(want, np.nan) for _ in range(12)]
    _run_all([lambda o=o: call(*args, out=o, **kw) for o in outs], workers=6)
    for o in outs:
        np.testing.assert_array_equal(o, want)  # same kernel, same inputs: same bits


def test_threads_compiling_different_shapes_at_once(rng):
    """Cache misses from many threads: each compiles, none sees another's op."""
    shapes = [(1, 2, n) for n in range(3, 15)]
    xs = [random(rng, s, "f32") for s in shapes]
    w = random(rng, (2, 3, 2), "f32")
    kw = dict(strides=2, data_format="NCX", weights_format="IOX")
    results = _run_all([lambda x=x: og.conv_transpose(x, w, **kw) for x in xs], workers=6)
    for x, got in zip(xs, results):
        assert_matches_reference(got, R.conv_transpose, (x, w), kw, "f32", 2 * 2)


def test_threads_call_while_the_cache_drops_their_ops(rng):
    """Calls from many threads while others shrink and clear the cache: an op
    dropped while it runs without the GIL must stay alive until it returns."""
    shapes = [(1, 2, n) for n in range(3, 9)]
    xs = [random(rng, s, "f32") for s in shapes]
    w = random(rng, (2, 3, 2), "f32")
    kw = dict(strides=2, data_format="NCX", weights_format="IOX")
    capacity = og.cache.cache_info().capacity

    def churn():
        for i in range(40):
            og.cache.set_cache_capacity(i % 3)
            og.cache.clear_cache()
        return None

    try:
        jobs = [lambda x=x: [og.conv_transpose(x, w, **kw) for _ in range(20)] for x in xs]
        results = _run_all(jobs + [churn, churn], workers=8)
    finally:
        og.cache.set_cache_capacity(capacity)
    for x, outs in zip(xs, results):
        for got in outs:
            assert_matches_reference(got, R.conv_transpose, (x, w), kw, "f32", 2 * 2)


def _long_call():
    """A compiled ConvTranspose and a closure executing it once (70-90 ms on 2 idle cores,
    so that even a fast machine stays above the 20 ms the GIL test needs)."""
    e = og.Engine()
    x_shape, w_shape = (32, 64, 48, 48), (64, 64, 3, 3)
    x = og.LogicalTensor(0, "f32", x_shape)
    w = og.LogicalTensor(1, "f32", w_shape)
    y = og.LogicalTensor(2, "f32", None)
    g = og.Graph()
    g.add_op(og.Op(0, "ConvTranspose", [x, w], [y], {
        "strides": [1, 1], "pads_begin": [0, 0], "pads_end": [0, 0], "dilations": [1, 1],
        "data_format": "NCX", "weights_format": "IOX"}))
    g.finalize()
    [p] = g.get_partitions()
    cp = p.compile([x, w], [y], e)
    y = cp.query_logical_tensor(2)
    ins = [og.Tensor(x, e, np.ones(x_shape, np.float32)), og.Tensor(w, e, np.ones(w_shape, np.float32))]
    out = og.Tensor(y, e, np.zeros(y.shape, np.float32))
    stream = og.Stream(e)
    return lambda: cp.execute(stream, ins, [out])


def test_gil_is_released_while_onednn_executes():
    """A pure-Python thread keeps running while oneDNN executes.

    The ticker appends time stamps in a loop; it can only do so while it holds
    the GIL. If execute() held the GIL, the ticker could only tick in the
    Python code around the native call (well under a millisecond, or one
    5 ms switch interval), never in the middle half of a call lasting 20 ms
    or more. With the GIL released it ticks throughout. This asserts an
    order of events, not a speed.
    """
    run = _long_call()
    run()  # warm-up
    stamps, stop = [], threading.Event()

    def tick():
        while not stop.is_set():
            stamps.append(time.perf_counter())

    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    try:
        windows = []
        for _ in range(3):
            t0 = time.perf_counter()
            run()
            windows.append((t0, time.perf_counter()))
    finally:
        stop.set()
        ticker.join(TIMEOUT)
    assert not ticker.is_alive()
    assert all(t1 - t0 > 0.02 for t0, t1 in windows), f"kernel too short to tell: {windows}"
    middle = [sum(t0 + (t1 - t0) / 4 < s < t1 - (t1 - t0) / 4 for s in stamps) for t0, t1 in windows]
    assert max(middle) >= 3, f"the ticker did not run during oneDNN's calls: {middle} ticks"


@pytest.mark.parametrize("workers", [2, 8])
def test_low_level_objects_shared_by_threads(workers):
    """One CompiledPartition executed by several threads, each with its own stream."""
    e = og.Engine()
    x = og.LogicalTensor(0, "f32", (1, 2, 5))
    w = og.LogicalTensor(1, "f32", (2, 3, 2))
    y = og.LogicalTensor(2, "f32", (1, 3, 6))
    g = og.Graph()
    g.add_op(og.Op(0, "ConvTranspose", [x, w], [y], {
        "strides": [1], "pads_begin": [0], "pads_end": [0], "dilations": [1],
        "data_format": "NCX", "weights_format": "IOX"}))
    g.finalize()
    cp = g.get_partitions()[0].compile([x, w], [y], e)
    rng = np.random.default_rng(1)
    ws = rng.uniform(-1, 1, (2, 3, 2)).astype(np.float32)

    def job(seed):
        xs = np.random.default_rng(seed).uniform(-1, 1, (1, 2, 5)).astype(np.float32)
        out = np.zeros((1, 3, 6), np.float32)
        stream = og.Stream(e)
        for _ in range(20):
            cp.execute(stream, [og.Tensor(x, e, xs), og.Tensor(w, e, ws)], [og.Tensor(y, e, out)])
        return xs, out

    kw = dict(data_format="NCX", weights_format="IOX")
    for xs, out in _run_all([lambda s=s: job(s) for s in range(workers * 2)], workers):
        assert_matches_reference(out, R.conv_transpose, (xs, ws), kw, "f32", 2 * 2)


# Below AVX2, oneDNN 3.2's gemm-based convolutions fail (invalid_arguments) or crash
# when a compiled partition runs on another thread than the one that compiled it
# (cpp/onednn_thread.hpp). Each op is compiled on the main thread (its first call),
# then run from new threads, two ops at once, against the reference.
_OTHER_THREADS = """
import numpy as np
import onednn_graph as og
import test_threads as T
from helpers import assert_matches_reference
problems = T._problems(np.random.default_rng(0))
for p in problems:
    p[1](*p[3], **p[4])
for _ in range(3):
    results = T._run_all([lambda p=p: p[1](*p[3], **p[4]) for p in problems * 2], workers=4)
    for (name, call, ref, args, kw, terms), got in zip(problems * 2, results):
        assert_matches_reference(got, ref, args, kw, "f32", terms)
print(og.system.cpu_isa())
"""


@pytest.mark.parametrize("isa", ["SSE41", "AVX"])
def test_a_cpu_below_avx2_runs_ops_from_any_thread(monkeypatch, isa):
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", isa)
    assert run_python(_OTHER_THREADS).split() == [isa.lower()]
