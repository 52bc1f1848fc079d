"""How tune=True decides (_impl/tuning.py): outliers thrown out, a formulation
replaces the default only when it wins clearly side by side, and nothing is stored
while other processes load the CPU.

Truth: hand-made samples with a known answer for the rule itself; for a busy
machine, the decision the same problem gets on the quiet machine (two processes
spinning on every core must change nothing stored but that it is not stored).
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


def _tuned():
    og.cache.clear_cache()
    return og.compile_op("ConvTransposeBackwardData", tune=True, threads=0, **PROBLEM)


@pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="the OS does not say how busy it is")
def test_a_decision_made_while_other_processes_load_the_cpu_is_the_quiet_one_or_is_not_stored():
    quiet = _tuned()
    og.tuning.tuning_database().clear()
    spin = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(os.cpu_count() or 1)]
    try:
        time.sleep(0.2)  # the spinners are running
        busy = _tuned()
    finally:
        for p in spin:
            p.kill()
            p.wait()
    stored = og.tuning.tuning_database().entries()
    said = f"quiet: {quiet.tuning_verdict!r}; busy: {busy.tuning_verdict!r}"
    if busy.tuning_verdict.startswith("the machine was busy"):
        assert stored == [] and busy.lowering == og.compile_op(
            "ConvTransposeBackwardData", threads=0, **PROBLEM).lowering, said  # the default
    else:  # a machine with more cores than spinners may have measured as if quiet
        assert busy.lowering == quiet.lowering and len(stored) == 1, said


def test_the_verdict_is_kept_with_the_decision():
    op = _tuned()
    if op.tuning_verdict.startswith("the machine was busy"):
        pytest.skip(f"another process loaded the CPU while this test tuned: {op.tuning_verdict}")
    assert op.tuning_verdict and not op.tuning_verdict.startswith("from the tuning database")
    [entry] = og.tuning.tuning_database().entries()
    assert entry.verdict == op.tuning_verdict  # what `onednn-graph tuning` prints
    again = _tuned()  # from the database: compiled, not timed
    assert again.tuning_verdict == f"from the tuning database: {op.tuning_verdict}"
    assert og.compile_op("ConvTransposeBackwardData", threads=0, **PROBLEM).tuning_verdict == ""


def test_a_stored_decision_no_longer_faster_is_measured_again_when_rechecked():
    """A decision for another formulation than the default is trusted by tune=True
    (one compile, nothing timed), and measured again under _tuning.recheck (what
    `onednn-graph tune` does): a wrong one is replaced by what a quiet tuning finds."""
    quiet = _tuned()
    if quiet.tuning_verdict.startswith("the machine was busy"):
        pytest.skip(f"another process loaded the CPU while this test tuned: {quiet.tuning_verdict}")
    db = og.tuning.tuning_database()
    [entry] = db.entries()
    # The other formulation of this problem (native, or the forward Convolution),
    # stored as if a busy machine had once chosen it.
    other = {"ConvTransposeBackwardData": "Convolution", "Convolution": "ConvTransposeBackwardData"}
    wrong = other[quiet._prepared.op.kind]
    db.put(entry.key, {"problem": entry.problem, "kind": wrong, "lowering": wrong, "threads": 0,
                       "seconds": {}, "in_f32": False, "verdict": "chosen on a busy machine",
                       "default": False})
    assert _tuned()._prepared.op.kind == wrong  # trusted: not measured
    with _tuning.recheck():
        again = _tuned()
    assert not again.tuning_verdict.startswith("from the tuning database")
    assert again._prepared.op.kind == quiet._prepared.op.kind, (again.tuning_verdict, again.tuning)
    [entry] = db.entries()
    assert entry.kind == quiet._prepared.op.kind and entry.verdict == again.tuning_verdict
