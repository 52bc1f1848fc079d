"""onednn_graph.torch.convert / revert / report: a whole model's transposed convolutions
on oneDNN in one call (issue 37).

Truth: the stock model (torch.nn's layers) and a float64 copy of it, run on the same
inputs. Both f32 models evaluate the same products in other orders, so each is off the
float64 copy by rounding alone; the converted model must be as close to the float64
copy as the stock model is, within ``FACTOR`` times the stock model's largest error
plus one layer's f32 bound (``_close``). A wrong value or gradient (a transposed
kernel, a missing bias, a lost parametrization) is off by the values' own size, about
10**5 times that. The models' activations are smooth (SiLU, tanh): at a kink (ReLU's,
leaky ReLU's) a value within rounding of it can land on either side in two correct
models and change its gradient by O(1) (seen under bf16 autocast capped at AVX2, where
the two round differently). Object identity, classes, hooks and reports are checked
directly.
"""

import copy
import io
import logging

import pytest

torch = pytest.importorskip("torch")

import onednn_graph.torch as ot  # noqa: E402
from onednn_graph.torch import modules as ot_modules  # noqa: E402

nn = torch.nn
P = torch.nn.utils.parametrizations

# PyTorch deprecates the older torch.nn.utils.weight_norm (a forward pre-hook); models on
# PyPI still build with it, so the converter is tested on it.
pytestmark = pytest.mark.filterwarnings(
    "ignore:`torch.nn.utils.weight_norm` is deprecated:FutureWarning")

# The converted model's largest error against the float64 copy may be this many times the
# stock model's: the two sum the same f32 products in other orders (and oneDNN's kernels
# block the sums differently by CPU), so their errors are of one size but not equal.
# Measured on a Zen 4 over this file's models, both memory formats and autocast, natively
# and capped at AVX2: 0.44-1.44 wherever the errors exceed 5% of F32_FLOOR below (up to
# 10x where both are smaller, which the floor covers). Natively under bf16 autocast both
# ran oneDNN's bf16 kernels and agreed to the bit.
FACTOR = 4
# Plus the f32 bound of one layer's sum (tolerance.bound: terms * 2**-24, relative to the
# values' scale) for the models' largest sum, 32 channels x 16 taps: where the stock
# model happens to round very little, rounding alone still passes.
F32_FLOOR = 32 * 16 * 2.0**-24
# Under bf16 autocast every layer rounds its inputs and result to bf16 (u = 2**-8): two
# roundings of the output, as tolerance.bound has for one op.
BF16_FLOOR = 2 * 2.0**-8


