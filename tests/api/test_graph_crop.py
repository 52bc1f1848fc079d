"""The Graph path on cropped geometry: negative pads and output_padding >= strides + pads_end.

oneDNN 3.2 is never handed a negative pad (``_impl.lowering``'s docstring says why);
the op runs on a view of the ConvTranspose-geometry tensor without the positions
outside every kernel window (``NativeOp.crop``). The functional API did that on
arrays; a partition now does it too (``_impl.spec_op.View``). Each problem here runs through
Graph / Partition / CompiledPartition.execute and through ``onednn-graph run``'s
``run_case`` on the graph saved as JSON, and is compared with the float64 reference.

Tolerance: ``helpers.assert_call_matches_reference``, the bound of
``onednn_graph.tolerance`` (two roundings to the dtype plus the f32 bound on a sum of
the op's number of products, whatever their order): a partition runs on oneDNN's
default thread count, so its sums may be split differently from the functional
API's, and the bound holds for any order. The positions outside every kernel window
are not computed at all: they must be exactly zero, or ConvTranspose's bias.
"""

import json

import numpy as np
import pytest

import onednn_graph as og
from onednn_graph import cli, shapes
from onednn_graph._impl import arrays as _arrays, lowering as _lowering
from onednn_graph._impl import registry as _registry
from onednn_graph._impl.plan import plan_call
from helpers import NUMPY, assert_call_matches_reference, random

ENGINE = og.Engine()
STREAM = og.Stream(ENGINE)
CT, CTBD, CTBW, CBD = ("ConvTranspose", "ConvTransposeBackwardData", "ConvTransposeBackwardWeights",
                       "ConvolutionBackwardData")
LEGACY = "ConvTransposeBackpropFilters"
KINDS = (CT, CTBD, CTBW, LEGACY, CBD)
#: Geometry changes from strides 2, pads 0, no output_padding, each making a crop.
CROPS = {
    "negative-pads_begin": dict(pads_begin=-1),
    "negative-pads_end": dict(pads_end=-1),
    "both-negative-stride-3": dict(strides=3, pads_begin=-2, pads_end=-2),
    "output_padding-past-the-windows": dict(pads_begin=1, output_padding=3),  # >= 2 + 0
}
#: What fills the output around the op's result and the gaps of its strided layout.
GAP = 7.0


def _spatial(rank, values):
    return [values] * rank if isinstance(values, int) else list(values)


def problem(rng, kind, data_format, rank, dtype, change, bias=False, slack=0):
    """(arrays, the functional API's keywords, the output shape) for op `kind`: batch 2,
    3 and 5 channels, kernel (3, 2), with `change` to the base geometry; `slack` adds
    positions to ConvolutionBackwardData's dst that its floor leaves over."""
    geometry = dict(dict(strides=2, pads_begin=0, pads_end=0, output_padding=0), **change)
    kw = {name: _spatial(rank, v) for name, v in geometry.items()}
    kw.update(dilations=[1] * rank, data_format=data_format)
    kernel, small = (3, 2)[:rank], (5, 4)[:rank]
    channels_last = data_format == "NXC"
    if kind == CBD:
        del kw["output_padding"]  # the op ignores it: dst_shape fixes the geometry
        kw["weights_format"] = "XIO" if channels_last else "OIX"
        dy = random(rng, shapes.data_shape_for(data_format, 2, 5, small), dtype)
        w = random(rng, (*kernel, 3, 5) if channels_last else (5, 3, *kernel), dtype)
        as_transpose = dict(kw, weights_format=_lowering.CONV_AS_TRANSPOSE_FORMAT[kw["weights_format"]])
        full = shapes.output_shape(CT, [dy.shape, w.shape], **as_transpose)
        dst = shapes.data_shape_for(data_format, 2, 3, [x + slack for x in
                                                         shapes.data_spatial(data_format, full)])
        return [dy, w], dict(kw, dst_shape=list(dst)), tuple(dst)
    kw["weights_format"] = "XOI" if channels_last else "IOX"
    x = random(rng, shapes.data_shape_for(data_format, 2, 3, small), dtype)
    w_shape = (*kernel, 5, 3) if channels_last else (3, 5, *kernel)
    y_shape = tuple(shapes.output_shape(CT, [x.shape, w_shape], **kw))
    if kind == CT:
        arrays = [x, random(rng, w_shape, dtype)] + ([random(rng, (5,), dtype)] if bias else [])
        return arrays, kw, y_shape
    dy = random(rng, y_shape, dtype)
    if kind == CTBD:
        return [dy, random(rng, w_shape, dtype)], kw, tuple(x.shape)
    if kind == CTBW:
        return [x, dy], dict(kw, weights_shape=list(w_shape)), tuple(w_shape)
    # The legacy op: its filter layout has the two channel axes swapped.
    legacy = (*kernel, 3, 5) if channels_last else (5, 3, *kernel)
    del kw["weights_format"]
    return [x, dy], dict(kw, filter_format="XIO" if channels_last else "OIX",
                         filter_shape=list(legacy)), legacy


