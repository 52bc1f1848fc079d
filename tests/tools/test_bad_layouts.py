"""Damaged tensor layouts, refused before oneDNN or NumPy see them (issue 29).

A weights stride of 64 where the shape needs 1152, or a shape edited without its
strides, used to reach oneDNN ("could not construct a memory descriptor using
strides"); a stride of 2**31 ended in a MemoryError out of ``onednn-graph run``,
and so did a huge --in-shapes. Now the reader refuses such a tensor naming the
field, the tensor and the numbers, and the runner refuses a case too big for the
machine before it allocates anything. The graph is the package's own ConvTranspose
with deconv.json's weights (32 x 128 x 3 x 3, strides 1152, 9, 3, 1).
"""

import json

import pytest

import onednn_graph as og
from onednn_graph import cli, graph_json
from onednn_graph._impl import compiled as _compiled

WEIGHTS = "graph[0].inputs[1]"


def _document():
    x = og.LogicalTensor(0, "f32", (1, 32, 4, 4))
    w = og.LogicalTensor(1, "f32", (32, 128, 3, 3))
    y = og.LogicalTensor(2, "f32", (1, 128, 6, 6))
    g = og.Graph()
    g.add_op(og.Op(0, "ConvTranspose", [x, w], [y], {
        "strides": [1, 1], "pads_begin": [0, 0], "pads_end": [0, 0], "dilations": [1, 1],
        "data_format": "NCX", "weights_format": "IOX"}))
    return g.to_json()


def _run(tmp_path, edit=None, **knobs):
    """The outcome of `onednn-graph run` on the document, edited by `edit`."""
    doc = _document()
    if edit is not None:
        edit(doc)
    path = tmp_path / "case.json"
    path.write_text(json.dumps(doc))
    return str(path), cli.run_case(cli.Case(str(path), **knobs), "correctness", 1, 0)


def _weights(doc):
    return doc["graph"][0]["inputs"][1]


def test_the_document_passes_as_it_is(tmp_path):
    assert _run(tmp_path)[1].status == "PASS"


def test_an_overlapping_stride_is_refused_naming_field_tensor_and_numbers(tmp_path):
    path, outcome = _run(tmp_path, lambda d: _weights(d)["stride"].__setitem__(0, 64))
    assert outcome.status == "BAD INPUT"
    assert outcome.message == (
        f"{path}: {WEIGHTS}.stride: tensor 1 of shape [32, 128, 3, 3] has strides "
        "[64, 9, 3, 1], whose elements overlap: axis 0 (size 32) needs a stride of at least "
        "1152 (the extent of the axes inside it), got 64")


def test_a_shape_edited_without_its_strides_is_refused(tmp_path):
    def edit(doc):  # twice the output channels, strides left as they were
        _weights(doc)["shape"][1] = 256
        doc["graph"][0]["outputs"][0]["shape"][1] = 256
    path, outcome = _run(tmp_path, edit)
    assert outcome.status == "BAD INPUT"
    assert outcome.message == (
        f"{path}: {WEIGHTS}.stride: tensor 1 of shape [32, 256, 3, 3] has strides "
        "[1152, 9, 3, 1], whose elements overlap: axis 0 (size 32) needs a stride of at least "
        "2304 (the extent of the axes inside it), got 1152")


def test_a_huge_stride_is_refused_not_a_memory_error(tmp_path, monkeypatch):
    span = 31 * 2**31 + 127 * 9 + 2 * 3 + 2 + 1  # elements from the first to the last
    limit, limit_text = graph_json.memory_limit()
    if span * 4 <= limit:
        pytest.skip(f"this machine holds {span * 4} bytes")
    monkeypatch.setattr(_compiled, "array_for", _never_allocates)
    path, outcome = _run(tmp_path, lambda d: _weights(d)["stride"].__setitem__(0, 2**31))
    assert outcome.status == "BAD INPUT"
    assert outcome.message == (
        f"{path}: {WEIGHTS}.stride: tensor 1 of shape [32, 128, 3, 3], strides "
        f"[2147483648, 9, 3, 1] and dtype f32 spans {span} elements ({span * 4} bytes): "
        f"more than {limit_text}")


