"""Whose kernel computes a converted layer's call: oneDNN's (the package's) or torch.nn's.

A user converts a model to make it faster, so a layer runs torch.nn's own kernel at a
shape where oneDNN 3.2 has nothing faster, and ``report()`` says so. Two sources decide,
once per layer, input shape, dtype, memory format and whether the call records gradients
(``_layer`` keeps the answer in the layer's plan):

* **Measured** (``convert(model, tune=True)``, or ``onednn_graph.tuning.set_tuning(True)``
  for every layer): the first such call times both kernels on its own tensors in
  interleaved rounds (the forward, and the backward where the call records gradients, on
  detached copies: no ``.grad`` changes), and keeps torch.nn's only where it wins clearly
  on a quiet machine (``_impl.tuning.verdict``, as ``compile_op(tune=True)`` decides). The
  verdict is stored in the tuning database (per machine, with PyTorch's version in the
  problem), so each shape is measured once per machine.
* **The default rule** (``torch_nn_by_default``), where nothing was measured: f32 calls
  where a call's fixed cost decides (tiny problems), where oneDNN 3.2's strided kernels
  for few output channels lose (calls without gradients), and small 3-D training calls
  with kernel == stride, on the CPU families measured; and in a model, small 1-D and 2-D
  training calls in f32 and small 2-D calls in bf16.

``ONEDNN_GRAPH_TORCH_KERNELS=off`` in the environment (read at each decision) holds every
call to oneDNN's kernel: no default rule, no measurement.

Either way the arithmetic is a real kernel's: oneDNN's, or the stock layer's own (which
the model ran before it was converted).
"""

from __future__ import annotations

import math
import os
import weakref
from typing import Any, Callable, NamedTuple, Optional

import torch

from .._impl import lowering as _lowering, tuning as _tuning, tuning_db as _tuning_db
from .._impl.call import tuning_enabled
from . import _library

__all__ = ["by_rule", "decide", "describe", "plain_in_graph", "training_in_graph", "tune",
           "torch_nn_by_default"]

ONEDNN, TORCH_NN = "oneDNN", "torch.nn"
ENV = "ONEDNN_GRAPH_TORCH_KERNELS"
_OFF = {"off", "0", "no", "false"}

#: (oneDNN version, ISA) pairs where the default rule holds: measured on AMD Zen 4
#: natively and capped at AVX2 (``torch_nn_by_default`` has the figures).
TORCH_FASTER: frozenset[tuple[tuple[int, int], str]] = frozenset({
    ((3, 2), "avx512_core_bf16"), ((3, 2), "avx2")})