def single_op_graph(kind, arrays, kw, out_shape, dtype, out_strides=None):
    """A Graph of one spec-level op (the shape keyword as its attribute), its input
    logical tensors and its output's."""
    lts = [og.LogicalTensor(i, dtype, a.shape) for i, a in enumerate(arrays)]
    out_lt = og.LogicalTensor(len(arrays), dtype, out_shape, out_strides)
    graph = og.Graph()
    graph.add_op(og.Op(0, kind, lts, [out_lt], kw))
    graph.finalize()
    return graph, lts, out_lt


def strided_output(shape, dtype):
    """A NaN output array inside a buffer of GAP: every other element of its last axis,
    with GAP around it (the buffer, to check later that only the output was written)."""
    base = np.full(2 * int(np.prod(shape)) + 64, GAP, NUMPY[dtype])
    out = base[32:-32].reshape(*shape[:-1], 2 * shape[-1])[..., ::2]
    out[...] = np.nan
    return out, base


def run_partitions(graph, arrays_by_id):
    """Compile and execute each partition of `graph` (in the order given) on the
    arrays for its ports, by logical-tensor id."""
    partitions = graph.get_partitions()
    for p in partitions:
        ins, outs = p.input_ports, p.output_ports
        cp = p.compile(ins, outs, ENGINE)
        cp.execute(STREAM, [og.Tensor(lt, ENGINE, arrays_by_id[lt.id]) for lt in ins],
                   [og.Tensor(lt, ENGINE, arrays_by_id[lt.id]) for lt in outs])
    return partitions


def left_out(shape, data_format, crop):
    """The positions of a tensor of `shape` that a view without `crop` leaves out."""
    inside = np.zeros(shape, bool)
    _arrays.crop(inside, data_format, crop)[...] = True
    return ~inside


def cropped_tensor(kind):
    """The input the op's crop applies to (diff_dst of the ConvTranspose backward ops),
    or -1: its output."""
    return _lowering.geometry_tensor(CTBW if kind == LEGACY else kind)


def crop_of(kind, arrays, kw):
    native = plan_call(kind, _registry.input_names(kind)[:len(arrays)], arrays, kw).native
    assert native.crop and not native.unreached, native
    return native.crop


def expect_left_out_exactly(got, kind, arrays, kw):
    """Where the op runs on a view of its output: the positions it leaves out are
    exactly the bias (ConvTranspose with one) or zero."""
    fmt = kw["data_format"]
    if cropped_tensor(kind) >= 0:
        return
    mask = left_out(got.shape, fmt, crop_of(kind, arrays, kw))
    assert mask.any()
    want = np.zeros(got.shape, got.dtype)
    if len(arrays) > 2:
        want[...] = arrays[2] if fmt == "NXC" else arrays[2].reshape(-1, *[1] * (got.ndim - 2))
    np.testing.assert_array_equal(got[mask], want[mask])


