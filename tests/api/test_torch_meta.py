"""onednn_graph.torch on meta tensors and under FakeTensorMode (issue 37): what torch.nn
returns there (shape, dtype, memory format), forward and backward, for every module and
functional form; nothing runs.

Truth: torch.nn's modules and functions, and torch.nn.grad, on the same meta or fake
tensors.
"""

import pytest

torch = pytest.importorskip("torch")

from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode  # noqa: E402

import onednn_graph.torch as ot  # noqa: E402

F = torch.nn.functional
CHANNELS_LAST = {2: torch.channels_last, 3: torch.channels_last_3d}
FORMATS = [(nsp, cl) for nsp in (1, 2, 3) for cl in (False, True) if nsp > 1 or not cl]
IDS = [f"{n}d-{'channels_last' if c else 'contiguous'}" for n, c in FORMATS]


def _same_layout(a, b):
    assert (a.shape, a.dtype, a.stride(), a.device) == (b.shape, b.dtype, b.stride(), b.device)


def _input(nsp, channels_last, device="meta", requires_grad=True):
    x = torch.empty(2, 8, *[5] * nsp, device=device)
    if channels_last:
        x = x.to(memory_format=CHANNELS_LAST[nsp])
    return x.requires_grad_(requires_grad)


def _modules(nsp, **kw):
    ours = getattr(ot, f"ConvTranspose{nsp}d")(8, 4, 3, stride=2, padding=1, output_padding=1, **kw)
    theirs = getattr(torch.nn, f"ConvTranspose{nsp}d")(8, 4, 3, stride=2, padding=1,
                                                       output_padding=1, **kw)
    return ours, theirs


def _forward_and_backward(module, x):
    y = module(x)
    y.sum().backward()
    return y, x.grad, module.weight.grad, module.bias.grad


@pytest.mark.parametrize("nsp, channels_last", FORMATS, ids=IDS)
def test_modules_on_meta_tensors_give_torch_nns_results_and_gradients(nsp, channels_last):
    ours, theirs = _modules(nsp, device="meta")
    want = _forward_and_backward(theirs, _input(nsp, channels_last))
    got = _forward_and_backward(ours, _input(nsp, channels_last))
    for g, w in zip(got, want):
        _same_layout(g, w)
    assert got[0].shape == (2, 4, *[10] * nsp)


@pytest.mark.parametrize("nsp, channels_last", FORMATS, ids=IDS)
def test_modules_under_fake_tensor_mode_give_torch_nns_results_and_gradients(nsp, channels_last):
    with FakeTensorMode():
        ours, theirs = _modules(nsp)
        want = _forward_and_backward(theirs, _input(nsp, channels_last, device="cpu"))
        got = _forward_and_backward(ours, _input(nsp, channels_last, device="cpu"))
    for g, w in zip(got, want):
        assert isinstance(g, FakeTensor)
        _same_layout(g, w)


def _functional_cases(nsp, device):
    """(ours, theirs) pairs of thunks for each functional form on `device` tensors."""
    x = torch.empty(2, 8, *[5] * nsp, device=device, requires_grad=True)
    w = torch.empty(8, 4, *[3] * nsp, device=device, requires_grad=True)   # IOX
    b = torch.empty(4, device=device, requires_grad=True)
    g = torch.empty(2, 4, *[3] * nsp, device=device)                       # conv's grad_output
    w_conv = torch.empty(4, 8, *[3] * nsp, device=device)                  # OIX
    size = (2, 8, *[5] * nsp)
    ct, conv_input = getattr(ot, f"conv_transpose{nsp}d"), getattr(ot, f"conv{nsp}d_input")
    ct_weight = getattr(ot, f"conv_transpose{nsp}d_weight")
    y_size = (2, 4, *[9] * nsp)
    dy = torch.empty(*y_size, device=device)
    return {
        "conv_transpose": (lambda: ct(x, w, b, stride=2, padding=1),
                           lambda: getattr(F, f"conv_transpose{nsp}d")(x, w, b, stride=2, padding=1)),
        "conv_input": (lambda: conv_input(size, w_conv, g, stride=2, padding=1),
                       lambda: getattr(torch.nn.grad, f"conv{nsp}d_input")(size, w_conv, g, stride=2,
                                                                            padding=1)),
        # torch.nn.grad has no transposed form: the weight gradient has the weight's shape
        "conv_transpose_weight": (lambda: ct_weight(x, w.shape, dy, stride=2, padding=1),
                                  lambda: torch.empty(w.shape, device=device)),
    }, (x, w, b)


@pytest.mark.parametrize("mode", ["meta", "fake"])
@pytest.mark.parametrize("form", ["conv_transpose", "conv_input", "conv_transpose_weight"])
@pytest.mark.parametrize("nsp", [1, 2, 3])
def test_functional_forms_on_meta_and_fake_tensors_give_torchs_shapes(nsp, form, mode):
    context = FakeTensorMode() if mode == "fake" else torch.device("meta")
    with context:
        cases, leaves = _functional_cases(nsp, "meta" if mode == "meta" else "cpu")
        ours, theirs = cases[form]
        got, want = ours(), theirs()
        _same_layout(got, want)
        if form == "conv_transpose":  # and its gradients
            grads = torch.autograd.grad(got.sum(), leaves)
            for grad, leaf in zip(grads, leaves):
                _same_layout(grad, leaf)
