"""The spec-level Op/Graph/Partition: the s32 shape input, the legacy op, lowerings.

Truth is the functional API's result, itself checked against the reference
in test_ops. Both run the same oneDNN kernels, but the functional API runs
these small problems on one thread (``_plan.threads``) and the partitions here
run on oneDNN's default, so a sum may be split between threads differently
(``same_sums``).
"""

import numpy as np
import pytest

import onednn_graph as og
from helpers import assert_matches_reference, random

ENGINE = og.Engine()
STREAM = og.Stream(ENGINE)
CTBW_ATTRS = {"strides": [2], "pads_begin": [1], "pads_end": [0], "dilations": [1],
              "data_format": "NXC", "weights_format": "XOI"}


def same_sums(got, want, terms=32):
    """Equal up to the order of each output's sum: every output here sums at most
    `terms` products of inputs in [-1, 1), and two f32 summation orders of n
    such products differ by at most 2 * n * eps * sum |product| <= 2 * n^2 * eps."""
    np.testing.assert_allclose(got, want, rtol=0, atol=2 * terms ** 2 * np.finfo(np.float32).eps)


def _run_single_op(kind, attrs, arrays, out_shape, shape_value=None, out_lt_shape=None):
    """Build, compile and run one spec-level op; the shape input goes last if given."""
    dtype = "f32"
    lts = [og.LogicalTensor(i, dtype, a.shape) for i, a in enumerate(arrays)]
    n = len(arrays)
    if shape_value is not None:
        lts.append(og.LogicalTensor(n, "s32", (len(shape_value),)))
    out_lt = og.LogicalTensor(n + 1, dtype, out_lt_shape if out_lt_shape is not None else out_shape)
    g = og.Graph()
    g.add_op(og.Op(0, kind, lts, [out_lt], attrs))
    g.finalize()
    [p] = g.get_partitions()
    assert {lt.id for lt in p.input_ports} == {lt.id for lt in lts}
    engine, stream = ENGINE, STREAM
    cp = p.compile(lts, [out_lt], engine)
    tensors = [og.Tensor(lt, engine, a) for lt, a in zip(lts, arrays)]
    if shape_value is not None:
        tensors.append(og.Tensor(lts[n], engine, np.array(shape_value, np.int32)))
    out = np.full(out_shape, np.nan, np.float32)
    cp.execute(stream, tensors, [og.Tensor(out_lt, engine, out)])
    return out, cp, lts, out_lt


def test_backward_weights_shape_as_s32_input(rng):
    x, dy = random(rng, (2, 5, 4), "f32"), random(rng, (2, 10, 6), "f32")
    want = og.conv_transpose_backward_weights(x, dy, (3, 6, 4), **CTBW_ATTRS)
    got, *_ = _run_single_op("ConvTransposeBackwardWeights", CTBW_ATTRS, [x, dy], (3, 6, 4),
                             shape_value=(3, 6, 4))
    same_sums(got, want)


def test_shape_input_takes_precedence_over_the_attribute(rng):
    # The attribute says kernel 2, the input says 3: the spec says the input wins.
    x, dy = random(rng, (2, 5, 4), "f32"), random(rng, (2, 10, 6), "f32")
    attrs = dict(CTBW_ATTRS, weights_shape=[2, 6, 4])
    want = og.conv_transpose_backward_weights(x, dy, (3, 6, 4), **CTBW_ATTRS)
    got, *_ = _run_single_op("ConvTransposeBackwardWeights", attrs, [x, dy], (3, 6, 4),
                             shape_value=(3, 6, 4))
    same_sums(got, want)


def test_convolution_backward_data_dst_shape_as_s32_input_with_groups(rng):
    # groups > 1 makes the package lower it to ConvTranspose; the s32 input still decides.
    attrs = {"strides": [2, 2], "pads_begin": [0, 1], "pads_end": [1, 0], "dilations": [1, 1],
             "groups": 2, "data_format": "NCX", "weights_format": "OIX"}
    dy, w = random(rng, (1, 6, 3, 4), "f32"), random(rng, (6, 2, 3, 2), "f32")
    want = og.convolution_backward_data(dy, w, (1, 4, 7, 7), **attrs)
    got, *_ = _run_single_op("ConvolutionBackwardData", attrs, [dy, w], (1, 4, 7, 7),
                             shape_value=(1, 4, 7, 7))
    same_sums(got, want)