#: The rule's limits: output channels per group, kernel taps per axis, and (with two
#: spatial axes) the problem's FLOPs.
FEW_CHANNELS = 4
SMALL_KERNEL = 3
SMALL_2D_FLOPS = 1 << 20
#: Below this many FLOPs (with at most ``SMALL_KERNEL`` taps per axis) a call's fixed
#: cost decides, and torch.nn's is the smaller, with gradients recorded or not.
TINY_FLOPS = 1 << 17
#: Per number of spatial axes: below this many FLOPs (with at most ``SMALL_KERNEL`` taps
#: per axis) a call that records no gradient runs torch.nn's kernel, whose fixed cost in
#: a model, with the caches holding the neighbours' data, is the smaller one. 3-D only:
#: in 1-D and 2-D a model's small layers have small neighbours (``torch_nn_by_default``).
IN_MODEL_FLOPS = {3: 8 << 20}
#: Below this many FLOPs a 3-D call with kernel == stride that records gradients (a
#: training step of a ViT decoder's small upsampling: UNETR's) runs torch.nn's kernel.
SMALL_3D_RECORDED_FLOPS = 1 << 21
#: Per number of spatial axes: below this many FLOPs a 1-D or 2-D call that records
#: gradients (a training step's) runs torch.nn's kernel, which costs the model's other ops
#: less than oneDNN's (``torch_nn_by_default``). The largest such layer measured in a
#: model is 18.9 MFLOP; DCGAN's first (26.2 MFLOP, kernel 4) gained on oneDNN.
RECORDED_IN_MODEL_FLOPS = {1: 24 << 20, 2: 24 << 20}
#: From this many FLOPs the rule above takes 1-D calls with longer kernels too (up to twice
#: the stride: the vocoders' upsamplers, 8-17 MFLOP, are what was measured in a model);
#: below, oneDNN's (on tiny problems its kernel 4 ran 0.35-0.67x torch.nn's time).
LONG_1D_KERNEL_FLOPS = 4 << 20
#: Below this many FLOPs (from ``TINY_FLOPS``) a 2-D bf16 call, with gradients recorded or
#: not, with at most ``SMALL_KERNEL`` taps per axis or a kernel equal to its stride, runs
#: torch.nn's kernel in a model, on the (oneDNN, ISA) pairs of ``BF16_IN_MODEL_ON``: MONAI's
#: BasicUNet's and DPT's layers (0.5-1.0 MFLOP) are what was measured in a model; the next
#: layers measured (2.25-2.4 MFLOP, MONAI's 2-D U-Net and GAN) gain on oneDNN's bf16 kernels.
BF16_IN_MODEL_FLOPS = 2 << 20
#: Where the bf16 rule was measured: AMD Zen 4, whose oneDNN 3.2 has bf16 kernels (an AVX2
#: CPU has none: oneDNN runs bf16 as the f32 chain there, not measured in a model).
BF16_IN_MODEL_ON: frozenset[tuple[tuple[int, int], str]] = frozenset({((3, 2), "avx512_core_bf16")})
#: How the rule's answer for ``IN_MODEL_FLOPS`` says where it holds (``report()``): a
#: measurement of the layer alone (``tune=True``), its caches warm, does not see what it is
#: about, and does not overrule it (``_Answer.measurable``).
IN_A_MODEL = "in a model"


