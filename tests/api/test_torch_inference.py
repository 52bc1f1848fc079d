"""``convert(model, inference=True)`` (issue 45): in eval, each converted layer computes the
BatchNorm and activation after it, folded and fused into one oneDNN partition with its
weights packed once; training is unchanged.

Truth: the stock model (torch.nn) with the same parameters and state, run the same way;
the converted one within 1e-4 of max |stock| in f32 (folding rounds the weights once more
in f32, and the sums run in another order: both near 1e-6 of the output), and the bf16
bound below under bf16 autocast. Every way a parameter or statistic can change after the
weights were packed is made, then the next output compared: no result may be stale.
"""

import copy
import io

import pytest

torch = pytest.importorskip("torch")

import onednn_graph as og  # noqa: E402
import onednn_graph.torch as ot  # noqa: E402
from onednn_graph.torch import _inference, _kernel_choice, _subpixel  # noqa: E402

ACTIVATIONS = {
    "ReLU": torch.nn.ReLU(), "LeakyReLU": torch.nn.LeakyReLU(0.2), "GELU": torch.nn.GELU(),
    "Tanh": torch.nn.Tanh(), "Sigmoid": torch.nn.Sigmoid(), "ELU": torch.nn.ELU(0.7),
    "Hardswish": torch.nn.Hardswish(), "Mish": torch.nn.Mish(), "ReLU6": torch.nn.ReLU6(),
    "Hardtanh": torch.nn.Hardtanh(-0.5, 0.5), "SiLU (not fused)": torch.nn.SiLU(),
    "GELU tanh (not fused)": torch.nn.GELU(approximate="tanh"),
}


def _generator(act=None, groups=1, bias=False, c=(16, 32, 16, 3)):
    """A DCGAN-style generator: ConvTranspose2d, BatchNorm2d and an activation per block."""
    torch.manual_seed(0)
    layers = []
    for i, (a, b) in enumerate(zip(c, c[1:])):
        layers.append(torch.nn.ConvTranspose2d(a, b, 4, 1 if i == 0 else 2, 0 if i == 0 else 1,
                                               bias=bias, groups=groups if i == 1 else 1))
        if i < len(c) - 2:
            layers += [torch.nn.BatchNorm2d(b), copy.deepcopy(act or torch.nn.ReLU())]
    layers.append(torch.nn.Tanh())
    model = torch.nn.Sequential(*layers)
    with torch.no_grad():  # running statistics of a trained model, not the defaults
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)
    return model.eval()


def _close(got, want, tol=1e-4):
    got, want = got.detach().float(), want.detach().float()
    return float((got - want).abs().max()) <= tol * float(want.abs().max())


def _pair(**kw):
    stock = _generator(**kw)
    return stock, ot.convert(stock, inference=True)


@pytest.mark.parametrize("act", list(ACTIVATIONS), ids=list(ACTIVATIONS))
def test_eval_folds_fuses_and_matches_stock(act):
    stock, model = _pair(act=ACTIVATIONS[act])
    fused = "not fused" not in act
    for r in ot.report(model):
        assert "weights packed once" in r.why
        if r.path != "6":  # the last layer: Tanh only
            assert "BatchNorm2d folded" in r.why
            assert (f"{type(ACTIVATIONS[act]).__name__} fused" in r.why) == fused
    for n in (1, 5):
        z = torch.randn(n, 16, 1, 1)
        with torch.no_grad():
            assert _close(model(z), stock(z))
        with torch.inference_mode():
            assert _close(model(z), stock(z))


@pytest.mark.parametrize("case", ["grouped", "bias", "channels_last input"])
def test_other_layers_and_layouts(case):
    stock, model = _pair(groups=2 if case == "grouped" else 1, bias=case == "bias")
    z = torch.randn(3, 16, 1, 1)
    if case == "channels_last input":
        z = torch.randn(3, 16, 2, 2).to(memory_format=torch.channels_last)
    with torch.no_grad():
        got, want = model(z), stock(z)
    assert _close(got, want)
    assert got.is_contiguous() == want.is_contiguous()  # the model's result: stock's layout