def test_shape_input_values_that_contradict_the_output_are_refused(rng):
    # Compiled for weights (3, 6, 4); executed with a shape input saying (2, 6, 4):
    # the input wins (spec), so the package recompiles, and the output no longer fits.
    x, dy = random(rng, (2, 5, 4), "f32"), random(rng, (2, 10, 6), "f32")
    out, cp, lts, out_lt = _run_single_op("ConvTransposeBackwardWeights", CTBW_ATTRS, [x, dy],
                                          (3, 6, 4), shape_value=(3, 6, 4))
    tensors = [og.Tensor(lt, ENGINE, a) for lt, a in zip(lts, [x, dy, np.array([2, 6, 4], np.int32)])]
    before = out.copy()
    with pytest.raises(ValueError, match=r"holds \(2, 6, 4\).*compiled with shape \(3, 6, 4\)"):
        cp.execute(STREAM, tensors, [og.Tensor(out_lt, ENGINE, out)])
    np.testing.assert_array_equal(out, before)


@pytest.mark.parametrize("filter_format", ["OIX", "XIO"])
def test_legacy_op_writes_the_legacy_layout(rng, filter_format):
    x, dy = random(rng, (2, 5, 4), "f32"), random(rng, (2, 10, 6), "f32")
    legacy_shape = (6, 4, 3) if filter_format == "OIX" else (3, 4, 6)
    attrs = {"strides": [2], "pads_begin": [1], "pads_end": [0], "dilations": [1],
             "data_format": "NXC", "filter_format": filter_format}
    want = og.conv_transpose_backprop_filters(x, dy, legacy_shape, **attrs)
    lts = [og.LogicalTensor(0, "f32", x.shape), og.LogicalTensor(1, "f32", dy.shape)]
    out_lt = og.LogicalTensor(2, "f32", legacy_shape)
    g = og.Graph()
    g.add_op(og.Op(0, "ConvTransposeBackpropFilters", lts, [out_lt], attrs))
    g.finalize()
    [p] = g.get_partitions()
    engine = ENGINE
    cp = p.compile(lts, [out_lt], engine)
    out = np.full(legacy_shape, np.nan, np.float32)
    cp.execute(STREAM, [og.Tensor(lts[0], engine, x), og.Tensor(lts[1], engine, dy)],
               [og.Tensor(out_lt, engine, out)])
    same_sums(out, want)


def test_output_padding_outside_every_kernel_window_runs_on_a_view_in_the_graph(rng):
    # output_padding 3 >= strides + pads_end: diff_dst's last positions lie outside every
    # kernel window. The partition runs on a view without them, as the functional API
    # does (tests/api/test_graph_crop.py has every op); it used to refuse.
    x, dy = random(rng, (1, 5, 2), "f32"), random(rng, (1, 13, 3), "f32")
    attrs = dict(CTBW_ATTRS, pads_begin=[0], output_padding=[3], weights_shape=[2, 3, 2])
    got, *_ = _run_single_op("ConvTransposeBackwardWeights", attrs, [x, dy], (2, 3, 2))
    want = og.conv_transpose_backward_weights(x, dy, (2, 3, 2), **{k: v for k, v in attrs.items()
                                                                   if k != "weights_shape"})
    same_sums(got, want)


def test_stream_of_another_engine_is_a_clear_error(rng):
    # oneDNN 3.2 itself only says invalid_arguments when it runs the kernel.
    x, dy = random(rng, (2, 5, 4), "f32"), random(rng, (2, 10, 6), "f32")
    out, cp, lts, out_lt = _run_single_op("ConvTransposeBackwardWeights", CTBW_ATTRS, [x, dy], (3, 6, 4),
                                          shape_value=(3, 6, 4))
    other = og.Engine()
    tensors = [og.Tensor(lt, ENGINE, a) for lt, a in zip(lts, [x, dy, np.array([3, 6, 4], np.int32)])]
    before = out.copy()
    with pytest.raises(ValueError, match="another Engine"):
        cp.execute(og.Stream(other), tensors, [og.Tensor(out_lt, ENGINE, out)])
    np.testing.assert_array_equal(out, before)


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_a_low_precision_partition_runs_on_any_cpu(rng, dtype):
    """Where this CPU's oneDNN has no kernel for the dtype (or only the reference one),
    the partition runs in f32 between oneDNN TypeCasts, on the caller's tensors.
    Truth: the reference, with the dtype's bound (tolerance.py)."""
    from onednn_graph._impl import kernels as _kernels
    x, w = random(rng, (2, 5, 4, 3), dtype), random(rng, (3, 3, 6, 3), dtype)  # NXC, XOI
    attrs = {"strides": [2, 2], "pads_begin": [1, 1], "pads_end": [0, 0], "dilations": [1, 1],
             "data_format": "NXC", "weights_format": "XOI"}
    lts = [og.LogicalTensor(0, dtype, x.shape), og.LogicalTensor(1, dtype, w.shape)]
    out_lt = og.LogicalTensor(2, dtype, None)  # unknown: oneDNN (or the chain) infers it
    g = og.Graph()
    g.add_op(og.Op(0, "ConvTranspose", lts, [out_lt], attrs))
    g.finalize()
    [p] = g.get_partitions()
    cp = p.compile(lts, [out_lt], ENGINE)
    out_lt = cp.query_logical_tensor(2)
    assert out_lt.shape == (2, 10, 8, 6) and out_lt.dtype == dtype
    native = dict(attrs, auto_pad="None", groups=1)
    assert cp.runs_in_f32 == _kernels.needs_f32("ConvTranspose", native, dtype,
                                                [x.shape, w.shape], out_lt.shape)
    # Who converts: tensors this small, the package, whatever oneDNN's reorder (_casts).
    if cp.runs_in_f32:
        assert cp.conversions.startswith("converted by the package"), cp.conversions
    else:
        assert cp.conversions is None
    out = np.full(out_lt.shape, np.nan, x.dtype)
    cp.execute(STREAM, [og.Tensor(lts[0], ENGINE, x), og.Tensor(lts[1], ENGINE, w)],
               [og.Tensor(out_lt, ENGINE, out)])
    kw = {k: v for k, v in attrs.items()}
    assert_matches_reference(out, og.reference.conv_transpose, (x, w), kw, dtype, terms=3 * 9)
    with pytest.raises(ValueError, match="output"):  # the checks of a compiled partition
        cp.execute(STREAM, [og.Tensor(lts[0], ENGINE, x), og.Tensor(lts[1], ENGINE, w)],
                   [og.Tensor(og.LogicalTensor(2, dtype, (1, 1, 1, 6)), ENGINE,
                              np.zeros((1, 1, 1, 6), x.dtype))])


