"""Docstrings: every example in the installed package runs, and every public function has one.

The doctests run on the installed modules (the ones the other tests import),
so nothing is imported twice and the source tree's missing _core does not matter.
"""

import doctest
import importlib
import importlib.util
import inspect
import pkgutil

import pytest

import onednn_graph as og

MODULES = sorted(name for _, name, _ in pkgutil.walk_packages(og.__path__, "onednn_graph.")
                 # _core is native; __main__ runs the command line when imported
                 if not name.endswith(("._core", ".__main__")))
# Modules whose public functions each carry a runnable example (NumPy-style "Examples").
DOCUMENTED = ["onednn_graph.ops", "onednn_graph.reference", "onednn_graph.torch_like",
              "onednn_graph.padding"]


@pytest.mark.parametrize("name", ["onednn_graph"] + MODULES)
def test_doctests(name):
    if (name == "onednn_graph.torch" or name.startswith("onednn_graph.torch.")) \
            and importlib.util.find_spec("torch") is None:
        pytest.skip("onednn_graph.torch needs PyTorch")
    module = importlib.import_module(name)
    report = []
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in doctest.DocTestFinder().find(module, name):
        runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)


@pytest.mark.parametrize("name", DOCUMENTED)
def test_public_functions_have_examples(name):
    module = importlib.import_module(name)
    missing = [n for n in module.__all__ if inspect.isfunction(getattr(module, n))
               and ">>>" not in (getattr(module, n).__doc__ or "")]
    assert not missing, f"{name}: no runnable example in {missing}"


def test_output_shape_has_an_example():
    assert ">>>" in og.output_shape.__doc__
