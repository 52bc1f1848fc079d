"""Which oneDNN is linked and what it runs on."""

from __future__ import annotations

from typing import NamedTuple

from .. import _core


class OneDNNVersion(NamedTuple):
    major: int
    minor: int
    patch: int
    hash: str
    cpu_runtime: str


def onednn_version() -> OneDNNVersion:
    """The linked oneDNN's version.

    Examples
    --------
    >>> import onednn_graph as og
    >>> v = og.onednn_version()
    >>> (v.major, v.minor) >= (3, 2)
    True
    """
    return OneDNNVersion(*_core.version())


def cpu_isa() -> str:
    """The CPU instruction set oneDNN dispatches to here (e.g. ``avx512_core_amx``).

    Examples
    --------
    >>> import onednn_graph as og
    >>> isinstance(og.cpu_isa(), str)
    True
    """
    return _core.cpu_isa()
