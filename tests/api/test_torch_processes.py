"""A converted model wherever PyTorch takes a model (issue 47): forked workers, thread
counts that change between calls, torch.jit.trace, float64, gradcheck, functional calls,
pickles.

Truth: the stock model (torch.nn) on the same parameters and inputs; the converted one
within 1e-4 of max |stock| (f32 sums of a few hundred products in another order stay near
1e-6 of it). Each process test runs in a fresh interpreter with a timeout, and every fork
in it has its own (DataLoader's ``timeout``, ``signal.alarm``): a hang fails the test, it
does not stall the suite. Before issue 47 each hung (GNU OpenMP in the child), returned
the traced input's result, or raised for float64.
"""

import io
import pickle

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import onednn_graph as og  # noqa: E402
import onednn_graph.torch as ot  # noqa: E402
from onednn_graph import _core  # noqa: E402
from helpers import run_python  # noqa: E402

# A DCGAN-style generator (ConvTranspose2d + BatchNorm + ReLU, Tanh), stock and converted,
# in the child's code; CLOSE compares two results.
_PRELUDE = """
import os, signal, sys
import torch
import onednn_graph.torch as ot
torch.manual_seed(0)
def generator():
    return torch.nn.Sequential(
        torch.nn.ConvTranspose2d(16, 64, 4, 1, 0, bias=False), torch.nn.BatchNorm2d(64), torch.nn.ReLU(),
        torch.nn.ConvTranspose2d(64, 32, 4, 2, 1, bias=False), torch.nn.BatchNorm2d(32), torch.nn.ReLU(),
        torch.nn.ConvTranspose2d(32, 3, 4, 2, 1), torch.nn.Tanh())
def close(got, want):
    return float((got - want).abs().max()) <= 1e-4 * float(want.abs().max())
def z(i):
    return torch.randn(8, 16, 1, 1, generator=torch.Generator().manual_seed(i))
stock = generator()
model = ot.convert(stock)
"""

_TRAIN_STEP = """
opt = torch.optim.SGD(model.parameters(), lr=0.01)
model(torch.randn(8, 16, 1, 1)).square().mean().backward()
opt.step()
stock = ot.revert(model)
"""


@pytest.mark.parametrize("parent", ["training step", "inference"])
def test_dataloader_fork_workers_run_a_model_the_parent_ran(parent):
    code = _PRELUDE + (_TRAIN_STEP if parent == "training step" else "") + """
model.eval(); stock.eval()
with torch.no_grad():
    model(z(99))
class Generated(torch.utils.data.Dataset):
    def __len__(self): return 4
    def __getitem__(self, i):
        with torch.no_grad():
            return model(z(i)), torch.get_num_threads()
loader = torch.utils.data.DataLoader(Generated(), batch_size=None, num_workers=2, timeout=60)
got = list(loader)  # Linux's default start method: fork
with torch.no_grad():
    assert all(close(g, stock(z(i))) for i, (g, _) in enumerate(got))
assert {n for _, n in got} == {1}  # DataLoader's workers: one thread, which the layers follow
print("ok")
"""
    assert run_python(code, timeout=180).split()[-1] == "ok"


def test_a_fork_pool_runs_a_model_the_parent_ran():
    code = _PRELUDE + """
import multiprocessing
model.eval(); stock.eval()
with torch.no_grad():
    model(z(99))
def run(i):
    with torch.no_grad():
        return model(z(i))
with multiprocessing.get_context("fork").Pool(2) as pool:
    got = pool.map_async(run, range(4)).get(timeout=60)
with torch.no_grad():
    assert all(close(g, stock(z(i))) for i, g in enumerate(got))
print("ok")
"""
    assert run_python(code, timeout=180).split()[-1] == "ok"