class Generator(nn.Module):
    """A DCGAN generator: z (N, 16, 4, 4) -> image (N, 3, 32, 32)."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.ConvTranspose2d(16, 32, 4, 2, 1, bias=False), nn.BatchNorm2d(32), nn.SiLU(),
            nn.ConvTranspose2d(32, 16, 4, 2, 1, bias=False), nn.BatchNorm2d(16), nn.SiLU(),
            nn.ConvTranspose2d(16, 3, 4, 2, 1), nn.Tanh())

    def forward(self, z):
        return self.net(z)


class Vocoder(nn.Module):
    """A HiFi-GAN-style upsampler: weight-normed ConvTranspose1d (both kinds of weight_norm)
    between SiLUs (HiFi-GAN's are leaky ReLUs), in a ModuleList, and a ModuleDict of
    output heads."""

    def __init__(self):
        super().__init__()
        self.pre = nn.Conv1d(8, 16, 7, padding=3)
        self.ups = nn.ModuleList([
            P.weight_norm(nn.ConvTranspose1d(16, 8, 8, stride=4, padding=2)),
            torch.nn.utils.weight_norm(nn.ConvTranspose1d(8, 4, 4, stride=2, padding=1))])
        self.heads = nn.ModuleDict({"wave": nn.Conv1d(4, 1, 7, padding=3)})

    def forward(self, x):
        x = self.pre(x)
        for up in self.ups:
            x = up(nn.functional.silu(x))
        return torch.tanh(self.heads["wave"](x))


class UpBlock3d(nn.Module):
    """A 3-D U-Net's up block: ConvTranspose3d, then a Conv3d, spectral norm on the first."""

    def __init__(self):
        super().__init__()
        self.up = P.spectral_norm(nn.ConvTranspose3d(8, 4, 2, stride=2))
        self.conv = nn.Conv3d(4, 2, 3, padding=1)

    def forward(self, x):
        return self.conv(nn.functional.silu(self.up(x)))


MODELS = {"generator": (Generator, (2, 16, 4, 4)), "vocoder": (Vocoder, (2, 8, 16)),
          "up3d": (UpBlock3d, (1, 8, 3, 3, 3))}


def _model(name, seed=0):
    torch.manual_seed(seed)
    make, shape = MODELS[name]
    return make(), torch.randn(shape)


def _f64(model):
    """A float64 copy of a stock model (the truth). ``revert`` copies a stock model as it
    is, the older weight_norm's included, which ``copy.deepcopy`` refuses."""
    return ot.revert(model).double()


def _run(model, x, dtype=None):
    """The output and every parameter's gradient of sum(model(x) * ramp), by name."""
    model.zero_grad()
    x = x.clone().requires_grad_()
    if dtype is None:
        y = model(x)
    else:
        with torch.autocast("cpu", dtype=dtype):
            y = model(x)
    ramp = torch.linspace(-1, 1, y.numel(), dtype=torch.float64).reshape(y.shape)
    (y.double() * ramp).sum().backward()
    grads = {n: p.grad for n, p in model.named_parameters() if p.grad is not None}
    return y.detach(), x.grad, grads


def _close(got, stock, truth, floor, what):
    """`got` is off `truth` by at most FACTOR times `stock`'s error plus `floor` of the
    scale."""
    scale = truth.abs().max().item()
    err, err_stock = ((t.double() - truth).abs().max().item() for t in (got, stock))
    assert err <= FACTOR * err_stock + floor * scale, (
        f"{what}: converted off the float64 model by {err:.3g}, stock by {err_stock:.3g} "
        f"(scale {scale:.3g})")


def _compare(name, channels_last=False, dtype=None):
    stock, x = _model(name)
    converted = ot.convert(stock)
    truth = _f64(stock)
    if channels_last and x.dim() in (4, 5):
        fmt = torch.channels_last if x.dim() == 4 else torch.channels_last_3d
        x = x.to(memory_format=fmt)
        stock, converted, truth = (m.to(memory_format=fmt) for m in (stock, converted, truth))
    floor = F32_FLOOR if dtype is None else BF16_FLOOR
    y_stock, gx_stock, g_stock = _run(stock, x, dtype)
    y_ours, gx_ours, g_ours = _run(converted, x, dtype)
    y_true, gx_true, g_true = _run(truth, x.double())
    assert y_ours.dtype == y_stock.dtype and y_ours.stride() == y_stock.stride()
    _close(y_ours, y_stock, y_true, floor, "output")
    _close(gx_ours, gx_stock, gx_true, floor, "input gradient")
    assert g_ours.keys() == g_stock.keys() == g_true.keys()
    for n in g_true:
        _close(g_ours[n], g_stock[n], g_true[n], floor, f"gradient of {n}")


@pytest.mark.parametrize("channels_last", [False, True], ids=["contiguous", "channels_last"])
@pytest.mark.parametrize("name", list(MODELS))
def test_a_converted_model_computes_the_stock_models_values_and_gradients(name, channels_last):
    _compare(name, channels_last)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "f16"])
@pytest.mark.parametrize("name", list(MODELS))
def test_under_autocast_a_converted_model_computes_what_the_stock_one_does(name, dtype):
    # Every ConvTranspose after the model's first op meets an input autocast made low
    # precision and f32 weights: cast as torch.nn's layer is (issue 37).
    _compare(name, dtype=dtype)


def test_ten_optimizer_steps_give_the_stock_models_losses():
    stock, x = _model("generator")
    converted, truth = ot.convert(stock), _f64(stock)
    target = torch.randn(2, 3, 32, 32)
    losses = {}
    for key, model in (("stock", stock), ("ours", converted), ("truth", truth)):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        losses[key] = []
        for _ in range(10):
            optimizer.zero_grad()
            inputs = (x, target) if key != "truth" else (x.double(), target.double())
            loss = nn.functional.mse_loss(model(inputs[0]), inputs[1])
            loss.backward()
            optimizer.step()
            losses[key].append(loss.detach())
    for step, (ours, theirs, true) in enumerate(zip(losses["ours"], losses["stock"], losses["truth"])):
        _close(ours, theirs, true, F32_FLOOR, f"loss at step {step}")


def test_every_layer_of_nested_containers_is_swapped_and_the_original_left_alone():
    model, _ = _model("vocoder")
    converted = ot.convert(model)
    assert [type(m).__module__ for m in model.modules() if isinstance(m, nn.ConvTranspose1d)] == \
        ["torch.nn.utils.parametrize", "torch.nn.modules.conv"]
    swapped = [m for m in converted.modules() if isinstance(m, nn.ConvTranspose1d)]
    assert len(swapped) == 2 and all(isinstance(m, ot.ConvTranspose1d) for m in swapped)
    assert [r.runs_on for r in ot.report(converted)] == ["oneDNN", "oneDNN"]
    assert [r.path for r in ot.report(converted)] == ["ups.0", "ups.1"]
    assert list(converted.state_dict()) == list(model.state_dict())


