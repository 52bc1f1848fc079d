"""NCX layers whose oneDNN calls run on channels-last copies (``torch/_via_nxc.py``).

Truth: PyTorch's conv_transpose2d/3d and their autograd in float64 on the same inputs,
within the package's bound (``onednn_graph.tolerance``: f32 accumulation of the products
each result sums). The copies move bits (``tests/native/test_casts.py`` holds them to
NumPy's transposes bit for bit), so a routed call's results are the NXC call's, held to
the bound of any call; the layer's results keep PyTorch's NCX strides.
"""

import copy
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import onednn_graph as og  # noqa: E402
import onednn_graph.torch as ot  # noqa: E402
from onednn_graph.tolerance import compare  # noqa: E402
from helpers import torch_gradient_references  # noqa: E402
from onednn_graph.torch import _eager, _via_nxc  # noqa: E402

F = torch.nn.functional

# (id, batch, C_in, C_out, kernel, stride, padding, output_padding, spatial input)
CASES = [
    ("mask-head", 2, 256, 256, 2, 2, 0, 0, (14, 14)),  # torchvision's Mask R-CNN head
    ("keypoint-head", 2, 512, 17, 4, 2, 1, 0, (14, 14)),  # and its Keypoint R-CNN head
    ("k3s2", 2, 24, 20, 3, 2, 1, 1, (9, 7)),  # not the rule's, forced: any geometry holds
    ("3d", 1, 16, 8, 2, 2, 0, 0, (4, 5, 3)),
]


def _numpy(t):
    return t.detach().to(torch.float64).numpy()


def _check(got, reference, args, terms):
    def ref_fn(*arrays):
        with torch.no_grad():
            return reference(*[torch.from_numpy(np.ascontiguousarray(a)) for a in arrays]).numpy()
    result = compare(_numpy(got), ref_fn, [_numpy(a) for a in args], {}, "f32", terms)
    assert result.ok, str(result)


