"""Small problems run on one OpenMP thread (``_plan.threads``); where oneDNN is not
OpenMP (PyPI's 3.13: SYCL), a thread count warns that it has no effect.

oneDNN 3.2 compiles a kernel for the thread count it finds, and the package
sets that count around compile and execute in the calling thread only. Truth:
the NumPy reference with the package's derived bound, on both thread counts
(the rest of the suite's problems are small, so they run on one thread);
OpenMP's own setting, read through ctypes, for the restore.
"""

import ctypes

import pytest

import onednn_graph as og
from onednn_graph import _core
from onednn_graph._impl import plan as _plan
from onednn_graph._tools import support as _support
from onednn_graph._impl import registry
from helpers import random

openmp_only = pytest.mark.skipif(not _core.can_limit_threads(),
                                 reason="oneDNN does not use a loaded OpenMP runtime here")

KINDS = ["ConvTranspose", "ConvTransposeBackwardData", "ConvTransposeBackwardWeights",
         "ConvolutionBackwardData"]
GEOMETRIES = [(1, 0, 0, 1, 0), (2, 1, 1, 1, 0), (2, 0, 1, 2, 1), (2, 0, 0, 1, 3)]


def _omp_max_threads():
    # The runtime oneDNN loaded, found by soname as the package finds it.
    return ctypes.CDLL("libgomp.so.1", mode=ctypes.RTLD_GLOBAL).omp_get_max_threads()


