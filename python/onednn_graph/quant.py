"""Quantized arrays and the quantization of a result: the int8 form of ConvTranspose.

oneDNN's int8 graphs dequantize u8/s8 inputs, run the op in f32 terms and
quantize its result (``Dequantize`` / ``Quantize`` in its operation
documentation); its fusion policy compiles the whole chain, post-ops included,
into one int8 kernel. Here a quantized input is its integer array with its
quantization, and the result's quantization is asked for with ``quantize=``::

    x = quant.per_tensor(x_u8, scale=0.02, zero_point=128)
    w = quant.per_channel(w_s8, scales=w_scales, axis=2)       # XOI: O is axis -2
    y_u8 = og.conv_transpose(x, w, bias_f32, strides=2, post_ops=[post.relu()],
                             quantize=quant.to("u8", scale=0.05, zero_point=3))

The arithmetic is oneDNN's: ``real = (q - zero_point) * scale`` and
``q = saturate(round_half_to_even(real / scale) + zero_point)``;
``og.reference.dequantize`` / ``og.reference.quantize`` are the float64 forms.

What oneDNN 3.2's int8 ConvTranspose takes (measured on it, see
docs/user-guide.md "int8"): src u8 or s8 quantized per tensor; weights s8,
symmetric (zero point 0), per tensor or per output channel (weights axis O:
-2 for XOI, 1 for IOX); bias and post-op operands f32 (or quantized operands,
dequantized in the graph); the result f32, or u8/s8 quantized per tensor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence, Union

import numpy as np

__all__ = ["Quantized", "Quantization", "per_tensor", "per_channel", "to", "DTYPES"]

#: The integer dtypes of quantized data: oneDNN's name -> NumPy's.
DTYPES = {"u8": np.dtype(np.uint8), "s8": np.dtype(np.int8)}
_RANGES = {"u8": (0, 255), "s8": (-128, 127)}


@dataclass(frozen=True)
class Quantization:
    """How reals map to integers of oneDNN dtype `dtype` ("u8" or "s8"): one scale and
    zero point (``axis`` None), or one per position of `axis`."""

    dtype: str
    scales: tuple[float, ...]
    zero_points: tuple[int, ...]
    axis: Optional[int] = None

    def __post_init__(self) -> None:
        if self.dtype not in DTYPES:
            raise ValueError(f"quantized dtype must be u8 or s8, got {self.dtype!r}")
        for s in self.scales:
            if not (math.isfinite(s) and s > 0):
                raise ValueError(f"scales must be finite and > 0, got {s!r}")
        lo, hi = _RANGES[self.dtype]
        for z in self.zero_points:
            if not lo <= z <= hi:
                raise ValueError(f"zero points of {self.dtype} data must be in [{lo}, {hi}], got {z}")
        if len(self.zero_points) not in (1, len(self.scales)):
            raise ValueError(f"{len(self.scales)} scales but {len(self.zero_points)} zero points "
                             "(give one, or one per scale)")
        if self.axis is None and len(self.scales) != 1:
            raise ValueError("a per-tensor quantization has one scale")

    @property
    def attrs(self) -> dict[str, Any]:
        """The attributes of oneDNN's Dequantize / Quantize op for this quantization."""
        zps = list(self.zero_points) * (len(self.scales) if len(self.zero_points) == 1 else 1)
        return {"qtype": "per_tensor" if self.axis is None else "per_channel",
                "axis": 1 if self.axis is None else self.axis,
                "scales": list(self.scales), "zps": zps}

    def range(self) -> tuple[int, int]:
        """The dtype's smallest and largest integer (saturation bounds)."""
        return _RANGES[self.dtype]


def _from_attrs(attrs: dict, dtype: str) -> Quantization:
    """The quantization of `dtype` data that a Dequantize / Quantize op's `attrs` describe
    (``Quantization.attrs`` read back): how graph_json checks a loaded graph's ops and the
    graph reference reads them, one reading for both."""
    per_channel = attrs.get("qtype", "per_tensor") == "per_channel"
    return Quantization(dtype, tuple(float(s) for s in attrs["scales"]),
                        tuple(int(z) for z in attrs.get("zps", [0])),
                        int(attrs.get("axis", 1)) if per_channel else None)


@dataclass(frozen=True)
class Quantized:
    """Integer `data` (uint8 / int8 array, or anything the functional API reads) with its
    quantization: the array oneDNN dequantizes."""

    data: Any = field(compare=False)
    quantization: Quantization


def _scales(name: str, values: Any) -> tuple[float, ...]:
    flat = np.asarray(values, dtype=object).reshape(-1)
    out = []
    for v in flat:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise TypeError(f"{name} must be numbers, got {v!r}")
        out.append(float(v))
    if not out:
        raise ValueError(f"{name} must not be empty")
    return tuple(out)


def _zero_points(values: Any) -> tuple[int, ...]:
    flat = np.asarray(values, dtype=object).reshape(-1)
    out = []
    for v in flat:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"zero points must be ints, got {v!r}")
        out.append(int(v))
    return tuple(out)


def _dtype_of(data: Any) -> str:
    dtype = getattr(data, "dtype", None)
    for name, dt in DTYPES.items():
        if dtype == dt:
            return name
    raise TypeError(f"quantized data must be a uint8 or int8 array, got dtype {dtype}")


def per_tensor(data: Any, scale: float, zero_point: int = 0) -> Quantized:
    """`data` (uint8 or int8) with one scale and zero point: ``real = (q - zero_point) * scale``.

    >>> import numpy as np
    >>> from onednn_graph import quant
    >>> quant.per_tensor(np.array([0, 128, 255], np.uint8), 0.5, 128).quantization.attrs
    {'qtype': 'per_tensor', 'axis': 1, 'scales': [0.5], 'zps': [128]}
    """
    return Quantized(data, Quantization(_dtype_of(data), _scales("scale", scale),
                                        _zero_points(zero_point)))


def per_channel(data: Any, scales: Sequence[float], zero_points: Union[int, Sequence[int]] = 0,
                *, axis: int) -> Quantized:
    """`data` with one scale (and zero point) per position of `axis`."""
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"axis must be an int, got {axis!r}")
    shape = np.shape(data)
    if not -len(shape) <= axis < len(shape):
        raise ValueError(f"axis {axis} is out of range for data of {len(shape)} dimensions")
    q = Quantization(_dtype_of(data), _scales("scales", scales), _zero_points(zero_points),
                     int(axis) % len(shape))
    if len(q.scales) != shape[q.axis]:
        raise ValueError(f"{len(q.scales)} scales for axis {axis} of size {shape[q.axis]}")
    return Quantized(data, q)


def to(dtype: str, scale: float, zero_point: int = 0) -> Quantization:
    """The quantization of a result: ``quantize=quant.to("u8", 0.05, 3)`` makes
    ``og.conv_transpose`` return `dtype` integers ``saturate(rint(y / scale) + zero_point)``."""
    return Quantization(dtype, _scales("scale", scale), _zero_points(zero_point))


def __dir__() -> list[str]:
    return list(__all__)