def _layer(case):
    _, n, c_in, c_out, k, s, p, op, spatial = case
    torch.manual_seed(0)
    cls = torch.nn.ConvTranspose2d if len(spatial) == 2 else torch.nn.ConvTranspose3d
    stock = cls(c_in, c_out, k, s, p, op)
    return stock, ot.convert(cls(c_in, c_out, k, s, p, op)), torch.randn(n, c_in, *spatial)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_routed_calls_match_pytorch(monkeypatch, case):
    monkeypatch.setattr(_via_nxc, "FORCED", "1")
    stock, layer, x = _layer(case)
    layer.load_state_dict(stock.state_dict())
    w, b = stock.weight.detach(), stock.bias.detach()
    _, _, c_in, c_out, k, s, p, op, spatial = case
    nsp = len(spatial)
    theirs = getattr(F, f"conv_transpose{nsp}d")
    kw = dict(stride=s, padding=p, output_padding=op)
    x_before = x.clone()
    taps = k ** nsp

    def forward(x, w, b):
        return theirs(x, w, b, **kw)

    with torch.no_grad():
        y0 = layer(x)
    assert y0.is_contiguous() and "channels-last copies" in str(ot.report(layer))
    _check(y0, forward, (x, w, b), c_in * taps + 1)

    xs = x.clone().requires_grad_()
    y = layer(xs)
    assert y.is_contiguous()
    g = torch.randn(y.shape)
    gx, gw, gb = torch.autograd.grad(y, (xs, layer.weight, layer.bias), g)
    assert gx.is_contiguous()

    grad_input, grad_weight = torch_gradient_references(torch, theirs, x.shape, w.shape, **kw)

    _check(y, forward, (x, w, b), c_in * taps + 1)
    _check(gx, grad_input, (g, w), c_out * taps)
    _check(gw, grad_weight, (x, g), x.shape[0] * math.prod(spatial))
    _check(gb, lambda g: g.sum(dim=[0] + list(range(2, g.dim()))), (g,), g.numel() // g.shape[1])
    assert torch.equal(x, x_before)  # the copies read the caller's tensors, never write them


def test_each_call_computes_its_own_result_though_the_copies_reuse_memory(monkeypatch):
    # A call's result before its copy back and the gradient's copy live in memory the
    # thread keeps (``scratch_nxc``); results never do: an earlier result stays as it was.
    monkeypatch.setattr(_via_nxc, "FORCED", "1")
    stock, layer, x = _layer(CASES[0])
    layer.load_state_dict(stock.state_dict())
    with torch.no_grad():
        first = layer(x)
        kept = first.clone()
        second = layer(2 * x)
        torch.testing.assert_close(second, stock(2 * x), rtol=1e-4, atol=1e-4)
        assert torch.equal(first, kept) and not torch.equal(first, second)


def test_report_names_the_nxc_calls_and_the_copies(monkeypatch):
    # report() says how oneDNN computed each kind of call, as compile_op says it for the
    # NXC arrays the routed calls ran on, and that they ran on channels-last copies.
    monkeypatch.setattr(_via_nxc, "FORCED", "1")
    _, layer, x = _layer(CASES[1])
    x.requires_grad_()
    y = layer(x)
    g = torch.randn_like(y)
    y.backward(g)
    why = ot.report(layer)[0].why
    kw = dict(strides=(2, 2), pads_begin=(1, 1), pads_end=(1, 1), data_format="NXC", weights_format="IOX")
    src, dy = (np.ascontiguousarray(t.detach().numpy().transpose(0, 2, 3, 1)) for t in (x, g))
    w, b = layer.weight.detach().numpy(), layer.bias.detach().numpy()
    expected = {"ConvTranspose": og.compile_op("ConvTranspose", src=src, weights=w, bias=b, **kw).lowering,
                "ConvTransposeBackwardData": og.compile_op("ConvTransposeBackwardData", diff_dst=dy, weights=w,
                                                           **kw).lowering,
                "ConvTransposeBackwardWeights": og.compile_op("ConvTransposeBackwardWeights", src=src, diff_dst=dy,
                                                              weights_shape=w.shape, **kw).lowering}
    assert why.endswith("oneDNN's formulation (last call of each kind): " + "; ".join(
        f"{kind}: {how}{_via_nxc.NOTE}" for kind, how in expected.items())), why


def test_packed_inference_on_copies_matches_pytorch_and_says_so(monkeypatch):
    # In eval a layer packs its weights: the packed call runs on the copies too, as
    # compile_op's NXC call with constant weights (whose formulation this CPU family's
    # rules choose: a MatMul capped at AVX2). With inference=True its ReLU is fused.
    monkeypatch.setattr(_via_nxc, "FORCED", "1")
    stock, layer, x = _layer(CASES[0])
    layer.load_state_dict(stock.state_dict())
    fused = ot.convert(torch.nn.Sequential(copy.deepcopy(layer), torch.nn.ReLU()), inference=True).eval()
    model = layer.eval()
    with torch.inference_mode():
        for _ in range(2):  # the second call in a row with the weights unchanged packs them
            y, y_fused = model(x), fused(x)
    w, b = stock.weight.detach(), stock.bias.detach()
    _check(y, lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2), (x, w, b), 256 * 4 + 1)
    _check(y_fused, lambda x, w, b: torch.relu(F.conv_transpose2d(x, w, b, stride=2)), (x, w, b), 256 * 4 + 1)
    assert _via_nxc.NOTE in ot.report(fused)[0].why
    expected = og.compile_op("ConvTranspose", src=np.ascontiguousarray(x.numpy().transpose(0, 2, 3, 1)),
                             weights=w.numpy(), bias=b.numpy(), strides=(2, 2), data_format="NXC",
                             weights_format="IOX", constant_weights=True).lowering
    assert ot.report(model)[0].why.endswith(f"packed inference: {expected}{_via_nxc.NOTE}")


def test_the_copies_run_on_the_load_aware_thread_count(monkeypatch):
    # On a busy machine new calls get the threads other processes leave (_impl.machine_load);
    # the copies around them too: a copy on every thread waits for the threads others hold.
    # Truth: the count each copy was handed (one here, as a busy machine's reading says).
    from onednn_graph import _core
    from onednn_graph._impl import compiled as _compiled
    monkeypatch.setattr(_via_nxc, "FORCED", "1")
    monkeypatch.setattr(_compiled, "busy_threads", lambda: 1)
    counts, cast = [], _core.cast
    monkeypatch.setattr(_core, "cast", lambda src, dst, threads=0, *a: (counts.append(threads),
                                                                         cast(src, dst, threads, *a)))
    stock, layer, x = _layer(CASES[1])
    layer.load_state_dict(stock.state_dict())
    x.requires_grad_()
    y = layer(x)
    y.backward(torch.ones_like(y))
    assert len(counts) == 4 and set(counts) == {1}, counts  # input, result, gradient, its input's
    xs = x.detach().requires_grad_()
    stock(xs).backward(torch.ones_like(y))
    torch.testing.assert_close(x.grad, xs.grad, rtol=1e-4, atol=1e-3)  # (the bound: the test above)


