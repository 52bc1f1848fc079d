"""Checks on caller arrays: type, dtype, memory layout, writeability, overlap.

Inputs are used in place whenever oneDNN can describe their memory (any
positive, item-aligned strides); anything else (negative or zero strides,
misaligned views) is copied once into a C-contiguous array. Outputs are never
copied: an ``out`` array must be writeable, of the exact shape and dtype, laid
out so oneDNN can describe it, and must not share memory with an input.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import _attrs, _dtypes


def as_input(name: str, value: Any) -> np.ndarray:
    """The array oneDNN will read for input `name` (the caller's, when usable)."""
    if isinstance(value, (str, bytes)) or value is None or not hasattr(value, "__array_interface__") and not isinstance(value, np.ndarray):
        raise TypeError(f"{name} must be an array (numpy.ndarray or an object with "
                        f"__array_interface__), got {type(value).__name__}")
    array = np.asarray(value)
    try:
        _dtypes.dtype_name(array.dtype)
    except TypeError as exc:
        raise TypeError(f"{name}: {exc}") from None
    if array.dtype.name == "int32" or array.dtype == np.int32:
        raise TypeError(f"{name}: dtype int32 (s32) is only used for shape inputs; "
                        "data tensors take f32, bf16 or f16")
    if describable(array):
        return array
    try:
        return np.ascontiguousarray(array)
    except MemoryError:
        raise MemoryError(f"{name}: oneDNN cannot read this layout in place (strides "
                          f"{array.strides}) and a contiguous copy ({array.size} elements) "
                          "does not fit in memory") from None


def allocate(kind: str, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """A new array for `kind`'s result; sizes no machine can hold are refused first."""
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes > _attrs.INT64_MAX:
        raise ValueError(f"{kind}: the result of shape {shape} would hold {nbytes} bytes, "
                         "more than 2**63-1 bytes (oneDNN's sizes are int64)")
    try:
        return np.empty(shape, dtype)
    except MemoryError:
        raise MemoryError(f"{kind}: cannot allocate the result of shape {shape} "
                          f"({nbytes} bytes)") from None


def describable(array: np.ndarray) -> bool:
    """True when oneDNN's strided layout can describe the array's memory."""
    return all(s > 0 and s % array.itemsize == 0 for s, d in zip(array.strides, array.shape)
               if d > 1) and array.flags.aligned


def element_strides(array: np.ndarray) -> list[int]:
    """Strides in elements; axes of extent <= 1 get their C-contiguous stride
    (their stride is never used, and oneDNN rejects some odd values)."""
    strides, step = [], 1
    for s, d in zip(reversed(array.strides), reversed(array.shape)):
        strides.append(s // array.itemsize if d > 1 else step)
        step *= max(d, 1)
    return strides[::-1]


def check_out(out: Any, shape: tuple[int, ...], dtype: np.dtype,
              inputs: list[np.ndarray]) -> np.ndarray:
    """Validate a caller's `out` array before anything runs."""
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a numpy.ndarray, got {type(out).__name__}")
    if out.dtype != dtype:
        raise TypeError(f"out has dtype {out.dtype}, the result has dtype {dtype}")
    if out.shape != tuple(shape):
        raise ValueError(f"out has shape {out.shape}, the result has shape {tuple(shape)}")
    if not out.flags.writeable:
        raise ValueError("out is read-only")
    if not describable(out):
        raise ValueError("out must have positive, item-aligned strides (oneDNN writes it in place)")
    for i, array in enumerate(inputs):
        if np.shares_memory(out, array):
            raise ValueError(f"out shares memory with input {i}; oneDNN would read what it writes")
    return out
