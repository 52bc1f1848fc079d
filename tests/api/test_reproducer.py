"""Reproducers of functional-API calls, compiled ops and graphs, replayed by the
driver in exact mode (oneDNN must equal the reference exactly); and the
problem-size arithmetic (_plan.problem) the driver and the tolerances use."""

import json

import numpy as np
import pytest

import onednn_graph as og
from onednn_graph import shapes
from onednn_graph.reproducer import reproducer
from onednn_graph._impl import compiled as _compiled, lowering as _lowering, plan as _plan
from onednn_graph._tools import runner as _runner
from onednn_graph.tolerance import accumulation_terms, exact_range

KW = dict(strides=2, pads_begin=1, pads_end=0, data_format="NCX")


def _calls(rng):
    x = rng.integers(-2, 3, (1, 4, 5, 6)).astype(np.float32)
    w = rng.integers(-2, 3, (4, 3, 3, 2)).astype(np.float32)          # IOX
    y_shape = shapes.output_shape("ConvTranspose", [x.shape, w.shape], weights_format="IOX", **KW)
    dy = rng.integers(-2, 3, y_shape).astype(np.float32)
    w_conv = rng.integers(-2, 3, (4, 2, 3, 2)).astype(np.float32)     # OIX, groups 2
    dy_conv = rng.integers(-2, 3, (1, 4, 4, 5)).astype(np.float32)
    return {
        "ConvTranspose": (og.conv_transpose, (x, w), dict(KW, weights_format="IOX")),
        "ConvTransposeBackwardData": (og.conv_transpose_backward_data, (dy, w),
                                      dict(KW, weights_format="IOX", dilations=2, pads_end=2)),
        "ConvTransposeBackwardWeights": (og.conv_transpose_backward_weights, (x, dy, w.shape),
                                         dict(KW, weights_format="IOX")),
        "ConvolutionBackwardData": (og.convolution_backward_data, (dy_conv, w_conv, (1, 4, 8, 9)),
                                    dict(KW, weights_format="OIX", groups=2)),
    }


@pytest.mark.parametrize("kind", ["ConvTranspose", "ConvTransposeBackwardData",
                                  "ConvTransposeBackwardWeights", "ConvolutionBackwardData"])
def test_reproducer_replays_exactly(rng, kind, tmp_path):
    fn, args, kw = _calls(rng)[kind]
    r = reproducer(fn, *args, **kw)
    assert r.spec["graph"][0]["kind"] == kind
    for native in (False, True):
        path = tmp_path / f"{kind}-{native}.json"
        command = r.save(path, native=native)
        assert command.startswith("./benchdnn --graph --mode=C --dt=f32 --in-shapes=0:")
        assert command.endswith(f"--case={path}")
        result = _runner.run(og.load_graph(path), exact=True)
        assert result.passed, [c.comparison.message for c in result.checks]
    # The file's output is what the call returns.
    out = r.spec["graph"][0]["outputs"][0]
    assert out["shape"] == list(fn(*args, **kw).shape)


def test_lowered_calls_write_what_onednn_ran(rng):
    fn, args, kw = _calls(rng)["ConvolutionBackwardData"]
    r = reproducer(fn, *args, **kw)
    assert r.native["graph"][0]["kind"] == "ConvTranspose"  # groups > 1 runs as ConvTranspose
    fn, args, kw = _calls(rng)["ConvTransposeBackwardData"]
    assert reproducer(fn, *args, **kw).native["graph"][0]["kind"] == "Convolution"


def test_a_call_run_another_way_by_default_writes_that_way(rng, tmp_path):
    """Grouped f32 NXC ConvTransposeBackwardWeights runs as the ConvolutionBackwardWeights
    of diff_dst and src on every CPU family where the linked oneDNN was measured
    (_lowering.preferred, MEASURED): the file has that op, its inputs in the order it
    takes them, and replays exactly. Elsewhere the op runs, and is written, as called."""
    x = rng.integers(-2, 3, (1, 5, 6, 4)).astype(np.float32)
    kw = dict(strides=2, pads_begin=1, pads_end=0, groups=2, data_format="NXC", weights_format="XOI")
    w_shape = (3, 2, 3, 4)
    dy = rng.integers(-2, 3, shapes.output_shape("ConvTranspose", [x.shape, w_shape], **kw))
    dy = dy.astype(np.float32)
    r = reproducer(og.conv_transpose_backward_weights, x, dy, w_shape, **kw)
    [op] = r.native["graph"]
    measured = _lowering.measured(_lowering.LINKED, _lowering.HOST_ISA)
    if measured:
        assert op["kind"] == "ConvolutionBackwardWeights"
        assert [t["shape"] for t in op["inputs"]] == [list(dy.shape), list(x.shape)]
    else:
        assert op["kind"] == "ConvTransposeBackwardWeights"
        assert [t["shape"] for t in op["inputs"]][:2] == [list(x.shape), list(dy.shape)]
    path = tmp_path / "ctbw.json"
    r.save(path, native=True)
    result = _runner.run(og.load_graph(path), exact=True)
    assert result.passed, [c.comparison.message for c in result.checks]