# (why, layer, input shape, routed by default on Zen 4, and capped at AVX2)
RULE = [
    ("Mask R-CNN head", (256, 256, 2, 2, 0), (32, 256, 14, 14), True, True),
    ("its smallest batch in the rule", (256, 256, 2, 2, 0), (8, 256, 14, 14), True, True),
    ("Keypoint R-CNN head", (512, 17, 4, 2, 1), (16, 512, 14, 14), True, True),
    ("8 output channels", (512, 8, 4, 2, 1), (16, 512, 14, 14), True, False),
    ("k == s 512 -> 256", (512, 256, 2, 2, 0), (8, 256 * 2, 14, 14), False, False),  # 171 FLOPs/byte
    ("DCGAN 256 -> 128", (256, 128, 4, 2, 1), (16, 256, 8, 8), False, False),
    ("DCGAN 128 -> 64", (128, 64, 4, 2, 1), (16, 128, 16, 16), False, False),
    ("3 output channels", (64, 3, 4, 2, 1), (64, 64, 32, 32), False, False),
    ("k3s2 U-Net upsampler", (128, 64, 3, 2, 1), (2, 128, 64, 64), False, False),
    ("too few FLOPs", (256, 256, 2, 2, 0), (1, 256, 14, 14), False, False),
    ("too few FLOPs capped", (256, 256, 2, 2, 0), (2, 256, 14, 14), True, False),  # 205 MFLOP
]


def _call(layer_args, shape):
    c_in, c_out, k, s, p = layer_args
    out = [(i - 1) * s - 2 * p + k for i in shape[2:]]
    attrs = ([s, s], [p, p], [p, p], [0, 0], [1, 1], 1)
    return _eager.make_call(attrs, (shape[0], c_out, *out), shape, (c_in, c_out, k, k))


@pytest.mark.parametrize("why, layer_args, shape, zen4, avx2", RULE, ids=[r[0] for r in RULE])
def test_the_default_rule(why, layer_args, shape, zen4, avx2):
    call = _call(layer_args, shape)
    w_shape = (layer_args[0], layer_args[1], layer_args[2], layer_args[2])
    assert _via_nxc.routed(call, w_shape, (3, 2), "avx512_core_bf16") is zen4
    assert _via_nxc.routed(call, w_shape, (3, 2), "avx2") is avx2
    # only where it was measured: not on Sapphire Rapids or oneDNN 3.13, say
    assert not _via_nxc.routed(call, w_shape, (3, 2), "avx512_core_amx")
    assert not _via_nxc.routed(call, w_shape, (3, 13), "avx512_core_bf16")


def test_a_forward_alone_is_routed_up_to_a_size():
    # Without the input's gradient the copy of the result's gradient serves one call only:
    # the Mask R-CNN head at 100 RoIs is routed in training, not in inference.
    call = _call((256, 256, 2, 2, 0), (100, 256, 14, 14))
    assert _via_nxc.routed(call, (256, 256, 2, 2), (3, 2), "avx512_core_bf16")
    assert not _via_nxc.routed(call, (256, 256, 2, 2), (3, 2), "avx512_core_bf16", alone=True)
    call = _call((256, 256, 2, 2, 0), (32, 256, 14, 14))
    assert _via_nxc.routed(call, (256, 256, 2, 2), (3, 2), "avx512_core_bf16", alone=True)


def test_the_weights_gradient_alone_runs_on_the_ncx_tensors(monkeypatch):
    # A head on inputs that need no gradient: the forward routed, the weights' gradient
    # computed from the NCX input and gradient (no copy of the gradient for one call).
    monkeypatch.setattr(_via_nxc, "FORCED", "1")
    stock, layer, x = _layer(CASES[0])
    layer.load_state_dict(stock.state_dict())
    y = layer(x)
    g = torch.randn_like(y)
    y.backward(g)
    stock(x).backward(g)
    why = ot.report(layer)[0].why
    forward, weights = why.split("ConvTransposeBackwardWeights: ")
    assert forward.endswith(f"{_via_nxc.NOTE}; ") and _via_nxc.NOTE not in weights, why
    # (the same sums in another order as PyTorch's: f32 rounding apart; the bound is the test above's)
    torch.testing.assert_close(layer.weight.grad, stock.weight.grad, rtol=1e-4, atol=1e-3)
    torch.testing.assert_close(layer.bias.grad, stock.bias.grad, rtol=1e-5, atol=1e-2)


