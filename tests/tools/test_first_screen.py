"""What a newcomer sees first: `help(onednn_graph)`, the quick start's lines, the
installed version.

Truth: pydoc's own rendering of the package, the quick start run as a user runs it
(natively and as an AVX2-only CPU runs it), and the version's fields.
"""

import os
import pydoc
import subprocess
import sys
from pathlib import Path

import pytest

import onednn_graph as og

ROOT = Path(__file__).resolve().parents[2]
FIRST = ["conv_transpose(", "conv_transpose_backward_data(", "conv_transpose_backward_weights(",
         "convolution_backward_data(", "compile_op("]


def test_help_starts_with_the_four_functions_and_compile_op():
    lines = pydoc.render_doc(og, renderer=pydoc.plaintext).splitlines()
    named = [next(i for i, line in enumerate(lines) if line.strip().startswith(name))
             for name in FIRST]
    assert named == sorted(named) and named[-1] < 25, named  # in order, on the first screen
    assert named[-1] < lines.index("CLASSES")


@pytest.mark.skipif(not (ROOT / "examples" / "quickstart.py").is_file(), reason="needs the source tree")
@pytest.mark.parametrize("cap", [None, "AVX2"])
def test_the_quick_starts_lines_fit_a_screen(tmp_path, cap):
    env = dict(os.environ)
    if cap:
        env["ONEDNN_MAX_CPU_ISA"] = cap
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "quickstart.py")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=600, env=env)
    assert out.returncode == 0, out.stderr
    assert [len(line) for line in out.stdout.splitlines() if len(line) >= 100] == [], out.stdout


def test_the_version_prints_as_onednn_names_it():
    v = og.system.onednn_version()
    assert str(v) == f"{v.major}.{v.minor}.{v.patch}"  # what print() shows: "3.2.0"
    assert repr(v).startswith("OneDNNVersion(major=")  # every field where one asks
