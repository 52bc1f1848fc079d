"""A strided ConvTranspose as one stride-1 Convolution whose channels are the output phases.

Output position ``s*q + r`` of a ConvTranspose with stride s (ConvolutionBackwardData
is the same op) is a stride-1 Convolution of the input at q over the taps ``s*m + r +
pad`` of the kernel (``_lowering.subpixel_geometry``). Taking every phase r at once,
as ``prod(s) * O`` output channels over the union of their taps (zeros where a phase
has none), is one Convolution whose result is the output with its phases folded into
channels ("sub-pixel", as PixelShuffle undoes it); the package's copy puts each phase
in place. oneDNN's strided kernels hold the output channels in vector lanes, so a layer
with few of them (a GAN generator's last layer: 64 -> 3 channels) leaves most lanes
empty; here the lanes hold ``prod(s)`` times as many at the price of ``prod(taps * s /
kernel)`` times the multiplications, with ``taps = ceil(kernel / s)`` (phases counted
where each one's kernel positions start on a multiple of the stride: 1 for kernel 4,
stride 2, pad 1, where counted from position 0 it would be 2.25 in 2-D), and a border of
positions the copy leaves out.

The arithmetic is oneDNN's; the package gathers the weights into the wider kernel and
tiles the bias (per call on the op's own path, ``SubpixelForm``; once per weight change
in ``onednn_graph.torch``'s inference mode, ``torch._subpixel.SubpixelCall``, with its
epilogue fused).
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Optional, Sequence

import numpy as np

from .. import _core, shapes
from . import arrays as _arrays, formed as _formed, lowering as _lowering


class Geometry:
    """The Convolution that computes op `attrs` (``_lowering.subpixel_way``'s) for an
    input of `small` and an output of `big` spatial sizes, with `channels` output channels:
    its attributes (channels-last), its weights' shape (OIX: phase-major output channels),
    its result's shape (channels-last, dense) and per axis the kernel position each tap
    reads in each phase (``_lowering.subpixel_geometry``)."""

    def __init__(self, attrs: dict[str, Any], kernel: Sequence[int], small: Sequence[int],
                 big: Sequence[int], batch: int, in_channels: int, channels: int) -> None:
        per_axis = [_lowering.subpixel_geometry(s, k, pb, x, y)
                    for s, k, pb, x, y in zip(attrs["strides"], kernel, attrs["pads_begin"], small, big)]
        if any(g is None for g in per_axis):
            raise ValueError("the sub-pixel form needs the Convolution's pads >= 0")
        self.strides, self.kernel = tuple(attrs["strides"]), tuple(kernel)
        self.taps = [g[0] for g in per_axis]  # type: ignore[index]
        self.first = tuple(g[4] for g in per_axis)  # type: ignore[index]  # phase 0 at position -first
        rank = len(kernel)
        # The kernel position each (phase, tap) reads, per axis, shaped (phase_0, tap_0,
        # phase_1, tap_1, ...) on its own two axes: ``weights`` gathers with them.
        self.index = []
        for axis, taps in enumerate(self.taps):
            shape = [1] * (2 * rank)
            shape[2 * axis], shape[2 * axis + 1] = len(taps), len(taps[0])
            self.index.append(np.asarray(taps).reshape(shape))
        self.phases = math.prod(self.strides)
        self.attrs = dict(strides=[1] * len(kernel), dilations=[1] * len(kernel), auto_pad="None",
                          pads_begin=[g[1] for g in per_axis], pads_end=[g[2] for g in per_axis],  # type: ignore[index]
                          groups=1, data_format="NXC", weights_format="OIX")
        self.weights_shape = (self.phases * channels, in_channels, *[len(t[0]) for t in self.taps])
        self.result_shape = (batch, *[g[3] for g in per_axis], self.phases * channels)  # type: ignore[index]
        # the last axis's copy blocks (``place``), the same on every call
        self.row_blocks = row_blocks(self.strides[-1], self.first[-1], big[-1], self.result_shape[-2])

    def weights(self, canonical: np.ndarray) -> np.ndarray:
        """The Convolution's weights from the op's as (C, O, k...): output channel
        ``phase * O + o``, input channel c, tap j is ``canonical[c, o, taps[phase][j]]``,
        zero where no position lands."""
        padded = np.zeros(canonical.shape[:2] + tuple(k + 1 for k in self.kernel), canonical.dtype)
        padded[(slice(None), slice(None)) + tuple(slice(0, k) for k in self.kernel)] = canonical
        rank = len(self.kernel)
        gathered = padded[(slice(None), slice(None)) + tuple(self.index)]  # (C, O, r0, j0, r1, j1, ...)
        phases_first = gathered.transpose([2 + 2 * i for i in range(rank)] + [1, 0] +
                                          [3 + 2 * i for i in range(rank)])
        return np.ascontiguousarray(phases_first).reshape(self.weights_shape)

    def bias(self, bias: np.ndarray) -> np.ndarray:
        """The op's bias for each phase's channels."""
        return np.tile(bias, self.phases)

    def place(self, result: np.ndarray, output: np.ndarray, threads: int = 0) -> None:
        """Copy the Convolution's `result` (``result_shape``) into `output`, a
        channels-last view (N, Y..., O): phase r of position q to position ``s*q + r -
        first``, where that is in the output. Along the last spatial axis, where the
        output's rows lie, a position's phases are adjacent positions: they go together
        (``row_blocks``), so each copy writes whole rows; along the others one strided copy
        per phase. (DCGAN's last layer, 16 x 3 x 64 x 64 in NCX: 0.18-0.19 ms, where one
        copy per phase, writing every second position of each row, took 1.03 ms.) On at most
        `threads` threads (0: all), the count the Convolution was compiled for: on a busy
        machine the load-aware count (``_compiled.busy_threads``), where a copy on every
        thread waits for the ones other processes hold."""
        rank = len(self.strides)
        n, *spatial, o = output.shape
        # result (N, Q..., phases..., O): its channels are phase-major
        shaped = result.reshape((n, *result.shape[1:1 + rank], *self.strides, o))
        for phase in itertools.product(*[range(s) for s in self.strides[:-1]]):
            source: list[Any] = [slice(None)]
            target: list[Any] = [slice(None)]
            for r, s, first, y in zip(phase, self.strides, self.first, spatial):
                start = (r - first) % s  # the output's first position of phase r
                q = (start + first - r) // s
                source.append(slice(q, q + len(range(start, y, s))))
                target.append(slice(start, y, s))
            rows = shaped[tuple(source) + (slice(None),) + phase]  # (N, Y'..., Q, s, O)
            out = output[tuple(target)]  # (N, Y'..., X, O)
            steps = [step // out.itemsize for step in out.strides]
            outer = list(zip(out.shape[:-2], steps[:-2]))
            for q0, q1, r0, r1, x0 in self.row_blocks:  # (positions x0... as (q, r): r adjacent)
                span = _formed.view(out[..., x0:, :], outer + [(q1 - q0, (r1 - r0) * steps[-2]),
                                                             (r1 - r0, steps[-2]), (o, steps[-1])])
                _core.cast(rows[..., q0:q1, r0:r1, :], span, threads)


def row_blocks(stride: int, first: int, width: int, q: int) -> list[tuple[int, int, int, int, int]]:
    """The last axis of the sub-pixel copy as blocks (q0, q1, r0, r1, x0): positions q0 <=
    q < q1 of the result, phases r0 <= r < r1 of each, to output positions x0 onwards
    (``s*q + r - first``, in order). The positions whose every phase is in the output
    (``0 <= s*q - first`` and ``s*q + s - 1 - first < width``) are one block; the first
    and last positions, of which only some phases are, a block each. `q`: the result's
    positions."""
    full_from = -(-first // stride)
    full_to = min((width + first) // stride, q)
    blocks = [(full_from, full_to, 0, stride, stride * full_from - first)] if full_to > full_from else []
    for p in sorted({0, full_to}):  # (the first and the last position, where partial)
        if full_from <= p < full_to or p >= q:
            continue
        r0, r1 = max(0, first - stride * p), min(stride, width + first - stride * p)
        if r1 > r0:
            blocks.append((p, p + 1, r0, r1, stride * p + r0 - first))
    return sorted(blocks, key=lambda block: block[4])


def _geometry(attrs: dict[str, Any], inputs: Sequence[tuple], output: tuple) -> tuple[Geometry, Any]:
    """The op's sub-pixel Geometry and its weights' parts (``_formed.weights_parts``)."""
    fmt = attrs["data_format"]
    parts = _formed.weights_parts(attrs["op"], attrs["weights_format"], inputs[1][0], inputs[1][1], 1)
    kernel = [e for e, _ in parts["k"]]
    small, big = inputs[0][0], output[0]
    geometry = Geometry(attrs, kernel, shapes.data_spatial(fmt, small), shapes.data_spatial(fmt, big),
                        small[0], parts["c"][0], parts["o"][0])
    return geometry, parts


class SubpixelForm(_formed.Formed):
    """A strided ConvTranspose / ConvolutionBackwardData (groups 1) as one stride-1
    channels-last Convolution with every output phase as channels, into a scratch array
    that the package copies into place (``_lowering.subpixel_way`` writes `attrs`)."""

    f32_only = True

    def __init__(self, kind: str, attrs: dict[str, Any], dtype: str, inputs: Sequence[tuple],
                 output: tuple, constants: Optional[dict[int, np.ndarray]] = None,
                 input_order: tuple[int, ...] = (), threads: int = 0, compile: bool = True) -> None:
        super().__init__(kind, attrs, dtype, inputs, output, constants)
        self.fmt = attrs["data_format"]
        self.geometry, self.parts = _geometry(attrs, inputs, output)
        g = self.geometry
        self.bias = len(inputs) > 2
        metas = [_formed.channels_last_meta(inputs[0], self.fmt),
                 (g.weights_shape, _arrays.dense_strides(g.weights_shape))]
        if self.bias:
            metas.append(((g.weights_shape[0],), (1,)))
        self._build("Convolution", g.attrs, "f32", metas,
                    (g.result_shape, _arrays.dense_strides(g.result_shape)), threads, compile)

    def _scratch_arrays(self) -> list[Any]:
        return [np.empty(self.geometry.result_shape, np.float32)]

    def _run(self, inputs: Sequence[np.ndarray], output: np.ndarray, scratch: list[Any]) -> None:
        p, g = self.parts, self.geometry
        canonical = _formed.view(inputs[1], [p["c"], p["o"], *p["k"]])  # (C, O, k...)
        args = [_formed.channels_last(inputs[0], self.fmt), g.weights(canonical)]
        if self.bias:
            args.append(g.bias(inputs[2]))
        self.inner.execute(args, scratch[0])
        g.place(scratch[0], _formed.channels_last(output, self.fmt), self.threads)
