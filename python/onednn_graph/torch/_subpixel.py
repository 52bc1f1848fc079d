"""A converted layer's inference call as the sub-pixel Convolution (``_impl.subpixel_form``),
its folded weights and bias gathered into that Convolution's once and compiled in as
constants (oneDNN packs them once), its activation fused: ``_inference._pack`` makes one
where the default rules choose the formulation (``_impl.lowering.SUBPIXEL_CHANNELS``)."""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from .._impl import (arrays as _arrays, as_f32 as _as_f32, compiled as _compiled, formed as _formed,
                     subpixel_form as _subpixel_form)

__all__ = ["SubpixelCall"]


class SubpixelCall:
    """A layer's call as the sub-pixel Convolution (``_impl.subpixel_form``) with its
    folded weights and bias as constants (gathered once: oneDNN packs them once) and unary
    `posts` fused (they act per element, so before the copy as after it). `op_attrs` are the
    ConvTranspose's (``_lowering.subpixel_way``'s); `src` the input's (shape, element
    strides) and `out_shape` the output's, in its data format; `weights` (C, O, k...)
    and `bias` (O,) or None, in `dtype`."""

    def __init__(self, op_attrs: dict[str, Any], dtype: str, src: tuple, out_shape: Sequence[int],
                 weights: np.ndarray, bias: Optional[np.ndarray],
                 posts: Sequence[tuple[str, dict[str, Any]]], threads: int, reason: str) -> None:
        self.fmt = op_attrs["data_format"]
        src = _formed.channels_last_meta(src, self.fmt)
        big = _formed.channels_last_meta((out_shape, out_shape), self.fmt)[0]
        n, *small, c = src[0]
        self.geometry = g = _subpixel_form.Geometry(op_attrs, weights.shape[2:], small, big[1:-1], n, c,
                                                    weights.shape[1])
        arrays = [g.weights(weights)] + ([] if bias is None else [g.bias(bias)])
        self.op = _as_f32.ChainOp("Convolution", g.attrs, dtype, [src] + [_compiled.meta(a) for a in arrays],
                                  (g.result_shape, _arrays.dense_strides(g.result_shape)),
                                  {i + 1: a for i, a in enumerate(arrays)}, threads=threads,
                                  reason=reason, posts=posts, in_f32=False)
        self.arrays = tuple(self.op.constants[i] for i in sorted(self.op.constants))
        self.numpy_dtype = np.dtype(_arrays.numpy_dtype(dtype))
        self.direct = self.op.direct_call(g.result_shape, self.numpy_dtype)

    def __call__(self, x: np.ndarray, target: np.ndarray) -> None:
        """Compute into `target` from `x`, both in the op's data format."""
        x = _formed.channels_last(x, self.fmt)
        result = np.empty(self.geometry.result_shape, self.numpy_dtype)
        if self.direct is None or self.direct.run(_compiled.stream(), (x,) + self.arrays, result) is None:
            self.op.execute((x,) + self.arrays, result)
        self.geometry.place(result, _formed.channels_last(target, self.fmt), self.op.threads)


def __dir__() -> list[str]:
    return list(__all__)
