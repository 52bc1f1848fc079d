"""compile_op(..., tune=True) and the alternative lowerings it chooses from.

Truth: the NumPy reference, with the package's derived bound
(onednn_graph.tolerance): every alternative must compute the op, in every
geometry the native form handles (strides, pads, dilations, output_padding up
to the cropped case), so that whichever one measures fastest, the result is
right. Which one wins is the machine's business; the tests only check that the
kept one is the fastest of the times recorded.
"""

import numpy as np
import pytest

import onednn_graph as og
from onednn_graph import _compiled, _lowering, reference as R, shapes, tolerance
from onednn_graph._dtypes import dtype_name
from conftest import assert_matches_reference, random

REFERENCE = {"ConvTransposeBackwardData": R.conv_transpose_backward_data,
             "ConvolutionBackwardData": R.convolution_backward_data}

GEOMETRIES = [  # (strides, pads_begin, pads_end, dilations, output_padding)
    (1, 0, 0, 1, 0),
    (2, 1, 1, 1, 0),
    (2, 0, 1, 2, 1),
    (3, 1, 0, 1, 2),
    (2, 0, 0, 1, 1),
    (2, 1, 0, 1, 1),  # folded pads_end -1
    (2, 0, 0, 1, 3),  # output_padding >= strides + pads_end: the cropped case
]


def _problem(rng, kind, geometry, data_format, dtype):
    s, pb, pe, d, op = geometry
    kw = dict(strides=(s, s), pads_begin=(pb, pb), pads_end=(pe, pe), dilations=(d, d),
              output_padding=(op, op), data_format=data_format)
    x_shape = (2, 3, 5, 4) if data_format == "NCX" else (2, 5, 4, 3)
    if kind == "ConvTransposeBackwardData":
        kw["weights_format"] = "IOX"
        w = random(rng, (3, 4, 3, 2), dtype)
        dy_shape = og.output_shape("ConvTranspose", [x_shape, w.shape], **kw)
        return (random(rng, dy_shape, dtype), w), kw
    kw["weights_format"] = "OIX"
    w = random(rng, (4, 3, 3, 2), dtype)
    conv = dict(kw)
    del conv["output_padding"]
    dy_shape = shapes.plan("Convolution", [x_shape, w.shape], **conv).output_shape
    kw["dst_shape"] = x_shape
    return (random(rng, dy_shape, dtype), w), kw


@pytest.mark.parametrize("kind", sorted(REFERENCE))
@pytest.mark.parametrize("geometry", GEOMETRIES)
@pytest.mark.parametrize("data_format", ["NCX", "NXC"])
def test_every_alternative_computes_the_op(rng, kind, geometry, data_format, dtype):
    args, kw = _problem(rng, kind, geometry, data_format, dtype)
    input_shapes = [a.shape for a in args]
    plan = shapes.plan(kind, input_shapes, **kw)
    chosen = _lowering.lower(plan, input_shapes)
    alternatives = _lowering.alternatives(plan, input_shapes, chosen)
    if kind == "ConvTransposeBackwardData" and chosen.kind == "Convolution":
        assert alternatives == []  # dilations > 1: the Convolution is the only form 3.2 compiles
        return
    assert len(alternatives) == 1 and alternatives[0].kind != chosen.kind
    alt = alternatives[0]
    arrays = list(args)
    out = np.empty(plan.output_shape, args[0].dtype)
    if alt.crop:  # the backward ops leave out diff_dst's unread tail
        from onednn_graph._call import crop
        arrays[0] = crop(arrays[0], data_format, alt.crop)
    op = _compiled.CompiledOp(alt.kind, alt.attrs, dtype_name(args[0].dtype),
                              [_compiled.meta(a) for a in arrays], _compiled.meta(out))
    op.execute(arrays, out)
    assert_matches_reference(out, REFERENCE[kind], args, kw, dtype,
                             tolerance.accumulation_terms(plan, input_shapes))


@pytest.mark.parametrize("kind", sorted(REFERENCE))
def test_tune_keeps_the_fastest_and_computes_the_op(rng, kind):
    args, kw = _problem(rng, kind, GEOMETRIES[1], "NXC", "f32")
    names = ("diff_dst", "weights")
    op = og.compile_op(kind, tune=True, **dict(zip(names, args)), **kw)
    assert op.tuning is not None and len(op.tuning) == 2
    assert op.lowering == min(op.tuning, key=op.tuning.get)
    plan = shapes.plan(kind, [a.shape for a in args], **kw)
    assert_matches_reference(op(*args), REFERENCE[kind], args, kw, "f32",
                             tolerance.accumulation_terms(plan, [a.shape for a in args]))
    assert og.compile_op(kind, **dict(zip(names, args)), **kw).tuning is None


def test_tune_with_shapes_and_constant_weights(rng):
    args, kw = _problem(rng, "ConvTransposeBackwardData", GEOMETRIES[3], "NCX", "bf16")
    dy, w = args
    op = og.compile_op("ConvTransposeBackwardData", diff_dst=dy.shape, weights=w, dtype="bf16",
                       constant_weights=True, tune=True, **kw)
    assert op.tuning is not None and op.lowering in op.tuning
    plan = shapes.plan("ConvTransposeBackwardData", [dy.shape, w.shape], **kw)
    assert_matches_reference(op(dy), R.conv_transpose_backward_data, args, kw, "bf16",
                             tolerance.accumulation_terms(plan, [dy.shape, w.shape]))


def test_ops_without_an_alternative_are_not_timed(rng):
    x, w = random(rng, (1, 4, 3), "f32"), random(rng, (2, 3, 3), "f32")
    op = og.compile_op("ConvTranspose", src=x, weights=w, tune=True)
    assert op.tuning is None and op.lowering == "native"
