"""The one dtype table: oneDNN's dtype names <-> NumPy / ml_dtypes types."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

# oneDNN name -> NumPy dtype. bf16 has no NumPy type of its own: ml_dtypes
# provides it (the same type JAX and PyTorch's NumPy bridge use).
DTYPES: dict[str, np.dtype] = {
    "f32": np.dtype(np.float32),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "f16": np.dtype(np.float16),
    "s32": np.dtype(np.int32),
    # Quantized data (onednn_graph.quant): read by Dequantize, written by Quantize.
    "u8": np.dtype(np.uint8),
    "s8": np.dtype(np.int8),
}

#: The floating-point dtypes the ops take, and those of them below f32, which run in
#: f32 between TypeCasts where the CPU's oneDNN has no kernel (_impl.kernels, as_f32).
LOW_PRECISION = ("bf16", "f16")
FLOATING = ("f32",) + LOW_PRECISION
#: The integer dtypes of quantized data, which the ops take only through onednn_graph.quant.
QUANTIZED = ("u8", "s8")

_NAMES = {dt: name for name, dt in DTYPES.items()}

SUPPORTED = ", ".join(f"{name} ({dt.name})" for name, dt in DTYPES.items())


def dtype_name(dtype: Any) -> str:
    """oneDNN's name ("f32", "bf16", "f16", "s32", "u8", "s8") for a dtype-like object.

    Accepts those names, NumPy dtypes, scalar types and anything ``np.dtype``
    understands; raises TypeError for any other dtype, listing the supported
    ones.
    """
    if isinstance(dtype, str) and dtype in DTYPES:
        return dtype
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"unsupported dtype {dtype!r}; supported: {SUPPORTED}") from None
    name = _NAMES.get(dt)
    if name is None or not dt.isnative:
        raise TypeError(f"unsupported dtype {dt.str if not dt.isnative else dt.name}"
                        f"; supported: {SUPPORTED}")
    return name


def numpy_dtype(dtype: Any) -> np.dtype:
    """The NumPy dtype for a oneDNN dtype name or dtype-like object."""
    return DTYPES[dtype_name(dtype)]