def test_pre_forked_workers_run_a_model_the_parent_warmed_up():
    """gunicorn --preload's pattern: the parent loads the model and runs it once, then forks
    workers with os.fork() that set nothing. Stock PyTorch hangs there in its own OpenMP
    (tests/api/test_torch_processes.py's docstring); converted, the model runs: the
    package's calls on a thread of its own, PyTorch's on one thread (_processes)."""
    code = _PRELUDE + """
model.eval(); stock.eval()
with torch.no_grad():
    want = [stock(z(i)) for i in range(2)]
    model(z(99))
children = []
for i in range(2):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        signal.alarm(60)
        with torch.no_grad():
            ok = close(model(z(i)), want[i])
        os.write(write, b"1" if ok else b"0")
        os._exit(0)
    children.append((pid, read))
for pid, read in children:
    assert os.waitpid(pid, 0)[1] == 0, "a worker hung (SIGALRM) or failed"
    assert os.read(read, 1) == b"1"
print("ok")
"""
    assert run_python(code, timeout=180).split()[-1] == "ok"


@pytest.mark.skipif(not _core.can_limit_threads(), reason="oneDNN's threads are its runtime's, not OpenMP's")
def test_calls_follow_torch_set_num_threads_between_calls():
    """A layer first run on two threads, then after torch.set_num_threads(1), runs a call
    compiled for one, and for two again after set_num_threads(2): the count as of each call
    (the OpenMP count oneDNN's kernel was compiled for, CompiledPartition.compiled_threads)."""
    code = _PRELUDE + """
import onednn_graph as og
og.cache.clear_cache()
x = torch.randn(8, 64, 16, 16)
layer = model[3]
counts = []
with torch.no_grad():
    for n in (2, 1, 2, 1):
        torch.set_num_threads(n)
        y = layer(x)
        [op] = [o for o in og.cache.cached_ops() if o.compiled.compiled_threads == n]
        counts.append(op.compiled.compiled_threads)
        assert close(y, ot.revert(torch.nn.Sequential(layer))[0](x))
assert counts == [2, 1, 2, 1], counts
assert og.cache.cache_info().size == 2
print("ok")
"""
    assert run_python(code, timeout=120).split()[-1] == "ok"


def _dcgan():
    torch.manual_seed(0)
    stock = torch.nn.Sequential(
        torch.nn.ConvTranspose2d(16, 32, 4, 1, 0, bias=False), torch.nn.BatchNorm2d(32), torch.nn.ReLU(),
        torch.nn.ConvTranspose2d(32, 3, 4, 2, 1), torch.nn.Tanh()).eval()
    return stock, ot.convert(stock)


def _close(got, want):
    got, want = got.detach(), want.detach()
    return float((got - want).abs().max()) <= 1e-4 * float(want.abs().max())


# PyTorch 2.13 deprecates torch.jit.trace (still there: users trace models).
_TRACE_DEPRECATED = pytest.mark.filterwarnings("ignore:`torch.jit.trace.*` is deprecated:DeprecationWarning")


@_TRACE_DEPRECATED
def test_a_traced_model_computes_new_inputs_and_warns_nothing_of_its_own(recwarn):
    """torch.jit.trace of a converted model records the package's registered ops: another
    input (other batch and size) gives stock's values, where the trace held the traced
    input's result before; no TracerWarning comes from the package's files."""
    stock, model = _dcgan()
    traced = torch.jit.trace(model, torch.randn(2, 16, 1, 1))
    assert not [w for w in recwarn if "onednn_graph" in w.filename]
    with torch.no_grad():
        for x in (torch.randn(2, 16, 1, 1), torch.randn(5, 16, 2, 3)):
            assert _close(traced(x), stock(x))
    assert "onednn_graph::conv_transpose" in str(traced.inlined_graph)


@_TRACE_DEPRECATED
def test_a_traced_channels_last_and_grad_model_computes_new_inputs():
    torch.manual_seed(0)
    stock = torch.nn.Sequential(torch.nn.ConvTranspose2d(8, 8, 3, 2, 1, 1), torch.nn.ReLU(),
                                torch.nn.ConvTranspose2d(8, 4, 4, 2, 1))
    model = ot.convert(stock).to(memory_format=torch.channels_last)
    x = torch.randn(2, 8, 5, 5).to(memory_format=torch.channels_last)
    traced = torch.jit.trace(model, x)
    x2 = torch.randn(3, 8, 7, 7).to(memory_format=torch.channels_last).requires_grad_(True)
    got, want = traced(x2), stock(x2)
    assert _close(got, want)
    (g_got,) = torch.autograd.grad(got.square().sum(), x2)
    (g_want,) = torch.autograd.grad(want.square().sum(), x2)
    assert _close(g_got, g_want)