def hide_unread_inputs(kind, arrays, kw):
    """`arrays` with NaN where a backward op's diff_dst lies outside every kernel window
    (the op never reads those positions), and the same with zeros there for the
    reference; or the arrays twice where the op runs on a view of its output."""
    index = cropped_tensor(kind)
    if index < 0:
        return arrays, arrays
    mask = left_out(arrays[index].shape, kw["data_format"], crop_of(kind, arrays, kw))
    assert mask.any()
    hidden, zeroed = list(arrays), list(arrays)
    hidden[index], zeroed[index] = arrays[index].copy(), arrays[index].copy()
    hidden[index][mask], zeroed[index][mask] = np.nan, 0
    return hidden, zeroed


CASES = [pytest.param(kind, fmt, rank, name, id=f"{kind}-{fmt}-{rank}d-{name}")
         for kind in KINDS for fmt in ("NCX", "NXC") for rank in (1, 2) for name in CROPS
         if not (kind == CBD and "output_padding" in CROPS[name])]


@pytest.mark.parametrize("kind, data_format, rank, crop", CASES)
def test_a_partition_runs_the_cropped_op(rng, kind, data_format, rank, crop, dtype):
    bias = kind == CT and rank == 2  # ConvTranspose with and without its bias
    arrays, kw, out_shape = problem(rng, kind, data_format, rank, dtype, CROPS[crop], bias)
    hidden, zeroed = hide_unread_inputs(kind, arrays, kw)
    out, base = strided_output(out_shape, dtype)
    graph, lts, out_lt = single_op_graph(kind, hidden, kw, out_shape, dtype,
                                         _arrays.element_strides(out))
    assert _lowering.ON_A_VIEW in graph._ops[0].lowering
    [p] = run_partitions(graph, {**{lt.id: a for lt, a in zip(lts, hidden)}, out_lt.id: out})
    assert {lt.id for lt in p.input_ports} == {lt.id for lt in lts}
    assert [lt.id for lt in p.output_ports] == [out_lt.id]
    assert_call_matches_reference(kind, zeroed, kw, out, dtype)
    expect_left_out_exactly(out, kind, arrays, kw)
    # Only the output's elements were written: its gaps and surroundings hold GAP.
    written = np.zeros(base.shape, bool)
    written[32:-32].reshape(*out_shape[:-1], 2 * out_shape[-1])[..., ::2] = True
    assert (base[~written] == GAP).all()


@pytest.mark.parametrize("kind, data_format, rank, crop",
                         [c for c in CASES if c.values[2] == 2 or c.values[0] == CBD])
def test_the_graph_saved_as_json_runs_in_the_driver(rng, tmp_path, kind, data_format, rank, crop,
                                                    dtype):
    arrays, kw, out_shape = problem(rng, kind, data_format, rank, dtype, CROPS[crop], kind == CT)
    graph, *_ = single_op_graph(kind, arrays, kw, out_shape, dtype)
    path = tmp_path / "case.json"
    og.save_graph(graph, path)
    outcome = cli.run_case(cli.Case(str(path)), "correctness", 1, 0)
    assert outcome.status == "PASS", outcome.message
    assert any(_lowering.ON_A_VIEW in line for line in outcome.result.lowerings)


@pytest.mark.parametrize("data_format", ["NCX", "NXC"])
@pytest.mark.parametrize("slack", [0, 1])
def test_convolution_backward_data_with_floor_slack(rng, data_format, slack, dtype):
    # Past the crop, dst may hold up to strides - 1 more positions that the convolution's
    # floor leaves over (oneDNN takes them as they are): zeros too.
    arrays, kw, out_shape = problem(rng, CBD, data_format, 2, dtype,
                                    dict(pads_begin=[0, -1], pads_end=[-1, -1]), slack=slack)
    out = np.full(out_shape, np.nan, NUMPY[dtype])
    graph, lts, out_lt = single_op_graph(CBD, arrays, kw, out_shape, dtype)
    run_partitions(graph, {**{lt.id: a for lt, a in zip(lts, arrays)}, out_lt.id: out})
    assert_call_matches_reference(CBD, arrays, kw, out, dtype)
    expect_left_out_exactly(out, CBD, arrays, kw)


