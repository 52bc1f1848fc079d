"""A layer of plain ``convert(model)`` in eval packs its weights (``_inference.forward_plain``):
where nothing records gradients and oneDNN's kernel computes the call, the second call in a
row with the same weights compiles them as constants of the partition, and later calls run
that; any change of the weights is seen as ``inference=True``'s packed calls see it
(``test_torch_inference.test_no_stale_result_after_a_change`` runs every change on both).

Truth: the stock layer (torch.nn) with the same parameters, within 1e-4 of max |stock| in
f32 (the same sums in another order: near 1e-6), 0.05 under bf16 autocast (8 bits, a few
units of 2**-8 over the sum's rounding). What is kept is read from ``_inference._packed``.
"""

import copy

import pytest

torch = pytest.importorskip("torch")

import onednn_graph.torch as ot  # noqa: E402
from onednn_graph.torch import _inference  # noqa: E402


def _pair(c_in=64, c_out=32, kernel=4, padding=1):
    torch.manual_seed(0)
    stock = torch.nn.Sequential(torch.nn.ConvTranspose2d(c_in, c_out, kernel, 2, padding)).eval()
    return stock, ot.convert(stock)


def _close(got, want, tol=1e-4):
    got, want = got.detach().float(), want.detach().float()
    return float((got - want).abs().max()) <= tol * float(want.abs().max())


def _kept(layer):
    entry = _inference._packed.get(id(layer))
    return None if entry is None else type(entry[1]).__name__


@pytest.mark.parametrize("mode", ["no_grad", "inference_mode", "frozen parameters"])
def test_the_second_call_packs_and_later_calls_run_it(mode):
    stock, model = _pair()
    if mode == "frozen parameters":  # gradients enabled, nothing requires them
        for m in (stock, model):
            m.requires_grad_(False)
    x = torch.randn(4, 64, 12, 12)
    context = {"no_grad": torch.no_grad, "inference_mode": torch.inference_mode,
               "frozen parameters": torch.enable_grad}[mode]
    with context():
        want = stock(x)
        assert _close(model(x), want)
        assert _kept(model[0]) == "_Seen"  # seen once: computed as in training mode
        got = model(x)
        assert _kept(model[0]) == "_Packed"
        packed = _inference._packed[id(model[0])][1]
        assert _close(got, want) and _close(model(x), want)
        assert _inference._packed[id(model[0])][1] is packed  # kept, not packed again
    assert "weights packed once" in ot.report(model)[0].why


def test_weights_that_change_before_every_call_are_never_packed():
    # (an EMA copy or a policy evaluated in eval between updates: a partition compiled on
    # every call would cost more than the reorder it saves)
    stock, model = _pair()
    x = torch.randn(2, 64, 6, 6)
    with torch.no_grad():
        for _ in range(4):
            for m in (stock, model):
                m[0].weight.mul_(-1.1)
            assert _close(model(x), stock(x))
            assert _kept(model[0]) == "_Seen"


def test_another_input_shape_packs_again_on_its_second_call():
    stock, model = _pair()
    with torch.no_grad():
        for shape in ((2, 64, 6, 6), (3, 64, 5, 7)):
            x = torch.randn(shape)
            for kept in ("_Seen", "_Packed", "_Packed"):
                assert _close(model(x), stock(x))
                assert _kept(model[0]) == kept


def test_training_mode_and_recorded_calls_pack_nothing():
    stock, model = _pair()
    x = torch.randn(2, 64, 6, 6, requires_grad=True)
    for _ in range(2):  # eval, gradients recorded: the layer's autograd call
        got = model(x)
    (gx,) = torch.autograd.grad(got.square().sum(), x)
    (wx,) = torch.autograd.grad(stock(x).square().sum(), x)
    assert _close(gx, wx)
    model.train()
    with torch.no_grad():  # training mode (a GAN's generator making fakes): as ever
        for _ in range(2):
            assert _close(model(x), stock(x))
    assert _kept(model[0]) is None


def test_bf16_autocast_packs_bf16_weights():
    stock, model = _pair()
    x = torch.randn(2, 64, 6, 6)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        want = stock(x)
        for _ in range(2):
            got = model(x)
        assert got.dtype == want.dtype == torch.bfloat16
        assert _kept(model[0]) == "_Packed"
        assert _inference._packed[id(model[0])][1].dtype == torch.bfloat16
    assert _close(got, want, tol=0.05)


