"""New calls on fewer threads while other processes keep CPUs busy (_impl.machine_load).

Truth: the machine's counters are scripted (the readings below), so each case says
what a given load must do; the calls made under a limit are checked against the
reference and against the same call on all threads. What the limit does to speed on a
shared machine is measured by benchmarks/shared_machine.py (docs/performance.md), not
here: no test depends on timing or on how busy the machine running it is.
"""

import os

import numpy as np
import pytest

import onednn_graph as og
from onednn_graph import _core
from onednn_graph._impl import compiled as _compiled, machine_load as _machine_load
from helpers import assert_call_matches_reference, random

pytestmark = pytest.mark.busy_machine

TICK = 100  # /proc/stat ticks a second
OPENMP = pytest.mark.skipif(not _core.can_limit_threads(),
                            reason="the package sets oneDNN's threads only on OpenMP")


@pytest.mark.parametrize("others, cpus, threads", [
    (0.0, 2, 0), (0.49, 2, 0), (0.5, 2, 1), (1.0, 2, 1), (2.0, 2, 1), (3.0, 2, 1),
    (1.0, 8, 7), (2.6, 8, 5), (7.9, 8, 1), (0.3, 64, 0)])
def test_the_cpus_others_leave(others, cpus, threads):
    """Half a CPU's worth of others' load or more takes that CPU; at least 1 is left;
    a quiet machine keeps oneDNN's default (0: all)."""
    assert _machine_load.threads_left(others, cpus) == threads


class Machine:
    """Scripted counters: each window adds `others` CPUs' worth of others' ticks and
    `own` of this process's, on a machine of `cpus` CPUs."""

    def __init__(self, cpus):
        self.cpus, self.busy, self.total, self.own_ticks = cpus, 0, 0, 0.0

    def window(self, seconds, others, own=0.0):
        self.total += round(seconds * TICK * self.cpus)
        self.busy += round(seconds * TICK * (others + own))
        self.own_ticks += seconds * TICK * own

    def read(self):
        return self.busy, self.total

    def own(self):
        return self.own_ticks


@pytest.fixture
def machine(monkeypatch):
    """Scripted counters; one busy reading sets the limit (each case scripts one reading
    per state: test_a_passing_load_leaves_the_threads tests the readings in a row)."""
    monkeypatch.setattr(_machine_load, "BUSY_READINGS", 1)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(_machine_load, "_usable_cpus", lambda: 2)
    m = Machine(2)
    limit = _machine_load.ThreadLimit(m.read, m.own)
    limit.enabled = True
    monkeypatch.setattr(_machine_load, "LIMIT", limit)
    return m, limit


@OPENMP
def test_a_reading_per_window_and_the_limit_follows_the_load(machine):
    m, limit = machine
    assert limit.refresh(now=0.0) == 0 and limit.others_cpus is None  # one reading: no interval
    m.window(1.0, others=0.1, own=1.9)
    assert limit.refresh(now=1.0) == 0 and limit.changes == 0
    m.window(1.0, others=1.0, own=1.0)  # another process's threads on a CPU
    assert limit.refresh(now=2.0) == 1 and limit.changes == 1
    assert limit.others_cpus == pytest.approx(1.0, abs=0.05)
    assert limit.next_check == 2.0 + _machine_load.WINDOW
    m.window(1.0, others=0.0, own=1.0)  # it ended
    assert limit.refresh(now=3.0) == 0 and limit.changes == 2


@OPENMP
def test_a_passing_load_leaves_the_threads(machine, monkeypatch):
    """One busy reading is a passing load (Inductor's compile workers, read by the first
    call after torch.compile over the whole compile): the limit waits for BUSY_READINGS
    in a row, and a quiet reading between restarts the count."""
    monkeypatch.setattr(_machine_load, "BUSY_READINGS", 2)
    m, limit = machine
    limit.refresh(now=0.0)
    m.window(1.7, others=0.6, own=0.9)  # a compile: its workers were others
    assert limit.refresh(now=1.7) == 0
    m.window(0.25, others=0.0, own=2.0)
    assert limit.refresh(now=2.0) == 0 and limit.changes == 0
    m.window(0.25, others=1.0, own=1.0)  # another process's threads, and they stay
    assert limit.refresh(now=2.25) == 0
    m.window(0.25, others=1.0, own=1.0)
    assert limit.refresh(now=2.5) == 1 and limit.changes == 1
    m.window(0.25, others=0.0, own=2.0)  # gone: every thread back at once
    assert limit.refresh(now=2.75) == 0 and limit.changes == 2


@OPENMP
def test_off_means_all_threads_whatever_the_load(machine):
    m, limit = machine
    limit.refresh(now=0.0)
    m.window(1.0, others=2.0)
    limit.refresh(now=1.0)
    assert limit.threads == 1
    og.system.set_load_aware(False)
    assert limit.threads == 0 and og.system.capabilities()["load_aware"]["enabled"] is False
    m.window(1.0, others=2.0)
    assert limit.refresh(now=2.0) == 0
    with pytest.raises(TypeError, match="set_load_aware takes a bool, got int"):
        og.system.set_load_aware(1)