def torch_nn_by_default(nsp: int, input_shape: tuple, weight_shape: tuple, stride: tuple,
                        dtype: torch.dtype, recorded: bool,
                        version: Optional[tuple[int, int]] = None,
                        isa: Optional[str] = None) -> Optional[str]:
    """Why torch.nn's kernel computes a call by default, or None (oneDNN's), on a (oneDNN,
    ISA) pair of ``TORCH_FASTER``, in float32, with at most ``SMALL_KERNEL`` taps on every
    axis (longer in a 1-D training call, last below): a problem under ``TINY_FLOPS``; a
    call that records no gradient under ``IN_MODEL_FLOPS`` for its number of spatial
    axes; or one with a stride above 1, at most ``FEW_CHANNELS`` output channels per
    group, and three spatial axes or two under ``SMALL_2D_FLOPS``; or a 3-D call with
    kernel == stride that records gradients, under ``SMALL_3D_RECORDED_FLOPS``; or a 1-D or
    2-D call that records gradients under ``RECORDED_IN_MODEL_FLOPS``
    (``_in_model_training``: in 1-D also longer kernels). In bf16, on the pairs of
    ``BF16_IN_MODEL_ON``: a 2-D call under ``BF16_IN_MODEL_FLOPS`` (``_in_model_bf16``:
    kernels of at most ``SMALL_KERNEL`` taps or equal to the stride).

    Tiny problems: the issue's ``ConvTranspose1d/2d/3d(8, 8, 2, stride=2)`` on (1, 8, 4,
    ...) took 1.1-2.2x torch.nn's time on oneDNN in inference and 1.4-1.7x in a training
    step (``benchmarks/layer_overhead.py``: the package's Python and oneDNN's call cost more
    than torch.nn's kernel takes); 1-D to 3-D layers of 8 and 32 channels under 131
    kFLOP with kernels 2 and 3: 0.95-1.96x in inference (median 1.06), 1.28-1.62x in a
    training step, where kernel 4 ran 0.35-0.67x (torch.nn's is slow there).

    In a model: a layer runs right after other ops, whose data fill the caches, and there
    the package's call (its Python, NumPy views and oneDNN's execute: more code and memory
    than torch.nn's call touches) costs more than torch.nn's (a median 78 us more at the
    sizes below), where alone, in a loop, it costs less. Timed that way
    (``benchmarks/kernel_choice.py --cold``: each call right after a convolution of the
    layer's rank over 1-4 MB), inference calls with kernels 2-3 took on oneDNN, against
    torch.nn's, in 1-D under 1 MFLOP 0.88-1.46x (33 of 36 shapes over 1.00, median 1.27),
    in 2-D 1.17-1.52x (7 of 7), in 3-D under 8 MFLOP 0.84-2.33x (23 of 24, median 1.58);
    from there to 4x those sizes the medians are 0.95-1.04 (a tie), and above oneDNN's
    kernel gains. Capped at AVX2: 36 of 36, 7 of 7, 23 of 24 over 1.00. But how cold a
    call runs is its neighbours' doing: MONAI's BasicUNet (2-D, batch 2, activations of
    8-64 KB around its three 0.52 MFLOP layers) ran 1.02-1.03x its time with them on
    torch.nn's kernel (two in-process A/Bs of 40 rounds), where 3-D models' neighbours
    are large; so the rule takes 3-D calls only, under 8 MFLOP. Training steps
    lost in the same bands (medians 1.38-1.42), but whole models did not move with them on
    torch.nn's kernel (MONAI's 3-D U-Net, UNETR and BasicUNet: 0.99, 0.99, 1.02x, in-process
    A/B of 24 rounds): they stay on oneDNN. MONAI's 3-D U-Net, whose first two
    ConvTranspose3d (5.3 and 7.1 MFLOP) took 1.85x and 1.08x stock's time inside the model,
    ran 0.94-1.00x its time before this rule (seven in-process A/Bs of 20-30 rounds, plain
    and inference mode; 1.00-1.02x stock's, was 1.01-1.07x), UNETR (nine such layers)
    0.99x (two A/Bs of 40 rounds). Measuring such a layer alone
    (``tune=True``) times it warm: it does not overrule this.

    Training calls in a model: the same holds for a training step's calls, at larger
    sizes, and not through the layer's own time: a model's other ops run slower after
    oneDNN's calls than after torch.nn's (MONAI's GAN generator, its ConvTranspose2d timed
    inside the model: the Conv2d after each took 53-95 us more, where the three layers
    together took what stock's took; one layer of the three on oneDNN already cost the
    step 3-5%). Whole training steps, f32, every ConvTranspose layer on torch.nn's kernel
    against every one on oneDNN's, each against stock (three in-process A/Bs of 21 rounds),
    then the rule itself against ``ONEDNN_GRAPH_TORCH_KERNELS=off`` (three runs of
    ``benchmarks/default_rule.py``): MONAI's GAN generator (three layers of 2.4-18.9 MFLOP)
    0.99-1.02x stock's time with the rule, 1.01-1.08x on oneDNN; EnCodec 1.00-1.01
    (1.00-1.04), Oobleck 0.99-1.02 (1.01-1.04), HiFi-GAN 0.98-1.02 (0.97-1.02), MONAI's 2-D
    U-Net 1.00-1.03 (1.01-1.03), BasicUNet 0.99-1.01 (1.00-1.02), SAM's mask decoder
    0.99-1.01 (1.00-1.06), DPT 0.99-1.02 (1.01-1.03): 43 of 48 pairs in its favour. Capped
    at AVX2 (``benchmarks/default_rule.py`` once): the GAN 1.01x (1.06x on oneDNN), the
    other seven 0.99-1.01 (1.00-1.03), 7 of 8 in its favour. In 3-D MONAI's U-Net (k3s2, 5-7 MFLOP) did not move
    (1.00-1.05 either way), and DCGAN's first layer (26.2 MFLOP, kernel 4 at stride 1)
    gained on oneDNN: so 1-D and 2-D calls under 24 MFLOP, kernels of at most 3 taps (in
    1-D from 4 MFLOP up to twice the stride). bf16 (autocast) is left to oneDNN above 2
    MFLOP: MONAI's GAN took 0.91x stock's step on oneDNN, 1.00x on torch.nn's; a bf16 rule
    for layers of more than 4 output channels won in 7 of 8 models in one A/B and 3 of 8 in
    the next (within 1-3% either way). Below 2 MFLOP, 2-D (``BF16_IN_MODEL_FLOPS``): MONAI's
    BasicUNet (four k2s2 layers of 0.5-1.0 MFLOP) took, against stock's time, 1.014-1.022
    on oneDNN and 1.001-1.003 on torch.nn's in inference, 1.021-1.022 and 1.004-1.006 in a
    training step; DPT (k4s4 and k2s2, 1.0 MFLOP each) 0.997-1.025 and 0.995-1.004 in
    inference, 0.993-1.018 and 0.993-0.999 in a training step (in-process A/Bs of 31
    rounds, bf16 autocast, 2026-11-30), where alone, warm, the same layers run 0.51-0.83x
    torch.nn's time on oneDNN (torch.nn's bf16 call costs about 100 us at any size here).

    Measured with PyTorch 2.13 on a 2-core AMD EPYC Zen 4, 2 threads, f32, batch 1,
    kernels 2-4, stride 2, 16 and 64 input channels, 1-32 output channels, 8^3/16^3 and
    32^2/64^2 inputs (``benchmarks/kernel_choice.py``, docs/benchmarks/zen4-kernel-choice.md):
    in inference the rule's 31 shapes took 1.05-5.97x torch.nn's time natively (oneDNN's
    strided kernel for few channels; no other formulation of the package beat it:
    ``compile_op(tune=True)`` measured 0.98-1.36x its time), 1.01-5.58x capped at AVX2;
    19 of the other 113 took 1.01-1.42x, which measurement catches. In a training step 27
    of the 31 lost (0.67-2.34x), but the 3-D U-Net's own shapes won: recorded calls are
    left to measurement, apart from small 3-D ones with kernel == stride: UNETR's six
    ConvTranspose3d(k = s = 2) under 2 MFLOP took 1.19-1.46x torch.nn's time in a training
    step (0.71-1.47x in inference alone; in a model, above), the sweep's 3-D kernel-2
    shapes under 2 MFLOP 1.12-2.16x. bf16 alone: torch.nn's CPU kernel is the slower one."""
    rule = _rule(nsp, input_shape, weight_shape, stride, dtype, recorded, version, isa)
    return None if rule is None else rule.why


