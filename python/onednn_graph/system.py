"""This installation: the linked oneDNN, the CPU it dispatches to, what it can run
here, and the memory it holds.

What every measurement, tolerance and tuning decision depends on; ``onednn-graph
info`` prints ``capabilities()`` for a person.
"""

from __future__ import annotations

from . import _impl
from ._core import onednn_allocations, reset_onednn_peak
from ._impl.version import cpu_isa, onednn_version
from ._tools.info import capabilities

__all__ = ["capabilities", "cpu_isa", "onednn_version", "onednn_allocations", "reset_onednn_peak"]
# onednn_allocations and reset_onednn_peak are _core's (native functions keep their module).
_impl.export(__name__, capabilities, cpu_isa, onednn_version)


def __dir__() -> list[str]:
    return list(__all__)
