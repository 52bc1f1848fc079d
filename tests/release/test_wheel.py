"""The release path, as the README writes it: build a wheel, repair it with libdnnl
excluded, install it into a fresh virtual environment, check it, run the quick start.

This is the one slow test: it runs the README's "From a wheel" block line by line in a
fresh environment (dependencies from the package index) in the source tree, where the
build reuses what `pip install .` compiled (it compiles nothing when the tree has not
changed since; the test holds that too). It runs in the normal suite; deselect it with
`-m "not wheel"` (cibuildwheel does: it tests the wheels it built).
"""

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
#: The oneDNN of the default build: pyproject.toml's onednn-cpu-gomp==2023.2.0.
DEFAULT_ONEDNN = "3.2.0"


def run(cmd, **kw):
    result = subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                            timeout=1800, **kw)
    assert result.returncode == 0, f"{cmd}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


def _readme_wheel_block():
    """The README's ```bash block that repairs a wheel, as its lines."""
    blocks = re.findall(r"^```bash\n(.*?)^```$", README.read_text(), re.M | re.S)
    [block] = [b for b in blocks if "auditwheel repair" in b]
    return block.splitlines()


def _objects():
    """{object file: mtime} of the default build's folder for this Python
    (pyproject.toml's build-dir; a build against ONEDNN_ROOT has a folder of its own)."""
    suffix = ""
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    found = {}
    for folder in (ROOT / "build").glob(f"{tag}-{tag}-linux_*{suffix}"):
        if folder.name.endswith("-onednn-root") == bool(suffix):
            for o in folder.glob("cpp/CMakeFiles/_core.dir/*.o"):
                found[o] = o.stat().st_mtime_ns
    return found


def _sources_newest():
    files = list((ROOT / "cpp").iterdir()) + list((ROOT / "third_party").glob("*.cmake")) + \
        [ROOT / "CMakeLists.txt", ROOT / "pyproject.toml"]
    return max(f.stat().st_mtime_ns for f in files if f.is_file())


@pytest.fixture
def readme_folders(tmp_path):
    """build/wheel and dist/ as the README's block finds them on a fresh clone (without
    onednn_graph wheels); what was there is put back afterwards."""
    kept = tmp_path / "kept"
    moved = []
    for folder in (ROOT / "build" / "wheel", ROOT / "dist"):
        for wheel in folder.glob("onednn_graph-*.whl"):
            (kept / folder.name).mkdir(parents=True, exist_ok=True)
            moved.append((shutil.move(str(wheel), kept / folder.name / wheel.name), wheel))
    yield
    for folder in (ROOT / "build" / "wheel", ROOT / "dist"):
        for wheel in folder.glob("onednn_graph-*.whl"):
            wheel.unlink()
    for stored, original in moved:
        shutil.move(stored, original)


@pytest.mark.wheel
def test_the_readmes_wheel_steps_run_as_written_in_a_fresh_venv(tmp_path, readme_folders):
    if not (ROOT / "pyproject.toml").is_file():
        pytest.skip("needs the source tree")
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", venv])
    # The block as a user runs it in an activated fresh environment, line by line.
    # The block builds the default wheel (oneDNN 3.2), whichever oneDNN this test runs on.
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "LD_LIBRARY_PATH", "ONEDNN_ROOT")}
    env.update(VIRTUAL_ENV=str(venv), PATH=os.pathsep.join([str(venv / "bin"), env["PATH"]]))
    objects = _objects()
    unchanged_tree = bool(objects) and min(objects.values()) > _sources_newest()
    out = ""
    for line in _readme_wheel_block():
        out = run(["bash", "-c", line], cwd=ROOT, env=env).stdout

    said = _readme_wheel_block()[-1].rsplit("#", 1)[1].strip()  # the version the README prints
    assert out.strip() == said == DEFAULT_ONEDNN
    if unchanged_tree:  # pip wheel reused what the last build compiled
        recompiled = sorted(o.name for o, t in _objects().items() if objects.get(o) != t)
        assert not recompiled, f"pip wheel compiled {recompiled} again"

    [built] = (ROOT / "build" / "wheel").glob("onednn_graph-*.whl")
    names = zipfile.ZipFile(built).namelist()
    for required in ("onednn_graph/py.typed", "onednn_graph/_core.pyi",
                     "onednn_graph/torch_like.py", "onednn_graph/padding.py"):
        assert required in names
    assert any(n.startswith("onednn_graph/_core.") and n.endswith(".so") for n in names)
    # libdnnl comes from the onednn-cpu-gomp dependency, never from the wheel.
    assert not [n for n in names if "libdnnl" in n]
    # auditwheel accepted it as manylinux with libdnnl.so.3 excluded; nothing grafted.
    [repaired] = (ROOT / "dist").glob("onednn_graph-*.whl")
    assert "manylinux" in repaired.name
    assert not [n for n in zipfile.ZipFile(repaired).namelist() if ".libs/" in n]

    # Run from outside the source tree, so `import onednn_graph` is the installed one.
    python = venv / "bin" / "python"
    out = run([python, ROOT / "examples" / "quickstart.py"], cwd=tmp_path, env=env).stdout
    assert "max |oneDNN - NumPy|" in out
    where = run([python, "-c", "import onednn_graph; print(onednn_graph.__file__)"],
                cwd=tmp_path, env=env).stdout
    assert where.startswith(str(venv))