def test_a_huge_shape_is_blamed_on_the_shape(tmp_path):
    def edit(doc):
        _weights(doc).update(shape=[2**40, 128, 3, 3], stride=[1152, 9, 3, 1])
    path, outcome = _run(tmp_path, edit)
    assert outcome.message.startswith(f"{path}: {WEIGHTS}.shape: tensor 1 of shape "
                                      f"[{2**40}, 128, 3, 3], strides [1152, 9, 3, 1] and "
                                      "dtype f32 spans"), outcome.message


def test_a_stride_of_more_than_int64_bytes_is_refused_even_on_an_axis_of_size_1(tmp_path):
    path, outcome = _run(tmp_path, lambda d: d["graph"][0]["inputs"][0]["stride"]
                         .__setitem__(0, 2**62))
    assert outcome.message == (
        f"{path}: graph[0].inputs[0].stride: tensor 0 of shape [1, 32, 4, 4] has strides "
        f"[{2**62}, 16, 4, 1]: axis 0's stride of {2**62} f32 elements is more than 2**63-1 "
        "bytes (byte strides are int64)")


@pytest.mark.parametrize("field, value, words", [
    ("stride", [1152, -9, 3, 1], "tensor 1: strides must be >= 0 (or INT64_MIN, unknown), "
                                 "got [1152, -9, 3, 1]"),
    ("shape", [32, 128, -3, 3], "tensor 1: dims must be >= 0 (or INT64_MIN, unknown), "
                                "got [32, 128, -3, 3]"),
    ("shape", [32, 2**63, 3, 3], "expected a list of int64s"),
    ("id", 2**64, "expected an int64, got 18446744073709551616"),
])
def test_negative_and_out_of_range_numbers_are_refused(tmp_path, field, value, words):
    path, outcome = _run(tmp_path, lambda d: _weights(d).update({field: value}))
    assert outcome.status == "BAD INPUT"
    assert outcome.message.startswith(f"{path}: {WEIGHTS}") and words in outcome.message, \
        outcome.message


@pytest.mark.parametrize("shape, strides", [
    ([1, 32, 4, 4], [7, 16, 4, 1]),      # a batch of 1: its stride is never used (oneDNN's rule)
    ([1, 32, 4, 4], [512, 1, 128, 32]),  # channels last
    ([1, 32, 4, 4], [4096, 16, 4, 1]),   # gaps between images are no overlap
])
def test_layouts_oneDNN_accepts_still_load(tmp_path, shape, strides):
    doc = _document()
    doc["graph"][0]["inputs"][0].update(shape=shape, stride=strides)
    og.load_graph(doc)


def test_an_empty_tensor_has_no_overlap_and_no_span():
    assert graph_json._overlapping_axis([0, 3], [0, 0]) is None
    assert graph_json.strided_span([4, 0, 3], [0, 5, 1]) == 0
    assert graph_json.strided_span([2, 3], [3, 1]) == 6


def _never_allocates(*args, **kwargs):
    raise AssertionError("the runner allocated an array for a case it must refuse")


def test_a_huge_in_shapes_is_refused_before_anything_is_allocated(tmp_path, monkeypatch):
    monkeypatch.setattr(_compiled, "array_for", _never_allocates)
    monkeypatch.setattr(graph_json, "memory_limit", lambda: (2**30, "1 GiB"))
    path, outcome = _run(tmp_path, in_shapes="0:64x32x256x256")
    assert outcome.status == "BAD INPUT"
    # the output, 64 x 128 x 258 x 258 f32, is the largest tensor: its array and two
    # float64 copies for the reference
    elements = 64 * 128 * 258 * 258
    assert outcome.message.startswith(
        f"tensor 2 of shape [64, 128, 258, 258], strides [8520192, 66564, 258, 1] and dtype "
        f"f32 needs {elements * (4 + 16)} bytes with its float64 reference copies; the case "
        "needs "), outcome.message
    assert outcome.message.endswith(" bytes in all, more than 1 GiB"), outcome.message


def test_a_memory_error_while_allocating_names_the_tensor(tmp_path, monkeypatch):
    def out_of_memory(lt, fill=None):
        raise MemoryError(f"Unable to allocate an array for tensor {lt.id}")
    monkeypatch.setattr(_compiled, "array_for", out_of_memory)
    _, outcome = _run(tmp_path)
    assert outcome.status == "BAD INPUT"
    assert outcome.message == (
        "tensor 0 of shape [1, 32, 4, 4], strides [512, 16, 4, 1] and dtype f32: cannot "
        "allocate its array (2048 bytes): Unable to allocate an array for tensor 0")
