"""The command line as a new user met it (issue 31): --version, a closed pipe
(`onednn-graph run ... | head -1`) and `onednn-graph info` in 100 columns."""

import re
import shlex
import subprocess
import sys

import onednn_graph as og
from onednn_graph import cli

from helpers import FIXTURES


def test_version_names_the_package_onednn_and_its_isa(capsys):
    try:
        cli.main(["--version"])
    except SystemExit as exit:
        assert exit.code in (0, None)
    out = capsys.readouterr().out
    v = og.system.onednn_version()
    assert re.fullmatch(
        rf"onednn-graph {re.escape(og.__version__)}, oneDNN {v.major}\.{v.minor}\.{v.patch} "
        rf"\(\w+, \w{{12}}\), oneDNN ISA {re.escape(og.system.cpu_isa())}\n", out), out


def test_a_closed_pipe_exits_0_quietly(tmp_path):
    # Enough output (list mode: nothing runs) to fill the pipe after head has left.
    cases = " ".join([shlex.quote(str(FIXTURES / "deconv_small.json"))] * 800)
    script = (f"{shlex.quote(sys.executable)} -m onednn_graph run --mode list {cases} "
              f"2>{tmp_path / 'stderr'} | head -1; echo \"exit ${{PIPESTATUS[0]}}\"")
    shell = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=300)
    first, status = shell.stdout.splitlines()
    assert first.startswith("0:LISTED --case=")
    assert status == "exit 0"
    assert (tmp_path / "stderr").read_text() == ""


def test_info_fits_100_columns_and_wide_keeps_a_row_per_line(capsys):
    assert cli.main(["info"]) == 0
    narrow = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in narrow) <= 100, [line for line in narrow if len(line) > 100]
    assert cli.main(["info", "--wide"]) == 0
    wide = capsys.readouterr().out.splitlines()
    # the kernel table's rows, one per op, each with every dtype's cell on its line: the
    # op's name, then one cell per dtype (f32, bf16, f16), set apart by two spaces or more
    assert any(line.lstrip().startswith("ConvTranspose ")
               and len(re.split(r" {2,}", line.strip())) == 4 for line in wide)
    # where the kernel table is too wide (its cells name this CPU's kernels: on AVX2 it
    # fits), the narrow report keeps every row: a block per op, a line per dtype
    kernel_rows = [line for line in wide if line.lstrip().startswith("ConvTranspose ")
                   and "native: " in line]
    if max(len(line) for line in kernel_rows) > 100:
        for kind in og.shapes.KINDS:
            assert f"  {kind}" in narrow
        assert any(re.fullmatch(r"    f32: (native|f32 chain).*", line) for line in narrow)


def test_the_perf_table_shows_the_times_of_a_result_that_has_no_verdict(capsys):
    """A perf-mode Result is false (nothing was checked); the summary table still shows
    its compile time, median and GFLOP/s."""
    assert cli.main(["run", "--mode", "perf", "--repeat", "2",
                     str(FIXTURES / "deconv_small.json")]) == 0
    [row] = [line for line in capsys.readouterr().out.splitlines()
             if line.startswith("--case=") and "DONE" in line]
    compile_ms, median_ms, gflops = row.split()[-3:]
    assert float(compile_ms) > 0 and float(median_ms) > 0 and float(gflops) > 0