def test_float64_after_conversion_runs_as_stock_and_report_says_so():
    stock, model = _dcgan()
    stock, model = stock.double(), model.double()
    x = torch.randn(3, 16, 1, 1, dtype=torch.float64)
    with torch.no_grad():
        assert torch.equal(model(x), stock(x))  # torch.nn's computation, bit for bit
    layers = ot.report(model)
    assert [r.runs_on for r in layers] == ["torch.nn", "torch.nn"]
    assert all("float64" in r.why for r in layers)
    model.float()
    assert [r.runs_on for r in ot.report(model)] == ["oneDNN", "oneDNN"]


@pytest.mark.parametrize("nsp", [1, 2, 3])
def test_gradcheck_on_a_converted_layer(nsp):
    torch.manual_seed(0)
    layer = ot.convert(torch.nn.Sequential(getattr(torch.nn, f"ConvTranspose{nsp}d")(3, 2, 3, 2, 1, 1))).double()
    x = torch.randn(1, 3, *[3] * nsp, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(layer, (x,))
    assert torch.autograd.gradgradcheck(layer, (x,))


class _Functional(torch.nn.Module):
    """A model whose forward calls torch's function itself, beside a layer."""

    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(8, 4, 4, 4))
        self.up = torch.nn.ConvTranspose2d(4, 2, 3)

    def forward(self, x):
        return self.up(torch.nn.functional.conv_transpose2d(x, self.weight, stride=2, padding=1))


def test_a_forward_calling_the_functional_is_named_and_routed(caplog):
    torch.manual_seed(0)
    stock = _Functional()
    with caplog.at_level("WARNING", logger="onednn_graph.torch"):
        model = ot.convert(stock)
    assert "route_functional" in caplog.text and "conv_transpose2d" in caplog.text
    report = ot.report(model)
    assert report.functional_calls == ["conv_transpose2d: torch.nn.functional.conv_transpose2d"]
    assert "route_functional" in str(report)
    x = torch.randn(2, 8, 5, 5, requires_grad=True)
    og.cache.clear_cache()
    with ot.route_functional():
        got = model(x)
    kinds = [op.kind for op in og.cache.cached_ops()]
    assert len(kinds) == 2  # the functional call on oneDNN, then the layer
    want = stock(x)
    assert _close(got, want)
    (g_got,) = torch.autograd.grad(got.sum(), x)
    (g_want,) = torch.autograd.grad(want.sum(), x)
    assert _close(g_got, g_want)
    with ot.route_functional():  # float64: as PyTorch runs it
        assert torch.equal(model.double()(x.double()), stock.double()(x.double()))


def test_a_whole_converted_model_pickles_and_loads_where_the_package_is():
    """torch.save of the whole converted model stores the package's layer classes: it
    loads where onednn-graph is installed (here), as the converted model; ``revert`` first
    saves a stock model, which loads anywhere."""
    stock, model = _dcgan()
    x = torch.randn(2, 16, 1, 1)
    buffer = io.BytesIO()
    torch.save(model, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=False)
    assert type(loaded[0]) is type(model[0])
    with torch.no_grad():
        assert torch.equal(loaded(x), model(x))
    plain = pickle.dumps(ot.revert(model))
    assert b"onednn_graph" not in plain
    assert type(pickle.loads(plain)[0]) is torch.nn.ConvTranspose2d


def test_the_routing_context_leaves_other_devices_and_dtypes_to_torch():
    x = torch.randn(1, 2, 3, dtype=torch.float64)
    w = torch.randn(2, 1, 2, dtype=torch.float64)
    og.cache.clear_cache()
    with ot.route_functional():
        y = torch.nn.functional.conv_transpose1d(x, w, stride=2)
    assert og.cache.cache_info().size == 0
    assert torch.equal(y, torch.nn.functional.conv_transpose1d(x, w, stride=2))
    assert np.array_equal(y.numpy(), torch.nn.functional.conv_transpose1d(x, w, stride=2).numpy())