@pytest.mark.parametrize("channels_last", [False, True], ids=["NCHW", "channels-last"])
@pytest.mark.parametrize("bias", [False, True], ids=["no bias", "bias"])
def test_a_few_channel_last_layer_runs_as_one_subpixel_convolution(channels_last, bias):
    # A generator's last block at a real model's width (64 -> 3 channels, k4 s2 p1, after
    # BatchNorm + ReLU) where the default rule makes it the sub-pixel Convolution
    # (_impl/subpixel_form.py) on the CPUs it was measured on: its weights gathered and
    # packed once, Tanh fused; against stock, then after an in-place change of the weights.
    from onednn_graph._impl import lowering
    stock = _generator(bias=bias, c=(16, 64, 3))
    model = ot.convert(copy.deepcopy(stock), inference=True)
    z = torch.randn(2, 16, 1, 1)
    x = torch.randn(24, 64, 32, 32)  # 151 MFLOP: over every family's threshold (SUBPIXEL_CHANNELS)
    x = x.to(memory_format=torch.channels_last) if channels_last else x
    last = model[3]
    with torch.inference_mode():
        assert _close(model(z), stock(z))
        got, want = last(x), stock[4](stock[3](x))  # the layer applies the Tanh after it
        assert _close(got, want)
        assert got.stride() == want.stride()
        packed = _inference._packed[id(last)][1]
        if (lowering.LINKED, lowering.HOST_ISA) in lowering.SUBPIXEL_CHANNELS:
            assert isinstance(packed.fused, _subpixel.SubpixelCall)
            # report() names it as compile_op does the same problem
            w = last.weight.detach().numpy()
            fmt = "NXC" if channels_last else "NCX"
            src = x.permute(0, 2, 3, 1).numpy() if channels_last else x.numpy()
            expected = og.compile_op("ConvTranspose", src=src, weights=w, strides=(2, 2), pads_begin=(1, 1),
                                     pads_end=(1, 1), data_format=fmt, weights_format="IOX").lowering
            assert {r.path: r.why for r in ot.report(model)}["3"].endswith(f"packed inference: {expected}")
    with torch.no_grad():
        for m in (last, stock[3]):
            m.weight.mul_(-0.5)
    with torch.inference_mode():
        assert _close(last(x), stock[4](stock[3](x)))


@pytest.mark.parametrize("layer,act", [
    ((16, 1, 3, 1, 1), None),            # stride 1, one output channel: the packed Convolution
    ((64, 3, 4, 4, 0), None),            # kernel == stride, three channels: the MatMul
    ((16, 1, 3, 1, 1), torch.nn.ReLU()),  # with its activation fused: the op as written
    ((64, 3, 4, 4, 0), torch.nn.ReLU()),  # the MatMul takes it as its post-op
], ids=["packed", "matmul", "packed, activation fused", "matmul, activation fused"])
@pytest.mark.parametrize("channels_last", [False, True], ids=["NCHW", "channels-last"])
def test_a_faster_formulation_on_views_runs_prepared_once(layer, act, channels_last):
    # Where the default rules give the op a formulation on views of the arrays
    # (_impl.lowering.preferred), the inference call runs it, prepared once on the folded
    # weights; against stock, then after an in-place change of the weights.
    torch.manual_seed(0)
    c, o, k, s, p = layer
    stock = torch.nn.Sequential(*[torch.nn.ConvTranspose2d(c, o, k, s, p)] + ([act] if act else [])).eval()
    model = ot.convert(copy.deepcopy(stock), inference=True)
    x = torch.randn(8, c, 32, 32)
    x = x.to(memory_format=torch.channels_last) if channels_last else x
    with torch.inference_mode():
        model(x)  # (a layer with nothing to fold packs on its second call, as a plain one)
        got, want = model(x), stock(x)
        assert _close(got, want)
        # the same layout (a 1-channel axis's stride says nothing of it)
        assert [st for st, n in zip(got.stride(), got.shape) if n > 1] == \
            [st for st, n in zip(want.stride(), want.shape) if n > 1]
    # Which way the call took: a formulation on views where the rules give the op one on
    # this CPU and no post-op is fused or it takes post-ops (the MatMul, the sub-pixel
    # Convolution; the call has no native op then), else the op.
    import numpy as np
    from onednn_graph._impl import lowering, plan
    fmt = "NXC" if channels_last else "NCX"
    src = np.zeros((8, 32, 32, c) if channels_last else (8, c, 32, 32), np.float32)
    cp = plan.plan_call("ConvTranspose", ("src", "weights", "bias"),
                        [src, np.zeros((c, o, k, k), np.float32), np.zeros((o,), np.float32)],
                        dict(strides=[s, s], pads_begin=[p, p], pads_end=[p, p], data_format=fmt,
                             weights_format="IOX"))
    on_views = lowering.formed(cp.way) in ("matmul", "subpixel") or (lowering.formed(cp.way) is not None
                                                                    and act is None)
    # (nor where the package lowers the op's epilogue: the functional API's fused call)
    assert (_inference._packed[id(model[0])][1].op is None) == (on_views or cp.native.lowering != "native")
    with torch.no_grad():
        for m in (model, stock):
            m[0].weight.mul_(-0.5)
    with torch.inference_mode():
        assert _close(model(x), stock(x))