@OPENMP
def test_the_environment_turns_it_off(monkeypatch):
    monkeypatch.setenv(_machine_load.LOAD_AWARE_ENV, "0")
    assert _machine_load.ThreadLimit().enabled is False
    monkeypatch.setenv(_machine_load.LOAD_AWARE_ENV, "1")
    assert _machine_load.ThreadLimit().enabled is True


DEPTHWISE = dict(strides=2, pads_begin=1, pads_end=1, groups=16, data_format="NCX",
                 weights_format="IOX")


@OPENMP
def test_a_busy_machine_compiles_the_call_again_on_the_cpus_left(machine, rng):
    """The issue's depthwise problem, smaller (2.1 MFLOP: over _plan.SMALL_FLOPS, so the
    package gives it every thread when quiet): under a limit of 1 it is another cache
    entry, compiled for 1 thread, with the reference's values; back on a quiet machine
    the first entry answers again (nothing compiled)."""
    m, limit = machine
    og.cache.clear_cache()
    x, w = random(rng, (4, 16, 32, 32), "f32"), random(rng, (16, 1, 4, 4), "f32")
    limit.refresh(now=0.0)
    limit.next_check = float("inf")  # the scripted readings decide, not the clock
    quiet = og.conv_transpose(x, w, **DEPTHWISE)
    [first] = og.cache.cached_ops()
    assert first.threads == 0
    m.window(1.0, others=1.0, own=1.0)
    limit.refresh(now=1.0)
    limit.next_check = float("inf")
    busy = og.conv_transpose(x, w, **DEPTHWISE)
    assert og.cache.cache_info().misses == 2
    assert [op.threads for op in og.cache.cached_ops()] == [0, 1]
    assert_call_matches_reference("ConvTranspose", [x, w], DEPTHWISE, busy, "f32")
    np.testing.assert_allclose(busy, quiet, rtol=1e-5, atol=1e-6)  # the same sums, other threads
    m.window(1.0, others=0.0, own=1.0)
    limit.refresh(now=2.0)
    limit.next_check = float("inf")
    og.conv_transpose(x, w, **DEPTHWISE)
    assert og.cache.cache_info().misses == 2 and og.cache.cache_info().hits == 1


@OPENMP
def test_small_problems_and_explicit_counts_are_left_alone(machine, rng):
    m, limit = machine
    og.cache.clear_cache()
    limit.refresh(now=0.0)
    m.window(1.0, others=1.0, own=1.0)
    limit.refresh(now=1.0)
    limit.next_check = float("inf")
    assert limit.threads == 1
    tiny = og.conv_transpose(random(rng, (1, 4, 4, 2), "f32"), random(rng, (3, 3, 2, 2), "f32"))
    [op] = og.cache.cached_ops()
    assert tiny.shape == (1, 6, 6, 2) and op.threads == 1
    x, w = random(rng, (4, 16, 32, 32), "f32"), random(rng, (16, 1, 4, 4), "f32")
    compiled = og.compile_op("ConvTranspose", src=x, weights=w, **DEPTHWISE, threads=2)
    assert compiled.threads == 2


@OPENMP
def test_a_torch_layer_looks_its_call_up_again_when_the_limit_moves(machine):
    """onednn_graph.torch's layers keep their native call beside the cache; a new
    limit sends them through the functional API again (current_generation moves)."""
    torch = pytest.importorskip("torch")
    from onednn_graph.torch import ConvTranspose2d
    m, limit = machine
    limit.refresh(now=0.0)
    limit.next_check = float("inf")
    layer = ConvTranspose2d(16, 16, 4, stride=2, padding=1, groups=16)
    x = torch.randn(2, 16, 32, 32)
    with torch.no_grad():
        want = torch.nn.functional.conv_transpose2d(x, layer.weight, layer.bias, stride=2,
                                                    padding=1, groups=16)
        before = _compiled.current_generation()
        layer(x)
        m.window(1.0, others=1.0, own=1.0)
        limit.refresh(now=1.0)
        limit.next_check = float("inf")
        assert _compiled.current_generation() != before
        got = layer(x)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    assert 1 in [op.threads for op in og.cache.cached_ops()]


@pytest.mark.skipif(_core.can_limit_threads(), reason="oneDNN runs on OpenMP here")
def test_without_openmp_it_stays_off_and_says_so():
    limit = _machine_load.ThreadLimit()
    assert limit.enabled is False
    with pytest.warns(RuntimeWarning, match="set_load_aware.True. has no effect with oneDNN"):
        og.system.set_load_aware(True)
    assert og.system.capabilities()["load_aware"]["enabled"] is False