class _Answer(NamedTuple):
    """The default rule's answer: why torch.nn's kernel computes the call, and whether a
    measurement (``tune=True``) may overrule it (not where the rule is about calls in a
    model, which a layer timed alone does not see)."""

    why: str
    measurable: bool = True


def _rule(nsp: int, input_shape: tuple, weight_shape: tuple, stride: tuple, dtype: torch.dtype,
          recorded: bool, version: Optional[tuple[int, int]], isa: Optional[str]) -> Optional[_Answer]:
    """``torch_nn_by_default``'s answer with whether a measurement may overrule it."""
    version = version or _lowering.LINKED
    isa = isa or _lowering.HOST_ISA
    kernel = weight_shape[2:]
    per_group = weight_shape[1]
    flops = 2 * math.prod(input_shape) * per_group * math.prod(kernel)
    if dtype == torch.bfloat16 and (version, isa) in BF16_IN_MODEL_ON \
            and _in_model_bf16(nsp, kernel, stride, flops):
        return _Answer(f"torch.nn's kernel: faster {IN_A_MODEL} for a bf16 call of {flops / 1e6:.1f} MFLOP, "
                       f"where oneDNN's call costs the model's other ops more than it saves, on oneDNN "
                       f"{version[0]}.{version[1]} {isa} (the default rule, which a layer timed alone does "
                       f"not overrule)", measurable=False)
    if dtype != torch.float32 or (version, isa) not in TORCH_FASTER:
        return None
    if recorded and _in_model_training(nsp, kernel, stride, flops):
        return _Answer(f"torch.nn's kernel: faster {IN_A_MODEL} for a training call of "
                       f"{flops / 1e6:.1f} MFLOP, where oneDNN's call costs the model's other ops more "
                       f"than it saves, on oneDNN {version[0]}.{version[1]} {isa} (the default rule, "
                       f"which a layer timed alone does not overrule)", measurable=False)
    if any(k > SMALL_KERNEL for k in kernel):
        return None
    if flops < TINY_FLOPS:
        return _Answer(f"torch.nn's kernel: faster for a problem of {flops / 1e3:.0f} kFLOP, where a "
                       f"call's fixed cost decides, on oneDNN {version[0]}.{version[1]} {isa} (the "
                       f"default rule; convert(..., tune=True) measures)")
    if not recorded and flops < IN_MODEL_FLOPS.get(nsp, 0):
        return _Answer(f"torch.nn's kernel: faster {IN_A_MODEL} for a call without grad of "
                       f"{flops / 1e6:.2f} MFLOP, where a call's fixed cost with cold caches decides, on "
                       f"oneDNN {version[0]}.{version[1]} {isa} (the default rule, which a layer timed "
                       f"alone does not overrule)", measurable=False)
    if recorded and nsp == 3 and tuple(kernel) == tuple(stride) and flops < SMALL_3D_RECORDED_FLOPS:
        return _Answer(f"torch.nn's kernel: faster for a 3-D training call of {flops / 1e6:.1f} MFLOP "
                       f"with kernel == stride on oneDNN {version[0]}.{version[1]} {isa} (the default "
                       f"rule; convert(..., tune=True) measures)")
    if recorded or nsp < 2 or per_group > FEW_CHANNELS or any(s < 2 for s in stride):
        return None
    if nsp == 2 and flops >= SMALL_2D_FLOPS:
        return None
    where = "3-D" if nsp == 3 else "2-D under 1 MFLOP"
    return _Answer(f"torch.nn's kernel: faster for {per_group} output channel{'s' * (per_group > 1)} "
                   f"at stride {max(stride)} ({where}) on oneDNN {version[0]}.{version[1]} {isa} "
                   f"(the default rule; convert(..., tune=True) measures)")


