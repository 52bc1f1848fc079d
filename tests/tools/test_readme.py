"""The README and the user guide: their code runs, their links resolve, the quick start
is what CI runs, and the README stays one sitting long.

Truth: the documents themselves, run in a fresh interpreter from outside the source
tree (so `import onednn_graph` is the installed package), and `.ci/run`.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
# Markdown whose ```python blocks are complete programs.
RUNNABLE = [README, ROOT / "docs" / "user-guide.md"]
DOCUMENTS = [README, ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md"] + sorted((ROOT / "docs").glob("*.md"))

pytestmark = pytest.mark.skipif(not README.is_file(), reason="needs the source tree")


def _blocks(path, language):
    return re.findall(rf"^```{language}\n(.*?)^```", path.read_text(), re.S | re.M)


def test_the_readme_is_read_in_one_sitting():
    assert len(README.read_text().splitlines()) <= 200


def test_the_quick_start_is_what_ci_runs():
    commands = [line for block in _blocks(README, "") for line in block.splitlines()
                if line.startswith("pip install")][:2]
    assert len(commands) == 2, "the quick start is two commands"
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    for command in commands:
        assert command in ci, f".ci/run does not run the README's {command!r}"


@pytest.mark.parametrize("path", RUNNABLE, ids=lambda p: p.name)
def test_python_blocks_run(path, tmp_path):
    blocks = _blocks(path, "python")
    assert blocks, f"{path.name} has no python block"
    for i, code in enumerate(blocks):
        result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                                text=True, timeout=300)
        assert result.returncode == 0, f"{path.name}, python block {i + 1}:\n{result.stderr[-3000:]}"


def test_the_readme_example_prints_what_it_says():
    [example] = [b for b in _blocks(README, "python") if "print(" in b]
    said = re.search(r"# (\(.*\)) [\d.e-]+", example).group(1)
    out = subprocess.run([sys.executable, "-c", example], capture_output=True, text=True,
                         timeout=300).stdout
    assert out.startswith(said), (out, said)


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.name)
def test_relative_links_resolve(path):
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text()):
        if "://" not in target:
            assert (path.parent / target).exists(), f"{path.name} links to missing {target}"