def test_reproducer_runs_nothing(rng):
    fn, args, kw = _calls(rng)["ConvTranspose"]
    out = np.full(fn(*args, **kw).shape, np.nan, np.float32)
    before = _compiled.CACHE.misses + _compiled.CACHE.hits
    reproducer(fn, *args, out=out, **kw)
    assert np.isnan(out).all() and _compiled.CACHE.misses + _compiled.CACHE.hits == before


def test_reproducer_of_a_compiled_op_and_of_a_graph(rng):
    fn, args, kw = _calls(rng)["ConvTranspose"]
    fn(*args, **kw)
    latest = _compiled.CACHE.ops()[-1]
    r = reproducer(latest)
    assert r.spec == r.native and r.spec["graph"][0]["kind"] == latest.kind
    assert _runner.run(og.load_graph(r.spec), exact=True).passed
    op = og.compile_op("ConvTranspose", src=args[0], weights=args[1], **kw)
    assert reproducer(op).spec["graph"][0]["attrs"] == r.spec["graph"][0]["attrs"]
    g = og.load_graph(reproducer(fn, *args, **kw).spec)
    assert reproducer(g).spec == g.to_json()


@pytest.mark.parametrize("target", [np.add, 42])
def test_reproducer_refuses_other_targets(target):
    with pytest.raises(TypeError):
        reproducer(target, 1, 2)


def test_flops_and_terms_by_hand():
    # ConvolutionBackwardData is a ConvTranspose of diff_dst (C 4 -> 4, groups 2):
    # 2 * N 1 * C_src 4 * (C_dst 4 / 2) * the (diff_dst position j, tap t) pairs whose
    # diff_src position 2j - 1 + t (pads_begin 1) is inside it: all but (0, 0) per axis,
    # 4 * 3 - 1 = 11 on axis 0 and 5 * 2 - 1 = 9 on axis 1 (issue 31: pads are not work).
    shapes_in = [(1, 4, 4, 5), (4, 2, 3, 2)]
    p = shapes.plan("ConvolutionBackwardData", shapes_in, dst_shape=(1, 4, 8, 9),
                    weights_format="OIX", groups=2, **KW)
    assert _plan.problem(p, shapes_in).flops == 2 * 4 * 2 * 11 * 9
    assert accumulation_terms(p, shapes_in) == 2 * 6  # C_src/g * K
    p = shapes.plan("ConvTransposeBackwardWeights", [(2, 4, 5, 6), (2, 3, 10, 11)],
                    weights_shape=(4, 3, 3, 2), weights_format="IOX", **KW)
    assert accumulation_terms(p, [(2, 4, 5, 6), (2, 3, 10, 11)]) == 2 * 110  # N * diff_dst
    p = shapes.plan("ConvTranspose", [(1, 4, 5, 6), (4, 3, 3, 2), (3,)], weights_format="IOX", **KW)
    assert accumulation_terms(p, [(1, 4, 5, 6), (4, 3, 3, 2), (3,)]) == 4 * 6 + 1


def test_exact_range_keeps_f32_sums_exact():
    assert exact_range(100) == 4
    for terms in (10**5, 10**6, 10**7):
        r = exact_range(terms)
        assert r == 1 or terms * r * r < 2**24
    assert exact_range(2**30) == 1


def test_reproducer_json_is_plain_json(rng):
    fn, args, kw = _calls(rng)["ConvTransposeBackwardWeights"]
    r = reproducer(fn, *args, **kw)
    assert json.loads(json.dumps(r.spec)) == r.spec
