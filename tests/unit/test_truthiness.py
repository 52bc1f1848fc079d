"""Result objects that answer yes or no are true exactly when the answer is yes (issue 31):
``assert og.tolerance.compare(...)`` used to pass on a failed comparison."""

from __future__ import annotations

import numpy as np
import pytest

import onednn_graph as og
from onednn_graph import tolerance
from onednn_graph._tools import runner


def compare(got: np.ndarray) -> tolerance.Comparison:
    ref = np.array([1.0, 2.0, 3.0])
    return tolerance.compare(got, lambda a: a, [ref], {}, "f32", terms=1)


def test_a_failed_comparison_is_false_and_says_why() -> None:
    bad = compare(np.array([1.0, 2.5, 3.0], np.float32))
    assert not bad.ok and not bad
    with pytest.raises(AssertionError):
        assert bad
    assert repr(bad).startswith("<Comparison FAILED: max abs error 0.5 exceeds tolerance at (1,)")


def test_an_agreeing_comparison_is_true() -> None:
    good = compare(np.array([1.0, 2.0, 3.0], np.float32))
    assert good.ok and good
    assert repr(good).startswith("<Comparison ok: ")


def test_the_public_name_reaches_it() -> None:
    assert og.tolerance.Comparison is tolerance.Comparison


def check(got: np.ndarray) -> runner.OpCheck:
    return runner.OpCheck(3, "ConvTranspose", "f32", 1, compare(got))


@pytest.mark.parametrize("passed, checks, truth, says", [
    (True, [np.array([1.0, 2.0, 3.0])], True, "<Result passed: 1 op(s) within tolerance>"),
    (False, [np.array([1.0, 2.5, 3.0])], False, "<Result FAILED: op 3 ConvTranspose f32: max abs"),
    (None, [], False, "<Result not checked (perf mode)"),
], ids=["passed", "failed", "perf"])
def test_a_runner_result_is_true_exactly_when_it_passed(passed: bool | None, checks: list[np.ndarray],
                                                        truth: bool, says: str) -> None:
    result = runner.Result(passed, [check(np.asarray(c, np.float32)) for c in checks])
    assert bool(result) is truth
    assert all(bool(c) is (passed is True) for c in result.checks)
    assert repr(result).startswith(says)
