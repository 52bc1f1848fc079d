"""Messages that name what to change (issue 31): the format to pass when the channels
would agree in the other layout, the batch axis a data tensor lost, the compiled call's
argument whose shape differs, an output id that reuses an input id, and only the dtypes
the ops take."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import numpy as np
import pytest

import onednn_graph as og

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

X_NCX = np.ones((1, 4, 5, 5), np.float32)    # N=1, C=4, 5x5
W_IOX = np.ones((4, 6, 3, 3), np.float32)    # C_in=4, C_out=6, 3x3
X_NXC = np.ascontiguousarray(X_NCX.transpose(0, 2, 3, 1))
W_XOI = np.ascontiguousarray(W_IOX.transpose(2, 3, 1, 0))


@pytest.mark.parametrize("x, w, given, hint", [
    (X_NCX, W_XOI, {}, "data_format='NCX': pass it"),
    (X_NXC, W_IOX, {}, "weights_format='IOX': pass it"),
    (X_NCX, W_IOX, {}, "data_format='NCX' and weights_format='IOX': pass them"),
    (X_NCX, W_XOI, {"data_format": "NXC", "weights_format": "XOI"}, "data_format='NCX': pass it"),
], ids=["NCX-data", "IOX-weights", "both", "given-explicitly"])
def test_channels_that_agree_in_the_other_layout_name_the_argument(x, w, given, hint):
    with pytest.raises(ValueError, match=r"channels of src .*; the channels would agree with "
                       + re.escape(hint)):
        og.conv_transpose(x, w, **given)


def test_channels_that_agree_in_no_layout_get_no_hint():
    with pytest.raises(ValueError) as info:
        og.conv_transpose(X_NXC, np.ones((3, 3, 6, 7), np.float32))
    assert "would agree" not in str(info.value)


def test_the_hint_serves_the_backward_ops_too():
    dst = og.conv_transpose(X_NCX, W_IOX, data_format="NCX", weights_format="IOX")
    with pytest.raises(ValueError, match=r"would agree with data_format='NCX' and "
                       r"weights_format='IOX'"):
        og.conv_transpose_backward_data(dst, W_IOX)


@pytest.mark.parametrize("call", [
    lambda: og.conv_transpose(X_NXC[0], W_XOI),
    lambda: og.conv_transpose(X_NCX[0], W_IOX, data_format="NCX", weights_format="IOX"),
    lambda: og.conv_transpose(X_NXC[0, 0], W_XOI[0]),            # 1D
], ids=["2d-NXC", "2d-NCX", "1d"])
def test_a_missing_batch_axis_names_src_not_the_weights(call):
    with pytest.raises(ValueError, match=r"^src \(.*\) has rank (\d) but weights \(.*\) rank "
                       r"\d: src is missing its batch axis N \(for one sample, pass src\[None\]\)"):
        call()


def test_a_missing_batch_axis_of_diff_dst_names_diff_dst():
    dst = og.conv_transpose(X_NXC, W_XOI)
    with pytest.raises(ValueError, match=r"^diff_dst \(.*\) has rank 3 but weights .* rank 4: "
                       "diff_dst is missing its batch axis"):
        og.conv_transpose_backward_data(dst[0], W_XOI)


def test_a_missing_batch_axis_of_the_weights_gradient_src_names_src():
    dst = og.conv_transpose(X_NXC, W_XOI)
    with pytest.raises(ValueError, match=r"^src \(5, 5, 4\) has rank 3 but diff_dst \(1, 7, 7, 6\) "
                       r"rank 4: src is missing its batch axis"):
        og.conv_transpose_backward_weights(X_NXC[0], dst, W_XOI.shape)


def test_weights_with_an_extra_axis_still_blame_the_weights():
    with pytest.raises(ValueError, match=r"weights \(3, 3, 6, 4, 1\) must have rank 4"):
        og.conv_transpose(X_NXC, W_XOI[..., None])


@pytest.mark.parametrize("argument, given, constant", [
    ("src", (1, 6, 6, 4), False), ("weights", (3, 3, 6, 5), False), ("src", (1, 6, 6, 4), True),
], ids=["src", "weights", "src-constant-weights"])
def test_a_compiled_call_names_the_argument_whose_shape_differs(argument, given, constant):
    op = og.compile_op("ConvTranspose", src=X_NXC.shape, weights=W_XOI if constant else W_XOI.shape,
                       dtype="f32", constant_weights=constant)
    arrays = {"src": X_NXC, "weights": W_XOI, argument: np.ones(given, np.float32)}
    expected = {"src": X_NXC.shape, "weights": W_XOI.shape}[argument]
    with pytest.raises(ValueError) as info:
        op(*[arrays[n] for n in op.input_names])
    assert str(info.value) == (f"ConvTranspose: {argument} has shape {given}, the operation "
                               f"was compiled for {expected}")


@pytest.mark.parametrize("call", [
    lambda x: og.conv_transpose(x, W_XOI),
    lambda x: og.compile_op("ConvTranspose", src=X_NXC.shape, weights=W_XOI.shape,
                            dtype="f32")(x, W_XOI),
], ids=["functional", "compiled"])
def test_a_float64_error_lists_only_the_dtypes_the_ops_take(call):
    with pytest.raises(TypeError) as info:
        call(X_NXC.astype(np.float64))
    message = str(info.value)
    assert message.endswith("src: unsupported dtype float64; the ops take f32 (float32), "
                            "bf16 (bfloat16), f16 (float16)")
    assert not re.search(r"\b(s32|u8|s8)\b", message)


def _reusing_input_id(same_description: bool) -> dict:
    doc = json.loads((FIXTURES / "deconv_small.json").read_text())
    op = doc["graph"][0]
    op["outputs"][0]["id"] = op["inputs"][0]["id"]
    if same_description:
        op["outputs"][0] = copy.deepcopy(op["inputs"][0])
    return doc


def test_a_json_output_reusing_an_input_id_described_otherwise_is_one_tensor_two_ways():
    with pytest.raises(ValueError, match=r"graph\[0\].outputs\[0\]: tensor 0 is f32 of shape "
                       r"\[1, 6, 8, 8\].* here but f32 of shape \[1, 4, 5, 5\].* at "
                       r"graph\[0\].inputs\[0\]; one id is one tensor"):
        og.graph_json.load_graph(_reusing_input_id(False))


def test_a_json_output_reusing_an_input_id_as_described_is_named():
    with pytest.raises(ValueError) as info:
        og.graph_json.load_graph(_reusing_input_id(True))
    assert str(info.value) == ("<dict>: graph[0]: op 0 reads tensor 0 and writes it: an output "
                               "id reuses an input id (give the output an id of its own)")
