"""Few output channels as a Convolution that computes several output positions per
channel.

A stride-1 ConvTranspose (or ConvolutionBackwardData, the same op) with O output
channels is the forward Convolution of its input with the flipped kernel; oneDNN's
kernels hold the output channels in vector lanes, so with O = 3 most of every vector
is empty (conv_bwd_d_3d.json, 32 -> 3 channels: 15 GFLOP/s on an AVX2 EPYC). Its
output positions along the last spatial axis, taken r at a time, can stand in for
channels instead: output channel ``j*O + o`` of a Convolution with stride r there,
over a kernel r - 1 positions wider whose slice ``j`` is the flipped kernel shifted by
j (zeros elsewhere), is output position ``r*X + j`` of channel o. In channels-last
memory those r*O channels of position X are exactly the r positions' O channels, so
that Convolution writes the caller's output in place. The arithmetic is oneDNN's; the
package only spreads the weights over the wider kernel (a copy with zeros, per call:
r * O * C * prod(kernel) elements) and tiles ConvTranspose's bias r times. It takes
(r + k - 1) / k more multiplications along that axis for r times as many used lanes.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from .. import _core
from . import arrays as _arrays, formed as _formed


class PackedForm(_formed.Formed):
    """A stride-1, few-output-channel ConvTranspose / ConvolutionBackwardData as one
    channels-last Convolution writing ``attrs["positions"]`` output positions per
    channel (``_lowering.packed_way`` writes `attrs`; ``op`` names the op): in place
    into channels-last output, through a scratch array and the package's copy into
    any other."""

    f32_only = True

    def __init__(self, kind: str, attrs: dict[str, Any], dtype: str, inputs: Sequence[tuple],
                 output: tuple, constants: Optional[dict[int, np.ndarray]] = None,
                 input_order: tuple[int, ...] = (), threads: int = 0, compile: bool = True) -> None:
        super().__init__(kind, attrs, dtype, inputs, output, constants)
        r = self.positions = attrs["positions"]
        w_shape, w_strides = inputs[1]
        self.weights = _formed.weights_parts(self.op_kind, attrs["weights_format"], w_shape, w_strides, 1)
        small_channels, big_channels = self.weights["c"][0], self.weights["o"][0]
        self.kernel = [e for e, _ in self.weights["k"]]
        # The Convolution runs channels-last: channels-first arrays go to it as
        # channels-last views (oneDNN reads such a source where it lies).
        self.fmt = attrs["data_format"]
        src = _formed.channels_last_meta(inputs[0], self.fmt)
        # The output as the Convolution's dst: the last spatial axis in blocks of r,
        # each block's positions and channels one channel axis (channels-last: they
        # lie together when the position's stride spans the channels).
        shape, strides = _formed.channels_last_meta(output, self.fmt)
        merged = strides[-2] == big_channels * strides[-1]
        self.dst = (shape[:-2] + (shape[-2] // r, r * big_channels),
                    strides[:-2] + (strides[-2] * r, strides[-1]))
        self.direct = merged
        if not merged:  # the package's scratch, copied out after the Convolution
            dense = _arrays.dense_strides(self.dst[0])
            self.dst = (self.dst[0], dense)
        self.wide = (r * big_channels, small_channels, *self.kernel[:-1], self.kernel[-1] + r - 1)
        self.bias = len(inputs) > 2
        conv = dict(strides=[1] * (len(self.kernel) - 1) + [r], pads_begin=list(attrs["pads_begin"]),
                    pads_end=list(attrs["pads_end"]), dilations=[1] * len(self.kernel),
                    auto_pad="None", groups=1, data_format="NXC", weights_format="OIX")
        metas = [src, (self.wide, _arrays.dense_strides(self.wide))]
        if self.bias:
            metas.append(((r * big_channels,), (1,)))
        self._build("Convolution", conv, "f32", metas, self.dst, threads, compile)

    def _scratch_arrays(self) -> list[Any]:
        # The wide weights (zeros where no tap lands, which stay zero: each call
        # writes the same slices), and the output when it cannot be written in place.
        wide = np.zeros(self.wide, np.float32)
        return [wide, None if self.direct else np.empty(self.dst[0], np.float32)]

    def _spread(self, weights: np.ndarray, wide: np.ndarray) -> None:
        """Write the flipped kernel into `wide`: slice j shifted by j along the last axis."""
        w = self.weights
        canonical = _formed.view(weights, [w["c"], w["o"], *w["k"]])  # (C, O, k...)
        flipped = canonical[(slice(None), slice(None)) + (slice(None, None, -1),) * len(self.kernel)]
        per_position = np.swapaxes(flipped, 0, 1)  # (O, C, k...)
        o, k = per_position.shape[0], self.kernel[-1]
        for j in range(self.positions):
            wide[j * o:(j + 1) * o, ..., j:j + k] = per_position

    def _run(self, inputs: Sequence[np.ndarray], output: np.ndarray, scratch: list[Any]) -> None:
        wide, result = scratch
        self._spread(inputs[1], wide)
        output = _formed.channels_last(output, self.fmt)
        args = [_formed.channels_last(inputs[0], self.fmt), wide]
        if self.bias:
            args.append(np.tile(inputs[2], self.positions))
        if self.direct:
            self.inner.execute(args, _formed.view(output, list(zip(*self.dst))))
            return
        self.inner.execute(args, result)
        shape, strides = output.shape, [s // output.itemsize for s in output.strides]
        r, o = self.positions, shape[-1]
        blocks = list(zip(shape[:-2], strides[:-2])) + [
            (shape[-2] // r, strides[-2] * r), (r, strides[-2]), (o, strides[-1])]
        _core.cast(result.reshape([e for e, _ in blocks]), _formed.view(output, blocks), self.threads)
