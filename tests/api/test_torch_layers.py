"""onednn_graph.torch: the ops as PyTorch layers and custom ops.

Truth: PyTorch's own conv_transposeNd, its autograd and torch.nn.grad, run in
float64 on the same (rounded) inputs, with the package's error bound
(onednn_graph.tolerance: two roundings of the dtype plus f32 accumulation of
`terms` products per result, counted per quantity below); torch.library.opcheck
for the custom ops' registrations; eager results for compiled and exported models.
"""

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import onednn_graph as og  # noqa: E402
import onednn_graph.torch as ot  # noqa: E402
from onednn_graph.tolerance import compare  # noqa: E402
from helpers import torch_gradient_references  # noqa: E402

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
F = torch.nn.functional


def _numpy(t):
    return t.detach().to(torch.float64).numpy()


def _check(got, reference, args, dtype, terms):
    """`got` (a torch tensor) against reference(*float64 arrays) within the bound."""
    def ref_fn(*arrays):
        with torch.no_grad():
            return reference(*[torch.from_numpy(np.ascontiguousarray(a)) for a in arrays]).numpy()
    result = compare(_numpy(got), ref_fn, [_numpy(a) for a in args], {}, dtype, terms)
    assert result.ok, str(result)


# (id, spatial input, C_in, C_out, groups, kernel, stride, padding, output_padding, dilation)
CASES = [
    ("1d", (7,), 4, 6, 1, (3,), (2,), (1,), (1,), (1,)),
    ("2d", (5, 4), 4, 6, 1, (3, 2), (2, 1), (1, 0), (1, 0), (1, 1)),
    ("2d-groups", (4, 4), 4, 6, 2, (3, 3), (2, 2), (1, 1), (0, 0), (1, 1)),
    ("2d-depthwise", (5, 5), 4, 4, 4, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1)),
    ("2d-dilation", (4, 5), 3, 2, 1, (3, 3), (1, 2), (2, 1), (0, 1), (2, 2)),
    ("3d", (3, 4, 3), 2, 3, 1, (2, 3, 2), (2, 1, 2), (0, 1, 1), (1, 0, 1), (1, 1, 1)),
]


