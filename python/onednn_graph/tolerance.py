"""How close oneDNN must be to the float64 reference, and the comparison itself.

Both sides read the same inputs, already rounded to the dtype. oneDNN
accumulates in f32 (for bf16/f16 too) and rounds the result once to the
dtype; the reference sums exactly in float64 and also rounds once to the
dtype. So per element

    |got - ref| <= 2*u(dtype)*|ref| + terms * 2**-24 * sum|x_i w_i|

(two roundings to the dtype's unit roundoff u, plus the standard bound for an
f32 sum of `terms` products; sum|x_i w_i| is the reference applied to the
inputs' absolute values). In exact mode the inputs are small integers whose
every partial sum is an integer below 2**24, so oneDNN's f32 accumulator holds
the exact sum and both sides round the same number to the dtype: the results
must be identical, in every dtype.
The tests (tests/conftest.py) and the command-line driver both use this.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

# Unit roundoff: a correctly rounded result is within u*|y| of the exact value.
UNIT_ROUNDOFF = {"f32": 2.0**-24, "bf16": 2.0**-8, "f16": 2.0**-11}
F32_EXACT_INTEGERS = 2**24  # every integer up to this is an f32


@dataclass(frozen=True)
class Comparison:
    """The outcome of comparing oneDNN's result with the reference."""

    passed: bool
    max_abs: float      # max |got - ref|
    max_rel: float      # max |got - ref| / |ref| over elements with ref != 0
    worst: tuple        # index of the element furthest beyond (or closest to) its tolerance
    message: str


def tolerance(ref: np.ndarray, mag: np.ndarray, dtype: str, terms: int,
              exact: bool = False) -> np.ndarray:
    """Per-element bound on |got - ref| (see the module docstring)."""
    if exact:
        return np.zeros_like(ref)
    return 2 * UNIT_ROUNDOFF[dtype] * np.abs(ref) + terms * 2.0**-24 * mag + 1e-30


def compare(got: np.ndarray, ref_fn: Callable[..., np.ndarray], args: Sequence[np.ndarray],
            kwargs: dict[str, Any], dtype: str, terms: int, exact: bool = False) -> Comparison:
    """oneDNN's `got` against ``ref_fn(*args, **kwargs)`` (the float64 reference)."""
    ref = ref_fn(*args, **kwargs).astype(np.float64)
    if got.shape != ref.shape:
        return Comparison(False, np.inf, np.inf, (), f"shape {got.shape} differs from the "
                          f"reference's {ref.shape}")
    mag = ref_fn(*[np.abs(a.astype(np.float64)) for a in args], **kwargs).astype(np.float64)
    tol = tolerance(ref, mag, dtype, terms, exact)
    err = np.abs(got.astype(np.float64) - ref)
    if not err.size:
        return Comparison(True, 0.0, 0.0, (), "empty result")
    worst = np.unravel_index(np.argmax(err - tol), err.shape)
    nonzero = np.abs(ref) > 0
    max_rel = float(np.max(err[nonzero] / np.abs(ref[nonzero]))) if nonzero.any() else 0.0
    passed = bool(np.all(err <= tol))  # NaN in got fails here
    message = (f"max error {err.max():.3g} {'within' if passed else 'exceeds'} tolerance; "
               f"worst at {tuple(int(i) for i in worst)}: got {got[worst]}, reference "
               f"{ref[worst]}, tol {tol[worst]:.3g}")
    return Comparison(passed, float(err.max()), max_rel, worst, message)


def exact_range(terms: int) -> int:
    """The largest r <= 4 such that sums of `terms` products of integers in
    [-r, r] stay below 2**24 (so an f32 accumulator is exact); at least 1."""
    r = 4
    while r > 1 and terms * r * r >= F32_EXACT_INTEGERS:
        r -= 1
    return r
