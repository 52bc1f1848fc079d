"""The command-line driver: exit codes, output, batch files, info.

Cases are the project's fixtures (tests/fixtures/). A FAIL is provoked by
replacing the driver's reference with a wrong one, so the exit-code path is
exercised without any real disagreement."""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import onednn_graph as og
from onednn_graph import cli, reference
from onednn_graph._tools import runner as _runner

from helpers import FIXTURES
CASES = sorted(str(p) for p in FIXTURES.glob("*.json"))


def run(capsys, *argv):
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.parametrize("mode", ["correctness", "exact"])
def test_every_fixture_passes(capsys, mode):
    status, out, _ = run(capsys, "run", "--mode", mode, "--dt", "f32,bf16,f16", *CASES)
    assert status == cli.EXIT_PASS, out
    assert f"\n{3 * len(CASES)} case(s): {3 * len(CASES)} PASS\n" in out


def test_exact_mode_matches_exactly(capsys):
    status, out, _ = run(capsys, "run", "--mode", "exact", "--json", CASES[0])
    doc = json.loads(out)
    assert status == 0 and doc["cases"][0]["ops"][0]["max_abs"] == 0.0


def test_json_output(capsys):
    status, out, _ = run(capsys, "run", "--json", "--dt", "bf16", "--op-attrs",
                         "0:auto_pad:SAME_LOWER", str(FIXTURES / "deconv_bwd_d_small.json"))
    doc = json.loads(out)
    [case] = doc["cases"]
    assert status == 0 and doc["exit_status"] == 0 and doc["summary"] == {"PASS": 1}
    assert case["status"] == "PASS" and case["dt"] == "bf16"
    assert case["ops"][0]["kind"] == "ConvTransposeBackwardData"
    assert case["lowerings"][0] == "op 0: auto_pad resolved as ConvTranspose does"
    # and, where this CPU's oneDNN has no bf16 kernel for it, that it ran in f32, and
    # who converted
    assert len(case["lowerings"]) in (1, 2)
    if len(case["lowerings"]) == 2:
        assert case["lowerings"][1].startswith(
            "op(s) 0: in f32 between TypeCasts (no kernel for the dtype on "
            f"{og.system.cpu_isa()}, or only the reference one), converted by "), case["lowerings"]


def test_perf_mode_reports_times_and_flops(capsys):
    status, out, _ = run(capsys, "run", "--mode", "perf", "--repeat", "2", "--json",
                         str(FIXTURES / "deconv_small.json"))
    [case] = json.loads(out)["cases"]
    assert status == 0 and case["status"] == "DONE"
    # 2 * N * C_in * C_out * the products kept: pads_end 3 crops the 11 x 11 positions
    # to 8 x 8, where each axis keeps 4 + 4 + 3 of its 5 * 3 (position, tap) pairs
    # (o = 2i + t < 8), so 2 * 1 * 4 * 6 * 11 * 11
    assert case["flops"] == 5808
    assert case["median_ms"] > 0 and case["compile_ms"] > 0


def test_fail_exits_1(capsys, monkeypatch):
    right = reference.conv_transpose
    wrong = lambda *a, **k: right(*a, **k) + np.float32(1)  # noqa: E731
    monkeypatch.setattr(reference, "conv_transpose", wrong)
    status, out, _ = run(capsys, "run", str(FIXTURES / "deconv_small.json"))
    assert status == cli.EXIT_FAIL
    assert out.startswith("0:FAIL") and "exceeds tolerance" in out


@pytest.mark.parametrize("error, status", [
    (og.UnsupportedError("no kernel for this"), "UNSUPPORTED"),
    (og.Error("could not execute", "runtime_error"), "ERROR"),
])
def test_onednn_refusals_exit_1(capsys, monkeypatch, error, status):
    def refuse(*args, **kwargs):
        raise error
    monkeypatch.setattr(_runner, "run", refuse)
    code, out, _ = run(capsys, "run", str(FIXTURES / "deconv_small.json"))
    assert code == cli.EXIT_FAIL and out.startswith(f"0:{status}") and str(error) in out


def test_a_case_the_graph_path_cannot_run_exits_1(capsys):
    # No kernel window reaches the output (pads_begin 11 past the full 11 positions): the
    # functional API returns zeros without oneDNN, a partition has nothing to run it as
    # (see README); the driver reports UNSUPPORTED, not bad input.
    status, out, _ = run(capsys, "run", "--op-attrs", "0:pads_begin:11x11*pads_end:-3x-3",
                         str(FIXTURES / "deconv_small.json"))
    assert status == cli.EXIT_FAIL and out.startswith("0:UNSUPPORTED"), out