@openmp_only
@pytest.mark.parametrize("small_flops", [0, 1 << 60], ids=["default-threads", "one-thread"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("geometry", GEOMETRIES)
@pytest.mark.parametrize("data_format", ["NCX", "NXC"])
def test_both_thread_counts_compute_the_op(monkeypatch, small_flops, kind, geometry, data_format,
                                           dtype):
    monkeypatch.setattr(_plan, "SMALL_FLOPS", small_flops)
    s, pb, pe, d, op = geometry
    p = _support.problem(_support.Case(kind, dtype, data_format=data_format, strides=s,
                                       pads_begin=pb, pads_end=pe, dilations=d, output_padding=op))
    inputs = dict(zip(registry.input_names(kind), p.args))
    compiled = og.compile_op(kind, **inputs, **p.kwargs)
    assert compiled.threads == (1 if small_flops else None)
    result = _support._check(p, compiled(*p.args))
    assert result.ok, str(result)


@openmp_only
def test_small_problems_take_one_thread_and_large_ones_all(rng):
    x, w = random(rng, (1, 8, 4, 4), "f32"), random(rng, (8, 8, 2, 2), "f32")  # 8 KFLOP
    small = og.compile_op("ConvTranspose", src=x, weights=w, strides=2, data_format="NCX",
                          weights_format="IOX")
    assert small.threads == 1
    x = random(rng, (1, 64, 16, 16), "f32")  # 2 * 64 * 64 * 4 * 256 = 8.4 MFLOP
    w = random(rng, (64, 64, 2, 2), "f32")
    large = og.compile_op("ConvTranspose", src=x, weights=w, strides=2, data_format="NCX",
                          weights_format="IOX")
    assert large.threads is None


@openmp_only
def test_the_callers_openmp_setting_is_restored(rng):
    before = _omp_max_threads()
    if before < 2:
        pytest.skip("OpenMP runs one thread here already")
    x, w = random(rng, (1, 8, 4, 4), "f32"), random(rng, (8, 8, 2, 2), "f32")
    op = og.compile_op("ConvTranspose", src=x, weights=w, strides=2, data_format="NCX",
                       weights_format="IOX")
    assert op.threads == 1 and _omp_max_threads() == before  # after compiling
    op(x, w)
    assert _omp_max_threads() == before  # after executing


def test_a_negative_thread_count_is_refused(rng):
    lt_x, lt_w = og.LogicalTensor(0, "f32", (1, 2, 3)), og.LogicalTensor(1, "f32", (2, 2, 1))
    lt_y = og.LogicalTensor(2, "f32", (1, 2, 3))
    g = og._core.Graph("cpu", "strict")
    g.add_op(og._core.Op(0, "ConvTranspose", [lt_x, lt_w], [lt_y],
                         {"strides": [1], "pads_begin": [0], "pads_end": [0], "dilations": [1],
                          "data_format": "NCX", "weights_format": "IOX"}))
    g.finalize()
    [p] = g.get_partitions("debug")
    with pytest.raises(ValueError, match="threads must be >= 0"):
        p.compile([lt_x, lt_w], [lt_y], og.Engine(), -1)


@openmp_only
def test_the_caller_can_fix_the_thread_count(rng):
    """compile_op(threads=): 1 on a large problem, 0 (oneDNN's default) on a small
    one, and tuning then varies only the lowering. Truth: the reference."""
    kind = "ConvTransposeBackwardData"
    p = _support.problem(_support.Case(kind, "f32", data_format="NXC", strides=2))
    inputs = dict(zip(registry.input_names(kind), p.args))
    assert og.compile_op(kind, **inputs, **p.kwargs).threads == 1  # small: the package's choice
    op = og.compile_op(kind, threads=0, tune=True, **inputs, **p.kwargs)
    assert op.threads is None and not any("thread" in way for way in op.tuning)
    result = _support._check(p, op(*p.args))
    assert result.ok, str(result)
    x, w = random(rng, (1, 64, 16, 16), "f32"), random(rng, (64, 64, 2, 2), "f32")  # 8.4 MFLOP
    assert og.compile_op("ConvTranspose", src=x, weights=w, strides=2, data_format="NCX",
                         weights_format="IOX", threads=1).threads == 1


@pytest.mark.parametrize("bad", [-1, 1.5, "2", True])
def test_a_bad_thread_count_names_the_argument(rng, bad):
    x, w = random(rng, (1, 8, 4, 4), "f32"), random(rng, (8, 8, 2, 2), "f32")
    with pytest.raises(ValueError, match="threads must be an int >= 0"):
        og.compile_op("ConvTranspose", src=x, weights=w, threads=bad)


@pytest.mark.skipif(_core.can_limit_threads(), reason="oneDNN uses OpenMP here: threads take effect")
def test_a_thread_count_says_it_has_no_effect_where_oneDNN_is_not_openmp(rng):
    """PyPI's oneDNN 3.13 runs its CPU kernels in SYCL host tasks on TBB: the count
    cannot be set per call, so asking for one warns and the op runs on the default.
    Truth: the reference (the op still runs, within the package's bound)."""
    x, w = random(rng, (1, 3, 3, 4), "f32"), random(rng, (2, 2, 5, 4), "f32")  # NXC, XOI
    with pytest.warns(RuntimeWarning, match="threads=1 has no effect .* sycl CPU runtime"):
        op = og.compile_op("ConvTranspose", src=x, weights=w, strides=2, threads=1)
    assert op.threads is None
    got = op(x, w)
    want = og.reference.conv_transpose(x, w, strides=2)
    assert abs(got - want).max() <= 1e-5 * max(1.0, abs(want).max())


@openmp_only
@pytest.mark.parametrize("way_of,geometry,fmt", [
    ("subpixel_way", (4, 2, 1, 1, 0), "NXC"),  # the phases copied into place
    ("matmul_way", (2, 2, 0, 0, 0), "NCX"),    # the big tensor rearranged from the product
    ("packed_way", (3, 1, 1, 1, 0), "NCX"),    # the packed positions copied out
])
def test_a_forms_copies_run_on_its_thread_count(rng, monkeypatch, way_of, geometry, fmt):
    """A formulation's own copies run on at most the thread count its Convolution or
    MatMul was compiled for (one here, as on a busy machine the load-aware count): a copy
    on every thread waits for the threads other processes hold. Truth: the count each
    copy was handed, and the reference."""
    import dataclasses

    import numpy as np
    from onednn_graph._impl import call as _call, lowering as _lowering
    from helpers import assert_call_matches_reference, plan_call, strided_problem

    arrays, kw = strided_problem(rng, "ConvTranspose", fmt, "IOX", 2, geometry, c=16, o=3,
                                 spatial=(12, 12))
    cp = plan_call("ConvTranspose", ("src", "weights"), arrays, dict(kw))
    way = getattr(_lowering, way_of)(cp.plan, cp.input_shapes, cp.native)
    assert way is not None
    prepared = _call.prepare(dataclasses.replace(cp, way=way), arrays, threads=1)
    counts, cast = [], _core.cast
    monkeypatch.setattr(_core, "cast", lambda src, dst, threads=0, *a: (counts.append(threads),
                                                                         cast(src, dst, threads, *a)))
    out = np.full(cp.result_shape, np.nan, np.float32)
    prepared.run(list(arrays), out)
    assert counts and set(counts) == {1}, counts
    assert_call_matches_reference("ConvTranspose", arrays, kw, out, "f32")
