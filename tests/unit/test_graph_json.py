"""The JSON graph format: loading the project's fixtures (written by hand with
the quirks of oneDNN's own files), writing, lossless round trips, and errors
that name the file and the field."""

import copy
import json

import pytest

import onednn_graph as og
from onednn_graph import graph_json

from helpers import FIXTURES
CASES = sorted(p.name for p in FIXTURES.glob("*.json"))


def _doc(name):
    return json.loads((FIXTURES / name).read_text())


def _describe(graph):
    """Everything a Graph holds, as plain values."""
    def lt(t):
        return (t.id, t.dtype, t.shape, t.strides, t.layout, t.property)
    return (graph.engine_kind, graph.fpmath_mode,
            [(op.id, op.name, op.kind, op.attrs, [lt(t) for t in op.inputs],
              [lt(t) for t in op.outputs]) for op in graph.ops])


def test_fixtures_exist():
    assert len(CASES) == 4


@pytest.mark.parametrize("name", CASES)
def test_round_trip_is_lossless(name, tmp_path):
    first = og.load_graph(FIXTURES / name)
    og.save_graph(first, tmp_path / name)
    second = og.load_graph(tmp_path / name)
    assert _describe(second) == _describe(first)
    assert second.to_json() == first.to_json()


@pytest.mark.parametrize("name", CASES)
def test_loaded_values_match_the_file(name):
    doc = _doc(name)
    [op] = og.load_graph(FIXTURES / name).ops
    [raw] = doc["graph"]
    assert (op.id, op.name, op.kind) == (raw["id"], raw["name"], raw["kind"])
    for t, r in zip(op.inputs + op.outputs, raw["inputs"] + raw["outputs"]):
        assert (t.id, t.dtype, list(t.shape), list(t.strides), t.layout, t.property) == \
            (r["id"], r["dtype"], r["shape"], r["stride"], r["layout_type"], r["property_type"])
    rank = len(raw["inputs"][0]["shape"]) - 2
    for key, attr in raw["attrs"].items():
        value = attr["value"]
        if key == "output_padding":  # the 12-entry dump keeps its spatial part
            value = value[:rank]
        if key == "auto_pad":
            value = value.lower()
        assert op.attrs[key] == value, key


def test_channels_last_strides_of_an_ncx_tensor_are_kept():
    # conv_bwd_d_3d_small.json describes NCX tensors laid out channels-last.
    [op] = og.load_graph(FIXTURES / "conv_bwd_d_3d_small.json").ops
    assert op.inputs[0].strides == (192, 1, 64, 16, 4)
    assert op.inputs[1].property == "constant"


def test_writer_follows_onednns_reader():
    doc = og.load_graph(FIXTURES / "deconv_small.json").to_json()
    assert doc["version"] == graph_json.FORMAT_VERSION
    assert (doc["input_ports"], doc["output_ports"]) == ([0, 1], [2])
    attrs = doc["graph"][0]["attrs"]
    # benchdnn's reader only reads a value that follows its type.
    assert all(list(a) == ["type", "value"] for a in attrs.values())
    assert attrs["auto_pad"] == {"type": "string", "value": "None"}
    assert attrs["groups"] == {"type": "s64", "value": 1}
    assert attrs["output_padding"] == {"type": "s64[]", "value": [0, 0]}
    assert list(doc["graph"][0]["inputs"][0]) == list(graph_json.LT_FIELDS)


def test_unknown_shape_is_written_as_onednns_sentinel():
    x = og.LogicalTensor(0, "f32", (1, 1, 3))
    w = og.LogicalTensor(1, "f32", (1, 1, 2))
    g = og.Graph()
    g.add_op(og.Op(0, "ConvTranspose", [x, w], [og.LogicalTensor(2, "f32", None)],
                   {"strides": [1], "pads_begin": [0], "pads_end": [0], "dilations": [1],
                    "data_format": "NCX", "weights_format": "IOX"}))
    out = g.to_json()["graph"][0]["outputs"][0]
    assert out["shape"] == out["stride"] == [graph_json.UNKNOWN_DIM]
    assert graph_json.from_json(g.to_json()).ops[0].outputs[0].shape is None


