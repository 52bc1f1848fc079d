"""onednn_graph.torch under CPU autocast (issue 37): every mix of dtypes torch.nn takes
there works as torch.nn does, in eager, compiled and exported models.

conv_transposeNd is on CPU autocast's lower-precision list: each floating CPU tensor but
float64 is cast to the region's dtype before the op. A layer after another one autocast
ran meets an input already in bf16 and its own f32 weights: the case that failed
(issue 37, item 3).

Truth: torch.nn's layers with the same parameters under the same autocast region for the
result's dtype and memory format; a float64 reference on the inputs autocast rounded for
its values, within onednn_graph.tolerance's bound (two roundings to the dtype plus f32
accumulation).
"""

import pytest

torch = pytest.importorskip("torch")

import onednn_graph.torch as ot  # noqa: E402
from onednn_graph.tolerance import bound  # noqa: E402

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}
# (id, input dtype, parameters' dtype): what a layer meets inside a region
MIXES = [("f32-input-f32-weights", torch.float32, torch.float32),
         ("low-input-f32-weights", None, torch.float32),  # None: the region's dtype
         ("low-input-low-weights", None, None)]
MODES = ["eager", "compiled", "exported"]


def _pair(nsp, param_dtype):
    torch.manual_seed(0)
    theirs = getattr(torch.nn, f"ConvTranspose{nsp}d")(6, 4, 3, stride=2, padding=1)
    ours = getattr(ot, f"ConvTranspose{nsp}d")(6, 4, 3, stride=2, padding=1)
    ours.load_state_dict(theirs.state_dict())
    return theirs.to(param_dtype), ours.to(param_dtype)


def _in_mode(module, x, mode):
    if mode == "compiled":
        return torch.compile(module, fullgraph=True)(x)
    if mode == "exported":
        return torch.export.export(module, (x,)).module()(x)
    return module(x)


CASES = [(nsp, mode) for nsp in (1, 2, 3) for mode in MODES
         if mode == "eager" or nsp == 2]  # compile and export: one code path for all three


# Inductor itself calls the deprecated torch.jit.script_method (PyTorch 2.13).
@pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")
@pytest.mark.parametrize("mix", MIXES, ids=[m[0] for m in MIXES])
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("nsp, mode", CASES, ids=[f"{n}d-{m}" for n, m in CASES])
def test_every_dtype_mix_runs_as_torch_nn_under_autocast(nsp, mode, dtype, mix):
    region = DTYPES[dtype]
    _, input_dtype, param_dtype = mix
    theirs, ours = _pair(nsp, param_dtype or region)
    x = torch.randn(2, 6, *[5] * nsp).to(input_dtype or region)
    with torch.autocast("cpu", dtype=region):
        want = theirs(x)
        got = _in_mode(ours, x, mode)
    assert got.dtype == want.dtype == region
    assert got.stride() == want.stride()
    # The float64 reference on the inputs autocast rounded, and the package's bound:
    # two roundings to the dtype plus f32 sums of 6 x 3**nsp products and the bias.
    fn = getattr(torch.nn.functional, f"conv_transpose{nsp}d")
    args = [t.detach().to(region).double() for t in (x, theirs.weight, theirs.bias)]
    ref = fn(*args, stride=2, padding=1).numpy()
    mag = fn(*[a.abs() for a in args], stride=2, padding=1).numpy()
    tol = bound(ref, mag, dtype, 6 * 3**nsp + 1)
    assert (abs(got.detach().double().numpy() - ref) <= tol).all()


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_the_functional_form_takes_a_low_input_with_f32_weights_and_gives_gradients(dtype):
    # issue 37's smallest case, and the gradients reach the f32 weights in f32
    region = DTYPES[dtype]
    torch.manual_seed(0)
    w = torch.randn(4, 4, 3, 3, requires_grad=True)
    b = torch.randn(4, requires_grad=True)
    x = torch.randn(1, 4, 8, 8).to(region).requires_grad_()
    with torch.autocast("cpu", dtype=region):
        y = ot.conv_transpose2d(x, w, b)
        want = torch.nn.functional.conv_transpose2d(x, w, b)
    assert y.dtype == want.dtype == region
    y.float().sum().backward()
    assert w.grad.dtype == b.grad.dtype == torch.float32 and x.grad.dtype == region
    assert w.grad.shape == w.shape and torch.isfinite(w.grad).all()


def test_a_model_after_a_bf16_layer_runs_and_an_export_outside_autocast_stays_f32():
    # issue 37's smallest case: Conv2d (run in bf16 by autocast) then the package's layer
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(4, 4, 3, padding=1), ot.ConvTranspose2d(4, 4, 3))
    stock = torch.nn.Sequential(torch.nn.Conv2d(4, 4, 3, padding=1), torch.nn.ConvTranspose2d(4, 4, 3))
    stock.load_state_dict(model.state_dict())
    x = torch.randn(1, 4, 8, 8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert model(x).dtype == stock(x).dtype == torch.bfloat16
        exported = torch.export.export(model, (x,))
    # the program casts where it runs, as torch.nn's ops do: f32 outside the region
    assert exported.module()(x).dtype == torch.float32
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert exported.module()(x).dtype == torch.bfloat16


def test_float64_stays_float64_and_runs_as_torch_nn():
    # autocast leaves float64 alone; oneDNN computes f32/bf16/f16, so a float64 layer runs
    # torch.nn's computation (issue 47), which gives the stock layer's numbers exactly
    theirs, ours = _pair(2, torch.float64)
    x = torch.randn(1, 6, 5, 5, dtype=torch.float64)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got, want = ours(x), theirs(x)
    assert got.dtype == torch.float64
    assert torch.equal(got, want)


@pytest.mark.parametrize("inference", [False, True], ids=["convert", "inference=True"])
@pytest.mark.parametrize("spatial", [1, 2], ids=["one position", "2 x 2"])
@pytest.mark.parametrize("region, input_dtype", [(torch.bfloat16, torch.float16), (torch.float16, torch.bfloat16)],
                         ids=["f16 input in a bf16 region", "bf16 input in an f16 region"])
def test_an_input_of_the_other_low_dtype_in_eval(region, input_dtype, spatial, inference):
    """Autocast casts a float16 input to its bf16 region (and back the other way), and so
    does a converted layer's packed call in eval, on every call: it was packed for the
    input's dtype and handed the cast input (calls after the first failed). Truth: stock
    under the same region. Bound: relative to the largest output, 3e-2 (a BatchNorm folded
    into bf16/f16 weights rounds them once more than stock does: ~2^-8 each; a wrong or
    failed call is O(1))."""
    torch.manual_seed(0)
    stock = torch.nn.Sequential(torch.nn.ConvTranspose2d(100, 64, 4, 1, 0, bias=False),
                                torch.nn.BatchNorm2d(64), torch.nn.ReLU()).eval()
    with torch.no_grad():
        stock[1].running_mean.uniform_(-0.5, 0.5)
        stock[1].running_var.uniform_(0.5, 2)
    model = ot.convert(stock, inference=inference)
    x = torch.randn(16, 100, spatial, spatial).to(input_dtype)
    with torch.no_grad(), torch.autocast("cpu", dtype=region):
        want = stock(x).float()
        for _ in range(3):  # the second call on packs (the plain conversion defers a call)
            got = model(x)
            assert got.dtype == region
            assert (got.float() - want).abs().max() <= 3e-2 * want.abs().max()
