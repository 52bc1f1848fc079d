"""A strided ConvTranspose as one stride-1 Convolution per output phase.

Output position ``s*i + a`` of a ConvTranspose with stride s (ConvolutionBackwardData
is the same op) receives only the kernel taps ``ky = (a + pb) mod s + s*t``: each of
the ``prod(s)`` phases ``a`` is a stride-1 Convolution of the input with those taps,
reversed, writing every s-th output position, a strided view of the caller's output
that oneDNN writes in place. Where 3.2 runs the strided op on blocked copies (depthwise
channels-last ConvTranspose: ``jit_dw``), its depthwise stride-1 Convolution reads and
writes channels-last memory where it lies (``brdgmm_dw``). The arithmetic is oneDNN's;
the package copies each phase's taps into a small dense weights array per call.
"""

from __future__ import annotations

import itertools
from typing import Any, Optional, Sequence

import numpy as np

from .. import _core
from . import arrays as _arrays, compiled as _compiled, formed as _formed, lowering as _lowering
from ..errors import UnsupportedError


class PolyphaseForm(_formed.Formed):
    """A strided ConvTranspose / ConvolutionBackwardData as ``prod(strides)`` stride-1
    Convolutions, each writing its phase of the output in place (``_lowering.polyphase_way``
    writes `attrs`: ``op``, ``strides``, ``pads_begin``, groups and formats)."""

    f32_only = True

    def __init__(self, kind: str, attrs: dict[str, Any], dtype: str, inputs: Sequence[tuple],
                 output: tuple, constants: Optional[dict[int, np.ndarray]] = None,
                 input_order: tuple[int, ...] = (), threads: int = 0, compile: bool = True) -> None:
        super().__init__(kind, attrs, dtype, inputs, output, constants)
        g, fmt, strides = attrs["groups"], attrs["data_format"], attrs["strides"]
        w_shape, w_strides = inputs[1]
        self.weights = _formed.weights_parts(self.op_kind, attrs["weights_format"], w_shape, w_strides, g)
        kernel = [e for e, _ in self.weights["k"]]
        small = _formed.small_parts(fmt, inputs[0][0], inputs[0][1], g)
        out_shape, out_strides = (tuple(v) for v in output)
        big = _formed.data_axes(fmt, out_shape, out_strides)[2]
        axes = list(_arrays.spatial_axes(fmt, len(out_shape)))
        # Per axis, each phase's (taps, pads begin and end, size): _lowering.polyphase_way
        # offered this formulation only where every phase has them.
        per_axis = []
        for s, k, pb, (x, _), (y, _) in zip(strides, kernel, attrs["pads_begin"], small["x"], big):
            phases = [_lowering.phase_geometry(s, k, pb, x, y, a) for a in range(s)]
            per_axis.append([p for p in phases if p is not None])
            if len(per_axis[-1]) < s:
                raise UnsupportedError("the polyphase form needs taps and pads >= 0 in every phase")
        self.bias = len(inputs) > 2
        src = _core.LogicalTensor(0, "f32", inputs[0][0], inputs[0][1])
        bias = [_core.LogicalTensor(1, "f32", inputs[2][0], inputs[2][1])] if self.bias else []
        # Per phase: its taps per axis, its slice of the output, its compiled Convolution.
        self.phases: list[tuple[list[list[int]], tuple[slice, ...], Any]] = []
        self.docs: list[Any] = []  # the Convolutions as handed to oneDNN (reproducers)
        for phase in itertools.product(*[range(s) for s in strides]):
            geometry = [per_axis[i][a] for i, a in enumerate(phase)]
            taps = [geom[0] for geom in geometry]
            sub_shape = (self.weights["o"][0] * g, self.weights["c"][0], *[len(t) for t in taps])
            index = [slice(None)] * len(out_shape)
            view_shape, view_strides = list(out_shape), list(out_strides)
            for axis, a, s, geom in zip(axes, phase, strides, geometry):
                index[axis] = slice(a, None, s)
                view_shape[axis], view_strides[axis] = geom[3], out_strides[axis] * s
            conv = dict(strides=[1] * len(kernel), dilations=[1] * len(kernel), auto_pad="None",
                        pads_begin=[geom[1] for geom in geometry], pads_end=[geom[2] for geom in geometry],
                        groups=g, data_format=fmt, weights_format="OIX")
            sub_meta = (sub_shape, _arrays.dense_strides(sub_shape))
            out_meta = (tuple(view_shape), tuple(view_strides))
            n = 2 + 2 * len(self.docs)
            self.docs.append(_core.Op(len(self.docs), "Convolution",
                                      [src, _core.LogicalTensor(n, "f32", *sub_meta)] + bias,
                                      [_core.LogicalTensor(n + 1, "f32", *out_meta)], conv, "Convolution"))
            metas = [tuple(inputs[0]), sub_meta] + ([tuple(inputs[2])] if self.bias else [])
            op = _compiled.CompiledOp("Convolution", conv, "f32", metas, out_meta, threads=threads) \
                if compile else None
            self.phases.append((taps, tuple(index), op))
            if op is not None:
                self.compile_seconds += op.compile_seconds
                self.threads = op.threads
        self.inputs, self.output = [src] + bias, None

    def graph_ops(self) -> list[Any]:
        """The phases' Convolutions, one op each, reading the one input (reproducers)."""
        return self.docs

    def _scratch_arrays(self) -> list[Any]:
        # One dense weights array per phase: each call copies its taps in.
        return [np.empty(op.inputs[1].shape, np.float32) for _, _, op in self.phases]

    def _run(self, inputs: Sequence[np.ndarray], output: np.ndarray, scratch: list[Any]) -> None:
        w = self.weights
        canonical = _formed.view(inputs[1], [w["g"], w["c"], w["o"], *w["k"]])  # (g, C/g, O/g, k...)
        for (taps, index, op), sub in zip(self.phases, scratch):
            picked = canonical
            for axis, t in enumerate(taps):
                picked = np.take(picked, t, axis=3 + axis)
            # (g, C/g, O/g, taps...) -> OIX with groups: (g * O/g, C/g, taps...)
            g, c, o = picked.shape[:3]
            np.copyto(sub.reshape((g, o, c) + sub.shape[2:]), np.swapaxes(picked, 1, 2))
            op.execute([inputs[0], sub] + list(inputs[2:]), output[index])
