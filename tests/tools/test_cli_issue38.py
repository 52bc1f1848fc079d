"""The command line as issue 38 found it: perf mode times what the library runs, and
the example graphs docs/cli.md runs are the package's own.

The driver's perf path runs each op of a graph as the functional API runs the same
problem: the same plan (``_plan.plan_call``: lowering, form, size), the same thread
count, the same compiled call; `--threads N` sets the count. Truth: the functional
API's own plan and compiled op for the problem, in the same process. Nothing is timed
against a threshold here (a busy machine must not fail the suite): the figures
themselves are docs/cli.md's, made by ``scripts/cli_perf_vs_api.py``. The graphs of
examples/graphs/ are what ``scripts/write_example_graphs.py`` writes with the
package's writer.
"""

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import onednn_graph as og
from onednn_graph import _core, cli
from onednn_graph._impl import plan as _plan, version as _version
from onednn_graph.reproducer import reproducer

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "graphs"
DTYPES = {"f32": np.float32, "bf16": ml_dtypes.bfloat16}
# ConvTranspose problems on either side of _plan.SMALL_FLOPS: the API runs the tiny one
# on one thread (and, on oneDNN 3.2, as ConvolutionBackwardData), the others on
# oneDNN's default threads; an NXC one with output_padding and a bias too.
PROBLEMS = {
    "tiny": ((1, 8, 4, 4), (8, 8, 2, 2), None,
             dict(strides=2, data_format="NCX", weights_format="IOX")),
    "medium": ((4, 64, 16, 16), (64, 32, 4, 4), None,
               dict(strides=2, pads_begin=1, pads_end=1, data_format="NCX", weights_format="IOX")),
    "nxc-bias": ((2, 9, 9, 16), (3, 3, 32, 16), (32,), dict(strides=2, output_padding=1)),
}


def _arrays(problem, dtype):
    src, weights, bias, kw = PROBLEMS[problem]
    rng = np.random.default_rng(0)
    arrays = [rng.uniform(-1, 1, s).astype(DTYPES[dtype]) for s in (src, weights, bias) if s]
    return arrays, kw


@pytest.fixture
def plans(monkeypatch):
    """Every call plan made while the test runs, in order (the driver and the functional
    API both plan through ``_plan.plan_call``)."""
    made = []
    plan_call = _plan.plan_call

    def recorded(*args, **kwargs):
        made.append(plan_call(*args, **kwargs))
        return made[-1]
    monkeypatch.setattr(_plan, "plan_call", recorded)
    return made


def _perf(capsys, path, *options):
    """The driver's perf run of `path`, its one case as JSON."""
    status = cli.main(["run", "--mode", "perf", "--repeat", "1", "--json", *options, str(path)])
    [case] = json.loads(capsys.readouterr().out)["cases"]
    assert status == cli.EXIT_PASS and case["status"] == "DONE", case
    return case


def _threads(count):
    """The threads a compiled op reports for a requested `count` (0 where the package
    cannot set them: oneDNN not on OpenMP)."""
    return count if _core.can_limit_threads() else 0


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("problem", PROBLEMS)
def test_perf_runs_the_functional_apis_plan_and_threads(capsys, tmp_path, plans, problem, dtype):
    arrays, kw = _arrays(problem, dtype)
    path = tmp_path / "case.json"
    reproducer(og.conv_transpose, *arrays, **kw).save(path)
    og.cache.clear_cache()
    plans.clear()
    og.conv_transpose(*arrays, **kw)
    [api_plan], [api_op] = plans, og.cache.cached_ops()
    og.cache.clear_cache()
    case = _perf(capsys, path)
    driver_plan = plans[-1]  # (loading the graph plans its op too; the call is planned last)
    [driver_op] = og.cache.cached_ops()  # what the driver ran, kept by the API's cache
    # The same plan: lowering, the form run by default, size, shapes, dtype.
    assert driver_plan == api_plan
    assert (driver_op.kind, driver_op.attrs, driver_op.lowering, driver_op.threads) == \
        (api_op.kind, api_op.attrs, api_op.lowering, api_op.threads)
    assert case["timed_as"] == "api"
    assert case["threads"] == {"0": api_op.threads}
    assert api_op.threads == _threads(_plan.threads(api_plan.size))
    assert case["lowerings"] == ([f"op 0: {api_op.lowering}"] if api_op.lowering != "native"
                                 else [])
    assert case["flops"] == api_plan.size.flops