def test_channels_last_and_low_precision_layers_are_not_routed():
    call = _call((256, 256, 2, 2, 0), (32, 256, 14, 14))
    w32, w16 = np.zeros((256, 256, 2, 2), np.float32), np.zeros((256, 256, 2, 2), np.float16)
    assert _via_nxc.axes_for(call, torch.channels_last, w32) is None  # already NXC
    assert _via_nxc.axes_for(call, torch.contiguous_format, w16) is None  # f32 copies only


# Inductor itself calls the deprecated torch.jit.script_method (PyTorch 2.13).
@pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")
@pytest.mark.torch_kernels  # (whose kernel torch.compile's graph takes: the choice itself)
@pytest.mark.parametrize("route", ["1", "0"], ids=["routed", "not routed"])
def test_under_torch_compile_a_routed_plain_layer_keeps_the_packages_op(monkeypatch, route):
    # A plain layer in eval is torch's convolution in torch.compile's graph
    # (_kernel_choice.plain_in_graph), but where its call runs on channels-last copies the
    # package's op computes it so (_via_nxc.routed_in_graph); stock's values either way.
    monkeypatch.setattr(_via_nxc, "FORCED", route)
    stock, layer, x = _layer(CASES[1])
    layer.load_state_dict(stock.state_dict())
    model = ot.convert(torch.nn.Sequential(layer), inference=True).eval()
    with torch.inference_mode():
        got, want = torch.compile(model, fullgraph=True)(x), stock.eval()(x)
    # (the same sums in another order: f32 rounding apart; the bound is the tests' above)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=2e-4)
    with torch.no_grad():
        explained = torch._dynamo.explain(model)(x)
    ops = [str(n.target) for g in explained.graphs for n in g.graph.nodes if n.op == "call_function"]
    assert any("conv_transpose_inference" in op for op in ops) == (route == "1"), ops


@pytest.mark.torch_kernels  # (report() names torch.compile's choice only where it is made)
def test_report_names_the_copies_only_for_layers_the_rule_can_route(monkeypatch):
    monkeypatch.setattr(_via_nxc, "FORCED", "")  # the default rule (the environment's A/B switch off)
    # What a layer fixes (2-D, groups 1, kernel == stride or twice it with half-stride pads,
    # enough output channels for the family) decides whether any of its calls may run on
    # copies; report() says "but for calls on channels-last copies" only then.
    zen4, avx2 = ((3, 2), "avx512_core_bf16"), ((3, 2), "avx2")
    head = torch.nn.ConvTranspose2d(256, 256, 2, 2)
    keypoint, eight = torch.nn.ConvTranspose2d(512, 17, 4, 2, 1), torch.nn.ConvTranspose2d(512, 8, 4, 2, 1)
    assert all(_via_nxc.may_route(m, *zen4) for m in (head, keypoint, eight))
    assert _via_nxc.may_route(keypoint, *avx2) and not _via_nxc.may_route(eight, *avx2)  # from 16 there
    for other in (torch.nn.ConvTranspose2d(64, 32, 3, 2, 1, 1),  # k3s2: not the rule's
                  torch.nn.ConvTranspose2d(64, 32, 2, 2, groups=2),
                  torch.nn.ConvTranspose3d(16, 16, 2, 2)):
        assert not _via_nxc.may_route(other, *zen4)
    assert not _via_nxc.may_route(head, (3, 13), "avx512_core_bf16")
    assert not _via_nxc.may_route(head, (3, 2), "avx512_core_amx")
    layer = ot.convert(torch.nn.Sequential(torch.nn.ConvTranspose2d(64, 32, 3, 2, 1, 1)))
    with torch.inference_mode():
        layer.eval()(torch.randn(1, 64, 8, 8))
    assert "channels-last copies" not in ot.report(layer)[0].why
    if _via_nxc.may_route(head):  # (a CPU family the rule was measured on)
        layer = ot.convert(torch.nn.Sequential(torch.nn.ConvTranspose2d(64, 64, 2, 2)))
        assert "but for calls on channels-last copies" in ot.report(layer)[0].why
