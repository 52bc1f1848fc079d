"""Damaged graph files (issue 29): whatever is wrong in a JSON graph, ``onednn-graph
run`` ends it with one of its statuses, never an escaping exception or a crash, and a
BAD INPUT message names what is wrong.

The documents are oneDNN's own graph files in ../shared (benchdnn's graph inputs and
onednn-graph-json: data the repository does not hold; without them the test skips),
each damaged by Hypothesis: numbers (dims, strides, attribute values, ids) made small,
negative or huge, strings (dtypes, kinds, layout types, attribute names, formats)
replaced, keys deleted or renamed, ops duplicated, tensor ids swapped, lists
truncated, values replaced by another JSON type. Graphs with a tensor of more than
MAX_ELEMENTS elements are shrunk first (batch <= 2, spatial sizes <= 8, dense strides
in the same axis order) where the result still loads, and left out where it does not.

"Names what is wrong" is checked as: the message starts with the file's path and a
field of the document (``graph[0].inputs[1].stride: ...``, ``version: ...``), or
names an op or a tensor (``op 5``, ``tensor 3``) by an id the document holds. No
message may be oneDNN's bare "could not construct a memory descriptor" (the defect
of issue 29: a damaged layout must be refused when the file is read).

Cases run in a child process (a worker reading case paths on stdin and writing
outcomes as JSON lines), so a crash in oneDNN fails the test naming the damaged
document instead of ending the test run; the worker is restarted after a crash. Its
address space is capped (ADDRESS_SPACE), so a damaged stride below this machine's
memory is refused the same way on every machine instead of filling gigabytes.

Defects outside the reader whose BAD INPUT messages name nothing (overrides.apply,
the ids the package gives its own ops) are recognised by KNOWN_UNNAMED, each by its
exact message, until their modules are fixed.

Examples: EXAMPLES per run, drawn with derandomize=True, so every run (CI's
included) checks the same documents. A long run by hand:
``ONEDNN_GRAPH_DAMAGE_EXAMPLES=1500 python -m pytest -s tests/tools/test_damaged_graph_files.py``
(-s prints the outcomes counted by status).
"""

import collections
import copy
import json
import math
import os
import re
import select
import subprocess
import sys
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, note, settings, strategies as st  # noqa: E402

import onednn_graph as og  # noqa: E402
from onednn_graph import overrides  # noqa: E402
from helpers import TESTS_DIR  # noqa: E402

SHARED = Path(TESTS_DIR).parent.parent / "shared"
EXAMPLES = int(os.environ.get("ONEDNN_GRAPH_DAMAGE_EXAMPLES", "300"))
#: Largest tensor of a document run here: an example costs milliseconds.
MAX_ELEMENTS = 2**16
#: Seconds a case may take before the worker counts as hung.
TIMEOUT = 120
#: The worker's address space (``ulimit -v``), so every outcome is the same on any machine.
ADDRESS_SPACE = 2**31
#: What a correctness run may end in (SKIPPED: a graph left with ops the driver does not check).
STATUSES = ("PASS", "FAIL", "UNSUPPORTED", "ERROR", "BAD INPUT", "SKIPPED")
#: How run_case reports an exception that escaped the package: a bug, as an escape is.
ESCAPED = "unexpected "

# What damage puts in: values oneDNN's files hold, and values no file should.
NUMBERS = (0, 1, -1, 2, 3, 7, 64, 1152, -5, 2**31, -2**31, 2**63 - 1, -2**63, 2**64)
STRINGS = ("f32", "bf16", "f16", "s8", "u8", "s32", "f64", "boolean", "undef", "",
           "strided", "any", "opaque", "constant", "variable",
           "NCX", "NXC", "OIX", "IOX", "XIO", "XOI", "None", "SAME_UPPER", "VALID",
           "per_tensor", "per_channel", "numpy", "none",
           "ConvTranspose", "ConvTransposeBackwardData", "ConvolutionBackwardData",
           "ConvTransposeBackwardWeights", "ReLU", "Add", "Dequantize", "Quantize", "MatMul",
           "groups", "strides", "dilations", "pads_begin", "output_padding", "auto_pad",
           "zps", "scales", "axis", "weights_shape", "dst_shape", "colour",
           "cpu", "gpu", "strict", "3.2.0", "4.0.0", "0.5.0")