def _case(case, dtype, channels_last, rng_seed=0):
    _, spatial, c_in, c_out, g, k, s, p, op, d = case
    torch.manual_seed(rng_seed)
    x = torch.randn(2, c_in, *spatial).to(DTYPES[dtype])
    if channels_last:
        x = x.to(memory_format=torch.channels_last if x.dim() == 4 else torch.channels_last_3d)
    w = torch.randn(c_in, c_out // g, *k).to(DTYPES[dtype])
    b = torch.randn(c_out).to(DTYPES[dtype])
    kw = dict(stride=s, padding=p, output_padding=op, groups=g, dilation=d)
    return x, w, b, kw


def _formats(case):
    return [False] + ([True] if len(case[1]) in (2, 3) else [])


PARAMS = [pytest.param(c, dt, cl, id=f"{c[0]}-{dt}-{'channels_last' if cl else 'contiguous'}")
          for c in CASES for dt in DTYPES for cl in _formats(c)]


@pytest.mark.parametrize("case, dtype, channels_last", PARAMS)
def test_forward_and_all_three_gradients_match_pytorch(case, dtype, channels_last):
    x, w, b, kw = _case(case, dtype, channels_last)
    nsp = len(case[1])
    ours = getattr(ot, f"conv_transpose{nsp}d")
    theirs = getattr(F, f"conv_transpose{nsp}d")
    xs, ws, bs = (t.clone().requires_grad_() for t in (x, w, b))
    y = ours(xs, ws, bs, **kw)
    g = torch.randn(y.shape).to(y.dtype)
    gx, gw, gb = torch.autograd.grad(y, (xs, ws, bs), g)
    # Memory formats follow the data, as PyTorch's: channels-last in, channels-last out.
    fmt = torch.contiguous_format if not channels_last else (
        torch.channels_last if nsp == 2 else torch.channels_last_3d)
    assert y.is_contiguous(memory_format=fmt) and gx.is_contiguous(memory_format=fmt)
    assert y.dtype == gx.dtype == gw.dtype == gb.dtype == DTYPES[dtype]
    c_in, c_out, groups, kernel = case[2], case[3], case[4], case[5]
    taps = math.prod(kernel)

    def forward(x, w, b):
        return theirs(x, w, b, **kw)

    grad_input, grad_weight = torch_gradient_references(torch, theirs, x.shape, w.shape, **kw)

    _check(y, forward, (x, w, b), dtype, c_in // groups * taps + 1)
    _check(gx, grad_input, (g, w), dtype, c_out // groups * taps)
    _check(gw, grad_weight, (x, g), dtype, x.shape[0] * math.prod(x.shape[2:]))
    _check(gb, lambda g: g.sum(dim=[0] + list(range(2, g.dim()))), (g,), dtype,
           g.numel() // g.shape[1])


@pytest.mark.parametrize("grads", [(True, False, False), (False, True, False), (False, False, True),
                                   (True, True, True)], ids=["input", "weight", "bias", "all"])
def test_only_the_needed_gradients_are_computed(monkeypatch, grads):
    # Every op of the torch layers reaches oneDNN through ops.call_in_order: record its kinds.
    calls = []
    real = og.ops.call_in_order
    monkeypatch.setattr(og.ops, "call_in_order", lambda kind, *a: (calls.append(kind), real(kind, *a))[1])
    x, w, b, kw = _case(CASES[1], "f32", False)
    for t, wanted in zip((x, w, b), grads):
        t.requires_grad_(wanted)
    ot.conv_transpose2d(x, w, b, **kw).sum().backward()
    assert calls[0] == "ConvTranspose"
    assert ("ConvTransposeBackwardData" in calls) == grads[0]
    assert ("ConvTransposeBackwardWeights" in calls) == grads[1]
    assert [t.grad is not None for t in (x, w, b)] == list(grads)


OPCHECK_OPS = ["conv_transpose", "conv_transpose_backward_data", "conv_transpose_backward_weights",
               "convolution_backward_data", "bias_grad"]


def _opcheck_args(op, dtype, channels_last):
    x, w, b, kw = _case(CASES[2], dtype, channels_last)  # 2-D, 2 groups
    attrs = ([2, 2], [1, 1], [1, 1], [0, 0], [1, 1], 2)
    y = ot.conv_transpose2d(x, w, b, **kw)
    args = {"conv_transpose": (x, w, b, *attrs),
            "conv_transpose_backward_data": (y, w, list(x.shape), *attrs),
            "conv_transpose_backward_weights": (x, y, list(w.shape), *attrs),
            # y as the gradient of a convolution over w (OIX: C_out = 4, C_in/g = 3) of x's size
            "convolution_backward_data": (x, w.reshape(4, 3, 3, 3), list(y.shape), [2, 2], [1, 1],
                                          [1, 1], [1, 1], 2),
            "bias_grad": (y,)}[op]
    return [a.clone().requires_grad_() if isinstance(a, torch.Tensor) else a for a in args]


@pytest.mark.parametrize("channels_last", [False, True], ids=["contiguous", "channels_last"])
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("op", OPCHECK_OPS)
def test_opcheck(op, dtype, channels_last):
    """Schema, fake (meta) implementation, autograd registration, and AOT dispatch with
    dynamic shapes, for every op (torch.library.opcheck)."""
    result = torch.library.opcheck(getattr(torch.ops.onednn_graph, op),
                                   _opcheck_args(op, dtype, channels_last))
    assert set(result.values()) == {"SUCCESS"}, result


@pytest.mark.parametrize("op", ["conv_transpose_backward_data", "conv_transpose_backward_weights",
                                "convolution_backward_data"])
def test_the_backward_ops_gradients_are_their_adjoints(op):
    """gradcheck in float64 would need f64 kernels; instead the bilinear identity
    <G, op(a, b)> = <grad_a, a> = <grad_b, b> (both sides oneDNN's, f32 bound)."""
    args = _opcheck_args(op, "f32", False)
    out = getattr(torch.ops.onednn_graph, op)(*args)
    G = torch.randn(out.shape)
    grads = torch.autograd.grad(out, args[:2], G)
    total = (G.double() * out.double()).sum()
    for a, ga in zip(args[:2], grads):
        assert torch.allclose((ga.double() * a.double()).sum(), total, rtol=1e-4, atol=1e-3)


class _Decoder(torch.nn.Module):
    """A small generator head: two transposed convolutions with a ReLU between."""

    def __init__(self, layer):
        super().__init__()
        self.up1 = layer(8, 4, 4, stride=2, padding=1)
        self.up2 = layer(4, 3, 3, stride=2, padding=1, output_padding=1)

    def forward(self, x):
        return self.up2(torch.relu(self.up1(x)))


def _twins():
    torch.manual_seed(0)
    ours, theirs = _Decoder(ot.ConvTranspose2d), _Decoder(torch.nn.ConvTranspose2d)
    theirs.load_state_dict(ours.state_dict())
    return ours, theirs


def test_state_dicts_load_both_ways():
    ours, theirs = _twins()
    assert list(ours.state_dict()) == list(theirs.state_dict())
    fresh = _Decoder(ot.ConvTranspose2d)
    fresh.load_state_dict(theirs.state_dict())
    for a, b in zip(fresh.parameters(), theirs.parameters()):
        assert torch.equal(a, b)
    x = torch.randn(2, 8, 4, 4)
    a, b = theirs.up1, theirs.up2

    def decoder(x, w1, b1, w2, b2):  # the reference of both layers, as a function of every input
        h = torch.relu(F.conv_transpose2d(x, w1, b1, stride=2, padding=1))
        return F.conv_transpose2d(h, w2, b2, stride=2, padding=1, output_padding=1)
    # each layer's products (8 x 16 and 4 x 9, plus the bias), and the first layer's error
    # carried through the second: their sum bounds the composition's
    _check(ours(x), decoder, (x, a.weight, a.bias, b.weight, b.bias), "f32", 8 * 16 + 4 * 9 + 2)


@pytest.mark.parametrize("nsp", [1, 2, 3])
def test_each_module_matches_pytorch_and_takes_output_size(nsp):
    torch.manual_seed(nsp)
    ours = getattr(ot, f"ConvTranspose{nsp}d")(4, 2, 3, stride=2, padding=1)
    theirs = getattr(torch.nn, f"ConvTranspose{nsp}d")(4, 2, 3, stride=2, padding=1)
    theirs.load_state_dict(ours.state_dict())
    x = torch.randn(1, 4, *([3] * nsp))
    size = [6] * nsp  # output_padding 1 on every axis
    y = ours(x, output_size=size)
    assert y.shape[2:] == theirs(x, output_size=size).shape[2:] == torch.Size(size)
    fn = getattr(F, f"conv_transpose{nsp}d")
    _check(y, lambda x, w, b: fn(x, w, b, stride=2, padding=1, output_padding=1),
           (x, theirs.weight, theirs.bias), "f32", 4 * 3**nsp + 1)


# Inductor itself calls the deprecated torch.jit.script_method (PyTorch 2.13).
@pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")
def test_a_compiled_model_has_no_graph_break_and_matches_eager():
    ours, _ = _twins()
    x = torch.randn(2, 8, 4, 4)
    compiled = torch.compile(ours, fullgraph=True)
    y = compiled(x)
    y.square().sum().backward()
    grads = [p.grad.clone() for p in ours.parameters()]
    ours.zero_grad()
    y_eager = ours(x)
    y_eager.square().sum().backward()
    assert torch.allclose(y, y_eager, rtol=1e-5, atol=1e-5)
    for g, p in zip(grads, ours.parameters()):
        assert torch.allclose(g, p.grad, rtol=1e-4, atol=1e-4)


def test_an_exported_model_runs_the_custom_ops():
    ours, _ = _twins()
    x = torch.randn(2, 8, 4, 4)
    exported = torch.export.export(ours, (x,))
    targets = [str(n.target) for n in exported.graph.nodes if n.op == "call_function"]
    assert targets.count("onednn_graph.conv_transpose.default") == 2, targets
    assert torch.equal(exported.module()(x), ours(x))


def test_conv_input_and_conv_transpose_weight_match_torch_nn_grad():
    torch.manual_seed(1)
    x = torch.randn(2, 6, 9, 8)
    w = torch.randn(4, 3, 3, 3)  # a convolution's (C_out, C_in/groups, kH, kW), 2 groups
    dy = torch.randn(F.conv2d(x, w, stride=2, padding=1, groups=2).shape)
    got = ot.conv2d_input(x.shape, w, dy, stride=2, padding=1, groups=2)
    _check(got, lambda w, dy: torch.nn.grad.conv2d_input(x.shape, w, dy, stride=2, padding=1, groups=2),
           (w, dy), "f32", 2 * 9)
    xt = torch.randn(2, 4, 5, 5)  # conv_transpose2d's input, weight (4, 3, 3, 3)
    g = torch.randn(F.conv_transpose2d(xt, w, stride=2, padding=1, output_padding=1).shape)
    got = ot.conv_transpose2d_weight(xt, w.shape, g, stride=2, padding=1, output_padding=1)

    def reference(xt, g):
        w64 = torch.zeros(w.shape, dtype=torch.float64, requires_grad=True)
        with torch.enable_grad():
            return torch.autograd.grad(F.conv_transpose2d(xt, w64, stride=2, padding=1,
                                                          output_padding=1), w64, g)[0]
    _check(got, reference, (xt, g), "f32", 2 * 25)


def test_beyond_pytorch_asymmetric_and_same_padding_are_differentiable():
    x = torch.randn(1, 2, 4, 4, requires_grad=True)
    w = torch.randn(2, 3, 3, 3)
    y = ot.conv_transpose2d(x, w, stride=2, padding="same")
    assert y.shape[2:] == (8, 8)
    y.sum().backward()
    assert x.grad is not None and x.grad.shape == x.shape
    assert ot.conv_transpose2d(x, w, stride=2, padding=[(1, 0), (0, 1)]).shape[2:] == (8, 8)


@pytest.mark.parametrize("call, error, match", [
    (lambda x, w: ot.conv_transpose2d(x.numpy(), w), TypeError, "input must be a torch.Tensor"),
    (lambda x, w: ot.conv_transpose2d(x, w[:3]), ValueError, "weight .* expects 3 input channels"),
    (lambda x, w: ot.conv_transpose2d(x, w, stride=(2, 2, 2)), ValueError, "stride must be an int or a sequence of 1 or 2"),
    (lambda x, w: ot.conv_transpose2d(x, w, stride=0), ValueError, "stride must be >= 1"),
    (lambda x, w: ot.conv_transpose2d(x, w, groups=3), ValueError, "divisible by groups"),
    (lambda x, w: ot.conv_transpose2d(x[0, 0], w), ValueError, "input must be 3 or 4-D"),
    (lambda x, w: ot.conv_transpose2d(x, w, torch.zeros(5)), ValueError, "bias must have 3 elements"),
])
def test_bad_input_names_the_argument(call, error, match):
    x, w = torch.randn(1, 4, 3, 3), torch.randn(4, 3, 2, 2)
    with pytest.raises(error, match=match):
        call(x, w)


def test_one_element_sequences_broadcast_as_in_pytorch():
    x, w = torch.randn(1, 4, 3, 3), torch.randn(4, 3, 3, 3)
    kw = dict(stride=(2,), padding=(1,), output_padding=(1,), dilation=(1,))
    want = F.conv_transpose2d(x, w, **kw)
    assert torch.allclose(ot.conv_transpose2d(x, w, **kw), want, atol=1e-5)
    assert np.allclose(og.torch_like.conv_transpose2d(x, w, **kw), want.numpy(), atol=1e-5)


def test_an_unbatched_input_gives_an_unbatched_result():
    x, w = torch.randn(4, 3, 3), torch.randn(4, 3, 2, 2)
    assert torch.allclose(ot.conv_transpose2d(x, w, stride=2), F.conv_transpose2d(x, w, stride=2),
                          atol=1e-5)


@pytest.mark.parametrize("layer", [(512, 256, 4, 2, 1), (1024, 512, 4, 2, 1), (128, 64, 8, 4, 2)],
                         ids=["dcgan-512to256", "pix2pix-1024to512", "128to64-k8s4"])
def test_a_converted_wide_upsampler_matches_stock(layer):
    """Issue 44: ``ConvTranspose2d(512, 256, 4, 2, 1)`` with a bias, converted, returned
    values 2.6% of max |stock| off stock's on oneDNN 3.2 (the bias added up to 4 times on
    AMD Zen 4). Truth: stock torch.nn in float64 on the same f32 parameters and input; the
    converted f32 layer within 1e-4 of max |stock| (f32 sums of 512-1024 channels x 16
    taps stay near 1e-6 of it), forward in eval and training, and the input's gradient."""
    c_in, c_out, k, s, p = layer
    torch.manual_seed(0)
    stock = torch.nn.ConvTranspose2d(c_in, c_out, k, s, p)
    converted = ot.convert(torch.nn.Sequential(torch.nn.ConvTranspose2d(c_in, c_out, k, s, p)))
    converted[0].load_state_dict(stock.state_dict())
    exact = torch.nn.ConvTranspose2d(c_in, c_out, k, s, p).double()
    exact.load_state_dict(stock.state_dict())
    x = torch.randn(2, c_in, 4, 4)
    with torch.no_grad():
        want = exact(x.double())
        for mode in (converted.eval(), converted.train()):
            got = mode(x).double()
            assert (got - want).abs().max() <= 1e-4 * want.abs().max()
    x64 = x.double().requires_grad_(True)
    exact(x64).sum().backward()
    x32 = x.clone().requires_grad_(True)
    converted(x32).sum().backward()
    assert (x32.grad.double() - x64.grad).abs().max() <= 1e-4 * x64.grad.abs().max()
