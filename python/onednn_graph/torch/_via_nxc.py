"""NCX layers whose oneDNN calls run on channels-last copies (``Runner.via``).

oneDNN 3.2 computes a ConvTranspose and its gradients on NCX memory by reordering the
data into the kernel's layout and back inside the call, with reorders slower than its
kernels' own pace: on a Zen 4 a Mask R-CNN head's (32 x 256 x 14 x 14 -> 28 x 28, k = s =
2) forward took 24-25 ms on NCX arrays and 19.5-20 on NXC ones, the data gradient 22.5-24.4
against 16.4, the weight gradient 20.7-22.5 against 18.6-19.2 (its NHWC -> NCHW reorder of
the result alone 4.0 ms). The package's own transposing copy (``_core.cast``, 16 x 16
blocks in AVX-512 registers, 8 x 8 in AVX2 ones) moves that result in 0.8-1.3 ms. So where the rule holds, a
layer's call copies its NCX input into channels-last memory, runs the NXC call, and copies
the result back; its backward copies the result's gradient once for both gradient calls
and the weight gradient reads the forward's copy of the input. The copies move bits only:
the values are the NXC call's, which computes the same sums as the NCX one.

Memory: the copies that never leave a call (``scratch_nxc``) stay with the thread that
made them, one per role at the last shape it saw: for the Mask R-CNN head at 32 RoIs in
training about 65 MB (the result and its gradient, 26 MB each; the input and its
gradient, 6.4 MB each).
"""

from __future__ import annotations

import math
import os
import threading
from typing import Any, NamedTuple, Optional, Sequence

import numpy as np
import torch

from .. import _core
from .._impl import compiled as _compiled, lowering as _lowering
from . import _native

__all__ = ["axes_for", "may_route", "routed", "routed_in_graph", "to_nxc", "scratch_nxc", "from_nxc"]

_CHANNELS_LAST = {4: torch.channels_last, 5: torch.channels_last_3d}

#: (oneDNN version, ISA) where the rule (``routed``) was measured and holds -> (the fewest
#: output channels, the fewest forward FLOPs) routed there: AMD Zen 4 natively and capped
#: at AVX2. Below the channels the NCX call takes the sub-pixel or packed form
#: (``_impl.lowering``), or oneDNN's NXC kernel is no faster (AVX2: k4s2 512 -> 8 took
#: 1.02-1.14x routed); below the FLOPs the copies' fixed cost (tens of microseconds) or the
#: kernels decide (AVX2: a 134 MFLOP 3-D layer 1.01-1.18x).
ROUTED_ON: dict[tuple[tuple[int, int], str], tuple[int, int]] = {
    ((3, 2), "avx512_core_bf16"): (8, 1 << 27), ((3, 2), "avx2"): (16, 1 << 28)}
#: The most forward FLOPs per byte of the input and the result routed: where the data is
#: large for its arithmetic, oneDNN's reorders are a large part of an NCX call.
ROUTED_FLOPS_PER_BYTE = 160
#: The most forward FLOPs routed in a forward alone (without the input's gradient): the
#: Mask R-CNN head at 100 RoIs (10 GFLOP, an 80 MB result) ran 1.02-1.04x in inference
#: routed, where with both gradients it ran 0.90-0.94x.
ROUTED_ALONE_TO_FLOPS = 1 << 33
#: "1" routes every f32 NCX call of 2 or 3 spatial axes, "0" none (A/B measurements;
#: read at import, and by tests through this name).
FORCED = os.environ.get("ONEDNN_GRAPH_NXC_ROUTE", "")
#: What ``report`` adds to a routed layer's formulations.
NOTE = ", on channels-last copies of the NCX data (the package's transposing copy)"


def axes_for(call: Any, fmt: torch.memory_format, w: np.ndarray, alone: bool = False) -> Optional[tuple]:
    """The NXC axes where a layer's NCX calls of `call` (``_eager.Call``) with weights `w`
    run on channels-last copies (`alone`: a forward without the input's gradient, whose
    copy the gradients do not share), else None."""
    ndim = len(call.out_shape)
    if fmt != torch.contiguous_format or ndim not in _CHANNELS_LAST or w.dtype != np.float32 \
            or FORCED == "0" or (FORCED != "1" and not routed(call, w.shape, alone=alone)):
        return None
    return _native.nxc_axes(_CHANNELS_LAST[ndim], ndim)


