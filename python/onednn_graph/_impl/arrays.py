"""Caller arrays: the one dtype table, conversion to NumPy views, and checks on type,
dtype, layout, overlap.

This is the one place where objects from other libraries become NumPy arrays.
Accepted, in this order, all without copying:

* ``numpy.ndarray`` (bf16 as ``ml_dtypes.bfloat16``);
* CPU PyTorch tensors (f32, f16, bf16; ``requires_grad`` ones are detached).
  bf16 is read as int16 and re-viewed as ``ml_dtypes.bfloat16``, because
  NumPy's DLPack import has no bfloat16;
* any other DLPack exporter (``__dlpack__``, e.g. JAX CPU arrays), through
  ``numpy.from_dlpack``;
* objects with ``__array_interface__`` / ``__array_struct__``, or the buffer
  protocol (``memoryview``-able).

Lists, scalars and other sequences are refused (they would be copied, and a
typo such as passing a shape for an array would go unnoticed).

Inputs are used in place whenever oneDNN can describe their memory (any
positive, item-aligned strides); anything else (negative or zero strides,
misaligned views) is copied once into a C-contiguous array. Outputs are never
copied: an ``out`` array must be writeable, of the exact shape and dtype, laid
out so oneDNN can describe it, and must not share memory with an input.
"""

from __future__ import annotations

import math
import sys
from typing import Any, Sequence

import ml_dtypes
import numpy as np

from . import attrs as _attrs

# --- the one dtype table: oneDNN's dtype names <-> NumPy / ml_dtypes types ---

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


# --- caller arrays ---

_ACCEPTED = ("numpy.ndarray, a CPU torch.Tensor, or an object with __dlpack__, "
             "__array_interface__ or the buffer protocol")


def _torch_view(name: str, tensor: Any, torch: Any) -> np.ndarray:
    """A NumPy view of a CPU torch tensor's memory (never a copy)."""
    if tensor.device.type != "cpu":
        raise TypeError(f"{name} is a torch tensor on {tensor.device}; oneDNN here runs on "
                        "the CPU: move it with .cpu() first")
    if tensor.is_conj() or tensor.is_neg():
        raise TypeError(f"{name} is a torch tensor with a lazy conjugate/negative bit; "
                        "call .resolve_conj()/.resolve_neg() first")
    tensor = tensor.detach()
    if tensor.dtype == torch.bfloat16:
        # Same 2-byte elements, same strides: a reinterpretation, not a copy.
        return tensor.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return tensor.numpy()


def _is_buffer(value: Any) -> bool:
    try:
        memoryview(value)
    except TypeError:
        return False
    return True


#: The dtypes of the ops' data tensors, spelled for messages: "f32 (float32), ...".
_DATA_DTYPES = ", ".join(f"{n} ({DTYPES[n].name})" for n in FLOATING)


def to_numpy(name: str, value: Any) -> np.ndarray:
    """A NumPy array over the memory of a caller's array object `name` (no copy)."""
    if isinstance(value, np.ndarray):
        return value
    torch = sys.modules.get("torch")  # never imported here: a tensor implies it is loaded
    if torch is not None and isinstance(value, torch.Tensor):
        return _torch_view(name, value, torch)
    if isinstance(value, (str, bytes)) or value is None:
        raise TypeError(f"{name} must be an array ({_ACCEPTED}), got {type(value).__name__}")
    from_dlpack = getattr(np, "from_dlpack", None)  # NumPy >= 1.23
    if hasattr(value, "__dlpack__") and from_dlpack is not None:
        try:
            return from_dlpack(value)
        except (TypeError, BufferError, RuntimeError, ValueError) as exc:
            if not (hasattr(value, "__array_interface__") or _is_buffer(value)):
                raise TypeError(f"{name}: NumPy cannot import it through DLPack ({exc})") from None
    if (hasattr(value, "__array_interface__") or hasattr(value, "__array_struct__")
            or _is_buffer(value)):
        return np.asarray(value)
    raise TypeError(f"{name} must be an array ({_ACCEPTED}), got {type(value).__name__}")


