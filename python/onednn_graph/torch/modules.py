"""Drop-in replacements of ``torch.nn.ConvTranspose1d/2d/3d`` computed by oneDNN.

Each subclasses PyTorch's module: the same constructor, parameters (``weight``
``(C_in, C_out/groups, *K)``, ``bias``), initialisation and ``state_dict`` keys,
so state dicts load both ways; only ``forward`` differs, calling
``onednn_graph.torch.functional``. ``forward(input, output_size=None)`` derives
output_padding from ``output_size`` as PyTorch's does.
"""

from typing import List, Optional

import torch

from . import _library  # noqa: F401  (registers torch.ops.onednn_graph.conv_transpose)
from . import _inference, _layer, functional as F

__all__ = ["ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]


def _scripted_call(input: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor],
                   stride: List[int], padding: List[int], output_padding: List[int],
                   dilation: List[int], groups: int) -> torch.Tensor:
    """The registered op on a module's own (already valid) attributes: what TorchScript
    runs, as it cannot compile ``functional``'s argument handling (Union types,
    isinstance on Any); a bad input is then reported by the op itself."""
    unbatched = input.dim() == len(stride) + 1
    x = input.unsqueeze(0) if unbatched else input
    y = torch.ops.onednn_graph.conv_transpose(x, weight, bias, stride, padding, padding,
                                              output_padding, dilation, groups)
    return y.squeeze(0) if unbatched else y


class _OneDNNForward(torch.nn.modules.conv._ConvTransposeNd):
    """The one ``forward`` of the three modules: ``torch.nn``'s signature (TorchScript
    needs ``List[int]``, not ``Sequence``), output_padding derived from `output_size`
    by PyTorch's own ``_output_padding``, the sums by oneDNN."""

    def forward(self, input: torch.Tensor, output_size: Optional[List[int]] = None) -> torch.Tensor:
        if self.padding_mode != "zeros":
            raise ValueError("Only 'zeros' padding mode is supported for ConvTranspose")
        if torch.jit.is_scripting():  # the other branch is not compiled
            nsp = len(self.kernel_size)
            output_padding = self._output_padding(input, output_size, self.stride, self.padding,
                                                  self.kernel_size, nsp, self.dilation)
            return _scripted_call(input, self.weight, self.bias, list(self.stride),
                                  list(self.padding), output_padding, list(self.dilation),
                                  self.groups)
        if output_size is None:
            epilogue = _inference.epilogue_of(self)  # convert(..., inference=True)
            if epilogue is not None and _inference.applied(self, epilogue):
                return _inference.forward(self, input, epilogue)
            # A plain call: first the lane (torch.nn's kernel for a tiny layer, as its
            # last call), tried here, not a call level deeper (a tiny call is all overhead).
            out = _layer.on_lane(self, input)
            if out is not None:
                return out
            if not self.training:  # weights packed where nothing records gradients
                return _inference.forward_plain(self, input)
            return _layer.forward_with(self, input, *_layer.weight_and_bias(self))
        if _layer.torch_computes(input, self.weight):
            return super().forward(input, output_size)  # as _layer.torch_nn
        nsp = len(self.kernel_size)
        output_padding = self._output_padding(input, output_size, self.stride, self.padding,
                                              self.kernel_size, nsp, self.dilation)
        return F._conv_transpose_nd(nsp, input, self.weight, self.bias, self.stride, self.padding,
                                    output_padding, self.groups, self.dilation)


class ConvTranspose1d(_OneDNNForward, torch.nn.ConvTranspose1d):
    """``torch.nn.ConvTranspose1d`` whose forward and backward run on oneDNN."""


class ConvTranspose2d(_OneDNNForward, torch.nn.ConvTranspose2d):
    """``torch.nn.ConvTranspose2d`` whose forward and backward run on oneDNN."""


class ConvTranspose3d(_OneDNNForward, torch.nn.ConvTranspose3d):
    """``torch.nn.ConvTranspose3d`` whose forward and backward run on oneDNN."""


def __dir__() -> list[str]:
    return list(__all__)
