"""An op's batch in parts (_impl.batch_parts): one partition compiled for a few samples,
run once per part on views of the caller's arrays, natively (DirectCall) and on the
Python path. Truth: the reference within the op's bound, and the whole batch's
result bit for bit (each output sample depends on its own input sample only, and
the same kernels run); the rule that chooses parts is tested on its own inputs, not
on this CPU's timings."""

import numpy as np
import pytest

import onednn_graph as og
from onednn_graph import _core, shapes
from onednn_graph._impl import (arrays as _arrays, batch_parts as _batch_parts, compiled as _compiled,
                                lowering as _lowering, version as _version)
from onednn_graph._tools import support as _support

KINDS = ["ConvTranspose", "ConvTransposeBackwardData", "ConvolutionBackwardData"]


def _native(kind, data_format, bias=False):
    """A small problem of `kind` (batch 2, groups 2, a crop for ConvTranspose's
    output_padding), as oneDNN is handed it: (way, arrays, out, target)."""
    p = _support.problem(_support.Case(kind, "f32", data_format=data_format, groups=2,
                                       output_padding=0 if kind == "ConvolutionBackwardData" else 1,
                                       bias=bias))
    in_shapes = [a.shape for a in p.args]
    way = _lowering.lower(shapes.plan(kind, in_shapes, **p.kwargs), in_shapes)
    arrays, out = list(p.args), np.full(p.output_shape, np.nan, np.float32)
    index = _lowering.geometry_tensor(kind) if way.crop else None
    target = out
    if index is not None and index >= 0:
        arrays[index] = _arrays.crop(arrays[index], data_format, way.crop)
    elif index is not None:
        target = _arrays.crop(out, data_format, way.crop)
    return p, way, arrays, out, target


def _op(way, arrays, target, rows):
    return _compiled.CompiledOp(way.kind, way.attrs, "f32", [_compiled.meta(a) for a in arrays],
                                _compiled.meta(target), input_order=way.input_order, rows=rows)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("data_format", ["NCX", "NXC"])
def test_an_op_runs_its_batch_in_parts(kind, data_format):
    """Compiled for one sample of two: the Python path and the native call each equal
    the whole batch's result bit for bit, within the reference's bound."""
    p, way, arrays, out, target = _native(kind, data_format, bias=kind == "ConvTranspose")
    whole = _op(way, arrays, target, 0)
    parted = _op(way, arrays, target, 1)
    assert (whole.rows, parted.rows) == (0, 1)
    assert parted.batched == ((way.input_order or (0,))[0],)
    # The partition is one sample's; the op still describes the whole batch.
    assert parted.compiled.query_logical_tensor(parted.output.id).shape[0] == 1
    assert parted.output.shape == whole.output.shape
    whole.execute(arrays, target)
    expected = out.copy()
    result = _support._check(p, expected)
    assert result.ok, str(result)
    out.fill(np.nan)
    parted.execute(arrays, target)
    np.testing.assert_array_equal(out, expected)
    again = np.full_like(out, np.nan)
    view = _arrays.crop(again, data_format, way.crop) if target is not out else again
    call = parted.direct_call(target.shape, target.dtype)
    assert call.run(_compiled.stream(), arrays, view) is view
    np.testing.assert_array_equal(again, expected)
    # A reproducer writes the op as the call computes it: the whole batch.
    from onednn_graph import reproducer
    graph = reproducer.reproducer(parted).native["graph"]
    assert graph[0]["outputs"][0]["shape"][0] == target.shape[0]


