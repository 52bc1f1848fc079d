"""How tune=True decides (_impl/tuning.py): outliers thrown out, a formulation
replaces the default only when it wins clearly side by side, and nothing is stored
while other processes load the CPU.

Truth: hand-made samples with a known answer for the rule itself, and tuning run on
given timings and a given load reading (``scripted``): no test here depends on how
fast or how busy the machine is. What really happens under load is
``benchmarks/tuning_busy.py``'s report.
"""

import os
import subprocess
import sys
import time

import pytest

import onednn_graph as og
from onednn_graph._impl import tuning as _tuning

pytestmark = pytest.mark.busy_machine  # the real BUSY_SHARE (conftest.py)

LABELS = ["native", "as a Convolution"]


def test_a_clear_winner_replaces_the_default():
    best, seconds, stored, why = _tuning.verdict(LABELS, [[1.0] * 5, [0.5] * 5], 0.0)
    assert best == 1 and stored and seconds == {"native": 1.0, "as a Convolution": 0.5}
    assert why == "0.50x the default's time, faster in 5 of 5 rounds"


def test_a_disturbed_sample_is_thrown_out():
    # One round of the default hit by another process (30x): without the outlier
    # rule its median would still be 1.0, but a mean or a 3-round median would not.
    best, seconds, _, _ = _tuning.verdict(LABELS, [[1.0, 1.0, 30.0, 1.0, 1.0], [2.0] * 5], 0.0)
    assert best is None and seconds["native"] == 1.0
    # ... and a winner's ratio is taken over the rounds where both samples were kept
    best, _, _, why = _tuning.verdict(LABELS, [[1.0, 1.0, 1.0, 1.0, 1.0],
                                               [0.5, 0.5, 9.0, 0.5, 0.5]], 0.0)
    assert best == 1 and "4 of 4 rounds" in why


@pytest.mark.parametrize("candidate", [
    [0.99, 1.01, 0.98, 1.02, 0.99],  # a 1% difference: noise, not a winner
    [0.9, 0.9, 0.9, 1.05, 1.05],     # faster in the median, slower in 2 of 5 rounds
])
def test_a_close_race_leaves_the_default(candidate):
    best, _, stored, why = _tuning.verdict(LABELS, [[1.0] * 5, candidate], 0.0)
    assert best is None and stored and why.startswith("no clear winner") and "default stands" in why


def test_a_busy_machine_stores_nothing():
    best, _, stored, why = _tuning.verdict(LABELS, [[1.0] * 5, [0.5] * 5], 0.6)
    assert best is None and not stored
    assert why.startswith("the machine was busy (other processes took 60% of its CPU time)")


PROBLEM = dict(diff_dst=(4, 33, 33, 32), weights=(3, 3, 1, 32), strides=2, pads_begin=1,
               pads_end=1, groups=32, data_format="NXC", weights_format="XOI", dtype="f32")


@pytest.fixture
def scripted(monkeypatch):
    """Tuning on given timings and a given load reading, not on the machine's: seconds
    per call by the op's kind (this problem's two formulations, ConvTransposeBackwardData
    and Convolution; each also on one thread, timed alike), and the load share. Returns
    the dict to set them in: {"times": {kind: seconds}, "load": share}."""
    script = {"times": {}, "load": 0.0}

    def timed(op, inputs, target, n):
        return script["times"][op.kind]

    class Load:  # machine_load.OthersLoad, reading the given share of others' CPU time
        def __enter__(self):
            self.share = script["load"]
            return self

        def __exit__(self, *exc):
            return None

    monkeypatch.setattr(_tuning, "_timed", timed)
    monkeypatch.setattr(_tuning._machine_load, "OthersLoad", Load)
    return script


def _tuned():
    og.cache.clear_cache()
    return og.compile_op("ConvTransposeBackwardData", tune=True, threads=0, **PROBLEM)


def _default():
    return og.compile_op("ConvTransposeBackwardData", threads=0, **PROBLEM)


