"""benchdnn graph batch files as `onednn-graph run --batch` reads them (issue 29).

Each test builds a small inputs tree of its own in benchdnn's layout (``op/``,
``pattern/``, harness lists) from the project's fixtures and graphs the package
writes, so nothing here needs oneDNN's own files; the truth for each run is the
driver's float64 reference with its usual bound (tolerance.py), and for the
batch conventions the statuses and counts benchdnn's rules give.
"""

import json
import shutil

import numpy as np
import pytest

import onednn_graph as og
from onednn_graph import batch, cli, post, quant

from helpers import FIXTURES


def run(capsys, *argv):
    status = cli.main(list(argv))
    out, _ = capsys.readouterr()
    return status, out


def counts(out):
    """benchdnn's closing counts, the last line."""
    return dict((k, int(v)) for k, v in (w.split(":") for w in out.rstrip().splitlines()[-1].split()))


def statuses(out):
    """The status of each case line ('N:STATUS label')."""
    found = []
    for line in out.splitlines():
        head, sep, rest = line.partition(":")
        if head.isdigit() and sep:
            found.append(next(s for s in cli.BENCHDNN_COUNTS if rest.startswith(s + " ")))
    return found


@pytest.fixture
def inputs(tmp_path):
    """benchdnn's inputs/graph layout with the project's fixtures under op/f32/."""
    root = tmp_path / "inputs"
    (root / "op" / "f32").mkdir(parents=True)
    for name in ("deconv_small.json", "deconv_bwd_d_small.json", "conv_bwd_d_3d_small.json"):
        shutil.copy(FIXTURES / name, root / "op" / "f32" / name)
    doc = json.loads((FIXTURES / "deconv_small.json").read_text())
    doc["graph"][0]["kind"] = "Abs"  # an op oneDNN knows and the package does not cover
    doc["graph"][0]["attrs"] = {}
    doc["graph"][0]["inputs"] = doc["graph"][0]["inputs"][:1]
    doc["graph"][0]["outputs"][0].update(shape=doc["graph"][0]["inputs"][0]["shape"],
                                         stride=doc["graph"][0]["inputs"][0]["stride"])
    (root / "op" / "f32" / "abs.json").write_text(json.dumps(doc))
    return root


def test_a_harness_list_runs_to_the_end(capsys, inputs, monkeypatch):
    (inputs / "op" / "harness_f32_all").write_text(
        "# knobs hold until --reset; --case= paths are relative to the inputs root\n"
        "--reset --case=op/f32/abs.json\n"
        "--reset --case=op/f32/missing.json\n"
        "--reset --dt=f32,bf16 --case=op/f32/deconv_small.json\n"
        "--op-attrs=0:auto_pad:SAME_UPPER --case=op/f32/deconv_bwd_d_small.json\n"
        "--reset --case=op/f32/deconv_bwd_d_small.json\n")
    monkeypatch.chdir(inputs)
    status, out = run(capsys, "run", "--batch", "op/harness_f32_all")
    # the --dt of line 3 still holds on line 4 (no --reset): two cases there too
    assert statuses(out) == ["SKIPPED", "SKIPPED", "PASS", "PASS", "PASS", "PASS", "PASS"], out
    assert "op 0 Abs: outside the package's ops" in out
    assert "case file not found" in out and "op/harness_f32_all:3" in out
    assert "--dt=bf16 --op-attrs=0:auto_pad:SAME_UPPER --case=op/f32/deconv_bwd_d_small.json" in out
    assert status == cli.EXIT_PASS
    assert counts(out) == dict(tests=7, passed=5, skipped=2, mistrusted=0, unimplemented=0,
                               invalid_arguments=0, failed=0, listed=0)


def test_nested_batches_and_relative_paths(capsys, inputs, tmp_path, monkeypatch):
    (inputs / "op" / "f32" / "inner").write_text("--reset --case=deconv_small.json\n")
    (inputs / "op" / "harness").write_text(
        "--reset --mb=2 --batch=op/f32/inner\n"      # found under the inputs root
        "--case=f32/deconv_small.json\n")            # under the harness's own folder
    monkeypatch.chdir(tmp_path)  # neither path is relative to the current directory
    status, out = run(capsys, "run", "--batch", str(inputs / "op" / "harness"))
    assert statuses(out) == ["PASS", "PASS"], out
    # the inner file's --reset ends --mb for the rest of the stream, as in benchdnn
    assert "--case=f32/deconv_small.json" in out and "--mb" not in out.splitlines()[-6:][0]
    status, out = run(capsys, "run", "--inputs-root", str(inputs), "--batch",
                      str(inputs / "op" / "f32" / "inner"))
    assert status == 0 and statuses(out) == ["PASS"]


