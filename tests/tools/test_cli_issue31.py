"""The command line as a new user met it (issue 31): --version, a closed pipe
(`onednn-graph run ... | head -1`) and `onednn-graph info` in 100 columns (issue 38:
a summary by default, each fact once; every detail with --all)."""

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


def _info(capsys, *options):
    assert cli.main(["info", *options]) == 0
    return capsys.readouterr().out.splitlines()


def test_info_fits_100_columns_and_wide_keeps_a_row_per_line(capsys):
    for options in ([], ["--all"]):
        narrow = _info(capsys, *options)
        assert max(len(line) for line in narrow) <= 100, [x for x in narrow if len(x) > 100]
    wide = _info(capsys, "--all", "--wide")
    # the kernel table's rows, one per op and dtype, each with its cells on its line: the
    # op's name (on its first dtype's row), the dtype, how it runs and oneDNN's kernel,
    # set apart by two spaces or more
    cells = [re.split(r" {2,}", line.strip()) for line in wide
             if line.lstrip().startswith("ConvTranspose ")]
    assert ["ConvTranspose", "f32", "native"] == cells[0][:3] and len(cells[0]) == 4, cells
    # where the kernel table is too wide (its cells name this CPU's kernels), the narrow
    # report keeps every row: a block per row, a line per column
    narrow = _info(capsys, "--all")
    if max(len(line) for line in wide if line.lstrip().startswith("ConvTranspose ")) > 100:
        assert any(re.fullmatch(r"    runs: (native|f32 chain).*", line) for line in narrow)
    else:
        assert any(re.split(r" {2,}", line.strip())[:3] == ["ConvTranspose", "f32", "native"]
                   for line in narrow)


def test_the_perf_table_shows_the_times_of_a_result_that_has_no_verdict(capsys):
    """A perf-mode Result is false (nothing was checked); the summary table still shows
    its compile time, median and GFLOP/s."""
    assert cli.main(["run", "--mode", "perf", "--repeat", "2",
                     str(FIXTURES / "deconv_small.json")]) == 0
    lines = capsys.readouterr().out.splitlines()
    [row] = [line for line in lines if line.startswith("--case=") and "DONE" in line]
    header = [line for line in lines if line.startswith("case ")][0]
    columns = dict(zip(re.split(r" {2,}", header.strip()), re.split(r" {2,}", row.strip())))
    compile_ms, median_ms, gflops = (columns[c] for c in ("compile ms", "median ms", "GFLOP/s"))
    assert float(compile_ms) > 0 and float(median_ms) > 0 and float(gflops) > 0