@pytest.mark.parametrize("bf16", [False, True], ids=["f32", "bf16 autocast"])
@pytest.mark.parametrize("act", [torch.nn.ReLU(), torch.nn.LeakyReLU(0.2), None], ids=["ReLU", "LeakyReLU", "none"])
def test_a_latent_vectors_layer_runs_as_one_matmul_with_its_epilogue(act, bf16):
    # DCGAN's first block at its real width (100 -> 512, 1 x 1 -> 4 x 4, BatchNorm, an
    # activation) at batch 16 (26 MFLOP): where the default rule makes a one-position input
    # the MatMul (_impl.lowering.MATMUL_ONE_POSITION; in bf16 with its weights constant,
    # MATMUL_ONE_POSITION_BF16), the folded weights and bias are its constant matrices and
    # the activation its post-op; its result channels-last for the next layer as before.
    # Against stock, then after an in-place change of the weights and of the BatchNorm's
    # statistics; in bf16 within a few units of 2**-8 (each layer's result rounded).
    from onednn_graph._impl import lowering
    torch.manual_seed(0)
    stock = torch.nn.Sequential(torch.nn.ConvTranspose2d(100, 512, 4, 1, 0, bias=False), torch.nn.BatchNorm2d(512),
                                *([act] if act else []), torch.nn.ConvTranspose2d(512, 8, 4, 2, 1)).eval()
    with torch.no_grad():
        stock[1].running_mean.uniform_(-0.5, 0.5)
        stock[1].running_var.uniform_(0.5, 2.0)
    model = ot.convert(copy.deepcopy(stock), inference=True)
    z = torch.randn(16, 100, 1, 1)
    first = model[0]
    tol = 3e-2 if bf16 else 1e-4
    with torch.inference_mode(), torch.autocast("cpu", torch.bfloat16, enabled=bf16):
        for _ in range(2):
            assert _close(model(z), stock(z), tol)
        block = len(stock) - 1
        got, want = model[:block](z), stock[:block](z)
        assert got.dtype == want.dtype and _close(got, want, tol)
        assert got.is_contiguous(memory_format=torch.channels_last)  # handed on channels-last
    why = {r.path: r.why for r in ot.report(model)}["0"]
    if (lowering.LINKED, lowering.HOST_ISA) in (lowering.MATMUL_ONE_POSITION_BF16 if bf16
                                                 else lowering.MATMUL_ONE_POSITION):
        assert _inference._packed[id(first)][1].op is None
        assert "packed inference: one MatMul" in why and "one input position" in why
        assert ("constant bf16 weights" in why) == bf16
        assert why.endswith("its epilogue fused") == (act is not None)
    with torch.no_grad():
        for m in (model, stock):
            m[0].weight.mul_(-0.5)
            m[1].running_var.mul_(2.0)
    with torch.inference_mode(), torch.autocast("cpu", torch.bfloat16, enabled=bf16):
        assert _close(model(z), stock(z), tol)


@pytest.mark.torch_kernels  # the default rule decides (not held to oneDNN)
@pytest.mark.parametrize("bn", [True, False], ids=["BatchNorm", "no BatchNorm"])
def test_a_layer_torch_nn_computes_folds_once_and_is_never_stale(bn, monkeypatch):
    # A tiny layer, which the default rule gives torch.nn's kernel: its BatchNorm folded
    # once (per change of the statistics), torch.nn's function on the folded weights.
    torch.manual_seed(0)
    stock = torch.nn.Sequential(torch.nn.ConvTranspose2d(8, 8, 2, stride=2),
                                *([torch.nn.BatchNorm2d(8)] if bn else []), torch.nn.ReLU()).eval()
    model = ot.convert(copy.deepcopy(stock), inference=True)
    x = torch.randn(1, 8, 4, 4)
    with torch.no_grad():
        if not _kernel_choice.by_rule(model[0], x, model[0].weight):
            pytest.skip("the default rule gives oneDNN this call on this machine")
    folds = []
    real_fold = _inference.fold
    monkeypatch.setattr(_inference, "fold", lambda *a: folds.append(1) or real_fold(*a))
    with torch.inference_mode():
        for _ in range(3):
            assert _close(model(x), stock(x))
    assert len(folds) == 1 and "torch.nn" in str(ot.report(model))
    batch = torch.randn(4, 8, 4, 4) * 3
    for m in (stock, model):  # the statistics or the weights move: folded again
        m.train()
        m(batch)
        m.eval()
        with torch.no_grad():
            m[0].weight.mul_(-1.5)
        m[0].padding = (1, 1)  # and an attribute: another call
    with torch.inference_mode():
        assert _close(model(x), stock(x))
    assert len(folds) == 2


def test_bf16_autocast_packs_bf16_weights_once():
    stock, model = _pair()
    z = torch.randn(4, 16, 1, 1)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        want = stock(z)
        got = model(z)
        assert got.dtype == want.dtype == torch.bfloat16
        packed = {id(m): _inference._packed[id(m)][1] for m in model if id(m) in _inference._packed}
        model(z)
        assert {id(m): _inference._packed[id(m)][1] for m in model if id(m) in _inference._packed} == packed
    # bf16 rounds each layer's result (8 bits): a few units of 2**-8 over three layers
    assert _close(got, want, tol=0.05)