def test_in_place_the_same_parameters_serve_an_optimizer_built_before():
    model, x = _model("generator")
    stock = copy.deepcopy(model)
    params = list(model.parameters())
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    assert ot.convert(model, inplace=True) is model
    assert list(model.parameters()) == params and all(a is b for a, b in zip(model.parameters(), params))
    reference = torch.optim.Adam(stock.parameters(), lr=1e-2)
    for m, opt in ((model, optimizer), (stock, reference)):
        opt.zero_grad()
        m(x).square().mean().backward()
        opt.step()
    for a, b in zip(model.parameters(), stock.parameters()):
        # one Adam step moves every weight by about lr; rounding moves the two by far less
        torch.testing.assert_close(a, b, rtol=0, atol=1e-4)


def test_a_shared_layer_stays_one_layer_and_tied_weights_stay_tied():
    torch.manual_seed(0)
    shared = nn.ConvTranspose2d(4, 4, 3, padding=1)
    tied_a, tied_b = nn.ConvTranspose2d(4, 4, 1), nn.ConvTranspose2d(4, 4, 1)
    tied_b.weight = tied_a.weight
    model = nn.Sequential(shared, nn.ReLU(), shared, nn.ModuleList([tied_a, tied_b]))
    for inplace in (True, False):
        converted = ot.convert(model if inplace else copy.deepcopy(model), inplace=True)
        assert converted[0] is converted[2] and type(converted[0]) is ot.ConvTranspose2d
        a, b = converted[3]
        assert a.weight is b.weight and type(a) is type(b) is ot.ConvTranspose2d
        assert len(ot.report(converted)) == 3  # the shared layer once


@pytest.mark.parametrize("kind", ["weight_norm", "spectral_norm", "old_weight_norm"])
def test_parametrizations_and_the_older_weight_norm_hook_keep_working(kind):
    torch.manual_seed(0)
    layer = nn.ConvTranspose2d(4, 3, 3, stride=2)
    wrap = {"weight_norm": P.weight_norm, "spectral_norm": P.spectral_norm,
            "old_weight_norm": torch.nn.utils.weight_norm}[kind]
    stock = wrap(layer)
    ours = ot.convert(stock)
    assert isinstance(ours, ot.ConvTranspose2d)
    assert torch.nn.utils.parametrize.is_parametrized(ours) == (kind != "old_weight_norm")
    x = torch.randn(2, 4, 5, 5)
    truth = _f64(stock)
    # spectral_norm's power iteration updates its buffers on every training forward:
    # the same number of forwards in each copy keeps them equal
    results = [_run(m, x.double() if m is truth else x) for m in (stock, ours, truth)]
    (ys, gxs, gs), (yo, gxo, go), (yt, gxt, gt) = results
    _close(yo, ys, yt, F32_FLOOR, "output")
    _close(gxo, gxs, gxt, F32_FLOOR, "input gradient")
    for n in gt:
        _close(go[n], gs[n], gt[n], F32_FLOOR, f"gradient of {n}")
    if kind != "old_weight_norm":
        torch.nn.utils.parametrize.remove_parametrizations(ours, "weight")
        assert type(ours) is ot.ConvTranspose2d  # the class under the parametrization


def test_hooks_fire_as_on_the_stock_model():
    torch.manual_seed(0)
    stock = nn.ConvTranspose2d(4, 3, 3)
    seen = []
    stock.register_forward_pre_hook(lambda m, args: seen.append("pre"))
    stock.register_forward_hook(lambda m, args, out: out * 2)
    stock.register_full_backward_hook(lambda m, gin, gout: seen.append("backward"))
    ours = ot.convert(stock)
    x = torch.randn(1, 4, 5, 5, requires_grad=True)
    for m in (stock, ours):
        y = m(x)
        y.sum().backward()
    assert seen == ["pre", "backward", "pre", "backward"]
    torch.testing.assert_close(ours(x), stock(x), rtol=1e-5, atol=1e-5)


class _KeepsForward(nn.ConvTranspose2d):
    """A subclass that keeps torch's forward (an init of its own, say)."""


class _OwnForward(nn.ConvTranspose2d):
    def forward(self, input, output_size=None):
        return super().forward(input, output_size) * 2


