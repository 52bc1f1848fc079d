"""What this installation is and can do: ``capabilities()`` and ``onednn-graph info``."""

from __future__ import annotations

import ctypes
import os
import platform
from importlib import metadata
from typing import Any, Optional

import ml_dtypes
import numpy as np

from . import _core, _version


def _threads() -> tuple[int, str]:
    """oneDNN's thread count and where it came from."""
    runtime = _version.onednn_version().cpu_runtime
    if runtime == "omp":
        try:  # libdnnl loaded libgomp into this process; ask the same runtime
            return ctypes.CDLL("libgomp.so.1").omp_get_max_threads(), "omp_get_max_threads()"
        except (OSError, AttributeError):
            pass
    if runtime == "seq":
        return 1, "sequential runtime"
    return len(os.sched_getaffinity(0)), "CPUs this process may use"


def _package_version() -> str:
    try:
        return metadata.version("onednn-graph")
    except metadata.PackageNotFoundError:  # pragma: no cover - only from a source tree
        return "unknown"


def _support() -> Optional[list[dict[str, Any]]]:
    try:
        from . import _support
    except ImportError:  # pragma: no cover - only on a tree without the probe
        return None
    return _support.summary()


def capabilities() -> dict[str, Any]:
    """A report of this installation, as ``onednn-graph info`` prints it.

    Keys: ``package``, ``onednn`` (version, hash, cpu_runtime), ``numpy``,
    ``ml_dtypes``, ``python``, ``cpu_isa``, ``threads`` (and
    ``threads_source``), ``constant_tensor_cache`` (its current setting; at
    start-up, oneDNN's default) and ``support``: ``_support.summary()``, one
    dict per (op, feature) with ``native`` (the linked oneDNN computes it as
    written), ``literal`` (what it does then) and ``package`` (what the package
    does: native, lowered or unsupported), probed on the library at the call.

    Examples
    --------
    >>> import onednn_graph as og
    >>> caps = og.capabilities()
    >>> caps["onednn"]["version"].count(".")
    2
    """
    v = _version.onednn_version()
    threads, source = _threads()
    return {
        "package": _package_version(),
        "onednn": {"version": f"{v.major}.{v.minor}.{v.patch}", "hash": v.hash,
                   "cpu_runtime": v.cpu_runtime},
        "numpy": np.__version__,
        "ml_dtypes": ml_dtypes.__version__,
        "python": platform.python_version(),
        "cpu_isa": _version.cpu_isa(),
        "threads": threads,
        "threads_source": source,
        "constant_tensor_cache": _core.get_constant_tensor_cache(),
        "support": _support(),
    }


def report(caps: dict[str, Any]) -> str:
    """`capabilities()` as text for a person."""
    o = caps["onednn"]
    lines = [
        f"onednn-graph {caps['package']} (Python {caps['python']}, NumPy {caps['numpy']}, "
        f"ml_dtypes {caps['ml_dtypes']})",
        f"oneDNN {o['version']} ({o['cpu_runtime']}, {o['hash'][:12]}), CPU ISA "
        f"{caps['cpu_isa']}, {caps['threads']} threads ({caps['threads_source']})",
        f"constant-tensor cache: {'on' if caps['constant_tensor_cache'] else 'off'}",
    ]
    support = caps["support"]
    if support is None:
        lines.append("support matrix: not available in this installation")
        return "\n".join(lines)
    rows = [("op", "feature", "oneDNN as written", "with the package")] + [
        (s["op"], s["feature"], s.get("literal", "native" if s["native"] else "no"), s["package"])
        for s in support]
    widths = [max(len(str(r[i])) for r in rows) for i in range(4)]
    lines.append("\nWhat the linked oneDNN does with each op as the spec writes it, and what "
                 "the package does (probed now, on small problems):")
    for j, r in enumerate(rows):
        lines.append("  " + "  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())
        if j == 0:
            lines.append("  " + "  ".join("-" * w for w in widths))
    return "\n".join(lines)