def test_a_parted_call_refuses_what_the_whole_call_refuses():
    """Refused, nothing written: a batch of another size, an `out` whose other part
    overlaps an input (each part's own check would not see it)."""
    p, way, arrays, out, target = _native("ConvTransposeBackwardData", "NCX")
    parted = _op(way, arrays, target, 1)
    call = parted.direct_call(target.shape, target.dtype)
    fresh = np.full_like(target, 7)
    shorter = [a[:1] if i in parted.batched else a for i, a in enumerate(arrays)]
    assert call.run(_compiled.stream(), shorter, fresh) is None
    assert (fresh == 7).all()
    # diff_src written over diff_dst's memory: the second part's output is the first's input
    big = arrays[0]
    flat = np.zeros(big.size + target.size, np.float32)
    flat[target.size:target.size + big.size] = big.ravel()
    inputs = [flat[target.size:].reshape(big.shape), arrays[1]]
    overlapping = flat[target.size // 2:target.size // 2 + target.size].reshape(target.shape)
    before = flat.copy()
    assert call.run(_compiled.stream(), inputs, overlapping) is None
    np.testing.assert_array_equal(flat, before)
    with pytest.raises(ValueError):  # the functional API names it
        og.conv_transpose_backward_data(inputs[0], arrays[1], **p.kwargs, out=overlapping)
    np.testing.assert_array_equal(flat, before)


def test_batch_weights_gradients_never_run_in_parts():
    """ConvTransposeBackwardWeights sums over the batch: compiled with rows, it runs
    the batch at once."""
    p = _support.problem(_support.Case("ConvTransposeBackwardWeights", "f32", data_format="NCX"))
    in_shapes = [a.shape for a in p.args]
    way = _lowering.lower(shapes.plan("ConvTransposeBackwardWeights", in_shapes, **p.kwargs), in_shapes)
    out = np.empty(p.output_shape, np.float32)
    op = _op(way, p.args, out, 1)
    assert op.rows == 0 and not _batch_parts.parted("ConvTransposeBackwardWeights")


# The depthwise ConvTranspose (8, 64, 32, 32) k4 s2 p1, NCX: 1.25 MiB of data per sample.
DW = dict(kind="ConvTranspose", dtype="f32", data_format="NCX",
          input_shapes=[(8, 64, 32, 32), (64, 1, 4, 4)], output_shape=(8, 64, 64, 64),
          flops=2 * 8 * 64 * 16 * 32 * 32, version=(3, 2), isa="avx512_core_bf16")


def _rows(monkeypatch, l2=1 << 20, **changes):
    monkeypatch.setattr(_version, "l2_cache_bytes", lambda: l2)
    monkeypatch.setattr(_batch_parts, "OP_PARTS", True)
    args = dict(DW, threads=1)
    args.update(changes)
    return _batch_parts.op_rows(**args)


def test_the_rule_runs_a_depthwise_ncx_batch_in_parts_that_fit_the_threads_caches(monkeypatch):
    """Budget: 2 level-2 caches per thread, less the weights; parts only where the
    batch's data is more than three budgets."""
    assert _rows(monkeypatch) == 1          # 2 MiB budget: one 1.25 MiB sample
    big = dict(input_shapes=[(32, 64, 32, 32), (64, 1, 4, 4)], output_shape=(32, 64, 64, 64),
               flops=4 * DW["flops"])
    assert _rows(monkeypatch, threads=2, **big) == 2  # 4 MiB: two samples (three don't divide 32)
    assert _rows(monkeypatch, l2=2 << 20, **big) == 2
    assert _rows(monkeypatch, isa="avx2") == 1  # measured capped at AVX2 too
    assert _rows(monkeypatch, kind="ConvolutionBackwardData") == 1
    # CTBD: the big tensor is the input
    assert _rows(monkeypatch, kind="ConvTransposeBackwardData",
                 input_shapes=[(8, 64, 64, 64), (64, 1, 4, 4)], output_shape=(8, 64, 32, 32)) == 1


@pytest.mark.parametrize("change, why", [
    (dict(data_format="NXC"), "channels-last: read in place by more kernels"),
    (dict(dtype="bf16"), "bf16's own kernels"),
    (dict(version=(3, 13)), "not measured on 3.13"),
    (dict(isa="avx512_core_amx"), "not measured on Sapphire Rapids"),
    (dict(kind="ConvTransposeBackwardWeights"), "sums over the batch"),
    (dict(flops=32 * 4 * 8 * (64 * 32 * 32 + 64 * 64 * 64)), "32 FLOPs a byte on one thread"),
    (dict(threads=2, flops=8 * 4 * 8 * (64 * 32 * 32 + 64 * 64 * 64)), "8 FLOPs a byte on two"),
    (dict(l2=2 << 20), "the batch's 10 MiB are at most three 4 MiB budgets"),
    (dict(threads=2), "... as on two threads of 1 MiB level-2 caches"),
    (dict(l2=1 << 19), "one sample outgrows the 1 MiB budget"),
    (dict(input_shapes=[(8, 64, 32, 32), (64, 1, 4, 4), (64, 8192)]), "weights fill the budget"),
    (dict(input_shapes=[(1, 64, 32, 32), (64, 1, 4, 4)], output_shape=(1, 64, 64, 64)), "one sample"),
])
def test_the_rule_keeps_the_batch_whole_where_parts_were_not_measured_to_pay(monkeypatch, change, why):
    assert _rows(monkeypatch, **change) == 0, why


def test_the_switch_turns_parts_off(monkeypatch):
    assert _rows(monkeypatch) == 1
    monkeypatch.setattr(_batch_parts, "OP_PARTS", False)
    assert _batch_parts.op_rows(**dict(DW, threads=1)) == 0


def test_the_functional_call_says_when_it_runs_in_parts(monkeypatch):
    """On one thread (where the package sets threads: OpenMP) the issue's depthwise call
    runs in parts where the rule says so for this build and CPU; its lowering says how
    many samples a part holds, and the result equals the whole batch's bit for bit."""
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (8, 64, 32, 32)).astype(np.float32)
    w = rng.uniform(-1, 1, (64, 1, 4, 4)).astype(np.float32)
    kw = dict(strides=2, pads_begin=1, pads_end=1, groups=64, data_format="NCX", weights_format="IOX")
    monkeypatch.setattr(_version, "l2_cache_bytes", lambda: 1 << 20)
    threads = 1 if _core.can_limit_threads() else None
    expected_rows = _batch_parts.op_rows(**dict(DW, threads=threads or 0, version=_lowering.LINKED,
                                                isa=_lowering.HOST_ISA))
    op = og.compile_op("ConvTranspose", src=x, weights=w, threads=threads, **kw)
    assert (f"{expected_rows} sample" in op.lowering) == bool(expected_rows), op.lowering
    monkeypatch.setattr(_batch_parts, "OP_PARTS", False)
    whole = og.compile_op("ConvTranspose", src=x, weights=w, threads=threads, **kw)
    assert "at a time" not in whole.lowering
    np.testing.assert_array_equal(op(x, w), whole(x, w))


def test_info_says_whether_batches_run_in_parts(monkeypatch):
    """capabilities() and `onednn-graph info` say it, from the switch and whether this
    build and ISA were measured."""
    caps = og.system.capabilities()["batch_parts"]
    assert caps == _batch_parts.summary(_lowering.LINKED, _lowering.HOST_ISA)
    monkeypatch.setattr(_batch_parts, "OP_PARTS", True)
    assert _batch_parts.summary((3, 2), "avx2")["text"].startswith("memory-bound f32 NCX calls in parts")
    assert "not measured for oneDNN 3.13 on avx2" in _batch_parts.summary((3, 13), "avx2")["text"]
    monkeypatch.setattr(_batch_parts, "OP_PARTS", False)
    off = _batch_parts.summary((3, 2), "avx2")
    assert not off["enabled"] and "ONEDNN_GRAPH_BATCH_PARTS=0" in off["text"]
