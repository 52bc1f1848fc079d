"""The common slips get a hint (issue 38): a keyword from PyTorch, TensorFlow or habit
(``stride=2``) says which one the function takes; PyTorch's and TensorFlow's layout
names (``"NCHW"``, ``"OIHW"``) are taken where their spatial axes match the arrays,
and refused naming the package's spelling where they do not; a graph whose op writes a
dtype its inputs do not have is refused naming the tensors and the dtypes.

Truth: the message of each refusal (the hint is the point); for a layout name that is
taken, the result of the same call with the package's own spelling, bit for bit (the
same op compiled for the same arrays); and the functions' signatures as ``inspect``
reads them, which the hints leave as they were (the hot path is unchanged:
tests/api/test_call_path.py).
"""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

import numpy as np
import pytest

import onednn_graph as og
from onednn_graph import ops, post, torch_like

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

# A 2-D problem in PyTorch's layouts (NCX data, IOX weights) and in NXC / XOI.
X = np.arange(1 * 4 * 3 * 3, dtype=np.float32).reshape(1, 4, 3, 3) / 7
W = np.arange(4 * 2 * 2 * 2, dtype=np.float32).reshape(4, 2, 2, 2) / 5
X_NXC = np.ascontiguousarray(X.transpose(0, 2, 3, 1))
W_XOI = np.ascontiguousarray(W.transpose(2, 3, 1, 0))
DY = og.conv_transpose(X, W, strides=2, data_format="NCX", weights_format="IOX")  # (1, 2, 6, 6)

#: Each functional op with valid arrays (in NCX/IOX or NCX/OIX): function, args, kwargs.
CALLS = {
    "conv_transpose": (og.conv_transpose, (X, W), dict(weights_format="IOX")),
    "conv_transpose_backward_data": (og.conv_transpose_backward_data, (DY, W),
                                     dict(weights_format="IOX")),
    "conv_transpose_backward_weights": (og.conv_transpose_backward_weights, (X, DY, W.shape),
                                        dict(weights_format="IOX")),
    "convolution_backward_data": (og.convolution_backward_data, (X, W, DY.shape),
                                  dict(weights_format="OIX")),
    "conv_transpose_backprop_filters": (og.conv_transpose_backprop_filters,
                                        (X, DY, (2, 4, 2, 2)), dict(filter_format="OIX")),
}


def _raises(function, args, kwargs, exc=TypeError):
    with pytest.raises(exc) as info:
        function(*args, strides=2, data_format="NCX", **kwargs)
    return str(info.value)


# --- keywords the functional API does not take -------------------------------------

@pytest.mark.parametrize("name", sorted(CALLS))
@pytest.mark.parametrize("given, hint", [
    ({"stride": 2}, "did you mean strides=?"),
    ({"dilation": 1}, "did you mean dilations=?"),
    ({"group": 1}, "did you mean groups=?"),
    ({"padding": 1}, "did you mean pads_begin= and pads_end=? PyTorch's padding=p is "
                     "pads_begin=p, pads_end=p; onednn_graph.padding.from_torch converts"),
    ({"padding": "SAME"}, "did you mean auto_pad='same_upper' (or 'same_lower')?"),
    ({"padding": "valid"}, "did you mean auto_pad='valid'?"),
    ({"channels_last": True}, "did you mean data_format='NXC'?"),
    ({"channels_last": False}, "did you mean data_format='NCX'?"),
    ({"kernel_size": 2}, "the kernel size is the weights' shape, not a keyword"),
    ({"layout": "NCX"}, "did you mean data_format=?"),
    ({"dialations": 1}, "did you mean dilations=?"),  # a typo: the closest keyword
], ids=lambda v: "-".join(f"{k}={v}" for k, v in v.items()) if isinstance(v, dict) else "")
def test_a_keyword_the_op_does_not_take_says_which_one_it_does(name, given, hint):
    function, args, kwargs = CALLS[name]
    message = _raises(function, args, dict(kwargs, **given))
    key = next(iter(given))
    assert message.startswith(f"{name}() got an unexpected keyword argument {key!r}; ")
    assert hint in message