def test_training_is_unchanged():
    stock, model = _pair()
    plain = ot.convert(stock)
    stock.train(), model.train(), plain.train()
    z = torch.randn(6, 16, 1, 1)
    got, want = model(z), plain(z)
    assert torch.equal(got, want)  # the same modules, the same kernels
    got.square().mean().backward()
    want.square().mean().backward()
    for a, b in zip(model.parameters(), plain.parameters()):
        assert torch.equal(a.grad, b.grad)


def test_eval_with_gradients_folds_with_torch_ops():
    stock, model = _pair()
    z = torch.randn(3, 16, 1, 1, requires_grad=True)
    got, want = model(z), stock(z)
    assert _close(got, want)
    (gz,) = torch.autograd.grad(got.square().sum(), z)
    (wz,) = torch.autograd.grad(want.square().sum(), z)
    assert _close(gz, wz)
    grads = torch.autograd.grad(model(z).sum(), list(model.parameters()))
    stock_grads = torch.autograd.grad(stock(z).sum(), list(stock.parameters()))
    for a, b in zip(grads, stock_grads):
        assert _close(a, b, tol=1e-3)


# Each way the packed weights can go stale: the change, made after a packed call.
def _in_place(m, s):
    with torch.no_grad():
        for p in (m[0].weight, s[0].weight):
            p.mul_(1.5)


def _data_assigned(m, s):
    new = torch.randn_like(s[0].weight)
    m[0].weight.data = new.clone()
    s[0].weight.data = new.clone()


def _optimizer_step(m, s):
    for model in (m, s):
        model.train()
        opt = torch.optim.SGD(model.parameters(), lr=0.5)
        torch.manual_seed(1)
        model(torch.randn(4, 16, 1, 1)).square().mean().backward()
        opt.step()
        model.eval()


def _load_state_dict(m, s):
    other = _generator()
    with torch.no_grad():
        for p in other.parameters():
            p.add_(0.3)
    m.load_state_dict(other.state_dict())
    s.load_state_dict(other.state_dict())


def _replaced(m, s):
    new = torch.nn.Parameter(torch.randn_like(s[3].weight))
    m[3].weight = torch.nn.Parameter(new.detach().clone())
    s[3].weight = torch.nn.Parameter(new.detach().clone())


def _to_dtype_and_back(m, s):
    for model in (m, s):
        model.double()
        with torch.no_grad():
            model[0].weight.mul_(0.5)
        model.float()


def _running_stats_moved(m, s):
    for model in (m, s):
        model.train()
        torch.manual_seed(2)
        with torch.no_grad():
            model(torch.randn(8, 16, 1, 1) * 3)
        model.eval()


def _bn_affine_edited(m, s):
    with torch.no_grad():
        m[1].bias.add_(1.0)
        s[1].bias.add_(1.0)


def _through_data_then_refresh(m, s):
    m[0].weight.data.mul_(2.0)  # PyTorch's version counters do not see this write
    s[0].weight.data.mul_(2.0)
    ot.refresh(m)


def _attribute_changed(m, s):
    for model in (m, s):  # the second layer's result 6 x 6 instead of 8 x 8
        model[3].padding = (2, 2)


CHANGES = [_in_place, _data_assigned, _optimizer_step, _load_state_dict, _replaced,
           _to_dtype_and_back, _running_stats_moved, _bn_affine_edited, _through_data_then_refresh,
           _attribute_changed]


@pytest.mark.parametrize("inference", [True, False], ids=["inference=True", "plain convert"])
@pytest.mark.parametrize("change", CHANGES, ids=[c.__name__.strip("_") for c in CHANGES])
def test_no_stale_result_after_a_change(change, inference):
    # A plain converted layer in eval packs its weights too, on its second call with them
    # unchanged (``_inference.forward_plain``): two calls before the change and after it.
    stock = _generator()
    model = ot.convert(stock, inference=inference)
    z = torch.randn(2, 16, 1, 1)
    with torch.no_grad():
        for _ in range(2):
            assert _close(model(z), stock(z))
    assert type(_inference._packed[id(model[0])][1]) is _inference._Packed  # packed now
    change(model, stock)
    with torch.no_grad():
        for _ in range(2):
            assert _close(model(z), stock(z))


@pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_a_model_built_under_inference_mode(compiled):
    # Its parameters are inference tensors, of which PyTorch keeps no version: nothing of
    # them may be kept packed, or an in-place write under inference_mode would go unseen.
    with torch.inference_mode():
        stock = _generator()
        model = ot.convert(copy.deepcopy(stock), inference=True)
        run = torch.compile(model) if compiled else model
        z = torch.randn(2, 16, 1, 1)
        assert _close(run(z), stock(z))
        for m in (model, stock):
            m[0].weight.mul_(-0.5)
            m[1].running_var.mul_(2.0)
        assert _close(run(z), stock(z))


