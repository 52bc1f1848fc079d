"""A converted model in a process forked after it ran: PyTorch's threads in the child.

GNU OpenMP, which PyTorch's CPU wheel and oneDNN 3.2 share (one ``libgomp.so.1``), does
not survive ``fork()``: the forking thread's next parallel region of more than one thread
waits for threads the child does not have. The package's own calls run on a thread of
its own in such a child (``cpp/onednn_thread.hpp``); PyTorch's ops (a BatchNorm, a ReLU
after the converted layer) hang there, in a stock model too, unless the child runs them on
one thread, as a DataLoader worker does (it calls ``torch.set_num_threads(1)``). So in a
child forked after the package ran oneDNN, PyTorch starts on one thread: a
``multiprocessing`` fork pool, a pre-forking server (gunicorn ``--preload``) or a raw
``os.fork()`` then runs the model instead of hanging. ``torch.set_num_threads(n)`` in the
child asks for more; the package's calls follow it (``_impl.compiled.call_threads``),
PyTorch's own ops then hang as they would without the package. oneDNN 3.13's SYCL runtime
does not survive fork on any thread: there the converted layers run torch.nn's computation
in such a child (``onednn_usable``), as a stock model does, and ``report`` says so.
"""

from __future__ import annotations

import logging
import os

import torch

from .. import _core

__all__: list[str] = []

_log = logging.getLogger("onednn_graph.torch")


#: False in a child forked after oneDNN ran on a runtime that does not survive fork
#: (oneDNN 3.13's SYCL/TBB: its calls raise there, ``cpp/onednn_thread.hpp``): the
#: converted layers then run torch.nn's computation, as a stock model does.
onednn_usable = True


def _after_fork_in_child() -> None:
    global onednn_usable
    if not _core.ran_before_fork():
        return
    if _core.version()[4] != "omp":
        onednn_usable = False
        _log.info("forked after oneDNN %s ran on its %s runtime, which does not survive fork: "
                  "the converted layers run torch.nn's computation in this process",
                  ".".join(map(str, _core.version()[:2])), _core.version()[4])
    if torch.get_num_threads() > 1:  # (PyTorch's own OpenMP, whichever runtime oneDNN has)
        torch.set_num_threads(1)
        _log.info("forked after oneDNN ran: PyTorch on one thread in this process (its OpenMP "
                  "threads did not survive the fork); torch.set_num_threads asks for more")


os.register_at_fork(after_in_child=_after_fork_in_child)


def __dir__() -> list[str]:
    return list(__all__)
