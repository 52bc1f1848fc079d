"""The tuning database (_impl/tuning_db.py): tuning paid once per machine.

Truth: what a first tuning run chose (its op kind, thread count, timings), the
file on disk (JSON, read back by a new database object as another process
would), and counts of what a warm call compiles and times (monkeypatched
counters around _call._compile and _tuning.fastest). Results of a warm call
are checked against the reference like any call. Every test has an empty
database of its own (conftest.py).
"""

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import onednn_graph as og
from onednn_graph import cli
from onednn_graph._impl import call as _call, tuning as _tuning, tuning_db as _tuning_db
from helpers import FIXTURES, random

# A problem with two formulations (the op, and the forward Convolution) and, being
# small, two thread counts to time: four candidates where threads can be limited.
PROBLEM = dict(diff_dst=(2, 9, 9, 8), weights=(3, 3, 8, 8), strides=2, pads_begin=1, pads_end=1,
               data_format="NXC", weights_format="XOI", dtype="f32")


def _tune():
    return og.compile_op("ConvTransposeBackwardData", tune=True, **PROBLEM)


def _fresh():
    """A new database object over the same directory: what another process reads."""
    _tuning_db._current = None
    return og.tuning.tuning_database()


@pytest.fixture
def counted(monkeypatch):
    """Counts of compiles and of timing runs from here on."""
    counts = {"compiles": 0, "timings": 0}
    compile_, fastest = _call._compile, _tuning.fastest

    def compile_counted(*args, **kwargs):
        counts["compiles"] += 1
        return compile_(*args, **kwargs)

    def fastest_counted(*args, **kwargs):
        counts["timings"] += 1
        return fastest(*args, **kwargs)

    monkeypatch.setattr(_call, "_compile", compile_counted)
    monkeypatch.setattr(_tuning, "fastest", fastest_counted)
    return counts


def test_a_warm_database_compiles_only_the_chosen_formulation(counted, rng):
    first = _tune()
    assert counted["compiles"] >= 2 and counted["timings"] == 1
    db = _fresh()
    [entry] = db.entries()
    assert (entry.kind, entry.threads, entry.lowering) == (
        first._prepared.op.kind, first._prepared.op.threads, first.lowering)
    assert entry.seconds == first.tuning and entry.problem.startswith("ConvTransposeBackwardData f32")
    assert db.path is not None and db.path.parent == _tuning_db.default_directory()
    counted.update(compiles=0, timings=0)
    warm = _tune()
    assert counted == {"compiles": 1, "timings": 0}
    assert (warm.lowering, warm.threads, warm.tuning) == (first.lowering, first.threads, first.tuning)
    dy, w = random(rng, (2, 9, 9, 8), "f32"), random(rng, (3, 3, 8, 8), "f32")
    kw = {k: v for k, v in PROBLEM.items() if k not in ("diff_dst", "weights", "dtype")}
    expected = og.reference.conv_transpose_backward_data(dy, w, **kw)
    np.testing.assert_allclose(warm(dy, w), expected, rtol=1e-5, atol=1e-5)  # f32, 72 terms


def test_the_functional_api_uses_the_database_under_set_tuning(counted, monkeypatch):
    _tune()
    _fresh()
    og.cache.clear_cache()
    monkeypatch.setattr(_call, "_tune_new", True)
    counted.update(compiles=0, timings=0)
    dy, w = np.ones((2, 9, 9, 8), np.float32), np.ones((3, 3, 8, 8), np.float32)
    kw = {k: v for k, v in PROBLEM.items() if k not in ("diff_dst", "weights", "dtype")}
    og.conv_transpose_backward_data(dy, w, **kw)
    assert counted == {"compiles": 1, "timings": 0}
    og.cache.clear_cache()


def test_decisions_hold_for_the_machine_that_measured_them(counted, monkeypatch):
    _tune()
    here = _fresh().path
    real = _tuning_db.machine
    monkeypatch.setattr(_tuning_db, "machine", lambda: dict(real(), cpu="another CPU"))
    elsewhere = _fresh()
    assert elsewhere.path != here and len(elsewhere) == 0
    counted.update(compiles=0, timings=0)
    _tune()
    assert counted["timings"] == 1  # measured again on "another CPU"


