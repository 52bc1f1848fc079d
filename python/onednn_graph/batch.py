"""benchdnn's graph batch files, read as benchdnn's graph driver reads them.

A batch file is one stream of whitespace-separated words (``#`` starts a comment
that runs to the end of its line, a trailing ``\\`` joins a word to the next),
exactly as ``benchdnn --graph --batch=FILE`` takes it (tests/benchdnn/common.cpp,
``batch``; graph/bench_graph.cpp, ``bench``):

* the graph knobs (``--dt``, ``--in-shapes``, ``--op-attrs``, ``--mb``,
  ``--op-kind``, ``--tensor-property``, ``--expected-n-partitions``,
  ``--attr-fpmath``) set values that hold until ``--reset`` or until set
  again, lines do not end them; a comma-separated value runs each alternative;
* ``--case=FILE`` runs the file with the knobs as they are (every combination of
  their alternatives); ``--batch=FILE`` reads another batch file in place;
* ``--mode`` and ``--engine`` are benchdnn's own settings: ``--reset`` keeps them.

Files are found as benchdnn's ``locate_file`` finds them: the path as written
(from the current directory), then under the folder of every batch file read so
far, then under the inputs root (benchdnn's ``inputs/graph``; here
``--inputs-root``, by default the folder that holds the top batch file's ``op/`` or
``pattern/``). A word benchdnn's graph driver takes but that means nothing on
this package's CPU engine (``--engine=gpu``, timing and verbosity knobs) is
reported with the cases it concerns, never dropped in silence. A bare file name
(not benchdnn's, which wants ``--case=``) runs as a case too.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import re
from dataclasses import dataclass, field
from typing import Iterator, Optional

__all__ = ["Knobs", "Case", "State", "cases_of", "read_batch", "inputs_root_of", "Locator", "KNOBS",
           "MODES"]

#: The graph driver's knobs: option name -> Knobs field.
KNOBS = {"dt": "dt", "in-shapes": "in_shapes", "op-attrs": "op_attrs", "mb": "mb",
         "op-kind": "op_kind", "tensor-property": "tensor_property",
         "expected-n-partitions": "expected_n_partitions", "attr-fpmath": "attr_fpmath"}

#: ``--mode`` values: the package's names and benchdnn's letters for them.
MODES = {"correctness": "correctness", "c": "correctness", "exact": "exact",
         "perf": "perf", "p": "perf", "list": "list", "l": "list"}

# benchdnn settings that change only how benchdnn itself times, prints or places
# memory: accepted, and reported as not applying here.
_BENCHDNN_ONLY = ("--verbose", "--max-ms-per-prb", "--fix-times-per-prb",
                  "--repeats-per-prb", "--num-streams", "--cold-cache", "--perf-template",
                  "--memory-kind", "--execution-mode", "--start", "--skip-impl", "--impl",
                  "--ctx-init", "--ctx-exe", "--canonical", "--summary", "--allow-enum-tags-only",
                  "--mode-modifier", "--attr-scratchpad", "--check-ref-impl", "--fast-ref",
                  "--bia-dt", "--match")


@dataclass
class Knobs:
    """The graph knobs in force: each a list of alternatives ('' = as in the file)."""

    dt: list[str] = field(default_factory=lambda: [""])
    in_shapes: list[str] = field(default_factory=lambda: [""])
    op_attrs: list[str] = field(default_factory=lambda: [""])
    mb: list[str] = field(default_factory=lambda: [""])
    op_kind: list[str] = field(default_factory=lambda: [""])
    tensor_property: list[str] = field(default_factory=lambda: [""])
    expected_n_partitions: list[str] = field(default_factory=lambda: [""])
    attr_fpmath: list[str] = field(default_factory=lambda: [""])

    def combinations(self) -> Iterator[dict[str, str]]:
        names = [f.name for f in dataclasses.fields(self)]
        for values in itertools.product(*(getattr(self, n) for n in names)):
            yield dict(zip(names, values))


@dataclass
class Case:
    """One run: a graph file and the knobs' values, as the user wrote them."""

    path: str                        # where the file is (found as benchdnn finds it)
    written: str = ""                # the path as written on the command line or in the batch
    dt: str = ""
    in_shapes: str = ""
    op_attrs: str = ""
    mb: str = ""
    op_kind: str = ""
    tensor_property: str = ""
    expected_n_partitions: str = ""
    attr_fpmath: str = ""
    mode: str = ""                   # a batch file's --mode; '' = the command line's
    origin: str = ""                 # FILE:LINE of the --case in a batch file
    skip: str = ""                   # why the case is not run (SKIPPED), '' to run it
    error: str = ""                  # why the case cannot be read (BAD INPUT)

    def knobs(self) -> dict[str, str]:
        return {f: getattr(self, f) for f in KNOBS.values()}

    @property
    def label(self) -> str:
        """benchdnn's reproducer of the case: its knobs, then ``--case=`` (where a
        batch file's word could not be read: the file and line)."""
        if self.error and not self.written:
            return self.origin
        flags = [f"--{name}={getattr(self, attr)}" for name, attr in KNOBS.items()
                 if getattr(self, attr)]
        return " ".join(flags + [f"--case={self.written or self.path}"])


def inputs_root_of(batch_path: str) -> str:
    """The folder holding the ``op/`` or ``pattern/`` folder a batch file lies in
    (benchdnn's ``inputs/graph``), else the batch file's own folder."""
    folder = os.path.dirname(os.path.abspath(batch_path))
    here = folder
    while True:
        if os.path.basename(here) in ("op", "pattern"):
            return os.path.dirname(here)
        parent = os.path.dirname(here)
        if parent == here:
            return folder
        here = parent