def test_parameters_made_under_inference_mode_are_never_kept():
    # PyTorch keeps no version of an inference tensor: an in-place write under
    # inference_mode would go unseen by a packed call's stamp.
    with torch.inference_mode():
        stock, model = _pair()
        x = torch.randn(2, 64, 6, 6)
        for _ in range(2):
            assert _close(model(x), stock(x))
        for m in (stock, model):
            m[0].weight.mul_(-0.5)
        assert _close(model(x), stock(x))
    assert _kept(model[0]) is None


def test_a_parametrized_weight_whose_original_changes():
    torch.manual_seed(0)
    stock = torch.nn.Sequential(
        torch.nn.utils.parametrizations.weight_norm(torch.nn.ConvTranspose1d(64, 32, 8, 4, 2))).eval()
    model = ot.convert(stock)
    x = torch.randn(1, 64, 50)
    with torch.no_grad():
        for _ in range(2):
            assert _close(model(x), stock(x))
        assert _kept(model[0]) == "_Packed"
        for m in (model, stock):
            m[0].parametrizations.weight.original1.mul_(-1.0)
        for _ in range(2):
            assert _close(model(x), stock(x))


def test_revert_drops_what_was_packed_and_copies_pickle():
    stock, model = _pair()
    x = torch.randn(2, 64, 6, 6)
    with torch.no_grad():
        for _ in range(2):
            model(x)
        assert _kept(model[0]) == "_Packed"
        copied = copy.deepcopy(model)
        assert _close(copied(x), stock(x))
        ot.revert(model, inplace=True)
    assert _kept(model[0]) is None



def test_an_unapplied_epilogue_packs_the_layer_alone_and_then_folds():
    # inference=True, the layer in eval but its BatchNorm in training mode: the epilogue is
    # not applied (the BatchNorm computes on the batch), the layer packs alone; with the
    # BatchNorm in eval too, the next calls fold it. Each result as stock's.
    torch.manual_seed(0)
    stock = torch.nn.Sequential(torch.nn.ConvTranspose2d(64, 32, 4, 2, 1), torch.nn.BatchNorm2d(32),
                                torch.nn.ReLU()).eval()
    model = ot.convert(copy.deepcopy(stock), inference=True)
    x = torch.randn(4, 64, 6, 6)
    for m in (stock, model):
        m[1].train()
    with torch.no_grad():
        for _ in range(2):
            assert _close(model(x), stock(x))
        assert _kept(model[0]) == "_Packed"
        for m in (stock, model):
            m[1].eval()
        for _ in range(2):
            assert _close(model(x), stock(x))



GEOMETRIES = {  # (layer, input shape, memory format)
    "mask head, k = s": (lambda: torch.nn.ConvTranspose2d(256, 256, 2, 2), (8, 256, 14, 14), None),
    "1-D vocoder": (lambda: torch.nn.ConvTranspose1d(256, 128, 8, 4, 2), (1, 256, 100), None),
    "3-D decoder": (lambda: torch.nn.ConvTranspose3d(32, 16, 3, 2, 1, output_padding=1), (1, 32, 4, 4, 4), None),
    "grouped": (lambda: torch.nn.ConvTranspose2d(64, 32, 4, 2, 1, groups=4), (2, 64, 6, 6), None),
    "dilated, lowered": (lambda: torch.nn.ConvTranspose2d(16, 8, 2, 1, 0, output_padding=1, dilation=2),
                         (2, 16, 5, 5), None),
    "few output channels": (lambda: torch.nn.ConvTranspose2d(64, 3, 4, 2, 1), (2, 64, 8, 8), None),
    "channels-last": (lambda: torch.nn.ConvTranspose2d(64, 32, 4, 2, 1), (2, 64, 6, 6), torch.channels_last),
    "empty batch": (lambda: torch.nn.ConvTranspose2d(64, 32, 4, 2, 1), (0, 64, 6, 6), None),
}


