"""onednn_graph.torch's modules against torch.nn's on what issue 31 found apart:
memory formats, empty batches, autocast, TorchScript and the exceptions raised.

Truth: torch.nn.ConvTransposeNd with the same state dict, on the same inputs.
"""

import itertools
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import onednn_graph.torch as ot  # noqa: E402
from helpers import assert_matches_reference  # noqa: E402

CHANNELS_LAST = {2: torch.channels_last, 3: torch.channels_last_3d}


def _pair(nsp, c_in, **kw):
    """A torch.nn module and ours with the same parameters."""
    torch.manual_seed(0)
    theirs = getattr(torch.nn, f"ConvTranspose{nsp}d")(c_in, 2, 3, stride=2, **kw)
    ours = getattr(ot, f"ConvTranspose{nsp}d")(c_in, 2, 3, stride=2, **kw)
    ours.load_state_dict(theirs.state_dict())
    return theirs, ours


def _run(module, x):
    """The output and the gradients of input, weight and bias of sum(module(x) * ramp)."""
    x = x.detach().clone().requires_grad_()
    module.zero_grad()
    y = module(x)
    ramp = torch.arange(y.numel(), dtype=y.dtype).reshape(y.shape) / max(y.numel(), 1)
    (y * ramp).sum().backward()
    return y, x.grad, module.weight.grad, module.bias.grad


MEMORY_CASES = [(nsp, c_in, x_cl, module_cl) for nsp, c_in, x_cl, module_cl in
                itertools.product((1, 2, 3), (1, 3), (False, True), (False, True))
                if nsp > 1 or not (x_cl or module_cl)]


@pytest.mark.parametrize("nsp, c_in, x_cl, module_cl", MEMORY_CASES, ids=[
    f"{n}d-C{c}-{'NXC' if x else 'NCX'}input-{'NXC' if m else 'NCX'}module"
    for n, c, x, m in MEMORY_CASES])
def test_results_and_gradients_take_pytorchs_memory_format(nsp, c_in, x_cl, module_cl):
    # PyTorch's CPU convolutions go channels-last when the input's strides or the
    # weight's are (one channel included: its strides still say which), and the
    # gradients follow; the same strides here, everywhere.
    theirs, ours = _pair(nsp, c_in)
    x = torch.randn(2, c_in, *[5] * nsp)
    if x_cl:
        x = x.to(memory_format=CHANNELS_LAST[nsp])
    if module_cl:
        theirs, ours = (m.to(memory_format=CHANNELS_LAST[nsp]) for m in (theirs, ours))
    # Values: both are f32 sums of the same products in other orders (and threads), so
    # they differ by rounding alone; 1e-5 relative plus 1e-5 absolute is about 80 f32
    # ulps of each value. Measured on the Zen 4 (seed 0), the largest difference over
    # these cases was 0.28 of that bound.
    for want, got in zip(_run(theirs, x), _run(ours, x)):
        assert got.stride() == want.stride()
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("nsp", [1, 2, 3])
def test_an_empty_batch_gives_an_empty_result_and_zero_gradients(nsp):
    theirs, ours = _pair(nsp, 3)
    x = torch.randn(0, 3, *[5] * nsp)
    want, got = _run(theirs, x), _run(ours, x)
    for w, g in zip(want, got):
        assert g.shape == w.shape and g.dtype == w.dtype
        torch.testing.assert_close(g, w)
    assert got[0].shape[0] == 0 and not got[2].any() and not got[3].any()


