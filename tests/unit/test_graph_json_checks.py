"""What the reader checks beyond each field's type, naming the field and the op:

* Dequantize / Quantize attributes the runner's reference cannot take (oneDNN runs a
  scale of 0 or NaN; the check after the run could only say "scales must be finite
  and > 0");
* the data flow: a tensor two ops write, and ops in a cycle (oneDNN only says "could
  not finalize the graph"; the package's kept_apart pass looped forever on a cycle);
* one tensor id described two ways (oneDNN: "could not finalize the graph");
* an op oneDNN's schema refuses (an output missing): oneDNN's message names no op.
"""

import math

import pytest

import onednn_graph as og


def _dequantize(scales, zps, dtype="u8"):
    return {"version": "3.2.0", "graph": [{
        "id": 7, "name": "dq", "kind": "Dequantize",
        "attrs": {"qtype": {"type": "string", "value": "per_tensor"},
                  "axis": {"type": "s64", "value": 1},
                  "scales": {"type": "f32[]", "value": scales},
                  "zps": {"type": "s64[]", "value": zps}},
        "inputs": [{"id": 0, "dtype": dtype, "shape": [2, 3], "stride": [3, 1]}],
        "outputs": [{"id": 1, "dtype": "f32", "shape": [2, 3], "stride": [3, 1]}]}]}


def test_a_valid_dequantize_loads():
    assert og.load_graph(_dequantize([0.5], [128])).ops[0].kind == "Dequantize"


@pytest.mark.parametrize("scales, zps, dtype, words", [
    ([0.0], [0], "u8", "scales must be finite and > 0, got 0.0"),
    ([math.nan], [0], "u8", "scales must be finite and > 0, got nan"),
    ([-1.0], [0], "s8", "scales must be finite and > 0, got -1.0"),
    ([1.0], [300], "u8", "zero points of u8 data must be in [0, 255], got 300"),
    ([1.0], [0], "f32", "quantized dtype must be u8 or s8, got 'f32'"),
])
def test_a_scale_or_zero_point_the_reference_cannot_take_is_refused(scales, zps, dtype, words):
    with pytest.raises(ValueError) as info:
        og.load_graph(_dequantize(scales, zps, dtype))
    assert str(info.value) == f"<dict>: graph[0].attrs: Dequantize op 7: {words}"


def _chain(*links):
    """ReLU ops, each (op id, input tensor id, output tensor id)."""
    return {"version": "3.2.0", "graph": [{
        "id": oid, "kind": "ReLU", "attrs": {},
        "inputs": [{"id": src, "dtype": "f32", "shape": [2, 3], "stride": [3, 1]}],
        "outputs": [{"id": dst, "dtype": "f32", "shape": [2, 3], "stride": [3, 1]}]}
        for oid, src, dst in links]}


def test_a_chain_loads():
    assert [op.id for op in og.load_graph(_chain((5, 0, 1), (6, 1, 2))).ops] == [5, 6]


@pytest.mark.parametrize("links, words", [
    ([(5, 0, 1), (6, 1, 2), (7, 2, 0)],
     "graph[0]: op 5 -> op 6 -> op 7 -> op 5 form a cycle: each reads a tensor the one "
     "before it writes"),
    ([(5, 0, 1), (6, 1, 1)], "graph[1].outputs[0].id: tensor 1 is written by op 5 too"),
    ([(5, 0, 1), (6, 2, 2)],  # an op that reads what it writes
     "graph[1]: op 6 reads tensor 2 and writes it: an output id reuses an input id (give "
     "the output an id of its own)"),
])
def test_a_tensor_written_twice_or_a_cycle_is_refused(links, words):
    with pytest.raises(ValueError) as info:
        og.load_graph(_chain(*links))
    assert str(info.value) == f"<dict>: {words}"


def test_an_op_onednn_refuses_as_written_is_bad_input_naming_it():
    doc = _chain((3, 0, 1))
    doc["graph"][0]["outputs"] = []
    with pytest.raises(ValueError) as info:
        og.load_graph(doc)
    assert str(info.value) == (
        "<dict>: graph[0]: ReLU op 3: oneDNN refuses the op as written (its inputs, outputs "
        "or attributes): could not add op to the graph (oneDNN status: invalid_graph_op)")


def test_one_id_described_two_ways_is_refused_naming_both_places():
    # oneDNN only says "could not finalize the graph" (found by the damage test)
    doc = _dequantize([0.5], [128])
    doc["graph"][0]["outputs"][0]["id"] = 0  # the output reuses the input's id, as f32
    with pytest.raises(ValueError, match=r"<dict>: graph\[0\]\.outputs\[0\]: tensor 0 is f32 of "
                                         r"shape \[2, 3\], strides \[3, 1\] here but u8 of shape "
                                         r"\[2, 3\], strides \[3, 1\] at graph\[0\]\.inputs\[0\]"):
        og.load_graph(doc)