@pytest.mark.parametrize("threads", [0, 1, 2])
@pytest.mark.parametrize("problem", ["tiny", "medium"])
def test_threads_sets_the_count_and_nothing_else(capsys, tmp_path, plans, problem, threads):
    arrays, kw = _arrays(problem, "f32")
    path = tmp_path / "case.json"
    reproducer(og.conv_transpose, *arrays, **kw).save(path)
    og.cache.clear_cache()
    chosen = _perf(capsys, path)
    chosen_plan = plans[-1]
    given = _perf(capsys, path, "--threads", str(threads))
    # Where the package cannot set the threads (oneDNN 3.13: TBB), a count over 0 is
    # dropped (the CLI says so) and the op is timed as the API calls it.
    way = "compile_op" if threads == 0 or _core.can_limit_threads() else "api"
    assert given["threads"] == {"0": _threads(threads)} and given["timed_as"] == way
    # The same plan otherwise. (The API names every input the op has, bias included; the
    # driver, compiling the call itself for the thread count, those the graph has.)
    assert dataclasses.replace(plans[-1], names=chosen_plan.names) == chosen_plan
    assert given["lowerings"] == chosen["lowerings"]


def test_constant_weights_run_as_compile_op_compiles_them(capsys):
    """The API has no constant weights: `compile_op(..., constant_weights=True)` has,
    with the API's plan and thread count."""
    tiny = EXAMPLES / "deconv_tiny.json"
    called = _perf(capsys, tiny)
    constant = _perf(capsys, tiny, "--tensor-property", "1:constant")
    assert constant["timed_as"] == "compile_op" and called["timed_as"] == "api"
    assert constant["threads"] == called["threads"] == {"0": _threads(1)}
    assert constant["lowerings"] == called["lowerings"]


def test_the_case_line_and_table_say_the_threads(capsys):
    tiny = EXAMPLES / "deconv_tiny.json"
    assert cli.main(["run", "--mode", "perf", "--repeat", "1", str(tiny)]) == cli.EXIT_PASS
    out = capsys.readouterr().out.splitlines()
    default = _version.onednn_threads()[0]  # oneDNN's own count, where the package sets none
    one = "1 thread" if _core.can_limit_threads() else \
        f"{default} thread{'s' * (default != 1)} (oneDNN's default)"
    assert out[2] == f"    on {one}, as the functional API runs it"
    header = [line for line in out if line.startswith("case ")][0].split()
    row = [line for line in out if line.startswith("--case=")][0].split()
    assert header[-1] == "threads" and row[-1] == ("1" if _core.can_limit_threads() else row[-1])


def test_a_graph_with_an_epilogue_is_timed_as_its_partitions(capsys):
    """ConvTranspose, bias and ReLU: the functional API's fused call compiles oneDNN's
    partitions of that graph on oneDNN's default threads, and so does the driver;
    `--threads` says it does not apply."""
    fused = EXAMPLES / "deconv_bias_relu_f32.json"
    case = _perf(capsys, fused)
    assert case["timed_as"] == "partitions" and case["threads"] == {"0": 0, "1": 0}
    assert case["message"] == ""
    case = _perf(capsys, fused, "--threads", "1")
    assert case["threads"] == {"0": 0, "1": 0} and "--threads does not apply" in case["message"]


@pytest.mark.parametrize("argv", [["--threads", "-1"], ["--threads", "two"]])
def test_a_bad_thread_count_exits_2(capsys, argv):
    tiny = str(EXAMPLES / "deconv_tiny.json")
    try:
        status = cli.main(["run", "--mode", "perf", *argv, tiny])
    except SystemExit as exc:  # argparse's own refusal of a non-integer
        status = exc.code
    assert status == cli.EXIT_BAD_INPUT
    assert "--threads" in capsys.readouterr().err


def test_the_example_graphs_are_what_the_script_writes():
    script = ROOT / "scripts" / "write_example_graphs.py"
    result = subprocess.run([sys.executable, str(script), "--check"], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr


def test_an_epilogues_check_names_the_terms_its_bound_comes_from():
    # The ReLU after a ConvTranspose is checked against a bound carried from the
    # convolution's f32 accumulation: its line says that convolution's terms, not 0.
    outcome = cli.run_case(cli.Case(str(EXAMPLES / "deconv_bias_relu_f32.json")), "correctness", 1, 0)
    [check] = outcome.result.checks
    graph = og.load_graph(str(EXAMPLES / "deconv_bias_relu_f32.json"))
    [conv] = [op for op in graph.ops if op.kind == "ConvTranspose"]
    x, w = (t.shape for t in conv.inputs[:2])
    in_channels, kernel_taps = x[1] if conv.attrs.get("data_format") == "NCX" else x[-1], \
        int(np.prod(w[2:] if conv.attrs.get("weights_format") == "IOX" else w[:-2]))
    assert check.kind == "ReLU" and check.terms == in_channels * kernel_taps + 1  # and the bias