class Locator:
    """Finds files as benchdnn's ``locate_file``: as written, then under each batch
    file's folder seen so far, then under the inputs root."""

    def __init__(self, inputs_root: Optional[str] = None) -> None:
        self.inputs_root = inputs_root
        self.folders: list[str] = []

    def find(self, written: str) -> Optional[str]:
        for base in ["."] + self.folders + ([self.inputs_root] if self.inputs_root else []):
            path = written if os.path.isabs(written) else os.path.join(base, written)
            if os.path.isfile(path):
                return os.path.normpath(path)
        return None

    def looked_in(self) -> str:
        where = ["the current directory"] + self.folders
        return ", ".join(where) + (f" and the inputs root {self.inputs_root}"
                                   if self.inputs_root else " (no --inputs-root)")

    def seen(self, batch_path: str) -> None:
        folder = os.path.dirname(os.path.abspath(batch_path))
        if folder not in self.folders:
            self.folders.append(folder)


def _words(path: str) -> Iterator[tuple[int, str]]:
    """(line, word) of a batch file, as benchdnn's ``batch`` splits it."""
    words: list[tuple[int, str]] = []
    continued = False
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            for word in line.split():
                if word.startswith("#"):
                    break  # a comment runs to the end of its line
                where = lineno
                if continued and words:  # the previous word ended in '\': join them
                    where, head = words.pop()
                    word = head + word
                continued = word.endswith("\\")
                if continued:
                    word = word[:-1]
                    if not word:
                        continue
                words.append((where, word))
    yield from words


@dataclass
class State:
    knobs: Knobs = field(default_factory=Knobs)
    mode: str = ""
    engine: str = "cpu"
    notes: list[str] = field(default_factory=list)  # benchdnn-only settings in force


_OPTION = re.compile(r"^(--?[A-Za-z][A-Za-z0-9-]*)(?:=(.*))?$")


def read_batch(path: str, locator: Locator, state: Optional[State] = None,
               depth: int = 0) -> list[Case]:
    """The cases of batch file `path` (and of the batch files it names).

    Never raises for the file's content: a word it cannot take becomes a case
    with ``error`` set (BAD INPUT), a missing file one with ``skip`` set; OSError
    only when `path` itself cannot be read.
    """
    if depth > 16:
        return [Case(path, origin=path, error=f"{path}: batch files nest more than 16 deep "
                     "(a --batch loop?)")]
    state = state if state is not None else State()
    locator.seen(path)
    cases: list[Case] = []
    for lineno, word in _words(path):
        origin = f"{path}:{lineno}"
        match = _OPTION.match(word)
        if not match:  # a bare file name: the project's own shorthand for --case=
            cases += _cases(word, state, locator, origin)
            continue
        name, value = match.group(1), match.group(2)
        key = name.lstrip("-")
        if name == "--reset":
            state.knobs = Knobs()
        elif name == "--case" and value:
            cases += _cases(value, state, locator, origin)
        elif name == "--batch" and value:
            found = locator.find(value)
            if found is None:
                cases.append(Case(value, value, origin=origin, error=(
                    f"{origin}: --batch={value}: no such file (looked in "
                    f"{locator.looked_in()})")))
                continue
            cases += read_batch(found, locator, state, depth + 1)
        elif key in KNOBS and name.startswith("--") and value is not None:
            setattr(state.knobs, KNOBS[key], value.split(","))
        elif name == "--mode" and value is not None:
            if value.lower() not in MODES:
                cases.append(Case(path, origin=origin, error=(
                    f"{origin}: --mode={value}: this driver runs C (correctness), exact, "
                    f"P (perf) and L (list)")))
                continue
            state.mode = MODES[value.lower()]
        elif name == "--engine" and value is not None:
            state.engine = value
        elif name == "--graph":
            pass  # benchdnn's driver choice; this is the graph driver
        elif name in _BENCHDNN_ONLY or name.startswith("-v"):  # -v, -v1, -v2, ...
            note = f"{word} (a benchdnn setting that does not apply here)"
            if note not in state.notes:
                state.notes.append(note)
        else:
            cases.append(Case(path, origin=origin, error=(
                f"{origin}: cannot read {word!r}: benchdnn's graph driver takes --reset, "
                f"--case=, --batch=, --mode=, --engine=, --{'=, --'.join(KNOBS)}=")))
    return cases


def _cases(written: str, state: State, locator: Locator, origin: str) -> list[Case]:
    found = locator.find(written)
    skip = ""
    if state.engine != "cpu":
        skip = f"--engine={state.engine}: this package runs on oneDNN's CPU engine only"
    elif found is None:
        skip = f"case file not found (looked in {locator.looked_in()})"
    notes = "; ".join(state.notes)
    if notes and not skip:
        origin = f"{origin} (not applied: {notes})"
    return [Case(found or written, written, mode=state.mode, origin=origin, skip=skip, **combo)
            for combo in state.knobs.combinations()]


def cases_of(paths: list[str], knobs: Knobs, mode: str = "") -> list[Case]:
    """Cases of files named on the command line, for every combination of `knobs`."""
    return [Case(p, p, mode=mode, **combo) for p in paths for combo in knobs.combinations()]


def __dir__() -> list[str]:
    return list(__all__)
