"""Who converts between f32 and bf16/f16 in an f32 chain (``_impl.as_f32``):
oneDNN's reorder, or the package.

A bf16/f16 op that runs in f32 spends its time in its TypeCasts where oneDNN's
only reorder for the pair is its scalar ``simple:any``: oneDNN 3.2 on AVX2 takes
33-50 ns per element to round f32 to bf16 there, against 0.1-0.6 ns for the
package's vectorized conversion (``_core.cast``, cpp/cast_kernels.hpp), which
gives bit for bit what ml_dtypes and NumPy give (upcasts exact, downcasts rounded
to nearest even). Which reorder oneDNN would run is asked of the linked library
for the very tensors of the cast (``_core.reorder_impl``), never read off a table
of CPUs: a ``jit:`` reorder stays oneDNN's, any other (``simple:any``, a
reference one) is replaced by the package's conversion. Below ``SMALL_ELEMENTS``
the package converts even where oneDNN's reorder is jit: there the TypeCast's own
partition costs more than the conversion (``python benchmarks/casts.py``, Sapphire
Rapids, oneDNN 3.2 ``jit:uni``: oneDNN's TypeCast takes 3.2-4.5x the package's time at
4096 elements, 1.03-1.32x at 65536, 1.04-1.08x at 2**20; at 2**24 0.92-1.06x).

Where it differs from oneDNN 3.2's own TypeCast, the package's conversion is the
IEEE one, as ml_dtypes' and NumPy's: 3.2 flushes bf16 subnormal results to zero
(``simple:any``, and ``jit:uni`` where it uses the AVX512-BF16 instruction), its
``simple:any`` turns -0 into +0, and both quiet a signalling NaN
(tests/native/test_casts.py pins each).
"""

from __future__ import annotations

import functools
import math
from typing import Any, NamedTuple, Sequence

from .. import _core
from . import arrays as _arrays
from ..errors import Error


class Converter(NamedTuple):
    """Who converts one TypeCast: ``"package"`` or ``"oneDNN"``; ``reorder`` is the
    name of the reorder oneDNN would run for it (or why it has none)."""

    who: str
    reorder: str

    @property
    def by_package(self) -> bool:
        return self.who == "package"


#: Tensors of fewer elements are converted by the package whatever oneDNN's reorder is.
SMALL_ELEMENTS = 1 << 20


@functools.lru_cache(maxsize=1024)
def _converter(source: str, target: str, shape: tuple[int, ...], source_strides: tuple[int, ...],
               target_strides: tuple[int, ...]) -> Converter:
    try:
        reorder = _core.reorder_impl(source, target, list(shape), list(source_strides),
                                     list(target_strides))
    except Error as exc:
        return Converter("package", f"none ({exc.message})")
    small = math.prod(shape) < SMALL_ELEMENTS
    return Converter("oneDNN" if reorder.startswith("jit") and not small else "package", reorder)


def converter(source: Any, target: Any) -> Converter:
    """Who converts logical tensor `source` into `target` (strided, of one known shape;
    one of them f32, the other bf16 or f16)."""
    return _converter(source.dtype, target.dtype, tuple(source.shape), tuple(source.strides),
                      tuple(target.strides))


def describe(converters: Sequence[Converter]) -> str:
    """Who converts a chain's casts, for ``Operation.lowering``."""
    reorders = ", ".join(sorted({c.reorder for c in converters}))
    if all(c.by_package for c in converters):
        return f"converted by the package ({_core.cast_path()}; oneDNN's reorder here: {reorders})"
    if not any(c.by_package for c in converters):
        return f"converted by oneDNN ({reorders})"
    return (f"converted by the package where oneDNN's reorder is not jit or the tensor is small, "
            f"else by oneDNN ({reorders})")


# The tensor summary() asks about: the f32 chain's usual cast, between C-contiguous
# tensors of a data-sized shape.
_TYPICAL_SHAPE = (8, 64, 64, 32)


def summary() -> list[dict[str, str]]:
    """Per conversion an f32 chain makes (bf16/f16 to f32 and back), on C-contiguous
    tensors of a typical shape (of ``SMALL_ELEMENTS`` or more): the reorder oneDNN has
    for it on this CPU (``onednn_reorder``) and who converts (``by``: ``"package"`` or
    ``"oneDNN"``), with the package's code path (``package_path``: avx512, avx2 or
    portable). Smaller tensors the package converts."""
    dense = tuple(_core.LogicalTensor(0, "f32", _TYPICAL_SHAPE).strides)  # C-contiguous
    rows = []
    for low in _arrays.LOW_PRECISION:
        for source, target in ((low, "f32"), ("f32", low)):
            c = _converter(source, target, _TYPICAL_SHAPE, dense, dense)
            rows.append({"from": source, "to": target, "onednn_reorder": c.reorder, "by": c.who,
                         "package_path": _core.cast_path()})
    return rows