def test_report_names_the_packed_calls_formulation(monkeypatch):
    # A mask head's layer with its ReLU fused, packed in inference: report() says how oneDNN
    # computes the packed call, as compile_op says it for the same problem (f32 NCX: the
    # op as itself, "native"; on the NCX data, not channels-last copies:
    # test_torch_nxc_route.py reports those).
    from onednn_graph.torch import _via_nxc
    monkeypatch.setattr(_via_nxc, "FORCED", "0")
    torch.manual_seed(0)
    model = ot.convert(torch.nn.Sequential(torch.nn.ConvTranspose2d(256, 256, 2, 2), torch.nn.ReLU()),
                       inference=True).eval()
    z = torch.randn(2, 256, 14, 14)
    with torch.inference_mode():
        model(z)
        model(z)  # the second call in a row with the weights unchanged packs them
    w, b = (t.detach().numpy() for t in (model[0].weight, model[0].bias))
    expected = og.compile_op("ConvTranspose", src=z.numpy(), weights=w, bias=b, strides=(2, 2),
                             data_format="NCX", weights_format="IOX", constant_weights=True).lowering
    assert ot.report(model)[0].why.endswith(f"packed inference: {expected}")


def test_a_parametrized_weight_whose_original_changes():
    torch.manual_seed(0)
    stock = torch.nn.Sequential(
        torch.nn.utils.parametrizations.weight_norm(torch.nn.ConvTranspose2d(8, 4, 4, 2, 1)),
        torch.nn.BatchNorm2d(4), torch.nn.ReLU()).eval()
    model = ot.convert(stock, inference=True)
    assert "BatchNorm2d folded" in ot.report(model)[0].why
    z = torch.randn(2, 8, 3, 3)
    with torch.no_grad():
        assert _close(model(z), stock(z))
        for m in (model, stock):
            m[0].parametrizations.weight.original1.mul_(-1.0)
        assert _close(model(z), stock(z))


class _Hidden(torch.nn.Module):
    """A weight-normed layer whose structure neither torch.fx (data-dependent control flow)
    nor an nn.Sequential shows (a vocoder's upsampler, Oobleck's)."""

    def __init__(self):
        super().__init__()
        self.up = torch.nn.utils.parametrizations.weight_norm(torch.nn.ConvTranspose2d(8, 4, 4, 2, 1))

    def forward(self, x):
        if float(x.sum()) > -1e9:
            x = torch.relu(x)
        return self.up(x)


@pytest.mark.torch_kernels  # torch's convolution under compile: not held to oneDNN
@pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")
def test_a_layer_whose_structure_is_hidden_is_packed_and_never_stale():
    torch.manual_seed(0)
    stock = _Hidden().eval()
    model = ot.convert(copy.deepcopy(stock), inference=True)
    assert "weights packed once" in ot.report(model)[0].why
    z = torch.randn(2, 8, 5, 5)
    with torch.inference_mode():
        assert _close(model(z), stock(z))
    assert id(model.up) in _inference._packed  # its weights packed, not reordered each call
    with torch.no_grad():
        for m in (model, stock):
            m.up.parametrizations.weight.original1.mul_(-1.0)
    with torch.inference_mode():
        assert _close(model(z), stock(z))
        # compiled: nothing to fold or fuse, torch's convolution in the graph
        assert _close(torch.compile(model)(z), stock(z))
    with torch.no_grad():
        explained = torch._dynamo.explain(model)(z)
    ops = [str(n.target) for g in explained.graphs for n in g.graph.nodes if n.op == "call_function"]
    assert not any("onednn_graph" in op for op in ops), ops


def test_revert_copy_and_pickle():
    stock, model = _pair()
    z = torch.randn(2, 16, 1, 1)
    with torch.no_grad():
        want = stock(z)
        model(z)  # packed and handed on: what a layer keeps of a call must pickle
        for m in (copy.deepcopy(model), torch.load(_saved(model), weights_only=False)):
            assert _close(m(z), want)
            assert "BatchNorm2d folded" in ot.report(m)[0].why
        back = ot.revert(model)
        assert type(back[1]) is torch.nn.BatchNorm2d and type(back[2]) is torch.nn.ReLU
        assert not any("_onednn" in k for m in back.modules() for k in vars(m))
        assert _close(back(z), want)


def _saved(model):
    buffer = io.BytesIO()
    torch.save(model, buffer)
    buffer.seek(0)
    return buffer


def test_a_traced_structure_folds_and_a_shared_module_does_not():
    class Block(torch.nn.Module):
        def __init__(self, shared):
            super().__init__()
            self.up = torch.nn.ConvTranspose2d(8, 8, 4, 2, 1)
            self.norm = torch.nn.BatchNorm2d(8)
            self.act = shared
            self.up2 = torch.nn.ConvTranspose2d(8, 4, 2, 2)

        def forward(self, x):
            y = self.act(self.norm(self.up(x)))
            return self.act(self.up2(y)) + 1

    torch.manual_seed(0)
    stock = Block(torch.nn.ReLU()).eval()
    model = ot.convert(stock, inference=True)
    why = {r.path: r.why for r in ot.report(model)}
    assert "BatchNorm2d folded" in why["up"] and "ReLU" not in why["up"]  # the ReLU is used twice
    z = torch.randn(2, 8, 3, 3)
    with torch.no_grad():
        assert _close(model(z), stock(z))