# oneDNN's own benchdnn input v3.2/op/{f32,bf16,f16}/conv_bwd_d_2d.json: a 1x1 kernel,
# strides 2, pads_end -1 (its diff_src's last row and column lie outside every window).
V32_CONV_BWD_D_2D = dict(strides=[2, 2], pads_begin=[0, 0], pads_end=[-1, -1], dilations=[1, 1],
                         auto_pad="none", groups=1, data_format="NCX", weights_format="OIX")


def v32_conv_bwd_d_2d_graph(dtype, dy_shape=(1, 16, 7, 7), out_channels=8):
    dst = (dy_shape[0], out_channels, 2 * dy_shape[2], 2 * dy_shape[3])
    lts = [og.LogicalTensor(0, dtype, dy_shape),
           og.LogicalTensor(1, dtype, (dy_shape[1], out_channels, 1, 1), property="constant")]
    out = og.LogicalTensor(2, dtype, dst)
    graph = og.Graph()
    graph.add_op(og.Op(0, CBD, lts, [out], dict(V32_CONV_BWD_D_2D, dst_shape=list(dst)), "CONV_0"))
    return graph, lts, out


def test_v32_conv_bwd_d_2d_through_partitions(rng, dtype):
    graph, lts, out_lt = v32_conv_bwd_d_2d_graph(dtype)
    graph.finalize()
    dy, w = (random(rng, lt.shape, dtype) for lt in lts)
    out = np.full(out_lt.shape, np.nan, NUMPY[dtype])
    run_partitions(graph, {0: dy, 1: w, 2: out})
    kw = dict(V32_CONV_BWD_D_2D, dst_shape=list(out_lt.shape))
    assert_call_matches_reference(CBD, [dy, w], kw, out, dtype)
    # The last row and column lie outside every kernel window: zeros, written by the package.
    assert (out[:, :, -1, :] == 0).all() and (out[:, :, :, -1] == 0).all()
    assert _lowering.ON_A_VIEW in graph._ops[0].lowering


@pytest.mark.parametrize("mode", ["correctness", "exact"])
def test_v32_conv_bwd_d_2d_in_the_driver_at_its_own_size(tmp_path, dtype, mode):
    # The file's shapes: diff_dst 1x128x14x14, weights 128x32x1x1, diff_src 1x32x28x28.
    graph, *_ = v32_conv_bwd_d_2d_graph(dtype, (1, 128, 14, 14), 32)
    path = tmp_path / "conv_bwd_d_2d.json"
    og.save_graph(graph, path)
    assert json.loads(path.read_text())["graph"][0]["attrs"]["pads_end"]["value"] == [-1, -1]
    outcome = cli.run_case(cli.Case(str(path)), mode, 1, 0)
    assert outcome.status == "PASS", outcome.message


def test_ops_after_a_cropped_output_run_after_it(rng):
    # ConvTranspose (pads_begin -1) -> ReLU: oneDNN cannot fuse through the view's own id,
    # so the ReLU is a partition of its own, which get_partitions puts after the op's.
    arrays, kw, y_shape = problem(rng, CT, "NXC", 2, "f32", CROPS["negative-pads_begin"], bias=True)
    lts = [og.LogicalTensor(i, "f32", a.shape) for i, a in enumerate(arrays)]
    y, z = og.LogicalTensor(10, "f32", y_shape), og.LogicalTensor(11, "f32", y_shape)
    graph = og.Graph()
    graph.add_op(og.Op(1, "ReLU", [y], [z]))  # added first: oneDNN might list it first
    graph.add_op(og.Op(0, CT, lts, [y], kw))
    graph.finalize()
    buffers = {lt.id: a for lt, a in zip(lts, arrays)}
    buffers.update({10: np.full(y_shape, np.nan, np.float32), 11: np.full(y_shape, np.nan, np.float32)})
    partitions = run_partitions(graph, buffers)
    assert [p.op_ids for p in partitions] == [[0], [1]]
    assert_call_matches_reference(CT, arrays, kw, buffers[10], "f32")
    np.testing.assert_array_equal(buffers[11], np.maximum(buffers[10], 0))