def test_subclasses_are_left_unless_asked_and_their_own_forward_always():
    torch.manual_seed(0)
    model = nn.Sequential(_KeepsForward(4, 4, 1), _OwnForward(4, 4, 1))
    left = ot.convert(model)
    assert [r.runs_on for r in ot.report(left)] == ["torch.nn", "torch.nn"]
    assert "subclasses=True" in ot.report(left)[0].why and "own forward" in ot.report(left)[1].why
    asked = ot.convert(model, subclasses=True)
    assert isinstance(asked[0], _KeepsForward) and isinstance(asked[0], ot_modules._OneDNNForward)
    assert type(asked[1]) is _OwnForward
    x = torch.randn(1, 4, 3, 3)
    torch.testing.assert_close(asked(x), model(x), rtol=1e-5, atol=1e-5)
    # pickled whole, the swapped subclass comes back swapped
    buffer = io.BytesIO()
    torch.save(asked, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=False)
    assert isinstance(loaded[0], _KeepsForward) and isinstance(loaded[0], ot_modules._OneDNNForward)
    assert type(ot.revert(loaded)[0]) is _KeepsForward


def test_save_load_deepcopy_and_revert_keep_the_model():
    model, x = _model("generator")
    converted = ot.convert(model)
    buffer = io.BytesIO()
    torch.save(converted, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=False)
    copied = copy.deepcopy(converted)
    converted.eval()
    for m in (loaded, copied):
        m.eval()
        assert [r.runs_on for r in ot.report(m)] == ["oneDNN"] * 3
        assert torch.equal(m(x), converted(x))
    back = ot.revert(converted)
    assert [type(m) for m in back.modules() if isinstance(m, nn.ConvTranspose2d)] == \
        [nn.ConvTranspose2d] * 3
    assert [r.runs_on for r in ot.report(converted)] == ["oneDNN"] * 3  # revert copied
    model.eval()
    torch.testing.assert_close(back(x), model(x), rtol=0, atol=0)


def test_a_model_built_on_the_meta_device_converts_and_runs_after_to_empty():
    torch.manual_seed(0)
    with torch.device("meta"):
        model = Generator()
    converted = ot.convert(model, inplace=True)
    z = torch.empty(2, 16, 4, 4, device="meta")
    assert converted(z).shape == (2, 3, 32, 32)  # shape inference on meta
    converted.to_empty(device="cpu")
    for m in converted.modules():
        if hasattr(m, "reset_parameters"):
            m.reset_parameters()
    stock = ot.revert(converted)
    x = torch.randn(2, 16, 4, 4)
    torch.testing.assert_close(converted(x), stock(x), rtol=1e-4, atol=1e-5)


# Inductor itself calls the deprecated torch.jit.script_method (PyTorch 2.13).
@pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")
def test_a_converted_model_compiles_and_exports():
    model, x = _model("generator")
    converted = ot.convert(model).eval()
    eager = converted(x)
    torch.testing.assert_close(torch.compile(converted, fullgraph=True)(x), eager,
                               rtol=1e-5, atol=1e-5)
    exported = torch.export.export(converted, (x,))
    targets = [str(n.target) for n in exported.graph.nodes if n.op == "call_function"]
    assert targets.count("onednn_graph.conv_transpose.default") == 3, targets
    torch.testing.assert_close(exported.module()(x), eager, rtol=0, atol=0)


def test_convert_says_what_it_swapped_and_what_it_left(caplog):
    torch.manual_seed(0)
    model = nn.Sequential(nn.ConvTranspose2d(4, 4, 1), _KeepsForward(4, 4, 1),
                          nn.ConvTranspose2d(4, 4, 1).double())
    with caplog.at_level(logging.INFO, logger="onednn_graph.torch"):
        ot.convert(model)
    info = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert info == ["convert: 1 transposed convolution now on oneDNN: 0"]
    assert len(warnings) == 1 and "2 transposed convolutions left on torch.nn" in warnings[0]
    assert "1 (" in warnings[0] and "subclasses=True" in warnings[0]
    assert "2 (torch.nn.ConvTranspose2d): torch.float64" in warnings[0]
    table = str(ot.report(model))
    assert table.splitlines()[0].split() == ["layer", "class", "runs", "on", "why"]


@pytest.mark.parametrize("call", [ot.convert, ot.revert, ot.report])
def test_a_non_module_is_a_type_error(call):
    with pytest.raises(TypeError, match="must be a torch.nn.Module, got list"):
        call([nn.ConvTranspose2d(1, 1, 1)])


@pytest.mark.filterwarnings("ignore:.*torch.jit.* deprecated:DeprecationWarning")
def test_a_torchscript_module_is_refused_with_the_reason():
    scripted = torch.jit.script(nn.Sequential(nn.ConvTranspose2d(1, 1, 1)))
    with pytest.raises(TypeError, match="TorchScript module"):
        ot.convert(scripted)
