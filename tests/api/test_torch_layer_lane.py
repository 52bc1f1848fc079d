"""A call like the last one torch.nn's kernel computed goes to torch.nn's function
straight (``onednn_graph.torch._layer._lane``, issue 46: the tiny layers the rule gives
torch.nn cost no more than torch.nn's own forward). What decides whose kernel computes a
call must take a call off that lane: the input's shape, strides and dtype, the weight's
shape, whether gradients are recorded, autocast, the layer's attributes. And a call on the
lane computes with the layer's current weight, bias and attributes.

Truth: torch.nn's layer with the same parameters after the same change; float64 calls are
torch.nn's on every machine (oneDNN does not take the dtype), so they match exactly, and
compare to 1e-5 (about 80 f32 ulps of these sums of at most 8 x 9 products, as
test_torch_parity's bound) where the changed call may run on oneDNN.
"""

import pytest

torch = pytest.importorskip("torch")

import onednn_graph.torch as ot  # noqa: E402
from onednn_graph.torch import _inference, _kernel_choice, _layer  # noqa: E402


def _pair():
    """A float64 layer and torch.nn's (``convert`` leaves float64 layers to torch.nn: the
    package's layer is made as a user may make it)."""
    torch.manual_seed(0)
    theirs = torch.nn.ConvTranspose2d(8, 4, 3, stride=2).double()
    ours = ot.ConvTranspose2d(8, 4, 3, stride=2).double()
    ours.load_state_dict(theirs.state_dict())
    return theirs, ours


@pytest.fixture
def plans(monkeypatch):
    """The calls that were planned (left the lane), counted."""
    planned = []
    real = _layer._planned

    def counting(layer, input, weight, bias):
        planned.append(tuple(input.shape))
        return real(layer, input, weight, bias)

    monkeypatch.setattr(_layer, "_planned", counting)
    return planned


def _same(ours, theirs, x, tol=0.0):
    want, got = theirs(x), ours(x)
    assert got.shape == want.shape and got.stride() == want.stride()
    torch.testing.assert_close(got, want, rtol=tol, atol=tol)


def test_a_call_like_the_last_torch_nn_one_is_not_planned_again(plans):
    theirs, ours = _pair()
    x = torch.randn(2, 8, 5, 5, dtype=torch.float64)
    for _ in range(3):
        _same(ours, theirs, x)
    assert len(plans) == 1  # the first call only


def _tiny():
    """The issue's tiny layer, torch.nn's and converted, and its input; skipped where the
    default rule does not give such calls (without gradients) to torch.nn's kernel."""
    torch.manual_seed(0)
    theirs = torch.nn.ConvTranspose2d(8, 8, 2, stride=2)
    ours = ot.convert(theirs)
    x = torch.randn(1, 8, 4, 4)
    with torch.no_grad():
        if not _kernel_choice.by_rule(ours, x, ours.weight):
            pytest.skip("the default rule gives oneDNN this call on this machine")
    return theirs, ours, x


@pytest.mark.torch_kernels  # the default rule decides (not held to oneDNN)
@pytest.mark.parametrize("eval_mode", [False, True], ids=["training mode", "eval"])
def test_a_tiny_float32_layer_the_rule_gives_torch_nn_takes_the_lane(plans, eval_mode):
    # (in eval, where a layer oneDNN computes packs its weights, one torch.nn computes
    # keeps to its lane: nothing packed)
    theirs, ours, x = _tiny()
    ours.train(not eval_mode)
    with torch.no_grad():
        for _ in range(3):
            _same(ours, theirs, x)
    assert len(plans) == 1
    assert (id(ours) in _inference._packed) == eval_mode  # (marked seen once, not packed)
    if eval_mode:
        assert type(_inference._packed[id(ours)][1]).__name__ == "_Seen"


@pytest.mark.parametrize("change", ["input shape", "channels-last input", "input dtype",
                                    "weight shape", "gradients recorded", "autocast",
                                    "layer attribute"])
def test_what_decides_the_kernel_takes_a_call_off_the_lane(plans, change):
    theirs, ours = _pair()
    x = torch.randn(2, 8, 5, 5, dtype=torch.float64)
    with torch.no_grad():
        _same(ours, theirs, x)
    tol = 0.0
    grad = False
    if change == "input shape":
        x = torch.randn(2, 8, 6, 5, dtype=torch.float64)
    elif change == "channels-last input":
        x = x.to(memory_format=torch.channels_last)
    elif change == "input dtype":  # the whole layer in float32: the call may be oneDNN's
        for m in (theirs, ours):
            m.float()
        x, tol = x.float(), 1e-5
    elif change == "weight shape":  # 2 output channels: other memory under the same Parameter
        new = torch.randn(8, 2, 3, 3, dtype=torch.float64)
        for m in (theirs, ours):
            m.weight.data, m.bias.data = new.clone(), m.bias.data[:2].clone()
    elif change == "gradients recorded":
        grad = True
    elif change == "layer attribute":
        for m in (theirs, ours):
            m.padding = (1, 1)
    with torch.set_grad_enabled(grad), \
            torch.autocast("cpu", torch.bfloat16, enabled=change == "autocast"):
        _same(ours, theirs, x, tol)
    assert len(plans) == 2, f"a call with another {change} was not planned again"


def test_a_call_on_the_lane_computes_with_the_current_parameters_and_attributes(plans):
    theirs, ours = _pair()
    x = torch.randn(2, 8, 5, 5, dtype=torch.float64)
    _same(ours, theirs, x)
    for m in (theirs, ours):
        with torch.no_grad():  # an optimizer's update: the same memory
            m.weight.mul_(-2)
    _same(ours, theirs, x)
    bias = torch.randn(4, dtype=torch.float64)
    for m in (theirs, ours):  # another bias: not one of the facts, computed with all the same
        m.bias = torch.nn.Parameter(bias.clone())
    _same(ours, theirs, x)
    assert len(plans) == 1
    for m in (theirs, ours):  # an attribute that decides: planned, and computed with it
        m.stride = (1, 1)
    _same(ours, theirs, x)
    assert len(plans) == 2


@pytest.mark.torch_kernels  # the default rule decides (not held to oneDNN)
@pytest.mark.filterwarnings("ignore:.*torch.jit.* deprecated:DeprecationWarning")
def test_traced_transformed_and_meta_calls_of_a_layer_torch_nn_computes(plans):
    # Once the lane is set, a traced, vmapped, meta or forward-AD call is torch.nn's
    # function's: the same result as torch.nn's layer. torch.jit.trace takes neither the
    # lane nor a size of its as a Python value (the rule reads them as ints: pyproject's
    # filterwarnings=error turns a TracerWarning into a failure here).
    theirs, ours, x = _tiny()
    with torch.no_grad():
        _same(ours, theirs, x)
        traced = torch.jit.trace(ours, x)
        torch.testing.assert_close(traced(x), theirs(x), rtol=0, atol=0)
        xs = torch.randn(3, 1, 8, 4, 4)
        torch.testing.assert_close(torch.vmap(ours)(xs), torch.vmap(theirs)(xs), rtol=0, atol=0)
        assert ours(x.to("meta")).shape == theirs(x).shape
    import torch.autograd.forward_ad as fwAD
    with fwAD.dual_level(), torch.no_grad():
        tangent = torch.randn_like(x)
        got = fwAD.unpack_dual(ours(fwAD.make_dual(x, tangent)))
        want = fwAD.unpack_dual(theirs(fwAD.make_dual(x, tangent)))
        torch.testing.assert_close(got.tangent, want.tangent, rtol=0, atol=0)
