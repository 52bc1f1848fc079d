"""Train a ConvTranspose2d layer in PyTorch with oneDNN computing its forward and backward passes.

What this shows
    A ``torch.autograd.Function`` whose forward is ``onednn_graph.conv_transpose``
    and whose backward is ``conv_transpose_backward_data`` (the input gradient)
    and ``conv_transpose_backward_weights`` (the weight gradient), called on
    torch tensors directly (read in place, no copies). Two identical layers
    train side by side from the same start for a few SGD steps: one with
    PyTorch's own kernels, one with oneDNN's. The loss curves are printed next
    to each other with their largest relative difference.

Assumptions
    The package is installed (``pip install .``) and so is PyTorch
    (``pip install torch``); CPU only.
"""

from __future__ import annotations

from typing import Any

import torch

import onednn_graph as og

# PyTorch's ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1), in oneDNN's
# attributes: NCX data, IOX weights (PyTorch's layouts), padding p -> pads_begin = pads_end = p.
KW: dict[str, Any] = dict(strides=2, pads_begin=1, pads_end=1, output_padding=1,
                          data_format="NCX", weights_format="IOX")
STEPS, LR = 8, 0.05


class OneDNNConvTranspose2d(torch.autograd.Function):
    """y = conv_transpose(x, w) + b, with both gradients computed by oneDNN."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, w)
        return torch.from_numpy(og.conv_transpose(x, w, b, **KW))

    @staticmethod
    def backward(ctx: Any, dy: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        x, w = ctx.saved_tensors
        dx = og.conv_transpose_backward_data(dy, w, **KW)
        dw = og.conv_transpose_backward_weights(x, dy, tuple(w.shape), **KW)
        return torch.from_numpy(dx), torch.from_numpy(dw), dy.sum(dim=(0, 2, 3))


def main() -> float:
    torch.manual_seed(0)
    teacher = torch.nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1)
    ours = torch.nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1)
    theirs = torch.nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1)
    theirs.load_state_dict(ours.state_dict())
    opt_ours = torch.optim.SGD(ours.parameters(), lr=LR)
    opt_theirs = torch.optim.SGD(theirs.parameters(), lr=LR)

    print(" step   loss (PyTorch)   loss (oneDNN)   relative difference")
    worst = 0.0
    for step in range(STEPS):
        x = torch.randn(8, 4, 6, 6)
        with torch.no_grad():
            target = teacher(x)
        losses = []
        for layer, opt, fn in ((theirs, opt_theirs, None), (ours, opt_ours, OneDNNConvTranspose2d)):
            opt.zero_grad()
            y = layer(x) if fn is None else fn.apply(x, layer.weight, layer.bias)
            loss = torch.nn.functional.mse_loss(y, target)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        rel = abs(losses[0] - losses[1]) / abs(losses[0])
        worst = max(worst, rel)
        print(f"{step:5d}   {losses[0]:14.7f}   {losses[1]:13.7f}   {rel:.2e}")

    w_diff = (ours.weight - theirs.weight).abs().max().item()
    print(f"max relative loss difference {worst:.2e}; max |weight difference| after "
          f"{STEPS} steps {w_diff:.2e}")
    # Both sides round f32 sums of 36-72 products in different orders (relative
    # error ~1e-6 per op); over a few contractive SGD steps that stays far below 1e-4.
    # (PyTorch's CPU build runs oneDNN kernels too, so the curves often agree exactly.)
    assert worst < 1e-4, f"loss curves diverge: {worst:.2e}"
    return worst


if __name__ == "__main__":
    main()