def test_load_from_a_dict_and_version_3_7_ports():
    doc = _doc("conv_bwd_d_3d_small.json")
    assert doc["version"] == "3.7.0" and doc["input_ports"] == [0, 1]
    assert [op.kind for op in og.load_graph(doc).ops] == ["ConvolutionBackwardData"]


def _broken(edit, name="deconv_small.json"):
    doc = copy.deepcopy(_doc(name))
    edit(doc)
    return doc


@pytest.mark.parametrize("edit, field, words", [
    (lambda d: d["graph"][0].update(kind="ConvTransposeX"), "graph[0].kind", "unknown op kind"),
    (lambda d: d["graph"][0]["attrs"].update(paddings={"type": "s64[]", "value": [1]}),
     "graph[0].attrs.paddings", "unknown attribute"),
    (lambda d: d.update(version="4.0.0"), "version", "unknown format version"),
    (lambda d: d.update(version="three"), "version", "MAJOR.MINOR.PATCH"),
    (lambda d: d.pop("graph"), "", "missing field 'graph'"),
    (lambda d: d["graph"][0]["attrs"]["groups"].update(type="s64[]"), "graph[0].attrs.groups.type",
     "stores groups as 's64'"),
    (lambda d: d["graph"][0]["attrs"]["strides"].update(value=[2, "2"]),
     "graph[0].attrs.strides.value", "is not a s64[]"),
    (lambda d: d["graph"][0]["attrs"]["groups"].pop("type"), "graph[0].attrs.groups", '"type"'),
    (lambda d: d["graph"][0]["attrs"]["output_padding"]["value"].__setitem__(5, 1),
     "graph[0].attrs.output_padding.value", "must be 0"),
    (lambda d: d["graph"][0]["inputs"][0].update(dtype="f64"), "graph[0].inputs[0]", "f64"),
    (lambda d: d["graph"][0]["inputs"][0].update(stride=[1, 1]), "graph[0].inputs[0].stride",
     "2 entries for 4"),
    (lambda d: d["graph"][0]["inputs"][0].update(colour="red"), "graph[0].inputs[0].colour",
     "unknown field"),
    (lambda d: d.update(engine_kind="gpu"), "engine_kind", "CPU engine only"),
    (lambda d: d.update(input_ports=[7]), "input_ports[0]", "no logical tensor has id 7"),
    (lambda d: d.update(graph=[]), "graph", "no ops"),
    (lambda d: d["graph"][0].update(id=True), "graph[0].id", "expected an int"),
    (lambda d: d["graph"][0]["attrs"]["strides"].update(value=[2, 2, 2]), "graph[0]",
     "strides must have 2 entries"),
])
def test_errors_name_the_file_and_field(tmp_path, edit, field, words):
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(_broken(edit)))
    with pytest.raises(ValueError) as info:
        og.load_graph(path)
    message = str(info.value)
    assert message.startswith(f"{path}: {field}") and words in message, message


def test_invalid_json_names_the_file(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{")
    with pytest.raises(ValueError, match="bad.json: not valid JSON"):
        og.load_graph(path)


def test_other_op_kinds_load_with_onednns_attribute_types():
    doc = {"version": "3.2.0", "graph": [{"id": 3, "name": "relu", "kind": "ReLU", "attrs": {},
           "inputs": [{"id": 0, "dtype": "f32", "shape": [2, 3], "stride": [3, 1]}],
           "outputs": [{"id": 1, "dtype": "f32", "shape": [2, 3], "stride": [3, 1]}]}]}
    assert og.load_graph(doc).ops[0].kind == "ReLU"
    doc["graph"][0]["attrs"] = {"alpha": {"type": "s64", "value": 1}}
    with pytest.raises(ValueError, match=r"graph\[0\]\.attrs\.alpha\.type: 's64', but oneDNN "
                                         "stores alpha as 'f32'"):
        og.load_graph(doc)
