"""Calls whose result the geometry alone fixes: no kernel window reaches the output.

When every position of an op's ConvTranspose-geometry tensor lies outside every
kernel window (``_lowering.NativeOp.unreached``: a pads_begin as large as the
full output, or an output_padding or negative pads that only add positions past
it), no product enters the result. ConvTranspose's dst is then its bias (or
zeros), and the gradients are zeros. oneDNN 3.2 refuses such a geometry
(``pad_l >= 0 && pad_r + stride > 0``), PyTorch returns the same answer, and
there is nothing to compute, so the package writes it without oneDNN, after the
same checks of the arrays oneDNN would make.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from .compiled import CompiledOp, private_copy


class Unreached:
    """Stands where a ``CompiledOp`` would (same arguments and interface) for a call
    that runs nothing: ``execute`` checks the arrays and writes zeros; the caller
    (``_call.Prepared.run``) writes ConvTranspose's bias where it is due."""

    compiled = None
    runs_in_f32 = False

    def direct_call(self, shape: Any, dtype: Any) -> None:
        """None: there is nothing for a native call to run."""
        return None
    input_order: tuple[int, ...] = ()

    def __init__(self, kind: str, dtype: str, inputs: Sequence[tuple], output: tuple,
                 constants: Optional[dict[int, np.ndarray]] = None) -> None:
        self.kind, self.dtype = kind, dtype
        self.attrs: dict[str, object] = {}
        self.inputs, self.output = [tuple(m[0]) for m in inputs], tuple(output[0])
        self.lowering = "native"
        self.tuning: Optional[dict[str, float]] = None
        self.tuning_verdict = ""  # how tuning decided (_tuning.verdict)
        self.constants = {i: private_copy(a) for i, a in (constants or {}).items()}
        self.compile_seconds = 0.0
        self.threads = 0

    label = CompiledOp.label

    def execute(self, inputs: Sequence[np.ndarray], output: np.ndarray) -> None:
        """Check `inputs` and `output` as a compiled op would, then zero `output`."""
        if len(inputs) != len(self.inputs):
            raise ValueError(f"{self.kind}: expected {len(self.inputs)} inputs, got {len(inputs)}")
        for i, (array, shape) in enumerate(zip(inputs, self.inputs)):
            if tuple(array.shape) != shape:
                raise ValueError(f"{self.kind}: input {i} has shape {tuple(array.shape)}, the "
                                 f"operation was compiled for {shape}")
        if tuple(output.shape) != self.output or not output.flags.writeable:
            raise ValueError(f"{self.kind}: the output must be a writeable array of shape "
                             f"{self.output}, got {tuple(output.shape)}")
        output[...] = 0