def test_an_epilogue_after_a_cropped_output_passes_in_the_driver(rng, tmp_path, dtype):
    # ConvTranspose (pads_end -1) -> BiasAdd -> ReLU, a pattern oneDNN fuses into one
    # partition when nothing is cropped: here the epilogue runs in partitions of its own
    # (so benchdnn's default --expected-n-partitions 1 would not hold), checked at the
    # graph's output against the whole graph's reference.
    arrays, kw, y_shape = problem(rng, CT, "NXC", 2, dtype, CROPS["negative-pads_end"])
    lts = [og.LogicalTensor(i, dtype, a.shape) for i, a in enumerate(arrays)]
    y, z, r = (og.LogicalTensor(i, dtype, y_shape) for i in (10, 11, 12))
    graph = og.Graph()
    graph.add_op(og.Op(0, CT, lts, [y], kw))
    graph.add_op(og.Op(1, "BiasAdd", [y, og.LogicalTensor(13, dtype, (5,))], [z], {"data_format": "NXC"}))
    graph.add_op(og.Op(2, "ReLU", [z], [r]))
    path = tmp_path / "fused.json"
    og.save_graph(graph, path)
    outcome = cli.run_case(cli.Case(str(path), expected_n_partitions="0"), "correctness", 1, 0)
    assert outcome.status == "PASS", outcome.message
    assert outcome.result.partitions > 1


def test_a_cropped_input_is_read_through_a_view_where_another_op_made_it(rng):
    # ReLU -> ConvTransposeBackwardData whose diff_dst is cropped (output_padding past the
    # windows): the op reads a view of the ReLU's result, after the ReLU ran.
    arrays, kw, dx_shape = problem(rng, CTBD, "NCX", 2, "f32", CROPS["output_padding-past-the-windows"])
    dy, w = arrays
    pre, made = og.LogicalTensor(20, "f32", dy.shape), og.LogicalTensor(0, "f32", dy.shape)
    lw, dx = og.LogicalTensor(1, "f32", w.shape), og.LogicalTensor(2, "f32", dx_shape)
    graph = og.Graph()
    graph.add_op(og.Op(0, CTBD, [made, lw], [dx], kw))
    graph.add_op(og.Op(1, "ReLU", [pre], [made]))
    graph.finalize()
    buffers = {20: dy, 0: np.full(dy.shape, np.nan, np.float32), 1: w,
               2: np.full(dx_shape, np.nan, np.float32)}
    partitions = run_partitions(graph, buffers)
    assert [p.op_ids for p in partitions] == [[1], [0]]
    assert_call_matches_reference(CTBD, [np.maximum(dy, 0), w], kw, buffers[2], "f32")


def test_two_ops_cropping_the_same_diff_dst_each_read_their_own_view(rng):
    # The gradients of one ConvTranspose: both backward ops read diff_dst, whose last
    # positions (output_padding past the windows) neither reads.
    change = CROPS["output_padding-past-the-windows"]
    (dy, w), kw, dx_shape = problem(rng, CTBD, "NXC", 2, "f32", change)
    x = random(rng, dx_shape, "f32")
    lx, ldy, lw = (og.LogicalTensor(i, "f32", a.shape) for i, a in enumerate((x, dy, w)))
    ldx, ldw = og.LogicalTensor(3, "f32", dx_shape), og.LogicalTensor(4, "f32", w.shape)
    graph = og.Graph()
    graph.add_op(og.Op(0, CTBD, [ldy, lw], [ldx], kw))
    graph.add_op(og.Op(1, CTBW, [lx, ldy], [ldw], dict(kw, weights_shape=list(w.shape))))
    graph.finalize()
    assert graph._ops[0].view.id != graph._ops[1].view.id
    buffers = {0: x, 1: dy, 2: w, 3: np.full(dx_shape, np.nan, np.float32),
               4: np.full(w.shape, np.nan, np.float32)}
    run_partitions(graph, buffers)
    assert_call_matches_reference(CTBD, [dy, w], kw, buffers[3], "f32")
    assert_call_matches_reference(CTBW, [x, dy], dict(kw, weights_shape=list(w.shape)), buffers[4],
                                  "f32")


