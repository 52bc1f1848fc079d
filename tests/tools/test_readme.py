"""The README and docs/*.md: their code runs, their links resolve, the quick start is
what CI runs and prints what the README shows, and the README stays one sitting long.

Truth: the documents themselves, run in a fresh interpreter from outside the source
tree (so `import onednn_graph` is the installed package), the quick start's own output,
and `.ci/run`.

Every fenced block names its language. ```python blocks are complete programs and run,
each in a fresh interpreter, in document order; the others are shown, never run: shell
commands (```bash), sessions with their output (```console), output listings (```text),
JSON (```json). A block without a
language, or with another one (```py would escape the runner), is refused.
"""

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
# Every document whose blocks the suite holds to this file's rules.
MARKDOWN = [README] + sorted((ROOT / "docs").glob("*.md"))
DOCUMENTS = [README, ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md"] + sorted((ROOT / "docs").glob("*.md"))
RUNS = "python"
SHOWN = {"bash", "console", "text", "json"}
# A block that imports these needs PyTorch (the package itself never does).
NEEDS_TORCH = re.compile(r"^\s*(?:import|from)\s+(?:torch|onednn_graph\.torch)\b", re.M)

pytestmark = pytest.mark.skipif(not README.is_file(), reason="needs the source tree")


class Block(NamedTuple):
    path: Path
    line: int  # of the opening fence, 1-based
    language: str
    code: str


def fenced_blocks(path):
    """Every fenced block of a Markdown file, in order; ValueError for a block whose
    language is missing or neither run (python) nor shown (SHOWN), and for a fence
    left open."""
    blocks, opening, body = [], None, []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if opening is None and line.startswith("```"):
            opening, body = (number, line[3:].strip()), []
        elif opening is not None and line == "```":
            blocks.append(Block(path, opening[0], opening[1], "\n".join(body) + "\n"))
            opening = None
        elif opening is not None:
            body.append(line)
    if opening is not None:
        raise ValueError(f"{path.name}:{opening[0]}: a fenced block is never closed")
    refused = [f"{path.name}:{b.line} (```{b.language})" for b in blocks
               if b.language != RUNS and b.language not in SHOWN]
    if refused:
        raise ValueError(f"fenced blocks must say ```python (run by the suite) or one of "
                         f"{sorted(SHOWN)} (shown, never run): {', '.join(refused)}")
    return blocks


def _python_blocks():
    """One test case per ```python block of MARKDOWN, in document order; a document
    the parser refuses is one case that fails with the parser's message."""
    cases = []
    for path in MARKDOWN:
        try:
            blocks = [b for b in fenced_blocks(path) if b.language == RUNS]
        except ValueError as refusal:
            cases.append(pytest.param(refusal, id=f"{path.name}:refused"))
            continue
        cases += [pytest.param(b, id=f"{path.name}:{b.line}") for b in blocks]
    return cases


def _blocks(path, language):
    return [b.code for b in fenced_blocks(path) if b.language == language]


def test_the_readme_is_read_in_one_sitting():
    assert len(README.read_text().splitlines()) <= 200


def test_the_quick_start_is_what_ci_runs():
    commands = [line for block in _blocks(README, "bash") for line in block.splitlines()
                if line.startswith("pip install")][:2]
    assert len(commands) == 2, "the quick start is two commands"
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    for command in commands:
        assert command in ci, f".ci/run does not run the README's {command!r}"


@pytest.mark.parametrize("block", _python_blocks())
def test_python_blocks_run(block, tmp_path):
    if isinstance(block, ValueError):
        pytest.fail(str(block))
    if NEEDS_TORCH.search(block.code) and importlib.util.find_spec("torch") is None:
        pytest.skip("the block needs PyTorch")
    result = subprocess.run([sys.executable, "-c", block.code], cwd=tmp_path, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, \
        f"{block.path.name}, the python block at line {block.line}:\n{result.stderr[-3000:]}"


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
