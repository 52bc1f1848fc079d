"""A ConvTranspose, ConvolutionBackwardData or ConvTransposeBackwardWeights as two calls
over its big tensor's channels.

oneDNN's strided kernels hold output channels in vector lanes (16 f32 lanes with
AVX-512): a layer with a few channels over a multiple of a vector, such as Keypoint
R-CNN's 17 keypoints, pays a whole vector's time for them (17 channels take what 32
take, twice what 16 take). Each output channel is its own sum over the input channels
and the kernel, so the channels in whole vectors and the rest can be two calls, each on
views of the weights, the bias and the output, and each run the way the package runs such
a call by default: the first natively, the rest in its few-channel (sub-pixel) form.
ConvTransposeBackwardWeights's weights gradient for an output channel reads only that
channel of diff_dst, and oneDNN 3.2's NCX kernel takes a whole vector's time for the rest
too (1-2 channels alone take a fifth of it). The arithmetic is oneDNN's; the package only
slices (``_lowering.channel_split_way`` says where; benchmarks/channel_blocks.py measures
it).
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import numpy as np

from .. import _core
from . import formed as _formed, registry as _registry

#: Builds one part: (kind, public attributes, input metas, output meta, threads,
#: compile) -> an op with ``execute(inputs, output)`` and ``graph_ops()`` (``_impl.call``).
PartBuilder = Callable[[str, dict, list, tuple, int, bool], Any]

Meta = tuple[tuple[int, ...], tuple[int, ...]]


def weights_channel_axis(kind: str, weights_format: str, rank: int) -> int:
    """The weights' axis of the big tensor's channels: O for the ConvTranspose family
    (IOX, OIX, XIO, XOI), I for ConvolutionBackwardData (the convolution's input)."""
    letter = "O" if _registry.SPECS[kind].transposed else "I"
    axis = 0
    for fmt_letter in weights_format:
        if fmt_letter == letter:
            return axis
        axis += rank - 2 if fmt_letter == "X" else 1
    raise ValueError(f"weights_format {weights_format!r} has no {letter}")


def _sliced(meta: Sequence[Sequence[int]], axis: int, count: int) -> Meta:
    shape, strides = (tuple(v) for v in meta)
    return shape[:axis] + (count,) + shape[axis + 1:], strides


def _index(rank: int, axis: int, part: slice) -> tuple:
    return tuple(part if i == axis else slice(None) for i in range(rank))


class Described:
    """A part that runs natively, described only (a reproducer): the op as oneDNN would
    get it, on tensors of the part's layouts (inputs in the order the op takes them)."""

    def __init__(self, kind: str, attrs: dict[str, Any], metas: list, out: tuple,
                 input_order: tuple[int, ...]) -> None:
        taken = [metas[i] for i in input_order] if input_order else metas
        self.inputs = [_core.LogicalTensor(i, "f32", m[0], m[1]) for i, m in enumerate(taken)]
        self.output = _core.LogicalTensor(len(taken), "f32", out[0], out[1])
        self.op = _core.Op(0, kind, self.inputs, [self.output], attrs, kind)

    def graph_ops(self) -> list[Any]:
        return [self.op]


class SplitForm(_formed.Formed):
    """The op (``_lowering.channel_split_way`` writes `attrs`: ``op``, ``split`` and the
    op's attributes) as its first ``split`` big-tensor channels and the rest (output
    channels; ConvTransposeBackwardWeights: its diff_dst's, the weights' O), each a call
    of its own that `build` makes (the package's default way for it) on views of the
    caller's arrays."""

    f32_only = True

    def __init__(self, kind: str, attrs: dict[str, Any], dtype: str, inputs: Sequence[tuple],
                 output: tuple, constants: Optional[dict[int, np.ndarray]] = None,
                 input_order: tuple[int, ...] = (), threads: int = 0, compile: bool = True,
                 build: Optional[PartBuilder] = None) -> None:
        super().__init__(kind, attrs, dtype, inputs, output, constants)
        if build is None:
            raise ValueError("the split form needs a builder for its parts")
        public = {k: v for k, v in attrs.items() if k not in ("form", "op", "split")}
        data_axis = 1 if attrs["data_format"] == "NCX" else len(inputs[0][0]) - 1
        # The split axis of each input (None: whole) and of the output: ConvTranspose and
        # ConvolutionBackwardData split their weights and bias and their result's
        # channels; ConvTransposeBackwardWeights its diff_dst's channels and its result's,
        # the weights' O axis.
        if _registry.SPECS[self.op_kind].primitive_tensors[1] < 0:  # its result is the weights
            axes: list = [None, data_axis]
            out_axis = weights_channel_axis(self.op_kind, attrs["weights_format"], len(output[0]))
        else:
            axes = [None, weights_channel_axis(self.op_kind, attrs["weights_format"], len(inputs[1][0])), 0]
            out_axis = data_axis
        split, channels = attrs["split"], tuple(output[0])[out_axis]
        shape_attr = _registry.SPECS[self.op_kind].shape_attr  # dst_shape, weights_shape: per part
        self.parts: list[tuple[Any, list, tuple]] = []
        for part in (slice(0, split), slice(split, channels)):
            count = part.stop - part.start
            metas = [tuple(m) if axis is None else _sliced(m, axis, count) for m, axis in zip(inputs, axes)]
            out = _sliced(output, out_axis, count)
            part_attrs = dict(public, **({shape_attr: list(out[0])} if shape_attr else {}))
            op = build(self.op_kind, part_attrs, metas, out, threads, compile)
            self.parts.append((op, [None if axis is None else _index(len(m[0]), axis, part)
                                    for m, axis in zip(inputs, axes)], _index(len(output[0]), out_axis, part)))
            self.compile_seconds += getattr(op, "compile_seconds", 0.0)
            self.threads = getattr(op, "threads", 0) or self.threads
        first = self.parts[0][0]
        self.inputs, self.output = list(getattr(first, "inputs", [])), getattr(first, "output", None)

    def graph_ops(self) -> list[Any]:
        """The first part's ops as handed to oneDNN (reproducers): the channels in whole
        vectors, the call's bulk."""
        first = self.parts[0][0]
        if hasattr(first, "graph_ops"):
            return list(first.graph_ops())
        return [_core.Op(0, first.kind, first.inputs, [first.output], first.attrs, first.kind)]

    def _scratch_arrays(self) -> list[Any]:
        return []  # (each part keeps its own)

    def _run(self, inputs: Sequence[np.ndarray], output: np.ndarray, scratch: list[Any]) -> None:
        for op, indexes, out_index in self.parts:
            op.execute([a if i is None else a[i] for a, i in zip(inputs, indexes)], output[out_index])