@pytest.mark.parametrize("name, given, hint", [
    ("conv_transpose", "output_size", "choose output_padding= (onednn_graph.torch_like's "
                                      "conv_transpose1d/2d/3d derive it from output_size="),
    ("conv_transpose_backward_weights", "output_size", "did you mean weights_shape=?"),
    ("convolution_backward_data", "output_shape", "did you mean dst_shape=?"),
    ("conv_transpose_backprop_filters", "weights_shape", "did you mean filter_shape=?"),
    ("conv_transpose_backward_data", "bias", "conv_transpose_backward_data takes no bias "
                                             "(only ConvTranspose does"),
    ("conv_transpose_backward_weights", "weight", "conv_transpose_backward_weights takes no weights"),
    ("conv_transpose", "bogus", ""),  # neither a known slip nor close to a keyword
    ("conv_transpose", "weight", "did you mean weights=?"),
    ("conv_transpose", "threads", "onednn_graph.compile_op(..., threads=N) sets it"),
])
def test_the_hint_follows_what_the_function_takes(name, given, hint):
    function, args, kwargs = CALLS[name]
    message = _raises(function, args, dict(kwargs, **{given: 1}))
    stem = f"{name}() got an unexpected keyword argument {given!r}"
    assert message == stem if not hint else message.startswith(f"{stem}; ") and hint in message


def test_every_slip_of_a_call_is_named():
    message = _raises(og.conv_transpose, (X, W), dict(weights_format="IOX", stride=2,
                                                        dilation=1, bogus=3))
    assert message == ("conv_transpose() got unexpected keyword arguments 'stride': did you mean "
                       "strides=?; 'dilation': did you mean dilations=?; 'bogus'")


def test_compile_op_names_the_keyword_meant():
    with pytest.raises(TypeError) as info:
        og.compile_op("ConvTranspose", src=X, weights=W, stride=2, weights_format="IOX")
    assert str(info.value).startswith("compile_op: ConvTranspose has no input or attribute "
                                      "['stride']; stride: did you mean strides=?; inputs:")
    with pytest.raises(TypeError, match=r"\['bias', 'src'\]; bias: ConvTransposeBackwardData "
                                        r"takes no bias \(only ConvTranspose does"):
        og.compile_op("ConvTransposeBackwardData", diff_dst=DY, weights=W, src=X, bias=X)


@pytest.mark.parametrize("given, hint", [
    ({"strides": 2}, "did you mean stride=?"),
    ({"dilations": 1}, "did you mean dilation=?"),
    ({"pads_begin": 1}, "did you mean padding=? It takes an int (or one per axis), or one "
                        "(begin, end) pair per axis: padding=[(pads_begin, pads_end), ...]"),
    ({"auto_pad": "same_upper"}, 'did you mean padding="same" or padding="valid"?'),
    ({"weights": W}, "did you mean weight=?"),
    ({"data_format": "NXC"}, "torch_like takes PyTorch's layouts, input (N, C_in, *X) and "
                             "weight (C_in, C_out/groups, *K); for others call "
                             "onednn_graph.conv_transpose with data_format="),
    ({"post_ops": []}, "onednn_graph.conv_transpose takes post_ops="),
], ids=lambda v: next(iter(v)) if isinstance(v, dict) else "")
def test_torch_like_takes_pytorchs_names_and_says_so(given, hint):
    with pytest.raises(TypeError) as info:
        torch_like.conv_transpose2d(X, W, **given)
    key = next(iter(given))
    assert str(info.value).startswith(f"conv_transpose2d() got an unexpected keyword argument "
                                      f"{key!r}; {hint}")


PUBLIC = [getattr(ops, n) for n in ops.__all__] + [getattr(torch_like, n) for n in torch_like.__all__]


@pytest.mark.parametrize("function", PUBLIC, ids=lambda f: f.__name__)
def test_the_hints_leave_the_signatures_and_the_call_as_they_were(function):
    # The function itself runs (no wrapper around it: the call path is the same), and
    # what inspect, help() and the API reference show has no **slips.
    assert inspect.unwrap(function) is function and function.__module__ in (
        "onednn_graph.ops", "onednn_graph.torch_like")
    kinds = [p.kind for p in inspect.signature(function).parameters.values()]
    assert inspect.Parameter.VAR_KEYWORD not in kinds


# --- PyTorch's and TensorFlow's layout names ---------------------------------------

