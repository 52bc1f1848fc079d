"""The benchmark suite's plumbing (not its timings: benchmarks are not tests).

Every configuration must build a valid call (the functional API accepts it),
the FLOP count must match a hand count, and one cheap measurement must come
back with every system it can run.
"""

import dataclasses
import math

import numpy as np
import pytest

import sys
from pathlib import Path

# The suite is a tool of the repository (benchmarks/), not of the installed package.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import suite  # noqa: E402
from onednn_graph.system import cpu_isa  # noqa: E402
from onednn_graph._impl import lowering as _lowering  # noqa: E402
from onednn_graph._impl import version as _version  # noqa: E402


def test_flops_by_hand():
    # dcgan-1: 2 * N * C_in * C_out * the (position, tap) pairs kept per axis. Stride 2,
    # kernel 4, pads 1 on a 4-wide src: of its 4 * 4 pairs, dst position 2i - 1 + t
    # falls in the pads for (i, t) = (0, 0) and (3, 3): 14 kept.
    dcgan = suite.problem(suite.CASES[0], "ConvTranspose", "f32", "NXC")
    assert suite.flops(dcgan) == 2 * 16 * 512 * 256 * 14 * 14
    # depthwise: the same two of its 32 * 4 pairs per axis; one channel per group
    depthwise = next(c for c in suite.CASES if c.name == "depthwise")
    for kind in suite.OPS:
        assert suite.flops(suite.problem(depthwise, kind, "f32", "NCX")) == 2 * 8 * 64 * 1 * 126 * 126


def test_round_order_balances_who_runs_before_and_right_after_whom():
    # A rotation put the converted layers right after stock's in 4 rounds of 5, which
    # favoured them (a copy against a copy: 0.72-0.99). Each pair of rounds must run every
    # runner before every other once each way and right after each neighbour as often as
    # right before it; the orders repeat from run to run.
    names = ["stock", "converted", "rest", "stock layers", "converted layers"]
    for pair in range(8):
        first, second = suite.round_order(names, 2 * pair), suite.round_order(names, 2 * pair + 1)
        assert sorted(first) == sorted(names) and sorted(second) == sorted(names)
        for a in names:
            for b in names:
                if a != b:
                    assert (first.index(a) < first.index(b)) != (second.index(a) < second.index(b))
        assert set(zip(first, first[1:])) == set(zip(second[1:], second))
    assert [suite.round_order(names, r) for r in range(6)] == [suite.round_order(names, r) for r in range(6)]
    assert len({tuple(suite.round_order(names, 2 * p)) for p in range(8)}) > 1  # not one fixed order


def test_calls_per_round_fill_the_round_from_the_slowest_runner(monkeypatch):
    # A runner's one warm call is timed on a clock the test drives: 4 ms and 10 ms calls
    # fill a 30 ms round in 3 calls each (the slowest decides), never fewer than asked for;
    # without a round length the count asked for stands.
    clock = iter([0.0, 0.004, 1.0, 1.010] * 3)
    monkeypatch.setattr(suite.time, "perf_counter", lambda: next(clock))
    runs = [lambda: None, lambda: None]
    assert suite.calls_per_round(runs, 2, 30.0) == 3
    assert suite.calls_per_round(runs, 5, 30.0) == 5
    assert suite.calls_per_round(runs, 2, 0.0) == 2


def test_cases_on_request_run_only_when_named():
    assert suite.selected("") == suite.CASES
    assert [c.name for c in suite.selected("tiny,conv-bwd-d-3d")] == ["tiny", "conv-bwd-d-3d"]
    with pytest.raises(SystemExit, match="unknown case"):
        suite.selected("tiny,nope")


@pytest.mark.parametrize("kind", suite.OPS)
@pytest.mark.parametrize("fmt", list(suite.FORMATS))
def test_every_tiny_configuration_runs(kind, fmt):
    tiny = next(c for c in suite.CASES if c.name == "tiny")
    p = suite.problem(tiny, kind, "f32", fmt)
    assert p.function(*p.arrays, **p.kwargs, out=p.out) is p.out
    assert np.isfinite(p.out).all()


def test_the_floor_of_a_formulation_on_views_is_its_bare_op(monkeypatch):
    """A call run as another op on views of its arrays (here the kernel == stride
    MatMul, forced) hands the C++ floor that bare op on the same tensors; one
    Convolution per phase has no single partition to hand it."""
    case = suite.Case("patch", 2, 16, 3, (4, 4), 4, 4, 0)
    p = suite.problem(case, "ConvTranspose", "f32", "NXC")
    real = suite._plan.plan_call

    def planned(kind, names, arrays, kwargs, way_of=_lowering.matmul_way):
        cp = real(kind, names, arrays, kwargs)
        return dataclasses.replace(cp, way=way_of(cp.plan, cp.input_shapes, cp.native))
    monkeypatch.setattr(suite._plan, "plan_call", planned)
    text = suite.floor_input(p)
    assert text.startswith("kind MatMul\ndtype f32") and text.count("\ninput ") == 2
    depthwise = suite.problem(suite.Case("dw", 2, 8, 8, (4, 4), 4, 2, 1, groups=8), "ConvTranspose",
                              "f32", "NXC")
    monkeypatch.setattr(suite._plan, "plan_call", lambda *a: planned(*a, way_of=_lowering.polyphase_way))
    with pytest.raises(NotImplementedError, match="several partitions"):
        suite.floor_input(depthwise)


def test_one_measurement_and_its_report():
    tiny = next(c for c in suite.CASES if c.name == "tiny")
    p = suite.problem(tiny, "ConvTranspose", "f32", "NXC")
    r = suite.measure(p, None, None, rounds=1, target=1e-4)
    # the tiny problem runs as ConvolutionBackwardData (_lowering.TINY_FLOPS), on one
    # thread where OpenMP allows it (_plan.threads)
    assert r["functional"] > 0 and r["compiled"] > 0
    v = _version.linked_version()
    if (v, _lowering.avx512(cpu_isa())) in _lowering.MEASURED:
        assert r["lowering"].startswith("ConvolutionBackwardData over the same weights (faster on "
                                        f"oneDNN {v[0]}.{v[1]} for a tiny problem)")
    assert r["tune_warm"] > 0 and r["tune_first"] > 0
    r.update(case="tiny", kind="ConvTranspose", dtype="f32", format="NXC",
             gflops=suite.flops(p) / r["functional"] / 1e9)
    text = suite.report([r], {"f32": None}, 1.0, [], rounds=1)
    assert "| tiny | CT | f32 | NXC |" in text and math.isfinite(r["gflops"])


def test_the_low_precision_goal_compares_each_configuration_with_its_f32_twin():
    def row(case, dtype, seconds):
        return dict(case=case, kind="ConvTranspose", format="NXC", dtype=dtype, functional=seconds)

    rows = [row("tiny", "f32", 1.0), row("tiny", "bf16", 1.2), row("unet-2", "f32", 2.0),
            row("unet-2", "bf16", 5.0), row("depthwise", "f32", 1.0), row("depthwise", "bf16", 1.0)]
    [line] = suite.low_precision_goal(rows)
    assert line == ("* bf16 time / the same configuration's f32 time: median 1.20, worst 2.50; "
                    "over 2x: 1 of 3 (unet-2 CT NXC 2.50x); tiny 1.20-1.20.")
