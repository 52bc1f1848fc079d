"""How long GNU OpenMP's idle threads spin before they sleep, when the user has not said.

oneDNN 3.2's wheel runs on libgomp, which reads its settings once, when it loads: with
libdnnl, at ``import onednn_graph``. Left alone, a libgomp thread that waits (for the
next parallel region, or at a barrier) spins for about 3 ms (GOMP_SPINCOUNT 300000)
before it sleeps. On a quiet machine that is what makes back-to-back kernels fast; on
a shared one it is a disaster: two processes of the package with OMP_NUM_THREADS at
the core count each keep the cores busy spinning while the other's threads wait for a
core, and a 1.1 ms call took 32 ms in each (the shared-machine issue, 2-core Zen 3).
OMP_WAIT_POLICY=passive (no spin) fixes that but costs a quiet machine about half the
speed again. A short spin keeps both: long enough to bridge the gaps between one call's
parallel regions and between calls, short enough that a thread whose core another
process wants gives it up (``benchmarks/shared_machine.py``; figures in
docs/performance.md).

So where the user has set neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT, the package sets
GOMP_SPINCOUNT to ``SPINCOUNT`` for the moment libgomp loads, and takes it away again
(child processes and other runtimes never see it). A user who sets either keeps it. A
libgomp already loaded by another library keeps the settings it read then. ``STATE``
says which happened (``og.system.capabilities()["openmp"]``, ``onednn-graph info``).

Imports nothing of the package: ``__init__`` calls it before the native module loads.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from typing import Iterator

#: libgomp's spin count (about 100 000 spins a millisecond, as libgomp estimates:
#: 0.1 ms) where the user has chosen none. Measured: docs/performance.md.
SPINCOUNT = 10000

#: The settings of GNU OpenMP's waiting a user may give; any one of them is theirs.
USER_SETTINGS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")

#: What ``spin_default`` did, in words, once the package has loaded.
STATE = "not loaded yet"


def _libgomp_loaded() -> bool:
    try:  # RTLD_NOLOAD: a handle only if the process has it already
        ctypes.CDLL("libgomp.so.1", mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    except OSError:
        return False
    return True


@contextlib.contextmanager
def spin_default() -> Iterator[None]:
    """Around the first load of the native module (and with it libdnnl and libgomp):
    GOMP_SPINCOUNT=SPINCOUNT where nobody has chosen how libgomp waits."""
    global STATE
    chosen = [f"{k}={os.environ[k]}" for k in USER_SETTINGS if k in os.environ]
    if chosen:
        STATE = f"the user's {', '.join(chosen)}"
    elif _libgomp_loaded():
        STATE = "libgomp's own (it was loaded before onednn_graph, whose default it did not read)"
    else:
        os.environ["GOMP_SPINCOUNT"] = str(SPINCOUNT)
        STATE = (f"GOMP_SPINCOUNT={SPINCOUNT}, the package's default (set OMP_WAIT_POLICY or "
                 "GOMP_SPINCOUNT before importing onednn_graph to choose)")
        try:
            yield
        finally:
            del os.environ["GOMP_SPINCOUNT"]
        return
    yield