def test_a_case_that_runs_on_a_view_passes(capsys):
    # output_padding >= strides + pads_end: the partition runs on a view without the
    # positions outside every kernel window (_impl.spec_op.View), as the functional API does.
    status, out, _ = run(capsys, "run", "--op-attrs", "0:output_padding:3x3*pads_end:0x0",
                         str(FIXTURES / "deconv_small.json"))
    assert status == 0 and out.startswith("0:PASS") and "on a view" in out, out


@pytest.mark.parametrize("argv, words", [
    (["run", "--in-shapes", "0:1x2x", "CASE"], "--in-shapes"),
    (["run", "--op-attrs", "0:paddings:1x1", "CASE"], "has no attribute 'paddings'"),
    (["run", "--dt", "f64", "CASE"], "--dt"),
    (["run", "--in-shapes", "0:1x5x5x5", "CASE"], "ConvTranspose op 0"),
])
def test_bad_input_exits_2(capsys, argv, words):
    argv = [str(FIXTURES / "deconv_small.json") if a == "CASE" else a for a in argv]
    status, out, _ = run(capsys, *argv)
    assert status == cli.EXIT_BAD_INPUT and out.startswith("0:BAD INPUT") and words in out, out


@pytest.mark.parametrize("command", ["run", "tune"])
def test_a_missing_case_file_is_one_line_naming_it(capsys, command):
    # Four alternatives of one missing file: one line, not one [Errno 2] per case.
    status, out, err = run(capsys, command, "missing.json", "--dt", "f32,bf16", "--op-attrs",
                           ",0:auto_pad:SAME_UPPER", str(FIXTURES / "deconv_small.json"))
    assert status == cli.EXIT_BAD_INPUT and out == ""
    assert err.splitlines() == [f"onednn-graph {command}: case file not found: missing.json "
                                f"(looked in {os.getcwd()})"]


def test_unknown_op_kind_exits_2_naming_file_and_field(capsys, tmp_path):
    doc = json.loads((FIXTURES / "deconv_small.json").read_text())
    doc["graph"][0]["kind"] = "Deconvolution"
    path = tmp_path / "case.json"
    path.write_text(json.dumps(doc))
    status, out, _ = run(capsys, "run", str(path))
    assert status == 2 and f"{path}: graph[0].kind: unknown op kind 'Deconvolution'" in out


def test_bad_input_wins_over_fail(capsys, monkeypatch, tmp_path):
    right = reference.conv_transpose
    monkeypatch.setattr(reference, "conv_transpose",
                        lambda *a, **k: right(*a, **k) + np.float32(1))
    damaged = tmp_path / "damaged.json"
    damaged.write_text("{")
    status, out, _ = run(capsys, "run", str(damaged), str(FIXTURES / "deconv_small.json"))
    assert out.startswith("0:BAD INPUT") and "\n1:FAIL" in out
    assert status == cli.EXIT_BAD_INPUT


@pytest.mark.parametrize("argv", [["run"], ["run", "--repeat", "0", "x.json"], ["frobnicate"],
                                  ["run", "--mode", "fast", "x.json"]])
def test_usage_errors_exit_2(capsys, argv):
    try:
        status = cli.main(argv)
    except SystemExit as exc:  # argparse's own errors
        status = exc.code
    assert status == cli.EXIT_BAD_INPUT


def test_case_files_may_follow_options(capsys):
    status, out, _ = run(capsys, "run", CASES[0], "--dt", "f16", CASES[1], "--mode", "exact")
    assert status == 0 and "\n2 case(s): 2 PASS\n" in out


def test_batch_file(capsys):
    status, out, _ = run(capsys, "run", "--batch", str(FIXTURES / "cases.batch"))
    assert status == 0 and "\n3 case(s): 3 PASS\n" in out
    # benchdnn's closing line, last
    assert out.rstrip().endswith("tests:3 passed:3 skipped:0 mistrusted:0 unimplemented:0 "
                                 "invalid_arguments:0 failed:0 listed:0")


