"""oneDNN's ConvTranspose family as PyTorch layers and custom ops.

Importable where PyTorch is installed (PyTorch's CPU wheel, then the ``torch`` extra:
README, "With PyTorch"); the rest of the package never needs it.

* ``convert(model)``: every ``torch.nn.ConvTranspose1d/2d/3d`` of a model on oneDNN,
  in one call (``revert`` undoes it; ``report`` says what runs where, and why);
  ``route_functional()``: a forward's own ``F.conv_transpose1d/2d/3d`` calls on oneDNN;
* ``conv_transpose1d/2d/3d``: ``torch.nn.functional``'s signature, differentiable
  (every gradient computed by oneDNN), plus asymmetric and ``"same"`` padding;
* ``ConvTranspose1d/2d/3d``: drop-in ``torch.nn`` modules (same parameters,
  initialisation and state dicts);
* ``conv1d_input/2d/3d`` (``torch.nn.grad``'s), ``conv_transpose1d/2d/3d_weight``;
* ``torch.ops.onednn_graph.*``: the registered custom ops, with fake
  implementations and autograd formulas, for ``torch.compile(fullgraph=True)``,
  ``torch.export`` and ``torch.library.opcheck``.
"""

try:
    import torch  # noqa: F401
except ImportError:  # pragma: no cover - depends on the environment
    raise ImportError("onednn_graph.torch needs PyTorch: pip install torch --index-url "
                      "https://download.pytorch.org/whl/cpu (its CPU wheel; README, "
                      "'With PyTorch')") from None

from . import _library  # noqa: F401  (registers torch.ops.onednn_graph.*)
from . import _processes  # noqa: F401  (PyTorch on one thread in a child forked after oneDNN ran)
from ._convert import LayerReport, Report, convert, report, revert
from ._inference import refresh
from ._routing import route_functional
from .functional import (conv1d_input, conv2d_input, conv3d_input, conv_transpose1d,
                         conv_transpose1d_weight, conv_transpose2d, conv_transpose2d_weight,
                         conv_transpose3d, conv_transpose3d_weight)
from .modules import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d

__all__ = ["convert", "revert", "report", "Report", "LayerReport", "refresh", "route_functional",
           "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
           "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
           "conv1d_input", "conv2d_input", "conv3d_input",
           "conv_transpose1d_weight", "conv_transpose2d_weight", "conv_transpose3d_weight"]


def __dir__() -> list[str]:
    return list(__all__)