def _in_model_training(nsp: int, kernel: tuple, stride: tuple, flops: int) -> bool:
    """Whether ``RECORDED_IN_MODEL_FLOPS`` takes a training call: 1-D or 2-D, from
    ``TINY_FLOPS`` (below, the tiny rule's), kernels of at most ``SMALL_KERNEL`` taps, or
    in 1-D from ``LONG_1D_KERNEL_FLOPS`` up to twice the stride."""
    if not TINY_FLOPS <= flops < RECORDED_IN_MODEL_FLOPS.get(nsp, 0):
        return False
    if all(k <= SMALL_KERNEL for k in kernel):
        return True
    return nsp == 1 and flops >= LONG_1D_KERNEL_FLOPS and kernel[0] <= 2 * stride[0]


def _in_model_bf16(nsp: int, kernel: tuple, stride: tuple, flops: int) -> bool:
    """Whether ``BF16_IN_MODEL_FLOPS`` takes a bf16 call: 2-D, from ``TINY_FLOPS``, each
    axis's kernel of at most ``SMALL_KERNEL`` taps or equal to its stride."""
    return nsp == 2 and TINY_FLOPS <= flops < BF16_IN_MODEL_FLOPS and \
        all(k <= SMALL_KERNEL or k == s for k, s in zip(kernel, stride))


# Layers whose calls are measured (convert(..., tune=True)); beside the layer, not in it.
_tuned: "weakref.WeakSet[torch.nn.Module]" = weakref.WeakSet()
# layer -> {what its call was: whose kernel and why}, for report().
_decided: "weakref.WeakKeyDictionary[torch.nn.Module, dict[str, tuple[str, str]]]" = \
    weakref.WeakKeyDictionary()


def tune(layer: torch.nn.Module) -> None:
    """Measure `layer`'s calls (``convert(..., tune=True)``)."""
    _tuned.add(layer)


@torch.compiler.assume_constant_result  # (read once per trace: no guard on the environment)
def _held_to_onednn() -> bool:
    """Whether ``ONEDNN_GRAPH_TORCH_KERNELS`` holds every call to oneDNN's kernel."""
    return os.environ.get(ENV, "").strip().lower() in _OFF


