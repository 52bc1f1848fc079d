"""The README and docs/*.md: their code runs, their links resolve, the quick start is
what CI runs and prints what the README shows, and the README stays one sitting long.

Truth: the documents themselves, run in a fresh interpreter from outside the source
tree (so `import onednn_graph` is the installed package), the quick start's own output,
and `.ci/run`.

Every fenced block names its language. ```python blocks are complete programs and run,
each in a fresh interpreter, in document order; the others are shown, never run: shell
commands (```bash), sessions with their output (```console), output listings (```text),
JSON (```json). A block without a
language, or with another one (```py would escape the runner), is refused. The sessions
of docs/cli.md are the exception: their `onednn-graph` commands run, from the
repository root, as a reader of a clone types them.
"""

import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

import onednn_graph as og

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
# Every document whose blocks the suite holds to this file's rules.
MARKDOWN = [README] + sorted((ROOT / "docs").glob("*.md"))
DOCUMENTS = [README, ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md"] + sorted((ROOT / "docs").glob("*.md"))
RUNS = "python"
SHOWN = {"bash", "console", "text", "json"}
# A block that imports these needs PyTorch (the package itself never does).
NEEDS_TORCH = re.compile(r"^\s*(?:import|from)\s+(?:torch|onednn_graph\.torch)\b", re.M)
# The quick start's two measured differences: how a kernel sums differs between CPUs.
MEASURED = re.compile(r"= [0-9.e+-]+$", re.M)
# oneDNN's ISAs below AVX2 (ONEDNN_MAX_CPU_ISA only lowers).
BELOW_AVX2 = {"sse41", "avx"}
# pytest's summary line, as a document would quote it (benchdnn's "passed:45" is not).
PYTEST_COUNT = re.compile(r"\b\d+ (?:tests? )?(?:passed|skipped|failed)\b(?!:)")

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


CLI = ROOT / "docs" / "cli.md"
# A session's command line: `$ COMMAND`, and the exit status a line that fails on
# purpose says it has (`  # exits 2`; 0 otherwise).
SESSION_LINE = re.compile(r"^\$ (?P<command>.*?)(?:\s+# exits (?P<status>\d+))?$")


def _cli_sessions():
    """One test case per ```console block of cli.md."""
    return [pytest.param(b, id=f"cli.md:{b.line}") for b in fenced_blocks(CLI)
            if b.language == "console"]


@pytest.mark.parametrize("block", _cli_sessions())
def test_cli_sessions_run_from_a_clone(block, tmp_path):
    """Each `$ onednn-graph ...` line of cli.md's sessions runs as written from the
    repository root (it needs no file a clone lacks) and exits 0, or with the status its
    line says; `$ export NAME=VALUE` sets the environment of the lines after it (a
    folder under /tmp is the test's own)."""
    env = dict(os.environ)
    commands = [SESSION_LINE.match(line) for line in block.code.splitlines()
                if line.startswith("$ ")]
    assert commands, f"cli.md:{block.line}: a session without a command"
    for line in commands:
        words = shlex.split(line["command"])
        if words[0] == "export":
            name, value = words[1].split("=", 1)
            env[name] = str(tmp_path / Path(value).relative_to("/tmp")) \
                if value.startswith("/tmp/") else value
            continue
        assert words[0] == "onednn-graph", \
            f"cli.md:{block.line}: sessions run onednn-graph from a clone, not {line[0]!r}"
        result = subprocess.run([sys.executable, "-m", "onednn_graph", *words[1:]], cwd=ROOT,
                                env=env, capture_output=True, text=True, timeout=600)
        if result.returncode == 1 and int(line["status"] or 0) == 0 and _only_split_counts(result.stdout):
            continue  # as cli.md says: oneDNN 3.13 without a kernel for the case's dtype here
        assert result.returncode == int(line["status"] or 0), \
            f"cli.md:{block.line}: {line[0]}\n{result.stdout[-2000:]}{result.stderr[-2000:]}"


def _only_split_counts(out):
    """Whether every FAIL of a run is the partition count of a chain that oneDNN 3.13
    split for want of a kernel for the dtype here (what cli.md's Statuses describe)."""
    v = og.system.onednn_version()
    fails = [line for line in out.splitlines() if re.match(r"\d+:FAIL ", line)]
    split = out.count("so it returned the graph split")
    return (v.major, v.minor) >= (3, 13) and fails and split == len(fails)


def _quickstart(tmp_path, env):
    """The quick start's lines, run as a user runs it, with MEASURED replaced."""
    result = subprocess.run([sys.executable, str(ROOT / "examples" / "quickstart.py")],
                            cwd=tmp_path, capture_output=True, text=True, timeout=600,
                            env=dict(os.environ, **env))
    assert result.returncode == 0, result.stderr
    return MEASURED.sub("= <measured>", result.stdout).splitlines()


def _readme_quickstart():
    """The README's listing of the quick start's output, with MEASURED replaced."""
    [listing] = [b for b in _blocks(README, "text") if b.startswith("oneDNN ")]
    return MEASURED.sub("= <measured>", listing).splitlines()


def test_the_quick_start_prints_the_readmes_lines_capped_at_avx2(tmp_path):
    """The README shows the quick start capped at AVX2: every line, word for word."""
    version = og.system.onednn_version()
    if (version.major, version.minor) != (3, 2):
        pytest.skip("the README shows oneDNN 3.2's output")
    if og.system.cpu_isa() in BELOW_AVX2:
        pytest.skip("this CPU has no AVX2: the cap cannot raise it")
    assert _quickstart(tmp_path, {"ONEDNN_MAX_CPU_ISA": "AVX2"}) == _readme_quickstart()


def test_the_quick_start_natively_differs_only_where_the_cpu_does(tmp_path):
    """Uncapped, the lines differ from the README's in what this machine decides: the
    linked oneDNN and its ISA (line 1), and how this CPU runs bf16 (line 3, between its
    fixed start and end)."""
    readme, got = _readme_quickstart(), _quickstart(tmp_path, {})
    v = og.system.onednn_version()
    here = readme[0].replace("3.2.0 (omp)", f"{v.major}.{v.minor}.{v.patch} ({v.cpu_runtime})") \
                    .replace("CPU ISA: avx2", f"CPU ISA: {og.system.cpu_isa()}")
    start, end = readme[2][:readme[2].index(": ") + 2], readme[2][readme[2].rindex(";"):]
    assert len(got) == len(readme) == 3, (got, readme)
    assert got[:2] == [here, readme[1]]
    assert got[2].startswith(start) and got[2].endswith(end), (got[2], start, end)


def test_the_readme_example_prints_what_it_says():
    # the block whose print says its output in a comment ("# (1, 32, 32, 4) ... 1.9e-06")
    [example] = [b for b in _blocks(README, "python") if re.search(r"print\(.*# \(", b)]
    said = re.search(r"# (\(.*\)) [\d.e-]+", example).group(1)
    out = subprocess.run([sys.executable, "-c", example], capture_output=True, text=True,
                         timeout=300).stdout
    assert out.startswith(said), (out, said)


@pytest.mark.parametrize("path", MARKDOWN, ids=lambda p: p.name)
def test_no_test_counts_copied_by_hand(path):
    """pytest's summary ("3818 passed, 62 skipped") copied into a document goes stale
    with the next test added: say what the suite covers, and let pytest count."""
    counts = PYTEST_COUNT.findall(path.read_text())
    assert not counts, f"{path.name} quotes pytest's counts {counts}"


def _command_lines(path):
    """The lines of a document's ```bash blocks, block by block."""
    return [block.splitlines() for block in _blocks(path, "bash")]


def test_the_readme_installs_only_the_wheel_it_builds():
    """A wheel the README installs is one its block has just built or repaired (nothing
    named a file nobody could download)."""
    installs = 0
    for lines in _command_lines(README):
        built = []
        for line in lines:
            built += re.findall(r"^(?:pip wheel|auditwheel repair) .*-w (\S+)", line)
            for wheel in re.findall(r"^pip install (\S+\.whl)", line):
                installs += 1
                assert any(wheel.startswith(d.rstrip("/") + "/") for d in built), \
                    f"the README installs {wheel}, which no pip wheel before it built"
    assert installs, "the README's Install section installs a wheel it builds"


@pytest.mark.parametrize("path", MARKDOWN, ids=lambda p: p.name)
def test_the_torch_extra_comes_after_the_cpu_wheel(path):
    """`torch>=2.4` alone resolves to PyPI's newest torch and its CUDA libraries: where a
    document installs the extra, PyTorch's CPU wheel is installed first; and the package
    is not on PyPI, so nothing installs it by name."""
    text = path.read_text()
    assert 'pip install "onednn-graph' not in text, f"{path.name} installs the package from PyPI"
    extras = 0
    for lines in _command_lines(path):
        extra = [i for i, line in enumerate(lines) if "[torch]" in line]
        cpu = [i for i, line in enumerate(lines) if line.startswith("pip install torch")
               and "--index-url https://download.pytorch.org/whl/cpu" in line]
        assert not extra or (cpu and cpu[0] < extra[0]), \
            f"{path.name} installs .[torch] without PyTorch's CPU wheel first: {lines}"
        extras += len(extra)
    assert extras or path != README, "the README says how to install the torch extra"


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.name)
def test_relative_links_resolve(path):
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text()):
        if "://" not in target:
            assert (path.parent / target).exists(), f"{path.name} links to missing {target}"