FLOATS = (0.0, -1.0, 1e30, float("nan"), float("inf"))
OTHER_TYPES = (None, True, "x", 1.5, [], {}, [1, 2])


# --- the documents -----------------------------------------------------------

def _tensors(doc):
    """Every logical tensor object of `doc`, however damaged."""
    ops = doc.get("graph") if isinstance(doc, dict) else None
    for op in ops if isinstance(ops, list) else []:
        for key in ("inputs", "outputs"):
            lts = op.get(key) if isinstance(op, dict) else None
            yield from (t for t in (lts if isinstance(lts, list) else []) if isinstance(t, dict))


def _ids(doc):
    """(op ids, tensor ids) that `doc` holds."""
    ops = doc.get("graph") if isinstance(doc, dict) else None
    op_ids = [op.get("id") for op in (ops if isinstance(ops, list) else []) if isinstance(op, dict)]
    return ({i for i in op_ids if _is_int(i)},
            {t.get("id") for t in _tensors(doc) if _is_int(t.get("id"))})


def _shrunk(doc):
    """`doc` with each too-big shape made small (batch <= 2, spatial <= 8, dense strides
    in the same axis order); None when that does not load as a graph oneDNN takes."""
    doc = copy.deepcopy(doc)
    big = {tuple(t["shape"]) for t in _tensors(doc) if math.prod(t["shape"]) > MAX_ELEMENTS}
    if not big:
        return doc  # as it is, even where the linked oneDNN cannot run it (UNSUPPORTED)
    for shape in big:
        small = [min(d, 2) if i == 0 else d if i == 1 else min(d, 8) for i, d in enumerate(shape)]
        for t in _tensors(doc):
            if tuple(t["shape"]) == shape:
                order = overrides.axis_order(t["shape"], t["stride"])
                t["shape"], t["stride"] = small, list(overrides.dense_strides(small, order))
    if any(math.prod(t["shape"]) > MAX_ELEMENTS for t in _tensors(doc)):
        return None
    try:  # apply() with no overrides re-derives and checks every output shape
        overrides.apply(og.load_graph(doc))
    except (TypeError, ValueError, og.Error):
        return None
    return doc


def _sources():
    """Shared file (relative to ../shared) -> its document, one file per distinct
    content, small enough to run many times."""
    found, seen = {}, set()
    paths = sorted(SHARED.glob("benchdnn-graph-inputs/**/*.json")) + \
        sorted(SHARED.glob("onednn-graph-json/*.json"))
    for path in paths:
        doc = json.loads(path.read_text())
        content = json.dumps(doc, sort_keys=True)
        if content in seen:
            continue
        seen.add(content)
        small = _shrunk(doc)
        if small is not None:
            found[str(path.relative_to(SHARED))] = small
    return found


SOURCES = _sources() if SHARED.is_dir() else {}


# --- damage ------------------------------------------------------------------

def _walk(node, path=()):
    """(path, value) of every value inside `node`, itself first."""
    yield path, node
    items = node.items() if isinstance(node, dict) else \
        enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        yield from _walk(value, path + (key,))


def _field(path):
    return "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in path).lstrip(".")


def _parent(doc, path):
    for key in path[:-1]:
        doc = doc[key]
    return doc


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _pick(draw, doc, keep):
    """A path, drawn among the values of `doc` that `keep(path, value)` accepts, or None."""
    paths = [p for p, v in _walk(doc) if keep(p, v)]
    return draw(st.sampled_from(paths)) if paths else None


def _set(doc, path, value):
    _parent(doc, path)[path[-1]] = value
    return f"{_field(path)} = {json.dumps(value)}"


def damage_number(draw, doc):
    in_tensor = draw(st.booleans())  # half of the time a dim, a stride or an id of a tensor
    path = _pick(draw, doc, lambda p, v: _is_int(v) and bool(p) and (
        not in_tensor or "shape" in p or "stride" in p or p[-1] == "id"))
    if path is None:
        return None
    old = _parent(doc, path)[path[-1]]
    new = draw(st.one_of(st.sampled_from(NUMBERS), st.integers(-3, 3).map(lambda d: old + d),
                         st.sampled_from((2 * old, -old))))
    return _set(doc, path, new)