def by_rule(layer: Any, input: torch.Tensor, weight: torch.Tensor) -> bool:
    """Whether the default rule gives torch.nn's kernel a call that torch.compile traces
    (its shapes are all there is: nothing is timed on fake tensors), in the dtype autocast
    casts it to."""
    recorded = torch.is_grad_enabled() and (input.requires_grad or weight.requires_grad)
    dtype = torch.get_autocast_dtype("cpu") if torch.is_autocast_enabled("cpu") else input.dtype
    if input.dim() != weight.dim() or _held_to_onednn():
        return False
    # (as ints while torch.jit.trace traces: a traced size compared would be a constant of
    # the trace, with a warning)
    input_shape, weight_shape = _library.traced_shapes(input, weight) if _library.jit_tracing() \
        else (input.shape, weight.shape)
    return torch_nn_by_default(input.dim() - 2, tuple(input_shape), tuple(weight_shape),
                               tuple(layer.stride), dtype, recorded) is not None


def plain_in_graph(plain: bool) -> bool:
    """Whether torch.compile's graph takes torch's own convolution for an inference call
    (``_inference``) of a layer that is `plain`: nothing folded into it or fused after it
    (a layout handed on is Inductor's to choose there). Inductor then runs it in the
    layout it chooses around its own convolutions (channels-last), where the registered op
    keeps the traced strides, makes Inductor convert its neighbours' data to and from
    them, and costs its dispatch
    (about 14 us); with nothing to fold or fuse oneDNN 3.2's kernel does not make that
    up: MONAI's GAN generator (three plain layers) ran 1.17-1.28x stock compiled with the
    op and 1.01-1.02x with torch's convolution, MONAI's BasicUNet (four layers handing on
    channels-last) 1.15x with the op (Zen 4, interleaved in one process). Not where
    ``ONEDNN_GRAPH_TORCH_KERNELS`` holds calls to oneDNN, nor in ``torch.export``'s
    graph (a program exported for another runtime, not Inductor: the package's op)."""
    return plain and not _held_to_onednn() and not _exporting()


def training_in_graph(recorded: bool) -> bool:
    """Whether torch.compile's graph takes torch's own convolution for a call that records
    gradients. There the registered training ops cost the dispatcher's custom-op layers
    (about 45 us a call, three or four calls a layer and step) and keep Inductor from
    choosing its convolutions' surroundings; a training step of torch.compile(convert(model))
    against torch.compile(model), in-process A/B of 10 rounds on the Zen 4, f32: the mask
    head 1.28x, Keypoint R-CNN's head 1.32x, MONAI's 2-D U-Net 1.14x and GAN generator
    1.29x, the training example's generator 1.10x, the 3-D U-Net 1.02x, DCGAN 0.93x. Not
    where ``ONEDNN_GRAPH_TORCH_KERNELS`` holds calls to oneDNN, nor in ``torch.export``'s
    graph (as ``plain_in_graph``)."""
    return recorded and not _held_to_onednn() and not _exporting()


_exporting = getattr(torch.compiler, "is_exporting", lambda: False)  # (PyTorch < 2.6: none)


def decide(layer: torch.nn.Module, input: torch.Tensor, weight: torch.Tensor,
           bias: Optional[torch.Tensor], recorded: bool,
           onednn: Callable[..., torch.Tensor], torch_nn: Callable[..., torch.Tensor]) -> Optional[str]:
    """Why torch.nn's kernel computes this call of `layer` (and every call like it), or
    None where oneDNN's does. `onednn` and `torch_nn` compute the call from (input,
    weight, bias) on each kernel, for measuring."""
    if _held_to_onednn():
        return None
    rule = _rule(input.dim() - 2, tuple(input.shape), tuple(weight.shape), tuple(layer.stride),
                 input.dtype, recorded, None, None)
    default = None if rule is None else rule.why
    kind, why = (ONEDNN, "") if default is None else (TORCH_NN, default)
    if (layer in _tuned or tuning_enabled()) and (rule is None or rule.measurable):
        kind, why = _measured(layer, input, weight, bias, recorded, default, onednn, torch_nn)
    _decided.setdefault(layer, {})[_call_name(input, recorded)] = (kind, why)
    return why if kind == TORCH_NN else None


