"""Drop-in replacements of ``torch.nn.ConvTranspose1d/2d/3d`` computed by oneDNN.

Each subclasses PyTorch's module: the same constructor, parameters (``weight``
``(C_in, C_out/groups, *K)``, ``bias``), initialisation and ``state_dict`` keys,
so state dicts load both ways; only ``forward`` differs, calling
``onednn_graph.torch.functional``. ``forward(input, output_size=None)`` derives
output_padding from ``output_size`` as PyTorch's does.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

import torch

from . import functional as F

__all__ = ["ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]


def _forward(module: torch.nn.modules.conv._ConvTransposeNd, nsp: int, fn: Callable[..., torch.Tensor],
             input: torch.Tensor, output_size: Optional[Sequence[int]]) -> torch.Tensor:
    if module.padding_mode != "zeros":
        raise ValueError(f"Only 'zeros' padding mode is supported for {type(module).__name__}")
    output_padding = module._output_padding(input, output_size, module.stride, module.padding,
                                            module.kernel_size, nsp, module.dilation)
    return fn(input, module.weight, module.bias, module.stride, module.padding, output_padding,
              module.groups, module.dilation)


class ConvTranspose1d(torch.nn.ConvTranspose1d):
    """``torch.nn.ConvTranspose1d`` whose forward and backward run on oneDNN."""

    def forward(self, input: torch.Tensor, output_size: Optional[Sequence[int]] = None) -> torch.Tensor:
        return _forward(self, 1, F.conv_transpose1d, input, output_size)


class ConvTranspose2d(torch.nn.ConvTranspose2d):
    """``torch.nn.ConvTranspose2d`` whose forward and backward run on oneDNN."""

    def forward(self, input: torch.Tensor, output_size: Optional[Sequence[int]] = None) -> torch.Tensor:
        return _forward(self, 2, F.conv_transpose2d, input, output_size)


class ConvTranspose3d(torch.nn.ConvTranspose3d):
    """``torch.nn.ConvTranspose3d`` whose forward and backward run on oneDNN."""

    def forward(self, input: torch.Tensor, output_size: Optional[Sequence[int]] = None) -> torch.Tensor:
        return _forward(self, 3, F.conv_transpose3d, input, output_size)


def __dir__() -> list[str]:
    return list(__all__)
