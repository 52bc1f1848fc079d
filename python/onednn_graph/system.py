"""This installation: the linked oneDNN, the CPU it dispatches to, what it can run
here, and the memory it holds.

What every measurement, tolerance and tuning decision depends on; ``onednn-graph
info`` prints ``capabilities()`` for a person.
"""

from __future__ import annotations

import warnings

from . import _core, _impl
from ._core import onednn_allocations, reset_onednn_peak
from ._impl import freed_memory as _freed_memory, machine_load as _machine_load
from ._impl.version import cpu_isa, onednn_version
from ._tools.info import capabilities

__all__ = ["capabilities", "cpu_isa", "keep_freed_memory", "onednn_version", "onednn_allocations",
           "reset_onednn_peak", "set_load_aware"]


def set_load_aware(enabled: bool) -> None:
    """Whether the functional API (and onednn_graph.torch's layers) runs new problems on
    fewer threads while other processes keep CPUs busy (on by default; at import,
    ``ONEDNN_GRAPH_LOAD_AWARE=0`` turns it off). oneDNN's OpenMP threads spin while
    they wait, so two processes that each run on every core slow each other down
    many times over; with it on, each runs on the CPUs the others leave (at least
    1), read from the machine's counters every quarter second at most.
    ``capabilities()["load_aware"]`` says what it reads now. Calls compiled with
    ``compile_op(..., threads=N)`` keep their count. Only where oneDNN runs on OpenMP
    (the default build); elsewhere it stays off, and turning it on warns.

    Examples
    --------
    >>> import onednn_graph as og
    >>> og.system.set_load_aware(False)
    >>> load = og.system.capabilities()["load_aware"]
    >>> load["enabled"], load["threads"]
    (False, 0)
    """
    if not isinstance(enabled, bool):
        raise TypeError(f"set_load_aware takes a bool, got {type(enabled).__name__}")
    if enabled and not _core.can_limit_threads():
        v = onednn_version()
        warnings.warn(f"set_load_aware(True) has no effect with oneDNN {v} on its {v.cpu_runtime} "
                      "CPU runtime: the package sets the thread count per call only where "
                      "oneDNN uses OpenMP", RuntimeWarning, stacklevel=2)
    _machine_load.LIMIT.set_enabled(enabled)


def keep_freed_memory() -> bool:
    """Keep the memory this process's CPU tensors and arrays free (PyTorch's, NumPy's, up
    to 32 MiB a block) in its heap for the next allocation, instead of giving it back to
    the system and faulting its pages in again on the next first touch: glibc's mapping and
    trim thresholds fixed (``mallopt``), what ``MALLOC_MMAP_THRESHOLD_=33554432
    MALLOC_TRIM_THRESHOLD_=1073741824`` set at start-up. Process-wide and one-way (glibc
    gives no way back to its moving thresholds); the process then holds its peak heap.
    Returns False where the C library is not glibc or refuses the setting.

    A model whose tensors are tens of MB otherwise runs at the speed of whatever its
    process allocated before: on a Zen 4 a Mask R-CNN mask head's inference (32 RoIs,
    f32) took 63-78 ms and 25,024 page faults a call in four fresh processes, and 37-39
    ms and none with this (stock PyTorch; a converted model alike). See
    docs/performance.md, "PyTorch's and NumPy's own arrays"; ``tests/api/test_freed_memory.py``
    runs it in a fresh interpreter.

    Examples
    --------
    Once, before the model runs (not run here: it would change this process's heap for good):

    >>> import onednn_graph as og
    >>> og.system.keep_freed_memory()  # doctest: +SKIP
    True
    >>> og.system.capabilities()["freed_memory"]  # doctest: +SKIP
    {'mmap_threshold': 33554432, 'trim_threshold': 1073741824}
    """
    return _freed_memory.keep()


# onednn_allocations and reset_onednn_peak are _core's (native functions keep their module).
_impl.export(__name__, capabilities, cpu_isa, onednn_version)


def __dir__() -> list[str]:
    return list(__all__)