# Inductor itself calls the deprecated torch.jit.script_method (PyTorch 2.13).
@pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")
def test_compiled_inference_matches_eager():
    stock, model = _pair()
    z = torch.randn(2, 16, 1, 1)
    compiled = torch.compile(model, fullgraph=True)
    with torch.no_grad():
        assert _close(compiled(z), stock(z))
    og.cache.clear_cache()


# Under torch.compile a converted layer's inference is one registered op
# (``onednn_graph::conv_transpose_inference``) whose implementation packs per weight.
COMPILE_WARNINGS = pytest.mark.filterwarnings(
    "ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")


def _counting(monkeypatch):
    """How many times the registered op ran (its implementation looks this up per call)."""
    calls = []
    real = _inference.run_registered

    def counted(*args):
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(_inference, "run_registered", counted)
    return calls


@COMPILE_WARNINGS
def test_compiled_inference_runs_the_registered_op(monkeypatch):
    stock, model = _pair()
    calls = _counting(monkeypatch)
    compiled = torch.compile(model, fullgraph=True)
    z = torch.randn(3, 16, 1, 1)
    with torch.inference_mode():
        assert _close(compiled(z), stock(z))
    assert len(calls) == 3  # the three layers, each with its BatchNorm and activation inside


@COMPILE_WARNINGS
def test_compiled_inference_with_dynamic_shapes():
    """The op's fake implementation reads its geometry from the config string: symbolic
    batch sizes give the shapes eager gives (values against the stock model)."""
    stock, model = _pair()
    compiled = torch.compile(model, dynamic=True, fullgraph=True)
    with torch.no_grad():
        for n in (2, 3, 5):
            z = torch.randn(n, 16, 1, 1)
            assert _close(compiled(z), stock(z))


@COMPILE_WARNINGS
def test_an_exported_inference_model_saves_and_loads():
    """torch.export holds the registered op with its config string (a constant of the
    program), which survives torch.export.save/load."""
    stock, model = _pair()
    z = torch.randn(2, 16, 1, 1)
    with torch.no_grad():
        program = torch.export.export(model, (z,))
    ops = [str(n.target) for n in program.graph.nodes if n.op == "call_function"]
    assert ops.count("onednn_graph.conv_transpose_inference.default") == 3, ops
    buffer = io.BytesIO()
    torch.export.save(program, buffer)
    buffer.seek(0)
    loaded = torch.export.load(buffer)
    with torch.no_grad():
        assert _close(loaded.module()(z), stock(z))


_POSTS = [None, ("ReLU", {}), ("LeakyReLU", {"alpha": 0.2}), ("Elu", {"alpha": 1.0}),
          ("Clamp", {"min": 0.0, "max": 6.0}), ("Clamp", {"min": float("-inf"), "max": 1 / 3})]


@pytest.mark.parametrize("post", _POSTS, ids=lambda p: "none" if p is None else p[0] + str(len(p[1])))
@pytest.mark.parametrize("layout", [_inference.LAYOUT_STOCK, _inference.LAYOUT_CHANNELS_LAST,
                                    _inference.LAYOUT_HANDED])
def test_the_registered_ops_config_reads_back_exactly(post, layout):
    """The op's attributes travel as one string (``config_of``): every field, floats
    bit for bit (repr/float round-trip, infinities included), 1-D to 3-D geometries."""
    for g in (_inference.Geometry((2,), (1,), (1,), (1,), 1),
              _inference.Geometry((2, 3), (0, 1), (1, 0), (1, 2), 4),
              _inference.Geometry((1, 2, 2), (0, 0, 1), (0, 0, 0), (1, 1, 1), 2)):
        text = _inference.config_of(g, 1.0000000000000002e-05, post, layout)
        assert _inference.parsed_config(text) == (g, 1.0000000000000002e-05, post, layout)


@pytest.mark.parametrize("case", ["plain", "batchnorm", "channels-last"])
def test_the_registered_op_passes_opcheck(case):
    """torch.library.opcheck on the op defined without custom_op (schema, the autograd
    fallback's registration, the fake implementation's shapes and strides against the
    real ones, AOT dispatch with dynamic shapes)."""
    torch.manual_seed(0)
    x, w, b = torch.randn(2, 8, 5, 5), torch.randn(8, 4, 4, 4), torch.randn(4)
    norm = (torch.rand(4) + 0.5, torch.randn(4), torch.randn(4), torch.rand(4) + 0.5, torch.tensor(3)) \
        if case == "batchnorm" else (None,) * 5
    layout = _inference.LAYOUT_CHANNELS_LAST if case == "channels-last" else _inference.LAYOUT_STOCK
    if case == "channels-last":
        x = x.contiguous(memory_format=torch.channels_last)
    config = _inference.config_of(_inference.Geometry((2, 2), (1, 1), (0, 0), (1, 1), 1), 1e-5,
                                  ("ReLU", {}), layout)
    result = torch.library.opcheck(torch.ops.onednn_graph.conv_transpose_inference.default,
                                   (x, w, b, *norm, config))
    assert set(result.values()) == {"SUCCESS"}, result


