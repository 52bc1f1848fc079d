"""The native module's stubs (python/onednn_graph/_core.pyi) against the built module.

Truth: mypy.stubtest, which imports the built extension and compares every name,
signature and type the stubs state with what it finds. The allowlist holds only
pybind11's artifacts (metaclass, constructor-less classes), so a binding changed
without `scripts/gen_stubs.sh` fails here.
"""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_stubs_match_the_built_module():
    pytest.importorskip("mypy")
    result = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "onednn_graph._core", "--mypy-config-file",
         str(ROOT / "pyproject.toml"), "--allowlist", str(Path(__file__).with_name("stubtest-allowlist.txt"))],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