def test_ports_and_queries_show_the_users_tensor_never_the_view(rng):
    arrays, kw, out_shape = problem(rng, CBD, "NCX", 2, "f32", CROPS["negative-pads_end"])
    graph, lts, out_lt = single_op_graph(CBD, arrays, kw, out_shape, "f32")
    view = graph._ops[0].view
    assert view is not None and view.id not in {lt.id for lt in lts + [out_lt]}
    [p] = graph.get_partitions()
    assert [(lt.id, lt.shape) for lt in p.output_ports] == [(out_lt.id, out_shape)]
    cp = p.compile(lts, [out_lt], ENGINE)
    assert cp.query_logical_tensor(out_lt.id) == out_lt
    assert cp.inplace_ports == []


def test_a_cropped_output_of_unknown_shape_is_inferred_c_contiguous(rng):
    # As oneDNN infers an output it is not given: the op's shape, dense.
    arrays, kw, out_shape = problem(rng, CT, "NCX", 2, "f32", CROPS["negative-pads_begin"], bias=True)
    lts = [og.LogicalTensor(i, "f32", a.shape) for i, a in enumerate(arrays)]
    out_lt = og.LogicalTensor(5, "f32", None)
    graph = og.Graph()
    graph.add_op(og.Op(0, CT, lts, [out_lt], kw))
    graph.finalize()
    [p] = graph.get_partitions()
    assert [lt.shape for lt in p.output_ports] == [out_shape]
    cp = p.compile(lts, [out_lt], ENGINE)
    inferred = cp.query_logical_tensor(out_lt.id)
    assert (inferred.shape, inferred.strides) == (out_shape, _arrays.dense_strides(out_shape))
    out = np.full(out_shape, np.nan, np.float32)
    cp.execute(STREAM, [og.Tensor(lt, ENGINE, a) for lt, a in zip(lts, arrays)],
               [og.Tensor(inferred, ENGINE, out)])
    assert_call_matches_reference(CT, arrays, kw, out, "f32")
    expect_left_out_exactly(out, CT, arrays, kw)


def test_an_op_may_not_take_the_id_of_a_view(rng):
    arrays, kw, out_shape = problem(rng, CBD, "NCX", 1, "f32", CROPS["negative-pads_end"])
    graph = og.Graph()
    lts = [og.LogicalTensor(i, "f32", a.shape) for i, a in enumerate(arrays)]
    out_lt = og.LogicalTensor(2, "f32", out_shape)
    graph.add_op(og.Op(0, CBD, lts, [out_lt], kw))
    taken = graph._ops[0].view.id
    with pytest.raises(ValueError, match=f"tensor id {taken}.*cropped tensor"):
        graph.add_op(og.Op(1, "ReLU", [out_lt], [og.LogicalTensor(taken, "f32", out_shape)]))


def test_execute_names_a_missing_cropped_tensor_by_the_users_id(rng):
    arrays, kw, out_shape = problem(rng, CT, "NCX", 1, "f32", CROPS["negative-pads_end"])
    graph, lts, out_lt = single_op_graph(CT, arrays, kw, out_shape, "f32")
    [p] = graph.get_partitions()
    cp = p.compile(lts, [out_lt], ENGINE)
    with pytest.raises(ValueError, match=f"output tensor with id {out_lt.id}"):
        cp.execute(STREAM, [og.Tensor(lt, ENGINE, a) for lt, a in zip(lts, arrays)], [])


def test_no_kernel_window_reaching_the_output_stays_refused(rng):
    # Nothing to compute: the functional API returns the bias or zeros without oneDNN;
    # a partition has no op to run it as, so the graph says where it runs.
    arrays, kw, out_shape = problem(rng, CT, "NCX", 1, "f32", dict(pads_begin=12, pads_end=-3))
    lts = [og.LogicalTensor(i, "f32", a.shape) for i, a in enumerate(arrays)]
    with pytest.raises(og.UnsupportedError, match="no kernel window reaches its output"):
        og.Graph().add_op(og.Op(0, CT, lts, [og.LogicalTensor(2, "f32", out_shape)], kw))