def as_input(name: str, value: Any) -> np.ndarray:
    """The array oneDNN will read for input `name` (the caller's memory, when usable)."""
    array = to_numpy(name, value)
    try:
        dtype_name(array.dtype)
    except TypeError:
        # Only the dtypes a data tensor takes: s32 and u8/s8 have their own rules below.
        raise TypeError(f"{name}: unsupported dtype {array.dtype}; the ops take "
                        f"{_DATA_DTYPES}") from None
    if array.dtype == np.int32:
        raise TypeError(f"{name}: dtype int32 (s32) is only used for shape inputs; "
                        "data tensors take f32, bf16 or f16")
    if dtype_name(array.dtype) in QUANTIZED:
        raise TypeError(f"{name}: dtype {array.dtype} is quantized data: give it with its scale "
                        "and zero point, onednn_graph.quant.per_tensor(array, scale, zero_point) "
                        "(or quant.per_channel)")
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
    """True when oneDNN's strided layout can describe the array's memory: positive
    strides in whole items, nested as oneDNN 3.2's ``memory_desc_strides_check`` takes
    them (axes ordered by stride, each stride at least the span of the axes inside it:
    every other row of an odd number of rows interleaves channels, and is refused)."""
    flags = array.flags
    if flags.c_contiguous and flags.aligned:  # the common case, without a loop
        return True
    if not flags.aligned:
        return False
    least = array.itemsize
    # axes of one position are skipped, as oneDNN does; ties: the shorter axis inside
    for step, size in sorted((s, d) for s, d in zip(array.strides, array.shape) if d > 1):
        if step < least or step % array.itemsize:
            return False
        least = step * size
    return True


def dense_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Element strides of a C-contiguous array of `shape` (a zero dim counts as 1)."""
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step)
        step *= max(int(d), 1)
    return tuple(reversed(strides))


def spatial_axes(data_format: str, ndim: int) -> range:
    """The axes of a data tensor's spatial positions in `data_format`."""
    return range(1, ndim - 1) if data_format == "NXC" else range(2, ndim)


def crop(array: np.ndarray, data_format: str,
         amounts: Sequence[tuple[int, int]]) -> np.ndarray:
    """A view of `array` without the first and last `amounts[i]` positions of spatial
    axis i (empty where they cover it): the tensor an op runs on when pads leave
    positions outside every kernel window (``_lowering.NativeOp.crop``)."""
    index = [slice(None)] * array.ndim
    for axis, (lead, trail) in zip(spatial_axes(data_format, array.ndim), amounts):
        index[axis] = slice(lead, max(array.shape[axis] - trail, lead))
    return array[tuple(index)]


def fill_cropped(target: np.ndarray, data_format: str, amounts: Sequence[tuple[int, int]],
                 bias: Any = None) -> None:
    """Write the positions of output `target` that `crop` leaves out: outside every
    kernel window, they are ConvTranspose's `bias` (per channel), or zeros."""
    value = np.zeros((), target.dtype) if bias is None else (
        bias if data_format == "NXC" else bias.reshape(bias.shape + (1,) * (target.ndim - 2)))
    for axis, (lead, trail) in zip(spatial_axes(data_format, target.ndim), amounts):
        for ends in (slice(0, lead), slice(max(target.shape[axis] - trail, 0), None)):
            index: list[Any] = [slice(None)] * target.ndim
            index[axis] = ends
            target[tuple(index)] = value


def element_strides(array: np.ndarray) -> list[int]:
    """Strides in elements; axes of extent <= 1 get their C-contiguous stride
    (their stride is never used, and oneDNN rejects some odd values)."""
    strides, step = [], 1
    for s, d in zip(reversed(array.strides), reversed(array.shape)):
        strides.append(s // array.itemsize if d > 1 else step)
        step *= max(d, 1)
    return strides[::-1]


def check_no_grad(name: str, value: Any) -> None:
    """Refuse writing into a torch tensor that requires grad (autograd cannot see the write)."""
    if getattr(value, "requires_grad", False):
        raise ValueError(f"{name} is a torch tensor that requires grad; autograd cannot track "
                         "writes into it (pass a tensor without requires_grad)")


def check_out(out: Any, shape: tuple[int, ...], dtype: np.dtype,
              inputs: list[np.ndarray]) -> np.ndarray:
    """Validate a caller's `out` before anything runs; return a NumPy view of its memory.

    `out` may be anything :func:`to_numpy` accepts (a torch tensor is written
    in place; one that requires grad is refused, as PyTorch refuses it for
    its own ``out=``).
    """
    check_no_grad("out", out)
    view = to_numpy("out", out)
    if view.dtype != dtype:
        raise TypeError(f"out has dtype {view.dtype}, the result has dtype {dtype}")
    if view.shape != tuple(shape):
        raise ValueError(f"out has shape {view.shape}, the result has shape {tuple(shape)}")
    if not view.flags.writeable:
        raise ValueError("out is read-only")
    if not describable(view):
        raise ValueError("out must have positive, item-aligned strides (oneDNN writes it in place)")
    for i, array in enumerate(inputs):
        # may_share_memory compares bounds (cheap); shares_memory settles the rare overlap.
        if np.may_share_memory(view, array) and np.shares_memory(view, array):
            raise ValueError(f"out shares memory with input {i}; oneDNN would read what it writes")
    return view