def _call_name(input: torch.Tensor, recorded: bool) -> str:
    layout = "channels-last" if input.dim() > 2 and not input.is_contiguous() and \
        input.is_contiguous(memory_format=_CHANNELS_LAST.get(input.dim(), torch.contiguous_format)) else ""
    return " ".join(filter(None, (str(tuple(input.shape)), str(input.dtype).replace("torch.", ""),
                                  layout, "with grad" if recorded else "without grad")))


_CHANNELS_LAST = {4: torch.channels_last, 5: torch.channels_last_3d}


class _Candidate:
    """One kernel as ``_tuning.fastest`` times it: ``execute`` runs the call (and its
    backward where gradients are recorded) once."""

    def __init__(self, label: str, run: Callable[[], Any]) -> None:
        self.label, self.execute = label, lambda inputs, target: run()


def _measured(layer: torch.nn.Module, input: torch.Tensor, weight: torch.Tensor,
              bias: Optional[torch.Tensor], recorded: bool, default: Optional[str],
              onednn: Callable[..., torch.Tensor], torch_nn: Callable[..., torch.Tensor]) -> tuple[str, str]:
    """(whose kernel, why with the figures): the measured verdict (stored, or measured now
    and stored where the machine was quiet), which keeps the default where nothing clear
    was measured."""
    key = _tuning_db.problem_key({
        "decision": "torch.nn or oneDNN", "torch": torch.__version__,
        "input": [list(input.shape), list(input.stride()), str(input.dtype)],
        "weight": [list(weight.shape), list(weight.stride()), str(weight.dtype)],
        "bias": None if bias is None else [list(bias.shape), str(bias.dtype)],
        "attrs": [list(layer.stride), list(layer.padding), list(layer.output_padding),
                  list(layer.dilation), layer.groups], "recorded": recorded,
        "threads": torch.get_num_threads()})
    db = _tuning_db.tuning_database()
    stored = db.get(key)
    if stored is not None:
        return _why(stored["kind"], stored.get("seconds", {}), stored.get("verdict", ""), default)
    x = input.detach().requires_grad_(recorded and input.requires_grad)
    w = weight.detach().requires_grad_(recorded and weight.requires_grad)
    b = None if bias is None else bias.detach().requires_grad_(recorded and bias.requires_grad)
    leaves = [t for t in (x, w, b) if t is not None and t.requires_grad]

    def candidate(label: str, fn: Callable[..., torch.Tensor]) -> _Candidate:
        def run() -> Any:
            if not leaves:
                with torch.no_grad():
                    return fn(x, w, b)
            with torch.enable_grad():
                y = fn(x, w, b)
                return torch.autograd.grad(y, leaves, torch.ones_like(y))
        return _Candidate(label, run)

    ours, theirs = candidate(ONEDNN, onednn), candidate(TORCH_NN, torch_nn)
    verdict = _tuning.fastest([theirs, ours] if default else [ours, theirs], [], None)  # type: ignore[arg-type]
    if verdict.stored:
        db.put(key, {"problem": f"{type(layer).__name__} {_call_name(input, recorded)}",
                     "kind": verdict.op.label, "lowering": f"{verdict.op.label}'s kernel", "threads": 0,
                     "seconds": verdict.seconds, "verdict": verdict.why})
    return _why(verdict.op.label, verdict.seconds, verdict.why, default)


def _why(kind: str, seconds: dict[str, float], verdict: str, default: Optional[str]) -> tuple[str, str]:
    """(`kind`, why in words with the measured ratio)."""
    ratio = seconds.get(ONEDNN, float("nan")) / seconds.get(TORCH_NN, float("nan"))
    how = "measured" if default is None else "the default rule, and measured"
    return kind, f"{kind}'s kernel: oneDNN took {ratio:.2f}x torch.nn's time ({how}: {verdict})"


def describe(layer: torch.nn.Module) -> tuple[bool, str]:
    """(whether torch.nn's kernel computed every call `layer` has seen, in words what
    ran each kind of call) for ``report``; (False, "") before the first call."""
    decided = _decided.get(layer)
    if not decided:
        return False, ""
    words = "; ".join(f"{call}: {why}" for call, (kind, why) in decided.items() if why)
    return all(kind == TORCH_NN for kind, _ in decided.values()), words


def __dir__() -> list[str]:
    return list(__all__)