def _kinds():
    """(the default formulation's kind here, the other's): which is the default depends
    on the CPU family's rules (the forward Convolution on a Zen 4)."""
    default = _default()._prepared.op.kind
    return default, {"ConvTransposeBackwardData": "Convolution",
                     "Convolution": "ConvTransposeBackwardData"}[default]


def test_a_decision_made_while_other_processes_load_the_cpu_is_not_stored(scripted):
    # the other formulation twice as fast, but other processes took 60% of the CPU meanwhile
    default, other = _kinds()
    scripted["times"] = {default: 1e-3, other: 0.5e-3}
    scripted["load"] = 0.6
    busy = _tuned()
    assert busy.tuning_verdict.startswith("the machine was busy (other processes took 60%")
    assert og.tuning.tuning_database().entries() == []
    assert busy.lowering == _default().lowering  # the default stands
    scripted["load"] = 0.0  # the same timings on a quiet machine: stored
    quiet = _tuned()
    assert quiet._prepared.op.kind == other
    assert [e.kind for e in og.tuning.tuning_database().entries()] == [other]


def test_the_verdict_is_kept_with_the_decision(scripted):
    default, other = _kinds()
    scripted["times"] = {default: 1e-3, other: 0.5e-3}
    op = _tuned()
    assert op.tuning_verdict == "0.50x the default's time, faster in 5 of 5 rounds"
    [entry] = og.tuning.tuning_database().entries()
    assert entry.verdict == op.tuning_verdict  # what `onednn-graph tuning` prints
    again = _tuned()  # from the database: compiled, not timed
    assert again.tuning_verdict == f"from the tuning database: {op.tuning_verdict}"
    assert _default().tuning_verdict == ""


def test_a_stored_decision_no_longer_faster_is_measured_again_when_rechecked(scripted):
    """A decision for another formulation than the default is trusted by tune=True
    (one compile, nothing timed), and measured again under _tuning.recheck (what
    `onednn-graph tune` does): a wrong one is replaced by what tuning then finds."""
    default_kind, other_kind = _kinds()
    scripted["times"] = {default_kind: 0.5e-3, other_kind: 1e-3}  # the default wins
    quiet = _tuned()
    assert quiet._prepared.op.kind == default_kind
    db = og.tuning.tuning_database()
    [entry] = db.entries()
    # The other formulation, stored as if a busy machine had once chosen it
    wrong = other_kind
    db.put(entry.key, {"problem": entry.problem, "kind": wrong, "lowering": wrong, "threads": 0,
                       "seconds": {}, "in_f32": False, "verdict": "chosen on a busy machine",
                       "default": False})
    assert _tuned()._prepared.op.kind == wrong  # trusted: not measured
    with _tuning.recheck():
        again = _tuned()
    assert not again.tuning_verdict.startswith("from the tuning database")
    assert again._prepared.op.kind == default_kind, (again.tuning_verdict, again.tuning)
    [entry] = db.entries()
    assert entry.kind == default_kind and entry.verdict == again.tuning_verdict


@pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="the OS does not say how busy it is")
def test_the_load_reading_counts_other_processes_and_not_this_one():
    # The reading itself, not a decision: this process's own work is not "others", a
    # spinning child's is (the share it reads depends on the machine: only its sign and
    # bounds are held here; benchmarks/tuning_busy.py reports real decisions under load).
    with _tuning._machine_load.OthersLoad() as own:
        end = time.perf_counter() + 0.3
        while time.perf_counter() < end:
            pass
    assert own.share is not None and 0.0 <= own.share <= 1.0
    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.1)
        with _tuning._machine_load.OthersLoad() as others:
            time.sleep(0.5)
    finally:
        spin.kill()
        spin.wait()
    # the child spun for 0.5 s: whatever else runs, some of that time is its and is read
    assert others.share is not None and 0.0 < others.share <= 1.0