@pytest.mark.parametrize("case", list(GEOMETRIES))
def test_packed_calls_match_stock_on_every_geometry(case):
    # Each geometry the packed call lowers its own way (the native partition, the
    # package's lowering, a formulation on views, an empty result): as stock's, with
    # stock's strides, on the packing call and after it.
    make, shape, fmt = GEOMETRIES[case]
    torch.manual_seed(0)
    stock = make().eval()
    model = ot.convert(stock)
    x = torch.randn(shape)
    if fmt is not None:
        x = x.contiguous(memory_format=fmt)
    with torch.no_grad():
        want = stock(x)
        for _ in range(3):
            got = model(x)
            assert got.shape == want.shape and got.stride() == want.stride()
            if want.numel():
                assert _close(got, want)



@pytest.mark.parametrize("inference", [False, True], ids=["plain convert", "inference=True"])
def test_a_layer_packs_at_most_repacks_times_then_runs_unpacked(inference):
    # oneDNN 3.2 keeps every packing's reordered weights for the process's life: after
    # REPACKS packings (each weight change), the layer's calls fold the weights once per
    # change but do not pack them (the functional API's call), until refresh. As stock's.
    stock, model = _pair()
    if inference:
        model = ot.convert(stock, inference=True)
    x = torch.randn(2, 64, 6, 6)
    with torch.no_grad():
        for change in range(_inference.REPACKS + 2):
            for m in (stock, model):
                m[0].weight.mul_(-1.01)
            for _ in range(2):
                assert _close(model(x), stock(x))
            kept = _inference._packed[id(model[0])][1]
            assert kept.packs == min(change + 1, _inference.REPACKS)
            assert (kept.op is not None) == (change < _inference.REPACKS)  # packed: a partition's constants
        ot.refresh(model)
        for _ in range(2):
            assert _close(model(x), stock(x))
        kept = _inference._packed[id(model[0])][1]
        assert kept.op is not None and kept.packs == 1


# Under torch.compile, eval without gradients: as inference=True's layer with nothing to
# fold or fuse (torch's convolution in the graph where the default rule decides; held to
# oneDNN, the registered op that packs per weight).
COMPILE_WARNINGS = pytest.mark.filterwarnings(
    "ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")


@COMPILE_WARNINGS
def test_compiled_eval_packs_and_is_never_stale(monkeypatch):
    stock, model = _pair()
    calls = []
    real = _inference.run_registered
    monkeypatch.setattr(_inference, "run_registered", lambda *a: calls.append(1) or real(*a))
    compiled = torch.compile(model, fullgraph=True)
    x = torch.randn(2, 64, 6, 6)
    with torch.no_grad():
        assert _close(compiled(x), stock(x))
        assert calls  # the registered inference op, packing per weight
        for m in (stock, model):
            m[0].weight.mul_(-1.5)
        assert _close(compiled(x), stock(x))


@COMPILE_WARNINGS
@pytest.mark.torch_kernels  # the default rule decides (not held to oneDNN)
def test_compiled_eval_takes_torchs_convolution():
    # (the training op's fixed strides made Inductor convert its neighbours' layouts:
    # MONAI's GAN generator compiled ran 1.31x stock with it)
    stock, model = _pair()
    x = torch.randn(2, 64, 6, 6)
    with torch.no_grad():
        assert _close(torch.compile(model)(x), stock(x))
        explained = torch._dynamo.explain(model)(x)
    ops = [str(n.target) for g in explained.graphs for n in g.graph.nodes if n.op == "call_function"]
    assert explained.graph_break_count == 0 and not any("onednn_graph" in op for op in ops), ops


@COMPILE_WARNINGS
def test_compiled_eval_recording_gradients_is_differentiable():
    stock, model = _pair()
    x = torch.randn(2, 64, 6, 6, requires_grad=True)
    (got,) = torch.autograd.grad(torch.compile(model)(x).square().sum(), x)
    (want,) = torch.autograd.grad(stock(x).square().sum(), x)
    assert _close(got, want)


@COMPILE_WARNINGS
def test_compiled_eval_packs_at_most_repacks_times():
    # The registered op packs per weight under the same bound (``run_registered``).
    stock, model = _pair()
    compiled = torch.compile(model)
    x = torch.randn(2, 64, 6, 6)
    with torch.no_grad():
        for change in range(_inference.REPACKS + 2):
            for m in (stock, model):
                m[0].weight.mul_(-1.01)
            assert _close(compiled(x), stock(x))
            kept = _inference._packed_by_weight[id(model[0].weight)][1]
            assert kept.packs == min(change + 1, _inference.REPACKS)
            assert (kept.op is not None) == (change < _inference.REPACKS)
