"""The benchdnn-style override parser (good and bad inputs) and its effect on a graph."""


import pytest

import onednn_graph as og
from onednn_graph import overrides as ov

from helpers import FIXTURES


@pytest.mark.parametrize("text, expected", [
    ("0:1x28x28x32", {0: ov.InShape((1, 28, 28, 32))}),
    ("0:1x28x28x32*acdb", {0: ov.InShape((1, 28, 28, 32), tag="acdb")}),
    ("1:*dcba", {1: ov.InShape(tag="dcba")}),
    ("0:2x3*1x2", {0: ov.InShape((2, 3), strides=(1, 2))}),
    ("0:1x2x3+1:4x5x6", {0: ov.InShape((1, 2, 3)), 1: ov.InShape((4, 5, 6))}),
])
def test_in_shapes_good(text, expected):
    assert ov.parse_in_shapes(text) == expected


@pytest.mark.parametrize("text, words", [
    ("1x2x3", "ID:VALUE"),
    ("a:1x2", "ID:VALUE"),
    ("0:", "ID:VALUE"),
    ("0:1x2*", "must follow '*'"),
    ("0:1xx2", "separated by 'x'"),
    ("0:1x0x2", ">= 1"),
    ("0:abcd", "ID:*TAG"),
    ("0:1x2x3*abd", "each of the letters a..c"),
    ("0:1x2x3*ab", "2 entries for a rank-3 shape"),
    ("0:1x2+0:1x3", "given twice"),
    ("-1:1x2", "ID:VALUE"),
])
def test_in_shapes_bad(text, words):
    with pytest.raises(ValueError, match="--in-shapes") as info:
        ov.parse_in_shapes(text)
    assert words in str(info.value)


def test_op_attrs_good():
    assert ov.parse_op_attrs("0:strides:2x2*auto_pad:SAME_UPPER+3:groups:2") == {
        0: {"strides": "2x2", "auto_pad": "SAME_UPPER"}, 3: {"groups": "2"}}


@pytest.mark.parametrize("text", ["0:strides", "0:strides:", "0::2", "x:strides:2", "strides:2"])
def test_op_attrs_bad(text):
    with pytest.raises(ValueError, match="--op-attrs"):
        ov.parse_op_attrs(text)


def test_dt_good_and_bad():
    assert ov.parse_dt("f16") == "f16"
    assert ov.parse_dt("0:bf16+2:f32") == {0: "bf16", 2: "f32"}
    for bad in ("f64", "0:s8", "bf16+", ""):
        with pytest.raises(ValueError, match="--dt"):
            ov.parse_dt(bad)


@pytest.mark.parametrize("kind, name, raw, value", [
    ("ConvTranspose", "strides", "2x3", [2, 3]),
    ("ConvTranspose", "pads_end", "-1x0", [-1, 0]),
    ("ConvTranspose", "groups", "4", 4),
    ("ConvTranspose", "auto_pad", "SAME_LOWER", "SAME_LOWER"),
    ("Elu", "alpha", "0.5", 0.5),
    ("MatMul", "transpose_a", "true", True),
])
def test_attr_values_take_the_attributes_type(kind, name, raw, value):
    assert ov.attr_value(kind, name, raw) == value


@pytest.mark.parametrize("name, raw, words", [
    ("paddings", "1x1", "has no attribute 'paddings'"),
    ("groups", "1x2", "one integer"),
    ("strides", "two", "separated by 'x'"),
])
def test_attr_values_bad(name, raw, words):
    with pytest.raises(ValueError, match=words):
        ov.attr_value("ConvTranspose", name, raw)


def test_tags_and_strides():
    assert ov.dense_strides((2, 3, 4, 5), [0, 2, 3, 1]) == (60, 1, 15, 3)  # acdb
    assert ov.axis_order((2, 3, 4, 5), (60, 1, 15, 3)) == [0, 2, 3, 1]


def _graph(name="deconv_small.json"):
    return og.load_graph(FIXTURES / name)