@pytest.mark.parametrize("config", [
    "", "stride=2,2", "padding=1,1;stride=2,2;output_padding=0,0;dilation=1,1;groups=1;layout=0;bn_eps=0.0",
    "stride=2,x;padding=1,1;output_padding=0,0;dilation=1,1;groups=1;layout=0;bn_eps=0.0",
    "stride=2,2;padding=1,1;output_padding=0,0;dilation=1,1;groups=1;layout=0;bn_eps=0.0;alpha=1.0",
    "stride=2,2;padding=1,1;output_padding=0,0;dilation=1,1;groups=1;layout=0;bn_eps=0.0;post=Elu;alpha=a"])
def test_a_bad_config_is_refused_by_the_registered_op(config):
    op = torch.ops.onednn_graph.conv_transpose_inference
    with pytest.raises(ValueError, match="conv_transpose_inference: config"):
        op(torch.randn(1, 4, 3, 3), torch.randn(4, 2, 2, 2), None, None, None, None, None, None, config)


@COMPILE_WARNINGS
@pytest.mark.parametrize("change", [_in_place, _replaced, _load_state_dict, _running_stats_moved,
                                    _bn_affine_edited, _attribute_changed],
                         ids=lambda c: c.__name__.strip("_"))
def test_compiled_inference_is_never_stale(change):
    """The compiled graph holds the parameters, not their values: a change after the
    first compiled call reaches the next (the op compares stamps as a layer does)."""
    stock, model = _pair()
    model.load_state_dict(stock.state_dict())
    compiled = torch.compile(model)
    z = torch.randn(2, 16, 1, 1)
    with torch.no_grad():
        assert _close(compiled(z), stock(z))
    change(model, stock)
    with torch.no_grad():
        assert _close(compiled(z), stock(z))


@COMPILE_WARNINGS
@pytest.mark.parametrize("batch", [2, 0], ids=["lowered geometry", "empty batch"])
def test_compiled_inference_where_the_package_lowers_the_op(batch):
    """Dilation 2 with output_padding 1 at stride 1 is folded into pads_end (not oneDNN's
    own attribute): the op runs the functional call on the weights folded once."""
    torch.manual_seed(0)
    stock = torch.nn.Sequential(torch.nn.ConvTranspose2d(8, 4, 2, 1, 0, output_padding=1, dilation=2),
                                torch.nn.BatchNorm2d(4), torch.nn.ReLU()).eval()
    model = ot.convert(stock, inference=True)
    z = torch.randn(batch, 8, 5, 5)
    with torch.no_grad():
        got, want = torch.compile(model)(z), stock(z)
    assert got.shape == want.shape
    if batch:
        assert _close(got, want)


@COMPILE_WARNINGS
def test_compiled_bf16_autocast_inference():
    """The region's bf16: the op computes in bf16 on the input cast first (as stock's
    autocast casts), within bf16's bound (8 bits of mantissa, sums of 16-512 terms)."""
    stock, model = _pair()
    z = torch.randn(2, 16, 1, 1)
    with torch.no_grad(), torch.autocast("cpu", torch.bfloat16):
        got, want = torch.compile(model)(z), stock(z)
    assert got.dtype == want.dtype
    assert _close(got, want, tol=3e-2)


@COMPILE_WARNINGS
@pytest.mark.parametrize("channels_last", [False, True], ids=["NCHW", "channels-last"])
def test_compiled_layers_hand_channels_last_on_and_return_stocks_layout(channels_last, monkeypatch):
    """Compiled as eager: a layer feeding another writes channels-last for it, and the
    model's result has the stock model's strides, for either input layout."""
    stock, model = _pair()
    calls = _counting(monkeypatch)
    z = torch.randn(2, 16, 3, 3)
    if channels_last:
        z = z.contiguous(memory_format=torch.channels_last)
    with torch.no_grad():
        got, want = torch.compile(model, fullgraph=True)(z), stock(z)
    assert _close(got, want)
    assert got.stride() == want.stride()
    assert [layout for *_, layout in calls] == [_inference.LAYOUT_CHANNELS_LAST] * 2 + [
        _inference.LAYOUT_STOCK if channels_last else _inference.LAYOUT_HANDED]