# TorchScript is deprecated in PyTorch 2.13 (which says so on each call), not removed.
@pytest.mark.filterwarnings("ignore:.*torch.jit.* deprecated:DeprecationWarning")
@pytest.mark.parametrize("nsp", [1, 2, 3])
def test_torchscript_compiles_the_modules_and_matches_eager(nsp, tmp_path):
    # Scripted, forward calls torch.ops.onednn_graph.conv_transpose directly: the same
    # oneDNN call as eager, so the same bits; a saved script loads and runs it too.
    _, ours = _pair(nsp, 3, padding=1)
    scripted = torch.jit.script(ours)
    x = torch.randn(2, 3, *[5] * nsp, requires_grad=True)
    assert torch.equal(scripted(x), ours(x))
    assert torch.equal(scripted(x, [10] * nsp), ours(x, [10] * nsp))
    assert torch.equal(scripted(x[0]), ours(x[0]))
    grad, = torch.autograd.grad(scripted(x).sum(), x)
    assert torch.equal(grad, torch.autograd.grad(ours(x).sum(), x)[0])
    torch.jit.save(scripted, tmp_path / "module.pt")
    assert torch.equal(torch.jit.load(tmp_path / "module.pt")(x), ours(x))


AUTOCAST = {"bf16": torch.bfloat16, "f16": torch.float16}


# Inductor itself calls the deprecated torch.jit.script_method (PyTorch 2.13).
@pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")
@pytest.mark.parametrize("dtype", AUTOCAST)
@pytest.mark.parametrize("nsp", [1, 2, 3])
def test_cpu_autocast_runs_the_layer_in_its_dtype_as_torch_nn(nsp, dtype):
    # conv_transpose is in CPU autocast's lower-precision list: input, weight and bias
    # are cast to the region's dtype and the result has it, eagerly and compiled.
    theirs, ours = _pair(nsp, 3)
    x = torch.randn(2, 3, *[5] * nsp)
    with torch.autocast("cpu", dtype=AUTOCAST[dtype]):
        want, got = theirs(x), ours(x)
        compiled = torch.compile(ours, fullgraph=True)(x)
    assert got.dtype == compiled.dtype == want.dtype == AUTOCAST[dtype]
    torch.testing.assert_close(compiled, got, rtol=0, atol=0)
    # The bound of test_torch_layers: the float64 truth on the inputs rounded to the
    # dtype (what the cast hands oneDNN), two roundings of the dtype plus f32 sums of
    # C_in * taps products and the bias per result. Not torch.nn's result: in f16 it
    # misses that bound (by 0.0006 at 0.028 in 1-D, measured: PyTorch 2.13's CPU f16
    # path rounds partial sums), so it is no truth to be near.
    args = [t.detach().to(AUTOCAST[dtype]).double().numpy() for t in (x, ours.weight, ours.bias)]

    def reference(*arrays):
        tensors = [torch.from_numpy(np.ascontiguousarray(a)) for a in arrays]
        return getattr(torch.nn.functional, f"conv_transpose{nsp}d")(*tensors, stride=2).numpy()

    assert_matches_reference(got.detach().double().numpy(), reference, args, {}, dtype,
                             3 * 3 ** nsp + 1)


def _x_w():
    return torch.randn(1, 4, 3, 3), torch.randn(4, 3, 2, 2)


def _conv2d_input(size, grad_output_channels=4):
    grad_output = torch.randn(1, grad_output_channels, 4, 4)
    return ot.conv2d_input(size, torch.randn(4, 3, 2, 2), grad_output)


def _conv_transpose2d_weight(size, grad_output_shape=(1, 3, 4, 4)):
    return ot.conv_transpose2d_weight(torch.randn(1, 4, 3, 3), size, torch.randn(grad_output_shape))


