"""Which oneDNN and package are installed, and what they run on: the CPU, its
ISA, the thread count (what every measurement and tuning decision depends on)."""

from __future__ import annotations

import ctypes
import os
import platform
from importlib import metadata
from typing import NamedTuple

from .. import _core


class OneDNNVersion(NamedTuple):
    major: int
    minor: int
    patch: int
    hash: str
    cpu_runtime: str

    def __str__(self) -> str:
        """'3.2.0', as oneDNN and its wheels name the version (the repr has every field)."""
        return f"{self.major}.{self.minor}.{self.patch}"


def onednn_version() -> OneDNNVersion:
    """The linked oneDNN's version.

    Examples
    --------
    >>> import onednn_graph as og
    >>> v = og.system.onednn_version()
    >>> (v.major, v.minor) >= (3, 2)
    True
    >>> str(v) == f"{v.major}.{v.minor}.{v.patch}"   # print(v) prints e.g. 3.2.0
    True
    """
    return OneDNNVersion(*_core.version())


def linked_version() -> tuple[int, int]:
    """(major, minor) of the linked oneDNN: what each rule measured on one oneDNN is
    keyed by (``_impl.lowering``, ``_impl.kernels``, ``_impl.fused``)."""
    v = onednn_version()
    return v.major, v.minor


def cpu_isa() -> str:
    """The CPU instruction set oneDNN dispatches to here (e.g. ``avx512_core_amx``).

    Examples
    --------
    >>> import onednn_graph as og
    >>> isinstance(og.system.cpu_isa(), str)
    True
    """
    return _core.cpu_isa()


def l2_cache_bytes() -> int:
    """The size of one core's level-2 cache, as Linux reports it (1 MiB where it does
    not say): what a chain's batch parts are sized to (``_impl.as_f32``)."""
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for index in sorted(os.listdir(base)):
            with open(f"{base}/{index}/level") as f:
                if f.read().strip() != "2":
                    continue
            with open(f"{base}/{index}/size") as f:
                size = f.read().strip().upper()
            scale = {"K": 1 << 10, "M": 1 << 20}.get(size[-1:], 1)
            return int(size.rstrip("KM")) * scale
    except (OSError, ValueError):
        pass
    return 1 << 20


def onednn_threads() -> tuple[int, str]:
    """oneDNN's thread count and where it came from."""
    runtime = onednn_version().cpu_runtime
    if runtime == "omp":
        try:  # libdnnl loaded libgomp into this process; ask the same runtime
            return ctypes.CDLL("libgomp.so.1").omp_get_max_threads(), "omp_get_max_threads()"
        except (OSError, AttributeError):
            pass
    if runtime == "seq":
        return 1, "sequential runtime"
    return len(os.sched_getaffinity(0)), "CPUs this process may use"


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo), what every benchmark figure says it
    was measured on, or the platform's processor string elsewhere."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:  # pragma: no cover - not Linux
        pass
    return platform.processor() or platform.machine()


def package_version() -> str:
    """This package's installed version ("unknown" from a bare source tree)."""
    try:
        return metadata.version("onednn-graph")
    except metadata.PackageNotFoundError:  # pragma: no cover - only from a source tree
        return "unknown"