@pytest.mark.parametrize("data_format, weights_format, x, w", [
    ("NCHW", "IOHW", X, W),
    ("NHWC", "HWOI", X_NXC, W_XOI),
    ("NCHW", "HWOI", X, W_XOI),
], ids=["NCHW-IOHW", "NHWC-HWOI", "NCHW-HWOI"])
def test_a_layout_with_its_spatial_axes_spelled_out_is_the_packages(data_format, weights_format, x, w):
    ours = {"NCHW": "NCX", "NHWC": "NXC", "IOHW": "IOX", "HWOI": "XOI"}
    got = og.conv_transpose(x, w, strides=2, data_format=data_format, weights_format=weights_format)
    same = og.conv_transpose(x, w, strides=2, data_format=ours[data_format],
                             weights_format=ours[weights_format])
    assert np.array_equal(got, same)
    assert og.output_shape("ConvTranspose", [x.shape, w.shape], strides=2, data_format=data_format,
                           weights_format=weights_format) == same.shape
    op = og.compile_op("ConvTranspose", src=x, weights=w, strides=2, data_format=data_format,
                       weights_format=weights_format)
    assert np.array_equal(op(x, w), same)


def test_every_op_and_rank_takes_the_spelled_out_names():
    # 1-D and 3-D: NCW / NCDHW; the convolution's OIHW; the backward ops.
    x1, w1 = X[:, :, 0], W[:, :, 0]
    assert np.array_equal(og.conv_transpose(x1, w1, data_format="NCW", weights_format="IOW"),
                          og.conv_transpose(x1, w1, data_format="NCX", weights_format="IOX"))
    x3, w3 = X[:, :, None], W[:, :, None]
    assert np.array_equal(og.conv_transpose(x3, w3, data_format="NCDHW", weights_format="IODHW"),
                          og.conv_transpose(x3, w3, data_format="NCX", weights_format="IOX"))
    kw = dict(strides=2, data_format="NCHW")
    assert np.array_equal(og.convolution_backward_data(X, W, DY.shape, weights_format="OIHW", **kw),
                          og.convolution_backward_data(X, W, DY.shape, strides=2,
                                                       data_format="NCX", weights_format="OIX"))
    assert np.array_equal(og.conv_transpose_backward_data(DY, W, weights_format="IOHW", **kw),
                          og.conv_transpose_backward_data(DY, W, strides=2, data_format="NCX",
                                                          weights_format="IOX"))
    assert np.array_equal(og.conv_transpose_backward_weights(X, DY, W.shape, weights_format="IOHW", **kw),
                          og.conv_transpose_backward_weights(X, DY, W.shape, strides=2,
                                                             data_format="NCX", weights_format="IOX"))
    # with post-ops (the fused path reads the formats before they are checked)
    assert np.array_equal(og.conv_transpose(X, W, weights_format="IOHW", post_ops=[post.relu()], **kw),
                          og.conv_transpose(X, W, strides=2, data_format="NCX", weights_format="IOX",
                                            post_ops=[post.relu()]))


def test_the_reference_takes_the_spelled_out_names_as_the_ops_do():
    # The float64 reference is the truth the ops are checked against: it must read
    # "NCHW" as the ops do, not refuse it (or relayout by the name as written).
    kw = dict(strides=2, data_format="NCHW")
    ncx = dict(strides=2, data_format="NCX")
    ref = og.reference
    assert np.array_equal(ref.conv_transpose(X, W, weights_format="IOHW", **kw),
                          ref.conv_transpose(X, W, weights_format="IOX", **ncx))
    assert np.array_equal(ref.conv_transpose_backward_data(DY, W, weights_format="IOHW", **kw),
                          ref.conv_transpose_backward_data(DY, W, weights_format="IOX", **ncx))
    assert np.array_equal(ref.conv_transpose_backward_weights(X, DY, W.shape, weights_format="IOHW", **kw),
                          ref.conv_transpose_backward_weights(X, DY, W.shape, weights_format="IOX", **ncx))
    assert np.array_equal(ref.convolution_backward_data(X, W, DY.shape, weights_format="OIHW", **kw),
                          ref.convolution_backward_data(X, W, DY.shape, weights_format="OIX", **ncx))


