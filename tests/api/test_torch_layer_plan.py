"""A layer's eager calls keep what the last one settled (onednn_graph.torch._layer,
issue 37): the checks, the views of weight and bias, the memory format. Whatever changes
between calls must be seen: the layer's attributes, its parameters' memory, the input's
strides; and nothing of it may reach the layer's own state.

Truth: torch.nn's layer with the same parameters after the same change (values within
rounding: 1e-5, about 80 f32 ulps of these sums of at most 8 x 9 products, as
test_torch_parity's bound), or the stock layer's ``__dict__``.
"""

import copy
import io

import pytest

torch = pytest.importorskip("torch")

import onednn_graph.torch as ot  # noqa: E402
from onednn_graph.torch import _layer  # noqa: E402


def _pair():
    torch.manual_seed(0)
    theirs = torch.nn.ConvTranspose2d(8, 4, 3, stride=2)
    return theirs, ot.convert(theirs)


def _same(ours, theirs, x):
    want = theirs(x)
    got = ours(x)
    assert got.shape == want.shape and got.stride() == want.stride()
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_a_changed_attribute_is_checked_again():
    theirs, ours = _pair()
    x = torch.randn(2, 8, 5, 5)
    _same(ours, theirs, x)
    for m in (theirs, ours):
        m.stride, m.padding = (1, 1), (1, 1)
    _same(ours, theirs, x)
    ours.groups = 3  # 8 input channels: not divisible
    with pytest.raises(RuntimeError, match="divisible by groups"):
        ours(x)


def test_new_parameter_memory_and_in_place_updates_are_seen():
    theirs, ours = _pair()
    x = torch.randn(2, 8, 5, 5)
    _same(ours, theirs, x)
    with torch.no_grad():  # an optimizer's update: the same memory
        for m in (theirs, ours):
            m.weight.mul_(-2)
            m.bias.add_(1)
    _same(ours, theirs, x)
    new = torch.randn(8, 4, 3, 3)
    for m in (theirs, ours):  # other memory under the same Parameter
        m.weight.data = new.clone()
    _same(ours, theirs, x)
    for m in (theirs, ours):
        m.to(memory_format=torch.channels_last)  # the weight's strides decide the format too
    _same(ours, theirs, x)


def test_other_input_shapes_strides_and_dtypes_are_planned_again():
    theirs, ours = _pair()
    for x in (torch.randn(2, 8, 5, 5), torch.randn(3, 8, 4, 6),
              torch.randn(2, 8, 5, 5).to(memory_format=torch.channels_last),
              torch.randn(2, 8, 5, 5)[:, :, ::2]):
        _same(ours, theirs, x)
    bf16 = copy.deepcopy(ours).to(torch.bfloat16)
    assert bf16(torch.randn(1, 8, 3, 3, dtype=torch.bfloat16)).dtype == torch.bfloat16


def test_a_parametrized_weight_is_computed_once_per_forward_as_in_torch_nn():
    # spectral_norm's weight runs a power iteration on each read in training mode: the
    # layer must read it once per call, as torch.nn's does, also under autocast
    reads = {}

    class Counted(torch.nn.Module):
        def __init__(self, name):
            super().__init__()
            self.name = name

        def forward(self, w):
            reads[self.name] = reads.get(self.name, 0) + 1
            return w

    theirs, ours = _pair()
    torch.nn.utils.parametrize.register_parametrization(theirs, "weight", Counted("stock"))
    torch.nn.utils.parametrize.register_parametrization(ours, "weight", Counted("ours"))
    x = torch.randn(1, 8, 3, 3)
    for region in (False, True):
        reads.clear()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=region):
            theirs(x)
            ours(x)
        assert reads == {"stock": 1, "ours": 1}


class _Scaled(torch.nn.Module):
    """A parametrization whose weight differs on every call (times 1, 2, 3, ...)."""

    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, w):
        self.calls += 1
        return w * self.calls


def test_a_parametrized_layer_used_twice_gives_each_call_its_own_weight():
    # a parametrization computes a new weight tensor on each call; the layer keeps its
    # native calls and takes the new weight's view, and each call's backward the weight
    # that call read
    theirs, ours = _pair()
    for m in (theirs, ours):
        torch.nn.utils.parametrize.register_parametrization(m, "weight", _Scaled())
    x = torch.randn(1, 8, 3, 3, requires_grad=True)
    grads = []
    for m in (theirs, ours):
        first, second = m(x), m(x)  # weights w and 2w
        grads.append(torch.autograd.grad((first.square() + second).sum(), [x, *m.parameters()]))
    for a, b in zip(*grads):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-5)


def test_the_plan_stays_beside_the_layer_not_in_it():
    theirs, ours = _pair()
    ours(torch.randn(1, 8, 3, 3))
    assert set(vars(ours)) == set(vars(theirs))
    buffer = io.BytesIO()
    torch.save(ours, buffer)
    copied = copy.deepcopy(ours)
    assert set(vars(copied)) == set(vars(theirs))
    assert id(ours) in _layer._plans and id(copied) not in _layer._plans
    key = id(ours)
    del ours
    import gc
    gc.collect()
    assert key not in _layer._plans or _layer._plans[key][0]() is not None  # gone with its layer


def test_a_layer_collected_after_the_modules_globals_leaves_no_error(monkeypatch):
    # At interpreter exit a layer (held by a torch.compile cache, say) may be collected
    # after this module's globals are cleared: its plan's weak-reference callback must not
    # read them (it printed "Exception ignored ... 'NoneType' object has no attribute 'get'").
    _, ours = _pair()
    ours(torch.randn(1, 8, 3, 3))
    plans, key = _layer._plans, id(ours)
    assert key in plans
    monkeypatch.setattr(_layer, "_plans", None)
    errors = []
    monkeypatch.setattr("sys.unraisablehook", errors.append)
    del ours
    import gc
    gc.collect()
    assert errors == [] and key not in plans