def test_a_fused_low_precision_partition_runs_on_any_cpu(rng):
    """ConvTranspose -> ReLU in bf16, under oneDNN's fusion policy: whatever partitions
    it returns run (natively, or in f32 between TypeCasts). Truth: the reference, then
    max(0, .) on the bf16-rounded result, which ReLU keeps exact."""
    x, w = random(rng, (1, 4, 4, 2), "bf16"), random(rng, (2, 2, 3, 2), "bf16")
    attrs = {"strides": [2, 2], "pads_begin": [0, 0], "pads_end": [0, 0], "dilations": [1, 1],
             "data_format": "NXC", "weights_format": "XOI"}
    lts = [og.LogicalTensor(i, "bf16", s) for i, s in enumerate([x.shape, w.shape, (1, 8, 8, 3)])]
    y = og.LogicalTensor(3, "bf16", (1, 8, 8, 3))
    g = og.Graph()
    g.add_op(og.Op(0, "ConvTranspose", lts[:2], [lts[2]], attrs))
    g.add_op(og.Op(1, "ReLU", [lts[2]], [y]))
    g.finalize()
    arrays = {0: x, 1: w, 2: np.full((1, 8, 8, 3), np.nan, x.dtype), 3: np.full((1, 8, 8, 3), np.nan, x.dtype)}
    for p in g.get_partitions():
        ins, outs = list(p.input_ports), list(p.output_ports)
        cp = p.compile(ins, outs, ENGINE)
        if cp.runs_in_f32:
            # The ops of a fused partition stay fused in f32: one f32 partition
            # between the casts.
            chain = cp._native
            compiled = [s for s in chain.steps if isinstance(s[0], og._core.CompiledPartition)]
            onednn_casts = sum(not c.by_package for c in chain.converters)
            assert len(compiled) - onednn_casts == 1, (p.op_ids, chain.steps)
        cp.execute(STREAM, [og.Tensor(t, ENGINE, arrays[t.id]) for t in ins],
                   [og.Tensor(t, ENGINE, arrays[t.id]) for t in outs])
    ct = og.conv_transpose(x, w, strides=2)
    np.testing.assert_array_equal(arrays[3], np.maximum(ct, 0))


def test_a_partition_that_cannot_run_in_any_form_names_op_dtype_and_isa(rng, monkeypatch):
    from onednn_graph._impl import as_f32 as _as_f32, spec_graph as _spec_graph

    def refuse(*args, **kwargs):
        raise og.Error("could not create a primitive descriptor (for the test)", "unimplemented")

    monkeypatch.setattr(_as_f32, "Chain", refuse)
    monkeypatch.setattr(_spec_graph, "_needs_f32", lambda op: True)  # as where no kernel exists
    lts = [og.LogicalTensor(0, "bf16", (1, 4, 2)), og.LogicalTensor(1, "bf16", (3, 3, 2))]
    out_lt = og.LogicalTensor(2, "bf16", (1, 8, 3))
    g = og.Graph()
    g.add_op(og.Op(0, "ConvTranspose", lts, [out_lt], dict(CTBW_ATTRS, strides=[2])))
    g.finalize()
    [p] = g.get_partitions()
    with pytest.raises(og.UnsupportedError) as info:
        p.compile(lts, [out_lt], ENGINE)
    message = str(info.value)
    assert "op 0 ConvTranspose" in message and "bf16" in message and og.system.cpu_isa() in message
    assert "f32" in message and "functional API" in message