def routed(call: Any, weight_shape: tuple, version: Optional[tuple[int, int]] = None,
           isa: Optional[str] = None, alone: bool = False) -> bool:
    """Whether an f32 NCX call runs on channels-last copies by default: on a CPU family
    where that was measured (``ROUTED_ON``, with its fewest channels and FLOPs), 2-D, groups
    1, no dilation or output padding, each axis's kernel equal to its stride without pads (a
    detection head's ``ConvTranspose2d(256, 256, 2, 2)``) or twice it with half the stride
    as pads (a keypoint head's ``ConvTranspose2d(512, 17, 4, 2, 1)``), at most
    ``ROUTED_FLOPS_PER_BYTE``; a forward `alone` (inference, a training step without the
    input's gradient) also at most ``ROUTED_ALONE_TO_FLOPS``.

    Measured on Zen 4 (one layer, converted, the route on against off, interleaved, 9 and
    15 rounds, two runs: ``docs/benchmarks/zen4-nxc-route.md``): k == s 2-D 0.89-0.97 in
    inference and 0.86-0.97 in a training step (the Mask R-CNN head at 8 and 32 RoIs, 128 and
    512 channels; 100 RoIs 1.02-1.04 in inference, 0.93-0.94 training); k4s2p1 with 8-17
    output channels 0.81-0.94 and 0.78-0.96 (the Keypoint R-CNN head 0.91-0.94 and
    0.79-0.80). Not routed: the DCGAN generator's layers (170-716 FLOPs per byte:
    0.97-1.04), k3s2 U-Net upsamplers (1.11-1.40: oneDNN's NXC kernel there is slower),
    3-D (k == s training 1.07 at 2 x 128 x 16^3), fewer channels (the 3-channel DCGAN
    output at batch 64: 1.07-1.08). Capped at AVX2 (two runs): the Keypoint R-CNN head
    0.77-0.83 in inference and 0.87-0.89 training, the Mask R-CNN head at 32 RoIs 0.90-0.91
    and 0.92-0.96 (8 RoIs 0.98-1.02), DPT-style k == s == 4 0.91-0.92 and 0.98-0.99; 3-D k ==
    s 0.52-0.76 at 2 x 128 x 16^3 but 1.01-1.18 at 1 x 64 x 16^3: not routed."""
    stride, pads_begin, pads_end, output_padding, dilation, groups = call.attrs
    family = _family(version, isa)
    kernel = weight_shape[2:]
    if family is None or len(call.out_shape) != 4 \
            or not _geometry_routed(family, call.attrs, kernel, call.out_shape[1]):
        return False
    n, co, spatial = call.out_shape[0], call.out_shape[1], call.out_shape[2:]
    inputs = [(o + pb + pe - k) // s + 1 for o, k, s, pb, pe in zip(spatial, kernel, stride, pads_begin, pads_end)]
    ci, positions, outputs = weight_shape[0], math.prod(inputs), math.prod(spatial)
    flops = 2 * n * ci * co * math.prod(kernel) * positions
    return family[1] <= flops <= (ROUTED_ALONE_TO_FLOPS if alone else flops) \
        and flops <= ROUTED_FLOPS_PER_BYTE * 4 * n * (ci * positions + co * outputs)


class _Problem(NamedTuple):
    """What ``routed`` reads of a call (``_eager.Call``'s fields of the same names)."""

    attrs: tuple
    out_shape: tuple


def _family(version: Optional[tuple[int, int]], isa: Optional[str]) -> Optional[tuple[int, int]]:
    """``ROUTED_ON``'s entry for a CPU family (by default this process's), or None."""
    return ROUTED_ON.get((version or _lowering.LINKED, isa or _lowering.HOST_ISA))


def _geometry_routed(family: tuple[int, int], attrs: tuple, kernel: Sequence[int], out_channels: int) -> bool:
    """``routed``'s rule on what a layer fixes (its attributes, kernel and output
    channels), for a CPU family's (fewest channels, fewest FLOPs) `family`."""
    stride, pads_begin, pads_end, output_padding, dilation, groups = attrs
    if groups != 1 or any(d != 1 for d in dilation) or any(output_padding) or out_channels < family[0]:
        return False
    return all((k == s and pb == pe == 0) or (k == 2 * s and s % 2 == 0 and pb == pe == s // 2)
               for k, s, pb, pe in zip(kernel, stride, pads_begin, pads_end))


def may_route(layer: Any, version: Optional[tuple[int, int]] = None, isa: Optional[str] = None) -> bool:
    """Whether some f32 NCX call of `layer` can run on channels-last copies by default on
    this CPU family (``routed``, before the input's size is known): ``report`` names the
    copies only for such layers."""
    if FORCED == "1":
        return len(layer.kernel_size) in (2, 3)
    family = _family(version, isa)
    if family is None or FORCED == "0" or len(layer.kernel_size) != 2:
        return False
    return _geometry_routed(family, _attrs(layer), layer.kernel_size, layer.out_channels)


def _attrs(layer: Any) -> tuple:
    """`layer`'s attributes as the package's calls take them (symmetric pads)."""
    return (list(layer.stride), list(layer.padding), list(layer.padding), list(layer.output_padding),
            list(layer.dilation), layer.groups)


def routed_in_graph(layer: Any, input: torch.Tensor) -> bool:
    """Whether `layer`'s inference call on `input` runs on channels-last copies by default
    (``routed``, a forward alone), asked where torch.compile's graph takes torch's
    convolution for a plain layer or the package's op (``_inference._torch_in_graph``):
    a routed call keeps the op, which computes it so. Keypoint R-CNN's head compiled (eval,
    f32, Zen 4, two in-process A/Bs of 21 rounds): 0.76 and 0.79x stock compiled with the
    op, 1.00 with torch's convolution (Inductor runs that channels-last on PyTorch's
    oneDNN). Not for a symbolic shape, autocast or another layout."""
    weight = layer.weight
    if FORCED == "0" or input.dim() not in _CHANNELS_LAST or input.dtype != torch.float32 \
            or weight.dtype != torch.float32 or torch.is_autocast_enabled("cpu"):
        return False
    shape = tuple(input.shape)
    if not all(type(d) is int for d in shape) or _native.memory_format(input, weight) != torch.contiguous_format:
        return False
    if FORCED == "1":
        return True
    attrs = _attrs(layer)
    out_shape = _native.conv_transpose_shape(input, weight, *attrs)
    return routed(_Problem(attrs, tuple(out_shape)), tuple(weight.shape), alone=True)


def to_nxc(t: torch.Tensor, axes: tuple, role: Optional[str] = None) -> np.ndarray:
    """An NXC copy of NCX `t`: this thread's scratch array for `role`, or (None) a new
    one that may outlive the call (the forward's input, kept for the weight gradient)."""
    if role is None:
        target = np.empty(tuple(t.shape[i] for i in axes), np.float32)
    else:
        target = scratch_nxc(role, tuple(t.shape), axes)
    _core.cast(_native.view(t).transpose(axes), target, _compiled.busy_threads())
    return target


def scratch_nxc(role: str, shape: tuple, axes: tuple) -> np.ndarray:
    """This thread's NXC f32 array of `shape` for `role`, kept between calls: a copy that
    never leaves the call (a result before its copy back, the gradient's copy) writes
    into memory it touched before. A new block of tens of MB is fresh pages, each a
    fault on first touch: the Mask R-CNN head's 26 MB result, moved in 1.3 ms, then took
    several more."""
    kept = getattr(_local, "arrays", None)
    if kept is None:
        kept = _local.arrays = {}
    nxc_shape = tuple(shape[i] for i in axes)
    array = kept.get(role)
    if array is None or array.shape != nxc_shape:
        array = kept[role] = np.empty(nxc_shape, np.float32)
    return array


_local = threading.local()


def from_nxc(source: np.ndarray, target: np.ndarray, axes: tuple) -> None:
    """Copies the NXC view `source` into `target`, an NCX array."""
    _core.cast(source, target.transpose(axes), _compiled.busy_threads())