def test_words_benchdnn_takes_and_words_it_does_not(capsys, inputs):
    path = inputs / "op" / "b"
    path.write_text("-v1 --mode=L --case=op/f32/deconv_small.json\n"
                    "--engine=gpu --case=op/f32/deconv_small.json\n"
                    "--engine=cpu --frobnicate=1 --case=op/f32/deconv_small.json\n"
                    "--reset --expected-n-partitions=2 --mode=C --case=op/f32/deconv_small.json\n"
                    "--op-attrs=0:auto_pad:\\\n  SAME_UPPER --expected-n-partitions=0 "
                    "--case=op/f32/deconv_small.json\n")
    status, out = run(capsys, "run", "--batch", str(path))
    # --mode and --engine are benchdnn's own settings: they hold until set again
    assert statuses(out) == ["LISTED", "SKIPPED", "BAD INPUT", "LISTED", "FAIL", "PASS"], out
    assert "not applied: -v1" in out
    assert "--engine=gpu: this package runs on oneDNN's CPU engine only" in out
    assert f"{path}:3: cannot read '--frobnicate=1'" in out
    assert "oneDNN returned 1 partition(s), the case expects 2" in out
    # a word ending in a backslash joins the next one, as in benchdnn
    assert "--op-attrs=0:auto_pad:SAME_UPPER --expected-n-partitions=0 --case=" in out
    assert status == cli.EXIT_BAD_INPUT
    assert counts(out) == dict(tests=6, passed=1, skipped=1, mistrusted=0, unimplemented=0,
                               invalid_arguments=1, failed=2, listed=2)


def test_a_batch_that_names_itself_stops(capsys, inputs):
    path = inputs / "op" / "loop"
    path.write_text("--batch=op/loop\n")
    status, out = run(capsys, "run", "--batch", str(path))
    assert status == cli.EXIT_BAD_INPUT and "nest more than 16 deep" in out


def test_a_3d_case_rewritten_to_2d(capsys):
    # oneDNN's v3.13 conv_bwd_d_3d.json lines rewrite a 3-D ConvolutionBackwardData to
    # 2-D: the 12-entry output_padding (cut to 3 at load) follows the new rank, the
    # uniform strides/dilations too, and output_padding (which the op ignores) never
    # refuses it.
    path = str(FIXTURES / "conv_bwd_d_3d_small.json")
    status, out = run(capsys, "run", "--in-shapes", "0:1x4x6x6*abcd+1:4x2x1x1*abcd",
                      "--op-attrs", "0:dst_shape:1x2x12x12*pads_end:0x0*pads_begin:0x0"
                      "*strides:2x2", path)
    assert status == 0 and statuses(out) == ["PASS"], out
    status, out = run(capsys, "run", "--in-shapes", "0:1x4x3x4", "--op-attrs",
                      "0:dst_shape:1x2x5x6*pads_begin:0x1x0*output_padding:2x2", path)
    assert status == cli.EXIT_BAD_INPUT and "pads_begin [0, 1, 0] has 3 entries for 2 spatial" \
        in out, out


@pytest.fixture
def int8_graph(tmp_path):
    """An int8 ConvTranspose as oneDNN's pattern files hold it: Dequantize (u8 src,
    per-channel s8 weights), the op with a bias, an s8 skip dequantized and added,
    Quantize: the graph the package writes for the call."""
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (2, 4, 5, 5)).astype(np.uint8)
    w = rng.integers(-32, 33, (4, 6, 3, 3)).astype(np.int8)
    b = rng.standard_normal(6).astype(np.float32)
    attrs = dict(strides=2, data_format="NCX", weights_format="IOX")
    shape = og.output_shape("ConvTranspose", [x.shape, w.shape], **attrs)
    skip = quant.per_tensor(rng.integers(-128, 128, shape).astype(np.int8), 0.03, 0)
    r = og.reproducer.reproducer(og.conv_transpose, quant.per_tensor(x, 0.02, 128),
                      quant.per_channel(w, 0.01 + 0.001 * np.arange(6), axis=1), b, **attrs,
                      post_ops=[post.add(skip)], quantize=quant.to("s8", 0.05, 3))
    kinds = [op["kind"] for op in r.spec["graph"]]
    assert kinds == ["Dequantize", "Dequantize", "ConvTranspose", "Dequantize", "Add", "Quantize"]
    path = tmp_path / "int8.json"
    r.save(path)
    return str(path)


@pytest.mark.parametrize("in_shapes, op_attrs", [
    # new channels and groups: the weights' Dequantize output, its per-channel scales,
    # the bias, the skip and the Quantize all follow (the oneDNN files' refused lines)
    ("0:1x8x5x5+1:8x3x3x3+2:12+200:1x12x11x11", "2:groups:4"),
    # a new spatial size and stride: every shape after the op re-derived
    ("0:2x4x7x7+200:2x6x7x7", "2:strides:1x1*pads_begin:1x1*pads_end:1x1"),
])
def test_int8_overrides_propagate_through_the_pattern(capsys, int8_graph, in_shapes, op_attrs):
    status, out = run(capsys, "run", "--in-shapes", in_shapes, "--op-attrs", op_attrs,
                      int8_graph)
    assert status == 0 and statuses(out) == ["PASS"], out


def test_mb_rewrites_the_inputs_that_carry_it(capsys, int8_graph):
    g = og.load_graph(int8_graph)
    assert og.overrides.minibatch_inputs(g.ops) == [0, 200]  # src and skip, not weights/bias
    status, out = run(capsys, "run", "--mb", "3", "--json", int8_graph)
    assert status == 0 and json.loads(out)["cases"][0]["status"] == "PASS"


def test_benchdnn_counts_match_the_statuses():
    # benchdnn: unimplemented and invalid arguments count as failed too
    outcomes = [cli.Outcome(batch.Case("x"), s) for s in
                ("PASS", "DONE", "SKIPPED", "LISTED", "FAIL", "ERROR", "UNSUPPORTED", "BAD INPUT")]
    assert cli.benchdnn_summary(outcomes) == dict(
        tests=8, passed=2, skipped=1, mistrusted=0, unimplemented=1, invalid_arguments=1,
        failed=4, listed=1)
