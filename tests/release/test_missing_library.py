"""What `import onednn_graph` says when the native module cannot load.

Truth: the package copied without its dependencies (as `pip install --target DIR`
leaves it), imported in a Python that sees only that copy; the loader then really
fails to find libdnnl.so.3, and the message must say what it is, which package holds
it, where the module looked (its RUNPATH resolved, read by `readelf` here as an
independent check) and that oneDNN needs libgomp from the system.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import onednn_graph
from onednn_graph import _load_error


def _runpath_by_readelf(library):
    out = subprocess.run(["readelf", "-d", str(library)], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "(RUNPATH)" in line or "(RPATH)" in line:
            path = line.split("[", 1)[1].rstrip("]")
            return [os.path.normpath(p.replace("$ORIGIN", str(library.parent)))
                    for p in path.split(":")]
    return []


def _libdnnl_elsewhere():
    """Whether the loader would find libdnnl.so.3 without the module's RUNPATH."""
    listed = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout \
        if shutil.which("ldconfig") else ""
    return "libdnnl.so.3" in listed


@pytest.fixture
def package_without_dependencies(tmp_path):
    """The package's Python files and its built module in <tmp>/target/onednn_graph."""
    core = Path(onednn_graph._core.__file__)
    target = tmp_path / "target" / "onednn_graph"
    shutil.copytree(Path(onednn_graph.__file__).parent, target,
                    ignore=shutil.ignore_patterns("__pycache__", "_core*.so"))
    shutil.copy2(core, target / core.name)
    return target


@pytest.mark.skipif(_libdnnl_elsewhere(), reason="the system's folders hold a libdnnl.so.3")
def test_a_missing_libdnnl_is_named_with_its_package_and_the_folder_searched(
        package_without_dependencies):
    if not shutil.which("readelf"):
        pytest.skip("needs readelf (binutils) for the independent RUNPATH")
    [module] = package_without_dependencies.glob("_core*.so")
    if any((Path(folder) / "libdnnl.so.3").exists() for folder in _runpath_by_readelf(module)):
        pytest.skip("the module's RUNPATH names a folder of its own build's libdnnl.so.3 (a "
                    "build against ONEDNN_ROOT, e.g. oneDNN 3.13): the copy still finds it")
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "PYTHONPATH")}
    env["PYTHONPATH"] = str(package_without_dependencies.parent)
    # -S: no site-packages, so the installed package (and its libdnnl) stays out of sight
    result = subprocess.run([sys.executable, "-S", "-c", "import onednn_graph"],
                            capture_output=True, text=True, env=env, cwd=str(package_without_dependencies.parent))
    assert result.returncode != 0
    said = result.stderr
    assert "ImportError: onednn_graph's native module cannot load: libdnnl.so.3 (oneDNN) was not found" in said
    assert 'pip install "onednn-cpu-gomp==2023.2.0"' in said
    folders = _runpath_by_readelf(module)
    assert folders and f"The module looked in {', '.join(folders)} (its RUNPATH)" in said
    assert "libgomp.so.1" in said and "libgomp1 on Debian" in said
    assert "cannot open shared object file" in said  # the loader's own words, kept


def test_a_missing_libgomp_is_said_to_come_from_the_system():
    # The loader's text when libdnnl.so.3 loads but its libgomp.so.1 does not (a system
    # without GCC's OpenMP runtime; not made here: it would take the system's copy away).
    said = _load_error.message(ImportError(
        "libgomp.so.1: cannot open shared object file: No such file or directory"))
    assert said.startswith("onednn_graph's native module cannot load: oneDNN needs libgomp.so.1")
    assert "not from pip" in said and "libgomp1 on Debian and Ubuntu" in said


def test_the_runpath_reader_agrees_with_readelf():
    if not shutil.which("readelf"):
        pytest.skip("needs readelf (binutils)")
    core = Path(onednn_graph._core.__file__)
    assert _load_error._runpath(core) == _runpath_by_readelf(core) != []