def test_batch_file_errors_name_the_line(capsys, tmp_path):
    path = tmp_path / "b.batch"
    path.write_text("# comment\n\n--frobnicate --case=deconv_small.json\n")
    status, out, _ = run(capsys, "run", "--batch", str(path))
    assert status == 2 and f"{path}:3: cannot read '--frobnicate'" in out


def test_progress_bar_goes_to_stderr(capsys):
    status, out, err = run(capsys, "run", "--progress", "on", "--dt", "f32,f16", CASES[0])
    assert status == 0 and "[" + "#" * 30 + "] 2/2" in err and "#" not in out


def test_info(capsys):
    status, out, _ = run(capsys, "info")
    v = og.system.onednn_version()
    assert status == 0 and f"oneDNN {v.major}.{v.minor}.{v.patch}" in out
    assert og.system.cpu_isa() in out and "constant-tensor cache: " in out
    # Per op and dtype, how the package runs it on what this CPU's oneDNN has.
    assert f"How each op runs on this CPU ({og.system.cpu_isa()})" in out
    status, out, _ = run(capsys, "info", "--json")
    caps = json.loads(out)
    assert caps == json.loads(json.dumps(og.system.capabilities()))
    assert caps["threads"] >= 1 and caps["numpy"] == np.__version__
    kernels = {(k["op"], k["dtype"]): k for k in caps["kernels"]}
    assert set(kernels) == {(op, dt) for op in og.shapes.KINDS for dt in ("f32", "bf16", "f16")}
    for (op, dtype), k in kernels.items():
        assert k["kernel"] in ("native", "reference", "none")
        chain = dtype != "f32" and k["kernel"] != "native"
        assert k["runs"] == ("f32 chain" if chain else "native")
        assert dtype != "f32" or k["kernel"] == "native"  # every x86-64 CPU oneDNN runs on


def test_info_is_a_summary_with_each_fact_once_and_all_adds_every_detail(capsys):
    caps = og.system.capabilities()
    status, out, _ = run(capsys, "info")
    assert status == 0 and len(out.splitlines()) <= 60
    # Each rewrite the package makes is named once, however many features it serves
    # (wrapped lines joined back).
    text = " ".join(line.strip() for line in out.splitlines())
    rewrites = {s["package"][len("lowered ("):-1] for s in caps["support"]
                if s["package"].startswith("lowered (")}
    assert rewrites and all(text.count(r) == 1 for r in rewrites), text
    # --all: oneDNN's kernel for each op and dtype, and its answer for each feature.
    status, out, _ = run(capsys, "info", "--all", "--wide")
    assert status == 0
    assert all(k["implementation"] in out for k in caps["kernels"] if k["kernel"] != "none")
    for s in caps["support"]:
        assert re.search(rf"  {re.escape(s['feature'])} +{re.escape(s['literal'])}  ", out), s


def test_python_dash_m(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "onednn_graph", "run", "--mode", "exact",
                           CASES[0]], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0 and "1 case(s): 1 PASS" in proc.stdout


def test_a_two_op_graph_checks_each_op_on_what_it_read(tmp_path, capsys):
    # ConvTranspose feeding ConvTransposeBackwardData: the second op is checked
    # against the reference applied to the first op's oneDNN output.
    a = dict(strides=[2, 2], pads_begin=[0, 0], pads_end=[0, 0], dilations=[1, 1],
             data_format="NCX", weights_format="IOX")
    lt = og.LogicalTensor
    x, w, w2 = lt(0, "f32", (1, 4, 5, 5)), lt(1, "f32", (4, 3, 3, 3)), lt(3, "f32", (4, 3, 3, 3))
    y, z = lt(2, "f32", (1, 3, 11, 11)), lt(4, "f32", (1, 4, 5, 5))
    g = og.Graph()
    g.add_op(og.Op(0, "ConvTranspose", [x, w], [y], a, "ct"))
    g.add_op(og.Op(1, "ConvTransposeBackwardData", [y, w2], [z], a, "bd"))
    og.save_graph(g, tmp_path / "chain.json")
    assert g.to_json()["input_ports"] == [0, 1, 3] and g.to_json()["output_ports"] == [4]
    status, out, _ = run(capsys, "run", "--json", "--dt", "f16", "--expected-n-partitions", "2",
                         str(tmp_path / "chain.json"))
    [case] = json.loads(out)["cases"]
    assert status == 0 and [op["id"] for op in case["ops"]] == [0, 1]
    assert all(op["passed"] for op in case["ops"])