def test_apply_nxc_with_matching_shapes_rederives_the_output():
    g = ov.apply(_graph(), ov.parse_in_shapes("0:1x5x5x4"), ov.parse_op_attrs("0:data_format:NXC"),
                 "bf16")
    [op] = g.ops
    assert op.attrs["data_format"] == "NXC"
    assert op.inputs[0].shape == (1, 5, 5, 4) and op.inputs[0].strides == (100, 20, 4, 1)
    assert op.outputs[0].shape == (1, 8, 8, 6)
    assert {t.dtype for t in op.inputs + op.outputs} == {"bf16"}


def test_apply_keeps_layouts_it_is_not_asked_to_change():
    # The 3-D fixture's tensors are channels-last; a new diff_dst shape given
    # with a tag keeps that tag, and the output keeps its own axis order.
    g = ov.apply(_graph("conv_bwd_d_3d_small.json"), ov.parse_in_shapes("0:1x4x5x6x6*acdeb"),
                 ov.parse_op_attrs("0:auto_pad:SAME_UPPER"))
    [op] = g.ops
    assert op.inputs[0].strides == ov.dense_strides((1, 4, 5, 6, 6), [0, 2, 3, 4, 1])
    assert op.outputs[0].shape == (1, 2, 5, 6, 6)
    assert op.outputs[0].strides == ov.dense_strides((1, 2, 5, 6, 6), [0, 2, 3, 4, 1])


@pytest.mark.parametrize("kwargs, words", [
    (dict(in_shapes={7: ov.InShape((1, 2, 3))}), "no input tensor with id 7"),
    (dict(in_shapes={2: ov.InShape((1, 2, 3))}), "no input tensor with id 2"),  # an output
    (dict(op_attrs={5: {"groups": "2"}}), "no op with id 5"),
    (dict(dt={9: "f16"}), "no tensor with id 9"),
    (dict(op_attrs={0: {"paddings": "1x1"}}), "has no attribute 'paddings'"),
    (dict(in_shapes={0: ov.InShape((1, 5, 5, 5))}), "I axis (4) must equal the channels of src"),
])
def test_apply_errors(kwargs, words):
    with pytest.raises(ValueError) as info:
        ov.apply(_graph(), **kwargs)
    assert words in str(info.value)


def test_a_file_whose_output_shape_disagrees_is_refused():
    doc = _graph().to_json()
    doc["graph"][0]["outputs"][0]["shape"] = [1, 6, 9, 9]
    doc["graph"][0]["outputs"][0]["stride"] = [486, 81, 9, 1]
    with pytest.raises(ValueError, match=r"output tensor 2 has shape \(1, 6, 9, 9\), but its "
                                         r"inputs and attributes give \(1, 6, 8, 8\)"):
        ov.apply(og.load_graph(doc))


@pytest.mark.parametrize("parse, text, words", [
    (ov.parse_mb, "-1", "--mb"),
    (ov.parse_mb, "two", "non-negative integer"),
    (ov.parse_op_kind, "0:Convolution", "binary and eltwise ops only"),
    (ov.parse_tensor_property, "1:host_scalar", "no host_scalar"),
    (ov.parse_tensor_property, "x:constant", "--tensor-property"),
])
def test_the_benchdnn_knobs_bad(parse, text, words):
    with pytest.raises(ValueError) as info:
        parse(text)
    assert words in str(info.value)


def _two_op_graph(x_shape=(2, 4, 5, 5)):
    """ConvTranspose then ReLU then Add of a broadcast operand (tensor 5)."""
    lt = og.LogicalTensor
    a = dict(strides=[2, 2], pads_begin=[0, 0], pads_end=[0, 0], dilations=[1, 1],
             data_format="NCX", weights_format="IOX")
    y = og.output_shape("ConvTranspose", [x_shape, (4, 3, 3, 3)], **a)
    g = og.Graph()
    g.add_op(og.Op(0, "ConvTranspose", [lt(0, "f32", x_shape), lt(1, "f32", (4, 3, 3, 3))],
                   [lt(2, "f32", y)], a))
    g.add_op(og.Op(1, "ReLU", [lt(2, "f32", y)], [lt(3, "f32", y)]))
    g.add_op(og.Op(2, "Add", [lt(3, "f32", y), lt(5, "f32", (1, 3, 1, 1))], [lt(4, "f32", y)],
                   {"auto_broadcast": "numpy"}))
    return g