def damage_float(draw, doc):
    path = _pick(draw, doc, lambda p, v: isinstance(v, float))
    return None if path is None else _set(doc, path, draw(st.sampled_from(FLOATS)))


def damage_string(draw, doc):
    path = _pick(draw, doc, lambda p, v: isinstance(v, str) and bool(p))
    if path is None:
        return None
    old = _parent(doc, path)[path[-1]]
    new = draw(st.one_of(st.sampled_from(STRINGS), st.sampled_from((old.lower(), old.upper()))))
    return _set(doc, path, new)


def damage_type(draw, doc):
    path = _pick(draw, doc, lambda p, v: bool(p))
    if path is None:
        return None  # a copy: later damage must not change OTHER_TYPES' lists
    return _set(doc, path, copy.deepcopy(draw(st.sampled_from(OTHER_TYPES))))


def delete_key(draw, doc):
    path = _pick(draw, doc, lambda p, v: isinstance(v, dict) and bool(v))
    if path is None:
        return None
    node = _parent(doc, path + ("",))
    key = draw(st.sampled_from(sorted(node)))
    del node[key]
    return f"del {_field(path + (key,))}"


def rename_key(draw, doc):
    path = _pick(draw, doc, lambda p, v: isinstance(v, dict) and bool(v))
    if path is None:
        return None
    node = _parent(doc, path + ("",))
    key, new = draw(st.sampled_from(sorted(node))), draw(st.sampled_from(STRINGS))
    node[new] = node.pop(key)
    return f"{_field(path + (key,))} renamed {new!r}"


def truncate_list(draw, doc):
    path = _pick(draw, doc, lambda p, v: isinstance(v, list) and bool(v))
    if path is None:
        return None
    node = _parent(doc, path + (0,))
    keep = draw(st.integers(0, len(node) - 1))
    del node[keep:]
    return f"{_field(path)} cut to {keep} entries"


def duplicate_op(draw, doc):
    ops = doc.get("graph") if isinstance(doc, dict) else None
    if not isinstance(ops, list) or not ops:
        return None
    i, at = draw(st.integers(0, len(ops) - 1)), draw(st.integers(0, len(ops)))
    ops.insert(at, copy.deepcopy(ops[i]))
    return f"graph[{i}] copied to graph[{at}]"


def swap_tensor_ids(draw, doc):
    ids = sorted(_ids(doc)[1])
    if len(ids) < 2:
        return None
    a, b = draw(st.sampled_from(ids)), draw(st.sampled_from(ids))
    swapped = {a: b, b: a}
    for t in _tensors(doc):
        if _is_int(t.get("id")) and t["id"] in swapped:
            t["id"] = swapped[t["id"]]
    for key in ("input_ports", "output_ports"):
        if isinstance(doc.get(key), list):
            doc[key] = [swapped.get(i, i) if _is_int(i) else i for i in doc[key]]
    return f"tensor ids {a} and {b} swapped"


DAMAGES = (damage_number, damage_number, damage_float, damage_string, damage_type, delete_key,
           rename_key, truncate_list, duplicate_op, swap_tensor_ids)


class Damaged:
    """A shared document and what damage did to it (Hypothesis prints the damage, not
    the whole document)."""

    def __init__(self, source, doc, damage):
        self.source, self.doc, self.damage = source, doc, damage

    def __repr__(self):
        return f"{self.source} with {'; '.join(self.damage) or 'no damage'}"


@st.composite
def damaged_documents(draw):
    source = draw(st.sampled_from(sorted(SOURCES)))
    doc = copy.deepcopy(SOURCES[source])
    done = []
    for _ in range(draw(st.integers(1, 3))):
        what = draw(st.sampled_from(DAMAGES))(draw, doc)
        if what is not None:
            done.append(what)
    return Damaged(source, doc, done)


# --- the worker ----------------------------------------------------------------