def test_bf16_autocast_where_the_epilogue_runs_after_the_kernel():
    """A 1x1 input at stride 1 runs on oneDNN's jit kernel, whose bf16 epilogue the package
    runs apart in f32 (between casts): the folded bias, a constant, is cast and viewed
    over the channels once (this failed an assertion: the DCGAN generator's first layer)."""
    torch.manual_seed(0)
    stock = torch.nn.Sequential(torch.nn.ConvTranspose2d(100, 512, 4, 1, 0, bias=False),
                                torch.nn.BatchNorm2d(512), torch.nn.ReLU()).eval()
    with torch.no_grad():
        stock[1].running_mean.uniform_(-0.5, 0.5)
    model = ot.convert(stock, inference=True)
    z = torch.randn(4, 100, 1, 1)
    with torch.inference_mode(), torch.autocast("cpu", torch.bfloat16):
        for _ in range(2):  # packs, then runs packed
            got = model(z)
        want = stock(z)
    assert got.dtype == want.dtype == torch.bfloat16
    assert _close(got, want, tol=3e-2)


def _mask_head():
    """torchvision's Mask R-CNN mask predictor's structure: ConvTranspose2d, ReLU, and
    torch.nn's 1x1 Conv2d, which the layer hands its result channels-last."""
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.ConvTranspose2d(32, 32, 2, 2), torch.nn.ReLU(),
                               torch.nn.Conv2d(32, 7, 1)).eval()


@COMPILE_WARNINGS
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("channels_last", [False, True], ids=["NCHW", "channels-last"])
def test_a_torch_convolution_after_the_layer_reads_channels_last(compiled, channels_last):
    """The convolution gets the layer's result channels-last and gives its own result the
    layout the stock model's has; training mode and revert give the stock behaviour back."""
    stock = _mask_head()
    model = ot.convert(stock, inference=True)
    assert "channels-last for the next layer" in ot.report(model)[0].why
    z = torch.randn(3, 32, 5, 5)
    if channels_last:
        z = z.contiguous(memory_format=torch.channels_last)
    run = torch.compile(model, fullgraph=True) if compiled else model
    with torch.inference_mode():
        for _ in range(2):
            got = run(z)
        want = stock(z)
    assert _close(got, want)
    assert got.stride() == want.stride()
    model.train()
    assert _close(model(z), stock.train()(z))
    back = ot.revert(model.eval())
    assert type(back[2]) is torch.nn.Conv2d
    with torch.no_grad():
        assert _close(back(z), stock.eval()(z))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "f16"])
def test_a_model_cast_to_low_precision_keeps_its_batchnorm_apart(dtype):
    """A model cast to bf16/f16 (its BatchNorm statistics too) is not folded: folding would
    round w * g / sqrt(v + eps) to that dtype, once more than the stock model rounds its
    weights, and where the sums cancel (randn weights: products near 1, results near the
    Hardtanh's edges) that moved outputs by 0.18 of the largest in bf16 where stock's own
    error is 0.01. Truth: the stock model in float64 on the same rounded parameters and
    input; the converted model's error at most 1.5x stock's plus one rounding of the
    largest output (the same kernels' sums in another order)."""
    torch.manual_seed(0)
    stock = torch.nn.Sequential(torch.nn.ConvTranspose2d(128, 512, (4, 5), 7), torch.nn.BatchNorm2d(512),
                                torch.nn.Hardtanh(-0.5, 0.5)).eval()
    with torch.no_grad():
        stock[0].weight.normal_()
        stock[1].running_mean.uniform_(-0.5, 0.5)
        stock[1].running_var.uniform_(0.5, 2.0)
        stock[1].weight.uniform_(0.5, 1.5)
        stock[1].bias.uniform_(-0.5, 0.5)
    stock = stock.to(dtype)
    model = ot.convert(stock, inference=True)
    x = torch.randn(16, 128, 1, 1).to(dtype)
    truth = copy.deepcopy(stock).double()(x.double()).detach()
    largest = float(truth.abs().max())
    with torch.inference_mode():
        want = stock(x)
        for _ in range(3):  # (packed from the second call)
            got = model(x)
    err = lambda y: float((y.double() - truth).abs().max())  # noqa: E731
    assert got.dtype == dtype
    assert err(got) <= 1.5 * err(want) + torch.finfo(dtype).eps * largest, (err(got), err(want))
    assert "not while its statistics are bf16/f16" in ot.report(model)[0].why


@pytest.mark.parametrize("spatial", [1, 2], ids=["one position", "2 x 2"])
def test_the_first_call_after_a_layer_hands_on_channels_last_has_stocks_layout(spatial):
    """A layer with an activation fused hands its result channels-last to the next
    converted layer; that layer's first call (the plain conversion packs on the second)
    wrote its result in the layout it was handed, where the stock model's is contiguous
    (a ``.view`` of it would then fail on the first call only). Every call: stock's strides
    and values (f32 sums of at most 17 x 16 products in another order: 1e-5)."""
    torch.manual_seed(0)
    stock = torch.nn.Sequential(torch.nn.ConvTranspose2d(64, 17, 4, (1, 3)), torch.nn.GELU(),
                                torch.nn.ConvTranspose2d(17, 8, 4, 2, 1)).eval()
    model = ot.convert(stock, inference=True)
    z = torch.randn(16, 64, spatial, spatial)
    with torch.no_grad():
        for _ in range(3):
            got, want = model(z), stock(z)
            assert got.stride() == want.stride()
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