@pytest.mark.parametrize("fn, given, message", [
    (og.conv_transpose, dict(data_format="NCW", weights_format="IOX"),
     "data_format must be one of NXC, NCX, got 'NCW' ('NCW' is 'NCX' for 1 spatial axis (W), "
     "but these tensors have 2: pass 'NCX', the spelling for any number of spatial axes)"),
    (og.conv_transpose, dict(data_format="NCX", weights_format="IODHW"),
     "weights_format must be one of XOI, IOX, got 'IODHW' ('IODHW' is 'IOX' for 3 spatial axes "
     "(D, H, W), but these tensors have 2: pass 'IOX', the spelling for any number of spatial axes)"),
    (og.conv_transpose, dict(data_format="NCX", weights_format="OIHW"),
     "weights_format must be one of XOI, IOX, got 'OIHW' ('OIHW' is 'OIX' in the specification's "
     "spelling, where X stands for the spatial axes, and ConvTranspose does not take 'OIX')"),
    (og.conv_transpose, dict(data_format="nchw", weights_format="IOX"),
     "data_format must be one of NXC, NCX, got 'nchw' (formats are upper case: 'NCHW', which is "
     "'NCX' here)"),
    (og.conv_transpose, dict(data_format="ncx", weights_format="IOX"),
     "data_format must be one of NXC, NCX, got 'ncx' (formats are upper case: 'NCX')"),
    (og.conv_transpose_backprop_filters, dict(data_format="NCX", filter_format="OIHW"),
     "filter_format must be one of OIX, XIO, got 'OIHW' ('OIHW' is 'OIX' in the specification's "
     "spelling, where X stands for the spatial axes)"),
], ids=["rank-data", "rank-weights", "other-family", "lower-case", "lower-case-ours", "legacy"])
def test_a_layout_name_that_does_not_fit_names_the_spelling_to_use(fn, given, message):
    args = (X, DY, (2, 4, 2, 2)) if fn is og.conv_transpose_backprop_filters else (X, W)
    with pytest.raises(ValueError) as info:
        fn(*args, **given)
    assert str(info.value) == message


def test_the_low_level_op_normalizes_a_spelled_out_layout():
    x = og.LogicalTensor(0, "f32", X.shape)
    w = og.LogicalTensor(1, "f32", W.shape)
    y = og.LogicalTensor(2, "f32", None)
    attrs = {"strides": [2, 2], "pads_begin": [0, 0], "pads_end": [0, 0], "dilations": [1, 1]}
    op = og.Op(0, "ConvTranspose", [x, w], [y], dict(attrs, data_format="NCHW", weights_format="IOHW"))
    assert (op.attrs["data_format"], op.attrs["weights_format"]) == ("NCX", "IOX")
    with pytest.raises(ValueError, match=re.escape(
            "'NCDHW' is 'NCX' for 3 spatial axes (D, H, W), but these tensors have 2")):
        og.Op(0, "ConvTranspose", [x, w], [y], dict(attrs, data_format="NCDHW"))


# --- an op's output in a dtype its inputs do not have ----------------------------

def _cbd_graph():
    """The project's ConvolutionBackwardData graph: (document, its op, tensor ids)."""
    doc = json.loads((FIXTURES / "conv_bwd_d_3d_small.json").read_text())
    i, op = next((i, op) for i, op in enumerate(doc["graph"]) if op["kind"] == "ConvolutionBackwardData")
    return doc, i, op


def test_an_output_whose_dtype_the_op_cannot_write_is_named():
    doc, i, op = _cbd_graph()
    ins, out = op["inputs"], op["outputs"][0]
    out["dtype"] = "s32"
    with pytest.raises(ValueError) as info:
        og.load_graph(doc)
    assert str(info.value) == (
        f"<dict>: graph[{i}]: ConvolutionBackwardData op {op['id']}: the output (tensor "
        f"{out['id']}) is s32, but the inputs diff_dst (tensor {ins[0]['id']}) and weights "
        f"(tensor {ins[1]['id']}) are f32: ConvolutionBackwardData writes its inputs' dtype, so "
        "the output must be f32")


@pytest.mark.parametrize("change, words", [
    (lambda ins: ins[1].update(dtype="bf16"), "all tensors must share one dtype, got diff_dst "
                                              "(tensor {0}): f32, weights (tensor {1}): bf16"),
    (lambda ins: [t.update(dtype="s8") for t in ins], "ConvolutionBackwardData takes f32, bf16, "
     "f16 tensors, but diff_dst (tensor {0}) and weights (tensor {1}) are s8 (int8 is "
     "Dequantize, the op in f32, Quantize)"),
], ids=["mixed-inputs", "int8-inputs"])
def test_input_dtypes_the_op_cannot_take_are_named(change, words):
    doc, i, op = _cbd_graph()
    ins = op["inputs"]
    change(ins)
    if ins[0]["dtype"] == "s8":
        op["outputs"][0]["dtype"] = "s8"
    with pytest.raises(ValueError) as info:
        og.load_graph(doc)
    ids = [t["id"] for t in ins]
    assert str(info.value) == (f"<dict>: graph[{i}]: ConvolutionBackwardData op {op['id']}: "
                               + words.format(*ids))
