"""The API reference (docs/api): Sphinx builds it without a warning, and it leaves no public name out.

Truth: the public API is ``onednn_graph.__all__`` and each public module's ``__all__``
(tests/api/test_public.py holds them to what the modules define); what the reference
documents is the object inventory Sphinx writes with the HTML (``objects.inv``). Every
public name that is not a module must be in it under its public name: a top-level name
as ``onednn_graph.NAME`` (the same object reached through its module is documented
once, there), any other module's name as ``onednn_graph.MODULE.NAME``; every public
module must be in it as a module; and the summary table opening index.html must link
every top-level name. Sphinx runs as the maintainers run it, on the installed package
(docs/api/conf.py imports ``onednn_graph``), with warnings as errors, so a docstring that
Sphinx cannot read (bad indentation, a broken inline markup, ...) fails here too.
``onednn_graph.torch`` is not in ``__all__`` (it needs PyTorch): its page is checked
against its own ``__all__``, built with PyTorch and, as CI builds it, without.
"""

import ast
import importlib
import importlib.util
import os
import re
import subprocess
import sys
import types
import zlib
from pathlib import Path

import pytest

import onednn_graph as og

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "api"

pytestmark = pytest.mark.skipif(
    not (DOCS / "conf.py").is_file(),
    reason="needs the source tree's docs/api (a wheel does not ship the reference's sources)")

TOP_LEVEL = [n for n in og.__all__ if not isinstance(getattr(og, n), types.ModuleType)]
MODULES = [n for n in og.__all__ if isinstance(getattr(og, n), types.ModuleType)]


def _build(out, env=None):
    # Outside the source tree, so that `import onednn_graph` is the installed package.
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", str(DOCS), str(out)],
        cwd=out, capture_output=True, text=True, timeout=600, env=env)
    return result, out


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return _build(tmp_path_factory.mktemp("api-html"))


@pytest.fixture(scope="module")
def built_without_torch(tmp_path_factory):
    """The reference as CI builds it, where only the test extras are installed: a
    ``torch`` package first on the path that raises ImportError, as a missing one does."""
    hidden = tmp_path_factory.mktemp("no-torch")
    (hidden / "torch").mkdir()
    (hidden / "torch" / "__init__.py").write_text('raise ImportError("torch hidden by the test")\n')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(hidden)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    return _build(tmp_path_factory.mktemp("api-html-no-torch"), env)


def _inventory(path):
    """The Python objects of a Sphinx objects.inv: full name -> role (py:function, ...)."""
    data = path.read_bytes()
    header_end = 0
    for _ in range(4):  # "# Sphinx inventory version 2", project, version, compression note
        header_end = data.index(b"\n", header_end) + 1
    names = {}
    for line in zlib.decompress(data[header_end:]).decode().splitlines():
        m = re.match(r"(.+?)\s+(py:\S+)\s+-?\d+\s", line)
        if m:
            names[m.group(1)] = m.group(2)
    return names


def _expected():
    """Every public name, as the reference must spell it."""
    names = {f"onednn_graph.{n}" for n in TOP_LEVEL}
    for module in MODULES:
        mod = importlib.import_module(f"onednn_graph.{module}")
        for n in mod.__all__:
            top = n in TOP_LEVEL and getattr(og, n) is getattr(mod, n)
            names.add(f"onednn_graph.{n}" if top else f"onednn_graph.{module}.{n}")
    return names


def _torch_names():
    """onednn_graph.torch's ``__all__``, read from its source: importing it needs PyTorch."""
    origin = importlib.util.find_spec("onednn_graph.torch").origin
    for node in ast.parse(Path(origin).read_text()).body:
        if isinstance(node, ast.Assign) and [t.id for t in node.targets] == ["__all__"]:
            return ast.literal_eval(node.value)
    raise AssertionError(f"{origin} sets no __all__")


def test_the_reference_builds_without_warnings(built):
    result, _ = built
    status = result.returncode
    assert status == 0, f"sphinx -W failed (exit {status}):\n{result.stderr}\n{result.stdout[-3000:]}"


def test_every_public_name_is_documented(built):
    result, out = built
    inventory = out / "objects.inv"
    assert inventory.is_file(), f"no objects.inv:\n{result.stderr}\n{result.stdout[-3000:]}"
    documented = _inventory(inventory)
    missing = sorted(_expected() - set(documented))
    assert not missing, f"public names missing from docs/api: {missing}"
    modules = sorted(f"onednn_graph.{m}" for m in MODULES
                     if documented.get(f"onednn_graph.{m}") != "py:module")
    assert not modules, f"public modules missing from docs/api: {modules}"


def test_the_summary_table_lists_every_top_level_name(built):
    _, out = built
    index = (out / "index.html").read_text(encoding="utf-8")
    tables = re.findall(r'<table class="[^"]*autosummary.*?</table>', index, re.S)
    assert tables, "index.html has no autosummary table"
    linked = set(re.findall(r'href="[^"]*#onednn_graph\.(\w+)"', tables[0]))
    missing = [n for n in TOP_LEVEL if n not in linked]
    assert not missing, f"docs/api/index.rst's summary table leaves out {missing}"


@pytest.mark.parametrize("build", ["built", "built_without_torch"])
def test_the_torch_layers_are_documented(build, request):
    """torch.rst documents onednn_graph.torch with PyTorch installed and without it
    (conf.py mocks torch there): every name of its ``__all__`` and its modules."""
    result, out = request.getfixturevalue(build)
    assert result.returncode == 0, f"sphinx -W failed:\n{result.stderr}\n{result.stdout[-3000:]}"
    documented = _inventory(out / "objects.inv")
    missing = sorted(f"onednn_graph.torch.{n}" for n in _torch_names()
                     if f"onednn_graph.torch.{n}" not in documented)
    assert not missing, f"docs/api/torch.rst leaves out {missing}"
    modules = [m for m in ("onednn_graph.torch", "onednn_graph.torch.functional",
                           "onednn_graph.torch.modules") if documented.get(m) != "py:module"]
    assert not modules, f"docs/api/torch.rst leaves out the modules {modules}"