WORKER = r"""
import json, os, resource, sys
# An address space of ADDRESS_SPACE bytes: the reader and the runner refuse what does not
# fit (memory_limit), and a damaged stride never has the shared machine fill gigabytes.
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]),) * 2)
replies = os.fdopen(os.dup(1), "w")  # the protocol's own channel
os.dup2(2, 1)  # whatever else reaches stdout (oneDNN's verbose output, prints) goes to stderr
from onednn_graph import cli
for line in sys.stdin:
    try:
        o = cli.run_case(cli.Case(line.rstrip("\n")), "correctness", 1, 0)
        reply = {"status": o.status, "message": o.message}
    except BaseException as exc:  # what escapes run_case: the property's first failure
        reply = {"status": "ESCAPED", "message": f"{type(exc).__name__}: {exc}"}
    replies.write(json.dumps(reply) + "\n")
    replies.flush()
"""


class Worker:
    """A child process that runs cases: a path per line in, an outcome per line out."""

    def __init__(self, directory, script=WORKER):
        self.directory, self.script = directory, script
        self.proc = None
        self.started = self.cases = 0
        self.counts = collections.Counter()

    def _start(self):
        self.started += 1
        self.log = self.directory / f"worker-{self.started}.stderr"
        env = dict(os.environ, ONEDNN_GRAPH_TUNING_DB="off", OMP_NUM_THREADS="1")
        with open(self.log, "w") as stderr:
            self.proc = subprocess.Popen([sys.executable, "-c", self.script, str(ADDRESS_SPACE)],
                                         stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=stderr, text=True, env=env)

    def _lost(self, status, what):
        """The outcome of a case the worker did not answer; the next case gets a new worker."""
        self.proc.kill()
        code = self.proc.wait()
        self.proc.stdin.close()
        self.proc.stdout.close()
        tail = self.log.read_text()[-2000:]
        self.proc = None
        return {"status": status, "message": f"{what} (exit status {code}); its stderr "
                                             f"ends:\n{tail}"}

    def run(self, path):
        self.cases += 1
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        try:
            self.proc.stdin.write(f"{path}\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            return self._lost("CRASHED", "the worker died")
        ready, _, _ = select.select([self.proc.stdout], [], [], TIMEOUT)
        if not ready:
            return self._lost("HUNG", f"no outcome within {TIMEOUT} s")
        line = self.proc.stdout.readline()
        outcome = json.loads(line) if line else self._lost("CRASHED", "the worker died")
        self.counts[outcome["status"]] += 1
        return outcome

    def close(self):
        if self.proc is not None:
            self.proc.stdin.close()  # the worker's loop ends
            self.proc.wait(timeout=60)
            self.proc.stdout.close()


@pytest.fixture(scope="module")
def worker(tmp_path_factory):
    w = Worker(tmp_path_factory.mktemp("damaged-graphs"))
    yield w
    w.close()
    print(f"\ndamaged graph files: {sum(w.counts.values())} run(s): "
          + ", ".join(f"{n} {s}" for s, n in w.counts.most_common())
          + f"; worker started {w.started} time(s); documents in {w.directory}")


def test_a_crashing_worker_fails_the_case_and_is_restarted(tmp_path):
    aborts_on_crash = ("import os, sys\nfor line in sys.stdin:\n"
                       "    os.abort() if 'crash' in line else print('{\"status\": \"PASS\"}', "
                       "flush=True)\n")
    w = Worker(tmp_path, aborts_on_crash)
    assert w.run("fine.json")["status"] == "PASS"
    lost = w.run("crash.json")
    assert lost["status"] == "CRASHED" and "exit status -6" in lost["message"]
    assert w.run("fine.json")["status"] == "PASS" and w.started == 2
    w.close()


# --- the property ------------------------------------------------------------------

_FIELD = re.compile(r"(\(top level\)|version|engine_kind|fpmath_mode|graph|input_ports"
                    r"|output_ports)[.\[:]")
_NAMED_ID = re.compile(r"\b(op|tensor) (-?\d+)\b")


def names_what_is_wrong(message, path, doc):
    """True when a BAD INPUT message names a field of the document at `path`, or an op
    or tensor by an id the document holds."""
    if message.startswith(f"{path}: ") and _FIELD.match(message, len(path) + 2):
        return True
    op_ids, tensor_ids = _ids(doc)
    return any(int(n) in (op_ids if kind == "op" else tensor_ids)
               for kind, n in _NAMED_ID.findall(message))


def _computed_past_int64(message):
    # pybind11 refuses a number past int64 that the package computed itself (the reader
    # refuses such numbers in a file): ids above the largest in use for the ops that
    # _impl/as_f32.widen and Graph.finalize add (past int64 when a file uses 2**63-1).
    head, _, invoked = message.partition("\nInvoked with: ")
    return head.startswith("__init__(): incompatible constructor arguments") and \
        any(int(n) > 2**63 - 1 for n in re.findall(r"\d+", invoked))


#: BAD INPUT messages that name nothing, from defects outside the reader (reported with
#: issue 29, left to their modules): allowed until fixed, then delete the line.
KNOWN_UNNAMED = (_computed_past_int64,)


def _known_unnamed(message):
    return any(known(message) for known in KNOWN_UNNAMED)


def test_names_what_is_wrong():
    doc = {"graph": [{"id": 4, "inputs": [{"id": 7}], "outputs": []}]}
    assert names_what_is_wrong("a.json: graph[0].inputs[0].stride: overlap", "a.json", doc)
    assert names_what_is_wrong("a.json: (top level): missing field 'graph'", "a.json", doc)
    assert names_what_is_wrong("ConvTranspose op 4: src (1, 0): every dimension ...", "a.json", doc)
    assert names_what_is_wrong("op 3: tensor 7 needs a known shape", "a.json", doc)
    assert not names_what_is_wrong("op 3: tensor 8 needs a known shape", "a.json", doc)
    assert not names_what_is_wrong("a.json: could not allocate", "a.json", doc)
    assert not names_what_is_wrong("'NoneType' object is not subscriptable", "a.json", doc)
    assert not _known_unnamed("LogicalTensor: strides must be >= 1, got -48")  # fixed: names the op
    assert _known_unnamed("__init__(): incompatible constructor arguments. The following ...\n"
                          "\nInvoked with: 9223372036854775808, 'TypeCast'")
    assert not _known_unnamed("__init__(): incompatible constructor arguments. The following ...\n"
                              "\nInvoked with: 12, 'TypeCast'")


def test_an_output_dtype_the_op_cannot_write_is_bad_input_naming_the_tensors(tmp_path):
    # Found by the property below (issue 38): ConvolutionBackwardData writing s32 from f32
    # inputs got oneDNN's "refuses the op as written"; the project's own graph, so this
    # runs without the shared files.
    doc = json.loads((Path(TESTS_DIR) / "fixtures" / "conv_bwd_d_3d_small.json").read_text())
    op = doc["graph"][0]
    op["outputs"][0]["dtype"] = "s32"
    path = tmp_path / "damaged.json"
    path.write_text(json.dumps(doc))
    from onednn_graph import cli
    outcome = cli.run_case(cli.Case(str(path)), "correctness", 1, 0)
    (x, w), y = (t["id"] for t in op["inputs"]), op["outputs"][0]["id"]
    assert (outcome.status, outcome.message) == ("BAD INPUT", (
        f"{path}: graph[0]: ConvolutionBackwardData op {op['id']}: the output (tensor {y}) is "
        f"s32, but the inputs diff_dst (tensor {x}) and weights (tensor {w}) are f32: "
        "ConvolutionBackwardData writes its inputs' dtype, so the output must be f32"))
    assert names_what_is_wrong(outcome.message, str(path), doc)


@pytest.mark.skipif(not SOURCES, reason=f"oneDNN's graph files are not in {SHARED}")
@settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=damaged_documents())
def test_a_damaged_graph_file_gets_a_status_naming_what_is_wrong(worker, case):
    path = worker.directory / f"damaged-{worker.cases + 1}.json"
    path.write_text(json.dumps(case.doc))
    what = f"{path}: {case!r}"
    note(what)
    outcome = worker.run(path)
    status, message = outcome["status"], outcome["message"]
    assert status in STATUSES, f"{status} on {what}:\n{message}"
    assert not (status == "ERROR" and message.startswith(ESCAPED)), f"{what}:\n{message}"
    # oneDNN's own words for a file the reader should have refused, naming nothing
    for anonymous in ("could not construct a memory descriptor", "could not finalize the graph"):
        assert anonymous not in message, f"{what}:\n{message}"
    if status == "BAD INPUT" and not names_what_is_wrong(message, str(path), case.doc):
        assert _known_unnamed(message), f"BAD INPUT naming nothing on {what}:\n{message}"
        worker.counts["(BAD INPUT of a known defect)"] += 1