# (id, call, the package's class, the message), each a RuntimeError in PyTorch too.
MISTAKES = [
    ("channels", lambda x, w: ot.conv_transpose2d(x, w[:3]), ValueError,
     r"conv_transpose2d: weight \(3, 3, 2, 2\) expects 3 input channels \(its first axis\), "
     r"input \(1, 4, 3, 3\) has 4"),
    ("input-rank", lambda x, w: ot.conv_transpose2d(x[0, 0], w), ValueError,
     r"conv_transpose2d: input must be 3 or 4-D, got shape \(3, 3\)"),
    ("weight-rank", lambda x, w: ot.conv_transpose2d(x, w[0]), ValueError,
     r"conv_transpose2d: weight must be 4-D, got shape \(3, 2, 2\)"),
    ("bias-size", lambda x, w: ot.conv_transpose2d(x, w, torch.zeros(5)), ValueError,
     r"conv_transpose2d: bias must have 3 elements \(the output channels\), got 5"),
    ("groups", lambda x, w: ot.conv_transpose2d(x, w, groups=3), ValueError,
     r"conv_transpose2d: the input channels \(4\) must be divisible by groups \(3\)"),
    ("groups-0", lambda x, w: ot.conv_transpose2d(x, w, groups=0), ValueError,
     r"conv_transpose2d: groups must be >= 1, got 0"),
    ("stride-0", lambda x, w: ot.conv_transpose2d(x, w, stride=0), ValueError,
     r"conv_transpose2d: stride must be >= 1 on every axis, got \[0, 0\]"),
    ("stride-length", lambda x, w: ot.conv_transpose2d(x, w, stride=(2, 2, 2)), ValueError,
     r"conv_transpose2d: stride must be an int or a sequence of 1 or 2 ints"),
    ("negative-padding", lambda x, w: ot.conv_transpose2d(x, w, padding=-1), ValueError,
     r"conv_transpose2d: padding must be >= 0, got -1"),
    ("output-padding", lambda x, w: ot.conv_transpose2d(x, w, stride=2, output_padding=2),
     ValueError, r"conv_transpose2d: output_padding\[0\] = 2 must be smaller than stride \(2\)"),
    ("output-too-small", lambda x, w: ot.conv_transpose2d(x, w, padding=5), ValueError,
     r"conv_transpose2d: input of \(3, 3\) per channel gives an output of \(-6, -6\): too small"),
    ("dtype-mix", lambda x, w: ot.conv_transpose2d(x, w.double()), TypeError,
     r"conv_transpose2d: weight is torch.float64 and input torch.float32: they must share one "
     r"dtype"),
    ("dtype-f64", lambda x, w: ot.conv_transpose2d(x.double(), w.double()), TypeError,
     r"conv_transpose2d: input is torch.float64; the ops take float32, bfloat16, float16"),
    ("input_size-length", lambda x, w: _conv2d_input([1, 4, 3]), ValueError,
     r"conv2d_input: input_size must have 4 entries \(N, C_in, \*X\), got \[1, 4, 3\]"),
    ("grad_output-channels", lambda x, w: _conv2d_input([1, 3, 5, 5], 5), ValueError,
     r"conv2d_input: weight \(4, 3, 2, 2\) expects 4 channels of grad_output"),
    # From the package's checks below, its tensor names turned into PyTorch's.
    ("input_size-channels", lambda x, w: _conv2d_input([1, 2, 5, 5]), ValueError,
     r"conv2d_input: weight \(4, 3, 2, 2\): the I axis \(3\) times groups \(1\) must equal the "
     r"channels of input_size \(2\)"),
    ("input_size-spatial", lambda x, w: _conv2d_input([1, 3, 9, 9]), ValueError,
     r"conv2d_input: spatial axis 0: input_size size 9 and grad_output size 4 do not fit"),
    ("weight_size-channels", lambda x, w: _conv_transpose2d_weight([4, 3, 2, 2], (1, 5, 4, 4)),
     ValueError, r"conv_transpose2d_weight: weight_size \(4, 3, 2, 2\) with groups 1 takes an "
     r"input of 4 channels and a grad_output of 3, got 4 and 5"),
    ("weight_size-spatial", lambda x, w: _conv_transpose2d_weight([4, 3, 2, 2], (1, 3, 7, 7)),
     ValueError, r"conv_transpose2d_weight: spatial axis 0: input size 3 and grad_output size 7 "
     r"do not fit kernel 2"),
]


@pytest.mark.parametrize("call, error, match", [m[1:] for m in MISTAKES],
                         ids=[m[0] for m in MISTAKES])
def test_mistakes_raise_what_torch_raises_in_torchs_names(call, error, match):
    # A RuntimeError as PyTorch raises for each (`except RuntimeError` written for
    # torch.nn catches it) and the package's ValueError/TypeError, worded with
    # input/weight/bias/grad_output, never src/weights/diff_dst.
    x, w = _x_w()
    with pytest.raises(RuntimeError, match=match) as info:
        call(x, w)
    assert isinstance(info.value, error)
    assert not re.search(r"\b(src|weights|diff_dst|diff_src|dst_shape)\b", str(info.value))


