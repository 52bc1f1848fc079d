"""The examples run as a user runs them: a fresh interpreter, from outside the source tree."""

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_example(name, tmp_path):
    return subprocess.run([sys.executable, str(EXAMPLES / name)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)


def test_quickstart(tmp_path):
    # What it prints is compared line by line with the README's listing in
    # tests/tools/test_readme.py (capped at AVX2, and natively).
    result = run_example("quickstart.py", tmp_path)
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 3, result.stdout


def test_train_conv_transpose(tmp_path):
    pytest.importorskip("torch")
    result = run_example("train_conv_transpose.py", tmp_path)
    # The example asserts the two loss curves agree to 1e-4 (relative).
    assert result.returncode == 0, result.stdout + result.stderr
    assert "max relative loss difference" in result.stdout