def test_shapes_follow_their_producers():
    # a new src re-derives the op's output, and the ReLU and Add after it follow
    g = ov.apply(_two_op_graph(), ov.parse_in_shapes("0:3x4x6x6"))
    assert [op.outputs[0].shape for op in g.ops] == [(3, 3, 13, 13)] * 3
    g = ov.apply(_two_op_graph(), mb=5, op_kind={1: "Tanh", 2: "Multiply"},
                 tensor_property={1: "constant"}, fpmath_mode="bf16")
    assert [op.kind for op in g.ops] == ["ConvTranspose", "Tanh", "Multiply"]
    assert g.ops[2].outputs[0].shape == (5, 3, 11, 11) and g.fpmath_mode == "bf16"
    assert g.ops[0].inputs[1].property == "constant"
    # the broadcast operand keeps its minibatch of 1 (benchdnn's rule)
    assert ov.minibatch_inputs(_two_op_graph().ops) == [0]


def test_broadcasting_that_cannot_work_is_refused():
    with pytest.raises(ValueError, match=r"Add op 2: shapes \(3, 3, 13, 13\) and \(1, 2, 1, 1\) "
                                         "do not broadcast"):
        ov.apply(_two_op_graph(), ov.parse_in_shapes("0:3x4x6x6+5:1x2x1x1"))
    with pytest.raises(ValueError, match="op 1 is a ReLU; benchdnn changes .* not into Add"):
        ov.apply(_two_op_graph(), op_kind={1: "Add"})


@pytest.mark.parametrize("attrs, rank, given, expected", [
    (dict(output_padding=[0, 0, 0]), 2, {}, dict(output_padding=[0, 0])),
    (dict(output_padding=[1, 2]), 3, {}, dict(output_padding=[1, 2, 0])),
    (dict(strides=[2, 2, 2], dilations=[1, 1, 1]), 2, {}, dict(strides=[2, 2], dilations=[1, 1])),
])
def test_rank_sized_attributes_follow_the_rank(attrs, rank, given, expected):
    ov._follow_rank("ConvolutionBackwardData", 0, attrs, rank, given)
    assert attrs == expected


@pytest.mark.parametrize("attrs, given", [
    (dict(pads_begin=[0, 1, 0]), {}),                 # not one value repeated
    (dict(strides=[2, 2, 2]), {"strides": "2x2x2"}),  # what the line itself gave
    (dict(output_padding=[0, 0, 1]), {}),             # a non-zero entry would be cut
])
def test_rank_sized_attributes_that_cannot_follow_are_named(attrs, given):
    name = next(iter(attrs))
    with pytest.raises(ValueError, match=f"op 0: {name} .* give {name} for the new rank"):
        ov._follow_rank("ConvolutionBackwardData", 0, attrs, 2, given)


def test_per_channel_quantization_follows_its_axis():
    # benchdnn 3.13: scales repeated, zero points cut or padded with 0
    attrs = dict(qtype="per_channel", axis=1, scales=[1.0, 2.0], zps=[3, 4])
    ov._per_channel("Dequantize", attrs, (2, 5, 3, 3))
    assert attrs["scales"] == [1.0, 2.0, 1.0, 2.0, 1.0] and attrs["zps"] == [3, 4, 0, 0, 0]


def test_a_derived_output_that_cannot_exist_names_the_op():
    # strides of 2**61 give an output past int64: refused naming the op and tensor,
    # before pybind11 refuses the number without naming anything
    with pytest.raises(ValueError, match=r"ConvTranspose op 0: output tensor 2 would have shape "
                                         r"\(1, 6, \d+, \d+\): every dimension must be >= 1 "
                                         r"and the size below 2\*\*63"):
        ov.apply(_graph(), op_attrs={0: {"strides": f"{2**61}x{2**61}"}})