def test_a_tensor_of_another_type_is_a_type_error_as_in_torch():
    x, w = _x_w()
    with pytest.raises(TypeError, match="conv_transpose2d: input must be a torch.Tensor, got "
                                        "ndarray") as info:
        ot.conv_transpose2d(x.numpy(), w)
    assert not isinstance(info.value, RuntimeError)


@pytest.mark.parametrize("argument", [dict(stride=1.5), dict(dilation="a"), dict(padding=1.5),
                                      dict(output_padding=[0.5, 0])])
def test_an_argument_of_the_wrong_type_is_a_type_error_as_in_torch(argument):
    # torch.nn raises a TypeError (not a RuntimeError) for each: so does the layer, and
    # not the DTypeError of a tensor's dtype.
    x, w = _x_w()
    with pytest.raises(TypeError) as torchs:
        torch.nn.functional.conv_transpose2d(x, w, **argument)
    assert not isinstance(torchs.value, RuntimeError)
    name = next(iter(argument))
    with pytest.raises(TypeError, match=f"conv_transpose2d: {name}") as info:
        ot.conv_transpose2d(x, w, **argument)
    assert not isinstance(info.value, RuntimeError)


def _dispatched_ops(fn):
    """The onednn_graph custom ops the dispatcher saw while `fn` ran (the profiler
    records each dispatched op; the profiler is no mode, so it changes no path)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        fn()
    return {e.name for e in prof.events() if e.name.startswith("onednn_graph::")}


def test_an_eager_forward_skips_the_dispatcher_and_a_traced_or_meta_one_does_not():
    # Issue 31, item 11: eagerly, the op's function and gradient formula run as a plain
    # autograd Function. Issue 37: under autocast too (the layer casts as autocast would);
    # a meta tensor has no memory, and its call goes to the registered op's fake kernel.
    _, ours = _pair(2, 3)
    x = torch.randn(2, 3, 5, 5, requires_grad=True)
    assert _dispatched_ops(lambda: ours(x)) == set()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert _dispatched_ops(lambda: ours(x)) == set()
        assert ours(x).dtype == torch.bfloat16
    on_meta = ot.ConvTranspose2d(3, 2, 3, stride=2, device="meta")
    meta = torch.empty(2, 3, 5, 5, device="meta")
    assert "onednn_graph::conv_transpose" in _dispatched_ops(lambda: on_meta(meta))
    y = ours(x)
    assert y.grad_fn is not None
    torch.testing.assert_close(y, torch.ops.onednn_graph.conv_transpose(
        x, ours.weight, ours.bias, [2, 2], [0, 0], [0, 0], [0, 0], [1, 1], 1), rtol=0, atol=0)


def test_a_plain_backward_runs_the_gradient_ops_without_the_dispatcher():
    # Issue 31, item 11: the custom-op layers cost ~45 us a call; a backward that only
    # needs the gradients calls the ops' functions directly. With create_graph the ops
    # themselves run (their gradients are needed), and the results are the same.
    _, ours = _pair(2, 3)
    x = torch.randn(2, 3, 5, 5, requires_grad=True)
    y = ours(x)
    plain = _dispatched_ops(lambda: torch.autograd.grad(y.sum(), (x, ours.weight, ours.bias),
                                                        retain_graph=True))
    assert plain == set()
    grads = []
    graphed = _dispatched_ops(lambda: grads.extend(torch.autograd.grad(
        y.sum(), (x, ours.weight, ours.bias), create_graph=True)))
    assert {"onednn_graph::conv_transpose_backward_data",
            "onednn_graph::conv_transpose_backward_weights", "onednn_graph::bias_grad"} <= graphed
    again = torch.autograd.grad(y.sum(), (x, ours.weight, ours.bias))
    for g, h in zip(grads, again):
        assert torch.equal(g, h)
    assert grads[0].requires_grad  # differentiable once more
