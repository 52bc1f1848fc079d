"""This installation: the linked oneDNN, the CPU it dispatches to, what it can run
here, and the memory it holds.

What every measurement, tolerance and tuning decision depends on; ``onednn-graph
info`` prints ``capabilities()`` for a person.
"""

from __future__ import annotations

import warnings

from . import _core, _impl
from ._core import onednn_allocations, reset_onednn_peak
from ._impl import machine_load as _machine_load
from ._impl.version import cpu_isa, onednn_version
from ._tools.info import capabilities

__all__ = ["capabilities", "cpu_isa", "onednn_version", "onednn_allocations", "reset_onednn_peak",
           "set_load_aware"]


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


# onednn_allocations and reset_onednn_peak are _core's (native functions keep their module).
_impl.export(__name__, capabilities, cpu_isa, onednn_version)


def __dir__() -> list[str]:
    return list(__all__)