def test_processes_tuning_at_once_lose_nothing(tmp_path):
    """Eight processes store 25 decisions each at once: all 200 are in the file."""
    code = ("import sys, onednn_graph as og\n"
            "db = og.tuning.tuning_database()\n"
            "for i in range(25):\n"
            "    db.put(f'{sys.argv[1]}-{i}', {'kind': 'ConvTranspose', 'threads': 0, "
            "'seconds': {}, 'problem': 'p'})\n")
    env = dict(os.environ)
    procs = [subprocess.Popen([sys.executable, "-c", code, str(n)], env=env) for n in range(8)]
    assert [p.wait(timeout=120) for p in procs] == [0] * 8
    db = _fresh()
    assert len(db) == 200
    doc = json.loads(db.path.read_text())
    assert doc["format"] == _tuning_db.FORMAT and doc["machine"] == db.machine
    assert not list(db.path.parent.glob("*.tmp"))  # every temporary file was renamed


def test_an_unreadable_file_is_ignored_with_a_warning_and_replaced(counted):
    db = _fresh()
    db.path.parent.mkdir(parents=True)
    db.path.write_text("{ not json")
    with pytest.warns(RuntimeWarning, match="ignoring the tuning database"):
        _tune()
    assert counted["timings"] == 1
    assert len(_fresh()) == 1  # the next decision replaced it


def test_an_unwritable_directory_keeps_decisions_in_memory(counted, tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(_tuning_db.ENV, str(blocker / "db"))  # a directory inside a file
    with pytest.warns(RuntimeWarning, match="cannot write the tuning database"):
        _tune()
    counted.update(compiles=0, timings=0)
    _tune()  # the same process still has the decision
    assert counted == {"compiles": 1, "timings": 0}


def test_off_keeps_decisions_in_memory_only(counted, tmp_path, monkeypatch):
    monkeypatch.setenv(_tuning_db.ENV, "off")
    db = _fresh()
    assert db.path is None
    _tune()
    assert len(db) == 1 and not any(tmp_path.rglob("tuning-*.json"))


def test_clear_forgets_this_machines_decisions():
    _tune()
    db = _fresh()
    other = db.directory / "tuning-000000000000.json"  # another machine's file
    other.write_text(json.dumps({"format": 1, "machine": {}, "decisions": {"k": {}}}))
    assert db.clear() == 1 and len(db) == 0 and not db.path.exists() and other.exists()
    _tune()
    assert db.clear(every_machine=True) == 2 and not other.exists()


def test_the_command_tunes_a_json_graph_ahead_of_time(capsys, counted):
    """`onednn-graph tune` stores a decision for each op of a case; the same problem
    through compile_op then compiles one formulation and times nothing."""
    case = FIXTURES / "deconv_bwd_d_small.json"
    assert cli.main(["tune", str(case)]) == cli.EXIT_PASS
    out = capsys.readouterr().out
    assert "op 0 ConvTransposeBackwardData" in out and "1 decision(s)" in out
    graph = og.load_graph(case)
    [op] = graph.ops
    dy, w = (np.ones(t.shape, np.float32) for t in op.inputs[:2])
    counted.update(compiles=0, timings=0)
    og.compile_op("ConvTransposeBackwardData", diff_dst=dy, weights=w, tune=True, **op.attrs)
    assert counted == {"compiles": 1, "timings": 0}

    assert cli.main(["tuning", "--json"]) == cli.EXIT_PASS
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["decisions"]) == 1 and doc["machine"]["isa"] == og.system.cpu_isa()
    assert cli.main(["tuning"]) == cli.EXIT_PASS
    assert "1 decision(s)" in capsys.readouterr().out
    assert cli.main(["tuning", "--clear"]) == cli.EXIT_PASS
    assert "cleared 1 decision(s)" in capsys.readouterr().out
    assert cli.main(["tuning", "--every-machine"]) == cli.EXIT_BAD_INPUT
    assert cli.main(["tune"]) == cli.EXIT_BAD_INPUT
    assert cli.main(["tune", str(FIXTURES / "missing.json")]) == cli.EXIT_BAD_INPUT


def test_the_environment_turns_functional_tuning_on():
    code = "import onednn_graph as og; print(og.tuning.tuning_enabled())"
    env = dict(os.environ, ONEDNN_GRAPH_TUNING="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "True"
    env["ONEDNN_GRAPH_TUNING"] = "0"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "False"


def test_nothing_in_the_suite_writes_to_the_users_cache():
    assert _tuning_db.default_directory() != _tuning_db.Path.home() / ".cache" / "onednn-graph"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert repr(og.tuning.tuning_database()).startswith("TuningDatabase(")
