"""The op registry: everything the package knows per op kind, in one table.

Each entry (``OpSpec``) holds what would otherwise be restated wherever an op
is named: its inputs, the attribute that gives its output shape, its weights
formats, the names of its functions (``onednn_graph.ops`` and
``onednn_graph.reference`` spell it the same), which of its tensors oneDNN's
primitives and the equivalent ConvTranspose see, how many products one output
sums, and where a view without unreached positions applies. The rest of the
package asks this table instead of branching on kind strings; adding an op or
an attribute starts here.

The table holds the spec's four ops, the older name of ConvTransposeBackwardWeights
(``ConvTransposeBackpropFilters``, whose attributes ``LEGACY`` maps onto it),
and the two convolution ops the package runs some calls as (``Convolution``,
``ConvolutionBackwardWeights``: ``spec`` False). This module is data only: it
imports nothing of the package, so every layer may read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

#: A tensor of an op: an input position, or ``OUTPUT``.
OUTPUT = -1


@dataclass(frozen=True)
class OpSpec:
    """One op kind and everything the package knows about it."""

    kind: str
    #: The name of its function in ``onednn_graph.ops`` and ``onednn_graph.reference``.
    function: str
    #: The functional API's array arguments, in the op's input order.
    inputs: tuple[str, ...]
    #: How many of `inputs` are required (ConvTranspose's bias is optional).
    required: int
    #: The attribute that gives the output's shape (also an optional s32 input of the
    #: spec's op), or None where the inputs determine it.
    shape_attr: Optional[str]
    #: The weights formats oneDNN 3.2 accepts, its default first (seed README).
    weights_formats: tuple[str, ...]
    #: ConvTranspose family (weights I = C_in, O = C_out/groups) or convolution family
    #: (I = C_in/groups, O = C_out): shapes.weights_channels.
    transposed: bool
    #: The primitive oneDNN 3.2's Graph backend builds for it
    #: (graph/backend/dnnl/op_executable.cpp) ...
    primitive: str
    #: ... and which tensors are that primitive's (src, weights, dst).
    primitive_tensors: tuple[int, int, int]
    #: The (src, dst) tensors of the ConvTranspose that computes the same products
    #: (its FLOPs: _impl.plan.problem).
    equivalent: tuple[int, int]
    #: What one output element sums (tolerance.accumulation_terms): "channels" of
    #: input 0 over groups times the kernel taps (+1 for a bias with "channels+bias"),
    #: or "positions": the batch and spatial positions of input 1.
    terms: str
    #: The tensor of ConvTranspose's output geometry, which a view without the
    #: positions outside every kernel window crops (_impl.lowering), for the spec's ops.
    crop_tensor: Optional[int] = None
    #: The tensors (input positions and ``OUTPUT``) whose first axis is the batch, where
    #: each sample of the result depends on the same sample of those inputs alone, so a
    #: batch may run in parts (_impl.as_f32); empty where the result sums over the batch
    #: (the weights gradients).
    batched: tuple[int, ...] = (0, OUTPUT)
    #: One of the spec's ops, which the functional API offers.
    spec: bool = True
    #: oneDNN 3.2 takes output_padding as an attribute of the op (the backward ops
    #: refuse it when added, ConvolutionBackwardData ignores it: _impl.lowering).
    native_output_padding: bool = False
    #: oneDNN 3.2 compiles the op with groups > 1 as it is (ConvolutionBackwardData's
    #: grouped partition fails to compile: _impl.lowering runs it as a ConvTranspose).
    native_groups: bool = True
    #: oneDNN 3.2 has int8 patterns for the op: quantized src and weights, a
    #: quantized result (ConvTranspose alone; _impl.fused).
    int8: bool = False
    #: The rules of ``_impl.kernels.FASTER_IN_F32`` under which the op with groups > 1
    #: runs faster as the f32 chain than on oneDNN's bf16/f16 kernel (measured there).
    f32_chain_grouped: tuple[str, ...] = ()

    @property
    def optional_inputs(self) -> tuple[str, ...]:
        return self.inputs[self.required:]

    @property
    def has_bias(self) -> bool:
        """Whether the op takes a bias (its optional last input)."""
        return "bias" in self.inputs

    @property
    def weights_gradient(self) -> bool:
        """Whether the op computes the weights (its output is the primitive's weights)."""
        return self.primitive_tensors[1] == OUTPUT

    @property
    def writes_big(self) -> bool:
        """Whether its output is the larger tensor of the equivalent ConvTranspose (its
        dst): ConvTranspose and ConvolutionBackwardData."""
        return self.equivalent == (0, OUTPUT)

    @property
    def roles(self) -> dict[int, str]:
        """Each tensor's part in the equivalent ConvTranspose (input positions and
        ``OUTPUT``): its src ("small"), its dst ("big"), the "weights", the "bias"."""
        found = {self.equivalent[0]: "small", self.equivalent[1]: "big",
                 self.primitive_tensors[1]: "weights"}
        if self.has_bias:
            found[self.inputs.index("bias")] = "bias"
        return found

    @property
    def reads_big(self) -> bool:
        """Whether it reads the equivalent ConvTranspose's dst and writes its src:
        ConvTransposeBackwardData (and the forward Convolution)."""
        return self.equivalent == (OUTPUT, 0)


@dataclass(frozen=True)
class LegacySpec:
    """An older name of an op, with attributes of other names and a filter layout."""

    kind: str
    current: str                    # the op it is
    function: str
    inputs: tuple[str, ...]
    #: Its attribute names -> the current op's.
    attr_names: dict[str, str]
    #: Its filter_format -> the current weights_format holding the same letters
    #: (shapes.from_legacy_filter: the two channel axes are swapped in memory).
    formats: dict[str, str]
    default_format: str
    #: The attribute that gives its output's shape (the current op's weights_shape).
    shape_attr: str = "filter_shape"


CONV_TRANSPOSE = "ConvTranspose"
CONV_TRANSPOSE_BWD_DATA = "ConvTransposeBackwardData"
CONV_TRANSPOSE_BWD_WEIGHTS = "ConvTransposeBackwardWeights"
CONV_BWD_DATA = "ConvolutionBackwardData"
CONVOLUTION = "Convolution"
CONV_BWD_WEIGHTS = "ConvolutionBackwardWeights"
LEGACY_BACKPROP_FILTERS = "ConvTransposeBackpropFilters"

_TRANSPOSED_FORMATS = ("XOI", "IOX")
_CONV_FORMATS = ("XIO", "OIX")

SPECS: dict[str, OpSpec] = {s.kind: s for s in (
    OpSpec(CONV_TRANSPOSE, "conv_transpose", ("src", "weights", "bias"), 2, None,
           _TRANSPOSED_FORMATS, True, "deconvolution_forward", (0, 1, OUTPUT), (0, OUTPUT),
           "channels+bias", crop_tensor=OUTPUT, native_output_padding=True, int8=True,
           f32_chain_grouped=("most", "grouped")),
    OpSpec(CONV_TRANSPOSE_BWD_DATA, "conv_transpose_backward_data", ("diff_dst", "weights"), 2,
           None, _TRANSPOSED_FORMATS, True, "deconvolution_backward_data", (OUTPUT, 1, 0),
           (OUTPUT, 0), "channels", crop_tensor=0),
    OpSpec(CONV_TRANSPOSE_BWD_WEIGHTS, "conv_transpose_backward_weights", ("src", "diff_dst"), 2,
           "weights_shape", _TRANSPOSED_FORMATS, True, "deconvolution_backward_weights",
           (0, OUTPUT, 1), (0, 1), "positions", crop_tensor=1, batched=()),
    OpSpec(CONV_BWD_DATA, "convolution_backward_data", ("diff_dst", "weights"), 2, "dst_shape",
           _CONV_FORMATS, False, "convolution_backward_data", (OUTPUT, 1, 0), (0, OUTPUT),
           "channels", crop_tensor=OUTPUT, native_groups=False, f32_chain_grouped=("grouped",)),
    # What some calls run as (_impl.lowering): the forward convolution is ConvTranspose's
    # adjoint, and ConvolutionBackwardWeights of (diff_dst, src) is its weights gradient.
    # (with a bias when it is the few-channel formulation of a ConvTranspose: _impl.packed_form)
    OpSpec(CONVOLUTION, "convolution", ("src", "weights", "bias"), 2, None, _CONV_FORMATS, False,
           "convolution_forward", (0, 1, OUTPUT), (OUTPUT, 0), "channels+bias", spec=False),
    OpSpec(CONV_BWD_WEIGHTS, "convolution_backward_weights", ("src", "diff_dst"), 2,
           "weights_shape", _CONV_FORMATS, False, "convolution_backward_weights",
           (0, OUTPUT, 1), (1, 0), "positions", batched=(), spec=False),
)}

#: The spec's four ops, in the order the docs list them.
KINDS = tuple(kind for kind, s in SPECS.items() if s.spec)

# ConvTransposeBackpropFilters (seed 002): filter_format OIX = (C_out/g, C_in, *K)
# and XIO = (*K, C_in, C_out/g), the current IOX / XOI with the channel axes
# swapped (graph-v0.8 reads O = dims[0]).
LEGACY = LegacySpec(LEGACY_BACKPROP_FILTERS, CONV_TRANSPOSE_BWD_WEIGHTS,
                    "conv_transpose_backprop_filters", ("input_forward", "output_delta"),
                    {"filter_format": "weights_format", "filter_shape": "weights_shape"},
                    {"OIX": "IOX", "XIO": "XOI"}, "XIO")


#: Every op name the spec-level objects take: the spec's ops and the legacy name.
NAMES = KINDS + (LEGACY.kind,)

#: Each name's attribute that gives its output shape in its own terms (the legacy op's
#: filter_shape), or None where the inputs determine it: a table, read on every first
#: call.
SHAPE_ATTRS: dict[str, str | None] = {**{kind: s.shape_attr for kind, s in SPECS.items()},
                                      LEGACY.kind: LEGACY.shape_attr}


def is_legacy(kind: str) -> bool:
    """Whether `kind` is the older name ConvTransposeBackpropFilters."""
    return kind == LEGACY.kind


def spec(kind: str) -> OpSpec:
    """The entry of `kind` (the legacy name gives the op it stands for)."""
    return SPECS[LEGACY.current if kind == LEGACY.kind else kind]


def function(kind: str) -> str:
    """The name of `kind`'s function in ``onednn_graph.ops`` and ``onednn_graph.reference``."""
    return LEGACY.function if kind == LEGACY.kind else SPECS[kind].function


def input_names(kind: str) -> tuple[str, ...]:
    """The functional API's array arguments of `kind` (the legacy op's own names)."""
    return LEGACY.inputs if kind == LEGACY.kind else SPECS[kind].inputs


def canonical_kind(kind: str) -> str:
    """The op kind, with the legacy name mapped to ConvTransposeBackwardWeights."""
    return LEGACY.current if kind == LEGACY.kind else kind
