"""How far oneDNN's result may be from the float64 reference, per element.

Both sides read the same rounded inputs. oneDNN accumulates in f32 (for bf16
and f16 too) and rounds once to the output dtype; the reference sums exactly
in float64 and rounds once. So for every output element y::

    |got - ref| <= 2*u(dtype)*|y| + terms * 2**-24 * sum_i |x_i w_i|

two roundings to the dtype (u is its unit roundoff: a correctly rounded result
is within u*|y|), plus the standard bound for a float32 sum of ``terms``
products (Higham, Accuracy and Stability of Numerical Algorithms, 3.1).
``sum_i |x_i w_i|`` is the reference applied to the inputs' absolute values.
The tests, the support-matrix script and the command-line driver all use it.

Exact mode (the driver's ``--mode exact``) fills small integers, as benchdnn
does, chosen by :func:`exact_range` so that every partial sum is an integer
below 2**24: oneDNN's f32 accumulator then holds the exact sum and both sides
round the same number to the dtype, so the results must be identical.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from . import shapes
from ._impl import registry as _registry

__all__ = ["UNIT_ROUNDOFF", "accumulation_terms", "Comparison", "bound", "compare", "exact_range"]

UNIT_ROUNDOFF = {"f32": 2.0**-24, "bf16": 2.0**-8, "f16": 2.0**-11}
F32_EXACT_INTEGERS = 2**24  # every integer up to this is an f32


def accumulation_terms(plan: shapes.Plan, input_shapes: Sequence[Sequence[int]]) -> int:
    """An upper bound on the number of products summed into one output element
    (the op's ``terms`` rule in ``_impl.registry``)."""
    a = plan.attrs
    rule = _registry.SPECS[a.kind].terms
    if rule == "positions":  # backward weights: over the batch and every diff_dst position
        diff_dst = input_shapes[1]
        return diff_dst[0] * int(np.prod(shapes.data_spatial(a.data_format, diff_dst)))
    # Over input 0's channels in a group and the kernel taps (+ ConvTranspose's bias).
    channels = shapes.data_channels(a.data_format, input_shapes[0]) // a.groups
    return channels * int(np.prod(plan.kernel)) + (rule == "channels+bias")


class Comparison:
    """The outcome of comparing oneDNN's result with the reference: true exactly when
    every element is within tolerance (``ok``), so ``assert compare(...)`` checks it.

    >>> ref = np.array([1.0, 2.0])
    >>> bool(Comparison(np.array([1.0, 2.5]), ref, np.full(2, 1e-6)))
    False
    """

    def __init__(self, got: np.ndarray, ref: np.ndarray, tol: np.ndarray) -> None:
        err = np.abs(got.astype(np.float64) - ref)
        # NaN where the reference has NaN at the same place counts as equal.
        both_nan = np.isnan(ref) & np.isnan(got.astype(np.float64))
        err = np.where(both_nan, 0.0, err)
        self.max_abs = float(np.nanmax(err, initial=0.0)) if err.size else 0.0
        scale = np.maximum(np.abs(ref), 1e-30)
        self.max_rel = float(np.nanmax(err / scale, initial=0.0)) if err.size else 0.0
        bad = ~(err <= tol)
        self.ok = not bool(bad.any())
        self.worst = None
        if not self.ok:
            self.worst = tuple(int(i) for i in np.unravel_index(np.argmax(np.where(bad, err - tol, -np.inf)), err.shape))
        self.got, self.ref, self.tol = got, ref, tol

    def __bool__(self) -> bool:
        return self.ok

    def __repr__(self) -> str:
        return f"<Comparison {'ok' if self.ok else 'FAILED'}: {self}>"

    def __str__(self) -> str:
        if self.ok:
            return f"max abs error {self.max_abs:.3g}, max rel error {self.max_rel:.3g}: within tolerance"
        w = self.worst
        return (f"max abs error {self.max_abs:.3g} exceeds tolerance at {w}: got {self.got[w]}, "
                f"reference {self.ref[w]}, tolerance {self.tol[w]:.3g}")


def bound(ref: np.ndarray, mag: np.ndarray, dtype: str, terms: int) -> np.ndarray:
    """The bound above, per element: ``2*u(dtype)*|ref| + terms * 2**-24 * mag``, for the
    reference `ref` and `mag`, the reference on the inputs' absolute values."""
    return 2 * UNIT_ROUNDOFF[dtype] * np.abs(ref) + terms * 2.0**-24 * mag


def compare(got: np.ndarray, ref_fn: Callable[..., np.ndarray], args: Sequence[Any],
            kwargs: dict[str, Any], dtype: str, terms: int, exact: bool = False) -> Comparison:
    """oneDNN's `got` against ``ref_fn(*args, **kwargs)`` with the bound above
    (with `exact`, a bound of 0: see the module docstring)."""
    ref = ref_fn(*args, **kwargs).astype(np.float64)
    if exact:
        tol = np.zeros_like(ref)
    else:
        mag = ref_fn(*[np.abs(np.asarray(a).astype(np.float64)) for a in args],
                     **kwargs).astype(np.float64)
        tol = bound(ref, mag, dtype, terms) + 1e-30
    if got.shape != ref.shape:
        raise ValueError(f"result shape {got.shape} differs from the reference's {ref.shape}")
    return Comparison(got, ref, tol)


def exact_range(terms: int) -> int:
    """The largest r <= 4 such that sums of `terms` products of integers in
    [-r, r] stay below 2**24 (so an f32 accumulator is exact); at least 1."""
    r = 4
    while r > 1 and terms * r * r >= F32_EXACT_INTEGERS:
        r -= 1
    return r


def __dir__() -> list[str]:
    return list(__all__)
